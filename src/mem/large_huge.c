/* The huge tier (large_huge.h): blocks in a mapping of their own, from the
 * cache of freed mappings (large.c) or the OS; free, usable size and the
 * copy checks by the header the chunk map points to; realloc in place or
 * by moving the pages (mremap, no copy). */
#include "mem/large_huge.h"

#include <errno.h>
#include <string.h>

#include "base/chunk_map.h"
#include "base/libc.h"  /* calloc's zeroing: glibc's, unchecked */
#include "mem/prof.h"
#include "pal/os.h"
#include "base/report.h"
#include "base/track.h"

/* The guard measure (the secure build): past the pages of its block every
 * mapping has a PROT_NONE tail, the guard page and room for the block to
 * grow: moving the end of the block's pages is then one mprotect (grow)
 * or one mmap over them (shrink: pages dropped), where cutting and growing
 * the mapping itself takes an mremap and one or two mprotects to move the
 * guard. */
#define GUARD HK_LARGE_GUARD

/* The bytes to map for a block of `need` bytes of pages: the secure build
 * reserves HK_LARGE_RESERVE_TIMES times that more (at most
 * HK_LARGE_RESERVE_MAX), up to the next 2 MiB (the chunk is taken anyway).
 * Address space only, and the room realloc grows into with one mprotect
 * instead of moving the block's pages to a new reservation. */
static size_t reserve_for(size_t need) {
  if (!GUARD) return need;
  size_t room = need < HK_LARGE_RESERVE_BIG ? HK_LARGE_RESERVE_TIMES * need : HK_LARGE_RESERVE_MAX;
  return hk_align_up(need + room + GUARD, HK_SS_SIZE);
}

/* The guard measure puts a PROT_NONE page right before a block too (the
 * header's page is before it): the block starts at least two pages into
 * its mapping. */
static size_t user_offset(size_t align) {
  size_t first = HK_PAGE + GUARD;
  return align > first ? align : hk_align_up(first, align);
}

static hk_large_t *header_of(const void *p, unsigned kind) {
  uintptr_t chunk = (uintptr_t)p & ~(uintptr_t)HK_SS_MASK;
  return (hk_large_t *)(chunk - (uintptr_t)(kind - HK_CHUNK_LARGE) * HK_SS_SIZE);
}

/* Move the first `from` bytes of h, grown to `to`, onto the fresh mapping
 * target of `to` bytes (no copy). NULL leaves h as it was. */
static hk_large_t *large_move(hk_large_t *h, size_t from, uint8_t *target, size_t to) {
  hk_chunk_set(h, HK_CHUNK_NONE);
  if (!hk_os_move(h, from, to, target)) {
    hk_chunk_set(h, HK_CHUNK_LARGE);
    hk_os_unmap(target, to);
    return NULL;
  }
  hk_large_t *n = (hk_large_t *)target;
  n->map_size = to;
  hk_chunk_set(n, HK_CHUNK_LARGE);
  return n;
}

/* Give mapping h exactly `need` bytes of pages: in place, or (growing) by
 * moving its pages, without a copy, to a new 2 MiB-aligned home; a shrink
 * never moves h. Returns the header where it now is, sizes updated; NULL
 * leaves h as it was. Only for mappings whose block starts in their first
 * chunk (HK_CHUNK_LARGE). */
static hk_large_t *reshape_plain(hk_large_t *h, size_t need) {
  size_t old = h->map_size;
  if (hk_os_resize_inplace(h, old, need)) {
    h->map_size = h->rw_size = need;
    return h;
  }
  if (need < old) return NULL;
  uint8_t *target = hk_os_map_aligned(need, HK_SS_SIZE);
  hk_large_t *n = target ? large_move(h, old, target, need) : NULL;
  if (n) n->rw_size = need;
  return n;
}

/* guard pages: within the reserve, one syscall. Past it the block's pages
 * move (mremap, no copy) to a new reservation, grown over all of it, whose
 * reserve is then closed again: the kernel merges the pages the reserve
 * later gives into the block's mapping only if they came with it, and
 * mremap moves only a range that is one mapping (else it says no and
 * realloc copies). The old reserve is unmapped. */
