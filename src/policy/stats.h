/* Statistics: a snapshot of what hakmem holds, merged from the OS counters,
 * the superslab layer and the large tier when read (nothing on the fast
 * path). Feeds mallinfo/malloc_stats/malloc_info, the timeline and the exit
 * report, which stats_print.c prints. */
#ifndef HK_STATS_H
#define HK_STATS_H

#include <stdio.h>
#include "base/config.h"

struct hak_stats;

/* From slow paths: sample peaks and write the timeline when due. */
void hk_stats_tick(void);
/* Fill the public struct (hakmem.h). */
void hk_stats_collect(struct hak_stats *out);
/* At exit: the HAKMEM_STATS report and the final timeline line. */
void hk_stats_at_exit(int report_fd);
void hk_stats_init(void);
/* The dump signal's report (policy/bg.c): the text report (JSON under
 * HAKMEM_STATS=json) appended to HAKMEM_STATS_FILE, else on stderr. */
void hk_stats_dump(void);
/* fork(): the snapshot's lock held across it, so that a child never
 * inherits it taken by a thread it does not have (its exit report would
 * wait for ever); before the heap registry's and the superslabs' locks,
 * which a snapshot takes under it. */
void hk_stats_fork_prepare(void);
void hk_stats_fork_parent(void);
void hk_stats_fork_child(void);


void hk_stats_print_glibc_style(FILE *out);   /* malloc_stats() */
int  hk_stats_print_xml(FILE *out);           /* malloc_info()  */

#endif
