/* span_lend.h: the unified backend: 2 MiB chunks of span arenas lent to
 * superslabs while the large tier is idle. span.h includes it: these are
 * the span tier's calls for superslab.c and large.c. */
#ifndef HK_SPAN_LEND_H
#define HK_SPAN_LEND_H

#include "base/config.h"

/* A 2 MiB chunk of an existing arena for a superslab (its first pages
 * resident or not), or NULL (no arena, no room, or a build that keeps them
 * apart: guard pages, memcheck). The caller marks the chunk in the chunk
 * map; hk_span_give_ss gives it back as a free run (its first `kept` bytes
 * may be resident, the rest were purged) and marks it a span chunk again. */
void *hk_span_take_ss(void);
/* The large tier has gone mostly idle (its free pages that may be resident
 * are at least four times its live ones: a phase of big blocks ended), or
 * quiet (HK_SPAN_QUIET_ASKS superslabs were asked for in a row with no
 * block carved between). Lending and the small tier's shed (large.c,
 * hk_large_shed) wait for it. */
bool hk_span_idle(void);
void hk_span_give_ss(void *p, size_t kept);
size_t hk_span_bytes_ss(void);  /* lent to superslabs */

#endif
