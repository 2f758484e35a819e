/* free() of a pointer inside a large block (> 32 KiB): one page in, and 16
 * bytes in. argv[1]: offset (default 4096). Caught: default and secure. */
#include "common.h"

int main(int argc, char **argv) {
  size_t off = argc > 1 ? strtoul(argv[1], NULL, 0) : 4096;
  char *p = malloc(300000);
  memset(p, 'a', 300000);
  free(launder(p + off));
  return not_caught("free inside a large block");
}
