/* Background purge (HAKMEM_BACKGROUND_PURGE): one thread that runs the
 * purge clock when the program has stopped calling malloc; from start-up
 * (on), or (auto, the default) once the program has held HK_BG_AUTO_BYTES,
 * so that a small program never gets one. Each tick (one
 * purge delay) it gives back what is due: other threads' unused and emptied
 * slabs (purge_heaps, below: the safety argument is there), abandoned
 * superslabs' unused slabs, the superslab cache, the large tier's free
 * spans and cached mappings. docs/ARCHITECTURE.md, "Background purge". */
#define _GNU_SOURCE
#include "policy/bg.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "heap/heap_slabs.h"
#include "base/gate.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "mem/slab_park.h"
#include "base/lock.h"
#include "pal/os.h"
#include "backend/superslab.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;          /* CLOCK_MONOTONIC: set up in start */
static pthread_t thread;
static bool running;               /* a thread was started (under mu) */
static bool stop, done;            /* under mu */
static bool woken;                 /* under mu: tick now */
static atomic_bool purging;        /* it purges (on, or auto past its threshold);
                                      else it runs for the stats or the dump signal */

/* ---- other threads' heaps ------------------------------------------------------
 *
 * The purge thread gives back what a heap keeps unused when its owner has
 * stopped calling malloc, without the owner:
 *
 *  1. It try-locks h->bg_lock (never waits for an owner), so it never runs
 *     beside one of the owner's slow paths (hk_heap_enter).
 *  2. Unused slabs (free_mask) are reached by the owner only through a slow
 *     path (hk_heap_fresh_slab), and hold no block: under the lock they can
 *     be purged at any time (hk_heap_purge_unused, on the same two-tick
 *     epoch as the owner's clock).
 *  3. An emptied slab (used == 0, on a partial list; or one whose blocks
 *     out are all parked, used == nparked, no parked page written since:
 *     hk_slab_parked_clean) is reached by the
 *     owner's fast paths only through a free of one of its blocks, and it
 *     has none out; but the owner's last free into it may still be on its
 *     way (used-- seen before the free-list store: plain stores, in any
 *     order, and a thread may be descheduled between them). So the slab is
 *     released only when the owner provably did not run over the whole look:
 *     blocked in a system call (no fast path makes one: every store of its
 *     last free was done before it entered the kernel) before the look and
 *     after it, with the same count of context switches (one that ran in
 *     between switched out again, or is running now). Released slabs stay
 *     in the owner's superslabs (the owner's leaf slow path reads partial
 *     slab descriptors without the lock: they must stay mapped).
 *  4. So is a slab whose every block out came back from other threads (on
 *     its remote list and the heap's delayed list, counted in the same look:
 *     hk_heap_returned_look), and its blocks leave those lists.
 *
 * An idle owner (no slow path over the last whole tick) that runs rather
 * than blocks (a thread that freed its blocks and now computes, or keeps
 * to its fast path) gives the same proof another way: its CPU time (the
 * scheduler's count, which grows only while it runs), read after the
 * look, grows by QUIET_NS. A free under way when the look began needs a
 * few dozen instructions to end, so it ended: the owner ran thousands of
 * times as long since. Its stores are then seen by us (x86-64 makes a
 * core's stores visible in program order, and its store buffer drains
 * within microseconds, far inside the margin). The wait (sleeps of 1 ms,
 * QUIET_TRIES at most; it ends once the owner is found asleep in a system
 * call, not having run over the last sleep) holds the owner's bg_lock: an
 * idle owner rarely wants it, and waits that long when it does. A signal
 * handler that ran QUIET_NS inside a free would defeat this proof, as one
 * that blocks in a system call there defeats the blocked one.
 *
 * Without /proc and the thread's CPU clock nothing of step 3 happens; the
 * owner's own purge clock does it at its next slow path. */

#define QUIET_NS 1000000ull  /* 1 ms of the owner's CPU time past the look */
/* On a loaded machine the owner runs a share of the wall time (a third,
 * beside four busy processes on two cores), and may wait off the CPU for
 * several time slices in a row: 1 ms of its CPU time can take 10 ms.
 * Four sleeps were too few there (test_idle scatter_busy kept 200 MiB
 * for 11 s in 3 of 4 runs beside four busy loops). */
