/* Parked pages (slab_park.h): a slab's free pages purged while it still
 * holds live blocks, and taken back when it needs them. */
#include "mem/slab_park.h"

#include "base/bitmap.h"
#include "base/knobs.h"
#include "base/bits.h"
#include "pal/os.h"
#include "mem/remote.h"

/* Slabs hold at most this many blocks (64 KiB of 16-byte blocks): the
 * free map below has a bit a block. */
#define PARK_MAX_BLOCKS 4096u

/* The pages a slab's bits name: page k starts at base + k * HK_PAGE, base
 * the page holding the slab's first block (slab 0's first page also holds
 * the superslab's header: never parked, as no page is that reaches below
 * the first block). */
typedef struct {
  uint8_t *start, *base;
  size_t bs;
} geom_t;

static geom_t geom_of(const hk_slab_t *s) {
  uint8_t *start = HK_UNHIDE(s->start);
  geom_t g = { start, (uint8_t *)((uintptr_t)start & ~(uintptr_t)(HK_PAGE - 1)), s->block_size };
  return g;
}

/* The block holding byte p (0 for a byte before the first block) */
static size_t block_at(const geom_t *g, const uint8_t *p) {
  return p > g->start ? (size_t)(p - g->start) / g->bs : 0;
}

/* The pages block i overlaps, as bits (pages past 63 are never parked:
 * their bits are dropped) */
static uint64_t block_pages(const geom_t *g, size_t i) {
  size_t from = (size_t)(g->start + i * g->bs - g->base) / HK_PAGE;
  size_t to = (size_t)(g->start + (i + 1) * g->bs - 1 - g->base) / HK_PAGE;
  if (from > 63) return 0;
  if (to > 63) to = 63;
  uint64_t hi = to == 63 ? ~0ull : (1ull << (to + 1)) - 1;
  return hi & ~((1ull << from) - 1);
}

/* The pages that lie wholly among s's first `carved` blocks: the only ones
 * a park may purge (the rest hold a slot not carved yet, which a carve
 * writes, or what lies before or after the slab's blocks). */
static uint64_t parkable_pages(const geom_t *g, unsigned carved) {
  uint8_t *end = g->start + (size_t)carved * g->bs;
  uint64_t m = 0;
  for (unsigned k = 0; k < 64; k++) {
    uint8_t *p = g->base + (size_t)k * HK_PAGE;
    if (p + HK_PAGE > end) break;
    if (p >= g->start) m |= 1ull << k;
  }
  return m;
}

/* The pages `pages` purged, one madvise a run. Bytes. */
static size_t purge_pages(const geom_t *g, uint64_t pages) {
  size_t bytes = 0;
  for (uint32_t k = 0, j; hk_bitmap_next_run(&pages, &k, 64, &j); k = j) {
    hk_os_purge(g->base + (size_t)k * HK_PAGE, (size_t)(j - k) * HK_PAGE);
    bytes += (size_t)(j - k) * HK_PAGE;
  }
  return bytes;
}

/* Marks in map the blocks of list; false on a link that is not one of s's
 * carved blocks, a block listed twice or a block on a parked page (a
 * second free of it: reported). The walk is bounded by the map's marks. */
static bool mark_list(const hk_slab_t *s, const geom_t *g, const hk_block_t *b, uint64_t *map) {
  for (; b; b = hk_block_next(s, b)) {
    if (!hk_slab_is_block(s, b)) return false;
    size_t i = hk_slab_slot_of(s, b);
    if (map[i / 64] & (1ull << (i % 64))) return false;
    if (block_pages(g, i) & s->parked) {
      hk_report_invalid("free", b, HK_WHY_DOUBLE_FREE);
      return false;
    }
    map[i / 64] |= 1ull << (i % 64);
  }
  return true;
}

