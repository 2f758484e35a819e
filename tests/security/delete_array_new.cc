// delete[] of memory from new (scalar). argv[1]: object size (default 40;
// > 32 KiB makes it a large block). Caught: secure ("delete[] of memory not
// from new[]").
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 40);
  char *p = static_cast<char *>(::operator new(n));  // memory from new
  memset(p, 'a', n);
  char *q = static_cast<char *>(launder(p));
  delete[] q;  // should be delete
  return not_caught("delete[] of new memory");
}
