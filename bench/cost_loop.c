/* cost_loop [SIZE]: 2000 rounds of 100 malloc(SIZE) then 100 free, the loop
 * whose instructions bench/security_cost.sh counts with callgrind (malloc and
 * free of one size class, nothing else). A plain program: run it under
 * LD_PRELOAD. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: cost_loop [SIZE]\n"
             "  2000 rounds of 100 malloc(SIZE) then 100 free (default 16): the loop\n"
             "  bench/security_cost.sh counts\n");
}

int main(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) { usage(stdout); return 0; }
  char *end = NULL;
  if (argc > 2 || (argc > 1 && (!argv[1][0] || argv[1][0] == '-' || (strtoul(argv[1], &end, 10), *end)))) {
    usage(stderr);
    return 2;
  }
  size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : 16;
  void *p[100];
  for (int r = 0; r < 2000; r++) {
    for (int i = 0; i < 100; i++) p[i] = malloc(n);
    for (int i = 0; i < 100; i++) free(p[i]);
  }
  return 0;
}
