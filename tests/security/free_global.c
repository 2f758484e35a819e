/* free() of a global. Caught: default and secure. */
#include "common.h"

static char global_buf[256];

int main(void) {
  free(launder(global_buf + 32));
  return not_caught("free of a global");
}