#define QUIET_TRIES 12

/* The proof that the owner did not run through a look (blocked before and
 * after it, the same context switches) or ran well past it (an idle owner:
 * its CPU time grew by QUIET_NS after the look). */
typedef struct {
  bool idle;            /* the owner took no slow path over the last tick */
  bool blocked;         /* in a system call when the look began */
  unsigned long sw;     /* its context switches then */
  bool cpu;             /* its CPU clock can be read (idle owners only) */
} quiet_t;

static bool quiet_begin(const hk_heap_t *h, quiet_t *q) {
  uint64_t cpu = 0;
  q->cpu = q->idle && hk_os_task_cpu_ns(h->ktid, &cpu) && cpu != 0;
  q->blocked = hk_os_task_in_syscall(h->ktid) && hk_os_task_switches(h->ktid, &q->sw);
  return q->blocked || q->cpu;
}

static bool quiet_end(const hk_heap_t *h, const quiet_t *q) {
  unsigned long sw;
  if (q->blocked && hk_os_task_in_syscall(h->ktid) && hk_os_task_switches(h->ktid, &sw) && sw == q->sw)
    return true;
  if (!q->cpu) return false;
  /* read after the look (x86-64 keeps our loads in order, and the holds'
   * stores were fenced; the kernel adds a running owner's current slice):
   * what it runs from here on */
  uint64_t from, last, cpu;
  if (!hk_os_task_cpu_ns(h->ktid, &from)) return false;
  last = from;
  for (unsigned i = 0; i < QUIET_TRIES; i++) {
    hk_os_sleep_ms(1);
    if (!hk_os_task_cpu_ns(h->ktid, &cpu)) return false;
    if (cpu - from >= QUIET_NS) return true;
    /* it did not run over the sleep: asleep in a system call, it will
     * not run much soon; off the CPU beside other work, it will */
    if (cpu == last && hk_os_task_in_syscall(h->ktid)) break;
    last = cpu;
  }
  return false;
}

#define BATCH 512   /* emptied slabs released per look (more: another look) */

/* Emptied slabs of h (bg_lock held by us) given back while its owner is
 * provably stopped. */
static void release_emptied(hk_heap_t *h, bool idle) {
  hk_slab_t *cand[BATCH];
  for (int round = 0; round < 64; round++) {
    /* a hint first: is any partial slab empty? (no /proc reads otherwise) */
    bool any = false;
    for (unsigned c = 0; c < HK_NCLASS && !any; c++)
      for (hk_slab_t *sl = h->partial[c]; sl; sl = sl->next)
        if (HK_LOAD_RACY(sl->used) == HK_LOAD_RACY(sl->nparked)) { any = true; break; }
    if (!any) return;
    quiet_t q = { .idle = idle };
    if (!quiet_begin(h, &q)) return;
    unsigned n = 0;
    for (unsigned c = 0; c < HK_NCLASS && n < BATCH; c++)
      for (hk_slab_t *sl = h->partial[c]; sl && n < BATCH; sl = sl->next)
        if (sl->used == sl->nparked && hk_slab_parked_clean(sl)) cand[n++] = sl;
    if (!quiet_end(h, &q)) return;
    for (unsigned i = 0; i < n; i++) {
      hk_slab_drop_parked(cand[i]);  /* (found clean in the look) */
      hk_partial_remove(h, cand[i]);
      hk_heap_release_slab(h, cand[i], false);
    }
    if (n < BATCH) return;
  }
}

/* Slabs of h whose blocks all came back from other threads (a thread that
 * allocated, handed its blocks over and now only waits), a chunk of h's
 * superslabs per look: the owner must not run through a look, and one
 * that wakes every 10 ms leaves about that long. A superslab the release
 * moves from h's full list to its avail list is looked at again there. */
