/* double_free_mid_cached: eight 8000-byte blocks freed, then the fourth
 * freed again. The first frees leave the blocks in the mid cache (a stack
 * per class in the thread heap, heap.h), on no slab list: the second free
 * finds the free mark, and the owner's confirmation must look in the
 * cache, or the block would be cached twice and handed out twice. Caught:
 * default (the mark and the cache walk), secure (the trailer's state: the
 * block waits in the cache's queue as "freed"). */
#include "common.h"

int main(void) {
  char *p[40];
  for (int i = 0; i < 40; i++) {
    p[i] = malloc(launder_size(8000));
    memset(p[i], i, 8000);
  }
  for (int i = 0; i < 8; i++) free(p[i]);
  free(launder(p[3]));
  return not_caught("double free of a block in the mid cache");
}
