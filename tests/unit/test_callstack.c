/* The profiler's cached stack walker (src/base/callstack.c) against libgcc's
 * _Unwind_Backtrace, on the frame shapes compilers make: plain frames, frame
 * pointers, alloca (CFA on rbp), realigned stacks (gcc's CFA = *(rbp-8)),
 * deep recursion past the depth limit, a signal handler (given to libgcc),
 * another thread, a coroutine's stack (given to libgcc), and after a
 * library was loaded and unloaded. Each walk is
 * taken twice from one call site, once each way; the two must be equal, and
 * the cached walker must have done the walks it claims (its counts).
 * Linked with libhakmem.a: hk_unwind_with is hidden. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "base/callstack.h"
#include "base/knobs.h"
#include "mem/guarded.h"

#define MAXD 64
static int failures, compared;
static volatile int sink;

static void counts(uint64_t *c, uint64_t *f) { hk_unwind_counts(c, f); }

/* both walks from one call site; expect_cached: the cached one did it */
static __attribute__((noinline, noipa)) void compare(const char *what, int expect_cached) {
  uintptr_t pc[2][MAXD];
  unsigned n[2];
  uint64_t c0, f0, c1, f1;
  counts(&c0, &f0);
  for (int how = 0; how < 2; how++) n[how] = hk_unwind_with(how, pc[how], MAXD);
  counts(&c1, &f1);
  compared++;
  /* this and its caller at least; frame 0 is the call site in
   * here, of which gcc may have made two */
  int bad = n[0] < 2 || n[0] != n[1] || memcmp(pc[0] + 1, pc[1] + 1, (n[0] - 1) * sizeof(uintptr_t)) != 0;
  for (int how = 0; how < 2; how++)
    if (pc[how][0] - (uintptr_t)compare > 2048) bad = 1;
  /* the libgcc walk counts once as a fallback; the cached walk once more
   * when it gave up */
  uint64_t dc = c1 - c0, df = f1 - f0;
  int who_bad = expect_cached ? !(dc == 1 && df == 1) : !(dc == 0 && df == 2);
  if ((bad || who_bad) && ++failures <= 5) {
    fprintf(stderr, "FAIL %s: cached %u frames, libgcc %u; cached walks +%lu, libgcc walks +%lu (expected %s)\n",
            what, n[0], n[1], (unsigned long)dc, (unsigned long)df, expect_cached ? "cached" : "libgcc");
    for (unsigned i = 0; i < 16 && (i < n[0] || i < n[1]); i++) {
      Dl_info d0 = { 0 }, d1 = { 0 };
      if (i < n[0]) dladdr((void *)pc[0][i], &d0);
      if (i < n[1]) dladdr((void *)pc[1][i], &d1);
      fprintf(stderr, "  %2u  %#14lx %-22s  %#14lx %s\n", i, i < n[0] ? (unsigned long)pc[0][i] : 0,
              d0.dli_sname ? d0.dli_sname : "?", i < n[1] ? (unsigned long)pc[1][i] : 0,
              d1.dli_sname ? d1.dli_sname : "?");
    }
  }
}

/* ---- frame shapes ---- */

static __attribute__((noinline, noipa)) void plain3(int k) { compare("plain", 1); sink = k; }
static __attribute__((noinline, noipa)) void plain2(int k) { plain3(k + 1); sink = k; }
static __attribute__((noinline, noipa)) void plain1(int k) { plain2(k + 1); sink = k; }

static __attribute__((noinline, noipa, optimize("no-omit-frame-pointer"))) void fp2(int k) {
  compare("frame pointer", 1);
  sink = k;
}
static __attribute__((noinline, noipa, optimize("no-omit-frame-pointer"))) void fp1(int k) { fp2(k + 1); sink = k; }

/* a frame whose size is known only at run time: its CFA is on rbp */
static __attribute__((noinline, noipa)) void with_alloca(size_t n) {
  char *p = __builtin_alloca(n);
  memset(p, 1, n);
  compare("alloca", 1);
  sink = p[n - 1];
}
static __attribute__((noinline, noipa)) void vla(size_t n) {
  char a[n];
  memset(a, 2, n);
  with_alloca(n * 3 + 40);
  sink = a[n / 2];
}

/* a local aligned beyond 16 bytes: the stack is realigned */
static __attribute__((noinline, noipa)) void aligned_local(int k) {
  char a[128] __attribute__((aligned(64)));
  memset(a, k, sizeof a);
  compare("aligned local", 1);
  sink = a[k & 127];
}
/* realigned with arguments on the stack and a VLA: gcc keeps the incoming
 * stack in a register (DRAP), CFA = *(rbp - 8), rbp at rbp + 0 */