static unsigned release_returned(hk_heap_t *h, bool idle) {
  if (!hk_heap_returned_hint(h)) return 0;
  unsigned missed = 0;  /* looks the owner ran through: its next tick retries */
  unsigned released = 0;
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_full[k], &h->ss_avail[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *next = lists[l]->head; next;) {
        hk_ret_chunk_t c = { .n = 0 };
        for (; next && c.n < HK_RET_CHUNK; next = next->next) c.ss[c.n++] = next;
        quiet_t q = { .idle = idle };
        bool stopped = quiet_begin(h, &q);
        bool any = stopped && hk_heap_returned_look(h, &c);
        if (stopped && !any) continue;  /* (nothing to prove) */
        if (!stopped || !quiet_end(h, &q)) {
          if (++missed == 16) return released;  /* (a running owner: its own slow paths) */
          continue;
        }
        if (any) {
          for (unsigned j = 0; j < c.n; j++) released += (unsigned)__builtin_popcount(c.back[j]);
          hk_heap_returned_release(h, &c);
        }
      }
  }
  return released;
}

/* HAKMEM_PARK_IDLE: the free pages of an idle owner's partial slabs
 * (slab_park.h), parked by the purge thread. Idle: the owner took no slow
 * path over a whole tick (a program asleep, or one that only mallocs and
 * frees from its current slabs), and is stopped now. The owner's fast
 * free may push onto a partial slab's lists at any moment, so each slab is
 * held first (HK_OWNER_HELD: its frees go to the remote list instead); the
 * holds are set while the owner is provably stopped (in a system call
 * before and after, the same context switches), so no free that read the
 * old field is still under way, and the owner's next free reads the new
 * one (the fence, then the kernel's exit). The park itself may then take
 * as long as it takes; the owner's slow paths wait for the bg_lock. A
 * chunk at a time; a look the owner ran through is tried again
 * (IDLE_MISSES in a pass), and the pass stops when the owner is running
 * at a look's start and gives no proof by its CPU time. The owner's free of a
 * mid block into a held slab takes the mid cache's foreign path (onto its
 * own stack, the pool or the remote list: none writes the slab); the
 * queue's eviction, which frees into the evicted block's slab without the
 * owner test, exists only with delayed reuse, which parks nothing.
 * Returns bytes purged. */
#define IDLE_CHUNK 64
/* looks per pass the owner may run through before the pass gives up (a
 * thread that wakes every 10 ms, on a loaded machine where our look is
 * descheduled for a time slice, runs through a few; before, the first
 * one ended the pass and the rest waited a purge delay) */
#define IDLE_MISSES 8
_Static_assert(!(HK_PARK_BUILD && HK_MIDC_FIFO), "a queue's eviction would write a held slab");

static size_t park_idle(hk_heap_t *h, bool idle, bool untouched) {
  if (!HK_PARK_BUILD || !hk_knobs.park_idle || !idle) return 0;
  size_t bytes = 0;
  uintptr_t tid = h->tid;
  unsigned least = HK_PARK_MIN_PAGES * (unsigned)HK_PAGE;
  unsigned c = 0;  /* the walk: class c's partial list, from next */
  hk_slab_t *next = h->partial[0];
  unsigned misses = 0;  /* looks the owner ran through, this pass */
  for (;;) {
    hk_slab_t *cand[IDLE_CHUNK];
    unsigned n = 0;
    while (n < IDLE_CHUNK) {
      if (next == NULL) {
        if (c + 1 >= HK_NCLASS) break;
        next = h->partial[++c];
        continue;
      }
      if (HK_LOAD_RELAXED(next->owner) == tid && (unsigned)(next->carved - next->used) * next->block_size >= least)
        cand[n++] = next;
      next = next->next;
    }
    if (n == 0) return bytes;
    bool held = false, stored = false;
    while (!held && misses < IDLE_MISSES) {
      quiet_t q = { .idle = untouched };
      if (!quiet_begin(h, &q)) break;
      for (unsigned i = 0; i < n; i++) HK_STORE_RELAXED(cand[i]->owner, tid | HK_OWNER_HELD);
      stored = true;
      atomic_thread_fence(memory_order_seq_cst);
      held = quiet_end(h, &q);
      misses += !held;
    }
    if (!stored) return bytes;
    for (unsigned i = 0; i < n && held; i++) {
      hk_heap_collect_remote(h, cand[i]);
      bytes += hk_slab_park(cand[i], false);
    }
    atomic_thread_fence(memory_order_release);  /* the lists before the field */
    for (unsigned i = 0; i < n; i++) HK_STORE_RELAXED(cand[i]->owner, tid);
    if (!held) return bytes;
  }
}

