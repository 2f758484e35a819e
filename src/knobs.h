/* Knobs: every tunable is a HAKMEM_* environment variable, read once at
 * start-up from one table (knobs.c), before the first block is served. */
#ifndef HK_KNOBS_H
#define HK_KNOBS_H

#include "config.h"

typedef struct hk_knobs {
  long purge_delay_ms;     /* HAKMEM_PURGE_DELAY_MS   */
  long ss_cache;           /* HAKMEM_SS_CACHE         */
  long large_cache_mb;     /* HAKMEM_LARGE_CACHE_MB   */
  long large_cache_count;  /* HAKMEM_LARGE_CACHE_COUNT */
  long verbose;            /* HAKMEM_VERBOSE          */
  long abort_on_invalid;   /* HAKMEM_ABORT_ON_INVALID */
  long free_fill;          /* HAKMEM_FREE_FILL (secure build) */
  long stats;              /* HAKMEM_STATS: 0 off, 1 text, 2 json */
  long stats_interval_ms;  /* HAKMEM_STATS_INTERVAL   */
  char stats_file[512];    /* HAKMEM_STATS_FILE       */
} hk_knobs_t;

extern hk_knobs_t hk_knobs;

/* Reads the environment (no malloc). Called once by hk_init_global. */
void hk_knobs_init(void);

#endif
