/* test_fork_arm — the fork handlers, registered on demand (lock.h).
 *
 * hakmem registers its fork handlers only once the process has a second
 * thread, before the first lock any thread takes from then on. This
 * program counts the registrations: it defines __register_atfork (what
 * pthread_atfork calls), which the dynamic linker binds ahead of libc's,
 * and passes each call on. It makes none itself.
 *
 *  1. one thread: small, mid and big blocks, malloc_trim, a fork whose
 *     child frees the parent's blocks and allocates: nothing registered,
 *     in the parent or the child;
 *  2. a second thread whose first call into hakmem is the free of a big
 *     block (the large tier's lock, no heap): registered by the time that
 *     free returns, once;
 *  3. forks from each thread while the other allocates and frees small and
 *     big blocks: every child frees what it inherited, allocates, starts a
 *     thread of its own and exits 0 (an alarm turns a lock held across the
 *     fork into a SIGALRM death, reported).
 *
 *
 *   test_fork_arm [FORKS]   FORKS: forks of each thread in part 3 (default 40)
 *
 *   test_fork_arm handlers  the program registers handlers of its own while
 *     it has one thread, which malloc and free small to huge blocks in the
 *     prepare, parent and child steps (as glibc's malloc allows: it takes its
 *     locks after the handlers). hakmem's must be registered first, so that
 *     they prepare last and run first in the child: the first registration
 *     counted is not the program's; then forks while a thread allocates. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
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

#define MiB ((size_t)1 << 20)
#define CHILD_TIMEOUT_S 60
#define SLOTS 64

static atomic_int registered;
static void (*first_prepare)(void);  /* the prepare handler registered first */

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso) {
  static int (*next)(void (*)(void), void (*)(void), void (*)(void), void *);
  if (!next) next = (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))dlsym(RTLD_NEXT, "__register_atfork");
  int r = next ? next(prepare, parent, child, dso) : -1;
  /* counted once libc holds it: hakmem's, made from inside the program's
   * call (the next definition is hakmem's), returns first */
  if (atomic_fetch_add(&registered, 1) == 0) first_prepare = prepare;
  return r;
}

static size_t pick_size(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  unsigned r = (unsigned)(*x % 100);
  if (r < 70) return 16 + *x % 1000;
  if (r < 90) return 2000 + *x % 30000;
  return MiB / 4 + *x % (3 * MiB);
}

/* a block holds its size and a fill byte; checked before its free */
static unsigned char *new_block(size_t n, unsigned char v) {
  unsigned char *p = malloc(n);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  memset(p + sizeof n, v, n - sizeof n < 64 ? n - sizeof n : 64);
  p[n - 1] = v;
  return p;
}
static int block_ok(const unsigned char *p, unsigned char v) {
  size_t n;
  memcpy(&n, p, sizeof n);
  return p[sizeof n] == v && p[n - 1] == v;
}

static void *child_thread(void *arg) {
  uint64_t x = (uintptr_t)arg | 1;
  for (int i = 0; i < 2000; i++) {
    unsigned char *p = new_block(pick_size(&x), 0x5a);
    if (!p || !block_ok(p, 0x5a)) return (void *)1;
    free(p);
  }
  return NULL;
}

/* a child's work: what it inherited freed, blocks of every size, a thread */
static int child_main(unsigned char **inherited, int n, unsigned char v, uint64_t seed) {
  alarm(CHILD_TIMEOUT_S);
  for (int i = 0; i < n; i++)
    if (inherited[i]) {
      if (!block_ok(inherited[i], v)) return 2;
      free(inherited[i]);
    }
  uint64_t x = seed | 1;
  for (int i = 0; i < 3000; i++) {
    unsigned char *p = new_block(pick_size(&x), 0x33);
    if (!p || !block_ok(p, 0x33)) return 3;
    free(p);
  }
  pthread_t t;
  void *r = NULL;
  if (pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)seed) != 0 || pthread_join(t, &r) != 0 || r)
    return 4;
  return 0;
}

static int child_status_ok(pid_t pid, const char *who) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return 0;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 1;
  if (WIFSIGNALED(st))
    fprintf(stderr, "%s: child killed by signal %d%s\n", who, WTERMSIG(st),
            WTERMSIG(st) == SIGALRM ? " (a lock held across the fork)" : "");
  else
    fprintf(stderr, "%s: child exited %d\n", who, WEXITSTATUS(st));
  return 0;
}

/* ---- part 2: a thread whose first call is a big block's free ------------ */

static unsigned char *big_for_thread;
static int count_after_free = -1;

static void *first_free(void *arg) {
  (void)arg;
  free(big_for_thread);  /* this thread's first call into hakmem */
  count_after_free = atomic_load(&registered);
  return NULL;
}

/* ---- part 3: forks from both threads ------------------------------------ */

static int forks = 40;
static atomic_int stop, worker_failed;

