/* test_guarded — sampled guarded allocations (HAKMEM_GUARDED_RATE, on by
 * default; docs/SECURITY.md). The program runs itself once per case (a new
 * process, a new random seed), reads what the case wrote on stderr and how
 * it ended:
 *   overflow   an off-by-one write past each of many 64-byte blocks, at the
 *              rate in force: reported (allocation stack: a frame in
 *              alloc_site), the process aborted
 *   uaf        a write into each of many freed 64-byte blocks: reported with
 *              the allocation and the free stacks (free_site)
 *   underflow  a byte written before each block (rate 1): found at free
 *   double     a sampled block freed twice (rate 1): reported with its stacks
 *   off        overflow and uaf with HAKMEM_GUARDED_RATE=0: no report, the
 *              program ends normally
 *   chain_*    the program's own SIGSEGV handler (SA_SIGINFO, plain, or
 *              none), installed before hakmem's, still gets its own faults
 *   later      a handler the program installs after hakmem's replaces it:
 *              a fault on a sampled block goes to the program's handler
 *   fork       a fork child frees the parent's sampled blocks, samples its
 *              own, and reports a use after free
 *   thread_uaf a use after free on a thread (its own stacks)
 *   thread     sampled blocks of a thread that exited, freed by another
 *   heap       a first-class heap's blocks are never sampled: its destroy
 *              leaves no sampled block live
 *   nostack    uaf with HAKMEM_GUARDED_STACKS=0, and under lowmem, whose
 *              default that is: reported, aborted, no stack walked (the
 *              report says why). The other cases run with the knob at 1,
 *              whatever profile the suite runs under.
 * The writes into blocks the sampler did not take leave their bytes as they
 * were (a locked OR of 0), so only a sampled block can tell. Run it with
 * HAKMEM_GUARDED_RATE=0 exported and every case that expects a report
 * fails. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "../include/hakmem.h"

static void *volatile sink;

__attribute__((noinline)) static char *alloc_site(void) {
  char *p = malloc(64);
  sink = p;
  return p;
}
__attribute__((noinline)) static void free_site(char *p) {
  free(p);
  sink = p;
}

/* a write of the byte already there: a fault on a guarded page, nothing
 * anywhere else */
static void touch(char *p) { __atomic_fetch_or(p, 0, __ATOMIC_RELAXED); }

static void say(const char *s) { ssize_t w = write(2, s, strlen(s)); (void)w; }

/* allocations enough for the first sample of the class at the rate in
 * force (the first gap is at most twice the rate) */
static long enough(void) {
  long rate = 0;
  if (hak_ctl_get("HAKMEM_GUARDED_RATE", &rate) != 0 || rate <= 0) rate = 100000;
  return 2 * rate + 100000;
}

