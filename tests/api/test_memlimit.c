/* The memory budget (issue 43, HAKMEM_MEMORY_LIMIT; docs/ENV_VARS.md).
 *
 *   test_memlimit cycle   a third of the limit live while 3x the limit in
 *                         garbage cycles through it (small, mid and large
 *                         blocks, in rounds of one tier each): the peak
 *                         resident set (VmHWM) stays within the limit.
 *   test_memlimit fail    (HAKMEM_MEMORY_LIMIT_ACTION=fail) live data grown
 *                         past the limit, per tier: malloc returns NULL with
 *                         ENOMEM before the resident set passes the limit,
 *                         and serves again after frees.
 *   test_memlimit quiet LIMIT   the cycle, with no stats call before it:
 *                         the limits are read when the program's own
 *                         allocations first need them (memlimit_cgroup.sh).
 *   test_memlimit info    prints the limit in force, its source and the
 *                         headroom as hak_stats_read says (memlimit_cgroup.sh).
 *   test_memlimit one     one large block, kept to the exit: a program that
 *                         ends within the budget's unread window (2 ms after
 *                         its first large block) reads no cgroup file
 *                         (startup.sh, under strace).
 *   test_memlimit two     a large block, 5 ms asleep, another: the second
 *                         reads the limits (startup.sh).
 *   test_memlimit hold MB FILE   holds MB MiB written, touches FILE, then
 *                         sleeps until killed: another process of the same
 *                         cgroup, which the budget must count (memlimit_cgroup.sh).
 *
 * The limit is the one hakmem reports (the knob, or the cgroup's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../include/hakmem.h"
#include "check.h"

static size_t status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t v = 0, n = strlen(key);
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') v = strtoul(line + n + 1, NULL, 10);
  fclose(f);
  return v;
}

static struct hak_stats st;
static void read_stats(void) { CHECK(hak_stats_read(&st, sizeof st) == sizeof st); }

static const char *const sources[] = { "none", "knob", "cgroup v2", "cgroup v1" };

/* The limit hakmem has in force; with none, the one given (the
 * check without the budget: it must fail). */
static size_t given_limit;
static size_t limit_in_force(void) {
  read_stats();
  if (!st.mem_limit && given_limit) {
    printf("no limit in force: checking against %zu bytes (without the budget)\n", given_limit);
    return given_limit;
  }
  if (!st.mem_limit) {
    fprintf(stderr, "no memory limit in force (HAKMEM_MEMORY_LIMIT unset, no cgroup limit)\n");
    exit(2);
  }
  return st.mem_limit;
}

static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static size_t rnd(size_t n) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (size_t)(rng % n);
}

/* a block of tier t (0 small 16-1024 B, 1 mid 2-32 KiB, 2 large 64 KiB-4 MiB),
 * every page written */
static size_t tier_size(int t) {
  switch (t) {
  case 0: return 16 + rnd(1009);
  case 1: return 2048 + rnd(30 * 1024);
  default: return ((size_t)64 << 10) + rnd((size_t)4 << 20);
  }
}
static void *touch(void *p, size_t n) {
  if (p) for (size_t i = 0; i < n; i += 4096) ((volatile char *)p)[i] = (char)i;
  if (p) ((volatile char *)p)[n - 1] = 1;
  return p;
}

typedef struct { void **p; size_t n, cap; } set_t;
static void push(set_t *s, void *p) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->p = realloc(s->p, s->cap * sizeof *s->p);
    CHECK(s->p);
  }
  s->p[s->n++] = p;
}
static void free_all(set_t *s) {
  for (size_t i = 0; i < s->n; i++) free(s->p[i]);
  s->n = 0;
}

/* name: the mode, for the summary line */
static int cycle_in(size_t limit, const char *name) {
  set_t live = {0}, garbage = {0};
  /* a third of the limit live, of all three tiers, less what the process
   * itself holds (binary, libc, stacks) */
  size_t base = status_kb("VmRSS") << 10, want = limit / 3, have = 0;
  for (int t = 0; have < want; t = (t + 1) % 3) {
    size_t n = tier_size(t);
    push(&live, touch(malloc(n), n));
    have += n;
  }
  /* rounds of a sixth of the limit: a third live plus one round is half
   * the limit, which fits whatever the tiers' overheads */
  size_t round_bytes = limit / 4, total = 0, max_rss = 0;
  int rounds = 0;
  while (total < 3 * limit) {
    int t = rounds++ % 3;
    for (size_t got = 0; got < round_bytes;) {
      size_t n = tier_size(t);
      void *p = touch(malloc(n), n);
      CHECK(p);
      push(&garbage, p);
      got += n;
    }
    total += round_bytes;
    size_t rss = status_kb("VmRSS") << 10;
    if (rss > max_rss) max_rss = rss;
    free_all(&garbage);
  }
  size_t hwm = status_kb("VmHWM") << 10;
  read_stats();
  printf("limit %zu (%s), base %zu, live %zu, garbage %zu in %d rounds; max sampled RSS %zu, VmHWM %zu; "
         "forced purges %lu, over %lu\n",
         limit, sources[st.mem_limit_source & 3], base, have, total, rounds, max_rss, hwm, st.mem_reliefs,
         st.mem_over);
  CHECKF(hwm <= limit, "peak resident %zu, limit %zu", hwm, limit);
  free_all(&live);
  free(live.p);
  free(garbage.p);
  return check_done(name);
}

