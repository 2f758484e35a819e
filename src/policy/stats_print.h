/* Statistics' outputs: how a snapshot (stats.c) is printed (the text
 * report, the JSON record, glibc's malloc_stats and malloc_info layouts)
 * and where it goes (HAKMEM_STATS_FILE, the timeline, stderr). Below the
 * snapshot: these read a snapshot they are handed and never collect one.
 * Every function here is called under stats.c's lock: one output buffer,
 * in static storage, serves them all. */
#ifndef HK_STATS_PRINT_H
#define HK_STATS_PRINT_H

#include <stdio.h>
#include "../include/hakmem.h"
#include "base/config.h"

/* A snapshot as the outputs print it: the public figures, and the memory
 * committed with its peak, which the public struct has no field for. */
typedef struct {
  struct hak_stats s;
  size_t committed;       /* of s.mapped_bytes, the bytes that hold something */
  size_t peak_committed;
} hk_stats_snap_t;

/* At start: opens the timeline's file (HAKMEM_STATS_INTERVAL with
 * HAKMEM_STATS_FILE), or says once why it cannot. */
void hk_stats_timeline_open(void);
/* One JSON record on the timeline, t_ms after the start; nothing without
 * one. A fork child whose file name has %p moves to a file of its own. */
void hk_stats_write_timeline(const hk_stats_snap_t *snap, uint64_t t_ms);
/* At exit: the last timeline record, then the HAKMEM_STATS report (text or
 * JSON) into the timeline's file, HAKMEM_STATS_FILE, or report_fd. */
void hk_stats_write_report(const hk_stats_snap_t *snap, uint64_t t_ms, int report_fd);

/* The dump signal's report: text (JSON under HAKMEM_STATS=json) appended
 * to HAKMEM_STATS_FILE, else on stderr. */
void hk_stats_write_dump(const hk_stats_snap_t *snap, uint64_t t_ms);
void hk_stats_write_text(FILE *fp, const hk_stats_snap_t *snap);   /* hak_stats_print */
void hk_stats_write_glibc(FILE *fp, const hk_stats_snap_t *snap);  /* malloc_stats    */
void hk_stats_write_xml(FILE *fp, const hk_stats_snap_t *snap);    /* malloc_info     */

#endif
