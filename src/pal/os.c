/* The OS layer (os.h): every mmap, munmap, madvise, mremap and mprotect,
 * counted; the clock; what /proc says of this process and its threads. */
#define _GNU_SOURCE
#include "pal/os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/knobs.h"
#include "base/lock.h"
#include "base/libc.h"  /* the copy that finishes a move under valgrind: glibc's, unchecked */
#include "base/random.h"
#include "base/report.h"

hk_os_counters_t hk_os_stats;

static bool read_file(const char *path, char *buf, size_t size);
static bool read_line(const char *path, char *buf, size_t size);

/* mapped_now/peak: what hakmem holds mapped, whichever call changed it.
 * The per-call counters (mmap_bytes, munmap_bytes) count the bytes handed
 * to that call and nothing else: an mremap is neither. */
static void note_mapped(size_t bytes) {
  unsigned long now =
      atomic_fetch_add_explicit(&hk_os_stats.mapped_now, bytes, memory_order_relaxed) + bytes;
  unsigned long peak = atomic_load_explicit(&hk_os_stats.mapped_peak, memory_order_relaxed);
  while (now > peak &&
         !atomic_compare_exchange_weak_explicit(&hk_os_stats.mapped_peak, &peak, now,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

static void note_unmapped(size_t bytes) {
  atomic_fetch_sub_explicit(&hk_os_stats.mapped_now, bytes, memory_order_relaxed);
}

/* (debug) the calling thread holds no lock others wait on (lock.h) */
static inline void os_call(void) {
#ifdef HK_DEBUG
  HK_ASSERT(hk_nosys_held == 0);
#endif
}

static void count_mmap(size_t size) {
  os_call();
  atomic_fetch_add_explicit(&hk_os_stats.mmap_calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hk_os_stats.mmap_bytes, size, memory_order_relaxed);
}

static void *raw_map(size_t size, int prot) {
  count_mmap(size);
  void *p = mmap(NULL, size, prot,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void raw_unmap(void *p, size_t size) {
  os_call();
  if (size == 0) return;
  atomic_fetch_add_explicit(&hk_os_stats.munmap_calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hk_os_stats.munmap_bytes, size, memory_order_relaxed);
  int saved = errno;
  munmap(p, size);
  errno = saved;
}

/* Aligned mappings are asked for at hint addresses in a region of their own
 * (16-48 TiB, start randomised), stepping by 2 MiB multiples: the kernel
 * takes the hint when the range is free, so one mmap gives an aligned
 * mapping instead of mmap + 2 munmap of an over-sized one. */
/* TSan does not intercept mremap (google/sanitizers#1099): a range moved or
 * shrunk by it keeps its old shadow, and whoever maps those addresses next
 * "races" with the previous owner. Under TSan mremap says no and callers
 * take their map + copy + unmap path, which TSan sees. */
#if defined(__SANITIZE_THREAD__)
#define HK_OS_MREMAP 0
#else
#define HK_OS_MREMAP 1
#endif

#define HINT_LOW  ((uintptr_t)16 << 40)
#define HINT_HIGH ((uintptr_t)48 << 40)
static _Atomic uintptr_t hint_next;

/* align: 2 MiB or a larger power of two (a span arena's 1 GiB: the
 * hints skip to the next multiple) */
static void *map_at_hint(size_t size, size_t align, int prot) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  (void)size; (void)align; (void)prot;
  return NULL;  /* sanitizers own the address space layout */
#endif
  uintptr_t h = atomic_load_explicit(&hint_next, memory_order_relaxed);
  if (h == 0) {
    uintptr_t seed = (uintptr_t)hk_random(HK_RANDOM_MAP_HINT, 0);
    uintptr_t start = HINT_LOW + (((seed >> 12) & 0xffff) << HK_SS_SHIFT);
    if (atomic_compare_exchange_strong(&hint_next, &h, start)) h = start;
  }
  size_t step = hk_align_up(size, HK_SS_SIZE);
  uintptr_t at;
  do {
    at = hk_align_up(h, align);
  } while (!atomic_compare_exchange_weak_explicit(&hint_next, &h, at + step, memory_order_relaxed,
                                                  memory_order_relaxed));
  h = at;
  if (h < HINT_LOW || h + step > HINT_HIGH) return NULL;
  count_mmap(size);
  void *p = mmap((void *)h, size, prot,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if ((uintptr_t)p != h) {  /* a kernel that took it as a plain hint */
    raw_unmap(p, size);
    return NULL;
  }
  return p;
}

static void *map_aligned(size_t size, size_t align, int prot) {
  HK_ASSERT(size % HK_PAGE == 0 && (align & (align - 1)) == 0 && align >= HK_PAGE);
  int saved = errno;
  /* (a larger alignment only for a mapping at least that big: the hints
   * it skips are then fewer than the bytes it maps) */
  if (align <= HK_SS_SIZE || (align <= (size_t)1 << 30 && size >= align)) {
    void *p = map_at_hint(size, align > HK_SS_SIZE ? align : HK_SS_SIZE, prot);
    if (p) {
      errno = saved;
      note_mapped(size);
      return p;
    }
  }
  if (size + align < size) { errno = ENOMEM; return NULL; }
  uint8_t *raw = raw_map(size + align, prot);
  if (!raw) { errno = ENOMEM; return NULL; }
  uint8_t *aligned = (uint8_t *)hk_align_up((uintptr_t)raw, align);
  raw_unmap(raw, (size_t)(aligned - raw));
  raw_unmap(aligned + size, (size_t)(raw + size + align - (aligned + size)));
  note_mapped(size);
  errno = saved;
  return aligned;
}

void *hk_os_map_aligned(size_t size, size_t align) {
  return map_aligned(size, align, PROT_READ | PROT_WRITE);
}
void *hk_os_reserve_aligned(size_t size, size_t align) { return map_aligned(size, align, PROT_NONE); }

void hk_os_unmap(void *p, size_t size) {
  raw_unmap(p, size);
  note_unmapped(size);
}

void hk_os_purge(void *p, size_t size) {
  os_call();
  if (size == 0) return;
  atomic_fetch_add_explicit(&hk_os_stats.madvise_calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hk_os_stats.madvise_bytes, size, memory_order_relaxed);
  int saved = errno;
  madvise(p, size, MADV_DONTNEED);
  errno = saved;
}

/* ---- transparent huge pages ---- */

/* The system's mode, read once: 0 unreadable, then as sys_names says.
 * hk_os_thp() caches what it makes of it with the knob. */
static const char *const sys_names[] = { "", "always", "madvise", "never" };
enum { SYS_UNKNOWN, SYS_ALWAYS, SYS_MADVISE, SYS_NEVER };
static _Atomic int thp_sys = -1;
static _Atomic int thp_mode = -1;

/* "always [madvise] never": the bracketed word. */
static int read_thp_system(void) {
  int m = atomic_load_explicit(&thp_sys, memory_order_relaxed);
  if (m >= 0) return m;
  char buf[128];
  m = SYS_UNKNOWN;
  if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf)) {
    const char *b = strchr(buf, '[');
    for (int i = SYS_ALWAYS; b && i <= SYS_NEVER; i++) {
      size_t n = strlen(sys_names[i]);
      if (strncmp(b + 1, sys_names[i], n) == 0 && b[1 + n] == ']') m = i;
    }
  }
  atomic_store_explicit(&thp_sys, m, memory_order_relaxed);
  return m;
}

const char *hk_os_thp_system(void) { return sys_names[read_thp_system()]; }

/* Free page reporting (a virtio balloon, under a hypervisor): the guest
 * hands its free blocks of 2^order pages and more back to the host, which
 * drops them. A huge page is such a block, so a fresh one must be backed
 * by the host again when the program first writes it: on these machines
 * (order 9) a 2 MiB fault waits on the host (programs that fault in big
 * blocks ran several times slower than without huge pages), where
 * 4 KiB faults mostly take pages the guest holds already. The order, read
 * once; -1 when nothing reports (unset, the kernel prints -1 unsigned). */
#define MAX_ORDER 10  /* the buddy allocator's largest block: 4 MiB (x86-64) */
static _Atomic int reporting = -2;

/* The decimal number a /proc or /sys file starts with, if it is at most
 * max: true, with *out; false otherwise (unreadable, no digit, too big). */
static bool read_number(const char *path, unsigned long max, unsigned long *out) {
  char buf[32];
  if (!read_line(path, buf, sizeof buf)) return false;
  unsigned long v = 0;
  const char *c = buf;
  for (; *c >= '0' && *c <= '9' && v <= max; c++) v = v * 10 + (unsigned long)(*c - '0');
  if (c == buf || v > max) return false;
  *out = v;
  return true;
}

/* The decimal digits at *s after any blanks, as a number (0 for none);
 * *s is left past them. No bound: the fields read this way (kB and page
 * counts, context switches) are far from overflowing. */
static unsigned long take_decimal(const char **s) {
  const char *p = *s;
  while (*p == ' ' || *p == '\t') p++;
  unsigned long v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + (unsigned long)(*p++ - '0');
  *s = p;
  return v;
}

int hk_os_page_reporting(void) {
  int r = atomic_load_explicit(&reporting, memory_order_relaxed);
  if (r != -2) return r;
  unsigned long v;
  r = read_number("/sys/module/page_reporting/parameters/page_reporting_order", MAX_ORDER, &v) ? (int)v : -1;
  atomic_store_explicit(&reporting, r, memory_order_relaxed);
  return r;
}

/* vm.max_map_count, read once: the mappings a process may have (65,530
 * unless the system set it otherwise, which is also the answer when the
 * file cannot be read). */
static _Atomic unsigned long max_map_count;

unsigned long hk_os_max_map_count(void) {
  unsigned long v = atomic_load_explicit(&max_map_count, memory_order_relaxed);
  if (v) return v;
  if (!read_number("/proc/sys/vm/max_map_count", 1ul << 31, &v) || v == 0) v = 65530;
  atomic_store_explicit(&max_map_count, v, memory_order_relaxed);
  return v;
}

unsigned hk_os_thp(void) {
  int m = atomic_load_explicit(&thp_mode, memory_order_relaxed);
  if (m >= 0) return (unsigned)m;
  int sys = read_thp_system();
  long knob = HK_LOAD_RELAXED(hk_knobs.thp);
  if (knob == HK_THP_KNOB_NEVER || sys == SYS_NEVER) m = HK_THP_NONE;
  else if (knob == HK_THP_KNOB_ALWAYS || sys == SYS_ALWAYS) m = HK_THP_ALL;
  else if (knob == HK_THP_KNOB_AUTO && hk_os_page_reporting() >= 0) m = HK_THP_NONE;  /* huge pages cost here */
  else m = HK_THP_SPANS;  /* spans, or auto under madvise (or an unreadable mode) */
  atomic_store_explicit(&thp_mode, m, memory_order_relaxed);
  return (unsigned)m;
}

/* A huge-page advice, counted; errno kept (advice is only a hint). */
static void advise(void *p, size_t size, int advice) {
  os_call();
  atomic_fetch_add_explicit(&hk_os_stats.madvise_calls, 1, memory_order_relaxed);
  int saved = errno;
  madvise(p, size, advice);
  errno = saved;
}

void hk_os_advise_region(void *p, size_t size, bool ss) {
  /* auto: a superslab gets huge pages only where the system's mode is
   * `always`, which gives them unasked; no file is read for it (a small
   * program's first superslab read two: the mode and page reporting) */
  if (ss && HK_LOAD_RELAXED(hk_knobs.thp) == HK_THP_KNOB_AUTO) return;
  unsigned m = hk_os_thp();
  int advice;
  if (m == HK_THP_ALL || (m == HK_THP_SPANS && !ss)) {
    advice = MADV_HUGEPAGE;
    atomic_fetch_add_explicit(&hk_os_stats.huge_advised_bytes, size, memory_order_relaxed);
  } else if (HK_LOAD_RELAXED(hk_knobs.thp) == HK_THP_KNOB_NEVER && read_thp_system() == SYS_ALWAYS) {
    advice = MADV_NOHUGEPAGE;  /* the system would give them anyway */
  } else {
    return;
  }
  advise(p, size, advice);
}

/* An idle superslab's huge page was split by a purge: khugepaged is to
 * leave it (it would fill the range again), until a slab is taken and it
 * is asked for again. */
void hk_os_advise_nohuge(void *p, size_t size) { advise(p, size, MADV_NOHUGEPAGE); }
void hk_os_advise_huge(void *p, size_t size) {
  atomic_fetch_add_explicit(&hk_os_stats.huge_advised_bytes, size, memory_order_relaxed);
  advise(p, size, MADV_HUGEPAGE);
}

void hk_os_advise_plain(void *p, size_t size) {
  if (read_thp_system() == SYS_ALWAYS) advise(p, size, MADV_NOHUGEPAGE);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static _Atomic bool no_populate;  /* the kernel said EINVAL once: older than 5.14 */

bool hk_os_populate(void *p, size_t size) {
  os_call();
  if (size == 0) return true;
  if (atomic_load_explicit(&no_populate, memory_order_relaxed)) return false;
  atomic_fetch_add_explicit(&hk_os_stats.populate_calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&hk_os_stats.populate_bytes, size, memory_order_relaxed);
  int saved = errno;
  int rc = madvise(p, size, MADV_POPULATE_WRITE);
  if (rc != 0 && errno == EINVAL) atomic_store_explicit(&no_populate, true, memory_order_relaxed);
  errno = saved;
  return rc == 0;
}

size_t hk_os_huge_bytes(void) {
  char buf[2048];  /* smaps_rollup is about 1 KiB */
  if (!read_file("/proc/self/smaps_rollup", buf, sizeof buf)) return 0;
  const char *s = strstr(buf, "AnonHugePages:");
  if (!s) return 0;
  s += sizeof "AnonHugePages:" - 1;
  return (size_t)take_decimal(&s) << 10;
}

bool hk_os_resident(void *p, size_t size, unsigned char *vec) {
  os_call();
  int saved = errno;
  int rc = mincore(p, size, vec);
  errno = saved;
  return rc == 0;
}

static bool protect(void *p, size_t size, int prot) {
  os_call();
  atomic_fetch_add_explicit(&hk_os_stats.mprotect_calls, 1, memory_order_relaxed);
  int saved = errno;
  int rc = mprotect(p, size, prot);
  errno = saved;
  return rc == 0;
}

bool hk_os_protect_none(void *p, size_t size) { return protect(p, size, PROT_NONE); }

/* ---- guard markers ----
 * A marker in a page's table entry faults any access (SIGSEGV), as
 * PROT_NONE does, but splits no mapping: mprotect of one page in an open
 * range makes three mappings of one, a call that took a large share of the
 * secure build's time on big blocks, and vm.max_map_count (65,530) bounds how many there
 * may be. MADV_DONTNEED keeps a marker, fork copies it. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
static _Atomic int guard_markers;  /* 0 not asked yet, 1 yes, 2 no */

bool hk_os_guard_markers(void) {
  int m = atomic_load_explicit(&guard_markers, memory_order_relaxed);
  if (m == 0) {
    hk_knobs_init();
    /* an empty range: 0 for advice the kernel knows, EINVAL otherwise */
    int saved = errno;
    m = HK_LOAD_RELAXED(hk_knobs.guard_markers) && madvise((void *)HK_PAGE, 0, MADV_GUARD_INSTALL) == 0 ? 1 : 2;
    errno = saved;
    atomic_store_explicit(&guard_markers, m, memory_order_relaxed);
  }
  return m == 1;
}

static bool guard_advise(void *p, size_t size, int advice) {
  os_call();
  atomic_fetch_add_explicit(&hk_os_stats.guard_calls, 1, memory_order_relaxed);
  int saved = errno;
  int rc = madvise(p, size, advice);
  errno = saved;
  return rc == 0;
}
bool hk_os_guard(void *p, size_t size) { return guard_advise(p, size, MADV_GUARD_INSTALL); }
bool hk_os_unguard(void *p, size_t size) { return guard_advise(p, size, MADV_GUARD_REMOVE); }
bool hk_os_close_guard(void *p, size_t size) {
  return hk_os_guard_markers() ? hk_os_guard(p, size) : hk_os_protect_none(p, size);
}
bool hk_os_commit(void *p, size_t size) { return protect(p, size, PROT_READ | PROT_WRITE); }

/* A fresh PROT_NONE mapping laid over the range: one call that both drops
 * its pages and makes it inaccessible (mprotect + madvise would be two). */
bool hk_os_decommit(void *p, size_t size) {
  count_mmap(size);
  int saved = errno;
  void *q = mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  errno = saved;
  return q == p;
}

bool hk_os_resize_inplace(void *p, size_t old_size, size_t new_size) {
  os_call();
  if (!HK_OS_MREMAP) return false;
  atomic_fetch_add_explicit(&hk_os_stats.mremap_calls, 1, memory_order_relaxed);
  int saved = errno;
  void *q = mremap(p, old_size, new_size, 0);
  errno = saved;
  if (q == MAP_FAILED) return false;
  if (new_size > old_size) note_mapped(new_size - old_size);
  else note_unmapped(old_size - new_size);
  return true;
}

bool hk_os_move(void *p, size_t old_size, size_t new_size, void *target) {
  os_call();
  if (!HK_OS_MREMAP) return false;
  atomic_fetch_add_explicit(&hk_os_stats.mremap_calls, 1, memory_order_relaxed);
  int saved = errno;
  void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  errno = saved;
  if (q == MAP_FAILED) return false;
  if (q != target) {
    /* an emulator (valgrind) moved it elsewhere: finish the move by hand
     * (target may be a PROT_NONE reservation: open it first) */
    protect(target, new_size, PROT_READ | PROT_WRITE);
    memcpy(target, q, old_size < new_size ? old_size : new_size);
    raw_unmap(q, new_size);
  }
  /* target's reservation (new_size, counted when mapped) now holds the data;
   * the old mapping is gone. */
  note_unmapped(old_size);
  return true;
}

uint64_t hk_os_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Reads the file at path into buf (NUL-terminated); false on error or when
 * empty. No allocation, no stdio: callable from any slow path. With
 * one_line, the text ends at the first read that ends it in a newline: a
 * file of one line is whole then, and the read that would only see its
 * end is a system call saved (a big block's first use reads eight such
 * files: the cgroup's limits, the THP mode, page reporting). */
static bool read_text(const char *path, char *buf, size_t size, bool one_line) {
  os_call();
  int saved = errno;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  size_t have = 0;
  if (fd >= 0) {
    for (ssize_t got; have + 1 < size && (got = read(fd, buf + have, size - 1 - have)) > 0;) {
      have += (size_t)got;
      if (one_line && buf[have - 1] == '\n') break;
    }
    close(fd);
  }
  buf[have] = 0;
  errno = saved;
  return have > 0;
}
static bool read_file(const char *path, char *buf, size_t size) { return read_text(path, buf, size, false); }
static bool read_line(const char *path, char *buf, size_t size) { return read_text(path, buf, size, true); }

bool hk_os_read_file(const char *path, char *buf, size_t size) { return read_file(path, buf, size); }
bool hk_os_read_line(const char *path, char *buf, size_t size) { return read_line(path, buf, size); }

size_t hk_os_rss_bytes(void) {
  char buf[128];
  size_t rss = 0;
  if (read_line("/proc/self/statm", buf, sizeof buf)) {
    const char *s = buf;
    take_decimal(&s);  /* the total size */
    rss = (size_t)take_decimal(&s) * (size_t)sysconf(_SC_PAGESIZE);
  }
  return rss;
}

/* The kernel's high-water mark of this program's memory: status's VmHWM,
 * which exec starts again. Not ru_maxrss (only without /proc): exec keeps
 * it, so a program started by a big one (a test runner, a benchmark
 * harness, a server's forked workers) read its parent's peak as its own.
 * The mark and statm's resident count are two readings at two moments: the
 * mark may lag a page or two behind the current count, which a peak must
 * never be below. */
size_t hk_os_peak_rss_bytes(size_t current) {
  char buf[4096];
  size_t peak = 0;
  const char *v = read_file("/proc/self/status", buf, sizeof buf) ? strstr(buf, "\nVmHWM:") : NULL;
  if (v) {
    v += sizeof "\nVmHWM:" - 1;
    peak = (size_t)take_decimal(&v) * 1024u;  /* kB */
  } else {
    struct rusage ru;
    peak = getrusage(RUSAGE_SELF, &ru) == 0 ? (size_t)ru.ru_maxrss * 1024u : 0;
  }
  return peak > current ? peak : current;
}

bool hk_os_peak_rss_reached(size_t bytes) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0 && (size_t)ru.ru_maxrss * 1024u < bytes) return false;
  return hk_os_peak_rss_bytes(0) >= bytes;
}

/* ---- threads of this process, seen through /proc/self/task ----------------- */

int hk_os_thread_kid(void) { return (int)syscall(SYS_gettid); }
int hk_os_pid(void) { return (int)syscall(SYS_getpid); }  /* (libc's getpid: a code window more) */

unsigned hk_os_cpu_count(void) {
  uint64_t mask[16] = { 0 };  /* 1024 CPUs; the kernel fills the bytes it has */
  /* the process's first thread's: the calling one may have been pinned to
   * one CPU by a program that spreads its threads over the CPUs */
  long n = syscall(SYS_sched_getaffinity, getpid(), sizeof mask, mask);
  unsigned c = 0;
  for (long w = 0; n > 0 && w < (long)(sizeof mask / 8); w++)
    for (uint64_t x = mask[w]; x; x &= x - 1) c++;
  return c ? c : 1;
}

/* Reads /proc/self/task/TID/NAME into buf (NUL-terminated); false on error. */
static bool read_task(int ktid, const char *name, char *buf, size_t size) {
  char path[64];
  size_t n = 0;
  const char *pre = "/proc/self/task/";
  while (*pre) path[n++] = *pre++;
  char digits[16];
  size_t d = 0;
  for (unsigned v = (unsigned)ktid; d == 0 || v; v /= 10) digits[d++] = (char)('0' + v % 10);
  while (d) path[n++] = digits[--d];
  path[n++] = '/';
  while (*name && n + 1 < sizeof path) path[n++] = *name++;
  path[n] = 0;
  return read_file(path, buf, size);
}

/* The kernel's clock id of one thread's CPU time (its ABI: the thread id
 * inverted, shifted by 3, with the per-thread bit and the scheduler's
 * clock: what pthread_getcpuclockid makes of a pthread_t, here from the
 * kernel id a heap records). One system call, no /proc. */
bool hk_os_task_cpu_ns(int ktid, uint64_t *out) {
  clockid_t id = (clockid_t)((~(unsigned)ktid << 3) | 4 | 2);
  struct timespec ts;
  if (ktid <= 0 || clock_gettime(id, &ts) != 0) return false;
  *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  return true;
}

uint64_t hk_os_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hk_os_sleep_ms(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

/* /proc/.../syscall: "NR args sp pc" when blocked in one, "-1 sp pc" when
 * blocked elsewhere (a page fault), "running" */
bool hk_os_task_in_syscall(int ktid) {
  char buf[256];
  if (!read_task(ktid, "syscall", buf, sizeof buf)) return false;
  return buf[0] >= '0' && buf[0] <= '9';
}

bool hk_os_task_switches(int ktid, unsigned long *out) {
  HK_BSS_ARRAY static char buf[16384];
  if (!read_task(ktid, "status", buf, sizeof buf)) return false;
  unsigned long sum = 0;
  int found = 0;
  for (const char *p = buf; (p = strstr(p, "ctxt_switches:")) != NULL; found++) {
    p += sizeof "ctxt_switches:" - 1;
    sum += take_decimal(&p);
  }
  *out = sum;
  return found == 2;
}
