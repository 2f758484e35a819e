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
 * no search.
 *
 * This header is the span tier's whole interface: it includes the parts
 * whose calls others make (the purge, the lending, the huge-page policy). */
#ifndef HK_SPAN_H
#define HK_SPAN_H

#include "backend/span_lend.h"   /* hk_span_take_ss, hk_span_give_ss, hk_span_idle */
#include "backend/span_purge.h"  /* hk_span_collect */
#include "backend/span_thp.h"    /* hk_span_thp_info */
#include "base/config.h"

#define HK_SPAN_MAX ((size_t)128 << 20)  /* larger blocks get a mapping of their own */

/* The events a span allocation reports (counted by the caller, which owns
 * the learner's event counts). */
typedef struct hk_span_note {
  size_t resident_pages;  /* handed out with their pages still resident */
  size_t fresh_pages;     /* never touched, or purged: they fault in */
  uint64_t idle_ms;       /* how long its first 64 KiB had been free (its
                             reuse distance, when its pages were purged) */
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

/* Span shards in use (HAKMEM_SPAN_SHARDS; span_arena.c, "shards"). */
unsigned hk_span_shards(void);

size_t hk_span_bytes_live(void);
size_t hk_span_bytes_cached(void);  /* free and resident (the quarantine's too) */
size_t hk_span_bytes_dirty(void);   /* of them, the free runs' (what the cap purges) */
size_t hk_span_bytes_meta(void);    /* the arenas' descriptors and page maps: their resident pages */

void hk_span_fork_prepare(void);
void hk_span_fork_parent(void);
void hk_span_fork_child(void);

#endif
