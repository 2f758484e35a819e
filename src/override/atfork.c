/* The fork handlers others register through pthread_atfork (the program's,
 * other libraries'): hakmem's own are registered first. They then prepare
 * last and run first in the child, so a handler of the program's may
 * malloc in all three, as it may with glibc's malloc, whose locks fork
 * takes after the handlers and releases before them. Without such a
 * registration, hakmem's wait until the process has a second thread
 * (base/lock.h). Only in the shared library: a static program's libc
 * defines this symbol, and there init.c registers at start-up. */
#include <dlfcn.h>
#include <errno.h>

#include "api/init.h"

typedef int (*register_fn)(void (*)(void), void (*)(void), void (*)(void), void *);

HK_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso) {
  static register_fn next;
  hk_init_arm_fork();  /* (its own pthread_atfork comes back here: passed on) */
  register_fn f = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  if (!f) {
    f = (register_fn)dlsym(RTLD_NEXT, "__register_atfork");
    __atomic_store_n(&next, f, __ATOMIC_RELEASE);
  }
  return f ? f(prepare, parent, child, dso) : ENOMEM;
}
