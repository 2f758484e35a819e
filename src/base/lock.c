/* Lock waits: how often a global lock (lock.h) was found taken, and how
 * often a waiter gave up its time slice, counted for the stats. */
#include "base/lock.h"

hk_lock_counts_t hk_lock_counts;

void hk_lock_wait(hk_lock_t *l) {
  atomic_fetch_add_explicit(&hk_lock_counts.waits, 1, memory_order_relaxed);
  for (unsigned spins = 0;; spins++) {
    if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0)
      return;
    if (spins < 64) {
      hk_cpu_relax();
    } else {
      atomic_fetch_add_explicit(&hk_lock_counts.yields, 1, memory_order_relaxed);
      sched_yield();
    }
  }
}
