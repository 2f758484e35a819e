/* test_carve_pages — a slab's carve writes no page past the batch it
 * needs (src/mem/slab.c, slab_carve).
 *
 * A carve writes a link into each block it lists. A batch that started
 * mid-page and was cut at its byte count ended a few blocks into the next
 * page: a class that took one block more than its first batch held wrote
 * three pages of its slab where two hold what it carved. The batch now
 * ends on the last page end that a block still fits before. A fresh
 * thread takes blocks of a class whose size does not divide the page (so
 * its second batch starts mid-page) until its slab carves a second batch,
 * then reads from /proc/self/pagemap which pages of the slab it wrote:
 * two, the first batch's and the next. Run with HAKMEM_CARVE_KB=64 (the
 * batches double from 4 KiB), HAKMEM_THP=never and
 * HAKMEM_POPULATE_SLABS=0 (a populate writes a filling class's whole slab
 * at once); exit 77 under THP `always`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"
#include "backend/superslab.h"

enum { REQUEST = 560, MAX_KEPT = 256 };

/* the page at p, written by this process: present and mapped by it alone */
static int written(int fd, const uint8_t *p) {
  uint64_t e = 0;
  CHECK_FATAL(pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) == 8);
  return (e >> 63 & 1) && (e >> 56 & 1);
}

static void *run(void *arg) {
  (void)arg;
  static void *kept[MAX_KEPT];
  uint8_t *first = malloc(REQUEST);
  CHECK_FATAL(first != NULL);
  kept[0] = first;
  hk_superslab_t *ss = hk_ss_of(first);
  hk_slab_t *s = &ss->slabs[((uintptr_t)first & HK_SS_MASK) >> ss->slab_shift];
  size_t bs = s->block_size;
  uint8_t *start = HK_UNHIDE(s->start);
  CHECKF(4096 % bs != 0, "block size %zu divides the page: the test needs one that does not", bs);
  CHECKF(first == start, "the first block is not the slab's first (a fresh slab was expected)");
  unsigned batch1 = s->carved, n = 1;
  /* one block more than the first batch: the second batch starts mid-page */
  while (n < MAX_KEPT && s->carved == batch1) {
    kept[n] = malloc(REQUEST);
    CHECK_FATAL(kept[n] != NULL);
    n++;
  }
  unsigned carved = s->carved;
  CHECKF(carved > batch1, "no second batch in %u blocks", n);
  /* the slab's pages written: the first batch's page and the next, which
   * holds the block more; the second batch (8 KiB: the first's 4 doubled)
   * starts on the first page and reaches past the second only if it was
   * cut at its byte count */
  int fd = open("/proc/self/pagemap", O_RDONLY);
  CHECK_FATAL(fd >= 0);
  unsigned pages = 0, last = 0;
  for (unsigned k = 0; k < 16; k++)
    if (written(fd, start + (size_t)k * 4096)) pages++, last = k;
  close(fd);
  CHECKF(pages == 2 && last == 1, "block %zu B: first batch %u blocks, %u carved after one more: %u pages written (the last page %u), 2 expected",
         bs, batch1, carved, pages, last);
  printf("block %zu B: first batch %u blocks, %u carved after one more, %u pages written\n", bs, batch1, carved, pages);
  for (unsigned i = 0; i < n; i++) free(kept[i]);
  return NULL;
}

int main(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    char mode[128] = "";
    if (fgets(mode, sizeof mode, f) && strstr(mode, "[always]")) {
      printf("THP always: every slab may be a huge page; nothing to count\n");
      fclose(f);
      return 77;
    }
    fclose(f);
  }
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, run, NULL) == 0);  /* a fresh heap: the class's slab is fresh */
  pthread_join(t, NULL);
  return check_done("carve_pages");
}
