/* Background purge (HAKMEM_BACKGROUND_PURGE=1): one thread that runs the
 * purge clock when the program has stopped calling malloc. Each tick (one
 * purge delay) it gives back what is due: other threads' unused and emptied
 * slabs (hk_heap_bg_purge: the safety argument is there), abandoned
 * superslabs' unused slabs, the superslab cache, the large tier's free
 * spans and cached mappings. docs/ARCHITECTURE.md, "Background purge". */
#define _GNU_SOURCE
#include "bg.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "heap.h"
#include "knobs.h"
#include "large.h"
#include "superslab.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;          /* CLOCK_MONOTONIC: set up in start */
static pthread_t thread;
static bool running;               /* a thread was started (under mu) */
static bool stop, done;            /* under mu */
static bool woken;                 /* under mu: tick now */
static atomic_ulong ticks;

size_t hk_bg_tick(bool force) {
  size_t bytes = hk_heap_bg_purge(force);
  bytes += hk_ss_purge_abandoned(force);
  bytes += hk_ss_collect(force);
  bytes += hk_large_collect(force);
  atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
  return bytes;
}

static void *bg_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!stop) {
    long delay = hk_ss_purge_delay_ms();
    if (delay < 1) delay = 1;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += delay / 1000;
    t.tv_nsec += (delay % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    while (!stop && !woken && pthread_cond_timedwait(&cv, &mu, &t) == 0) {
    }
    woken = false;
    if (stop) break;
    pthread_mutex_unlock(&mu);
    hk_bg_tick(false);
    pthread_mutex_lock(&mu);
  }
  done = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

void hk_bg_start(void) {
  if (!hk_knobs.background_purge || !hk_heap_bg_on) return;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_lock(&mu);
  if (running) { pthread_mutex_unlock(&mu); return; }
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
  bool r = running;
  pthread_mutex_unlock(&mu);
  return r;
}

unsigned long hk_bg_ticks(void) { return atomic_load_explicit(&ticks, memory_order_relaxed); }

/* fork(): the thread is not copied into the child. Take mu around fork so
 * the child's copy is in a known state, then start a new thread there when
 * the knob is on (the child's first tick one delay later). */
void hk_bg_fork_prepare(void) { pthread_mutex_lock(&mu); }
void hk_bg_fork_parent(void) { pthread_mutex_unlock(&mu); }
void hk_bg_fork_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  mu = fresh;
  running = false;
  hk_bg_start();
}
