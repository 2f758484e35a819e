/* The knob table and its reading: the environment at start-up, checked
 * names, the configuration printed (knobs.h). */
#include "base/knobs.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/report.h"
#include "base/writer.h"

hk_knobs_t hk_knobs;

/* A keyword's words: for each value, its name first (the one printed),
 * then any other spelling accepted for it; NULL ends the list. */
typedef struct {
  const char *word;
  long value;
} knob_word_t;

typedef struct {
  const char *name;
  unsigned char kind;          /* hk_knob_kind_t                                    */
  unsigned char runtime;       /* 1: hak_ctl_set may change it                      */
  unsigned char act;           /* hk_knob_act_t: what ctl.c does for it beyond a store */
  long *value;                 /* number, size, keyword                             */
  char *text;                  /* string, path: text_size bytes                     */
  size_t text_size;
  const knob_word_t *words;    /* keyword                                           */
  long min, max;               /* number, size                                      */
  long def[3];                 /* fast, balanced, lowmem                            */
} knob_row_t;

/* When a knob may change: START(act) read once at start-up (act: what
 * hak_ctl_get reads for it), RUN(act) also settable by hak_ctl_set. */
#define START(act) 0, HK_KNOB_ACT_##act
#define RUN(act)   1, HK_KNOB_ACT_##act
/* One macro per kind: name, field of hk_knobs, when, then the range and the
 * defaults under fast, balanced and lowmem; a keyword's defaults, then its
 * words ({ "word", value }, ...). */
#define NUMBER(n, f, when, lo, hi, d0, d1, d2) \
  { n, HK_KNOB_NUMBER, when, &hk_knobs.f, NULL, 0, NULL, lo, hi, { d0, d1, d2 } }
#define SIZE(n, f, when, lo, hi, d0, d1, d2) \
  { n, HK_KNOB_SIZE, when, &hk_knobs.f, NULL, 0, NULL, lo, hi, { d0, d1, d2 } }
#define KEYWORD(n, f, when, d0, d1, d2, ...) \
  { n, HK_KNOB_KEYWORD, when, &hk_knobs.f, NULL, 0, (const knob_word_t[]){ __VA_ARGS__, { NULL, 0 } }, \
    0, 0, { d0, d1, d2 } }
#define PATH(n, f, when) \
  { n, HK_KNOB_PATH, when, NULL, hk_knobs.f, sizeof hk_knobs.f, NULL, 0, 0, { 0, 0, 0 } }

/* The one table. docs/ENV_VARS.md and docs/hakmem.1 document each row
 * (tests/system/cli.sh docs checks them against it). HAKMEM_PROFILE comes first: it
 * is read first, and picks every other row's default. */
