/* test_adopt — adopting an abandoned superslab whose blocks were all freed.
 *
 * Thread A fills slabs of one class and exits, leaving its superslabs
 * abandoned with live blocks. The main thread frees every block (remote
 * frees: nobody owns those slabs), then allocates the same class: its heap
 * adopts the abandoned superslabs, finds their slabs empty and releases
 * them. Run with HAKMEM_SS_CACHE=0 and HAKMEM_HEAP_SPARE=0 (run_tests.sh
 * does) a released superslab is unmapped at once, so adoption must not read
 * it afterwards (it did: SIGSEGV under HAKMEM_PROFILE=lowmem in larson).
 * Repeated with several sizes and rounds; contents are checked. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define N 3000

struct job { size_t size; unsigned char **blocks; };

static void *fill(void *arg) {
  struct job *j = arg;
  for (size_t i = 0; i < N; i++) {
    j->blocks[i] = malloc(j->size);
    CHECK_FATAL(j->blocks[i] != NULL);
    memset(j->blocks[i], (int)(i & 0xff), j->size);
  }
  return NULL;
}

int main(void) {
  static const size_t sizes[] = {24, 200, 1000, 3000, 12000, 30000};
  unsigned char **blocks = malloc(N * sizeof *blocks);
  CHECK_FATAL(blocks != NULL);
  for (int round = 0; round < 4; round++) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      struct job j = {sizes[k], blocks};
      pthread_t t;
      CHECK_FATAL(pthread_create(&t, NULL, fill, &j) == 0);
      CHECK_FATAL(pthread_join(t, NULL) == 0);
      for (size_t i = 0; i < N; i++) {
        unsigned char want = (unsigned char)(i & 0xff);
        CHECKF(blocks[i][0] == want && blocks[i][j.size - 1] == want,
               "size %zu block %zu: content changed", j.size, i);
        free(blocks[i]);
      }
      /* the same class again: adopts the abandoned, now empty superslabs */
      for (size_t i = 0; i < N; i++) {
        blocks[i] = malloc(j.size);
        CHECK_FATAL(blocks[i] != NULL);
        memset(blocks[i], 0x5a, j.size);
      }
      for (size_t i = 0; i < N; i++) {
        CHECK(blocks[i][j.size / 2] == 0x5a);
        free(blocks[i]);
      }
    }
  }
  free(blocks);
  return check_done("adopt");
}