static void *worker(void *arg) {
  (void)arg;
  uint64_t x = 77;
  unsigned char *slot[SLOTS] = { 0 };
  int done = 0;
  while (!atomic_load(&stop) || done < forks) {
    int i = (int)(x % SLOTS);
    if (slot[i]) {
      if (!block_ok(slot[i], 0x11)) atomic_store(&worker_failed, 1);
      free(slot[i]);
    }
    slot[i] = new_block(pick_size(&x), 0x11);
    if (done < forks && x % 64 == 0) {
      pid_t pid = fork();
      if (pid == 0) _exit(child_main(slot, SLOTS, 0x11, x));
      if (pid < 0 || !child_status_ok(pid, "worker's fork")) atomic_store(&worker_failed, 1);
      done++;
    }
  }
  for (int i = 0; i < SLOTS; i++) free(slot[i]);
  return NULL;
}

/* ---- handlers mode: the program's own handlers allocate ------------------ */

static void churn(unsigned char v) {
  static const size_t sizes[] = { 16, 1000, 5000, 40000, 100000, 300000, MiB, 3 * MiB, 20 * MiB };
  unsigned char *keep[sizeof sizes / sizeof sizes[0]];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) keep[i] = new_block(sizes[i], v);
  unsigned char *many[500];
  for (int i = 0; i < 500; i++) many[i] = new_block(24 + (size_t)(i % 60) * 16, v);
  for (int i = 0; i < 500; i++) {
    if (!many[i] || !block_ok(many[i], v)) atomic_store(&worker_failed, 1);
    free(many[i]);
  }
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (!keep[i] || !block_ok(keep[i], v)) atomic_store(&worker_failed, 1);
    free(keep[i]);
  }
}
static void my_prepare(void) { churn(1); }
static void my_parent(void) { churn(2); }
static void my_child(void) { alarm(CHILD_TIMEOUT_S); churn(3); }
static void *churner(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) churn(4);
  return NULL;
}

static int handlers_mode(void) {
  free(malloc(64));
  CHECK(atomic_load(&registered) == 0);
  CHECK(pthread_atfork(my_prepare, my_parent, my_child) == 0);
  CHECK(atomic_load(&registered) == 2);
  CHECK(first_prepare != NULL && first_prepare != my_prepare);
  printf("fork_arm handlers: %d registrations, hakmem's first: %s\n", atomic_load(&registered),
         first_prepare != my_prepare ? "yes" : "no");
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churner, NULL) == 0);
  for (int f = 0; f < forks; f++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      churn(5);
      _exit(atomic_load(&worker_failed) ? 5 : 0);
    }
    CHECK(child_status_ok(pid, "fork with the program's handlers"));
  }
  atomic_store(&stop, 1);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(atomic_load(&worker_failed) == 0);
  CHECK(atomic_load(&registered) == 2);
  printf("fork_arm handlers: %d forks\n", forks);
  return check_done("fork_arm handlers");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "handlers") == 0) {
    forks = argc > 2 ? atoi(argv[2]) : 20;
    return handlers_mode();
  }
  if (argc > 1) forks = atoi(argv[1]);

  /* 1. one thread */
  uint64_t x = 5;
  unsigned char *mine[SLOTS];
  for (int i = 0; i < SLOTS; i++) mine[i] = new_block(pick_size(&x), 0x22);
  for (int i = 0; i < SLOTS; i += 2) free(mine[i]), mine[i] = NULL;
  malloc_trim(0);
  CHECK(atomic_load(&registered) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int r = child_main(mine, SLOTS, 0x22, 9);
    /* (child_main's own thread registered them in the child: counted after) */
    _exit(r);
  }
  CHECK(child_status_ok(pid, "single-threaded fork"));
  CHECK(atomic_load(&registered) == 0);
  for (int i = 0; i < SLOTS; i++) free(mine[i]);
  printf("fork_arm: one thread: %d registrations\n", atomic_load(&registered));

  /* 2. a second thread's first lock */
  big_for_thread = new_block(2 * MiB, 0x44);
  CHECK(big_for_thread != NULL);
  CHECK(atomic_load(&registered) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, first_free, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(count_after_free == 1);
  printf("fork_arm: after the second thread's first free: %d registration(s)\n", count_after_free);

  /* 3. forks from both threads */
  CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
  unsigned char *slot[SLOTS] = { 0 };
  for (int f = 0; f < forks; f++) {
    for (int k = 0; k < 200; k++) {
      int i = (int)(x % SLOTS);
      if (slot[i]) {
        CHECK(block_ok(slot[i], 0x66));
        free(slot[i]);
      }
      slot[i] = new_block(pick_size(&x), 0x66);
    }
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(child_main(slot, SLOTS, 0x66, x));
    CHECK(child_status_ok(pid, "main's fork"));
  }
  atomic_store(&stop, 1);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(atomic_load(&worker_failed) == 0);
  for (int i = 0; i < SLOTS; i++) free(slot[i]);
  CHECK(atomic_load(&registered) == 1);
  printf("fork_arm: %d forks from each thread, %d registration in all\n", forks, atomic_load(&registered));
  return check_done("fork_arm");
}
