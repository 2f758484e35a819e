/* test_lifecycle — allocation at the edges of a process's and a thread's life:
 *   - a .preinit_array function (runs before every constructor, libhakmem's too)
 *   - a constructor of priority 101 (before the program's other constructors)
 *   - TLS destructors (__cxa_thread_atexit_impl, what C++ thread_local uses),
 *     which run before pthread-key destructors at thread exit, and at exit()
 *     for the main thread
 *   - pthread-key destructors (keys created before and after hakmem's own),
 *     including a destructor that re-arms its key (a second iteration)
 *   - a _Thread_local pointer freed from a key destructor
 *   - atexit handlers and a priority-101 destructor (the last of ours to run)
 *   - dlopen/dlsym/dlerror (they allocate, and dlerror's buffer is freed by
 *     glibc at thread exit)
 *   - blocks allocated by a thread and freed/realloc'd after it exited
 * Failures seen after main returns make the process _exit(1). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern void *__dso_handle;

#define KiB ((size_t)1024)

/* a block whose first word is its size, filled with a byte derived from it */
static void *mk(size_t n) {
  if (n < 16) n = 16;
  unsigned char *p = malloc(n);
  if (!p) return NULL;
  memset(p, (int)(n & 0xff) | 1, n);
  memcpy(p, &n, sizeof n);
  return p;
}
static int ok(const void *q) {
  const unsigned char *p = q;
  size_t n;
  memcpy(&n, p, sizeof n);
  if (n < 16 || n > (64u << 20)) return 0;
  unsigned char v = (unsigned char)((n & 0xff) | 1);
  return p[8] == v && p[n - 1] == v && p[n / 2 + 4] == v;
}
static void rm(void *p, const char *where) {
  if (!p) return;
  CHECKF(ok(p), "%s: block %p corrupted", where, p);
  free(p);
}
/* a short burst of mixed work */
static void churn(int rounds, const char *where) {
  void *b[32] = {0};
  for (int i = 0; i < rounds; i++) {
    int k = i % 32;
    rm(b[k], where);
    size_t n = (size_t)(i * 7919) % (i % 10 == 0 ? 200 * KiB : 2 * KiB) + 16;
    b[k] = mk(n);
    CHECKF(b[k] != NULL, "%s: malloc(%zu)", where, n);
  }
  void *r = realloc(NULL, 10);
  for (size_t n = 20; n < 300 * KiB; n *= 3) r = realloc(r, n);
  CHECKF(r != NULL, "%s: realloc chain", where);
  free(r);
  for (int k = 0; k < 32; k++) rm(b[k], where);
}

/* ---------- before constructors ---------- */
static void *preinit_block;
static int preinit_ran;
static void preinit(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  void *t = malloc(100);
  free(t);
  preinit_block = mk(3000);
  preinit_ran = 1;
}
__attribute__((section(".preinit_array"), used)) static void (*preinit_p)(int, char **, char **) = preinit;

static void *ctor_block;
static int ctor_active = -1;
static pthread_key_t early_key; /* created in the constructor */
static atomic_int early_key_calls, late_key_calls, rearm_calls, tls_dtor_calls;
static atomic_int exit_stage;
static void *exit_blocks[64]; /* allocated by dead threads, freed by atexit */

static void final_verdict(void);

static void early_key_dtor(void *v) {
  /* may run after hakmem's own thread-exit hook */
  rm(v, "early key dtor");
  churn(64, "early key dtor churn");
  atomic_fetch_add(&early_key_calls, 1);
}

static void atexit_first_registered(void) {
  /* registered in the constructor: runs after main's atexit handler */
  CHECK(atomic_load(&exit_stage) == 1);
  churn(200, "atexit (ctor-registered)");
  atomic_store(&exit_stage, 2);
}

__attribute__((constructor(101))) static void early_ctor(void) {
  void *t = calloc(10, 10);
  CHECK(t && ((char *)t)[99] == 0);
  t = realloc(t, 5000);
  free(t);
  ctor_block = mk(40000);
  ctor_active = hak_is_active();
  CHECK(pthread_key_create(&early_key, early_key_dtor) == 0);
  atexit(atexit_first_registered);
  churn(100, "constructor(101)");
}