static char **alloc_many(long n) {
  char **v = mmap(NULL, n * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (v == MAP_FAILED) exit(3);
  for (long i = 0; i < n; i++) v[i] = alloc_site();
  return v;
}

static void overflow_writes(char **v, long n) {
  for (long i = 0; i < n; i++)
    if (((uintptr_t)v[i] + 64) % (2u << 20))  /* (a superslab's last block: its next byte may be unmapped) */
      touch(v[i] + 64);
}

static void uaf(long n) {
  char **v = alloc_many(n);
  for (long i = 0; i < n; i++) free_site(v[i]);
  for (long i = 0; i < n; i++) touch(v[i] + 32);
}

static char *own_page;
static void own_siginfo(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  if ((char *)si->si_addr == own_page) { say("own handler: my page\n"); _exit(42); }
  say("own handler: another address\n");
  _exit(44);
}
static void own_plain(int sig) {
  (void)sig;
  say("own plain handler\n");
  _exit(43);
}

/* sampling started: hakmem's handler is in place, not the program's */
static void sample_some(void) {
  struct sigaction before, after;
  sigaction(SIGSEGV, NULL, &before);
  long n = enough();
  char **v = alloc_many(n);
  for (long i = 0; i < n; i++) free(v[i]);
  sigaction(SIGSEGV, NULL, &after);
  if (after.sa_sigaction == before.sa_sigaction) { say("hakmem installed no handler\n"); _exit(5); }
}

static void *thread_alloc(void *arg) {
  long n = (long)arg;
  return alloc_many(n);
}
static void *thread_uaf(void *arg) {
  uaf((long)arg);
  return NULL;
}

static int child(const char *c) {
  char line[128];
  snprintf(line, sizeof line, "sites %p %p\n", (void *)alloc_site, (void *)free_site);
  say(line);
  long n = enough();
  if (!strcmp(c, "overflow")) {
    char **v = alloc_many(n);
    overflow_writes(v, n);
    for (long i = 0; i < n; i++) free(v[i]);
  } else if (!strcmp(c, "uaf")) {
    uaf(n);
  } else if (!strcmp(c, "underflow")) {
    char *v[20];
    for (int i = 0; i < 20; i++) v[i] = alloc_site();
    for (int i = 0; i < 20; i++)
      if ((uintptr_t)v[i] & 4095) v[i][-1] = 0x11;  /* another block's last byte, or a sampled block's slack */
    for (int i = 0; i < 20; i++) free_site(v[i]);
  } else if (!strcmp(c, "double")) {
    char *v[20];
    for (int i = 0; i < 20; i++) v[i] = alloc_site();
    for (int i = 0; i < 20; i++)
      if ((((uintptr_t)v[i] + 64) & 4095) == 0) {  /* where a sampled block lies */
        free_site(v[i]);
        free_site(v[i]);
        break;
      }
  } else if (!strncmp(c, "chain_", 6)) {
    own_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (!strcmp(c, "chain_siginfo")) {
      sa.sa_sigaction = own_siginfo;
      sa.sa_flags = SA_SIGINFO;
      sigaction(SIGSEGV, &sa, NULL);
    } else if (!strcmp(c, "chain_plain")) {
      sa.sa_handler = own_plain;
      sigaction(SIGSEGV, &sa, NULL);
    }
    sample_some();
    touch(own_page);
    say("own page written?\n");
    return 6;
  } else if (!strcmp(c, "later")) {
    char **v = alloc_many(n);  /* sampled: hakmem's handler is in place */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = own_siginfo;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    overflow_writes(v, n);
  } else if (!strcmp(c, "fork")) {
    char **v = alloc_many(n);
    pid_t pid = fork();
    if (pid == 0) {
      for (long i = 0; i < n; i++) free(v[i]);
      uaf(n);
      _exit(7);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) { say("fork child did not abort\n"); return 8; }
    for (long i = 0; i < n; i++) free(v[i]);
  } else if (!strcmp(c, "thread")) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, thread_alloc, (void *)n);
    pthread_join(t, &r);
    char **v = r;
    for (long i = 0; i < n; i++) {
      if (malloc_usable_size(v[i]) != 64) { say("usable size\n"); return 9; }
      free(v[i]);
    }
  } else if (!strcmp(c, "thread_uaf")) {
    pthread_t t;
    pthread_create(&t, NULL, thread_uaf, (void *)n);
    pthread_join(t, NULL);
  } else if (!strcmp(c, "heap")) {
    hak_heap_t *h = hak_heap_new();
    for (long i = 0; i < n; i++) sink = hak_heap_malloc(h, 64);
    hak_heap_destroy(h);
  } else {
    return 2;
  }
  say("clean\n");
  return 0;
}

/* ---- the parent --------------------------------------------------------- */

static char out[1 << 16];

/* run case c with env (NULL-ended "K=V" list added to ours; "-K" takes K
 * out): its stderr in out, its wait status */
