/* free() of a stack address. Caught: default and secure. */
#include "common.h"

int main(void) {
  char buf[128];
  memset(buf, 0, sizeof buf);
  free(launder(buf + 16));
  return not_caught("free of a stack address");
}
