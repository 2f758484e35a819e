/* The slab layer (slab.h): a slab's lists of blocks: carving, refill,
 * restart, rebuild after fork, the walks of its free lists. */
#include "mem/slab.h"
#include "mem/slab_park.h"

#include "backend/superslab.h"
#include "base/knobs.h"
#include "mem/remote.h"
#include "mem/secure.h"
#include "base/size_class.h"

#ifdef HK_DEBUG
/* Blocks on one of s's lists; asserts each is a block of s. */
static unsigned check_list_len(const hk_slab_t *s, const hk_block_t *b) {
  unsigned n = 0;
  for (; b; b = hk_block_next(s, b), n++) {
    HK_ASSERT(hk_slab_is_block(s, b));
    HK_ASSERT(n < s->capacity);
  }
  return n;
}

void hk_slab_check(const hk_slab_t *s, uintptr_t owner) {
  HK_ASSERT((HK_LOAD_RELAXED(s->owner) & ~HK_OWNER_ASIDE) == (owner | (s->state == HK_SLAB_FULL ? HK_OWNER_FULL : 0)));
  HK_ASSERT(s->cls < HK_NCLASS && s->block_size == hk_class_bytes(s->cls));
  HK_ASSERT(s->carved <= s->capacity && s->used <= s->carved);
  HK_ASSERT(hk_kind_of_class(s->cls) == hk_slab_ss((hk_slab_t *)s)->kind);
  unsigned n = check_list_len(s, s->free) + check_list_len(s, s->local_free) + check_list_len(s, s->aged);
  HK_ASSERT(n == (unsigned)(s->carved - s->used));
}
#endif

hk_slab_t hk_slab_empty;  /* all zero: free == NULL, owner == 0 */

uint64_t hk_slab_free_count(const hk_slab_t *s) {
  uint64_t n = 0;
  for (const hk_block_t *b = s->free; b && n < s->capacity; n++) {
    const hk_block_t *nx = hk_block_next(s, b);
    if (!hk_link_ok(s, b, nx)) return n + 1;
    b = nx;
  }
  return n;
}

/* Is b on the list that starts at head? (at most capacity links, a bad one
 * ends the walk) */
static bool list_holds(const hk_slab_t *s, const hk_block_t *head, const hk_block_t *b) {
  for (uint64_t n = 0; head && n < s->capacity; n++) {
    if (head == b) return true;
    const hk_block_t *nx = hk_block_next(s, head);
    if (!hk_link_ok(s, head, nx)) return false;
    head = nx;
  }
  return false;
}

bool hk_slab_holds_free(const hk_slab_t *s, const hk_block_t *b) {
  /* only the owner takes blocks off xfree; others only push in front of
   * the head read here, so the rest of the chain holds still */
  const hk_block_t *x = HK_XF_LIST(atomic_load_explicit(&s->xfree, memory_order_acquire));
  return list_holds(s, s->free, b) || list_holds(s, s->local_free, b) || list_holds(s, s->aged, b) ||
         list_holds(s, x, b);
}

void hk_slab_init(hk_superslab_t *ss, unsigned idx, unsigned cls, uintptr_t owner) {
  hk_slab_t *s = &ss->slabs[idx];
  if (idx >= HK_SS_DESC_PAGE1 && !ss->desc_hi) HK_STORE_RELAXED(ss->desc_hi, true);  /* hk_ss_desc_n */
  s->cls = (uint8_t)cls;
  s->block_size = (uint32_t)hk_class_bytes(cls);
  /* under: the byte before a block must read as zero. The last bytes of
   * every slab's area are no block (HK_SLAB_TAIL); slab 0 also leaves its
   * first slot out, so that its first block does not follow the metadata
   * or guard page (the skip keeps blocks aligned as the area is). Zeroed
   * here in case another layout's block left data there (written only when
   * needed: a purged page stays unbacked). */
  uint8_t *first = hk_ss_slab_area(ss, idx);
  size_t bytes = hk_ss_slab_area_bytes(ss, idx) - HK_SLAB_TAIL;
  if (HK_M_UNDER && idx == 0) {
    first += s->block_size;
    bytes -= s->block_size;
  }
  if (HK_M_UNDER && first[-1] != 0) first[-1] = 0;
  s->start = HK_HIDE(first);
  s->capacity = (uint16_t)(bytes / s->block_size);
  s->div_m = hk_slab_div_m(s->block_size);
  s->start_m = (uint64_t)(uintptr_t)first * s->div_m;
  s->index = (uint8_t)idx;
  hk_slab_set_carved(s, 0);
  s->batch_kb = 4;
  s->used = 0;
  s->nparked = 0;
  s->parked = 0;
  s->park_free = 0;
  s->park_recent = 0;
  s->free = s->local_free = NULL;
  s->next = s->prev = NULL;
  HK_STORE_RELAXED(s->owner, owner);
  atomic_store_explicit(&s->xfree, 0, memory_order_relaxed);
  hk_sec_slab_init(s);
}