static int run(const char *c, const char *const *env) {
  int fd[2];
  CHECK_FATAL(pipe(fd) == 0);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    for (const char *const *e = env; e && *e; e++) {
      if (**e == '-') unsetenv(*e + 1);
      else putenv((char *)*e);
    }
    char arg[64];
    snprintf(arg, sizeof arg, "child:%s", c);
    execl("/proc/self/exe", "test_guarded", arg, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  size_t n = 0;
  ssize_t r;
  while ((r = read(fd[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)r;
  out[n] = 0;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

/* a frame of a stack in the report that is in fn (its first 256 bytes):
 * the report's "#k 0xADDR" lines after the line holding `after` */
static int frame_in(const char *after, const char *which) {
  void *a = NULL, *f = NULL;
  const char *s = strstr(out, "sites ");
  if (!s || sscanf(s, "sites %p %p", &a, &f) != 2) return 0;
  uintptr_t lo = (uintptr_t)(strcmp(which, "alloc") == 0 ? a : f);
  const char *p = strstr(out, after);
  if (!p) return 0;
  p = strchr(p, '\n');
  while (p && strncmp(p, "\n    #", 6) == 0) {
    unsigned long pc;
    const char *h = strstr(p, " 0x");
    if (h && sscanf(h, " 0x%lx", &pc) == 1 && pc > lo && pc < lo + 256) return 1;
    p = strchr(p + 1, '\n');
  }
  return 0;
}

static int aborted(int st) { return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT; }
static int clean(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "clean\n"); }

#define SHOW() fprintf(stderr, "---- its stderr:\n%s----\n", out)

int main(int argc, char **argv) {
  if (argc > 1 && !strncmp(argv[1], "child:", 6)) return child(argv[1] + 6);
  /* the cases below check the stacks: taken whatever the profile */
  setenv("HAKMEM_GUARDED_STACKS", "1", 1);

  int st = run("overflow", NULL);
  CHECKF(aborted(st), "overflow: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded: heap overflow: write at") != NULL, "overflow: no report");
  CHECKF(strstr(out, "0 bytes past the end of the 64-byte block") != NULL, "overflow: not the byte past a 64-byte block");
  CHECKF(frame_in("the block was allocated by thread", "alloc"), "overflow: no allocation stack through alloc_site");
  if (check_failures_) SHOW();
  long f = check_failures_;

  st = run("uaf", NULL);
  CHECKF(aborted(st), "uaf: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded: use after free: write at") != NULL, "uaf: no report");
  CHECKF(strstr(out, "32 bytes into the 64-byte block") != NULL, "uaf: not 32 bytes into a 64-byte block");
  CHECKF(frame_in("the block was allocated by thread", "alloc"), "uaf: no allocation stack through alloc_site");
  CHECKF(frame_in("and freed by thread", "free"), "uaf: no free stack through free_site");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  static const char *const rate1[] = { "HAKMEM_GUARDED_RATE=1", NULL };
  st = run("underflow", rate1);
  CHECKF(aborted(st), "underflow: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded: heap underflow found at free: the 1 bytes before the block") != NULL,
         "underflow: not found at free");
  CHECKF(frame_in("the block was allocated by thread", "alloc"), "underflow: no allocation stack");
  CHECKF(frame_in("and freed by thread", "free"), "underflow: no free stack");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  /* the block at a page's end is sampled unless a slab block lies there (1
   * in 64 of those): a few runs at most */
  int found = 0;
  for (int i = 0; i < 5 && !found; i++) {
    st = run("double", rate1);
    found = strstr(out, "hakmem: guarded: free(") != NULL;
  }
  CHECKF(found && aborted(st), "double: status %#x", st);
  CHECKF(strstr(out, "block already freed (double free)") != NULL, "double: no report");
  CHECKF(frame_in("and freed by thread", "free"), "double: no free stack");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  static const char *const off[] = { "HAKMEM_GUARDED_RATE=0", NULL };
  for (int k = 0; k < 2; k++) {
    st = run(k ? "uaf" : "overflow", off);
    CHECKF(clean(st), "%s, rate 0: status %#x", k ? "uaf" : "overflow", st);
    CHECKF(strstr(out, "hakmem: guarded") == NULL, "rate 0: a report");
  }
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  st = run("chain_siginfo", NULL);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 42, "chain_siginfo: status %#x", st);
  st = run("chain_plain", NULL);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 43, "chain_plain: status %#x", st);
  st = run("chain_default", NULL);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "chain_default: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded") == NULL, "chain_default: a report");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  st = run("later", NULL);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 44, "later: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded") == NULL, "later: hakmem reported");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  st = run("fork", NULL);
  CHECKF(clean(st), "fork: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded: use after free: write at") != NULL, "fork: the child reported nothing");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  st = run("thread_uaf", NULL);
  CHECKF(aborted(st), "thread_uaf: status %#x", st);
  CHECKF(frame_in("the block was allocated by thread", "alloc"), "thread_uaf: no allocation stack on a thread");
  CHECKF(frame_in("and freed by thread", "free"), "thread_uaf: no free stack on a thread");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  st = run("thread", NULL);
  CHECKF(clean(st), "thread: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded") == NULL, "thread: a report");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  static const char *const heap[] = { "HAKMEM_GUARDED_RATE=100", "HAKMEM_GUARDED_PER_SEC=1000000", "HAKMEM_VERBOSE=1", NULL };
  st = run("heap", heap);
  CHECKF(clean(st), "heap: status %#x", st);
  CHECKF(strstr(out, "hakmem: guarded: ") && strstr(out, " 0 live\n"), "heap: a sampled block live after the destroy");
  if (check_failures_ != f) SHOW();
  f = check_failures_;

  /* no stacks: the knob, then lowmem's default (the knob unset) */
  static const char *const nostack[2][3] = { { "HAKMEM_GUARDED_STACKS=0", NULL, NULL },
                                             { "-HAKMEM_GUARDED_STACKS", "HAKMEM_PROFILE=lowmem", NULL } };
  for (int k = 0; k < 2; k++) {
    const char *how = k ? "lowmem" : "HAKMEM_GUARDED_STACKS=0";
    st = run("uaf", nostack[k]);
    CHECKF(aborted(st), "nostack (%s): status %#x", how, st);
    CHECKF(strstr(out, "hakmem: guarded: use after free: write at") != NULL, "nostack (%s): no report", how);
    CHECKF(strstr(out, "(no stack: HAKMEM_GUARDED_STACKS=0)") != NULL, "nostack (%s): a stack, or no reason", how);
    CHECKF(!frame_in("the block was allocated by thread", "alloc"), "nostack (%s): an allocation stack", how);
  }
  if (check_failures_ != f) SHOW();

  return check_done("test_guarded");
}
