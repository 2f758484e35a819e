/* test_knobs — the knob table (src/base/knobs.c) and how it is read.
 *
 *   test_knobs
 *
 * Linked statically, so the table's own rows are at hand (hk_knob_get,
 * hk_knob_parse):
 *   parse     a size takes bytes with K, M, G or T (64M, 1G, 4096, 512KiB)
 *             and refuses a bad suffix, a sign, a fraction, overflow and
 *             values past its row's range; a number takes no suffix; a
 *             keyword takes its words and their other spellings, nothing else
 *   settable  every row the table says may change at run time is set through
 *             hak_ctl_set at both ends of its range and read back, and one
 *             past them is ERANGE; every other row answers EPERM and keeps
 *             its value
 *   start-up  a child run with good values has them; one run with bad values
 *             warns (the lines docs/ENV_VARS.md quotes) and has the defaults:
 *             of the balanced profile when HAKMEM_PROFILE is the bad one */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"
#include "base/knobs.h"

/* the table's index of a knob */
static size_t row(const char *name) {
  hk_knob_info_t k;
  for (size_t i = 0; hk_knob_get(i, &k); i++)
    if (strcmp(k.name, name) == 0) return i;
  CHECKF(0, "no row %s", name);
  return (size_t)-1;
}

/* s on row name: parsed to want, or refused (ok false) */
static void parse_is(const char *name, const char *s, bool ok, long want) {
  long v = -777;
  bool got = hk_knob_parse(row(name), s, &v);
  if (ok)
    CHECKF(got && v == want, "%s=\"%s\": %s %ld, want %ld", name, s, got ? "read" : "refused", v, want);
  else
    CHECKF(!got, "%s=\"%s\" was read as %ld: want it refused", name, s, v);
}

static void parse(void) {
  hk_knob_info_t k;
  CHECK_FATAL(hk_knob_find("PROF_SAMPLE", &k) && k.kind == HK_KNOB_SIZE);
  CHECK_FATAL(hk_knob_find("HAKMEM_PROF_INTERVAL", &k) && k.kind == HK_KNOB_SIZE);
  const char *S = "HAKMEM_PROF_SAMPLE", *I = "HAKMEM_PROF_INTERVAL";  /* [1, 2^40], [0, 2^50] */
  parse_is(S, "4096", true, 4096);
  parse_is(S, "64M", true, 64L << 20);
  parse_is(S, "1G", true, 1L << 30);
  parse_is(S, "512K", true, 512L << 10);
  parse_is(S, "512k", true, 512L << 10);
  parse_is(S, "64MiB", true, 64L << 20);
  parse_is(S, "64MB", true, 64L << 20);
  parse_is(S, "2gb", true, 2L << 30);
  parse_is(S, "4096B", true, 4096);
  parse_is(S, "1T", true, 1L << 40);   /* its max */
  parse_is(S, "2T", false, 0);         /* past it */
  parse_is(I, "2T", true, 2L << 40);
  parse_is(I, "1048576G", true, 1L << 50);
  parse_is(I, "1048577G", false, 0);
  parse_is(I, "0", true, 0);
  parse_is(S, "0", false, 0);          /* below its min */
  static const char *const bad[] = {
    "", "K", "M4", "64Q", "64 M", " 64M", "64M ", "64MM", "64KM", "1.5G", "-1", "+5", "0x10",
    "64iB", "64Mi", "64MiBs", "64Bi", "１",
    "9223372036854775808",   /* past 2^63 - 1: overflow of the digits */
    "99999999999999999999K", /* the same, with a unit */
    "9007199254740992K",     /* 2^53 KiB = 2^63 bytes: overflow of the unit */
    "8796093022208T",        /* 2^43 TiB */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    parse_is(S, bad[i], false, 0);
    parse_is(I, bad[i], false, 0);
  }
  /* numbers: no unit, whatever the row's unit is */
  parse_is("HAKMEM_SS_CACHE", "4096", true, 4096);
  parse_is("HAKMEM_SS_CACHE", "4097", false, 0);
  parse_is("HAKMEM_SS_CACHE", "4K", false, 0);
  parse_is("HAKMEM_LARGE_CACHE_MB", "64M", false, 0);
  parse_is("HAKMEM_PURGE_DELAY_MS", "", false, 0);
  parse_is("HAKMEM_PURGE_DELAY_MS", "-0", false, 0);
  parse_is("HAKMEM_PROF_SEED", "9223372036854775807", true, LONG_MAX);
  parse_is("HAKMEM_PROF_SEED", "9223372036854775808", false, 0);
  /* keywords: every spelling accepted today, nothing else */
  parse_is("HAKMEM_STATS", "0", true, 0);
  parse_is("HAKMEM_STATS", "", true, 0);
  parse_is("HAKMEM_STATS", "1", true, 1);
  parse_is("HAKMEM_STATS", "text", true, 1);
  parse_is("HAKMEM_STATS", "json", true, 2);
  parse_is("HAKMEM_STATS", "2", false, 0);
  parse_is("HAKMEM_STATS", "JSON", false, 0);
  parse_is("HAKMEM_STATS", "yes", false, 0);
  parse_is("HAKMEM_STATS", "json ", false, 0);
  parse_is("HAKMEM_PROFILE", "fast", true, 0);
  parse_is("HAKMEM_PROFILE", "balanced", true, 1);
  parse_is("HAKMEM_PROFILE", "lowmem", true, 2);
  parse_is("HAKMEM_PROFILE", "Fast", false, 0);
  parse_is("HAKMEM_PROFILE", "", false, 0);
  parse_is("HAKMEM_PROFILE", "1", false, 0);
  /* a path has no number */
  parse_is("HAKMEM_STATS_FILE", "/tmp/x", false, 0);
  CHECK(hk_knob_find("STATS", &k) && k.kind == HK_KNOB_KEYWORD && k.min == 0 && k.max == 2);
  CHECK(hk_knob_find("PROFILE", &k) && k.kind == HK_KNOB_KEYWORD && strcmp(k.text, "balanced") == 0);
  CHECK(!hk_knob_find("HAKMEM_NO_SUCH_KNOB", &k) && !hk_knob_find("HAKMEM_", &k));
}