/* Carve about `want` bytes of fresh blocks (at most HAKMEM_CARVE_KB, at
 * least one block) onto s->free. */
static bool slab_carve(hk_slab_t *s, unsigned want) {
  unsigned left = (unsigned)s->capacity - s->carved;
  if (left == 0) return false;
  unsigned most = (unsigned)hk_knobs.carve_kb * 1024u;
  if (want > most) want = most;
  unsigned n = want / s->block_size;
  if (n == 0) n = 1;
  if (n > left) n = left;
  size_t bs = s->block_size;
  size_t at = (size_t)s->carved * bs;
  /* a batch that starts on room a slab started over has on resident pages
   * ends where they end: fresh pages are faulted in only once that room
   * is carved (refill.c carves it before a swap to an emptied slab) */
  if (hk_slab_room_resident(s)) {
    size_t res = hk_slab_resident_bytes(s);
    if (at + (size_t)n * bs > res) n = (unsigned)((res - at) / bs);
  }
  HK_ASSERT(n >= 1 && n <= left);  /* a batch of none would list an uncarved block */
  uint8_t *first = HK_UNHIDE(s->start) + at;
  /* a batch of a page (HAKMEM_CARVE_KB=4, lowmem) ends on its page's end
   * where one block still fits before it: one that started mid-page ran a
   * few blocks onto the next page and wrote their links there, a page more
   * for a class at its high-water mark. Bigger batches are cut at their
   * byte count: cut at a page's end too, they lost up to a page of blocks
   * each, and a producer whose blocks another thread frees carved more
   * often (docs/BENCHMARKS.md, "A thread's exit, a carve's last page") */
  if (want <= HK_PAGE) {
    uintptr_t page_end = ((uintptr_t)first + (size_t)n * bs) & ~(uintptr_t)(HK_PAGE - 1);
    if (page_end >= (uintptr_t)first + bs) n = (unsigned)((page_end - (uintptr_t)first) / bs);
  }
  if (HK_M_SHUFFLE || HK_M_CANARY) {
    hk_sec_carve(s, first, n);  /* random order, trailers or free marks */
  } else {
    uint8_t *p = first;
    uintptr_t mark = hk_free_mark;  /* a free of a block carved, never handed out, finds it */
    for (unsigned i = 1; i < n; i++, p += bs) {
      hk_block_set_next(s, (hk_block_t *)p, (hk_block_t *)(p + bs));
      hk_mark_store((hk_block_t *)p, mark);
    }
    hk_block_set_next(s, (hk_block_t *)p, s->free);
    hk_mark_store((hk_block_t *)p, mark);
    s->free = (hk_block_t *)first;
  }
  hk_slab_set_carved(s, s->carved + n);
  hk_superslab_t *ss = hk_slab_ss(s);
  uint16_t pages = (uint16_t)(((size_t)s->carved * bs + HK_PAGE - 1) / HK_PAGE);
  if (pages > ss->touched[s->index]) ss->touched[s->index] = pages;
  return true;
}

/* fork() stops every other thread wherever it is, maybe halfway through
 * a list update of a slab it owns: a refill that set s->free but not yet
 * s->local_free (both then hold the same blocks, which would be handed out
 * twice), a push or a pop whose count is not yet updated, a carve whose
 * blocks are listed before s->carved says so. The child's adopter calls
 * this before it uses such a slab: every carved block found on s's lists
 * goes once onto local_free, in address order; a block found twice, past
 * `carved` (it is carved again later) or (canary) not marked freed is
 * dropped; blocks neither listed nor counted out are counted out (lost
 * with their thread: a leak, never a block handed out twice); parked pages
 * stay parked (hk_slab_parked_rebuild). Remote frees
 * are atomic pushes, never caught halfway: xfree is left as it is. */
