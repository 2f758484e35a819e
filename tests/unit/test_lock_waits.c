/* test_lock_waits — the stats' waits per lock (src/base/lock.c): a lock in
 * a named range counts its waits, and the time they took, under that
 * name; a lock outside every range under OTHER; the totals count both.
 * A wait is forced, not hoped for: the main thread holds the lock until
 * the waiter has counted as waiting (its yields), then lets it go. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "check.h"
#include "base/lock.h"

static hk_lock_t named[4], unnamed;

static void *waiter(void *arg) {
  hk_lock_t *l = arg;
  hk_lock(l);
  hk_unlock(l);
  return NULL;
}

/* one wait on l: held here until the waiter yielded once */
static void one_wait(hk_lock_t *l) {
  hk_lock(l);
  unsigned long y = atomic_load(&hk_lock_counts.yields);
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, waiter, l) == 0);
  while (atomic_load(&hk_lock_counts.yields) == y) sched_yield();
  hk_unlock(l);
  pthread_join(t, NULL);
}

int main(void) {
  hk_lock_name(named, sizeof named, HK_LOCK_LEARNER);
  unsigned long w0 = atomic_load(&hk_lock_counts.waits);
  unsigned long l0 = atomic_load(&hk_lock_counts.named_waits[HK_LOCK_LEARNER]);
  unsigned long o0 = atomic_load(&hk_lock_counts.named_waits[HK_LOCK_OTHER]);
  unsigned long n0 = atomic_load(&hk_lock_counts.named_ns[HK_LOCK_LEARNER]);
  one_wait(&named[2]);   /* inside the named array */
  one_wait(&unnamed);
  CHECKF(atomic_load(&hk_lock_counts.waits) - w0 == 2, "waits %lu", atomic_load(&hk_lock_counts.waits) - w0);
  CHECKF(atomic_load(&hk_lock_counts.named_waits[HK_LOCK_LEARNER]) - l0 == 1, "named waits %lu",
         atomic_load(&hk_lock_counts.named_waits[HK_LOCK_LEARNER]) - l0);
  CHECKF(atomic_load(&hk_lock_counts.named_waits[HK_LOCK_OTHER]) - o0 == 1, "other waits %lu",
         atomic_load(&hk_lock_counts.named_waits[HK_LOCK_OTHER]) - o0);
  CHECK(atomic_load(&hk_lock_counts.named_ns[HK_LOCK_LEARNER]) > n0);
  unsigned long sum = 0;
  for (unsigned i = 0; i < HK_LOCK_NAMES; i++) sum += atomic_load(&hk_lock_counts.named_waits[i]);
  CHECKF(sum == atomic_load(&hk_lock_counts.waits), "per lock %lu, total %lu", sum,
         atomic_load(&hk_lock_counts.waits));
  return check_done("test_lock_waits");
}
