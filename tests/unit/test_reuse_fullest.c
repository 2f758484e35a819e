/* test_reuse_fullest MODE — which partial slab a class goes to when its
 * current slab runs dry (src/heap/refill.c, heap_pick_partial).
 *
 * A fresh thread takes blocks of one size until a fourth slab of the class
 * is current. It then frees all but 4 blocks of the first slab (sparse)
 * and most (a small size: 48 blocks) or half (a mid size) of the second
 * (dense), in that order, so that the sparse one heads the class's partial
 * list. It takes blocks again until one comes from either slab.
 *   fullest  (HAKMEM_PARK_PAGES=1) 240-byte blocks: the dense slab must
 *            serve it: blocks go back where most are live, so that the
 *            sparse slab drains
 *   oldest   (the default) 240-byte blocks: the sparse one, at the head of
 *            the list
 *   sorted   (HAKMEM_PARK_PAGES=1, HAKMEM_PURGE_DELAY_MS=1) 20 slabs: the
 *            first 18 made sparse, the 19th dense, so that the dense one
 *            lies past the first 16 a swap looks at. The purge clock then
 *            runs (a sleep, and blocks of another class taken through 32
 *            slow calls): it puts each partial list in order of live
 *            blocks, and the dense slab must serve
 *   mid      as sorted, with 1,100-byte blocks (256 KiB slabs) and the mid
 *            cache on: the clock's pass finds the class sparse (heap.h,
 *            hk_midc_note_sparse), which sends the owner's frees to their
 *            slabs and the class to its fullest slab; else a mid class
 *            takes the oldest, or the block freed last (the cache)
 * Every block still held is checked for its fill at the end. Run with
 * HAKMEM_GUARDED_RATE=0: a block the guarded sampler took has no slab,
 * and reading one at its address faults in the sampler's guard pages. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "backend/superslab.h"

enum { MAX_BLOCKS = 8192, SPARSE_KEEP = 4, MAX_SLABS = 20 };
static size_t REQUEST = 240;
static unsigned DENSE_FREE = 48, NSLABS = 4, NSPARSE = 1;

static const char *mode;

static void *run(void *arg) {
  (void)arg;
  static unsigned char *blk[MAX_BLOCKS];
  static hk_slab_t *of[MAX_BLOCKS];
  hk_slab_t *seen[MAX_SLABS] = { 0 };
  unsigned nseen = 0, n = 0;
  /* blocks until the last slab is current: the ones before are carved to their end */
  while (n < MAX_BLOCKS) {
    unsigned char *p = malloc(REQUEST);
    CHECK_FATAL(p != NULL);
    memset(p, (int)(n & 0xff), REQUEST);
    blk[n] = p;
    of[n] = hk_slab_of(hk_ss_of(p), p);
    n++;
    if (nseen == 0 || seen[nseen - 1] != of[n - 1]) {
      if (nseen == NSLABS) break;
      seen[nseen++] = of[n - 1];
    }
  }
  CHECKF(nseen == NSLABS, "only %u slabs in %u blocks", nseen, n);
  if (nseen != NSLABS) return NULL;
  hk_slab_t *sparse = seen[0], *dense = seen[NSPARSE];
  unsigned in_sparse = 0, in_dense = 0, freed_dense = 0, kept_sparse = 0;
  for (unsigned i = 0; i < n; i++) in_sparse += of[i] == sparse, in_dense += of[i] == dense;
  CHECKF(in_sparse > 2 * SPARSE_KEEP && in_dense > 2 * DENSE_FREE, "slabs of %u and %u blocks: too few", in_sparse,
         in_dense);
  for (unsigned k = 0; k < NSPARSE; k++) {
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++) {
      if (of[i] != seen[k]) continue;
      if (kept < SPARSE_KEEP && i % 8 == 0) { kept++; continue; }
      free(blk[i]);
      blk[i] = NULL;
    }
    if (k == 0) kept_sparse = kept;
  }
  for (unsigned i = 0; i < n && freed_dense < DENSE_FREE; i++) {
    if (of[i] != dense || i % 2) continue;
    free(blk[i]);
    blk[i] = NULL;
    freed_dense++;
  }
  CHECKF(freed_dense == DENSE_FREE, "freed %u blocks of the dense slab", freed_dense);
  if (NSLABS == MAX_SLABS) {
    /* the purge clock's next tick, in slow calls of another class */
    usleep(5000);
    enum { OTHER = 48, OTHER_N = 32 * 64 * 1024 / OTHER };
    static void *other[OTHER_N];
    for (unsigned i = 0; i < OTHER_N; i++) CHECK_FATAL((other[i] = malloc(OTHER)) != NULL);
    for (unsigned i = 0; i < OTHER_N; i++) free(other[i]);
  }
  /* blocks again, until one comes from the sparse or the dense slab */
  hk_slab_t *got = NULL;
  unsigned taken = 0;
  static unsigned char *more[MAX_BLOCKS];
  while (taken < MAX_BLOCKS) {
    unsigned char *p = malloc(REQUEST);
    CHECK_FATAL(p != NULL);
    memset(p, 0x5a, REQUEST);
    more[taken++] = p;
    hk_slab_t *s = hk_slab_of(hk_ss_of(p), p);
    for (unsigned k = 0; k < NSPARSE; k++)
      if (s == seen[k]) got = sparse;
    if (s == dense) got = dense;
    if (got) break;
  }
  const char *which = got == dense ? "the dense slab" : got == sparse ? "a sparse slab" : "neither";
  printf("%s: slabs of %u and %u blocks; %u left live in the first, %u freed in the second; after %u mallocs, "
         "%s served\n", mode, in_sparse, in_dense, kept_sparse, freed_dense,
         taken, which);
  if (strcmp(mode, "oldest") != 0)
    CHECKF(got == dense, "the class went to %s, not the one with the most live blocks", which);
  else
    CHECKF(got == sparse, "the class went to %s, not the oldest partial slab", which);
  for (unsigned i = 0; i < n; i++) {
    if (!blk[i]) continue;
    for (unsigned k = 0; k < REQUEST; k++)
      if (blk[i][k] != (unsigned char)(i & 0xff)) {
        CHECKF(0, "block %u changed at byte %u", i, k);
        break;
      }
    free(blk[i]);
  }
  for (unsigned i = 0; i < taken; i++) free(more[i]);
  return NULL;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "sorted") == 0 || strcmp(mode, "mid") == 0) {
    NSLABS = MAX_SLABS;
    NSPARSE = MAX_SLABS - 2;
    if (strcmp(mode, "mid") == 0) {
      REQUEST = 1100;
      DENSE_FREE = 64;
    }
  } else if (strcmp(mode, "fullest") != 0 && strcmp(mode, "oldest") != 0) {
    fprintf(stderr, "usage: test_reuse_fullest fullest|oldest|sorted|mid\n");
    return 2;
  }
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, run, NULL) == 0);  /* a fresh heap: the class's slabs are its own */
  pthread_join(t, NULL);
  return check_done("reuse_fullest");
}
