/* Measure zero (zero.h): malloc(0) served from never-accessible chunks. */
#include "mem/zero.h"

#include <errno.h>
#include <stdatomic.h>

#include "base/chunk_map.h"
#include "base/measures.h"
#include "pal/os.h"
#include "base/report.h"

/* A zero chunk is one 2 MiB chunk: its first pages hold this header and a
 * bitmap of the live slots; a guard gap, then the slots, 16 bytes apart
 * (malloc's alignment), all PROT_NONE. Slots are handed out in address
 * order and never again: a chunk is a quarantine of 126976 pointers, and
 * when it is used up the next one is reserved (address space only; the
 * header's pages are the memory it costs). Chunks are never unmapped. */
#define ZERO_MAGIC 0x68616b6d656d5a30ull  /* "hakmemZ0" */
#define SLOT 16u
#define FIRST ((size_t)64 << 10)              /* header, bitmap, guard gap */
#define NSLOTS ((uint32_t)((HK_SS_SIZE - FIRST) / SLOT))
#define NWORDS ((NSLOTS + 63) / 64)

typedef struct {
  uint64_t magic;
  _Atomic uint32_t next;                  /* slots handed out (may pass NSLOTS) */
  uint32_t pad;
  _Atomic uint64_t live[NWORDS];          /* handed out and not freed */
} zero_chunk_t;
_Static_assert(sizeof(zero_chunk_t) <= FIRST - HK_PAGE, "the header leaves a guard page");

static _Atomic(zero_chunk_t *) current;

static zero_chunk_t *chunk_new(void) {
  zero_chunk_t *c = hk_os_reserve_aligned(HK_SS_SIZE, HK_SS_SIZE);
  if (!c) return NULL;
  if (!hk_os_commit(c, hk_align_up(sizeof *c, HK_PAGE))) {
    hk_os_unmap(c, HK_SS_SIZE);
    return NULL;
  }
  c->magic = ZERO_MAGIC;
  hk_chunk_set(c, HK_CHUNK_ZERO);
  return c;
}

void *hk_zero_alloc(void) {
  for (;;) {
    zero_chunk_t *c = atomic_load_explicit(&current, memory_order_acquire);
    if (c) {
      uint32_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
      if (i < NSLOTS) {
        atomic_fetch_or_explicit(&c->live[i / 64], 1ull << (i % 64), memory_order_relaxed);
        return (uint8_t *)c + FIRST + (size_t)i * SLOT;
      }
    }
    zero_chunk_t *n = chunk_new();  /* used up (or none yet): the next chunk */
    if (!n) {
      errno = ENOMEM;
      return NULL;
    }
    if (!atomic_compare_exchange_strong_explicit(&current, &c, n, memory_order_acq_rel, memory_order_acquire)) {
      hk_chunk_set(n, HK_CHUNK_NONE);  /* another thread's chunk came first */
      hk_os_unmap(n, HK_SS_SIZE);
    }
  }
}

/* The slot of p, or NSLOTS with *why set. */
static uint32_t slot_of(const void *p, zero_chunk_t **cp, const char **why) {
  zero_chunk_t *c = (zero_chunk_t *)((uintptr_t)p & ~(uintptr_t)HK_SS_MASK);
  size_t off = (uintptr_t)p - (uintptr_t)c;
  *cp = c;
  if (c->magic != ZERO_MAGIC || off < FIRST || (off - FIRST) % SLOT) {
    *why = HK_WHY_NOT_START;
    return NSLOTS;
  }
  uint32_t i = (uint32_t)((off - FIRST) / SLOT);
  uint32_t handed = atomic_load_explicit(&c->next, memory_order_relaxed);
  if (i >= handed) {
    *why = HK_WHY_NEVER_HANDED;
    return NSLOTS;
  }
  return i;
}

bool hk_zero_free(const char *what, void *p, size_t size) {
  zero_chunk_t *c;
  const char *why = NULL;
  uint32_t i = slot_of(p, &c, &why);
  if (i == NSLOTS) {
    hk_report_invalid(what, p, why);
    return false;
  }
  uint64_t bit = 1ull << (i % 64);
  if (!(atomic_fetch_and_explicit(&c->live[i / 64], ~bit, memory_order_relaxed) & bit)) {
    hk_report_invalid(what, p, HK_WHY_DOUBLE_FREE);
    return false;
  }
  if (HK_M_SIZED && size != 0)
    hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
  return true;
}

bool hk_zero_live(const void *p) {
  zero_chunk_t *c;
  const char *why;
  uint32_t i = slot_of(p, &c, &why);
  return i != NSLOTS && (atomic_load_explicit(&c->live[i / 64], memory_order_relaxed) >> (i % 64) & 1);
}