static __attribute__((noinline, noipa)) void realigned(int a, int b, int c, int d, int e, int f, int g, int h,
                                                       int n) {
  char x[64] __attribute__((aligned(64)));
  char y[n];
  memset(x, g + h, sizeof x);
  memset(y, a, (size_t)n);
  aligned_local(b + c + d + e + f);
  compare("realigned", 1);
  sink = x[a & 63] + y[n - 1];
}

/* a frame-pointer frame above it: its CFA needs the rbp the realigned
 * frame restores */
static __attribute__((noinline, noipa, optimize("no-omit-frame-pointer"))) void fp_realigned(int k) {
  realigned(k, 1, 2, 3, 4, 5, 6, 7, 20 + k);
  sink = k;
}

/* deeper than the walk's limit */
static __attribute__((noinline, noipa)) void deep(int k) {
  if (k == 0) compare("deep", 1);
  else deep(k - 1);
  sink = k;
}

/* a signal frame: the cached walker gives the walk to libgcc */
static void on_signal(int sig) { compare("signal handler", 0); sink = sig; }

/* a coroutine on a stack of its own: not the thread's, so libgcc walks */
static ucontext_t main_ctx, co_ctx;
static void co_main(void) { compare("coroutine stack", 0); }

static void *thread_main(void *arg) {
  plain1(1);
  vla(100);
  realigned(3, 1, 2, 3, 4, 5, 6, 7, 50);
  return arg;
}

/* HAKMEM_GUARDED_RATE=1: the sampler's walks (allocation and free
 * stacks) go to libgcc, none through the cached walker, whose rule table
 * a few stacks spread over many pages (guarded.c, capture) */
static int guarded_walks(void) {
  /* (a white-box test: init.c's constructor, which starts the sampler,
   * is not linked in) */
  hk_knobs_init();
  hk_guarded_init();
  uint64_t c0, f0, c1, f1;
  counts(&c0, &f0);
  enum { N = 256 };
  static void *volatile keep[N];
  for (int i = 0; i < N; i++) keep[i] = malloc(64);
  for (int i = 0; i < N; i++) free(keep[i]);
  counts(&c1, &f1);
  if (c1 != c0 || f1 == f0) {
    fprintf(stderr, "FAIL guarded: cached walks +%lu, libgcc walks +%lu (expected 0 and some)\n",
            (unsigned long)(c1 - c0), (unsigned long)(f1 - f0));
    return 1;
  }
  printf("test_callstack guarded: OK (%lu libgcc walks, none cached)\n", (unsigned long)(f1 - f0));
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "guarded") == 0) return guarded_walks();
  plain1(0);
  fp1(0);
  vla(37);
  vla(4000);
  realigned(7, 1, 2, 3, 4, 5, 6, 7, 9);
  fp_realigned(5);
  deep(100);
  struct sigaction sa = { 0 };
  sa.sa_handler = on_signal;
  sigaction(SIGUSR1, &sa, NULL);
  raise(SIGUSR1);
  plain1(0);  /* after the signal: cached again */
  static char co_stack[256 * 1024] __attribute__((aligned(16)));
  getcontext(&co_ctx);
  co_ctx.uc_stack.ss_sp = co_stack;
  co_ctx.uc_stack.ss_size = sizeof co_stack;
  co_ctx.uc_link = &main_ctx;
  makecontext(&co_ctx, co_main, 0);
  swapcontext(&main_ctx, &co_ctx);
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0) {
    fprintf(stderr, "FAIL: thread\n");
    return 1;
  }
  /* a library unloaded: a new generation of rules, the same stacks */
  void *h = dlopen("libpthread.so.0", RTLD_NOW | RTLD_LOCAL);
  void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (z) dlclose(z);
  if (h) dlclose(h);
  plain1(0);
  realigned(1, 1, 2, 3, 4, 5, 6, 7, 300);
  /* the same stacks again: the walks now hit the cache */
  for (int i = 0; i < 100; i++) { plain1(i); vla(i + 1); deep(70); }
  if (failures) {
    fprintf(stderr, "test_callstack: %d of %d walks differ\n", failures, compared);
    return 1;
  }
  printf("test_callstack: OK (%d walks, cached = libgcc)\n", compared);
  return 0;
}