size_t hk_slab_park(hk_slab_t *s, bool force) {
  if (!HK_PARK_BUILD || s->capacity > PARK_MAX_BLOCKS) return 0;
  if (hk_os_thp() == HK_THP_ALL) return 0;  /* a page's purge would split the huge page */
  unsigned carved = s->carved, nfree = (unsigned)(carved - s->used);
  /* the walk below reads every free block (a cache miss each): s is looked
   * at again only once a quarter more of its blocks are free than when it
   * was last, so that the walks cost a few reads per free at most */
  unsigned least = HK_PARK_MIN_PAGES * (unsigned)HK_PAGE / s->block_size;
  if (nfree < s->park_free) s->park_free = (uint16_t)nfree;
  if (!force && nfree < s->park_free + (least > s->park_free / 4u ? least : s->park_free / 4u)) return 0;
  s->park_free = (uint16_t)nfree;
  geom_t g = geom_of(s);
  uint64_t may = parkable_pages(&g, carved) & ~s->parked;
  if (hk_popcount64(may) < HK_PARK_MIN_PAGES) return 0;

  uint64_t listed[PARK_MAX_BLOCKS / 64] = { 0 };
  if (!mark_list(s, &g, s->free, listed) || !mark_list(s, &g, s->local_free, listed)) return 0;
  /* a page is busy when a block on it is live: neither listed nor parked */
  uint64_t busy = 0;
  for (size_t i = 0; i < carved; i++) {
    if (listed[i / 64] & (1ull << (i % 64))) continue;
    uint64_t pages = block_pages(&g, i);
    if (!(pages & s->parked)) busy |= pages;
  }
  uint64_t want = may & ~busy;
  if (hk_popcount64(want) < HK_PARK_MIN_PAGES) return 0;

  /* the lists again, in address order, without the blocks on those pages */
  uint64_t gone = s->parked | want;
  hk_block_t *head = NULL;
  unsigned out = 0;
  for (size_t i = carved; i-- > 0;) {
    if (!(listed[i / 64] & (1ull << (i % 64)))) continue;
    if (block_pages(&g, i) & gone) {
      out++;
      continue;
    }
    hk_block_t *b = (hk_block_t *)(g.start + i * g.bs);
    hk_block_set_next(s, b, head);
    head = b;
  }
  s->free = head;
  s->local_free = NULL;
  s->used = (uint16_t)(s->used + out);
  s->nparked = (uint16_t)(s->nparked + out);
  s->parked = gone;
  s->park_free = (uint16_t)(nfree - out);
  return purge_pages(&g, want);
}

/* Parked pages something wrote to since they were purged: a free of one of
 * their blocks (a double free) or a write after free. Resident pages that
 * read as zero were only read (the kernel's zero page, or a page of its
 * own on a kernel that maps none). */
static uint64_t written_pages(const geom_t *g, uint64_t parked, uint64_t *resident) {
  unsigned lo = (unsigned)__builtin_ctzll(parked), hi = 63u - (unsigned)__builtin_clzll(parked);
  unsigned char vec[64];
  *resident = 0;
  if (!hk_os_resident(g->base + (size_t)lo * HK_PAGE, (size_t)(hi - lo + 1) * HK_PAGE, vec)) {
    *resident = parked;  /* unknown: none comes back */
    return 0;
  }
  uint64_t written = 0;
  for (unsigned k = lo; k <= hi; k++) {
    if (!(parked & (1ull << k)) || !(vec[k - lo] & 1)) continue;
    *resident |= 1ull << k;
    const uint64_t *w = (const uint64_t *)(g->base + (size_t)k * HK_PAGE);
    for (size_t n = 0; n < HK_PAGE / 8; n++)
      if (w[n]) {
        written |= 1ull << k;
        break;
      }
  }
  return written;
}

/* Unparks the pages `back` (some of s's parked pages): the blocks they
 * alone kept out go back on s's free list, unless they touch a page of
 * `resident` (touched since it was parked): those stay out for good, as
 * live ones in `used` (one of them may have been freed again and handed
 * out since). A block that also touches a page still parked stays parked.
 * How many came back. */
static unsigned take_back(hk_slab_t *s, const geom_t *g, uint64_t back, uint64_t resident) {
  uint64_t stay = s->parked & ~back;
  /* the blocks that touch a page of back, and no others */
  size_t first = block_at(g, g->base + (size_t)__builtin_ctzll(back) * HK_PAGE);
  size_t end = block_at(g, g->base + (64u - (size_t)__builtin_clzll(back)) * HK_PAGE - 1) + 1;
  if (end > s->carved) end = s->carved;
  unsigned n = 0, left = 0;
  for (size_t i = end; i-- > first;) {
    uint64_t pages = block_pages(g, i);
    if (!(pages & back) || (pages & stay)) continue;
    left++;
    if (pages & resident) continue;
    hk_block_t *b = (hk_block_t *)(g->start + i * g->bs);
    hk_block_set_next(s, b, s->free);
    hk_mark_store(b, hk_free_mark);
    s->free = b;
    n++;
  }
  s->used = (uint16_t)(s->used - n);
  s->nparked = (uint16_t)(s->nparked - left);
  s->parked = stay;
  return n;
}

/* The first block on the first page of `written`: a block freed there (its
 * free mark) if there is one, else the page's first block. */
