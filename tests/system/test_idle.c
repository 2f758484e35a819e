/* Memory over time (issue 61): what a program freed goes back while it is
 * idle, by default, whether it sleeps or keeps making a few allocations.
 *
 *   test_idle sleep SIZE    fill FILL_MB (env, default 256) with SIZE-byte
 *                           blocks, free all but the first thousandth, then
 *                           sleep, calling nothing: RSS must come down to
 *                           its start + the bytes still live + 32 MiB
 *   test_idle light SIZE    the same, making one malloc(64)/free every 10 ms
 *   test_idle thread SIZE   a thread fills and frees, then exits; main sleeps
 *   test_idle handoff SIZE  a thread fills and exits; main frees, then
 *                           sleeps: the blocks went back to superslabs no
 *                           thread owns or adopts
 *   test_idle loader SIZE   main fills; a thread frees, then exits; main
 *                           sleeps: the blocks wait on main's remote lists
 *   test_idle loader_light SIZE  the same, making light's mallocs
 *   test_idle loader_late SIZE   loader's, where the resident set passes
 *                           the purge thread's mark only after hakmem's
 *                           last growth (run under lowmem, FILL_MB=4)
 *   test_idle fork SIZE     after the frees, fork: the child's RSS comes
 *                           down too (its purge thread, started again by the
 *                           fork handler), then the parent's
 *   test_idle fork_first SIZE  a fork before anything (one thread: no fork
 *                           handler ran); the child fills, frees and sleeps:
 *                           its purge thread finds main by the child's id
 *   test_idle late SIZE     sleep's, with every block written only after
 *                           all were allocated (a table of buffers filled
 *                           later): the memory was resident only when
 *                           the frees began
 *   test_idle small         a program that holds a few MiB: no purge thread
 *                           (HAKMEM_BACKGROUND_PURGE=auto starts none)
 *   test_idle sparse        a program that maps 256 MiB of big blocks and
 *                           touches a page of each: no purge thread either
 *   test_idle off SIZE      HAKMEM_BACKGROUND_PURGE=off: no thread, and the
 *                           memory stays (the check can fail)
 *   test_idle scatter SIZE  sleep's, keeping one block in a hundred (most
 *                           slabs keep some): RSS must come down to its
 *                           start + the table + the pages the kept blocks
 *                           touch + 32 MiB (HAKMEM_PARK_IDLE)
 *   test_idle scatter_light SIZE  the same, making light's mallocs
 *   test_idle scatter_off SIZE    HAKMEM_PARK_IDLE=0: the memory stays
 *   test_idle scatter_thread SIZE thread's, keeping one block in a hundred:
 *                           the exited thread's abandoned superslabs are
 *                           parked by the purge thread
 *   test_idle scatter_heap SIZE   scatter's, with the blocks of a first-class
 *                           heap (hak_heap_malloc; free); scatter_heap_off:
 *                           with HAKMEM_PARK_IDLE=0 they stay
 *   test_idle MODE_busy SIZE  MODE's (sleep, light, scatter, loader; busy
 *                           alone: sleep's), main computing where it
 *                           would sleep: never blocked, so the purge
 *                           thread's proof is main's CPU time (bg.c)
 *
 * LOAD_PROCS=N (env): the process is pinned to one CPU, where N children
 * spin while it waits (a loaded machine: the owner and the purge thread
 * each get a share of the CPU, and are taken off it for time slices).
 *
 * SLACK_MB (env) replaces the 32 MiB. RSS is polled every 50 ms; the wait
 * is bounded by the purge delay + 10 s (HAKMEM_PURGE_DELAY_MS as hakmem
 * reports it; GUARD_MS, env, replaces it), a hang guard, not a speed
 * requirement: the time it took is printed (bench/bench_idle measures it).
 * Every kept block's bytes are checked at the end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../include/hakmem.h"
#include "purge_threads.h"
#include "waiting.h"

static long purge_delay_ms(void) {
  long v = 1000;
  if (hak_ctl_get("HAKMEM_PURGE_DELAY_MS", &v) != 0) v = 1000;
  return v;
}

typedef struct {
  bool late;  /* written after all were allocated */
  bool scatter;  /* keep one block in a hundred, spread over the heap */
  size_t size, n, kept;
  unsigned char **blocks;
  size_t live;
  hak_heap_t *heap;  /* scatter_heap: the blocks come from a first-class heap */
} fill_t;

