/* test_exit_race — the process exits while other threads are still
 * allocating and freeing (common in real programs: exit() does not stop
 * threads). hakmem's exit path (destructors, the HAKMEM_VERBOSE report) must
 * not pull memory from under them: no crash, no hang, exit status kept.
 *
 * The parent forks ROUNDS children; each starts THREADS busy threads, lets
 * them run briefly and exits with status 7 (via exit() in odd rounds, by
 * returning from a function that calls exit from a thread in even rounds).
 * Any other status (a crash is a signal) fails. An alarm turns a hang into
 * SIGALRM. run_tests.sh runs it with HAKMEM_VERBOSE=1 so that the exit
 * report (which walks allocator state) runs while the threads are busy. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 24
#define THREADS 6

static atomic_int started;

static void *busy(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  void *keep[64] = {0};
  atomic_fetch_add(&started, 1);
  for (unsigned long i = 0;; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned k = (unsigned)(x % 64);
    free(keep[k]);
    size_t n = x % 100 < 90 ? 1 + x % 1024 : x % 100 < 99 ? 1025 + x % 32768 : (1 << 20) + x % (3 << 20);
    keep[k] = malloc(n);
    if (keep[k]) ((volatile char *)keep[k])[n - 1] = 1;
    if (i % 1000 == 0) {
      void *r = realloc(NULL, 100);
      r = realloc(r, 200000);
      free(r);
    }
  }
  return NULL;
}

static void *exiter(void *arg) {
  usleep(5000);
  exit(7); /* exit from a non-main thread while main sleeps */
  return arg;
}

static void child(int round) {
  alarm(30);
  pthread_t t;
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t, NULL, busy, (void *)(uintptr_t)(i + 1 + round * 100)) != 0) _exit(3);
  while (atomic_load(&started) < THREADS) usleep(100);
  usleep(10000);
  if (round % 2) exit(7);
  pthread_create(&t, NULL, exiter, NULL);
  for (;;) pause();
}

int main(void) {
  for (int r = 0; r < ROUNDS; r++) {
    fflush(stderr);
    pid_t pid = fork();
    CHECK_FATAL(pid >= 0);
    if (pid == 0) {
      child(r);
    }
    int st = 0;
    CHECK_FATAL(waitpid(pid, &st, 0) == pid);
    if (WIFSIGNALED(st))
      CHECKF(0, "round %d: child killed by signal %d%s", r, WTERMSIG(st),
             WTERMSIG(st) == SIGALRM ? " (hang at exit)" : "");
    else
      CHECKF(WEXITSTATUS(st) == 7, "round %d: exit status %d, expected 7", r, WEXITSTATUS(st));
  }
  /* and the same directly in this process's own exit, with threads running */
  for (int i = 0; i < THREADS; i++) {
    pthread_t t;
    CHECK_FATAL(pthread_create(&t, NULL, busy, (void *)(uintptr_t)(1000 + i)) == 0);
  }
  while (atomic_load(&started) < THREADS) usleep(100);
  usleep(10000);
  return check_done("test_exit_race");
}
