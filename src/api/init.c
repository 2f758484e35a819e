/* Process start-up and exit: the one file that wires the layers together.
 * The layers start themselves on first use (the knobs and the free-list key,
 * by the first heap: hk_heap_start; the thread-exit key, by the first
 * thread heap: hk_thread_heap_init); what is left is
 * what joins a layer to one above it: the policy's start-up, the hooks the
 * heap and the large tier call (docs/ARCHITECTURE.md, "Hooks"), the fork
 * handlers, and the exit report. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>

#include "api/init.h"
#include "policy/bg.h"
#include "heap/heap.h"
#include "heap/heap_slabs.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "policy/learner.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "mem/guarded.h"
#include "mem/prof.h"
#include "mem/remote.h"
#include "mem/slab_park.h"
#include "base/report.h"
#include "policy/stats.h"
#include "backend/superslab.h"

/* What the library was built from: "X.Y.Z", or "X.Y.Z+git.HASH[.modified]"
 * from a checkout (generated at build time by cmake/build_id.cmake) */
extern const char hk_build_id[] HK_HIDDEN;

static int report_fd = STDERR_FILENO;  /* a private copy when verbose: programs
                                          like sort close stderr before exit */

/* The guarded pool's lock last: a sample is taken in the slow path, under
 * the heap's lock (the background purge's), and takes no other lock. */
static void fork_prepare(void) {
  hk_bg_fork_prepare();
  hk_prof_fork_prepare();
  hk_stats_fork_prepare();
  hk_learner_fork_prepare();
  hk_heap_fork_prepare();
  hk_heap_midp_fork_prepare();
  hk_large_fork_prepare();
  hk_ss_fork_prepare();
  hk_guarded_fork_prepare();
}
static void fork_parent(void) {
  hk_guarded_fork_parent();
  hk_ss_fork_parent();
  hk_large_fork_parent();
  hk_heap_midp_fork_parent();
  hk_heap_fork_parent();
  hk_learner_fork_parent();
  hk_stats_fork_parent();
  hk_prof_fork_parent();
  hk_bg_fork_parent();
}
static void fork_child(void) {
  hk_guarded_fork_child();
  hk_ss_fork_child();
  hk_large_fork_child();
  hk_heap_midp_fork_child();
  hk_heap_fork_child();
  hk_learner_fork_child();
  hk_stats_fork_child();
  hk_prof_fork_child();
  hk_bg_fork_child();  /* the purge thread is not copied: a new one, if on */
}

/* (lock.h) A fork the handlers missed had one thread: its heap's
 * kernel id is fixed first, before a second thread can have a heap. */
static void arm_fork(void) {
  hk_heap_fork_unarmed();
  pthread_atfork(fork_prepare, fork_parent, fork_child);  /* may allocate */
}

void hk_init_arm_fork(void) {
  hk_fork_set_arm(arm_fork);
  hk_fork_arm(true);
}

/* Runs before main (and before the constructors of libraries that depend on
 * hakmem). Mallocs made earlier are served: the heap starts itself; until
 * here the learner does not tick and the stats timeline does not sample. */
/* `hakmem config` (HAKMEM_VERBOSE=2): the memory limit in force, where it
 * came from and the headroom, as a comment row of the table. */
static void print_budget(void) {
  hk_mem_info_t m;
  hk_mem_info(&m);
  if (!m.hard && !m.soft) {
    hk_message_fd(STDERR_FILENO, "hakmem: config: # memory limit in force: none (no HAKMEM_MEMORY_LIMIT, no cgroup limit)\n");
    return;
  }
  /* no soft limit of its own: soft pressure starts at three quarters of
   * the hard one (mem_limit.c), and that is the figure in force */
  size_t soft = m.soft ? m.soft : m.hard - m.hard / 4;
  hk_message_fd(STDERR_FILENO,
                "hakmem: config: # memory limit in force: %zu bytes (soft %zu%s) from %s, action %s; "
                "resident %zu, headroom %zu\n",
                m.hard, soft, m.soft ? "" : ", three quarters of the hard limit",
                hk_mem_source_name(m.source), m.action == HK_MEM_ACTION_FAIL ? "fail" : "keep",
                m.resident, m.hard > m.resident ? m.hard - m.resident : 0);
}

/* What the program holds, for the background purge's auto start: the
 * superslabs mapped and the large tiers' live and cached bytes. */
static void note_held(void) {
  hk_bg_held(hk_ss_count_mapped() * HK_SS_SIZE + hk_large_bytes_live() + hk_large_bytes_cached());
}

/* The heap's purge clock struck: the large tier's cache is purged too, so
 * a program that stopped allocating large blocks still gets that memory
 * back; and the auto start looks again: the resident set may pass the
 * mark after the program's last growth (a look at a growth sees none of
 * the new memory touched yet, and the looks are one a millisecond) */
static void purge_large(void) {
  hk_large_collect(false);
  note_held();
}

/* The tier swap (docs/ARCHITECTURE.md, "Tier swap"): a span block about
 * to fault in fresh pages takes them from the small tier's idle memory:
 * this thread's emptied and unused slabs, then the cached superslabs. */
