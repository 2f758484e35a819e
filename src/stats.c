#include "stats.h"

#include <stdatomic.h>

#include "heap.h"
#include "large.h"
#include "os.h"
#include "superslab.h"

void hk_stats_snapshot(hk_stats_snapshot_t *o) {
  o->mapped_bytes = atomic_load(&hk_os_stats.mapped_now);
  o->mapped_peak_bytes = atomic_load(&hk_os_stats.mapped_peak);
  o->superslabs_mapped = hk_ss_count_mapped();
  o->superslabs_cached = hk_ss_count_cached();
  o->superslabs_abandoned = hk_ss_count_abandoned();
  o->large_live = hk_large_count_live();
  o->large_live_bytes = hk_large_bytes_live();
  o->large_cached_bytes = hk_large_bytes_cached();
  o->heaps_live = hk_heap_count_live();
  o->mmap_calls = atomic_load(&hk_os_stats.mmap_calls);
  o->munmap_calls = atomic_load(&hk_os_stats.munmap_calls);
  o->madvise_calls = atomic_load(&hk_os_stats.madvise_calls);
  o->mremap_calls = atomic_load(&hk_os_stats.mremap_calls);
  o->rss_bytes = hk_os_rss_bytes();
  o->peak_rss_bytes = hk_os_peak_rss_bytes();
}

/* Written with fprintf to a caller's FILE: the caller allocates nothing
 * from us that we would not serve. */
void hk_stats_print_glibc_style(FILE *out) {
  hk_stats_snapshot_t s;
  hk_stats_snapshot(&s);
  fprintf(out, "hakmem %s\n", "malloc_stats");
  fprintf(out, "system bytes     = %10zu\n", s.mapped_bytes);
  fprintf(out, "peak system bytes= %10zu\n", s.mapped_peak_bytes);
  fprintf(out, "superslabs       = %10zu (cached %zu, abandoned %zu)\n", s.superslabs_mapped,
          s.superslabs_cached, s.superslabs_abandoned);
  fprintf(out, "large blocks     = %10zu (%zu bytes mapped, %zu cached)\n", s.large_live,
          s.large_live_bytes, s.large_cached_bytes);
  fprintf(out, "thread heaps     = %10zu\n", s.heaps_live);
  fprintf(out, "os calls         = %lu mmap, %lu munmap, %lu madvise, %lu mremap\n",
          s.mmap_calls, s.munmap_calls, s.madvise_calls, s.mremap_calls);
  fprintf(out, "rss              = %10zu (peak %zu)\n", s.rss_bytes, s.peak_rss_bytes);
}

int hk_stats_print_xml(FILE *out) {
  hk_stats_snapshot_t s;
  hk_stats_snapshot(&s);
  fprintf(out,
          "<malloc version=\"hakmem-1\">\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"max\" size=\"%zu\"/>\n"
          "<superslabs mapped=\"%zu\" cached=\"%zu\" abandoned=\"%zu\"/>\n"
          "<large count=\"%zu\" size=\"%zu\" cached=\"%zu\"/>\n"
          "<oscalls mmap=\"%lu\" munmap=\"%lu\" madvise=\"%lu\" mremap=\"%lu\"/>\n"
          "</malloc>\n",
          s.mapped_bytes, s.mapped_peak_bytes, s.superslabs_mapped, s.superslabs_cached,
          s.superslabs_abandoned, s.large_live, s.large_live_bytes, s.large_cached_bytes,
          s.mmap_calls, s.munmap_calls, s.madvise_calls, s.mremap_calls);
  return 0;
}
