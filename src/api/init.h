/* What init.c offers the overrides above it. */
#ifndef HK_INIT_H
#define HK_INIT_H

#include "base/config.h"

/* 1 in the shared library built with the overrides: override/atfork.c
 * registers hakmem's fork handlers ahead of anyone else's, and init.c
 * leaves them until then or a second thread (CMakeLists.txt) */
#ifndef HK_ATFORK_OVERRIDE
#define HK_ATFORK_OVERRIDE 0
#endif

/* hakmem's fork handlers registered now (once), even before init.c's
 * constructor has run: override/atfork.c, ahead of anyone else's. */
void hk_init_arm_fork(void);

#endif
