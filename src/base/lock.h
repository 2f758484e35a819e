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

/* A lock others wait on is held for list moves, never across a system
 * call (docs/ARCHITECTURE.md, "No system call under a lock others wait
 * on"): a holder preempted in one keeps every waiter off for a time slice.
 * Debug builds check it: the holder of such a lock counts its hold
 * (hk_nosys_enter after the lock, hk_nosys_leave before the unlock) and
 * every call of the OS layer asserts the thread holds none (os.c). */
#ifdef HK_DEBUG
extern __thread unsigned hk_nosys_held __attribute__((tls_model("initial-exec"))) HK_HIDDEN;
HK_INLINE void hk_nosys_enter(void) { hk_nosys_held++; }
HK_INLINE void hk_nosys_leave(void) { hk_nosys_held--; }
#else
HK_INLINE void hk_nosys_enter(void) {}
HK_INLINE void hk_nosys_leave(void) {}
#endif

/* Which lock waited, for the stats (hakmem.h's HAK_LOCK_*, the same
 * numbers): a lock counts under the name of the memory range it lies in
 * (hk_lock_name: its owner names it once, at start-up), else OTHER. */
enum { HK_LOCK_OTHER, HK_LOCK_SS_CACHE, HK_LOCK_SS_ABANDONED, HK_LOCK_SS_ALL, HK_LOCK_SPAN,
       HK_LOCK_LARGE_CACHE, HK_LOCK_HEAPS, HK_LOCK_MID_POOL, HK_LOCK_LEARNER, HK_LOCK_STATS,
       HK_LOCK_NAMES };
/* Acquisitions that found the lock taken, and the sched_yield calls of
 * their waits (lock.c), for the stats; per name, the waits and the
 * nanoseconds they took (CLOCK_MONOTONIC, read only by a wait). */
typedef struct {
  atomic_ulong waits, yields;
  atomic_ulong named_waits[HK_LOCK_NAMES], named_ns[HK_LOCK_NAMES];
} hk_lock_counts_t;
extern hk_lock_counts_t hk_lock_counts;
void hk_lock_wait(hk_lock_t *l);  /* the contended path: spins, then yields */
void hk_lock_wait_as(hk_lock_t *l, unsigned name);  /* the same, counted under `name` */
/* The locks in [p, p + bytes) wait under `name` (one lock, or an array of
 * them). From a constructor: before any thread waits. */
void hk_lock_name(const void *p, size_t bytes, unsigned name);

/* The fork handlers, registered on demand (lock.c). A fork copies the
 * calling thread only, so a lock another thread held at the fork stays
 * held in the child: the handlers take every lock before it and reset
 * them after. A process with one thread cannot be caught that way, so the
 * handlers are registered only before the first lock taken once it has a
 * second thread (glibc's __libc_single_threaded), and pthread_atfork's
 * code pages (one 64 KiB window of libc's) stay out of a single-threaded
 * program's resident set. */
enum { HK_FORK_UNARMED, HK_FORK_ARMING, HK_FORK_ARMED };
extern int hk_fork_state HK_HIDDEN;

/* The registration (init.c's: pthread_atfork, and what a fork without
 * handlers left stale). Set once at start-up; until then nothing arms. */
void hk_fork_set_arm(void (*arm)(void));

/* Registers the handlers when the process has a second thread (force:
 * now, as the purge thread is about to start); a caller that registers
 * meanwhile is waited for. The registration's own mallocs come back here
 * and go on without it: a fork waits for pthread_atfork to return. */
HK_NOINLINE void hk_fork_arm(bool force);

/* Before each lock of hakmem's is taken: a load and a branch once armed. */
HK_INLINE void hk_fork_ready(void) {
  if (HK_UNLIKELY(__atomic_load_n(&hk_fork_state, __ATOMIC_ACQUIRE) != HK_FORK_ARMED)) hk_fork_arm(false);
}

HK_INLINE void hk_lock(hk_lock_t *l) {
  hk_fork_ready();
  if (HK_LIKELY(atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
                atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0))
    return;
  hk_lock_wait(l);
}
/* hk_lock's common case alone (armed, uncontended), with no call: a
 * caller whose fast path is a leaf goes out of line for the rest */
HK_INLINE bool hk_lock_quick(hk_lock_t *l) {
  return HK_LIKELY(__atomic_load_n(&hk_fork_state, __ATOMIC_ACQUIRE) == HK_FORK_ARMED) &&
         atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
         atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0;
}
HK_INLINE bool hk_trylock(hk_lock_t *l) {
  hk_fork_ready();
  return atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
         atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0;
}
/* hk_lock for a lock no range names (one in memory mapped later): its
 * waits count under `name` */
HK_INLINE void hk_lock_as(hk_lock_t *l, unsigned name) {
  if (HK_UNLIKELY(!hk_trylock(l))) hk_lock_wait_as(l, name);
}
HK_INLINE void hk_unlock(hk_lock_t *l) {
  atomic_store_explicit(&l->v, 0, memory_order_release);
}
/* hk_lock and hk_unlock of a lock others wait on: its hold counted (no
 * system call under it, checked by debug builds: hk_nosys_enter) */
HK_INLINE void hk_lock_nosys(hk_lock_t *l) {
  hk_lock(l);
  hk_nosys_enter();
}
HK_INLINE void hk_unlock_nosys(hk_lock_t *l) {
  hk_nosys_leave();
  hk_unlock(l);
}
HK_INLINE bool hk_trylock_nosys(hk_lock_t *l) {
  if (!hk_trylock(l)) return false;
  hk_nosys_enter();
  return true;
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