__attribute__((destructor(101))) static void last_dtor(void) {
  /* the last of this program's destructors */
  churn(100, "destructor(101)");
  final_verdict();
}

/* ---------- thread-exit paths ---------- */
static pthread_key_t late_key, rearm_key;
static _Thread_local void *tls_ptr;
static _Thread_local int tls_rearmed;

static void late_key_dtor(void *v) {
  rm(v, "late key dtor");
  rm(tls_ptr, "_Thread_local block in key dtor");
  tls_ptr = NULL;
  churn(32, "late key dtor churn");
  atomic_fetch_add(&late_key_calls, 1);
}
static void rearm_dtor(void *v) {
  rm(v, "rearm dtor");
  atomic_fetch_add(&rearm_calls, 1);
  if (!tls_rearmed) {
    tls_rearmed = 1;
    pthread_setspecific(rearm_key, mk(777)); /* forces another iteration */
  }
}
static void tls_dtor(void *obj) {
  rm(obj, "TLS dtor");
  churn(32, "TLS dtor churn");
  atomic_fetch_add(&tls_dtor_calls, 1);
}

static void *thread_main(void *arg) {
  int id = (int)(intptr_t)arg;
  pthread_setspecific(early_key, mk(100 + (size_t)id));
  pthread_setspecific(late_key, mk(5000 + (size_t)id));
  pthread_setspecific(rearm_key, mk(64));
  tls_ptr = mk(300);
  __cxa_thread_atexit_impl(tls_dtor, mk(2000), __dso_handle);
  __cxa_thread_atexit_impl(tls_dtor, mk(70000), __dso_handle);
  /* dlerror's buffer is malloc'd in this thread and freed at its exit */
  void *h = dlopen("libhakmem-test-does-not-exist.so", RTLD_NOW);
  CHECK(h == NULL);
  const char *e = dlerror();
  CHECK(e != NULL);
  dlopen("libhakmem-test-does-not-exist-2.so", RTLD_NOW); /* leave an error pending */
  churn(200, "thread");
  /* blocks that outlive this thread */
  void **out = malloc(64 * sizeof *out);
  for (int i = 0; i < 64; i++) out[i] = mk(16 + (size_t)i * 61 + (i % 8 == 0 ? 50000 : 0));
  if (id % 2) pthread_exit(out);
  return out;
}

static pthread_mutex_t det_mu = PTHREAD_MUTEX_INITIALIZER;
static void *det_blocks[16];
static atomic_int det_done;
static void *detached_main(void *arg) {
  int id = (int)(intptr_t)arg;
  void *b = mk(128 + (size_t)id * 1000);
  pthread_mutex_lock(&det_mu);
  det_blocks[id] = b;
  pthread_mutex_unlock(&det_mu);
  pthread_setspecific(late_key, mk(99));
  churn(100, "detached");
  atomic_fetch_add(&det_done, 1);
  return NULL;
}

static void test_dl(void) {
  for (int i = 0; i < 20; i++) {
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK_FATAL(h != NULL);
    double (*cosf_)(double) = (double (*)(double))dlsym(h, "cos");
    CHECK(cosf_ && cosf_(0.0) == 1.0);
    CHECK(dlsym(h, "no_such_symbol_hakmem") == NULL);
    CHECK(dlerror() != NULL);
    CHECK(dlsym(RTLD_DEFAULT, "malloc") != NULL);
    CHECK(dlclose(h) == 0);
    churn(20, "after dlsym");
  }
  /* a library whose constructors allocate (libstdc++'s EH pool) */
  void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
  if (h) {
    churn(50, "after dlopen(libstdc++)");
    dlclose(h);
  } else
    fprintf(stderr, "note: libstdc++.so.6 not found; skipped that dlopen\n");
}

static void late_atexit(void) {
  /* registered in main: runs first at exit, after main's TLS dtors */
  CHECK(atomic_load(&exit_stage) == 0);
  for (int i = 0; i < 64; i++) rm(exit_blocks[i], "atexit: dead thread's block");
  churn(200, "atexit (main-registered)");
  atomic_store(&exit_stage, 1);
}