/* What the owner's fast paths change outside its current slabs: the
 * blocks out of each partial slab (a free into one lowers it; a park moves
 * blocks from free to parked, which leaves it) and its mid stacks (their
 * counts, and the push counter). A running owner's slabs are held only
 * when this stayed the same over UNTOUCHED_MS of looks (at the ends and
 * starts of passes): an owner that frees into held slabs sends each free
 * to the remote list, where the blocks wait for its next slow path (test
 * purge's trim found 64 MiB there, with a 0 ms purge delay, whose ticks
 * are too close to say the owner is idle). 16 bits: a change missed once
 * in 65,536 costs one such hold, never safety (the hold is still proved). */
#define UNTOUCHED_MS 100
static uint16_t owner_activity(const hk_heap_t *h) {
  uint32_t sum = HK_LOAD_RACY(h->midc_ticks);
  for (unsigned i = 0; i < HK_NCLASS_MID; i++) sum = sum * 31 + HK_LOAD_RACY(h->midc_n[i]);
  for (unsigned c = 0; c < HK_NCLASS; c++)
    for (const hk_slab_t *sl = h->partial[c]; sl; sl = sl->next)
      sum = sum * 31 + (uint32_t)(HK_LOAD_RACY(sl->used) - HK_LOAD_RACY(sl->nparked));
  return (uint16_t)(sum ^ sum >> 16);
}

/* Looks at the owner's activity: ms it has stayed the same (0: it moved) */
static uint32_t activity_seen(hk_heap_t *h) {
  uint16_t fp = owner_activity(h);
  uint32_t now = (uint32_t)hk_os_now_ms();
  if (fp != h->idle_fp) {
    h->idle_fp = fp;
    h->idle_fp_ms = now;
    return 0;
  }
  return now - h->idle_fp_ms;
}

typedef struct { bool force; size_t bytes; unsigned returned; } pass_t;

/* h's bg_lock held (hk_heap_each_pinned took it; an owner in a slow path
 * holds it, and purges on its own clock) */
static void purge_heap(hk_heap_t *h, void *arg) {
  pass_t *pass = arg;
  HK_TSAN_HIDE_BEGIN();  /* quiescence is the kernel's proof */
  /* (a trim's forced pass leaves the look to the clock's) */
  bool idle = !pass->force && !h->api && hk_heap_idle_look(h);
  bool parks = HK_PARK_BUILD && hk_knobs.park_idle && !h->api;
  bool untouched = parks && activity_seen(h) >= UNTOUCHED_MS;
  release_emptied(h, idle);
  pass->returned += release_returned(h, idle);
  pass->bytes += park_idle(h, idle, untouched);
  if (parks) activity_seen(h);
  pass->bytes += hk_heap_purge_unused(h, pass->force);
  HK_TSAN_HIDE_END();
}

/* Between purge ticks (HAKMEM_STOPPED_PURGE_MS): the slabs of stopped
 * owners whose blocks all came back from other threads (a thread that
 * handed its blocks over and waits), purged at once; nothing else. Not
 * the slabs an owner emptied itself: a thread that frees its burst and
 * sleeps a few ms takes them again when it wakes (test_reuse learn; a
 * burst program with 10 ms pauses ran at two thirds of its speed). A
 * running owner costs one /proc read (the look's own would retry chunk
 * after chunk). */
static void release_stopped(hk_heap_t *h, void *arg) {
  unsigned *n = arg;
  if (!hk_os_task_in_syscall(h->ktid)) return;
  HK_TSAN_HIDE_BEGIN();
  unsigned got = release_returned(h, false);
  if (got) hk_heap_purge_unused(h, true);
  *n += got;
  HK_TSAN_HIDE_END();
}

