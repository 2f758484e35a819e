/* Cross-thread frees. A block freed by a thread that does not own its slab
 * is pushed onto the slab's atomic `xfree` list (lock-free); the owner takes
 * the whole list in one exchange when it runs dry.
 *
 * A full slab is not on any list the owner looks at, so the owner marks it
 * HK_XF_NOTIFY; the first remote free after that sends its block to the owner
 * heap's `delayed` list instead, which the owner drains in its slow path,
 * bringing the slab back into use. HK_XF_NOTIFYING covers the moment a remote
 * thread reads the owner heap: the owner waits for it before abandoning.
 * The hand-over itself is the heap's (hk_heap_notify): this layer knows
 * slabs, not heaps. */
#ifndef HK_REMOTE_H
#define HK_REMOTE_H

#include "mem/freelist.h"

#define HK_XF_LIST(v)  ((hk_block_t *)((v) & ~(uintptr_t)HK_XF_MASK))
#define HK_XF_STATE(v) ((unsigned)((v) & HK_XF_MASK))

/* Free b (in slab s) from a thread that is not s's owner: push it onto
 * s->xfree. False when the owner asked to hear of this free (the slab is
 * full): the slab is then NOTIFYING, and the caller hands b to the owner
 * heap (hk_heap_notify, which ends with hk_remote_notified). */
HK_INLINE bool hk_remote_push(hk_slab_t *s, hk_block_t *b) {
  uintptr_t old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  for (;;) {
    if (HK_UNLIKELY(HK_XF_STATE(old) == HK_XF_NOTIFY)) {
      uintptr_t nv = (uintptr_t)HK_XF_LIST(old) | HK_XF_NOTIFYING;
      if (atomic_compare_exchange_weak_explicit(&s->xfree, &old, nv, memory_order_acquire,
                                                memory_order_relaxed))
        return false;
      continue;
    }
    hk_block_set_next(s, b, HK_XF_LIST(old));
    uintptr_t nv = (uintptr_t)b | HK_XF_STATE(old);
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &old, nv, memory_order_release,
                                              memory_order_relaxed))
      return true;
  }
}

/* The hand-over of b is done: leave the NOTIFYING state. delivered: the
 * owner heap took b; otherwise (no owner) b goes onto xfree. */
void hk_remote_notified(hk_slab_t *s, hk_block_t *b, bool delivered);

/* Owner: take s's remote list whole (its notification state stays). */
HK_INLINE hk_block_t *hk_slab_take_remote(hk_slab_t *s) {
  uintptr_t old = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  if (HK_XF_LIST(old) == NULL) return NULL;
  while (!atomic_compare_exchange_weak_explicit(&s->xfree, &old, old & HK_XF_MASK, memory_order_acquire,
                                                memory_order_relaxed)) {
  }
  return HK_XF_LIST(old);
}

/* Owner: move remote frees onto s->local_free. Returns how many. */
size_t hk_slab_collect_remote(hk_slab_t *s);

/* An abandoned superslab, held under the abandoned lists' lock (nobody owns
 * it; no adopter, no fork meanwhile): each slab takes back its remote
 * frees, and one with every block back becomes unused. Without this the
 * blocks other threads free into an exited thread's superslabs wait for an
 * adopter, and one that no thread adopts keeps their pages for good.
 * Set as the superslab layer's orphan hook (init.c). */
struct hk_superslab;
void hk_slab_collect_orphan(struct hk_superslab *ss);

/* Owner: ask to be told of the next remote free. False if remote frees
 * arrived meanwhile (collect them instead). */
bool hk_slab_want_notify(hk_slab_t *s);

/* Owner: stop asking (slab no longer full, being released or abandoned).
 * Waits out a remote thread caught in the middle of notifying. */
void hk_slab_cancel_notify(hk_slab_t *s);

#endif
