/* Background purge thread (HAKMEM_BACKGROUND_PURGE=1): the purge clock for
 * programs that stopped calling malloc. Started by init.c's constructor,
 * restarted in a fork child, stopped at exit. */
#ifndef HK_BG_H
#define HK_BG_H

#include "base/config.h"

/* Before hk_bg_start: what the thread calls for the timeline (the stats
 * tick) and for the dump signal (the stats report and the heap profile). */
void hk_bg_set_hooks(void (*stats_tick)(void), void (*dump)(void));
/* At the first first-class heap (heap_api.c): what each tick calls to park
 * the free pages of idle first-class heaps (HAKMEM_PARK_IDLE). Bytes
 * purged. */
void hk_bg_set_api_park(size_t (*fn)(void));
void hk_bg_start(void);          /* at start-up: the thread, when the knob is on */
/* The memory the program holds is `held` bytes of address space (the grow
 * hooks and each large free, init.c): with the knob at auto,
 * the thread starts once it and the peak resident set pass HK_BG_AUTO_BYTES. */
void hk_bg_held(size_t held);
void hk_bg_start_deferred(void); /* the start hk_bg_held asked for (the heap's deferred hook) */
void hk_bg_stop(void);           /* at exit: stop and join */
void hk_bg_wake(void);           /* tick now (the purge delay changed) */
bool hk_bg_running(void);
/* One pass of what the thread does each tick (all due now when force):
 * other threads' heaps, abandoned superslabs, the superslab cache, the large tier.
 * Bytes given back. */
size_t hk_bg_tick(bool force);
void hk_bg_fork_prepare(void);
void hk_bg_fork_parent(void);
void hk_bg_fork_child(void);

#endif
