/* test_slab_rebuild — a slab whose owner fork() stopped halfway through a
 * list update, made sound again by hk_slab_rebuild (src/mem/slab.c).
 *
 * fork() copies one thread; every other thread stops wherever it was, maybe
 * between two stores of a list update on a slab it owns. The child adopts
 * that slab later. Each case below builds, on a slab of a private
 * superslab (not the heap's), one state such a stop leaves:
 *   refill    s->free set from local_free, local_free not yet cleared:
 *             both lists hold the same blocks
 *   abandon   thread exit moving free onto local_free, free not yet cleared
 *   push      a free listed (onto free), the count not yet lowered
 *   pop       a malloc unlisted, the count not yet raised
 *   carve     fresh blocks listed before `carved` counts them
 *   park      a park (slab_park.c) whose lists and bits are stored, its
 *             madvise not made: the parked pages still hold old blocks
 *   takeback  an unpark whose blocks are listed, the bits and counts not
 *             yet cleared: blocks both listed and parked
 * Then it rebuilds the slab and checks that every carved block is listed at
 * most once, no live or parked block is listed, the counts agree with the
 * lists and the parked pages, the parked pages read as purged, and that
 * emptying the slab (refills, carves and parked pages taken back included)
 * hands out each block once. Without the rebuild every case fails; before
 * stop 91 the rebuild left park and takeback as they were. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "base/size_class.h"
#include "mem/slab.h"
#include "mem/slab_park.h"

#define CLS_BYTES 48

static hk_slab_t *fresh_slab(void) {
  /* a superslab-aligned private mapping with one small-kind slab in use */
  size_t sz = 2 * HK_SS_SIZE;
  uint8_t *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK_FATAL(m != MAP_FAILED);
  hk_superslab_t *ss = (hk_superslab_t *)(((uintptr_t)m + HK_SS_MASK) & ~(uintptr_t)HK_SS_MASK);
  ss->kind = HK_SS_KIND_SMALL;
  ss->slab_shift = 16;
  ss->nslabs = 32;
  unsigned cls = hk_class_of(CLS_BYTES);
  hk_slab_init(ss, 1, cls, 1);
  hk_slab_t *s = &ss->slabs[1];
  s->state = HK_SLAB_CUR;
  return s;
}

static unsigned index_of(const hk_slab_t *s, const void *b) {
  return (unsigned)(((const uint8_t *)b - HK_UNHIDE(s->start)) / s->block_size);
}

/* Live blocks (handed out, not freed) of the case, by index. */
static unsigned char live[4096];
static int verbose = 1;

static hk_block_t *pop(hk_slab_t *s) {
  if (!s->free && !hk_slab_refill(s)) return NULL;
  hk_block_t *b = s->free;
  hk_slab_pop_block(s, b);
  return b;
}

/* Whether block i of s overlaps a parked page. */
static int on_parked(const hk_slab_t *s, unsigned i) {
  uintptr_t start = (uintptr_t)HK_UNHIDE(s->start), base = start & ~(uintptr_t)(HK_PAGE - 1);
  uintptr_t a = start + (uintptr_t)i * s->block_size;
  for (uintptr_t k = (a - base) / HK_PAGE; k <= (a + s->block_size - 1 - base) / HK_PAGE && k < 64; k++)
    if (s->parked >> k & 1) return 1;
  return 0;
}

/* The lists hold each block at most once, only carved blocks, no live or
 * parked block, and as many as the count says are not out; nparked counts
 * the blocks of parked pages, which read as purged. */
static int sound(const hk_slab_t *s, const char *name) {
  unsigned char seen[4096] = {0};
  unsigned n = 0, parked = 0;
  int ok = 1;
  for (unsigned i = 0; i < s->carved; i++) parked += (unsigned)on_parked(s, i);
  if (parked != s->nparked || !hk_slab_parked_clean(s)) ok = 0;
  hk_block_t *lists[3] = { s->free, s->local_free, s->aged };
  for (int l = 0; l < 3; l++)
    for (hk_block_t *b = lists[l]; b && n <= s->capacity; b = hk_block_next(s, b), n++) {
      unsigned i = index_of(s, b);
      if (i >= s->carved || seen[i] || live[i] || on_parked(s, i)) ok = 0;
      if (i < sizeof seen) seen[i] = 1;
    }
  if (n != (unsigned)(s->carved - s->used)) ok = 0;
  if (!ok && verbose)
    printf("%s: lists hold %u blocks (carved %u, out %u; parked %u, counted %u), or a block twice,"
           " live, parked or uncarved, or a parked page written\n",
           name, n, s->carved, s->used, parked, s->nparked);
  return ok;
}

/* Empty the slab: every block it hands out is handed out once and was
 * not live. */
