/* test_ctl — the control API (hakmem.h: hak_ctl_get, hak_ctl_set, hak_ctl)
 * and mallopt().
 *
 *   test_ctl [ENV_VARS.md]
 *
 * Every knob documented in docs/ENV_VARS.md (its table rows) can be read by
 * name, with and without the HAKMEM_ prefix, and is settable at run time
 * exactly when its "run time" column says yes (else EPERM); the settable
 * ones round-trip;
 * bad input gets its errno (EINVAL, ENOENT, EPERM, ERANGE); a cap set
 * through the API is pinned (the learner, turned on at run time and driven
 * through many epochs, leaves it); stats counting turns on and off; the
 * actions give memory back; mallopt maps or accepts glibc's parameters. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* cell c (0: the name) of a table row "| `NAME` | a | b |", into out */
static bool cell(const char *line, int c, char *out, size_t size) {
  const char *p = line;
  for (int i = 0; i <= c; i++) {
    p = strstr(p, "| ");
    if (!p) return false;
    p += 2;
  }
  const char *e = strstr(p, " |");
  if (!e || (size_t)(e - p) >= size) return false;
  memcpy(out, p, (size_t)(e - p));
  out[e - p] = 0;
  return true;
}

/* every `HAKMEM_X` that starts a table row of the doc's knob tables (the
 * list of variables that are not knobs comes after them) */
static void doc_knobs(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) { printf("note: %s not readable, knob list not checked\n", path); return; }
  char line[4096];
  int n = 0, runtime = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "## Variables that are not knobs", 31) == 0) break;
    if (strncmp(line, "| `HAKMEM_", 10) != 0) continue;
    char name[128];
    size_t k = 0;
    for (const char *p = line + 3; *p && *p != '`' && k + 1 < sizeof name; p++) name[k++] = *p;
    name[k] = 0;
    long v = -12345;
    int r = hak_ctl_get(name, &v);
    if (strcmp(name, "HAKMEM_STATS_FILE") == 0 || strcmp(name, "HAKMEM_PROF_FILE") == 0) {
      CHECKF(r == -1 && errno == EINVAL, "%s: a string knob, want EINVAL (r=%d)", name, r);
    } else {
      CHECKF(r == 0, "hak_ctl_get(%s) failed: errno %d", name, errno);
      long w = -54321;
      CHECKF(hak_ctl_get(name + 7, &w) == 0 && w == v, "%s without its prefix: %ld vs %ld", name, w, v);
    }
    /* the knob tables' "run time" column (the 7th after the name; the
     * table of why has two cells) */
    char run[16];
    if (cell(line, 7, run, sizeof run)) {
      CHECKF(strcmp(run, "yes") == 0 || strcmp(run, "no") == 0, "%s: run time column '%s'", name, run);
      errno = 0;
      int s = hak_ctl_set(name, r == 0 ? v : 0);
      if (strcmp(run, "yes") == 0) CHECKF(s == 0, "%s: settable at run time, hak_ctl_set: errno %d", name, errno);
      else CHECKF(s == -1 && errno == EPERM, "%s: read at start-up, hak_ctl_set: %d errno %d", name, s, errno);
      runtime++;
    }
    n++;
  }
  fclose(f);
  CHECKF(n >= 20 && runtime >= 20, "only %d knob rows in %s, %d with a run time column", n, path, runtime);
  printf("%d documented knobs read, %d with a run time column\n", n, runtime);
}

static void errors(void) {
  long v;
  errno = 0;
  CHECK(hak_ctl_get(NULL, &v) == -1 && errno == EINVAL);
  CHECK(hak_ctl_get("PURGE_DELAY_MS", NULL) == -1 && errno == EINVAL);
  CHECK(hak_ctl_get("HAKMEM_NO_SUCH_KNOB", &v) == -1 && errno == ENOENT);
  CHECK(hak_ctl_get("", &v) == -1 && errno == ENOENT);
  CHECK(hak_ctl_set(NULL, 1) == -1 && errno == EINVAL);
  CHECK(hak_ctl_set("HAKMEM_NO_SUCH_KNOB", 1) == -1 && errno == ENOENT);
  CHECK(hak_ctl_set("HAKMEM_CARVE_KB", 8) == -1 && errno == EPERM);          /* read once */
  CHECK(hak_ctl_set("HAKMEM_PROFILE", 0) == -1 && errno == EPERM);
  CHECK(hak_ctl_set("HAKMEM_BACKGROUND_PURGE", 1) == -1 && errno == EPERM);
  CHECK(hak_ctl_set("HAKMEM_PURGE_DELAY_MS", -1) == -1 && errno == ERANGE);
  CHECK(hak_ctl_set("HAKMEM_PURGE_DELAY_MS", 3600001) == -1 && errno == ERANGE);
  CHECK(hak_ctl_set("STATS", 3) == -1 && errno == ERANGE);
  CHECK(hak_ctl_set("LEARN", 2) == -1 && errno == ERANGE);
  CHECK(hak_ctl(NULL) == -1 && errno == EINVAL);
  CHECK(hak_ctl("defragment") == -1 && errno == EINVAL);
}

