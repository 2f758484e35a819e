/* Statistics: a snapshot of what hakmem holds, merged from the OS counters,
 * the superslab layer and the large tier when read (nothing on the fast
 * path). Feeds mallinfo/malloc_stats/malloc_info and the exit report. */
#ifndef HK_STATS_H
#define HK_STATS_H

#include <stdio.h>
#include "config.h"

typedef struct hk_stats_snapshot {
  size_t mapped_bytes, mapped_peak_bytes;
  size_t superslabs_mapped, superslabs_cached, superslabs_abandoned;
  size_t large_live, large_live_bytes, large_cached_bytes;
  size_t heaps_live;
  unsigned long mmap_calls, munmap_calls, madvise_calls, mremap_calls;
  size_t rss_bytes, peak_rss_bytes;
} hk_stats_snapshot_t;

void hk_stats_snapshot(hk_stats_snapshot_t *out);
void hk_stats_print_glibc_style(FILE *out);   /* malloc_stats() */
int  hk_stats_print_xml(FILE *out);           /* malloc_info()  */

#endif