static const knob_row_t knob_table[] = {
  KEYWORD("HAKMEM_PROFILE",           profile,            START(NONE), 1, 1, 1,
          { "fast", HK_PROFILE_FAST }, { "balanced", HK_PROFILE_BALANCED }, { "lowmem", HK_PROFILE_LOWMEM }),
  KEYWORD("HAKMEM_STATS",             stats,              RUN(STATS), 0, 0, 0,
          { "0", 0 }, { "1", 1 }, { "json", 2 }, { "", 0 }, { "text", 1 }),  /* 1 text report, 2 JSON */
  PATH("HAKMEM_STATS_FILE",           stats_file,         START(NONE)),
  PATH("HAKMEM_PROF_FILE",            prof_file,          START(NONE)),
  NUMBER("HAKMEM_PURGE_DELAY_MS",     purge_delay_ms,     RUN(PURGE_DELAY), 0, 3600000, 5000, 1000, 10),
  NUMBER("HAKMEM_STOPPED_PURGE_MS",   stopped_purge_ms,   START(NONE), 0, 3600000, 0, 0, 2),
  NUMBER("HAKMEM_SS_CACHE",           ss_cache,           RUN(NONE), 0, 4096, 1024, 256, 4),
  NUMBER("HAKMEM_LARGE_CACHE_MB",     large_cache_mb,     RUN(LARGE_MB), 0, 65536, 256, 64, 8),
  NUMBER("HAKMEM_LARGE_CACHE_COUNT",  large_cache_count,  RUN(LARGE_COUNT), 0, 1024, 256, 128, 8),
  NUMBER("HAKMEM_CARVE_KB",           carve_kb,           START(NONE), 4, 64, 64, 16, 4),
  NUMBER("HAKMEM_POPULATE_SLABS",     populate_slabs,     START(NONE), 0, 1, 1, 1, 0),
  NUMBER("HAKMEM_PARK_PAGES",         park_pages,         START(NONE), 0, 1, 0, 0, 1),
  NUMBER("HAKMEM_PARK_IDLE",          park_idle,          START(NONE), 0, 1, 1, 1, 1),
  NUMBER("HAKMEM_HEAP_SPARE",         heap_spare,         RUN(NONE), 0, 16, 2, 1, 0),
  NUMBER("HAKMEM_MID_CACHE_KB",       mid_cache_kb,       START(NONE), 0, 1024, 256, 128, 32),
  NUMBER("HAKMEM_VERBOSE",            verbose,            START(NONE), 0, 2, 0, 0, 0),
  NUMBER("HAKMEM_ABORT_ON_INVALID",   abort_on_invalid,   RUN(ABORT), 0, 1, 1, 1, 1),
  NUMBER("HAKMEM_FREE_FILL",          free_fill,          START(NONE), 0, 2, 0, 0, 0),
  NUMBER("HAKMEM_CLOSE_FREED_KB",     close_freed_kb,     START(NONE), 0, 131072, 256, 256, 256),
  NUMBER("HAKMEM_GUARD_MARKERS",      guard_markers,      START(NONE), 0, 1, 1, 1, 1),
  NUMBER("HAKMEM_CHECK_EVERY",        check_every,        START(NONE), 0, 1000000, 256, 256, 256),
  NUMBER("HAKMEM_STATS_INTERVAL",     stats_interval_ms,  START(NONE), 0, 86400000, 0, 0, 0),
  NUMBER("HAKMEM_DUMP_SIGNAL",        dump_signal,        START(NONE), 0, 64, 0, 0, 0),
  NUMBER("HAKMEM_LEARN",              learn,              RUN(LEARN), 0, 1, 0, 0, 0),
  NUMBER("HAKMEM_LEARN_LOG",          learn_log,          RUN(NONE), 0, 1, 0, 0, 0),
  NUMBER("HAKMEM_LEARN_EPOCH",        learn_epoch,        START(NONE), 16, 1000000, 256, 256, 256),
  NUMBER("HAKMEM_LEARN_PURGE",        learn_purge,        START(NONE), 0, 1, 1, 1, 0),
  NUMBER("HAKMEM_TARGET_HIT_LARGE",   target_hit_large,   START(NONE), 0, 1000, 900, 900, 800),
  NUMBER("HAKMEM_CAP_STEP_LARGE",     cap_step_large,     START(NONE), 1, 256, 16, 8, 4),
  NUMBER("HAKMEM_CAP_MAX_LARGE",      cap_max_large,      START(NONE), 1, 4096, 1024, 256, 64),
  NUMBER("HAKMEM_CAP_MAX_LARGE_MB",   cap_max_large_mb,   START(NONE), 1, 65536, 2048, 512, 64),
  NUMBER("HAKMEM_TARGET_HIT_PURGE",   target_hit_purge,   START(NONE), 0, 1000, 900, 900, 750),
  NUMBER("HAKMEM_CAP_MAX_PURGE_MS",   cap_max_purge_ms,   START(NONE), 1, 3600000, 60000, 30000, 5000),
  NUMBER("HAKMEM_CAP_MIN_PURGE_MS",   cap_min_purge_ms,   START(NONE), 0, 3600000, 100, 50, 10),
  NUMBER("HAKMEM_SMALL_IDLE_EPOCHS",  small_idle_epochs,  START(NONE), 1, 1000000, 8, 2, 1),
  NUMBER("HAKMEM_CAP_MAX_SMALL_IDLE", cap_max_small_idle, START(NONE), 1, 1000000, 256, 64, 16),
  NUMBER("HAKMEM_PROF",               prof,               START(NONE), 0, 1, 0, 0, 0),
  SIZE("HAKMEM_PROF_SAMPLE",          prof_sample,        START(NONE), 1, 1099511627776, 524288, 524288, 524288),
  SIZE("HAKMEM_PROF_INTERVAL",        prof_interval,      START(NONE), 0, 1125899906842624, 0, 0, 0),
  NUMBER("HAKMEM_PROF_LEAKS",         prof_leaks,         START(NONE), 0, 1, 0, 0, 0),
  NUMBER("HAKMEM_PROF_SEED",          prof_seed,          START(NONE), 0, 9223372036854775807, 0, 0, 0),
  /* sampled guarded allocations (guarded.c): one in RATE of the blocks the
   * slow path hands out, SLOTS of them live or in quarantine (0 turns it
   * off), at most PER_SEC a second after the first HK_GUARDED_BURST */
  NUMBER("HAKMEM_GUARDED_RATE",       guarded_rate,       START(NONE), 0, 1000000000, 100000, 100000, 100000),
  NUMBER("HAKMEM_GUARDED_SLOTS",      guarded_slots,      START(NONE), 0, 16384, 64, 64, 16),
  NUMBER("HAKMEM_GUARDED_PER_SEC",    guarded_per_sec,    START(NONE), 1, 1000000, 100, 100, 100),
  /* the allocation and free stacks of a sampled block: a walk reads the
   * unwind tables of every library on the stack, file pages the program
   * then keeps (lowmem: none taken, the catch is the same) */
  NUMBER("HAKMEM_GUARDED_STACKS",     guarded_stacks,     START(NONE), 0, 1, 1, 1, 0),
  /* off, on (the thread from start-up), auto (started once the program has
   * held HK_BG_AUTO_BYTES: a small program never gets one); 0 and 1 as
   * before this knob had words */
  KEYWORD("HAKMEM_BACKGROUND_PURGE",  background_purge,   START(BG), HK_BG_AUTO, HK_BG_AUTO, HK_BG_AUTO,
          { "auto", HK_BG_AUTO }, { "off", HK_BG_OFF }, { "on", HK_BG_ON }, { "0", HK_BG_OFF }, { "1", HK_BG_ON }),
  KEYWORD("HAKMEM_THP",               thp,                START(NONE), 0, 0, 0,
          { "auto", HK_THP_KNOB_AUTO }, { "never", HK_THP_KNOB_NEVER }, { "always", HK_THP_KNOB_ALWAYS },
          { "spans", HK_THP_KNOB_SPANS }),
  NUMBER("HAKMEM_SPAN_SHARDS",        span_shards,        START(NONE), 0, 8, 0, 0, 1),
  /* the memory budget (mem_limit.c): 0 takes the cgroup's limits */
  SIZE("HAKMEM_MEMORY_LIMIT",         memory_limit,       START(NONE), 0, 1125899906842624, 0, 0, 0),
  KEYWORD("HAKMEM_MEMORY_LIMIT_ACTION", memory_limit_action, START(NONE), 0, 0, 0,
          { "keep", 0 }, { "fail", 1 }),
};
#undef START
#undef RUN
#undef NUMBER
#undef SIZE
#undef KEYWORD
#undef PATH

