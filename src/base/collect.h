/* collect.h: the one collect skeleton: lock, pick the victims, unlock,
 * release them. The caches that give memory back on a clock or under a
 * cap (superslab.c's cache of empty superslabs, large.c's cache of freed
 * mappings) follow it.
 *
 * Rules: pick runs under the cache's lock and takes the victims off the
 * cache's lists, chaining them in its context (each node's own `next`
 * serves: dlist.h's unlink leaves it free); release runs after the lock is
 * dropped and makes the system calls (unmap, purge), so no thread waits on
 * the lock behind one, and returns the bytes given back. A victim off the
 * lists is the releasing thread's alone: nobody else can reach it (large.c
 * puts a mapping it purged back in its cache, under the lock again). The
 * lock's holds are counted by the debug build's check that no system call
 * is made under it (lock.h, hk_lock_nosys). Always inlined: pick and
 * release are the caller's static functions, called directly. */
#ifndef HK_COLLECT_H
#define HK_COLLECT_H

#include <sched.h>
#include <stdbool.h>

#include "base/config.h"
#include "base/lock.h"

/* A clock's pass over a cache: at most one at a time, whoever runs it (an
 * owner's slow path, the purge thread, malloc_trim). A pass that is not
 * forced is skipped while another runs (that one gives back what is due);
 * a forced one (malloc_trim, hak_ctl("purge"), the budget's relief) waits
 * for it, so that when it returns it has covered every victim, a batch the
 * other pass had taken off the lists included. *busy: 0 or 1; a fork
 * child sets it to 0 (the pass of another thread is not copied). */
HK_INLINE bool hk_pass_begin(int *busy, bool force) {
  hk_fork_ready();  /* a lock too: a fork child resets it */
  for (;;) {
    int idle = 0;
    if (__atomic_compare_exchange_n(busy, &idle, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return true;
    if (!force) return false;
    sched_yield();
  }
}
HK_INLINE void hk_pass_end(int *busy) { __atomic_store_n(busy, 0, __ATOMIC_RELEASE); }

HK_INLINE size_t hk_collect(hk_lock_t *lock, void (*pick)(void *ctx), size_t (*release)(void *ctx), void *ctx) {
  hk_lock_nosys(lock);
  pick(ctx);
  hk_unlock_nosys(lock);
  return release(ctx);
}

#endif
