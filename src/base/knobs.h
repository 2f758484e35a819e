/* Knobs: every tunable is a HAKMEM_* environment variable, read once at
 * start-up from one table (knobs.c), before the first block is served.
 * A row of the table says all of a knob: its kind (how its text is read),
 * whether the control API may change it at run time and what ctl.c does
 * then, its default under each profile and its range. Adding a knob is
 * adding a row (and a field below, and its lines in docs/ENV_VARS.md and
 * docs/hakmem.1). HAKMEM_PROFILE=fast|balanced|lowmem picks the defaults;
 * an explicit knob overrides its profile's value. */
#ifndef HK_KNOBS_H
#define HK_KNOBS_H

#include "base/config.h"

enum { HK_PROFILE_FAST = 0, HK_PROFILE_BALANCED = 1, HK_PROFILE_LOWMEM = 2 };
/* HAKMEM_THP's words (os.c reads it with the system's mode). */
enum { HK_THP_KNOB_AUTO = 0, HK_THP_KNOB_NEVER = 1, HK_THP_KNOB_ALWAYS = 2, HK_THP_KNOB_SPANS = 3 };

/* HAKMEM_BACKGROUND_PURGE's values */
enum { HK_BG_OFF = 0, HK_BG_ON = 1, HK_BG_AUTO = 2 };

typedef struct hk_knobs {
  long profile;            /* HAKMEM_PROFILE (HK_PROFILE_*)        */
  long purge_delay_ms;     /* HAKMEM_PURGE_DELAY_MS                */
  long stopped_purge_ms;   /* HAKMEM_STOPPED_PURGE_MS (0: the purge clock) */
  long ss_cache;           /* HAKMEM_SS_CACHE                      */
  long large_cache_mb;     /* HAKMEM_LARGE_CACHE_MB                */
  long large_cache_count;  /* HAKMEM_LARGE_CACHE_COUNT             */
  long carve_kb;           /* HAKMEM_CARVE_KB                      */
  long populate_slabs;     /* HAKMEM_POPULATE_SLABS                */
  long park_pages;         /* HAKMEM_PARK_PAGES                    */
  long park_idle;          /* HAKMEM_PARK_IDLE                     */
  long heap_spare;         /* HAKMEM_HEAP_SPARE                    */
  long mid_cache_kb;       /* HAKMEM_MID_CACHE_KB                  */
  long verbose;            /* HAKMEM_VERBOSE                       */
  long abort_on_invalid;   /* HAKMEM_ABORT_ON_INVALID              */
  long free_fill;          /* HAKMEM_FREE_FILL (secure build)      */
  long close_freed_kb;     /* HAKMEM_CLOSE_FREED_KB (secure build) */
  long guard_markers;      /* HAKMEM_GUARD_MARKERS (secure build) */
  long check_every;        /* HAKMEM_CHECK_EVERY (debug build)     */
  long stats;              /* HAKMEM_STATS: 0 off, 1 text, 2 json  */
  long stats_interval_ms;  /* HAKMEM_STATS_INTERVAL                */
  char stats_file[512];    /* HAKMEM_STATS_FILE                    */
  long dump_signal;       /* HAKMEM_DUMP_SIGNAL (0: none)         */
  /* learner */
  long learn;              /* HAKMEM_LEARN                         */
  long learn_log;          /* HAKMEM_LEARN_LOG                     */
  long learn_epoch;        /* HAKMEM_LEARN_EPOCH (slow-path calls) */
  long learn_purge;        /* HAKMEM_LEARN_PURGE: purge windows from reuse */
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
  long guarded_rate;       /* HAKMEM_GUARDED_RATE (0: off)         */
  long guarded_slots;      /* HAKMEM_GUARDED_SLOTS (0: off)        */
  long guarded_per_sec;    /* HAKMEM_GUARDED_PER_SEC               */
  long guarded_stacks;     /* HAKMEM_GUARDED_STACKS (0: none)      */
  long background_purge;   /* HAKMEM_BACKGROUND_PURGE: HK_BG_*      */
  long thp;                /* HAKMEM_THP (HK_THP_KNOB_*)           */
  long span_shards;        /* HAKMEM_SPAN_SHARDS (0: one per CPU)  */
  long memory_limit;       /* HAKMEM_MEMORY_LIMIT (bytes; 0: the cgroup's) */
  long memory_limit_action; /* HAKMEM_MEMORY_LIMIT_ACTION: 0 keep, 1 fail */
} hk_knobs_t;

