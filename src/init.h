/* Process-wide start-up (knobs, thread-exit key, fork handlers) and the
 * thread-exit hook. */
#ifndef HK_INIT_H
#define HK_INIT_H

#include "config.h"

struct hk_heap;

/* Idempotent and reentrant: a malloc made by the init itself is served. */
void hk_init_global(void);
/* Arrange for hk_heap_thread_done(h) at this thread's exit. */
void hk_thread_register(struct hk_heap *h);

#endif
