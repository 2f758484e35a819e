#define _GNU_SOURCE
#include "init.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "heap.h"
#include "knobs.h"
#include "large.h"
#include "learner.h"
#include "os.h"
#include "stats.h"
#include "slab.h"
#include "superslab.h"

static pthread_key_t thread_key;

/* The free-list key: 8 of the 16 random bytes the kernel gives every
 * process (AT_RANDOM), mixed; no syscall, no file. */
static void hk_list_key_init(void) {
  const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
  uint64_t k = (uint64_t)(uintptr_t)&thread_key * 0x9e3779b97f4a7c15ull;
  if (r) memcpy(&k, r + 8, sizeof k);  /* no alignment promised */
  k ^= k >> 29;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 32;
  hk_list_key = (uintptr_t)(k | 1);
}
static int report_fd = STDERR_FILENO;  /* a private copy when verbose: programs
                                          like sort close stderr before exit */
static atomic_int init_state;          /* 0 no, 1 running, 2 done */
static _Atomic uintptr_t init_thread;  /* who runs it                */

static void hk_message_fd(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void thread_exit_hook(void *arg) {
  hk_heap_thread_done((struct hk_heap *)arg);
}

static void fork_prepare(void) {
  hk_heap_fork_prepare();
  hk_large_fork_prepare();
  hk_ss_fork_prepare();
}
static void fork_parent(void) {
  hk_ss_fork_parent();
  hk_large_fork_parent();
  hk_heap_fork_parent();
}
static void fork_child(void) {
  hk_ss_fork_child();
  hk_large_fork_child();
  hk_heap_fork_child();
}

void hk_init_global(void) {
  if (HK_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
    atomic_store(&init_thread, hk_thread_id());
    hk_knobs_init();
    hk_learner_init();
    hk_stats_init();
    hk_list_key_init();
    if (hk_knobs.verbose || hk_knobs.stats) {
      int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 100);
      if (fd >= 0) report_fd = fd;
    }
    pthread_key_create(&thread_key, thread_exit_hook);
    atomic_store_explicit(&init_state, 2, memory_order_release);
    /* may allocate: everything it needs is ready */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    return;
  }
  /* reentered by the initialising thread itself: go on */
  if (atomic_load(&init_thread) == hk_thread_id()) return;
  while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) sched_yield();
}

void hk_thread_register(struct hk_heap *h) {
  pthread_setspecific(thread_key, h);
}

__attribute__((constructor(101))) static void hk_constructor(void) { hk_init_global(); }

/* the exit line names the secure build, so a test can prove which ran */
#ifdef HK_SECURE
#define BUILD_TAG "secure build, "
#else
#define BUILD_TAG ""
#endif

__attribute__((destructor)) static void hk_destructor(void) {
  hk_stats_at_exit(report_fd);
  if (hk_knobs.verbose) {
    hk_message_fd(report_fd, "hakmem: active (" BUILD_TAG "pid %d): %zu superslabs mapped, %zu large blocks live, "
               "%lu mmap / %lu munmap / %lu madvise calls, peak RSS %zu KiB\n",
               (int)getpid(), hk_ss_count_mapped(), hk_large_count_live(),
               (unsigned long)atomic_load(&hk_os_stats.mmap_calls),
               (unsigned long)atomic_load(&hk_os_stats.munmap_calls),
               (unsigned long)atomic_load(&hk_os_stats.madvise_calls),
               hk_os_peak_rss_bytes(0) / 1024);
  }
}

/* ---- messages without malloc ------------------------------------------------ */

static void message_v(int fd, const char *fmt, va_list ap) {
  char buf[512];
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  ssize_t w = write(fd, buf, (size_t)n);
  (void)w;
}

void hk_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message_v(STDERR_FILENO, fmt, ap);
  va_end(ap);
}

static void hk_message_fd(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message_v(fd, fmt, ap);
  va_end(ap);
}

void hk_report_invalid(const char *what, const void *p, const char *reason) {
  hk_message("hakmem: invalid %s(%p): %s\n", what, p, reason);
  if (hk_knobs.abort_on_invalid) abort();
}

void hk_assert_fail(const char *expr, const char *file, int line) {
  hk_message("hakmem: assertion failed: %s (%s:%d)\n", expr, file, line);
  abort();
}
