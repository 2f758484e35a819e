// ::operator delete(p, wrong_size) for a block from ::operator new(size).
// argv[1]: size (default 40; > 32 KiB makes it a large block). Caught: secure
// ("sized delete/free_sized with a size the block was not allocated with").
#include "common.h"
#include <new>

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 40);
  void *ok = ::operator new(n);
  ::operator delete(ok, n);  // right size: fine
  void *p = ::operator new(n);
  ::operator delete(launder(p), n + 16);
  return not_caught("sized delete with the wrong size");
}
