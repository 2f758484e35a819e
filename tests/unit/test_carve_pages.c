/* test_carve_pages — a slab's one-page carve batches write no page past
 * the one they fill (src/mem/slab.c, slab_carve).
 *
 * A carve writes a link into each block it lists. Under
 * HAKMEM_CARVE_KB=4 (lowmem) every batch asks for a page of blocks; cut at
 * its byte count, one that started mid-page (a class whose size does not
 * divide 4 KiB: 704-byte blocks, five a batch) ran a few blocks onto the
 * next page and wrote their links there. It now ends on the page's end. A
 * fresh thread takes 704-byte blocks until its slab carves a third batch
 * (the first ends at 3,520 bytes, the second at 7,040, past the first
 * page's end, as its blocks need), then reads from /proc/self/pagemap
 * which pages of the slab it wrote: two (three before: the third batch ran
 * to 10,560). Run with HAKMEM_CARVE_KB=4, HAKMEM_THP=never and
 * HAKMEM_POPULATE_SLABS=0 (a populate writes a filling class's whole slab
 * at once); exit 77 under THP `always`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "backend/superslab.h"

enum { REQUEST = 700, MAX_KEPT = 256 };

static void *run(void *arg) {
  (void)arg;
  static void *kept[MAX_KEPT];
  uint8_t *first = malloc(REQUEST);
  CHECK_FATAL(first != NULL);
  kept[0] = first;
  hk_slab_t *s = hk_slab_of(hk_ss_of(first), first);
  size_t bs = s->block_size;
  uint8_t *start = HK_UNHIDE(s->start);
  CHECKF(4096 % bs != 0, "block size %zu divides the page: the test needs one that does not", bs);
  CHECKF(first == start, "the first block is not the slab's first (a fresh slab was expected)");
  unsigned batch1 = s->carved, batch2 = 0, n = 1;
  /* blocks until a third batch is carved */
  while (n < MAX_KEPT) {
    unsigned before = s->carved;
    kept[n] = malloc(REQUEST);
    CHECK_FATAL(kept[n] != NULL);
    n++;
    if (s->carved == before) continue;
    if (batch2) break;
    batch2 = s->carved;
  }
  unsigned carved = s->carved;
  CHECKF(batch2 > batch1 && carved > batch2, "no third batch in %u blocks", n);
  /* the slab's pages written: the two the first batches reached; the
   * third fills the second page (one block) and writes no third */
  unsigned pages = 0, last = 0;
  for (unsigned k = 0; k < 16; k++)
    if (check_page_written(start + (size_t)k * 4096)) pages++, last = k;
  CHECKF(pages == 2 && last == 1,
         "block %zu B: batches ended at blocks %u, %u and %u: %u pages written (the last page %u), 2 expected", bs,
         batch1, batch2, carved, pages, last);
  printf("block %zu B: batches ended at blocks %u, %u and %u; %u pages written\n", bs, batch1, batch2, carved, pages);
  for (unsigned i = 0; i < n; i++) free(kept[i]);
  return NULL;
}

int main(void) {
  if (check_thp_always()) {
    printf("THP always: every slab may be a huge page; nothing to count\n");
    return 77;
  }
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, run, NULL) == 0);  /* a fresh heap: the class's slab is fresh */
  pthread_join(t, NULL);
  return check_done("carve_pages");
}
