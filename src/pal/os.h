/* OS layer: the only file that calls mmap/munmap/madvise/mremap. Every call
 * is counted with its bytes (the budget the stats report). */
#ifndef HK_OS_H
#define HK_OS_H

#include <stdatomic.h>
#include "base/config.h"

typedef struct hk_os_counters {
  atomic_ulong mmap_calls, munmap_calls, madvise_calls, mremap_calls, mprotect_calls;
  atomic_ulong guard_calls;  /* guard markers put or taken (madvise, not in madvise_calls) */
  atomic_ulong mmap_bytes, munmap_bytes, madvise_bytes;  /* handed to that call */
  atomic_ulong mapped_now, mapped_peak;  /* bytes currently mapped by hakmem */
  atomic_ulong populate_calls, populate_bytes;  /* MADV_POPULATE_WRITE (fresh calloc pages) */
  atomic_ulong huge_advised_bytes;  /* regions advised MADV_HUGEPAGE */
} hk_os_counters_t;

extern hk_os_counters_t hk_os_stats;

/* size a multiple of HK_PAGE; align a power of two >= HK_PAGE. NULL on failure. */
void *hk_os_map_aligned(size_t size, size_t align);
void  hk_os_unmap(void *p, size_t size);
/* The same, inaccessible (PROT_NONE): address space to commit into. */
void *hk_os_reserve_aligned(size_t size, size_t align);
/* Make reserved pages readable and writable; false if the kernel says no. */
bool  hk_os_commit(void *p, size_t size);
/* Back to reserved: pages dropped (read as zero when committed again) and
 * inaccessible. False if the kernel says no. */
bool  hk_os_decommit(void *p, size_t size);
/* Give pages back to the OS; contents read as zero afterwards. */
void  hk_os_purge(void *p, size_t size);
/* Transparent huge pages (HAKMEM_THP with the system's mode, read once):
 * which regions are advised MADV_HUGEPAGE and so purged by whole huge
 * pages. HK_THP_SPANS: the span arenas (HAKMEM_THP=spans, or auto under
 * the system's `madvise` where no free page is reported to a hypervisor);
 * HK_THP_ALL: the superslabs too (HAKMEM_THP=always, or auto under
 * `always`); HK_THP_NONE: no region (the system's `never`, auto where free
 * pages are reported, or HAKMEM_THP=never, which advises MADV_NOHUGEPAGE
 * where the system would give them anyway). */
enum { HK_THP_NONE = 0, HK_THP_SPANS = 1, HK_THP_ALL = 2 };
unsigned hk_os_thp(void);
/* The order from which the guest reports free blocks to its hypervisor
 * (free page reporting), -1 when it does not; auto then asks for no huge
 * page (os.c says why). */
int hk_os_page_reporting(void);
/* vm.max_map_count: the mappings a process may have (read once). */
unsigned long hk_os_max_map_count(void);
/* The system's mode: "always", "madvise", "never" or "" (unreadable). */
const char *hk_os_thp_system(void);
/* Advise region p (2 MiB aligned, whole huge pages) as hk_os_thp() says for
 * a region of that kind (ss: a superslab, else a span arena). */
void  hk_os_advise_region(void *p, size_t size, bool ss);
/* MADV_NOHUGEPAGE / MADV_HUGEPAGE on a range (counted): an idle purge's
 * split huge page, and the same range taken again (superslab.c) */
void  hk_os_advise_nohuge(void *p, size_t size);
void  hk_os_advise_huge(void *p, size_t size);
/* Advise a span arena that must not get huge pages (span_thp.c places sparse
 * big blocks there): MADV_NOHUGEPAGE where the system's mode is `always`,
 * nothing otherwise (under `madvise` an unadvised region gets none). */
void  hk_os_advise_plain(void *p, size_t size);
/* Fault in fresh pages for writing, zero-filled, in one call (Linux 5.14+
 * MADV_POPULATE_WRITE): no zero-page mapping, copy and TLB shootdown when
 * the program reads them before it writes them. False when the kernel does
 * not have it (then never asked again) or says no. */
bool  hk_os_populate(void *p, size_t size);
/* Bytes of this process backed by huge pages (/proc/self/smaps_rollup
 * AnonHugePages; slow, for snapshots). */
size_t hk_os_huge_bytes(void);
/* Which of the pages at p are resident: vec[i] & 1 for page i (mincore).
 * False if the kernel says no. */
bool  hk_os_resident(void *p, size_t size, unsigned char *vec);
/* Make pages inaccessible (guard pages). */
bool  hk_os_protect_none(void *p, size_t size);
/* Guard markers (MADV_GUARD_INSTALL, Linux 6.13): whether this kernel has
 * them and HAKMEM_GUARD_MARKERS allows them; hk_os_guard makes pages of an
 * open mapping fault on any access, dropping their contents, without
 * splitting the mapping; hk_os_unguard opens them again (they read zero). */
bool  hk_os_guard_markers(void);
bool  hk_os_guard(void *p, size_t size);
bool  hk_os_unguard(void *p, size_t size);
/* A guard: markers where hk_os_guard_markers() allows them (no mapping
 * split), else PROT_NONE. */
bool  hk_os_close_guard(void *p, size_t size);
/* Grow or shrink a mapping without moving it; false if it cannot. */
bool  hk_os_resize_inplace(void *p, size_t old_size, size_t new_size);
/* Move a mapping onto the (already mapped) range at target, replacing it. */
bool  hk_os_move(void *p, size_t old_size, size_t new_size, void *target);
/* Coarse monotonic clock in milliseconds (vDSO; no syscall). */
uint64_t hk_os_now_ms(void);
/* The file at path into buf (NUL-terminated), no allocation; false on
 * error or when empty. */
bool hk_os_read_file(const char *path, char *buf, size_t size);
/* The same for a file of one line (a value of /proc or /sys): the text
 * ends at the first read that ends it in a newline. */
bool hk_os_read_line(const char *path, char *buf, size_t size);
/* Resident set size of the process in bytes (reads /proc; slow). */
size_t hk_os_rss_bytes(void);
/* Peak resident set size, never below `current` (a reading of hk_os_rss_bytes). */
size_t hk_os_peak_rss_bytes(size_t current);
/* Whether the peak resident set has reached bytes: getrusage's ru_maxrss
 * first (one system call; at least the mark, as exec keeps a parent's), the
 * status file only when that bound is past it. */
bool hk_os_peak_rss_reached(size_t bytes);

/* The calling thread's kernel id (gettid). */
int hk_os_thread_kid(void);
int hk_os_pid(void);  /* getpid() */
/* The CPUs this process may run on (its first thread's affinity mask, one
 * system call, no allocation); at least 1. */
unsigned hk_os_cpu_count(void);
/* Thread ktid of this process (/proc/self/task): blocked in a system call
 * now? False when it is not, or /proc cannot be read. */
bool hk_os_task_in_syscall(int ktid);
/* Its voluntary + involuntary context switches; false when unreadable. Not
 * reentrant (a static buffer: the status file is long on big machines); its
 * one caller, the background purge's pass, runs one at a time. */
bool hk_os_task_switches(int ktid, unsigned long *out);
/* Its CPU time in ns (the scheduler's count: it grows only while the
 * thread runs, not while it waits or sleeps); false when unreadable. */
bool hk_os_task_cpu_ns(int ktid, uint64_t *out);
/* The monotonic clock in ns (not the coarse one). */
uint64_t hk_os_now_ns(void);
/* Sleeps about ms milliseconds (a signal cuts it short). */
void hk_os_sleep_ms(long ms);

#endif
