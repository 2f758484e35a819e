/* Statistics: a snapshot of what hakmem holds, merged from the OS counters,
 * the superslab layer and the large tier when read (nothing on the fast
 * path). Feeds mallinfo/malloc_stats/malloc_info and the exit report. */
#ifndef HK_STATS_H
#define HK_STATS_H

#include <stdio.h>
#include "config.h"

struct hak_stats;

/* Counters a heap keeps in its slow paths when HAKMEM_STATS is on. */
typedef struct hk_heap_stats {
  uint64_t handed[HK_NCLASS];   /* blocks given to the fast path  */
  uint64_t refills[HK_NCLASS];  /* fast-path misses                */
  uint64_t remote[HK_NCLASS];   /* remote frees collected          */
} hk_heap_stats_t;

extern bool hk_stats_on;        /* HAKMEM_STATS or a stats file set */

/* Counters of a heap that goes away join the process totals. */
void hk_stats_fold(hk_heap_stats_t *st);
/* From slow paths: sample peaks and write the timeline when due. */
void hk_stats_tick(void);
/* Fill the public struct (hakmem.h). */
void hk_stats_collect(struct hak_stats *out);
/* At exit: the HAKMEM_STATS report and the final timeline line. */
void hk_stats_at_exit(int report_fd);
void hk_stats_init(void);


void hk_stats_print_glibc_style(FILE *out);   /* malloc_stats() */
int  hk_stats_print_xml(FILE *out);           /* malloc_info()  */

#endif
