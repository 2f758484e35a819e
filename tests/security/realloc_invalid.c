/* realloc() of a stack address. Caught: default and secure
 * ("invalid realloc(...)"). */
#include "common.h"

int main(void) {
  char buf[64];
  memset(buf, 0, sizeof buf);
  void *q = realloc(launder(buf), 128);
  (void)q;
  return not_caught("realloc of a stack address");
}
