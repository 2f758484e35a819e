/* span_purge.h: giving the span tier's free pages back to the OS. span.h
 * includes it: hk_span_collect is the tier's call for large.c. */
#ifndef HK_SPAN_PURGE_H
#define HK_SPAN_PURGE_H

#include "base/config.h"

/* Purges free resident pages: those free for delay_ms or more, then the
 * oldest until at most cap_bytes stay resident (which pages are resident is
 * asked of the kernel first); all of them when force
 * (and arenas left wholly free are unmapped). Bytes given back; *purges
 * counts the madvise calls. */
size_t hk_span_collect(bool force, uint64_t delay_ms, size_t cap_bytes, unsigned long *purges);

#endif
