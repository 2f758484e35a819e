/* Compile-time constants and compiler helpers shared by every layer. */
#ifndef HK_CONFIG_H
#define HK_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define HK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define HK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HK_INLINE      static inline __attribute__((always_inline))
#define HK_NOINLINE    __attribute__((noinline))
#define HK_COLD        __attribute__((cold, noinline))
#define HK_EXPORT      __attribute__((visibility("default")))
/* On internal data read by the fast paths: accessed directly, not via GOT. */
#define HK_HIDDEN      __attribute__((visibility("hidden")))
#define HK_CACHE_LINE  64

/* Superslab: 2 MiB-aligned region holding slabs and their metadata. */
#define HK_SS_SHIFT    21
#define HK_SS_SIZE     ((size_t)1 << HK_SS_SHIFT)
#define HK_SS_MASK     (HK_SS_SIZE - 1)
#define HK_PAGE        ((size_t)4096)

/* Tiers. */
#define HK_SMALL_MAX   1024            /* tiny: 64 KiB slabs      */
#define HK_MID_MAX     (32 * 1024)     /* mid: 256 KiB slabs      */
#define HK_NCLASS      72
#define HK_NCLASS_SMALL 32             /* classes 0..31 are <= 1 KiB */

/* Blocks a slab may hand out aligned: slab starts are 4 KiB aligned. */
#define HK_SLAB_ALIGN_MAX HK_PAGE

/* Fresh blocks are carved at most this many bytes at a time: touching a
 * whole slab up front would cost RSS the program may never use. */
#define HK_CARVE_MAX_BYTES (64u * 1024u)   /* HAKMEM_CARVE_KB is at most 64 */

#define HK_MAX_ALLOC   ((size_t)PTRDIFF_MAX - 2 * HK_SS_SIZE)

/* Fields one thread writes and others may read (ownership, states): plain
 * moves on x86, but visible to the compiler and to TSan as atomic. */
#define HK_LOAD_RELAXED(x)      __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define HK_STORE_RELAXED(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* What a block was allocated as, for the secure build's checks at free. */
enum { HK_KIND_MALLOC = 0, HK_KIND_NEW = 1, HK_KIND_NEW_ARRAY = 2, HK_KIND_ANY = 255 };

/* "MAJOR.MINOR.PATCH", from the HAKMEM_VERSION_* of include/hakmem.h, which
 * the file using it includes. */
#define HK_STR2(x) #x
#define HK_STR(x) HK_STR2(x)
#define HK_VERSION_STRING \
  HK_STR(HAKMEM_VERSION_MAJOR) "." HK_STR(HAKMEM_VERSION_MINOR) "." HK_STR(HAKMEM_VERSION_PATCH)

HK_INLINE size_t hk_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

#endif