void hk_slab_rebuild(hk_slab_t *s) {
  if (HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED) return;
  enum { MAX_BLOCKS = (1u << 18) / 16 };  /* the most a 256 KiB slab of 16-byte blocks would hold */
  uint64_t seen[MAX_BLOCKS / 64] = {0};
  unsigned carved = s->carved < s->capacity ? s->carved : s->capacity;
  hk_block_t *lists[3] = { s->free, s->local_free, s->aged };
  for (int l = 0; l < 3; l++) {
    hk_block_t *b = lists[l];
    for (unsigned n = 0; b && n < carved; n++) {
      if (!hk_slab_is_slot(s, b)) break;  /* not a block of s: the list ends here */
      size_t i = (size_t)((uint8_t *)b - HK_UNHIDE(s->start)) / s->block_size;
      if (i < carved && i < MAX_BLOCKS && hk_sec_listed_ok(s, b)) seen[i / 64] |= 1ull << (i % 64);
      hk_block_t *nx = hk_block_next(s, b);
      if (!hk_link_ok(s, b, nx)) break;
      b = nx;
    }
  }
  /* blocks of parked pages count out, whatever the lists say */
  hk_slab_parked_rebuild(s, seen, carved);
  uint8_t *start = HK_UNHIDE(s->start);
  hk_block_t *head = NULL;
  unsigned listed = 0;
  for (unsigned i = carved; i-- > 0;) {
    if (!(seen[i / 64] >> (i % 64) & 1)) continue;
    hk_block_t *b = (hk_block_t *)(start + (size_t)i * s->block_size);
    hk_block_set_next(s, b, head);
    if (!HK_M_CANARY) hk_mark_store(b, hk_free_mark);
    head = b;
    listed++;
  }
  s->free = NULL;
  s->aged = NULL;
  s->local_free = head;
  hk_slab_set_carved(s, carved);
  s->used = (uint16_t)(carved - listed);
}

/* A slab's first batch is 4 KiB of blocks and each one it carves to grow
 * is twice the last, up to HAKMEM_CARVE_KB: a class with a few live blocks
 * touches one page, not 16 KiB (a program with a few live blocks in each
 * of many classes pays a page a class), a busy one soon carves big
 * batches. */
bool hk_slab_extend(hk_slab_t *s) {
  /* carved to the end: the blocks of parked pages come back first */
  if (HK_UNLIKELY(hk_slab_has_parked(s)) && s->carved == s->capacity) return hk_slab_unpark(s);
  unsigned kb = s->batch_kb;
  if (kb < hk_knobs.carve_kb) s->batch_kb = (uint8_t)(2 * kb);
  return slab_carve(s, kb * 1024u);
}

/* Starting over, the slab carves a batch of the size it had reached: one
 * that empties and restarts often (every block freed by another thread)
 * would otherwise climb from 4 KiB every time and rarely get further,
 * and every restart after a small batch is one more slow call. */
bool hk_slab_restart(hk_slab_t *s) {
  HK_ASSERT(s->used == 0 && s->free == NULL);
  s->local_free = NULL;  /* (and free: hk_slab_become_cur) */
  hk_slab_set_carved(s, 0);
  return slab_carve(s, s->batch_kb * 1024u);
}

/* measure delay, delayed reuse by generations: when the free list runs dry,
 * the blocks freed before the previous refill (s->aged) become the free
 * list and those freed since (local_free) become the aged ones. A freed
 * block therefore waits until the free list has run dry twice: a whole
 * batch of other blocks is handed out in between, and no list is walked.
 * With nothing aged, fresh blocks are carved (the freed ones age); a fully
 * carved slab with nothing aged hands out its freed blocks but the most
 * recent one, or that one when it is the only free block left. */
static bool refill_delayed(hk_slab_t *s) {
  if (atomic_load_explicit(&s->xfree, memory_order_relaxed) & ~(uintptr_t)HK_XF_MASK)
    hk_slab_collect_remote(s);
  if (hk_slab_take_aged(s)) return true;
  if (s->carved < s->capacity) {
    s->aged = s->local_free;
    s->local_free = NULL;
    return hk_slab_extend(s);
  }
  hk_block_t *last = s->local_free;
  if (last == NULL) return false;
  hk_block_t *rest = hk_block_next(s, last);
  if (HK_UNLIKELY(!hk_link_ok(s, last, rest))) hk_report_list_corrupt(last);
  s->local_free = NULL;
  if (rest == NULL) {  /* the only free block */
    s->free = last;
    return true;
  }
  hk_block_set_next(s, last, NULL);
  s->aged = last;
  s->free = rest;
  return true;
}

bool hk_slab_refill(hk_slab_t *s) {
  HK_ASSERT(s->free == NULL);
  if (HK_M_DELAY) return refill_delayed(s);
  if (!s->local_free) hk_slab_collect_remote(s);
  return hk_slab_take_local(s) || hk_slab_extend(s);
}
