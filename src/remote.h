/* Cross-thread frees. A block freed by a thread that does not own its slab
 * is pushed onto the slab's atomic `xfree` list (lock-free); the owner takes
 * the whole list in one exchange when it runs dry.
 *
 * A full slab is not on any list the owner looks at, so the owner marks it
 * HK_XF_NOTIFY; the first remote free after that sends its block to the owner
 * heap's `delayed` list instead, which the owner drains in its slow path,
 * bringing the slab back into use. HK_XF_NOTIFYING covers the moment a remote
 * thread reads the owner heap: the owner waits for it before abandoning. */
#ifndef HK_REMOTE_H
#define HK_REMOTE_H

#include "superslab.h"

struct hk_heap;

/* Free b (in slab s) from a thread that is not s's owner. */
void hk_free_remote(hk_slab_t *s, hk_block_t *b);

/* Owner: move remote frees onto s->local_free. Returns how many. */
size_t hk_slab_collect_remote(hk_slab_t *s);

/* Owner: ask to be told of the next remote free. False if remote frees
 * arrived meanwhile (collect them instead). */
bool hk_slab_want_notify(hk_slab_t *s);

/* Owner: stop asking (slab no longer full, being released or abandoned).
 * Waits out a remote thread caught in the middle of notifying. */
void hk_slab_cancel_notify(hk_slab_t *s);

#endif
