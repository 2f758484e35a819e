/* malloc_trim gives back what freed large blocks hold, the secure build's
 * quarantines included: 20 span blocks (256 KiB) and 2 huge ones (200 MB)
 * are written, freed, and trimmed; then hakmem's stats must show no large
 * bytes cached and no more mapped than before the first of them (the span
 * arena and the huge mappings unmapped: a quarantine that trim forgot keeps
 * them). A block of each size is then allocated and written again. */
#include <malloc.h>

#include "../../include/hakmem.h"
#include "common.h"

int main(void) {
  require_hakmem();
  int (*get)(struct hak_stats *) = (int (*)(struct hak_stats *))dlsym(RTLD_DEFAULT, "hak_stats_get");
  if (!get) return not_caught("hak_stats_get not found");
  struct hak_stats before, freed, after;
  malloc_trim(0);
  get(&before);
  char *p[22];
  for (int i = 0; i < 22; i++) {
    size_t n = i < 20 ? 256u << 10 : 200000000u;
    p[i] = malloc(n);
    if (!p[i]) return not_caught("malloc failed");
    memset(p[i], 'a', 4096);
    p[i][n - 1] = 'z';
  }
  for (int i = 0; i < 22; i++) free(p[i]);
  get(&freed);
  malloc_trim(0);
  get(&after);
  fprintf(stderr, "mapped before %zu, after the frees %zu, after trim %zu; large cached after the frees %zu, after trim %zu\n",
          before.mapped_bytes, freed.mapped_bytes, after.mapped_bytes, freed.large_cached_bytes, after.large_cached_bytes);
  if (after.large_cached_bytes != 0) return not_caught("large bytes still cached after malloc_trim");
  if (after.mapped_bytes > before.mapped_bytes) return not_caught("more mapped after malloc_trim than before the blocks");
  char *a = malloc(256u << 10), *b = malloc(200000000u);
  if (!a || !b) return not_caught("malloc after trim failed");
  memset(a, 'b', 256u << 10);
  memset(b, 'b', 4096);
  free(b);
  free(a);
  return 0;
}