static int cycle(void) { return cycle_in(limit_in_force(), "test_memlimit cycle"); }

/* The cycle with the limit given, not asked for: the first call to hakmem
 * that reads the limits is the program's own allocation (the ninth fresh
 * slab, the first large block), so a budget that read them later, or only
 * for the stats, would protect nothing this program does before that. */
static int quiet(void) {
  if (!given_limit) {
    fprintf(stderr, "test_memlimit quiet LIMIT\n");
    return 2;
  }
  return cycle_in(given_limit, "test_memlimit quiet");
}

/* One tier: grow live data until malloc says ENOMEM; the resident set is
 * then within the limit, and after half is freed malloc serves again. */
static void fail_tier(int t, size_t limit) {
  set_t live = {0};
  size_t have = 0;
  void *p;
  push(&live, NULL);  /* the set's own array, before the limit is near */
  live.n = 0;
  for (;;) {
    size_t n = tier_size(t);
    errno = 0;
    p = malloc(n);
    if (!p) break;
    touch(p, n);
    push(&live, p);
    have += n;
    if (have >= 2 * limit) break;  /* refused long before, if at all */
  }
  CHECKF(p == NULL && errno == ENOMEM, "tier %d: %zu bytes live, not refused", t, have);
  size_t rss = status_kb("VmRSS") << 10;
  printf("tier %d: ENOMEM at %zu bytes live (%zu blocks), RSS %zu, limit %zu\n", t, have, live.n, rss, limit);
  CHECK(rss <= limit);
  CHECK(have >= limit / 4);  /* refused near the limit, not far below it */
  for (size_t i = 0; i < live.n; i += 2) { free(live.p[i]); live.p[i] = NULL; }
  size_t n = tier_size(t);
  p = malloc(n);
  CHECK(p);  /* served again */
  free(p);
  for (size_t i = 0; i < live.n; i++) free(live.p[i]);
  free(live.p);
}

static int fail(void) {
  size_t limit = limit_in_force();
  for (int t = 0; t < 3; t++) fail_tier(t, limit);
  read_stats();
  printf("refused %lu, forced purges %lu\n", st.mem_refused, st.mem_reliefs);
  CHECK(st.mem_refused >= 3);
  return check_done("test_memlimit fail");
}

static int info(void) {
  read_stats();
  printf("limit %zu soft %zu source %s pressure %d resident %zu headroom %zu\n", st.mem_limit,
         st.mem_limit_soft, sources[st.mem_limit_source & 3], st.mem_pressure, st.mem_resident,
         st.mem_headroom);
  return 0;
}

static int hold(size_t mb, const char *ready) {
  char *p = malloc(mb << 20);
  CHECK_FATAL(p);
  memset(p, 1, mb << 20);
  FILE *f = fopen(ready, "w");
  CHECK_FATAL(f);
  fclose(f);
  for (;;) pause();
}

static char *one_large(void) {
  char *p = malloc(1 << 20);
  CHECK_FATAL(p);
  p[0] = 1;
  return p;
}

static int two(void) {
  free(one_large());
  sleep_ms(5);
  free(one_large());
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "cycle";
  if (strcmp(mode, "hold") == 0 && argc == 4) return hold(strtoul(argv[2], NULL, 10), argv[3]);
  if (argc > 2) given_limit = strtoul(argv[2], NULL, 10);
  if (strcmp(mode, "cycle") == 0) return cycle();
  if (strcmp(mode, "fail") == 0) return fail();
  if (strcmp(mode, "info") == 0) return info();
  if (strcmp(mode, "quiet") == 0) return quiet();
  if (strcmp(mode, "one") == 0) return one_large()[0] == 1 ? 0 : 1;
  if (strcmp(mode, "two") == 0) return two();
  fprintf(stderr, "usage: test_memlimit cycle|fail|info|quiet [LIMIT] | one | two | hold MB FILE\n");
  return 2;
}
