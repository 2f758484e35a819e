/* copy_loop SIZE heap|large|stack [CALLS]: CALLS (default 200000) memcpy
 * calls of SIZE bytes from a global buffer into a heap block of SIZE bytes
 * (heap), into the middle of a 1 MiB block (large: a span, its 128th
 * page), or onto a stack buffer (stack), each through a volatile function pointer from a
 * non-inlined function, copy_once: the loop whose instructions
 * bench/security_cost.sh counts with callgrind (--toggle-collect=copy_once:
 * the call and everything under it, i.e. glibc's memcpy, and the copy
 * measure's check where the library has it). A plain program: run it under
 * LD_PRELOAD. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char src[1 << 16];
static void *(*volatile fn_memcpy)(void *, const void *, size_t) = memcpy;

__attribute__((noinline)) void copy_once(void *d, size_t n) { fn_memcpy(d, src, n); }

static void usage(FILE *f) {
  fprintf(f, "usage: copy_loop [SIZE] [heap|large|stack] [CALLS]\n"
             "  CALLS memcpy calls of SIZE bytes into a heap block, a large block or the\n"
             "  stack (defaults 16 heap 200000): the loop bench/security_cost.sh counts\n");
}

/* a decimal count, or the usage and exit 2 */
static unsigned long count_arg(const char *s) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || *s == '-') {
    fprintf(stderr, "copy_loop: bad number '%s'\n", s);
    usage(stderr);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
  if (argc > 4) { usage(stderr); return 2; }
  size_t n = argc > 1 ? count_arg(argv[1]) : 16;
  const char *where = argc > 2 ? argv[2] : "heap";
  long calls = argc > 3 ? (long)count_arg(argv[3]) : 200000;
  if (n > sizeof src || (strcmp(where, "heap") && strcmp(where, "large") && strcmp(where, "stack"))) {
    usage(stderr);
    return 2;
  }
  char stack[1 << 16];
  char *block = strcmp(where, "large") == 0 ? malloc(1 << 20) : strcmp(where, "heap") == 0 ? malloc(n) : NULL;
  char *d = !block ? stack : n < (1 << 19) && strcmp(where, "large") == 0 ? block + (1 << 19) : block;
  for (long i = 0; i < calls; i++) copy_once(d, n);
  __asm__ volatile("" : : "r"(d) : "memory");
  free(block);
  return 0;
}
