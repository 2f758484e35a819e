/* The stats count every malloc once in both builds: 100 rounds of 100
 * mallocs then 100 frees, for a small, a mid and a large-ish mid size, must
 * show 10,000 allocs and 10,000 frees in the size's class. The secure build
 * counted a refill's batch as every block not out, including the blocks
 * waiting for delayed reuse: 19,900 allocs for the 16-byte loop. Needs
 * HAKMEM_STATS=1. */
#include "common.h"
#include "../../include/hakmem.h"

int main(void) {
  require_hakmem();
  int (*get)(struct hak_stats *) = (int (*)(struct hak_stats *))dlsym(RTLD_DEFAULT, "hak_stats_get");
  static struct hak_stats before, after;
  if (!get || get(&before) != 0 || !before.counting) {
    fprintf(stderr, "stats_count: hak_stats_get missing or HAKMEM_STATS off\n");
    return 2;
  }
  size_t sizes[] = { 16, 5000, 20000 };
  for (int k = 0; k < 3; k++) {
    void *p[100];
    get(&before);
    for (int r = 0; r < 100; r++) {
      for (int i = 0; i < 100; i++) p[i] = malloc(launder_size(sizes[k]));
      for (int i = 0; i < 100; i++) free(p[i]);
    }
    get(&after);
    size_t allocs = 0, frees = 0;
    for (int c = 0; c < HAK_STATS_CLASSES; c++) {
      allocs += after.classes[c].allocs - before.classes[c].allocs;
      frees += after.classes[c].frees - before.classes[c].frees;
    }
    if (allocs != 10000 || frees != 10000) {
      fprintf(stderr, "stats_count: %zu bytes: %zu allocs, %zu frees counted for 10000 each\n", sizes[k],
              allocs, frees);
      return 1;
    }
  }
  return 0;
}
