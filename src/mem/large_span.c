/* The span tier (large_span.h): large blocks carved from span arenas, their
 * free and its cap on free resident pages, realloc within a run, and the
 * tier swap's half that a span block's fresh pages start. */
#include "mem/large_span.h"

#include <errno.h>

#include "mem/prof.h"
#include "backend/span.h"

/* The tier swap: a span block faulted in `fresh` bytes. Where the span
 * tier still keeps as many free pages resident, the fresh ones were a
 * matter of placement (a free run that did not fit), not of want, and the
 * small tier keeps its memory: shedding it at each such block purged pages
 * the small tier soon faulted back in. Else the small tier gives back the
 * rest (the grow hook, init.c). */
static void span_grew(size_t fresh) {
  size_t idle = hk_span_bytes_dirty();
  if (idle < fresh) hk_large_grow_hook(fresh - idle);
}

void *hk_large_span_alloc(size_t size, size_t align, bool zero, unsigned kind) {
  hk_span_note_t sn;
  void *p = hk_span_alloc(size, align, zero, kind, &sn);
  if (!p) return NULL;
  hk_large_note_span(&sn);
  if (sn.fresh_pages) span_grew(sn.fresh_pages * HK_PAGE);
  hk_large_count_alloc((sn.resident_pages + sn.fresh_pages) * HK_PAGE);
  return p;
}

/* The block's pages stay resident for the next block. The cap on free
 * resident pages (hk_large_span_cap) holds at each tick of the purge clock
 * (hk_large_collect), and at once only past twice the cap: holding it at
 * every free purged the holes a heap of buffers reuses next, and the next
 * malloc faulted them back in. Under lowmem, the free of a block of half
 * the cap or more holds the cap at once: one such block fills that band
 * alone, so it kept a block's worth of pages over the cap at the peak of
 * a program whose buffers grow (docs/BENCHMARKS.md, "lowmem's big
 * frees"), and the holes the band is for are a heap's smaller ones. */
static void span_release(void *p, unsigned kind, size_t size) {
  unsigned bk;
  /* the default cap reads the live high-water with the block still
   * counted; lowmem's, a share of the blocks still live after it: the
   * last big block a program frees leaves the least */
  bool lowmem = hk_knobs.profile == HK_PROFILE_LOWMEM;
  size_t cap = lowmem ? 0 : hk_large_span_cap();
  size_t req, bytes = hk_span_free("free", p, &bk, &req);
  if (!bytes) return;
  if (lowmem) cap = hk_large_span_cap();
  hk_large_check_free(p, kind, size, bk, req);
  hk_large_count_free(bytes);
  size_t past = lowmem && bytes >= cap / 2 ? cap : 2 * cap;
  if (hk_span_bytes_dirty() > past) hk_large_span_purge((uint64_t)hk_large_cap(HK_LARGE_CAP_DELAY), cap);
  hk_large_collect(false);
}

void hk_large_span_free(void *p, unsigned ck, unsigned kind, size_t size) {
  (void)ck;
  hk_large_heap_forget(p);
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) hk_prof_forget(p);
  span_release(p, kind, size);
}

size_t hk_large_span_usable(const void *p, unsigned ck) {
  (void)ck;
  size_t usable, req;
  if (!hk_span_check(NULL, p, &usable, &req)) return 0;
  return HK_LARGE_REQUESTED ? req : usable;
}

bool hk_large_span_extent(const void *p, unsigned ck, const uint8_t **start, size_t *requested) {
  (void)ck;
  return hk_span_block_of(p, (uint8_t **)start, requested);
}

/* A span block grows into the free run after it, or moves (a copy, as
 * every peer does: the run it leaves stays resident for the next block). */
void *hk_large_span_resize(void *p, unsigned ck, size_t size, hk_large_move_t *mv) {
  (void)ck;
  size_t usable, req;
  if (!hk_span_check("realloc", p, &usable, &req)) { errno = EINVAL; return NULL; }
  if (size > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  size_t nu = size <= HK_SPAN_MAX ? hk_span_resize(p, size) : 0;
  if (nu) {
    hk_large_count_resize(usable, nu);
    return p;
  }
  mv->copy = usable < size ? usable : size;
  mv->align = 0;
  return NULL;
}