/* fill with blocks of f->size, write them, free all but the first one in
 * a thousand (a program's long-lived data, allocated first). Survivors
 * scattered one per slab would pin every slab they sit in: that is
 * fragmentation, which no purge of free slabs returns (bench_idle's
 * KEEP_PERMILLE measures it). */
static void fill(fill_t *f) {
  size_t total = (size_t)(getenv("FILL_MB") ? atoi(getenv("FILL_MB")) : 256) << 20;
  f->n = total / f->size;
  f->blocks = calloc(f->n, sizeof *f->blocks);
  if (!f->blocks) { printf("FAIL: no memory for the block table\n"); exit(1); }
  for (size_t i = 0; i < f->n; i++) {
    f->blocks[i] = f->heap ? hak_heap_malloc(f->heap, f->size) : malloc(f->size);
    if (!f->blocks[i]) { printf("FAIL: malloc(%zu) failed at block %zu\n", f->size, i); exit(1); }
    if (!f->late) memset(f->blocks[i], (int)(i & 0xff), f->size);
  }
  if (f->late)
    for (size_t i = 0; i < f->n; i++) memset(f->blocks[i], (int)(i & 0xff), f->size);
}

/* scatter: the pages the kept blocks touch, in bytes: what no allocator
 * that keeps blocks where they are can give back */
static size_t kept_pages(const fill_t *f) {
  size_t cap = f->kept * (f->size / 4096 + 2), n = 0;
  uintptr_t *pg = malloc(cap * sizeof *pg);
  if (!pg) { printf("FAIL: no memory for the page table\n"); exit(1); }
  for (size_t i = 0; i < f->n; i++)
    if (f->blocks[i]) pages_add(pg, &n, cap, f->blocks[i], f->size);
  size_t kib = pages_kib(pg, n);
  free(pg);
  return kib << 10;
}

static void free_most(fill_t *f) {
  f->kept = 0;
  f->live = f->n * sizeof *f->blocks;
  for (size_t i = 0; i < f->n; i++) {
    if (f->scatter ? i % 100 == 0 : i < f->n / 1000) { f->kept++; f->live += f->size; continue; }
    free(f->blocks[i]);
    f->blocks[i] = NULL;
  }
  if (f->scatter) f->live = f->n * sizeof *f->blocks + kept_pages(f);
}

static void fill_and_free(fill_t *f) {
  fill(f);
  free_most(f);
}

static int check_kept(const fill_t *f) {
  for (size_t i = 0; i < f->n; i++) {
    if (!f->blocks[i]) continue;
    for (size_t k = 0; k < f->size; k += 61)
      if (f->blocks[i][k] != (unsigned char)(i & 0xff)) {
        printf("FAIL: kept block %zu corrupted at byte %zu\n", i, k);
        return 1;
      }
    free(f->blocks[i]);
  }
  free(f->blocks);
  return 0;
}

/* wait, sleeping (light: with one malloc/free every 10 ms), until RSS is
 * within base + live + 32 MiB (SLACK_MB); the ms it took, or -1 past the guard */
/* MODE_busy: the main thread never blocks while it waits. It computes
 * (light: with a malloc(64)/free every 100 us, its fast path) and reads
 * RSS from /proc (no wait in the kernel):
 * its heap's slabs go back only by the purge thread's proof from its CPU
 * time (src/policy/bg.c) */
