// ::operator delete(p) (or delete[] with argv[2] "array") of memory from
// malloc. argv[1]: size (default 40; > 32 KiB makes it a large block).
// Caught: secure ("delete of memory from malloc (use free)" / "delete[] of
// memory from malloc (use free)").
#include "common.h"
#include <new>

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 40);
  bool array = argc > 2 && strcmp(argv[2], "array") == 0;
  char *p = static_cast<char *>(malloc(n));
  memset(p, 'a', n);
  void *q = launder(p);
  if (array)
    ::operator delete[](q);  // should be free
  else
    ::operator delete(q);
  return not_caught(array ? "delete[] of malloc memory" : "delete of malloc memory");
}
