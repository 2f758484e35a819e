/* Knobs: every tunable is a HAKMEM_* environment variable, read once at
 * start-up from one table (knobs.c), before the first block is served.
 * HAKMEM_PROFILE=fast|balanced|lowmem picks the defaults; an explicit knob
 * overrides its profile's value. docs/ENV_VARS.md lists them all. */
#ifndef HK_KNOBS_H
#define HK_KNOBS_H

#include "config.h"

enum { HK_PROFILE_FAST = 0, HK_PROFILE_BALANCED = 1, HK_PROFILE_LOWMEM = 2 };

typedef struct hk_knobs {
  long profile;            /* HAKMEM_PROFILE (HK_PROFILE_*)        */
  long purge_delay_ms;     /* HAKMEM_PURGE_DELAY_MS                */
  long ss_cache;           /* HAKMEM_SS_CACHE                      */
  long large_cache_mb;     /* HAKMEM_LARGE_CACHE_MB                */
  long large_cache_count;  /* HAKMEM_LARGE_CACHE_COUNT             */
  long carve_kb;           /* HAKMEM_CARVE_KB                      */
  long heap_spare;         /* HAKMEM_HEAP_SPARE                    */
  long verbose;            /* HAKMEM_VERBOSE                       */
  long abort_on_invalid;   /* HAKMEM_ABORT_ON_INVALID              */
  long free_fill;          /* HAKMEM_FREE_FILL (secure build)      */
  long close_freed_kb;     /* HAKMEM_CLOSE_FREED_KB (secure build) */
  long check_every;        /* HAKMEM_CHECK_EVERY (debug build)     */
  long stats;              /* HAKMEM_STATS: 0 off, 1 text, 2 json  */
  long stats_interval_ms;  /* HAKMEM_STATS_INTERVAL                */
  char stats_file[512];    /* HAKMEM_STATS_FILE                    */
  /* learner */
  long learn;              /* HAKMEM_LEARN                         */
  long learn_log;          /* HAKMEM_LEARN_LOG                     */
  long learn_epoch;        /* HAKMEM_LEARN_EPOCH (slow-path calls) */
  long target_hit_large;   /* HAKMEM_TARGET_HIT_LARGE (per mille)  */
  long cap_step_large;     /* HAKMEM_CAP_STEP_LARGE (entries)      */
  long cap_max_large;      /* HAKMEM_CAP_MAX_LARGE (entries)       */
  long cap_max_large_mb;   /* HAKMEM_CAP_MAX_LARGE_MB              */
  long target_hit_purge;   /* HAKMEM_TARGET_HIT_PURGE (per mille)  */
  long cap_max_purge_ms;   /* HAKMEM_CAP_MAX_PURGE_MS              */
  long cap_min_purge_ms;   /* HAKMEM_CAP_MIN_PURGE_MS              */
  long small_idle_epochs;  /* HAKMEM_SMALL_IDLE_EPOCHS             */
  long cap_max_small_idle; /* HAKMEM_CAP_MAX_SMALL_IDLE (epochs)   */
  /* heap profiling (prof.c) */
  long prof;               /* HAKMEM_PROF                          */
  long prof_sample;        /* HAKMEM_PROF_SAMPLE (bytes)           */
  long prof_interval;      /* HAKMEM_PROF_INTERVAL (bytes; 0 off)  */
  long prof_leaks;         /* HAKMEM_PROF_LEAKS                    */
  long prof_seed;          /* HAKMEM_PROF_SEED (0: random)         */
  char prof_file[512];     /* HAKMEM_PROF_FILE                     */
  long background_purge;   /* HAKMEM_BACKGROUND_PURGE              */
} hk_knobs_t;

extern hk_knobs_t hk_knobs;

/* The knobs the control API may change at run time (hak_ctl_set: ctl.c)
 * are written and read with relaxed atomics (plain loads). A cap the API
 * set carries this bit: the learner no longer moves it (docs/ENV_VARS.md,
 * "Changing knobs at run time"). */
#define HK_CAP_PIN (1L << 62)

/* Reads the environment (no malloc), once: later calls return at once. */
void hk_knobs_init(void);
const char *hk_profile_name(void);
/* A row of the table by name ("HAKMEM_X" or "X"): false if none. */
bool hk_knob_lookup(const char *name, long **value, long *min, long *max);

/* The configuration in force, row by row: HAKMEM_PROFILE, HAKMEM_STATS,
 * HAKMEM_STATS_FILE, then the table. text is set for the rows that are not
 * numbers (then value/def/min/max are 0). src: 0 default, 1 set by the
 * environment, 2 the environment's value was invalid (default used). */
typedef struct {
  const char *name;
  long value, def, min, max;
  const char *text, *def_text;
  int src;
} hk_knob_info_t;
size_t hk_knobs_count(void);
bool hk_knob_get(size_t i, hk_knob_info_t *out);   /* false past the end */
bool hk_knob_is_default(const hk_knob_info_t *k);  /* value == its profile's */
/* The nearest knob name to name[0..n) (edit distance), or NULL if none is near. */
const char *hk_knobs_closest(const char *name, size_t n);
/* On fd: all: every knob, one a line ("hakmem: config: NAME VALUE (...)");
 * else one line, the profile and each knob that differs from its default. */
void hk_knobs_print(int fd, bool all);

#endif