#define NKNOBS (sizeof knob_table / sizeof knob_table[0])
/* 1: the environment set the row's value; 2: it gave a bad one (default used) */
static unsigned char knob_src[NKNOBS];

static bool str_eq(const char *a, const char *b) {
  while (*a && *a == *b) { a++; b++; }
  return *a == *b;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* Decimal digits from *s on, as many as there are (at least one), no
 * locale, no allocation; false on none or on overflow. */
static bool parse_digits(const char **s, long *out) {
  const char *p = *s;
  long v = 0;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (0x7fffffffffffffffL - (*p - '0')) / 10) return false;
    v = v * 10 + (*p - '0');
  }
  *s = p;
  *out = v;
  return true;
}

/* A size: digits, then maybe K, M, G or T (either case: powers of 1024),
 * then maybe B or, after a letter of those, iB ("512K", "64MiB", "2gb",
 * "4096"); false on anything else or on overflow. */
static bool parse_size(const char *s, long *out) {
  static const char units[] = "kmgt";
  long v;
  if (!parse_digits(&s, &v)) return false;
  unsigned shift = 0;
  for (unsigned u = 0; units[u]; u++)
    if (lower(*s) == units[u]) { shift = 10 * (u + 1); s++; break; }
  if (shift && lower(s[0]) == 'i' && lower(s[1]) == 'b') s += 2;
  else if (lower(*s) == 'b') s++;
  if (*s) return false;
  if (v > (0x7fffffffffffffffL >> shift)) return false;
  *out = v << shift;
  return true;
}

/* the printed word of value v (the first of its spellings); the list's
 * first word if none */