static hk_large_t *reshape_reserved(hk_large_t *h, size_t need) {
  if (need + GUARD <= h->map_size) return hk_large_set_rw(h, need) ? h : NULL;
  size_t old_rw = h->rw_size, old_map = h->map_size, res = reserve_for(need);
  size_t off = (size_t)(HK_UNHIDE(h->user) - (uint8_t *)h);
  uint8_t *target = hk_os_reserve_aligned(res, HK_SS_SIZE);
  if (!target) return NULL;
  hk_os_commit((uint8_t *)h + off - HK_PAGE, HK_PAGE);  /* mremap moves one mapping: the guard opens for it */
  hk_large_t *n = large_move(h, old_rw, target, res);
  hk_os_protect_none((n ? (uint8_t *)n : (uint8_t *)h) + off - HK_PAGE, HK_PAGE);
  if (!n) return NULL;
  hk_os_protect_none(target + need, res - need);
  hk_os_unmap((uint8_t *)h + old_rw, old_map - old_rw);
  n->rw_size = need;
  return n;
}

static hk_large_t *large_reshape(hk_large_t *h, size_t need) {
  return GUARD ? reshape_reserved(h, need) : reshape_plain(h, need);
}

/* A mapping with `need` bytes of pages, header included, for a block in
 * its first chunk: a cached one that serves as it is; else the nearest
 * cached one reshaped rather than a fresh mapping (one mremap, and the
 * pages it keeps are already there): the smallest bigger one shrunk, or
 * the biggest smaller one grown in place or moved (no copy) to a new
 * aligned home; else a fresh one. NULL: the OS refused. */
static hk_large_t *map_first_chunk(size_t need) {
  hk_large_t *h = hk_large_cache_take(need);
  if (h) return h;
  hk_large_t *e = hk_large_cache_take_nearest(need);
  if (e) {
    h = large_reshape(e, need);
    if (h) return h;
    e->state = 0;
    hk_large_unmap(e);
  }
  size_t res = reserve_for(need);
  h = GUARD ? hk_os_reserve_aligned(res, HK_SS_SIZE) : hk_os_map_aligned(res, HK_SS_SIZE);
  if (!h && res > need + GUARD) h = hk_os_reserve_aligned(res = need + GUARD, HK_SS_SIZE);
  if (!h) return NULL;
  if (GUARD && !hk_os_commit(h, need)) {
    hk_os_unmap(h, res);
    return NULL;
  }
  h->map_size = res;
  h->rw_size = need;
  h->zeroed = 1;
  h->purged = 0;
  h->magic = HK_LARGE_MAGIC;
  h->next = h->prev = NULL;
  hk_chunk_set(h, HK_CHUNK_LARGE);
  return h;
}

void *hk_large_huge_alloc(size_t size, size_t align, bool zero, unsigned kind) {
  if (align < HK_PAGE) align = HK_PAGE;
  hk_large_t *h;
  uint8_t *user;
  if (align < HK_SS_SIZE) {
    size_t off = user_offset(align);  /* the header page (and guard), or up to the alignment */
    h = map_first_chunk(hk_align_up(off + size, HK_PAGE));
    if (!h) { errno = ENOMEM; return NULL; }
    user = (uint8_t *)h + off;
    if (GUARD) hk_os_protect_none(user - HK_PAGE, HK_PAGE);
  } else {
    /* user lands k chunks past the header; the chunk map says how many */
    size_t need = hk_align_up(size + align, HK_PAGE) + GUARD;
    if ((align >> HK_SS_SHIFT) > HK_CHUNK_LARGE_MAX_BACK) { errno = ENOMEM; return NULL; }
    h = hk_os_map_aligned(need, HK_SS_SIZE);
    if (!h) { errno = ENOMEM; return NULL; }
    if (GUARD) hk_os_protect_none((uint8_t *)h + need - GUARD, GUARD);
    user = (uint8_t *)hk_align_up((uintptr_t)h + HK_PAGE, align);
    if (GUARD) hk_os_protect_none(user - HK_PAGE, HK_PAGE);  /* a chunk or more past the header */
    h->map_size = need;
    h->rw_size = need - GUARD;
    h->zeroed = 1;
    h->magic = HK_LARGE_MAGIC;
    h->next = h->prev = NULL;
    unsigned back = (unsigned)(((uintptr_t)user - (uintptr_t)h) >> HK_SS_SHIFT);
    hk_chunk_set(user, HK_CHUNK_LARGE + back);
  }
  h->user = HK_HIDE(user);
  h->usable = (size_t)((uint8_t *)h + h->rw_size - user);
  h->state = HK_LARGE_LIVE;
  h->kind = kind;
  h->requested = size;
  h->align = align;
  hk_large_count_alloc(h->rw_size);
  bool was_zero = h->zeroed;
  hk_track_alloc(user, h->usable, was_zero);
  if (zero && !was_zero) memset(user, 0, size);
  h->zeroed = 0;
  return user;
}

