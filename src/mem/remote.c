/* Remote frees (remote.h): the owner's collection of the blocks other
 * threads pushed onto a slab's xfree list, and the notification that brings
 * a full slab back to its heap. */
#include "mem/remote.h"

#include "backend/superslab.h"
#include "base/lock.h"
#include "mem/secure.h"

static void wait_a_moment(unsigned *spins) {
  if (++*spins < 64) hk_cpu_relax();
  else sched_yield();
}

void hk_remote_notified(hk_slab_t *s, hk_block_t *b, bool delivered) {
  uintptr_t old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  for (;;) {
    uintptr_t nv = (uintptr_t)HK_XF_LIST(old) | HK_XF_NORMAL;
    if (!delivered) {  /* no owner (cannot happen while NOTIFYING; be safe) */
      hk_block_set_next(s, b, HK_XF_LIST(old));
      nv = (uintptr_t)b | HK_XF_NORMAL;
    }
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &old, nv, memory_order_release,
                                              memory_order_relaxed))
      return;
  }
}

size_t hk_slab_collect_remote(hk_slab_t *s) {
  hk_block_t *list = hk_slab_take_remote(s);
  if (!list) return 0;
  size_t n = hk_list_splice(s, list, &s->local_free, false);
  if (HK_M_CANARY) {  /* each trailer: freed now (its links were checked by the splice) */
    hk_sec_collector_t sec = hk_sec_collector(s);
    hk_block_t *b = list;
    for (size_t k = 0; k < n; k++, b = hk_block_next(s, b)) hk_sec_collect_one(&sec, b);
  }
  HK_ASSERT(s->used >= n);
  s->used = (uint16_t)(s->used - n);
  return n;
}

void hk_slab_collect_orphan(hk_superslab_t *ss) {
  for (unsigned i = 0; i < ss->nslabs; i++) {
    hk_slab_t *s = &ss->slabs[i];
    if (ss->free_mask >> i & 1 || !hk_slab_collect_remote(s)) continue;
    /* (parked pages, used == nparked, wait for an adopter: their check
     * reads residency, a system call this lock does not hold) */
    if (s->used == 0) hk_ss_slab_unuse(ss, s);
  }
}

bool hk_slab_want_notify(hk_slab_t *s) {
  unsigned spins = 0;
  uintptr_t old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  for (;;) {
    if (HK_XF_LIST(old) != NULL) return false;
    unsigned st = HK_XF_STATE(old);
    if (st == HK_XF_NOTIFY) return true;
    if (st == HK_XF_NOTIFYING) {
      wait_a_moment(&spins);
      old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
      continue;
    }
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &old, HK_XF_NOTIFY, memory_order_acq_rel,
                                              memory_order_relaxed))
      return true;
  }
}

void hk_slab_cancel_notify(hk_slab_t *s) {
  unsigned spins = 0;
  uintptr_t old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  for (;;) {
    unsigned st = HK_XF_STATE(old);
    if (st == HK_XF_NORMAL) return;
    if (st == HK_XF_NOTIFYING) {
      wait_a_moment(&spins);
      old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
      continue;
    }
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &old, old & ~(uintptr_t)HK_XF_MASK,
                                              memory_order_acq_rel, memory_order_relaxed))
      return;
  }
}
