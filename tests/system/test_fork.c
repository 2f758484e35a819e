/* test_fork — fork() while other threads are allocating.
 *
 * Four worker threads allocate, verify and free continuously (also freeing
 * each other's blocks through a shared array). The main thread forks FORKS
 * times while they run, and one worker forks too. Each child (whose only
 * thread is the one that called fork) frees blocks inherited from the parent,
 * including blocks owned by threads that do not exist in the child, then
 * mallocs/reallocs/frees a lot, runs a new thread that does the same, and
 * exits 0. An alarm() turns a deadlock in the child (a lock held across fork)
 * into a SIGALRM death, which the parent reports. The parent checks each
 * child's status and keeps allocating.
 *
 *   test_fork [OPS]   OPS: each child's operations per round (default 20000;
 *                     the torture configurations pass fewer: there every free
 *                     purges and a child faults it all back, 15 times slower) */
#define _GNU_SOURCE
#include <errno.h>
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
#include "hakmem.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define WORKERS 4
#define FORKS 12
#define SHARED 256
#define CHILD_TIMEOUT_S 60

static int child_ops = 20000;

static atomic_int stop;
static atomic_int worker_fork_done;
static _Atomic(unsigned char *) shared[SHARED]; /* blocks any thread may free */

static size_t pick_size(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  unsigned r = (unsigned)(*x % 1000);
  if (r < 850) return 1 + *x % 1024;
  if (r < 980) return 1025 + *x % (31 * KiB);
  if (r < 998) return 32 * KiB + *x % MiB;
  return 2 * MiB + *x % (4 * MiB);
}

/* A block carries its own size and a fill byte in its first 16 bytes. */
static unsigned char *new_block(size_t n, uint64_t tag) {
  if (n < 32) n = 32;
  unsigned char *p = malloc(n);
  if (!p) return NULL;
  unsigned char v = (unsigned char)(tag * 131 + 7);
  memcpy(p, &n, sizeof n);
  p[8] = v;
  memset(p + 16, v, n - 16);
  return p;
}
static int block_ok(const unsigned char *p) {
  size_t n;
  memcpy(&n, p, sizeof n);
  if (n < 32 || n > 64 * MiB) return 0;
  unsigned char v = p[8];
  return p[16] == v && p[n - 1] == v && p[16 + (n - 16) / 2] == v;
}
static void drop_block(unsigned char *p, const char *who) {
  if (!p) return;
  CHECKF(block_ok(p), "%s: block %p corrupted", who, (void *)p);
  free(p);
}

/* The child's workload: heavy allocation from one thread. */
static int child_work(uint64_t seed) {
  enum { N = 512 };
  unsigned char *b[N] = {0};
  uint64_t x = seed | 1;
  int bad = 0;
  for (int op = 0; op < child_ops; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int i = (int)(x % N);
    if (b[i] && op % 5 == 0) {
      /* realloc: grow or shrink, contents of the head kept */
      size_t old;
      memcpy(&old, b[i], sizeof old);
      size_t n = pick_size(&x);
      if (n < 32) n = 32;
      unsigned char v = b[i][8];
      unsigned char *q = realloc(b[i], n);
      if (!q) { bad++; continue; }
      size_t keep = old < n ? old : n;
      if (q[16] != v || q[keep - 1] != v) bad++;
      memcpy(q, &n, sizeof n);
      memset(q + 16, v, n - 16);
      b[i] = q;
    } else {
      if (b[i] && !block_ok(b[i])) bad++;
      free(b[i]);
      b[i] = new_block(pick_size(&x), x);
      if (!b[i]) bad++;
    }
  }
  for (int i = 0; i < N; i++) {
    if (b[i] && !block_ok(b[i])) bad++;
    free(b[i]);
  }
  return bad;
}

static void *child_thread(void *arg) {
  return (void *)(intptr_t)child_work((uint64_t)(uintptr_t)arg);
}