static hk_large_t *checked_header(const char *what, const void *p, unsigned kind) {
  hk_large_t *h = header_of(p, kind);
  if (h->magic != HK_LARGE_MAGIC || HK_UNHIDE(h->user) != p) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return NULL;
  }
  if (h->state != HK_LARGE_LIVE) {
    hk_report_invalid(what, p, HK_WHY_DOUBLE_FREE);
    return NULL;
  }
  return h;
}

void hk_large_huge_free(void *p, unsigned ck, unsigned kind, size_t size) {
  hk_large_heap_forget(p);
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) hk_prof_forget(p);
  hk_large_t *h = checked_header("free", p, ck);
  if (!h) return;
  hk_track_free(p);
  hk_large_check_free(p, kind, size, h->kind, h->requested);
  hk_large_count_free(h->rw_size);
  if (GUARD) {  /* no cache: closed at once, into the quarantine */
    h->state = HK_LARGE_CACHED;
    hk_os_decommit((uint8_t *)h + HK_PAGE, h->map_size - HK_PAGE);
    h->rw_size = 0;  /* nothing left to give back but the mapping */
    hk_large_quarantine(h);
    return;
  }
  hk_large_cache_put(h, ck);
}

size_t hk_large_huge_usable(const void *p, unsigned ck) {
  hk_large_t *h = header_of(p, ck);
  if (h->magic != HK_LARGE_MAGIC || HK_UNHIDE(h->user) != p || h->state != HK_LARGE_LIVE) return 0;
  return HK_LARGE_REQUESTED ? h->requested : h->usable;
}

bool hk_large_huge_extent(const void *p, unsigned ck, const uint8_t **start, size_t *requested) {
  hk_large_t *h = header_of(p, ck);
  uint8_t *u = HK_UNHIDE(HK_LOAD_RACY(h->user));
  if (HK_LOAD_RACY(h->magic) != HK_LARGE_MAGIC || HK_LOAD_RACY(h->state) != HK_LARGE_LIVE ||
      (uintptr_t)p - (uintptr_t)u >= HK_LOAD_RACY(h->usable))
    return false;
  *start = u;
  *requested = h->requested;
  return true;
}

void *hk_large_huge_resize(void *p, unsigned ck, size_t size, hk_large_move_t *mv) {
  hk_large_t *h = checked_header("realloc", p, ck);
  if (!h) { errno = EINVAL; return NULL; }
  if (size > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  size_t off = (size_t)(HK_UNHIDE(h->user) - (uint8_t *)h);
  size_t need = hk_align_up(off + (size ? size : 1), HK_PAGE);
  if (size <= h->usable) {
    /* shrink in place; give the tail back when it is worth a syscall */
    size_t old_rw = h->rw_size;
    if (old_rw - need >= HK_LARGE_SHRINK_MIN && ck == HK_CHUNK_LARGE && large_reshape(h, need)) {
      hk_large_count_resize(old_rw, need);
      hk_track_resize(p, h->usable, need - off);
      h->usable = need - off;
    }
    if (HK_LARGE_REQUESTED) h->requested = size;  /* what usable_size and sized delete see */
    return p;
  }
  if (ck == HK_CHUNK_LARGE) {
    /* grow in place, else move the pages (no copy) to a new aligned home */
    size_t old = h->rw_size, old_usable = h->usable;
    hk_large_t *nh = large_reshape(h, need);
    if (nh) {
      uint8_t *q = (uint8_t *)nh + off;
      if (nh == h) {
        hk_track_resize(p, old_usable, need - off);
      } else {
        hk_track_free(p);
        hk_track_alloc(q, need - off, 0);
        hk_track_defined(q, old_usable);  /* moved contents */
      }
      nh->user = HK_HIDE(q);
      nh->usable = need - off;
      if (HK_LARGE_REQUESTED) nh->requested = size;
      hk_large_count_resize(old, need);
      return q;
    }
  }
  mv->copy = h->usable;
  mv->align = h->align > HK_PAGE ? h->align : 0;
  return NULL;
}
