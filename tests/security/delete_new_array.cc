// delete of memory from new[]. argv[1]: element count (default 10; > 32 KiB
// makes it a large block). Caught: secure ("delete of memory not from new").
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 10);
  int *p = new int[n];
  for (size_t i = 0; i < n; i++) p[i] = (int)i;
  int *q = static_cast<int *>(launder(p));
  delete q;  // should be delete[]
  return not_caught("delete of new[] memory");
}
