/* Spans: runs of pages carved from 1 GiB arenas, for large blocks up to
 * HK_SPAN_MAX bytes. A freed run joins its free neighbours and keeps its
 * pages: the next request of any size that fits reuses them without a
 * syscall and without faulting them in again. Pages go back to the OS only
 * on the purge clock or when the free resident bytes pass the cap
 * (hk_span_collect), never as a side effect of reuse.
 *
 * An arena starts on a 1 GiB boundary: its descriptor, a table of one entry
 * per page (the boundary tags of every run) and a bitmap of the pages that
 * may be resident live in its first pages. free() finds the arena by
 * masking the pointer and the run by its page index: no header per block,
 * no search. */
#ifndef HK_SPAN_H
#define HK_SPAN_H

#include "base/config.h"

#define HK_SPAN_MAX ((size_t)128 << 20)  /* larger blocks get a mapping of their own */

/* The events a span allocation reports (counted by the caller, which owns
 * the learner's event counts). */
typedef struct hk_span_note {
  size_t resident_pages;  /* handed out with their pages still resident */
  size_t fresh_pages;     /* never touched, or purged: they fault in */
} hk_span_note_t;

/* A page-aligned block of `size` bytes (align: 0 or a power of two below
 * 2 MiB), or NULL (errno ENOMEM) when no arena can hold it. zero: contents
 * must read as zero. kind and the requested size are kept for the checks of
 * free. */
void *hk_span_alloc(size_t size, size_t align, bool zero, unsigned kind, hk_span_note_t *note);

/* The live block starting at p, or false (and a report when what names the
 * call: "realloc"). Its usable bytes and requested size. */
bool hk_span_check(const char *what, const void *p, size_t *usable, size_t *requested);

/* Measure copy: the live block holding address p (any byte of it, the
 * guard page included), its start and requested size; false when p is in
 * none. Takes no lock (span.c says why that is sound). */
bool hk_span_block_of(const void *p, uint8_t **start, size_t *requested);

/* Frees the live block at p: its kind and requested size in *kind and
 * *requested, and the bytes it held; or a report (what: "free") and 0. */
size_t hk_span_free(const char *what, void *p, unsigned *kind, size_t *requested);

/* Resize the live block at p (checked by hk_span_check) in place to `size` bytes: shrinking always
 * succeeds (the tail becomes a free run), growing only when the run after
 * it is free and large enough. New usable bytes, or 0 when it cannot. */
size_t hk_span_resize(void *p, size_t size);

/* Purges free resident pages: those free for delay_ms or more, then the
 * oldest until at most cap_bytes stay resident (which pages are resident is
 * asked of the kernel first); all of them when force
 * (and arenas left wholly free are unmapped). Bytes given back; *purges
 * counts the madvise calls. */
size_t hk_span_collect(bool force, uint64_t delay_ms, size_t cap_bytes, unsigned long *purges);

/* Huge or plain (span.c): big blocks placed in plain arenas so far, the
 * freed blocks sampled, and the running share of their 2 MiB chunks
 * touched, per mille. */
void hk_span_thp_info(size_t *plain_blocks, size_t *samples, unsigned *density_pm);

/* The unified backend: a 2 MiB chunk of an existing arena for a
 * superslab (its first pages resident or not), or NULL (no arena, no
 * room, or a build that keeps them apart: guard pages, memcheck). The
 * caller marks the chunk in the chunk map; hk_span_give_ss gives it back
 * as a free run (its first `kept` bytes may be resident, the rest were
 * purged) and marks it a span chunk again. */
void *hk_span_take_ss(void);
/* The large tier has gone mostly idle (its free pages that may be resident
 * are at least four times its live ones: a phase of big blocks ended), or
 * quiet (HK_SPAN_QUIET_ASKS superslabs were asked for in a row with no
 * block carved between). Lending and the small tier's shed (large.c,
 * hk_large_shed) wait for it. */
bool hk_span_idle(void);
/* Span shards in use (HAKMEM_SPAN_SHARDS; span.c, "shards"). */
unsigned hk_span_shards(void);
void hk_span_give_ss(void *p, size_t kept);
size_t hk_span_bytes_ss(void);  /* lent to superslabs */

size_t hk_span_bytes_live(void);
size_t hk_span_bytes_cached(void);  /* free and resident (the quarantine's too) */
size_t hk_span_bytes_dirty(void);   /* of them, the free runs' (what the cap purges) */

void hk_span_fork_prepare(void);
void hk_span_fork_parent(void);
void hk_span_fork_child(void);

#endif