/* Every row: settable through hak_ctl_set if the table says so, EPERM if not. */
static void settable(void) {
  hk_knob_info_t k;
  int run = 0, start = 0;
  for (size_t i = 0; hk_knob_get(i, &k); i++) {
    long before = -1, v = -1;
    bool number = k.field != NULL;
    if (number) CHECKF(hak_ctl_get(k.name, &before) == 0, "%s: get: errno %d", k.name, errno);
    else CHECKF(hak_ctl_get(k.name, &before) == -1 && errno == EINVAL, "%s: a path's get is not EINVAL", k.name);
    if (!k.runtime) {
      start++;
      errno = 0;
      CHECKF(hak_ctl_set(k.name, number ? before : 0) == -1 && errno == EPERM,
             "%s is read at start-up: hak_ctl_set gave errno %d, want EPERM", k.name, errno);
      if (number) CHECKF(hak_ctl_get(k.name, &v) == 0 && v == before, "%s moved: %ld -> %ld", k.name, before, v);
      continue;
    }
    run++;
    CHECKF(number, "%s may change at run time but is no number", k.name);
    if (!number) continue;
    const long ends[2] = { k.min, k.max };
    for (int e = 0; e < 2; e++) {
      CHECKF(hak_ctl_set(k.name + 7, ends[e]) == 0, "%s: set %ld: errno %d", k.name, ends[e], errno);
      CHECKF(hak_ctl_get(k.name, &v) == 0 && v == ends[e], "%s: set %ld, read %ld", k.name, ends[e], v);
    }
    errno = 0;
    CHECKF(hak_ctl_set(k.name, k.min - 1) == -1 && errno == ERANGE, "%s: %ld is not ERANGE", k.name, k.min - 1);
    errno = 0;
    CHECKF(hak_ctl_set(k.name, k.max + 1) == -1 && errno == ERANGE, "%s: %ld is not ERANGE", k.name, k.max + 1);
    CHECKF(hak_ctl_set(k.name, before) == 0 && hak_ctl_get(k.name, &v) == 0 && v == before, "%s: not restored",
           k.name);
  }
  printf("%d knobs settable at run time, %d read at start-up only\n", run, start);
  CHECKF(run >= 9 && start >= 20, "%d settable, %d not: the table lost its run-time column?", run, start);
}