static const char *word_of(const knob_word_t *w, long v) {
  for (const knob_word_t *x = w; x->word; x++)
    if (x->value == v) return x->word;
  return w[0].word;
}

bool hk_knob_parse(size_t i, const char *s, long *out) {
  if (i >= NKNOBS) return false;
  const knob_row_t *k = &knob_table[i];
  long v;
  switch (k->kind) {
  case HK_KNOB_NUMBER:
    if (!parse_digits(&s, &v) || *s) return false;
    break;
  case HK_KNOB_SIZE:
    if (!parse_size(s, &v)) return false;
    break;
  case HK_KNOB_KEYWORD:
    for (const knob_word_t *w = k->words; w->word; w++)
      if (str_eq(s, w->word)) { *out = w->value; return true; }
    return false;
  default:
    return false;  /* text: nothing to read as a number */
  }
  if (v < k->min || v > k->max) return false;
  *out = v;
  return true;
}

/* A string or path row: the text as given, cut to its buffer. */
static void read_text(size_t i, const char *s) {
  const knob_row_t *k = &knob_table[i];
  if (k->kind == HK_KNOB_PATH && !*s) return;  /* empty: unset */
  size_t n = 0;
  while (s[n] && n + 1 < k->text_size) { k->text[n] = s[n]; n++; }
  k->text[n] = 0;
  knob_src[i] = 1;
  if (s[n]) hk_message("hakmem: warning: %s is longer than %zu bytes; truncated\n", k->name, k->text_size - 1);
}

/* "is not ..." of a bad value: a keyword's words ("fast, balanced or
 * lowmem": each value's printed one), else what the kind takes */
static void warn_bad(const knob_row_t *k, const char *s) {
  if (k->kind != HK_KNOB_KEYWORD) {
    const char *what = k->kind == HK_KNOB_SIZE ? "a size (bytes, or with K, M, G or T)" : "an integer";
    hk_message("hakmem: warning: %s=\"%s\" is not %s in [%ld, %ld]; using %ld\n", k->name, s, what, k->min,
               k->max, *k->value);
    return;
  }
  const char *names[16];  /* the printed words, in the list's order */
  size_t m = 0;
  for (const knob_word_t *w = k->words; w->word && m < 16; w++)
    if (word_of(k->words, w->value) == w->word) names[m++] = w->word;
  char list[256];
  size_t n = 0;
  for (size_t j = 0; j < m; j++) {
    const char *sep = j == 0 ? "" : j + 1 == m ? " or " : ", ";
    for (const char *c = sep; *c && n + 1 < sizeof list; c++) list[n++] = *c;
    for (const char *c = names[j]; *c && n + 1 < sizeof list; c++) list[n++] = *c;
  }
  list[n] = 0;
  hk_message("hakmem: warning: %s=\"%s\" is not %s; using %s\n", k->name, s, list, word_of(k->words, *k->value));
}

/* Row i: its profile's default, then the environment's value if it is
 * good (a warning if not). */
static void read_row(size_t i) {
  const knob_row_t *k = &knob_table[i];
  if (k->value) *k->value = k->def[hk_knobs.profile];
  const char *s = getenv(k->name);
  if (!s) return;
  if (!k->value) {
    read_text(i, s);
    return;
  }
  long v;
  if (hk_knob_parse(i, s, &v)) {
    *k->value = v;
    knob_src[i] = 1;
  } else {
    knob_src[i] = 2;
    warn_bad(k, s);
  }
}

/* ---- names: a HAKMEM_* variable that is no knob is warned about ----------
 * Variables of hakmem's own scripts and tests that are not knobs (they are
 * read by the launcher, the test suite or the examples, never by the
 * library). docs/ENV_VARS.md, "Variables that are not knobs", lists them. */
static const char *const non_knob_prefix = "HAKMEM_TEST_";
static const char *const non_knob_names[] = {
  "HAKMEM_LIB",              /* tools/hakmem: the library to preload      */
  "HAKMEM_PRELOAD_LIB",      /* tests/system/preload_programs.sh                 */
  "HAKMEM_LINK",             /* examples/rust: static or dylib            */
  "HAKMEM_LIB_DIR",          /* examples/rust: where libhakmem is         */
  "HAKMEM_SECURITY_MATRIX",  /* tests/security/by_hand.sh                         */
  "HAKMEM_SECURITY_SCUDO",   /* tests/security/by_hand.sh                         */
  "HAKMEM_SECURITY_PEER",    /* tests/security: the peer allocator        */
  "HAKMEM_SCUDO_LIB",        /* tests/security/peer.sh                    */
  "HAKMEM_PROF_DIR",         /* tools/hakmem prof: where its files go     */
};
#define NAME_MAX_CMP 64