static void tier_swap_large(size_t bytes) {
  hk_heap_t *h = hk_tls_heap;
  if (!h->api) hk_heap_shed(h);
  hk_ss_shed(bytes);
  note_held();
}
/* ... and a superslab mapped sheds the large tier's idle pages */
static void tier_swap_small(size_t bytes) {
  hk_large_shed(bytes);
  note_held();
}

/* The dump signal's work (policy/bg.c): the stats report, the heap profile. */
static void dump_now(void) {
  hk_stats_dump();
  hk_prof_dump_next();
}

/* The memory budget's relief of last resort (mem_limit.h): hak_ctl("purge")'s work. */
static void budget_purge(void) {
  hk_heap_trim(hk_tls_heap);
  hk_bg_tick(true);
}

__attribute__((constructor(101))) static void hk_init(void) {
  hk_heap_start();
  /* what is in force: 1 one line (the profile, knobs off their default), 2 every knob */
  if (hk_knobs.verbose) hk_knobs_print(STDERR_FILENO, hk_knobs.verbose >= 2);
  if (hk_knobs.verbose >= 2) {
    hk_message_fd(STDERR_FILENO, "hakmem: config: # library version %s\n", hk_build_id);
    print_budget();
  }
  hk_learner_init();
  hk_stats_init();
  hk_prof_init();
  hk_guarded_init();  /* sampled guarded blocks (HAKMEM_GUARDED_RATE, on by default) */
  /* the learner's hooks when it is on (ctl.c installs them when it is
   * turned on at run time; turned off, they return at once) */
  bool learn = hk_knobs.learn != 0 || hk_knobs.learn_purge != 0;  /* every cap, or the purge windows */
  hk_heap_hooks_t hooks = {
    .refill = learn ? hk_learner_small_tick : NULL,
    .purge = purge_large,
    .stats = hk_stats_tick,
    .deferred = hk_bg_start_deferred,
  };
  hk_heap_set_hooks(&hooks);
  if (learn) hk_large_set_alloc_hook(hk_learner_slow_tick);
  hk_mem_set_purge_hook(budget_purge);
  hk_ss_set_grow_hook(tier_swap_small);  /* the tier swap, both ways */
  hk_ss_set_orphan_hook(hk_slab_collect_orphan);  /* exited threads' remote frees */
  hk_ss_set_park_hook(hk_slab_park_orphan);       /* and their free pages (HAKMEM_PARK_IDLE) */
  hk_large_set_grow_hook(tier_swap_large);
  hk_large_set_free_hook(note_held);  /* a program that wrote its blocks after its mallocs */
  if (hk_knobs.verbose || hk_knobs.stats) {
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 100);
    if (fd >= 0) report_fd = fd;
  }
  /* the fork handlers: in the shared library, once the program has a
   * second thread or registers handlers of its own (base/lock.h,
   * override/atfork.c); in a static program, whose libc's
   * __register_atfork cannot be overridden, now */
  hk_fork_set_arm(arm_fork);
  hk_fork_arm(!HK_ATFORK_OVERRIDE);
  hk_bg_set_hooks(hk_stats_tick, dump_now);
  hk_bg_start();  /* HAKMEM_BACKGROUND_PURGE=on, the timeline, the dump signal;
                     auto: note_held asks, a slow path starts it */
}

/* The exit line names the measures in force, so a test can prove which
 * library ran: "secure build, " when all are, "measures canary shuffle, "
 * for some, nothing for none (measures.h). */
static const char *build_tag(void) {
  static char tag[128];
  if (HK_M_EVERY) return "secure build, ";
  size_t n = 0;
#define HK_TAG_ONE(name, on) \
  if (on) n += (size_t)snprintf(tag + n, sizeof tag - n, "%s" #name, n ? " " : "measures ");
  HK_MEASURE_LIST(HK_TAG_ONE)
#undef HK_TAG_ONE
  if (n) snprintf(tag + n, sizeof tag - n, ", ");
  return tag;
}

__attribute__((destructor)) static void hk_destructor(void) {
  hk_bg_stop();
  hk_prof_at_exit();
  hk_stats_at_exit(report_fd);
  if (hk_knobs.verbose) {
    hk_message_fd(report_fd, "hakmem: active (%spid %d): %zu superslabs mapped, %zu large blocks live, "
               "%lu mmap / %lu munmap / %lu madvise calls, peak RSS %zu KiB\n",
               build_tag(), (int)getpid(), hk_ss_count_mapped(), hk_large_count_live(),
               (unsigned long)atomic_load(&hk_os_stats.mmap_calls),
               (unsigned long)atomic_load(&hk_os_stats.munmap_calls),
               (unsigned long)atomic_load(&hk_os_stats.madvise_calls),
               hk_os_peak_rss_bytes(0) / 1024);
    if (HK_LOAD_RELAXED(hk_guarded_on)) {
      size_t live;
      uint64_t taken, skipped, throttled;
      hk_guarded_counts(&live, &taken, &skipped, &throttled);
      hk_message_fd(report_fd, "hakmem: guarded: %lu blocks sampled (one in %ld), %lu not (pool full), "
                    "%lu not (over %ld a second), %zu live\n", (unsigned long)taken, hk_knobs.guarded_rate,
                    (unsigned long)skipped, (unsigned long)throttled, hk_knobs.guarded_per_sec, live);
    }
  }
}