static void final_verdict(void) {
  CHECKF(atomic_load(&exit_stage) == 2, "exit stage %d", atomic_load(&exit_stage));
  CHECKF(atomic_load(&tls_dtor_calls) == 2 * 16 * 5 + 1, "TLS dtors ran %d times, main's at exit included",
         atomic_load(&tls_dtor_calls));
  if (check_failures()) {
    fprintf(stderr, "test_lifecycle: failures at exit\n");
    check_done("test_lifecycle (exit)");
    fflush(stderr);
    _exit(1);
  }
  fprintf(stderr, "test_lifecycle: exit paths OK\n");
}

int main(void) {
  CHECK(preinit_ran == 1);
  CHECK(preinit_block && ok(preinit_block));
  rm(preinit_block, "preinit block");
  CHECK(ctor_block && ok(ctor_block));
  rm(ctor_block, "ctor block");
  CHECK(ctor_active == 1);
  CHECK(hak_is_active() == 1);

  CHECK(pthread_key_create(&late_key, late_key_dtor) == 0);
  CHECK(pthread_key_create(&rearm_key, rearm_dtor) == 0);
  test_dl();

  enum { T = 16, ROUNDS = 5 };
  void **results[T * ROUNDS];
  int nres = 0;
  for (int r = 0; r < ROUNDS; r++) {
    pthread_t t[T];
    for (int i = 0; i < T; i++)
      CHECK_FATAL(pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < T; i++) {
      void *ret = NULL;
      pthread_join(t[i], &ret);
      results[nres++] = ret;
    }
  }
  CHECKF(atomic_load(&early_key_calls) == T * ROUNDS, "early key dtor ran %d times",
         atomic_load(&early_key_calls));
  CHECKF(atomic_load(&late_key_calls) == T * ROUNDS, "late key dtor ran %d times",
         atomic_load(&late_key_calls));
  CHECKF(atomic_load(&rearm_calls) == 2 * T * ROUNDS, "rearm dtor ran %d times",
         atomic_load(&rearm_calls));
  CHECKF(atomic_load(&tls_dtor_calls) == 2 * T * ROUNDS, "TLS dtor ran %d times",
         atomic_load(&tls_dtor_calls));

  /* blocks of exited threads: realloc some, free the rest, keep some for atexit */
  int kept = 0;
  for (int k = 0; k < nres; k++) {
    void **out = results[k];
    CHECK_FATAL(out);
    for (int i = 0; i < 64; i++) {
      if (k == nres - 1) {
        exit_blocks[kept++] = out[i];
        continue;
      }
      if (i % 3 == 0) {
        CHECK(ok(out[i]));
        size_t n;
        memcpy(&n, out[i], sizeof n);
        unsigned char *q = realloc(out[i], n * 3);
        CHECK_FATAL(q);
        CHECK(q[8] == (unsigned char)((n & 0xff) | 1) && q[n - 1] == q[8]);
        free(q);
      } else
        rm(out[i], "dead thread's block");
    }
    free(out);
  }

  /* detached threads */
  for (int i = 0; i < 16; i++) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    CHECK_FATAL(pthread_create(&t, &a, detached_main, (void *)(intptr_t)i) == 0);
    pthread_attr_destroy(&a);
  }
  while (atomic_load(&det_done) < 16) usleep(1000);
  usleep(20000); /* let them finish exiting; their blocks are ours anyway */
  pthread_mutex_lock(&det_mu);
  for (int i = 0; i < 16; i++) rm(det_blocks[i], "detached thread's block");
  pthread_mutex_unlock(&det_mu);

  /* exit paths: main's TLS dtor (at exit()), atexit, destructors */
  __cxa_thread_atexit_impl(tls_dtor, mk(1234), __dso_handle);
  pthread_setspecific(late_key, mk(4321)); /* main's keys are NOT run at exit */
  atexit(late_atexit);
  churn(500, "main");
  check_done("test_lifecycle (main)");
  return check_failures() ? 1 : 0;
}
