// free_sized(p, n) of memory from ::operator new(n) (or new char[n] with
// argv[2] "array"): a C function given C++ memory. argv[1]: size (default
// 40; > 32 KiB makes it a large block). Caught: secure ("free of memory from
// new (use delete)" / "free of memory from new[] (use delete[])").
#include "common.h"
#include <new>

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 40);
  bool array = argc > 2 && strcmp(argv[2], "array") == 0;
  /* glibc before 2.39 has no free_sized: take hakmem's */
  void (*fn_free_sized)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  if (!fn_free_sized) { fprintf(stderr, "no free_sized in this process\n"); return 2; }
  void *ok = malloc(n);
  fn_free_sized(ok, n);  // malloc memory: fine
  void *p = array ? static_cast<void *>(new char[n]) : ::operator new(n);
  memset(p, 'a', n);
  fn_free_sized(launder(p), n);
  return not_caught(array ? "free_sized of new[] memory" : "free_sized of new memory");
}
