/* A tiny spinlock for the rare global paths (superslab lists, large cache,
 * heap registry). Never taken on the malloc/free fast path. Reset, not
 * unlocked, in a fork child. */
#ifndef HK_LOCK_H
#define HK_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include "base/config.h"

typedef struct { atomic_int v; } hk_lock_t;
#define HK_LOCK_INIT { 0 }

HK_INLINE void hk_cpu_relax(void) { __builtin_ia32_pause(); }

/* Acquisitions that found the lock taken, and the sched_yield calls of
 * their waits (lock.c), for the stats. */
typedef struct { atomic_ulong waits, yields; } hk_lock_counts_t;
extern hk_lock_counts_t hk_lock_counts;
void hk_lock_wait(hk_lock_t *l);  /* the contended path: spins, then yields */

HK_INLINE void hk_lock(hk_lock_t *l) {
  if (HK_LIKELY(atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
                atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0))
    return;
  hk_lock_wait(l);
}
HK_INLINE bool hk_trylock(hk_lock_t *l) {
  return atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
         atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0;
}
HK_INLINE void hk_unlock(hk_lock_t *l) {
  atomic_store_explicit(&l->v, 0, memory_order_release);
}
HK_INLINE void hk_lock_reset(hk_lock_t *l) {
  atomic_store_explicit(&l->v, 0, memory_order_relaxed);
}

/* Reads that are racy by design, hidden from TSan: the stats snapshot of
 * other threads' counts, and the background purge's pass over a heap whose
 * owner the kernel shows quiescent (bg.c), which TSan cannot see. Their
 * atomics (lock hand-overs) still order what comes after. */
#if defined(__SANITIZE_THREAD__)
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define HK_TSAN_HIDE_BEGIN() __tsan_ignore_thread_begin()
#define HK_TSAN_HIDE_END() __tsan_ignore_thread_end()
#else
#define HK_TSAN_HIDE_BEGIN() ((void)0)
#define HK_TSAN_HIDE_END() ((void)0)
#endif

#endif