/* Runs in the child: returns the exit status. */
static int child_main(uint64_t seed, unsigned char **inherited, int ninh, int grandchild) {
  alarm(CHILD_TIMEOUT_S);
  int bad = 0;
  /* inherited blocks: the parent's, and those of threads absent here */
  for (int i = 0; i < ninh; i++) {
    if (inherited[i] && !block_ok(inherited[i])) bad++;
    free(inherited[i]);
  }
  for (int i = 0; i < SHARED; i++) {
    unsigned char *p = atomic_exchange(&shared[i], NULL);
    if (p && !block_ok(p)) bad++;
    free(p);
  }
  if (hak_is_active() != 1) bad++;
  if (grandchild) {
    /* a grandchild: fork again from the forked process */
    pid_t g = fork();
    if (g == 0) _exit(child_work(seed + 5) ? 1 : 0);
    int st = 0;
    if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "test_fork: grandchild failed (status %#x)\n", st);
      bad++;
    }
  }
  bad += child_work(seed);
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)(seed * 3 + 1)) != 0) return 3;
  void *r;
  pthread_join(t, &r);
  bad += (int)(intptr_t)r;
  bad += child_work(seed + 99); /* after the thread exited */
  if (bad) {
    fprintf(stderr, "test_fork: child %d saw %d bad blocks\n", (int)getpid(), bad);
    return 1;
  }
  return 0; /* exit(), not _exit(): atexit and the allocator's exit path run */
}

static void check_child(pid_t pid, const char *who) {
  int st = 0;
  pid_t r;
  do r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  CHECKF(r == pid, "%s: waitpid failed", who);
  if (WIFSIGNALED(st))
    CHECKF(0, "%s: child killed by signal %d%s", who, WTERMSIG(st),
           WTERMSIG(st) == SIGALRM ? " (deadlock after fork?)" : "");
  else
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child exit status %d", who,
           WEXITSTATUS(st));
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t x = 0x1234567ull * (uint64_t)(id + 1);
  unsigned char *own[64] = {0};
  long iter = 0;
  while (!atomic_load(&stop)) {
    iter++;
    int i = (int)(iter % 64);
    drop_block(own[i], "worker own");
    own[i] = new_block(pick_size(&x), x);
    CHECK(own[i] != NULL);
    /* trade with the shared array: frees blocks of other threads */
    int s = (int)(x % SHARED);
    unsigned char *nb = new_block(1 + x % 2000, x >> 3);
    unsigned char *old = atomic_exchange(&shared[s], nb);
    drop_block(old, "worker shared");
    if (id == 0 && iter == 2000 && !atomic_load(&worker_fork_done)) {
      /* fork from a thread that is not main */
      pid_t pid = fork();
      if (pid == 0) exit(child_main(x, own, 64, 1));
      CHECK(pid > 0);
      if (pid > 0) check_child(pid, "fork from worker");
      atomic_store(&worker_fork_done, 1);
    }
  }
  for (int i = 0; i < 64; i++) drop_block(own[i], "worker exit");
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) child_ops = atoi(argv[1]);
  CHECK_FATAL(child_ops > 0);
  CHECK(hak_is_active() == 1);
  pthread_t t[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    CHECK_FATAL(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);

  unsigned char *mine[128] = {0};
  uint64_t x = 42;
  for (int f = 0; f < FORKS; f++) {
    /* parent keeps allocating between forks */
    for (int k = 0; k < 3000; k++) {
      int i = (int)(x % 128);
      drop_block(mine[i], "parent");
      mine[i] = new_block(pick_size(&x), x);
      CHECK(mine[i] != NULL);
    }
    pid_t pid = fork();
    CHECK_FATAL(pid >= 0);
    if (pid == 0) exit(child_main(x + (uint64_t)f, mine, 128, f % 3 == 0));
    /* allocate while the child runs, then reap it */
    for (int k = 0; k < 2000; k++) {
      int i = (int)(x % 128);
      drop_block(mine[i], "parent (child running)");
      mine[i] = new_block(pick_size(&x), x);
    }
    char who[64];
    snprintf(who, sizeof who, "fork %d", f);
    check_child(pid, who);
  }
  /* let the worker's own fork happen if it has not yet */
  while (!atomic_load(&worker_fork_done)) usleep(1000);
  atomic_store(&stop, 1);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 128; i++) drop_block(mine[i], "parent end");
  for (int i = 0; i < SHARED; i++) drop_block(atomic_exchange(&shared[i], NULL), "shared end");
  /* after all that, the parent still works */
  CHECK(child_work(7) == 0);
  return check_done("test_fork");
}