/* Edit distance (insert, delete, substitute) of two short strings, on the
 * stack: no allocation at start-up. Longer strings are cut at NAME_MAX_CMP. */
static unsigned edit_distance(const char *a, size_t na, const char *b, size_t nb) {
  unsigned row[NAME_MAX_CMP + 1];
  if (na > NAME_MAX_CMP) na = NAME_MAX_CMP;
  if (nb > NAME_MAX_CMP) nb = NAME_MAX_CMP;
  for (size_t j = 0; j <= nb; j++) row[j] = (unsigned)j;
  for (size_t i = 1; i <= na; i++) {
    unsigned diag = row[0];
    row[0] = (unsigned)i;
    for (size_t j = 1; j <= nb; j++) {
      unsigned up = row[j];
      unsigned best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

static size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

/* true when name (n bytes, up to '=') is exactly str */
static bool name_is(const char *name, size_t n, const char *str) {
  size_t i = 0;
  for (; i < n; i++)
    if (str[i] != name[i]) return false;
  return str[i] == 0;
}

static bool name_known(const char *name, size_t n) {
  size_t np = str_len(non_knob_prefix);
  if (n > np) {
    bool pre = true;
    for (size_t i = 0; i < np; i++) pre = pre && name[i] == non_knob_prefix[i];
    if (pre) return true;
  }
  for (size_t i = 0; i < NKNOBS; i++)
    if (name_is(name, n, knob_table[i].name)) return true;
  for (size_t i = 0; i < sizeof non_knob_names / sizeof *non_knob_names; i++)
    if (name_is(name, n, non_knob_names[i])) return true;
  return false;
}

const char *hk_knobs_closest(const char *name, size_t n) {
  const char *best = NULL;
  unsigned best_d = ~0u;
  for (size_t i = 0; i < NKNOBS; i++) {
    const char *k = knob_table[i].name;
    unsigned d = edit_distance(name, n, k, str_len(k));
    if (d < best_d) { best_d = d; best = k; }
  }
  /* a suggestion only when it is near: 3 edits, or a third of the name */
  size_t tail = n > 7 ? n - 7 : n;
  if (best_d <= 3 || best_d * 3 <= tail) return best;
  return NULL;
}

/* Every HAKMEM_* variable of the environment that hakmem does not know is
 * named once, with the closest knob. Reads environ in place: no malloc. */
static void knobs_check_names(void) {
  extern char **environ;
  if (!environ) return;
  static const char prefix[] = "HAKMEM_";
  for (char **e = environ; *e; e++) {
    const char *v = *e;
    size_t i = 0;
    while (prefix[i] && v[i] == prefix[i]) i++;
    if (prefix[i]) continue;
    size_t n = 0;
    while (v[n] && v[n] != '=') n++;
    if (name_known(v, n)) continue;
    const char *near = hk_knobs_closest(v, n);
    int shown = n > 200 ? 200 : (int)n;
    if (near)
      hk_message("hakmem: unknown variable %.*s (did you mean %s?)\n", shown, v, near);
    else
      hk_message("hakmem: unknown variable %.*s (no such knob: `hakmem config` lists them)\n",
                 shown, v);
  }
}

/* ---- the configuration, row by row (hakmem config, the stats reports) ---- */

bool hk_knob_get(size_t i, hk_knob_info_t *o) {
  if (i >= NKNOBS) return false;
  const knob_row_t *k = &knob_table[i];
  o->name = k->name;
  o->kind = (hk_knob_kind_t)k->kind;
  o->runtime = k->runtime != 0;
  o->act = (hk_knob_act_t)k->act;
  o->field = k->value;
  o->src = knob_src[i];
  o->value = o->def = o->min = o->max = 0;
  o->text = o->def_text = NULL;
  if (!k->value) {  /* a string or a path: unset by default */
    o->text = k->text;
    o->def_text = "";
    return true;
  }
  o->value = HK_LOAD_RELAXED(*k->value);  /* hak_ctl_set may be changing it */
  o->def = k->def[hk_knobs.profile];
  o->min = k->min;
  o->max = k->max;
  if (k->kind == HK_KNOB_KEYWORD) {
    o->text = word_of(k->words, o->value);
    o->def_text = word_of(k->words, o->def);
    o->min = o->max = k->words[0].value;
    for (const knob_word_t *w = k->words; w->word; w++) {
      if (w->value < o->min) o->min = w->value;
      if (w->value > o->max) o->max = w->value;
    }
  }
  return true;
}

/* The row of a knob by name, the HAKMEM_ prefix left out or not (the
 * control API, ctl.c). */
bool hk_knob_find(const char *name, hk_knob_info_t *o) {
  static const char prefix[] = "HAKMEM_";
  for (size_t i = 0; i < NKNOBS; i++) {
    const char *n = knob_table[i].name;
    if (str_eq(name, n) || str_eq(name, n + sizeof prefix - 1)) return hk_knob_get(i, o);
  }
  return false;
}

bool hk_knob_is_default(const hk_knob_info_t *k) {
  if (k->text) return str_eq(k->text, k->def_text);
  return k->value == k->def;
}

static void put_value(hk_writer_t *w, const hk_knob_info_t *k, bool def) {
  if (k->text) hk_write_str(w, def ? k->def_text : k->text);
  else hk_write_fmt(w, "%ld", def ? k->def : k->value);
}

/* A line ends with its write: each goes out whole, between other threads'. */
static void end_line(hk_writer_t *w) {
  hk_write_str(w, "\n");
  hk_write_flush(w);
}

/* all: every knob, one a line ("hakmem: config: NAME VALUE (default|set…)");
 * otherwise one line with the profile and the knobs that differ from it. */
void hk_knobs_print(int fd, bool all) {
  char buf[512];
  hk_writer_t w;
  hk_writer_to_fd(&w, fd, buf, sizeof buf);
  hk_knob_info_t k;
  if (!all) {
    hk_write_str(&w, "hakmem: config: profile ");
    hk_write_str(&w, hk_profile_name());
    bool any = false;
    for (size_t i = 1; hk_knob_get(i, &k); i++) {
      if (hk_knob_is_default(&k)) continue;
      hk_write_str(&w, any ? ", " : "; ");
      hk_write_str(&w, k.name);
      hk_write_str(&w, "=");
      put_value(&w, &k, false);
      any = true;
    }
    if (!any) hk_write_str(&w, "; every knob at its default");
    end_line(&w);
    return;
  }
  for (size_t i = 0; hk_knob_get(i, &k); i++) {
    hk_write_str(&w, "hakmem: config: ");
    hk_write_str(&w, k.name);
    for (size_t pad = str_len(k.name); pad < 27; pad++) hk_write_str(&w, " ");
    size_t start = w.total;
    put_value(&w, &k, false);
    if (k.text && !k.text[0]) hk_write_str(&w, "(unset)");
    while (w.total - start < 9) hk_write_str(&w, " ");  /* a column */
    bool def = hk_knob_is_default(&k);
    if (k.src == 2) {
      hk_write_str(&w, " (default: the value given is invalid)");
    } else if (def) {
      hk_write_str(&w, k.src ? " (set, = default)" : " (default)");
    } else {
      hk_write_str(&w, " (set; default ");
      put_value(&w, &k, true);
      if (k.text && !k.def_text[0]) hk_write_str(&w, "unset");
      hk_write_str(&w, ")");
    }
    if (!k.text) hk_write_fmt(&w, "  [%ld, %ld]", k.min, k.max);
    end_line(&w);
  }
}

static void knobs_read(void) {
  HK_ASSERT(knob_table[0].value == &hk_knobs.profile);  /* read first: the others' defaults */
  for (size_t i = 0; i < NKNOBS; i++) read_row(i);
  knobs_check_names();
  hk_report_set_abort(hk_knobs.abort_on_invalid != 0);
}

/* Once per process, by whoever comes first (the first heap, or init.c's
 * constructor); a second thread waits for the first. Reading the knobs
 * does not allocate, so no malloc comes back in. */
void hk_knobs_init(void) {
  static atomic_int state;  /* 0 no, 1 reading, 2 done */
  if (HK_LIKELY(atomic_load_explicit(&state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&state, &expected, 1)) {
    knobs_read();
    atomic_store_explicit(&state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&state, memory_order_acquire) != 2) sched_yield();
}

const char *hk_profile_name(void) { return word_of(knob_table[0].words, hk_knobs.profile); }
