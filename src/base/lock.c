/* Lock waits: how often a global lock (lock.h) was found taken, how often
 * a waiter gave up its time slice, and per lock name how long the waits
 * took, counted for the stats; and the fork handlers' registration, before
 * the first lock a process with a second thread takes. */
#include "base/lock.h"

#include <time.h>
#include <sched.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
#include <sys/single_threaded.h>
#define ONE_THREAD() (__libc_single_threaded != 0)
#else
#define ONE_THREAD() false  /* no way to tell: registered at the first lock */
#endif

hk_lock_counts_t hk_lock_counts;

/* The named ranges: a few, written by constructors before any wait reads
 * them (a slot counted but not yet written reads as empty: OTHER). */
#define RANGES 16
static struct { uintptr_t lo, hi; unsigned name; } ranges[RANGES];
static atomic_uint nranges;

void hk_lock_name(const void *p, size_t bytes, unsigned name) {
  unsigned i = atomic_fetch_add_explicit(&nranges, 1, memory_order_relaxed);
  if (i >= RANGES || name >= HK_LOCK_NAMES) return;
  ranges[i].name = name;
  ranges[i].hi = (uintptr_t)p + bytes;
  ranges[i].lo = (uintptr_t)p;
}

static unsigned name_of(const hk_lock_t *l) {
  unsigned n = atomic_load_explicit(&nranges, memory_order_relaxed);
  uintptr_t a = (uintptr_t)l;
  for (unsigned i = 0; i < n && i < RANGES; i++)
    if (a >= ranges[i].lo && a < ranges[i].hi) return ranges[i].name;
  return HK_LOCK_OTHER;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void hk_lock_wait(hk_lock_t *l) { hk_lock_wait_as(l, HK_LOCK_NAMES); }

/* name: HK_LOCK_NAMES to look it up by its range */
void hk_lock_wait_as(hk_lock_t *l, unsigned name) {
  atomic_fetch_add_explicit(&hk_lock_counts.waits, 1, memory_order_relaxed);
  uint64_t t0 = now_ns();
  for (unsigned spins = 0;; spins++) {
    if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0)
      break;
    if (spins < 64) {
      hk_cpu_relax();
    } else {
      atomic_fetch_add_explicit(&hk_lock_counts.yields, 1, memory_order_relaxed);
      sched_yield();
    }
  }
  if (name >= HK_LOCK_NAMES) name = name_of(l);
  atomic_fetch_add_explicit(&hk_lock_counts.named_waits[name], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hk_lock_counts.named_ns[name], now_ns() - t0, memory_order_relaxed);
}

/* ---- the fork handlers, registered on demand (lock.h) ---- */

#ifdef HK_DEBUG
__thread unsigned hk_nosys_held __attribute__((tls_model("initial-exec")));
#endif

int hk_fork_state;
static void (*arm_fn)(void);
static __thread bool arming __attribute__((tls_model("initial-exec")));

void hk_fork_set_arm(void (*arm)(void)) { __atomic_store_n(&arm_fn, arm, __ATOMIC_RELEASE); }

void hk_fork_arm(bool force) {
  if (__atomic_load_n(&hk_fork_state, __ATOMIC_ACQUIRE) == HK_FORK_ARMED || arming) return;
  void (*fn)(void) = __atomic_load_n(&arm_fn, __ATOMIC_ACQUIRE);
  if (!fn || (!force && ONE_THREAD())) return;
  int idle = HK_FORK_UNARMED;
  if (__atomic_compare_exchange_n(&hk_fork_state, &idle, HK_FORK_ARMING, false, __ATOMIC_ACQUIRE,
                                  __ATOMIC_ACQUIRE)) {
    arming = true;
    fn();
    arming = false;
    __atomic_store_n(&hk_fork_state, HK_FORK_ARMED, __ATOMIC_RELEASE);
    return;
  }
  /* another thread registers: it holds none of our locks (it arms before
   * its first), so its mallocs never wait for ours */
  while (__atomic_load_n(&hk_fork_state, __ATOMIC_ACQUIRE) != HK_FORK_ARMED) sched_yield();
}