static int busy_mode;
static void spin_ms(uint64_t ms, bool light) {
  for (uint64_t t0 = now_ms(); now_ms() - t0 < ms;) {
    spin_us(100);
    if (light) {
      volatile unsigned char *q = malloc(64);
      if (q) { q[0] = 1; q[63] = 2; }
      free((void *)q);
    }
  }
}
static long wait_returned(const char *who, size_t base, size_t live, bool light) {
  size_t slack = (size_t)(getenv("SLACK_MB") ? atoi(getenv("SLACK_MB")) : 32) << 20;
  size_t goal = base + live + slack;
  uint64_t t0 = now_ms(), guard = (uint64_t)purge_delay_ms() + 10000;
  if (getenv("GUARD_MS")) guard = (uint64_t)atol(getenv("GUARD_MS"));
  for (;;) {
    size_t rss = ((size_t)rss_kib() << 10);
    uint64_t t = now_ms() - t0;
    if (rss <= goal) {
      printf("%s: RSS %zu KiB within %zu KiB (start %zu + live %zu + %zu MiB) after %llu ms\n", who,
             rss >> 10, goal >> 10, base >> 10, live >> 10, slack >> 20, (unsigned long long)t);
      return (long)t;
    }
    if (t > guard) {
      printf("%s: RSS %zu KiB still over %zu KiB (start %zu + live %zu + %zu MiB) after %llu ms\n", who,
             rss >> 10, goal >> 10, base >> 10, live >> 10, slack >> 20, (unsigned long long)t);
      return -1;
    }
    if (busy_mode) {
      spin_ms(50, light);
    } else if (light) {
      for (int i = 0; i < 5; i++) {
        volatile unsigned char *q = malloc(64);
        if (q) { q[0] = 1; q[63] = 2; }
        free((void *)q);
        sleep_ms(10);
      }
    } else {
      sleep_ms(50);
    }
  }
}

/* LOAD_PROCS: children forked at start-up (a small process to copy),
 * pinned with us to our CPU; each waits for a byte on the pipe, then
 * spins until killed */
static pid_t load_pid[16];
static int load_n, load_pipe[2];
static void load_prepare(void) {
  load_n = getenv("LOAD_PROCS") ? atoi(getenv("LOAD_PROCS")) : 0;
  if (load_n <= 0) return;
  if (load_n > 16) load_n = 16;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0 || pipe(load_pipe) != 0) {
    printf("FAIL: LOAD_PROCS: cannot pin or make a pipe\n");
    exit(1);
  }
  pid_t parent = getpid();
  for (int i = 0; i < load_n; i++) {
    load_pid[i] = fork();
    if (load_pid[i] < 0) { printf("FAIL: LOAD_PROCS: fork\n"); exit(1); }
    if (load_pid[i] == 0) {
      /* they die with us, whatever way we end (a FAIL's exit too) */
      char b;
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      close(load_pipe[1]);
      if (read(load_pipe[0], &b, 1) != 1) _exit(0);
      for (volatile unsigned long x = 0;; x++) {
      }
    }
  }
}
static void load_start(void) {
  for (int i = 0; i < load_n; i++)
    if (write(load_pipe[1], "x", 1) != 1) { printf("FAIL: LOAD_PROCS: pipe\n"); exit(1); }
  if (load_n) printf("%d spinning processes beside us on CPU %d\n", load_n, sched_getcpu());
}
static void load_stop(void) {
  for (int i = 0; i < load_n; i++) {
    kill(load_pid[i], SIGKILL);
    waitpid(load_pid[i], NULL, 0);
  }
  load_n = 0;
}

static void *thread_fill(void *arg) {
  fill_and_free(arg);
  return NULL;
}

static void *thread_fill_only(void *arg) {
  fill(arg);
  return NULL;
}

static void *thread_free_most(void *arg) {
  free_most(arg);
  return NULL;
}

/* loader_late's worker: takes its heap's memory first (a growth while the
 * resident set is small), waits while main writes memory of its own,
 * frees main's blocks, then keeps to its own small churn for 300 ms,
 * whose slow paths strike the purge clock */