/* the last pass's returned slabs, for the short clock (a trim's pass may
 * write it from another thread) */
static unsigned tick_returned;

/* Other threads' heaps: bytes purged (force: all due now). */
static size_t purge_heaps(bool force) {
  if (!hk_heap_bg_on) return 0;  /* owners take no lock: nothing may be touched */
  pass_t pass = { force, 0, 0 };
  hk_heap_each_pinned(purge_heap, &pass);
  HK_STORE_RELAXED(tick_returned, pass.returned);
  return pass.bytes;
}

/* heap_api.c's: the idle first-class heaps parked, each under its lock */
static size_t (*api_park)(void);
void hk_bg_set_api_park(size_t (*fn)(void)) { HK_STORE_RELAXED(api_park, fn); }

size_t hk_bg_tick(bool force) {
  size_t bytes = purge_heaps(force);
  size_t (*park_api)(void) = HK_LOAD_RELAXED(api_park);
  if (!force && park_api) bytes += park_api();
  bytes += hk_ss_purge_abandoned(force);
  bytes += hk_ss_collect(force);
  bytes += hk_large_collect(force);
  return bytes;
}

/* ---- the timeline and the dump signal ------------------------------------------
 *
 * With HAKMEM_STATS_INTERVAL and HAKMEM_STATS_FILE the thread runs from
 * start-up and calls the stats tick each interval, so the timeline gets
 * points while the program calls nothing (when memory should go back).
 *
 * HAKMEM_DUMP_SIGNAL=N: a handler for signal N, installed at start-up,
 * which only sets a flag (async-signal-safe: one atomic store, errno kept)
 * and chains to the action it replaced: a function is called; SIG_DFL and
 * SIG_IGN are not (a signal chosen for dumps must not end the process,
 * whatever its default). The thread sees the flag within DUMP_POLL_MS and
 * writes the stats report and, with HAKMEM_PROF=1, a heap profile. A
 * handler the program installs later for N replaces ours (sigaction has
 * one action per signal): no dump then. */

#define DUMP_POLL_MS 50
#define IDLE_MS 3600000L  /* a thread that does not purge: no purge tick */

static atomic_bool dump_pending;
static void (*stats_hook)(void), (*dump_hook)(void);  /* init.c's: the stats layer is beside us */

void hk_bg_set_hooks(void (*stats_tick)(void), void (*dump)(void)) {
  stats_hook = stats_tick;
  dump_hook = dump;
}
static struct sigaction prev_action;

static void on_dump_signal(int sig, siginfo_t *info, void *uc) {
  int e = errno;
  atomic_store_explicit(&dump_pending, true, memory_order_relaxed);
  if (prev_action.sa_flags & SA_SIGINFO) {
    if (prev_action.sa_sigaction) prev_action.sa_sigaction(sig, info, uc);
  } else if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN) {
    prev_action.sa_handler(sig);
  }
  errno = e;
}

static void install_dump_signal(void) {
  int sig = (int)hk_knobs.dump_signal;
  if (sig <= 0 || sig == SIGKILL || sig == SIGSTOP) return;
  struct sigaction sa = { 0 };
  sa.sa_sigaction = on_dump_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &prev_action);
}

static bool timeline_on(void) { return hk_knobs.stats_interval_ms > 0 && hk_knobs.stats_file[0]; }

static void dump_if_asked(void) {
  if (!atomic_exchange_explicit(&dump_pending, false, memory_order_relaxed)) return;
  if (dump_hook) dump_hook();
}

static long min_ms(long a, long b) { return a < b ? a : b; }

/* The short clock of stopped owners' slabs (release_stopped): a look
 * every HAKMEM_STOPPED_PURGE_MS while looks give something back; each
 * look that gives nothing back doubles the wait, and at the purge delay
 * the looks stop (a program whose stopped threads hold nothing to give
 * pays for few), until a purge tick releases such slabs again. Read on
 * CLOCK_MONOTONIC, the clock of the thread's wait. */
