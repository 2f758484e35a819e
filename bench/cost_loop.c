/* cost_loop [SIZE]: 2000 rounds of 100 malloc(SIZE) then 100 free, the loop
 * whose instructions tests/security/cost.sh counts with callgrind (malloc and
 * free of one size class, nothing else). A plain program: run it under
 * LD_PRELOAD. */
#include <stdlib.h>

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : 16;
  void *p[100];
  for (int r = 0; r < 2000; r++) {
    for (int i = 0; i < 100; i++) p[i] = malloc(n);
    for (int i = 0; i < 100; i++) free(p[i]);
  }
  return 0;
}