static pthread_barrier_t late_bar;
static void *thread_free_churn(void *arg) {
  free(malloc(64));
  pthread_barrier_wait(&late_bar);
  pthread_barrier_wait(&late_bar);
  free_most(arg);
  uint64_t t0 = now_ms();
  static void *q[4096];  /* four slabs of 64-byte blocks: slow paths */
  while (now_ms() - t0 < 300) {
    for (int i = 0; i < 4096; i++) {
      q[i] = malloc(64);
      if (q[i]) memset(q[i], 7, 64);
    }
    for (int i = 4095; i >= 0; i--) free(q[i]);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "sleep";
  /* MODE_busy: the waits spin instead of sleeping (busy: sleep's) */
  static char stem[32];
  size_t ml = strlen(mode);
  if (strcmp(mode, "busy") == 0) mode = "sleep_busy", ml = strlen(mode);
  if (ml > 5 && ml < sizeof stem && strcmp(mode + ml - 5, "_busy") == 0) {
    memcpy(stem, mode, ml - 5);
    mode = stem;
    busy_mode = 1;
  }
  size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 120;
  if (size == 0) size = 1;
  setvbuf(stdout, NULL, _IONBF, 0);
  load_prepare();
  hak_stats_read(NULL, 0);  /* hakmem started (its knobs read) before the base reading */
  size_t base = ((size_t)rss_kib() << 10);
  fill_t f = { .size = size };

  if (strcmp(mode, "small") == 0) {
    void *p[256];
    for (int r = 0; r < 20; r++) {
      for (int i = 0; i < 256; i++) p[i] = malloc((size_t)(i + 1) * 64);
      for (int i = 0; i < 256; i++) free(p[i]);
    }
    sleep_ms(200);
    int n = purge_threads();
    printf("small: %d purge threads\n", n);
    if (n != 0) { printf("FAIL: a program that held a few MiB has a purge thread\n"); return 1; }
    printf("test_idle small: 1 passed, 0 failed\n");
    return 0;
  }
  if (strcmp(mode, "sparse") == 0) {
    /* 8 blocks of 32 MiB at a time, a page of each written: 256 MiB of
     * address space, a few MiB resident */
    for (int r = 0; r < 4; r++) {
      unsigned char *p[8];
      for (int i = 0; i < 8; i++) {
        p[i] = malloc((size_t)32 << 20);
        if (!p[i]) { printf("FAIL: malloc(32 MiB) failed\n"); return 1; }
        p[i][(size_t)i << 12] = (unsigned char)i;
      }
      for (int i = 0; i < 8; i++) free(p[i]);
    }
    sleep_ms(200);
    int n = purge_threads();
    printf("sparse: %d purge threads, RSS %ld KiB\n", n, rss_kib());
    if (n != 0) { printf("FAIL: a program that touched a few MiB of big blocks has a purge thread\n"); return 1; }
    printf("test_idle sparse: 1 passed, 0 failed\n");
    return 0;
  }
  f.late = strcmp(mode, "late") == 0;
  if (f.late) mode = "sleep";
  /* scatter: one block in a hundred kept, so that most slabs keep a
   * block or more; the goal counts the pages they touch as live: the free
   * pages among them must go back (parked by the purge thread) */
  f.scatter = strncmp(mode, "scatter", 7) == 0;
  if (strcmp(mode, "scatter") == 0) mode = "sleep";
  if (strcmp(mode, "scatter_light") == 0) mode = "light";
  if (strcmp(mode, "scatter_thread") == 0) mode = "thread";
  if (strcmp(mode, "scatter_heap") == 0 || strcmp(mode, "scatter_heap_off") == 0) {
    /* a first-class heap's blocks (hak_heap_malloc), freed by free():
     * every free is a remote one, and the heap's calls take its lock */
    f.heap = hak_heap_new();
    if (!f.heap) { printf("FAIL: hak_heap_new\n"); return 1; }
    mode = strcmp(mode, "scatter_heap") == 0 ? "sleep" : "scatter_off";
  }
  if (strcmp(mode, "fork_first") == 0) {
    /* a fork while the program has one thread: no fork handler runs
     * (src/base/lock.h). The child then goes on as sleep does; its purge
     * thread must know main's heap by the child's kernel id, not the
     * parent's (which any later thread may come to have) */
    free(malloc(64));  /* main's heap, made in the parent */
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid > 0) {
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("FAIL: the child of a one-thread fork kept its memory (status %d)\n", st);
        return 1;
      }
      printf("test_idle fork_first: 1 passed, 0 failed\n");
      return 0;
    }
    mode = "sleep";
  }
  if (strcmp(mode, "thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_fill, &f) != 0 || pthread_join(t, NULL) != 0) return 1;
  } else if (strcmp(mode, "handoff") == 0) {
    /* the blocks outlive their thread: main frees them into superslabs
     * nobody owns, and nobody adopts (main calls nothing) */
    pthread_t t;
    if (pthread_create(&t, NULL, thread_fill_only, &f) != 0 || pthread_join(t, NULL) != 0) return 1;
    free_most(&f);
  } else if (strcmp(mode, "loader_late") == 0) {
    /* the resident set passes the purge thread's mark only after hakmem's
     * last growth (memory the program maps itself, written late): the
     * clock of a thread that keeps allocating must look again. A big
     * block, never written, makes what hakmem holds pass the mark early. */
    size_t big_size = (size_t)12 << 20, own_size = (size_t)16 << 20;
    void *big = malloc(big_size);
    if (!big) return 1;
    fill(&f);
    pthread_t t;
    pthread_barrier_init(&late_bar, NULL, 2);
    if (pthread_create(&t, NULL, thread_free_churn, &f) != 0) return 1;
    pthread_barrier_wait(&late_bar);
    unsigned char *own = mmap(NULL, own_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own == MAP_FAILED) return 1;
    memset(own, 1, own_size);
    pthread_barrier_wait(&late_bar);
    if (pthread_join(t, NULL) != 0) return 1;
    base += own_size;  /* the program's own, resident to the end (and big, never written) */
  } else if (strncmp(mode, "loader", 6) == 0) {
    /* main's blocks, freed by a thread: they wait on main's remote lists,
     * which only main's own slow path collects, and main calls nothing */
    pthread_t t;
    fill(&f);
    if (pthread_create(&t, NULL, thread_free_most, &f) != 0 || pthread_join(t, NULL) != 0) return 1;
  } else {
    fill_and_free(&f);
  }
  printf("%s %zu: %zu blocks, %zu kept, peak about %zu KiB\n", mode, size, f.n, f.kept,
         (f.n * size) >> 10);

  if (strcmp(mode, "off") == 0 || strcmp(mode, "scatter_off") == 0) {
    sleep_ms((unsigned)purge_delay_ms() * 2 + 2000);
    size_t rss = ((size_t)rss_kib() << 10), goal = base + f.live + ((size_t)32 << 20);
    int n = purge_threads();
    printf("%s: RSS %zu KiB (goal %zu KiB), %d purge threads\n", mode, rss >> 10, goal >> 10, n);
    if (f.scatter ? rss <= goal : n != 0 || rss <= goal) {
      printf("FAIL: with %s the memory went back while idle, or a thread ran\n",
             f.scatter ? "HAKMEM_PARK_IDLE=0" : "HAKMEM_BACKGROUND_PURGE=off");
      return 1;
    }
    printf("test_idle %s: 1 passed, 0 failed\n", mode);
    return check_kept(&f);
  }
  if (strcmp(mode, "fork") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      long t = wait_returned("child", base, f.live, false);
      _exit(t < 0 ? 1 : check_kept(&f));
    }
    long t = wait_returned("parent", base, f.live, false);
    int st = 0;
    waitpid(pid, &st, 0);
    bool child_ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!child_ok) printf("FAIL: the child's memory did not come back (status %d)\n", st);
    if (t < 0) printf("FAIL: the parent's memory did not come back\n");
    if (t < 0 || !child_ok || check_kept(&f)) return 1;
    printf("test_idle fork: 2 passed, 0 failed\n");
    return 0;
  }
  bool light = strcmp(mode, "light") == 0 || strcmp(mode, "loader_light") == 0;
  if (!light && strcmp(mode, "sleep") != 0 && strcmp(mode, "thread") != 0 && strcmp(mode, "handoff") != 0 &&
      strncmp(mode, "loader", 6) != 0) {
    fprintf(stderr, "usage: test_idle sleep|light|late|thread|handoff|loader|fork|fork_first|off|scatter|scatter_light|scatter_off|scatter_thread|scatter_heap|scatter_heap_off SIZE | small | sparse\n");
    return 2;
  }
  load_start();
  long t = wait_returned(mode, base, f.live, light);
  load_stop();
  if (t < 0) {
    printf("FAIL: the freed memory did not come back while the program was idle\n");
    return 1;
  }
  if (check_kept(&f)) return 1;
  printf("test_idle %s: 1 passed, 0 failed\n", mode);
  return 0;
}
