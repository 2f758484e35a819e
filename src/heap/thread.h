/* A thread's heap, from its first slow path to its exit: made for it when
 * it first needs a slab, handed over (slabs abandoned, struct retired) by a
 * thread-specific destructor when it exits. */
#ifndef HK_THREAD_H
#define HK_THREAD_H

#include "heap/heap.h"

/* The calling thread's new heap, installed as its hk_tls_heap and armed to
 * be handed over at the thread's exit. NULL when the OS refuses memory. */
hk_heap_t *hk_thread_heap_init(void);

/* Thread exit: hand everything of h over and retire it. */
void hk_thread_heap_done(hk_heap_t *h);

#endif