extern hk_knobs_t hk_knobs;

/* The knobs the control API may change at run time (hak_ctl_set: ctl.c)
 * are written and read with relaxed atomics (plain loads). The caps a
 * layer keeps beside them, which the API pins, are base/cap.h's. */

/* How a knob's text is read (docs/ENV_VARS.md, "How to read the tables"). */
typedef enum {
  HK_KNOB_NUMBER,   /* a decimal integer                                  */
  HK_KNOB_SIZE,     /* bytes: a decimal integer, maybe with K, M, G or T  */
  HK_KNOB_KEYWORD,  /* one word of the row's list; its value is a number  */
  HK_KNOB_PATH,     /* a file name; empty is unset                        */
} hk_knob_kind_t;

/* What hak_ctl_get/hak_ctl_set do for a row beyond a relaxed load or store
 * of its value: ctl.c switches on it (a row cannot name a function of the
 * layers above the knobs). */
typedef enum {
  HK_KNOB_ACT_NONE,
  HK_KNOB_ACT_PURGE_DELAY,  /* the delay in force is the superslab layer's; a set pins it there and
                               in the large tier, and wakes the purge thread */
  HK_KNOB_ACT_LARGE_MB,     /* the cap in force is the large tier's; a set pins it */
  HK_KNOB_ACT_LARGE_COUNT,  /* the same, for the entry cap */
  HK_KNOB_ACT_STATS,        /* a set turns counting on or off */
  HK_KNOB_ACT_ABORT,        /* a set tells the reports */
  HK_KNOB_ACT_LEARN,        /* a set to 1 installs the learner's hooks */
  HK_KNOB_ACT_BG,           /* the value in force: whether the purge thread runs */
} hk_knob_act_t;

/* Reads the environment (no malloc), once: later calls return at once. */
void hk_knobs_init(void);
const char *hk_profile_name(void);

/* A row of the table and the value in force. text is set for the rows that
 * are not numbers: a keyword's word (value and def are its numbers, min and
 * max the lowest and highest), a string's or a path's text (then value,
 * def, min and max are 0). src: 0 default, 1 set by the environment, 2 the
 * environment's value was invalid (default used). */
typedef struct {
  const char *name;
  long value, def, min, max;
  const char *text, *def_text;
  int src;
  hk_knob_kind_t kind;
  bool runtime;       /* hak_ctl_set may change it                   */
  hk_knob_act_t act;
  long *field;        /* the value's word; NULL for a string or path */
} hk_knob_info_t;
/* Row i (0: HAKMEM_PROFILE): false past the end. */
bool hk_knob_get(size_t i, hk_knob_info_t *out);
/* The row of name ("HAKMEM_X" or "X"): false if there is none. */
bool hk_knob_find(const char *name, hk_knob_info_t *out);
bool hk_knob_is_default(const hk_knob_info_t *k);  /* value == its profile's */
/* s read as row i's kind (a number, a size or a keyword) and in its range,
 * into *out: false when it is not one (what the start-up warns about). */
bool hk_knob_parse(size_t i, const char *s, long *out);
/* The nearest knob name to name[0..n) (edit distance), or NULL if none is near. */
const char *hk_knobs_closest(const char *name, size_t n);
/* On fd: all: every knob, one a line ("hakmem: config: NAME VALUE (...)");
 * else one line, the profile and each knob that differs from its default. */
void hk_knobs_print(int fd, bool all);

/* The learner counts its events: HAKMEM_LEARN (every cap) or
 * HAKMEM_LEARN_PURGE (the tiers' purge windows, learner.c). */
static inline bool hk_learn_counting(void) {
  return (HK_LOAD_RELAXED(hk_knobs.learn) | HK_LOAD_RELAXED(hk_knobs.learn_purge)) != 0;
}

#endif