static uint64_t precise_ms(void) { return hk_os_now_ns() / 1000000u; }
static uint64_t stopped_at, stopped_gap;  /* the next look; the wait before it */
/* the knob, or 0 while the short clock is off (a wait as long as the purge
 * delay's). Off too with the purge windows learned (HAKMEM_LEARN_PURGE):
 * a thread that sleeps between bursts is stopped, and takes its slabs
 * again when it wakes; the learner, which saw that reuse, sets how long
 * they wait (test_reuse learn: the pauses' purges faulted in again) */
static uint64_t stopped_base(void) {
  long base = hk_knobs.stopped_purge_ms, most = hk_ss_purge_delay_ms();
  if (base <= 0 || base >= most || !hk_heap_bg_on || stopped_gap >= (uint64_t)most) return 0;
  if (hk_knobs.learn_purge) return 0;
  return (uint64_t)base;
}
static void stopped_tick(void) {
  uint64_t base = stopped_base();
  if (!base || precise_ms() < stopped_at) return;
  unsigned n = 0;
  hk_heap_each_pinned(release_stopped, &n);
  stopped_gap = n ? base : stopped_gap * 2;
  stopped_at = precise_ms() + stopped_gap;
}
/* after a purge tick: one that released stopped owners' returned slabs starts
 * the short clock again */
static void stopped_after_tick(void) {
  if (HK_LOAD_RELAXED(tick_returned)) stopped_gap = (uint64_t)hk_knobs.stopped_purge_ms;
  if (stopped_base()) stopped_at = precise_ms() + stopped_gap;
}
/* ms to the next short look, or `delay` when that comes first */
static long stopped_wait(long delay) {
  if (!stopped_base()) return delay;
  uint64_t now = precise_ms();
  long left = stopped_at > now ? (long)(stopped_at - now) : 0;
  return left < delay ? left : delay;
}