static void roundtrip(void) {
  static const struct { const char *name; long value; } set[] = {
    { "HAKMEM_PURGE_DELAY_MS", 250 }, { "SS_CACHE", 7 },   { "HAKMEM_LARGE_CACHE_MB", 32 },
    { "LARGE_CACHE_COUNT", 16 },      { "HEAP_SPARE", 0 }, { "HAKMEM_LEARN_LOG", 1 },
    { "ABORT_ON_INVALID", 1 },
  };
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
    long v = -1;
    CHECKF(hak_ctl_set(set[i].name, set[i].value) == 0, "set %s: errno %d", set[i].name, errno);
    CHECKF(hak_ctl_get(set[i].name, &v) == 0 && v == set[i].value, "%s: %ld, want %ld", set[i].name, v,
           set[i].value);
  }
}

static void stats_switch(void) {
  struct hak_stats st;
  CHECK(hak_ctl_set("STATS", 1) == 0);
  hak_stats_get(&st);
  CHECK(st.counting == 1);
  void *p[1000];
  for (int r = 0; r < 20; r++) {
    for (int i = 0; i < 1000; i++) p[i] = malloc(48);
    for (int i = 0; i < 1000; i++) free(p[i]);
  }
  hak_stats_get(&st);
  CHECKF(st.allocs > 0, "counting on, %zu allocs counted", st.allocs);
  CHECK(hak_ctl_set("STATS", 0) == 0);
  hak_stats_get(&st);
  CHECK(st.counting == 0);
  CHECK(hak_ctl("stats") == 0);
}

/* The learner, turned on now, runs many epochs of large allocations; the
 * caps set through the API stay where they were set. */
static void learner_pin(void) {
  CHECK(hak_ctl_set("PURGE_DELAY_MS", 777) == 0);
  CHECK(hak_ctl_set("LARGE_CACHE_COUNT", 3) == 0);
  CHECK(hak_ctl_set("LARGE_CACHE_MB", 5) == 0);
  CHECK(hak_ctl_set("LEARN", 1) == 0);
  long v = 0;
  CHECK(hak_ctl_get("LEARN", &v) == 0 && v == 1);
  for (int r = 0; r < 3000; r++) {
    void *a[8];
    for (int i = 0; i < 8; i++) { a[i] = malloc((size_t)(64 + 97 * ((r + i) % 16)) * KiB); ((char *)a[i])[0] = 1; }
    for (int i = 0; i < 8; i++) free(a[i]);
  }
  CHECK(hak_ctl_get("PURGE_DELAY_MS", &v) == 0 && v == 777);
  CHECK(hak_ctl_get("LARGE_CACHE_COUNT", &v) == 0 && v == 3);
  CHECK(hak_ctl_get("LARGE_CACHE_MB", &v) == 0 && v == 5);
  CHECK(hak_ctl_set("LEARN", 0) == 0);
  CHECK(hak_ctl_set("PURGE_DELAY_MS", 1000) == 0);
}

static void actions(void) {
  size_t n = 64 * MiB / 100;
  void **p = malloc(n * sizeof *p);
  CHECK_FATAL(p);
  size_t base = rss_kib();
  for (size_t i = 0; i < n; i++) { p[i] = malloc(100); memset(p[i], 1, 100); }
  size_t full = rss_kib();
  for (size_t i = 0; i < n; i++) free(p[i]);
  CHECK(hak_ctl("flush") == 0);
  size_t flushed = rss_kib();
  printf("flush: %zu -> %zu -> %zu KiB\n", base, full, flushed);
  CHECKF(flushed < base + 16 * 1024, "flush gave back too little: %zu -> %zu KiB", full, flushed);
  for (size_t i = 0; i < 64; i++) { p[i] = malloc(MiB); memset(p[i], 1, MiB); }
  for (size_t i = 0; i < 64; i++) free(p[i]);
  CHECK(hak_ctl("purge") == 0);
  size_t purged = rss_kib();
  printf("purge: %zu KiB\n", purged);
  CHECKF(purged < base + 16 * 1024, "purge gave back too little: %zu KiB", purged);
  free(p);
}

static void mallopt_map(void) {
  CHECK(mallopt(M_MMAP_THRESHOLD, 256 * 1024) == 1);
  CHECK(mallopt(M_TRIM_THRESHOLD, 1024 * 1024) == 1);
  CHECK(mallopt(M_TOP_PAD, 0) == 1);
  CHECK(mallopt(M_MMAP_MAX, 0) == 1);
  CHECK(mallopt(M_ARENA_MAX, 1) == 1);
  CHECK(mallopt(M_ARENA_TEST, 2) == 1);
  CHECK(mallopt(M_PERTURB, 0) == 1);
  CHECK(mallopt(M_MXFAST, 64) == 1);
  long v = -1;
  CHECK(mallopt(M_CHECK_ACTION, 1) == 1);   /* print, no abort */
  CHECK(hak_ctl_get("ABORT_ON_INVALID", &v) == 0 && v == 0);
  CHECK(mallopt(M_CHECK_ACTION, 3) == 1);   /* print and abort */
  CHECK(hak_ctl_get("ABORT_ON_INVALID", &v) == 0 && v == 1);
  CHECK(mallopt(12345, 1) == 0);
  CHECK(mallopt(0, 1) == 0);
}

int main(int argc, char **argv) {
  if (!hak_is_active()) { printf("SKIP: hakmem is not malloc\n"); return 77; }
  doc_knobs(argc > 1 ? argv[1] : "docs/ENV_VARS.md");
  errors();
  roundtrip();
  stats_switch();
  learner_pin();
  actions();
  mallopt_map();
  return check_done("ctl");
}