static const void *written_block(const geom_t *g, uint64_t written, bool *freed) {
  uint8_t *page = g->base + (size_t)__builtin_ctzll(written) * HK_PAGE;
  size_t first = block_at(g, page);
  *freed = false;
  for (size_t i = first; g->start + i * g->bs < page + HK_PAGE; i++) {
    const hk_block_t *b = (const hk_block_t *)(g->start + i * g->bs);
    if ((const uint8_t *)b >= page && hk_mark_load(b) == hk_free_mark) {
      *freed = true;
      return b;
    }
  }
  return g->start + first * g->bs;
}

/* Reads whether the parked pages `pages` were written since they were
 * parked and reports the first that was: a free of one of its blocks (a
 * double free: a free finds no mark on a parked block) or a write after
 * free. Sets *resident to the pages that stay out. Whether any was. */
static bool check_written(const geom_t *g, uint64_t pages, uint64_t *resident) {
  uint64_t written = written_pages(g, pages, resident);
  if (!written) return false;
  bool freed;
  const void *b = written_block(g, written, &freed);
  hk_report_invalid(freed ? "free" : "malloc", b, freed ? HK_WHY_DOUBLE_FREE : "block was written after it was freed");
  return true;
}

/* The lowest parked pages that hold a batch (the slab's carve size), and
 * the rest of the block that crosses the last of them, so that at least
 * that block comes back */
static uint64_t next_batch(const hk_slab_t *s, const geom_t *g) {
  unsigned want = (unsigned)s->batch_kb * 1024u / (unsigned)HK_PAGE;
  uint64_t left = s->parked, back = 0;
  for (unsigned k = 0; k < (want ? want : 1u) && left; k++) {
    back |= left & -left;
    left &= left - 1;
  }
  /* the pages of the block holding the batch's last byte, and every page
   * below them (left holds only pages above the batch) */
  size_t top_end = (64u - (size_t)__builtin_clzll(back)) * HK_PAGE;
  uint64_t crossing = block_pages(g, block_at(g, g->base + top_end - 1));
  return back | (left & (crossing | (crossing - 1)));
}

bool hk_slab_unpark(hk_slab_t *s) {
  geom_t g = geom_of(s);
  /* a batch at a time, as carving hands out fresh pages: the first malloc
   * after a trim brought the whole slab's parked pages back */
  while (hk_slab_has_parked(s)) {
    uint64_t back = next_batch(s, &g), resident;
    check_written(&g, back, &resident);
    if (take_back(s, &g, back, resident) != 0) return true;
  }
  return false;
}

void hk_slab_parked_rebuild(hk_slab_t *s, uint64_t *listed, unsigned carved) {
  if (!HK_PARK_BUILD) return;
  s->nparked = 0;
  if (!s->parked) return;
  geom_t g = geom_of(s);
  for (size_t i = 0; i < carved; i++) {
    if (!(block_pages(&g, i) & s->parked)) continue;
    listed[i / 64] &= ~(1ull << (i % 64));
    s->nparked++;
  }
  purge_pages(&g, s->parked);
}

bool hk_slab_parked_clean(const hk_slab_t *s) {
  if (!hk_slab_has_parked(s)) return true;
  geom_t g = geom_of(s);
  uint64_t resident;
  return written_pages(&g, s->parked, &resident) == 0;
}

bool hk_slab_unpark_empty(hk_slab_t *s) {
  if (hk_slab_has_parked(s)) {
    /* A free of a parked block finds no free mark and takes one from
     * used: with a block still live the slab reads as holding only parked
     * ones. Given back, the live block would share its bytes with another
     * size's. Reported, and the slab kept. */
    geom_t g = geom_of(s);
    uint64_t resident;
    if (check_written(&g, s->parked, &resident)) {
      take_back(s, &g, s->parked, resident);
      return false;
    }
  }
  hk_slab_drop_parked(s);
  return true;
}

void hk_slab_drop_parked(hk_slab_t *s) {
  s->used = (uint16_t)(s->used - s->nparked);
  s->nparked = 0;
  s->parked = 0;
}

size_t hk_slab_park_orphan(hk_superslab_t *ss) {
  if (!HK_PARK_BUILD || !HK_LOAD_RELAXED(hk_knobs.park_idle)) return 0;
  size_t bytes = 0;
  for (unsigned i = 0; i < ss->nslabs; i++) {
    hk_slab_t *s = &ss->slabs[i];
    if (ss->free_mask >> i & 1 || HK_LOAD_RELAXED(s->state) != HK_SLAB_PARTIAL) continue;
    hk_slab_collect_remote(s);
    if (s->used == 0) {
      hk_ss_slab_unuse(ss, s);
      continue;
    }
    bytes += hk_slab_park(s, false);
  }
  return bytes;
}