static void drain(hk_slab_t *s, const char *name) {
  static unsigned char got[4096];
  memcpy(got, live, sizeof got);
  unsigned twice = 0, n = 0;
  for (hk_block_t *b; (b = pop(s)) != NULL && n < 2 * s->capacity; n++) {
    unsigned i = index_of(s, b);
    if (got[i]) twice++;
    got[i] = 1;
  }
  CHECKF(twice == 0, "%s: %u blocks handed out twice", name, twice);
}

enum { REFILL, ABANDON, PUSH, POP, CARVE, PARK, TAKEBACK, NCASES };
static const char *names[NCASES] = { "refill", "abandon", "push", "pop", "carve", "park", "takeback" };

static void run_case(int c, int rebuild) {
  memset(live, 0, sizeof live);
  hk_slab_t *s = fresh_slab();
  hk_block_t *out[64];
  CHECK_FATAL(hk_slab_extend(s));
  for (int i = 0; i < 64; i++) {
    out[i] = pop(s);
    CHECK_FATAL(out[i] != NULL);
    live[index_of(s, out[i])] = 1;
  }
  /* free every other one, set aside (collected remote frees, profiled
   * or counted slabs): local_free holds 32 blocks */
  for (int i = 0; i < 64; i += 2) {
    hk_slab_push_aside(s, out[i]);
    live[index_of(s, out[i])] = 0;
  }
  switch (c) {
  case REFILL:  /* hk_slab_take_local: s->free = local_free; | local_free = NULL */
    while (s->free) {
      hk_block_t *b = pop(s);
      live[index_of(s, b)] = 1;
    }
    s->free = s->local_free;
    break;
  case ABANDON: { /* heap_abandon: tail->next = local_free; local_free = free; | free = NULL */
    hk_block_t *tail = s->free;
    while (hk_block_next(s, tail)) tail = hk_block_next(s, tail);
    hk_block_set_next(s, tail, s->local_free);
    s->local_free = s->free;
    break;
  }
  case PUSH:    /* hk_slab_push_local: link; free = b; | used-- */
    hk_block_set_next(s, out[1], s->free);
    s->free = out[1];
    live[index_of(s, out[1])] = 0;
    break;
  case POP: {   /* hk_slab_pop_block: s->free = next; | used++ (the block is lost) */
    hk_block_t *b = s->free;
    s->free = hk_block_next(s, b);
    live[index_of(s, b)] = 1;
    break;
  }
  case CARVE: { /* slab_carve: blocks listed; | carved += n */
    while (s->free) {
      hk_block_t *b = pop(s);
      live[index_of(s, b)] = 1;
    }
    unsigned before = s->carved;
    CHECK_FATAL(hk_slab_extend(s));
    hk_slab_set_carved(s, before);
    break;
  }
  case PARK:      /* hk_slab_park: lists, counts and bits stored; | madvise */
  case TAKEBACK: { /* take_back: blocks listed; | used, nparked, parked */
    /* 400 more out, then the 100th to the 399th freed: their pages are free */
    static hk_block_t *more[400];
    for (int i = 0; i < 400; i++) {
      more[i] = pop(s);
      CHECK_FATAL(more[i] != NULL);
      live[index_of(s, more[i])] = 1;
    }
    for (int i = 100; i < 400; i++) {
      hk_slab_push_aside(s, more[i]);
      live[index_of(s, more[i])] = 0;
    }
    static uint8_t before[HK_PAGE * 64];
    uint8_t *base = (uint8_t *)((uintptr_t)HK_UNHIDE(s->start) & ~(uintptr_t)(HK_PAGE - 1));
    memcpy(before, base, sizeof before);
    CHECK_FATAL(hk_slab_park(s, true) > 0);
    if (c == PARK) {
      for (unsigned k = 0; k < 64; k++)
        if (s->parked >> k & 1) memcpy(base + k * HK_PAGE, before + k * HK_PAGE, HK_PAGE);
    } else {
      uint64_t parked = s->parked;
      uint16_t nparked = s->nparked, used = s->used;
      CHECK_FATAL(hk_slab_unpark(s));
      s->parked = parked, s->nparked = nparked, s->used = used;
    }
    break;
  }
  }
  if (rebuild) {
    hk_slab_rebuild(s);
    CHECKF(sound(s, names[c]), "%s: not sound after the rebuild", names[c]);
    drain(s, names[c]);
  } else {
    CHECKF(!sound(s, names[c]), "%s: the case left a sound slab (it reaches nothing)", names[c]);
  }
}

int main(int argc, char **argv) {
  /* "without": the same cases, not rebuilt: each must fail (the cases
   * reach what they claim to) */
  int rebuild = !(argc > 1 && strcmp(argv[1], "without") == 0);
  verbose = rebuild;
  free(malloc(1));  /* the library is set up (knobs, keys) */
  for (int c = 0; c < NCASES; c++) run_case(c, rebuild);
  return check_done("test_slab_rebuild");
}
