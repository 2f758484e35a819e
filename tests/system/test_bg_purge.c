/* test_bg_purge — the background purge thread (HAKMEM_BACKGROUND_PURGE=1)
 * gives memory back while the program sleeps.
 *
 *   test_bg_purge rss     main allocates 100 MiB (1 MiB, 8 KiB and 100 B
 *                         blocks, a third each), touches it, frees it all
 *                         and sleeps: RSS must fall to within SLACK of the
 *                         baseline. Polled up to 30 s (a hang guard, not a
 *                         speed requirement); fails if it never does.
 *                         With "off" (knob unset) it only prints what it
 *                         sees (the comparison of docs/ARCHITECTURE.md).
 *   test_bg_purge threads the same with the memory allocated and freed by 4
 *                         threads that then sleep (their heaps stay live).
 *   test_bg_purge fork    the thread runs in the parent (exactly one); it
 *                         is not copied into a fork child, where a new one
 *                         is started when the knob is on (exactly one; none
 *                         when off), and that one purges the child's memory.
 *   test_bg_purge trace   prints RSS every 100 ms for 5 s after the frees
 *                         (for measurements; checks nothing).
 * Exit with the thread running: the destructor stops it (every mode). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"
#include "block_set.h"
#include "purge_threads.h"

#define SLACK_KIB (24 * 1024)   /* of the 100 MiB touched, at most this may stay */


/* mib in all: a third each of 1 MiB, 8 KiB and 100 B blocks */
static set_t alloc_thirds(size_t mib) { return alloc_set(mib / 3, mib / 3, mib - 2 * (mib / 3)); }

/* Poll up to 30 s for RSS to fall under limit; the time it took, or -1. */
static long wait_rss_below(size_t limit_kib) {
  for (long ms = 0; ms <= 30000; ms += 100) {
    if (rss_kib() < limit_kib) return ms;
    sleep_ms(100);
  }
  return -1;
}

/* the thread from start-up: HAKMEM_BACKGROUND_PURGE=1 or its other
 * spelling, on (auto, the default, starts none in this small program) */
static int knob_on(void) {
  const char *v = getenv("HAKMEM_BACKGROUND_PURGE");
  return v && (strcmp(v, "1") == 0 || strcmp(v, "on") == 0);
}

static void mode_rss(const char *mode) {
  size_t base = rss_kib();
  set_t s = alloc_thirds(100);
  size_t full = rss_kib();
  free_set(&s);
  size_t freed = rss_kib();
  printf("%s: baseline %zu KiB, allocated %zu KiB, after free %zu KiB\n", mode, base, full, freed);
  CHECKF(full > base + 90 * 1024, "the 100 MiB were not touched? %zu -> %zu KiB", base, full);
  if (strcmp(mode, "trace") == 0) {
    for (long ms = 0; ms <= 5000; ms += 100) {
      printf("t=%ld ms rss=%zu KiB\n", ms, (size_t)rss_kib());
      sleep_ms(100);
    }
    return;
  }
  if (!knob_on()) {
    sleep_ms(3000);
    printf("%s: knob off, RSS after 3 s asleep: %zu KiB\n", mode, (size_t)rss_kib());
    return;
  }
  long ms = wait_rss_below(base + SLACK_KIB);
  printf("%s: RSS %zu KiB after %ld ms asleep\n", mode, (size_t)rss_kib(), ms);
  CHECKF(ms >= 0, "RSS never fell below %zu KiB (now %zu KiB)", base + SLACK_KIB, (size_t)rss_kib());
}

static pthread_barrier_t bar;
static void *worker(void *arg) {
  set_t s = alloc_thirds(25);
  free_set(&s);
  pthread_barrier_wait(&bar);   /* all freed */
  pthread_barrier_wait(&bar);   /* main has measured: exit */
  return arg;
}

static void mode_threads(void) {
  size_t base = rss_kib();
  pthread_t t[4];
  pthread_barrier_init(&bar, NULL, 5);
  for (int i = 0; i < 4; i++) CHECK_FATAL(pthread_create(&t[i], NULL, worker, NULL) == 0);
  pthread_barrier_wait(&bar);
  printf("threads: baseline %zu KiB, after the frees %zu KiB\n", base, (size_t)rss_kib());
  if (knob_on()) {
    long ms = wait_rss_below(base + SLACK_KIB);
    printf("threads: RSS %zu KiB after %ld ms asleep\n", (size_t)rss_kib(), ms);
    CHECKF(ms >= 0, "RSS never fell below %zu KiB (now %zu KiB)", base + SLACK_KIB, (size_t)rss_kib());
  }
  pthread_barrier_wait(&bar);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

static void mode_fork(void) {
  int want = knob_on();
  long v = -1;
  CHECK(hak_ctl_get("HAKMEM_BACKGROUND_PURGE", &v) == 0 && v == want);
  CHECKF(purge_threads() == want, "parent: %d purge threads, want %d", purge_threads(), want);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  if (pid == 0) {
    /* the parent's thread is not here; ours was started by the fork handler */
    int n = purge_threads();
    if (n != want) { fprintf(stderr, "child: %d purge threads, want %d\n", n, want); _exit(2); }
    long cv = -1;
    if (hak_ctl_get("BACKGROUND_PURGE", &cv) != 0 || cv != want) _exit(3);
    if (want) {
      size_t base = rss_kib();
      set_t s = alloc_thirds(60);
      free_set(&s);
      if (wait_rss_below(base + SLACK_KIB) < 0) {
        fprintf(stderr, "child: RSS never fell below %zu KiB (now %zu)\n", base + SLACK_KIB, (size_t)rss_kib());
        _exit(4);
      }
    }
    exit(0);  /* through the destructor: stops the child's thread */
  }
  int st = 0;
  CHECK_FATAL(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
  CHECKF(purge_threads() == want, "parent after fork: %d purge threads", purge_threads());
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "rss";
  if (!hak_is_active()) { printf("SKIP: hakmem is not malloc\n"); return 77; }
  /* the purge thread releases another thread's emptied slabs only when it
   * can see that thread blocked in a system call (/proc/.../syscall) */
  char sc[64];
  int fd = open("/proc/thread-self/syscall", O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, sc, sizeof sc) : -1;
  if (fd >= 0) close(fd);
  if (got <= 0 && strcmp(mode, "fork") != 0) {
    printf("SKIP: /proc/thread-self/syscall is not readable here\n");
    return 77;
  }
  if (strcmp(mode, "rss") == 0 || strcmp(mode, "trace") == 0) mode_rss(mode);
  else if (strcmp(mode, "threads") == 0) mode_threads();
  else if (strcmp(mode, "fork") == 0) mode_fork();
  else { fprintf(stderr, "usage: test_bg_purge rss|threads|fork|trace\n"); return 2; }
  return check_done(mode);
}