static void *bg_main(void *arg) {
  (void)arg;
  uint64_t purge_at = precise_ms() + (uint64_t)hk_ss_purge_delay_ms();
  stopped_at = precise_ms();
  stopped_gap = (uint64_t)hk_knobs.stopped_purge_ms;
  pthread_mutex_lock(&mu);
  while (!stop) {
    bool purge = atomic_load_explicit(&purging, memory_order_relaxed);
    long delay = IDLE_MS;
    if (purge) {
      uint64_t at = precise_ms();
      delay = stopped_wait(purge_at > at ? (long)(purge_at - at) : 0);
    }
    if (timeline_on()) delay = min_ms(delay, hk_knobs.stats_interval_ms);
    if (hk_knobs.dump_signal) delay = min_ms(delay, DUMP_POLL_MS);
    if (delay < 1) delay = 1;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += delay / 1000;
    t.tv_nsec += (delay % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    while (!stop && !woken && pthread_cond_timedwait(&cv, &mu, &t) == 0) {
    }
    bool now = woken;
    woken = false;
    if (stop) break;
    pthread_mutex_unlock(&mu);
    dump_if_asked();
    if (timeline_on() && stats_hook) stats_hook();
    /* the purge clock: each purge delay, or at once when woken (the
     * wait's clock: a coarse one lagged it by a tick) */
    if (atomic_load_explicit(&purging, memory_order_relaxed) && (now || precise_ms() >= purge_at)) {
      hk_bg_tick(false);
      stopped_after_tick();
      purge_at = precise_ms() + (uint64_t)hk_ss_purge_delay_ms();
    } else if (atomic_load_explicit(&purging, memory_order_relaxed)) {
      stopped_tick();
    }
    pthread_mutex_lock(&mu);
  }
  done = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* The thread, now (once: a second call finds it running). purge: it
 * purges from now on (else it runs for the timeline or the dump signal). */
static void start_thread(bool purge) {
  if (purge) {
    if (!hk_heap_bg_on) return;  /* the heaps take no bg_lock: nothing may be touched */
    atomic_store_explicit(&purging, true, memory_order_relaxed);
  }
  hk_fork_arm(true);  /* a second thread from now on (lock.h) */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_lock(&mu);
  if (running) {  /* it purges from its next pass */
    pthread_mutex_unlock(&mu);
    pthread_condattr_destroy(&ca);
    return;
  }
  pthread_cond_init(&cv, &ca);
  pthread_condattr_destroy(&ca);
  stop = done = woken = false;
  /* no signal of the program's is ever delivered to our thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  running = pthread_create(&thread, NULL, bg_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_mutex_unlock(&mu);
  if (running) pthread_setname_np(thread, "hakmem-purge");
}

/* At start-up: the dump signal's handler; the thread when the knob is on,
 * or for the timeline or the dump signal. */
static size_t auto_bytes = HK_BG_AUTO_BYTES;  /* by profile, at start-up */

void hk_bg_start(void) {
  if (hk_knobs.profile == HK_PROFILE_LOWMEM) auto_bytes = HK_BG_AUTO_BYTES_LOWMEM;
  install_dump_signal();
  bool purge = hk_knobs.background_purge == HK_BG_ON;
  if (purge || timeline_on() || hk_knobs.dump_signal > 0) start_thread(purge);
}

/* auto: the first caller to see the program holding HK_BG_AUTO_BYTES
 * (HK_BG_AUTO_BYTES_LOWMEM under lowmem)
 * starts it; the rest return at the flag. `held` counts address space (a
 * big block the program touched a page of counts whole), so the peak
 * resident set (hk_os_peak_rss_reached: most often one system call; at
 * most one look a millisecond)
 * must have passed the mark too: a program whose memory never passed it
 * has less than that to give back, and a thread's start would cost it
 * more than the purge returns (docs/BENCHMARKS.md). */
static atomic_bool auto_started;
static uint64_t look_gate;  /* base/gate.h: one look a millisecond */
/* the look itself, apart: hk_bg_held stays as small as the two tests
 * that end nearly every call (cmake/hot_text.ld places this one after
 * the fast paths, so that they keep their addresses) */
static __attribute__((noinline)) void bg_look(void) {
  if (!hk_gate_pass(&look_gate, hk_os_now_ms(), 1)) return;
  if (!hk_os_peak_rss_reached(auto_bytes)) return;
  if (atomic_exchange_explicit(&auto_started, true, memory_order_relaxed)) return;
  /* not from here: the caller is inside a heap's or a tier's slow path,
   * and pthread_create's calloc would enter it (heap.h, hk_heap_defer) */
  hk_heap_defer();
}
void hk_bg_held(size_t held) {
  if (HK_LIKELY(atomic_load_explicit(&auto_started, memory_order_relaxed))) return;
  if (hk_knobs.background_purge != HK_BG_AUTO || held < auto_bytes) return;
  bg_look();
}
void hk_bg_start_deferred(void) { start_thread(true); }

void hk_bg_wake(void) {
  pthread_mutex_lock(&mu);
  woken = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* At exit: ask it to stop and join it. It finishes the pass it is in;
 * should that pass wait on a lock held by a thread the exit has stopped
 * for good, we give up after a second and leave it (exit kills it). */
void hk_bg_stop(void) {
  pthread_mutex_lock(&mu);
  if (!running) { pthread_mutex_unlock(&mu); return; }
  stop = true;
  pthread_cond_broadcast(&cv);
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += 1;
  while (!done && pthread_cond_timedwait(&cv, &mu, &t) == 0) {
  }
  bool joined = done;
  running = false;
  pthread_mutex_unlock(&mu);
  if (joined) pthread_join(thread, NULL);
  else pthread_detach(thread);
}

bool hk_bg_running(void) {
  pthread_mutex_lock(&mu);
  bool r = running && atomic_load_explicit(&purging, memory_order_relaxed);
  pthread_mutex_unlock(&mu);
  return r;
}

/* fork(): the thread is not copied into the child. Take mu around fork so
 * the child's copy is in a known state, then start a new thread there when
 * the parent had one (on, or auto once started: the child holds what the
 * parent held; its first tick one delay later). */
void hk_bg_fork_prepare(void) { pthread_mutex_lock(&mu); }
void hk_bg_fork_parent(void) { pthread_mutex_unlock(&mu); }
void hk_bg_fork_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  mu = fresh;
  bool had = running;
  running = false;
  if (had) start_thread(atomic_load_explicit(&purging, memory_order_relaxed));
}
