/* check.h — minimal test harness for hakmem's tests.
 *
 * CHECK(cond)            count a failure (file:line + expression) and go on
 * CHECKF(cond, fmt, ...) same, with a printf-style explanation
 * CHECK_FATAL(cond)      count, print and exit(1) at once
 * check_done(name)       print a summary line; returns the process exit code
 * check_exec_self, check_run_self: this program again, with knobs set
 * (and waiting.h: rss_kib, now_ms, sleep_ms, pages_kib)
 *
 * Counters are atomic: CHECK may be used from any thread. Only the first
 * CHECK_MAX_PRINT failures are printed so a broken heap cannot flood the log. */
#ifndef HAKMEM_TESTS_CHECK_H
#define HAKMEM_TESTS_CHECK_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "waiting.h"

#define CHECK_MAX_PRINT 50

#ifdef __cplusplus
#include <atomic>
static std::atomic<long> check_failures_, check_count_;
#define CHK_INC_(v) ((v).fetch_add(1, std::memory_order_relaxed))
#define CHK_LOAD_(v) ((v).load())
#else
#include <stdatomic.h>
static _Atomic long check_failures_;
static _Atomic long check_count_;
#define CHK_INC_(v) atomic_fetch_add_explicit(&(v), 1, memory_order_relaxed)
#define CHK_LOAD_(v) atomic_load(&(v))
#endif

#define CHECK_REPORT_(fmt, ...)                                              \
  do {                                                                       \
    long n_ = CHK_INC_(check_failures_);                         \
    if (n_ < CHECK_MAX_PRINT)                                                \
      fprintf(stderr, "%s:%d: CHECK failed: " fmt "\n", __FILE__, __LINE__,  \
              __VA_ARGS__);                                                  \
  } while (0)

#define CHECK(cond)                                                          \
  do {                                                                       \
    CHK_INC_(check_count_);       \
    if (!(cond)) CHECK_REPORT_("%s", #cond);                                 \
  } while (0)

#define CHECKF(cond, ...)                                                    \
  do {                                                                       \
    CHK_INC_(check_count_);       \
    if (!(cond)) {                                                           \
      char m_[256];                                                          \
      snprintf(m_, sizeof m_, __VA_ARGS__);                                  \
      CHECK_REPORT_("%s (%s)", #cond, m_);                                   \
    }                                                                        \
  } while (0)

#define CHECK_FATAL(cond)                                                    \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: FATAL check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                        \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static inline long check_failures(void) { return CHK_LOAD_(check_failures_); }

/* The mappings of this process: the lines of /proc/self/maps. */
static inline size_t check_map_count(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  size_t n = 0;
  while (f && fgets(line, sizeof line, f)) n++;
  if (f) fclose(f);
  return n;
}

/* vm.max_map_count: how many mappings a process may have (65530 if unreadable). */
static inline size_t check_max_map_count(void) {
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  unsigned long n = 65530;
  if (f) {
    if (fscanf(f, "%lu", &n) != 1) n = 65530;
    fclose(f);
  }
  return n;
}

/* Pages of [p, p + n) resident (mincore, 2 MiB at a time; p page-aligned). */
static inline size_t check_resident_pages(const void *p, size_t n) {
  unsigned char vec[512];
  size_t r = 0;
  for (size_t off = 0; off < n; off += sizeof vec * 4096) {
    size_t len = n - off < sizeof vec * 4096 ? n - off : sizeof vec * 4096;
    CHECKF(mincore((char *)p + off, len, vec) == 0, "mincore(%p, %zu) failed", (const void *)((const char *)p + off), len);
    for (size_t i = 0; i < (len + 4095) / 4096; i++) r += vec[i] & 1;
  }
  return r;
}

/* Whether this process wrote the page at p: present and mapped by it
 * alone (/proc/self/pagemap bits 63 and 56). A page only read maps the
 * shared zero page, which mincore counts and the resident set does not. */
static inline int check_page_written(const void *p) {
  int fd = open("/proc/self/pagemap", O_RDONLY);
  CHECK_FATAL(fd >= 0);
  uint64_t e = 0;
  CHECK_FATAL(pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) == 8);
  close(fd);
  return (e >> 63 & 1) && (e >> 56 & 1);
}

/* Whether the system backs every mapping with huge pages (THP `always`):
 * a test that counts 4 KiB pages then has nothing to count (exit 77). */
static inline int check_thp_always(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char mode[128] = "";
  if (!f) return 0;
  int always = fgets(mode, sizeof mode, f) && strstr(mode, "[always]");
  fclose(f);
  return always;
}

static inline int check_done(const char *name) {
  long f = CHK_LOAD_(check_failures_), c = CHK_LOAD_(check_count_);
  fprintf(stderr, "%s: %ld checks, %ld failed\n", name, c, f);
  return f ? 1 : 0;
}

/* This program again (/proc/self/exe, same argv) with each NAME, VALUE
 * pair of env (NULL-terminated) set: for knobs the library reads before
 * main. check_exec_self replaces this process and returns 1 only when the
 * exec failed; check_run_self runs it in a child and returns the child's
 * wait status (-1 when it could not fork or wait). */
static inline int check_exec_self(char **argv, const char *const *env) {
  for (; env && env[0]; env += 2) setenv(env[0], env[1], 1);
  execv("/proc/self/exe", argv);
  perror("execv /proc/self/exe");
  return 1;
}
static inline int check_run_self(char **argv, const char *const *env) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(check_exec_self(argv, env) ? 127 : 0);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return st;
}

/* Plain builds (not linked to hakmem, run under LD_PRELOAD) find hakmem's
 * API, when it is there, by name. */
#ifdef HK_TEST_PLAIN
#include <dlfcn.h>
static inline int hk_plain_active(void) {
  int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hak_is_active");
  return f ? f() : 0;
}
/* HAKMEM_TEST_EXPECT_ACTIVE=1 (set by preload_programs.sh) makes "hakmem is
 * the process's malloc" a checked fact. */
static inline int hk_plain_expect_active(void) {
  const char *e = getenv("HAKMEM_TEST_EXPECT_ACTIVE");
  return e && e[0] == '1';
}
#endif

#endif
