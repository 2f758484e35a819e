/* Valgrind tracking (the hakmem-valgrind build, HK_VALGRIND): blocks are
 * announced to memcheck with client requests, so a program running on
 * hakmem under valgrind gets leak, use-after-free and double-free reports as
 * it would on glibc. Free-list links inside freed blocks are made accessible
 * only while hakmem itself reads or writes them. No-ops in other builds. */
#ifndef HK_TRACK_H
#define HK_TRACK_H

/* Pointers hakmem keeps to a block's first byte (a slab's start, a large
 * block's header) would make every leaked block look reachable to
 * memcheck's leak scan: the valgrind build stores them with the top bit set
 * (still exact in the 32-bit offsets the fast path computes). */
#ifdef HK_VALGRIND
#define HK_HIDE_BIT ((uintptr_t)1 << 63)
#else
#define HK_HIDE_BIT ((uintptr_t)0)
#endif
#define HK_HIDE(p)   ((uint8_t *)((uintptr_t)(p) | HK_HIDE_BIT))
#define HK_UNHIDE(p) ((uint8_t *)((uintptr_t)(p) & ~HK_HIDE_BIT))

#ifdef HK_VALGRIND
#include <valgrind/memcheck.h>
#define HK_TRACKING 1
#define hk_track_alloc(p, n, zeroed) VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, (zeroed))
#define hk_track_free(p)             VALGRIND_FREELIKE_BLOCK((p), 0)
#define hk_track_resize(p, from, to) VALGRIND_RESIZEINPLACE_BLOCK((p), (from), (to), 0)
#define hk_track_defined(p, n)       VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define hk_track_noaccess(p, n)      VALGRIND_MAKE_MEM_NOACCESS((p), (n))
#else
#define HK_TRACKING 0
#define hk_track_alloc(p, n, zeroed) ((void)(p), (void)(n), (void)(zeroed))
#define hk_track_free(p)             ((void)(p))
#define hk_track_resize(p, from, to) ((void)(p), (void)(from), (void)(to))
#define hk_track_defined(p, n)       ((void)(p), (void)(n))
#define hk_track_noaccess(p, n)      ((void)(p), (void)(n))
#endif

#endif
