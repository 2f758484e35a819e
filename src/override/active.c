/* hak_is_active: whether hakmem is the process's malloc. Above the
 * overrides (it calls malloc, which they may define), so its own rank. */
#include "api/alloc.h"

#include <stdlib.h>

#include "../include/hakmem.h"

/* Ask the process's own malloc (whatever the dynamic linker bound the name
 * to) for a block, and see whether it is ours. */
HK_EXPORT int hak_is_active(void) {
  void *(*volatile m)(size_t) = malloc;
  void (*volatile f)(void *) = free;
  void *p = m(24);
  int ours = hk_owns_block(p) ? 1 : 0;
  f(p);
  return ours;
}