/* A child of this program with env set (and no other HAKMEM_* variable):
 * its stdout and stderr into out, which then holds "NAME VALUE" for each
 * knob of `names` (space separated) and the library's warnings. */
static void child(const char *const *env, const char *names, char *out, size_t size) {
  extern char **environ;
  char *envp[256];
  size_t n = 0;
  for (char **e = environ; *e && n < 200; e++)
    if (strncmp(*e, "HAKMEM_", 7) != 0) envp[n++] = *e;
  for (; *env && n < 254; env++) envp[n++] = (char *)*env;
  envp[n] = NULL;
  int fd[2];
  CHECK_FATAL(pipe(fd) == 0);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    char *argv[] = { "test_knobs", "child", (char *)names, NULL };
    execve("/proc/self/exe", argv, envp);
    _exit(127);
  }
  close(fd[1]);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < size && (r = read(fd[0], out + got, size - 1 - got)) > 0) got += (size_t)r;
  out[got] = 0;
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited %d: %.180s", st, out);
}

static int child_main(char *names) {
  for (char *n = strtok(names, " "); n; n = strtok(NULL, " ")) {
    long v = -1;
    if (hak_ctl_get(n, &v) != 0) return 1;
    printf("%s %ld\n", n, v);
  }
  return 0;
}

static bool has_line(const char *out, const char *line) {
  size_t n = strlen(line);
  for (const char *p = out; (p = strstr(p, line)) != NULL; p++)
    if ((p == out || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0)) return true;
  return false;
}

static void start_up(void) {
  static char out[8192];
  static const char *const good[] = { "HAKMEM_PROF_SAMPLE=64M", "HAKMEM_PROF_INTERVAL=1G", "HAKMEM_STATS=text",
                                      "HAKMEM_PROFILE=lowmem", "HAKMEM_STATS_FILE=/dev/null", NULL };
  const char *names = "PROF_SAMPLE PROF_INTERVAL STATS PROFILE SS_CACHE";
  child(good, names, out, sizeof out);
  printf("good values:\n%s", out);
  CHECKF(!strstr(out, "warning"), "a good value was warned about: %.180s", out);
  CHECK(has_line(out, "PROF_SAMPLE 67108864"));
  CHECK(has_line(out, "PROF_INTERVAL 1073741824"));
  CHECK(has_line(out, "STATS 1"));
  CHECK(has_line(out, "PROFILE 2"));
  CHECK(has_line(out, "SS_CACHE 4"));  /* lowmem's */
  static const char *const bad[] = { "HAKMEM_PROF_SAMPLE=64Q", "HAKMEM_PROF_INTERVAL=99999999999999999999",
                                     "HAKMEM_STATS=yes", "HAKMEM_PROFILE=turbo", "HAKMEM_CARVE_KB=8K", NULL };
  child(bad, "PROF_SAMPLE PROF_INTERVAL STATS PROFILE SS_CACHE CARVE_KB", out, sizeof out);
  printf("bad values:\n%s", out);
  static const char *const warned[] = {
    "hakmem: warning: HAKMEM_PROFILE=\"turbo\" is not fast, balanced or lowmem; using balanced",
    "hakmem: warning: HAKMEM_STATS=\"yes\" is not 0, 1 or json; using 0",
    "hakmem: warning: HAKMEM_CARVE_KB=\"8K\" is not an integer in [4, 64]; using 16",
    "hakmem: warning: HAKMEM_PROF_SAMPLE=\"64Q\" is not a size (bytes, or with K, M, G or T) in [1, "
    "1099511627776]; using 524288",
    "hakmem: warning: HAKMEM_PROF_INTERVAL=\"99999999999999999999\" is not a size (bytes, or with K, M, G or "
    "T) in [0, 1125899906842624]; using 0",
    "PROF_SAMPLE 524288", "PROF_INTERVAL 0", "STATS 0", "PROFILE 1", "SS_CACHE 256", "CARVE_KB 16",
  };
  for (size_t i = 0; i < sizeof warned / sizeof warned[0]; i++)
    CHECKF(has_line(out, warned[i]), "no line '%s'", warned[i]);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "child") == 0) return child_main(argv[2]);
  if (!hak_is_active()) { printf("SKIP: hakmem is not malloc\n"); return 77; }
  parse();
  settable();
  start_up();
  return check_done("knobs");
}
