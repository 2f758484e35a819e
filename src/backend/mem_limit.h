/* The memory budget (issue 43): the limit in force (HAKMEM_MEMORY_LIMIT, or
 * else the process's cgroup), an estimate of the process's resident memory,
 * and the one pressure signal that the caches, the purge clock and the page
 * layer's caps read. docs/ARCHITECTURE.md, "Memory budget".
 *
 * The estimate is the last reading of the process's resident set
 * (/proc/self/statm, read on the purge clock) plus every byte hakmem has let
 * grow since (hk_mem_admit charges them): an over-estimate between readings,
 * exact again at each one. No path of malloc's fast path reads any of it. */
#ifndef HK_MEM_LIMIT_H
#define HK_MEM_LIMIT_H

#include "base/config.h"

enum { HK_MEM_NONE = 0, HK_MEM_SOFT = 1, HK_MEM_HARD = 2 };
/* where the limit in force came from (struct hak_stats mem_limit_source) */
enum { HK_MEM_SRC_NONE = 0, HK_MEM_SRC_KNOB = 1, HK_MEM_SRC_CGROUP2 = 2, HK_MEM_SRC_CGROUP1 = 3 };
/* HAKMEM_MEMORY_LIMIT_ACTION */
enum { HK_MEM_ACTION_KEEP = 0, HK_MEM_ACTION_FAIL = 1 };

/* Nonzero once a soft or a hard limit is in force (read lazily: the first
 * call reads the knob and the cgroup). */
extern unsigned char hk_mem_on;
void hk_mem_init(void);
HK_INLINE bool hk_mem_limited(void) {
  extern unsigned char hk_mem_ready;
  if (HK_UNLIKELY(!HK_LOAD_RELAXED(hk_mem_ready))) hk_mem_init();
  return HK_LOAD_RELAXED(hk_mem_on) != 0;
}
/* hk_mem_limited for a fresh slab: a process's first HK_MEM_UNREAD_SLABS
 * slabs (2 MiB at most) are taken before the cgroup's files are read, so
 * that a small program never reads them (an open of /proc/self/cgroup and
 * two per level of its path, docs/ARCHITECTURE.md "Memory budget").
 * The knob is read at once; a large block, a purge tick or the stats read
 * the cgroup whenever they come first. */
bool hk_mem_limited_slab(void);
/* hk_mem_limited for a large block: the blocks of a process's first
 * HK_MEM_UNREAD_NS after its first large block are taken unread too (a
 * program that ends within it never reads the files: the read is most of
 * what a first large block costs). What the budget acts on is resident
 * memory, which page faults bound: a window that short lets a program
 * fault a few MiB more than a budget read at once would. Read at once with
 * HAKMEM_MEMORY_LIMIT set or HAKMEM_MEMORY_LIMIT_ACTION=fail (a refusal
 * needs the limit at the first block); the purge clock reads them once the
 * window has passed (hk_mem_tick). */
bool hk_mem_limited_large(void);

/* HK_MEM_NONE, HK_MEM_SOFT (the estimate is past the soft limit: caches
 * shrink, delays shorten) or HK_MEM_HARD (within a sixteenth of the hard
 * limit, or past it: caches go, purges are immediate). Atomic loads only. */
unsigned hk_mem_pressure(void);

/* The levers, as the pressure bends them: a purge delay (soft: an eighth,
 * hard: a 64th), a cache's count or bytes (soft: a quarter, hard: none). The budget overrides a cap the program pinned (hak_ctl_set):
 * a pin binds the learner, not the limit. */
long hk_mem_scale_delay(long ms);
long hk_mem_scale_cap(long cap);

/* The purge clock: re-reads the resident set (every 10 ms under pressure,
 * every 100 ms otherwise) and the cgroup's limits (every second). */
void hk_mem_tick(void);

/* A path about to let hakmem grow by `bytes` (a fresh slab, a large
 * block): true to go ahead (the bytes are charged to the estimate). When
 * they would pass the hard limit the resident set is read again; still over,
 * relieve(arg) purges what it can, and it is read once more. Still over:
 * counted, and false with HAKMEM_MEMORY_LIMIT_ACTION=fail (the caller
 * fails with ENOMEM), true with keep. */
bool hk_mem_admit(size_t bytes, void (*relieve)(void *), void *arg);
/* The relief of last resort, after the caller's: what hak_ctl("purge")
 * does (this thread's heap; other threads' through the background purge).
 * Set once by init.c (docs/ARCHITECTURE.md, "Hooks"). */
void hk_mem_set_purge_hook(void (*fn)(void));

typedef struct {
  size_t hard, soft;            /* bytes; 0: none                       */
  unsigned source, action, pressure;
  size_t resident;              /* the estimate                         */
  unsigned long over;           /* growth past the hard limit after a relief */
  unsigned long refused;        /* of them, refused (action fail)       */
  unsigned long reliefs;        /* purges forced by the hard limit      */
} hk_mem_info_t;
void hk_mem_info(hk_mem_info_t *out);
const char *hk_mem_source_name(unsigned source);  /* "knob", "cgroup v2", "cgroup v1", "none" */

/* The cgroup limits of the process whose /proc/PID/cgroup is at
 * proc_cgroup, under the cgroup file system mounted at root: v2 (the "0::"
 * line; memory.max hard, memory.high soft) when root has that cgroup's
 * memory.max, else v1 (the "memory" controller's line; memory.limit_in_bytes
 * hard, memory.soft_limit_in_bytes soft, under root/memory). The smallest
 * limit of the cgroup and its ancestors; "max" and v1's near-2^63 are none.
 * Returns HK_MEM_SRC_*: NONE when no limit was found. Separate from the
 * process's state, so tests feed it a fake tree. */
unsigned hk_mem_read_cgroup(const char *proc_cgroup, const char *root, size_t *hard, size_t *soft);
/* The same, and the folder of the cgroup whose limit binds (the smallest
 * hard limit, else the smallest soft one) into group ("" for none). */
unsigned hk_mem_read_cgroup_group(const char *proc_cgroup, const char *root, size_t *hard, size_t *soft,
                                  char *group, size_t group_size);
/* That cgroup's usage less the file pages the kernel reclaims by itself:
 * v2 memory.current less memory.stat's inactive_file, v1
 * memory.usage_in_bytes less total_inactive_file; 0 when unreadable. The
 * budget's resident figure under a cgroup limit is the larger of it and
 * the process's own resident set. */
size_t hk_mem_read_group_usage(const char *group, unsigned source);

#endif
