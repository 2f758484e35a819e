/* free_sized(p, wrong size) (C23). argv[1]: the size allocated (default 40).
 * Caught: secure ("sized delete/free_sized with a size ..."). */
#include "common.h"


int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 40);
  /* glibc before 2.39 has no free_sized: take hakmem's */
  void (*fn_free_sized)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  if (!fn_free_sized) { fprintf(stderr, "no free_sized in this process\n"); return 2; }
  void *p = malloc(n);
  void *q = malloc(n);
  fn_free_sized(q, n);  /* right size: fine */
  fn_free_sized(p, n + 8);
  return not_caught("free_sized with the wrong size");
}
