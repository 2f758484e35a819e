/* The hardening measures, one switch each. This is the one place that
 * turns them on: code tests a measure (`if (HK_M_SHUFFLE)`), never the
 * build. Each measure has a name (what -DHAKMEM_MEASURES=... takes), a
 * test (tests/security/matrix.txt says what each catches alone) and a cost
 * row in docs/SECURITY.md.
 *
 *   name     macro          what it does
 *   keys     HK_M_KEYS      free-list links encoded with a random key per
 *                           slab, and a popped link must be a block of the
 *                           same slab (not merely of its superslab)
 *   canary   HK_M_CANARY    a trailer word per small block: a canary hashed
 *                           from the slab key and the address, and the
 *                           block's state (live / freed / remote-freed):
 *                           overflows into the trailer, delayed and
 *                           interleaved double frees, a free list forged to
 *                           hand out a live block
 *   slack    HK_M_SLACK     the byte right after the request is checked at
 *                           free: a one-byte overflow, whatever the slack
 *   shuffle  HK_M_SHUFFLE   fresh blocks are handed out in a random order
 *   delay    HK_M_DELAY     a freed block waits until its slab's free list
 *                           has run dry twice before reuse (src/mem/slab.c);
 *                           a mid block first waits behind 8 others in the
 *                           mid cache's queue (src/heap/heap.h)
 *   guard    HK_M_GUARD     a PROT_NONE page after each large block and
 *                           between each superslab's metadata and blocks
 *   kind     HK_M_KIND      delete of new[] memory (and the reverse), and
 *                           free of C++ memory, are reported
 *   sized    HK_M_SIZED     sized delete / free_sized with a size the block
 *                           was not allocated with is reported
 *   fill     HK_M_FILL      HAKMEM_FREE_FILL is honoured: freed blocks are
 *                           filled and checked when handed out again
 *   under    HK_M_UNDER     free checks the byte right before the block (the
 *                           last byte of the block before's trailer, or of
 *                           the slab before's unused tail): an underflow
 *                           that writes a non-zero byte there
 *   zero     HK_M_ZERO      malloc(0) returns a unique pointer into memory
 *                           that faults on any access (src/mem/zero.c)
 *   copy     HK_M_COPY      memcpy, memset, strcpy and the rest of the
 *                           family (and their fortified __*_chk forms) are
 *                           interposed: a destination (and a source) in
 *                           hakmem memory must lie inside one live block's
 *                           requested size, checked before any byte moves
 *                           (src/override/copy_check.c); hakmem's own copies go
 *                           straight to glibc's (src/base/libc.h)
 *
 * slack, kind, sized, fill, under and copy keep what they check in canary's
 * trailer word (copy: the requested size and the live state), so they turn
 * canary on. `make secure` (HK_SECURE) turns every
 * measure on; CMake's -DHAKMEM_MEASURES=canary,shuffle defines the
 * HK_M_* of a subset. A measure not defined is off. */
#ifndef HK_MEASURES_H
#define HK_MEASURES_H

#ifdef HK_SECURE  /* the only test of the build: every measure on */
#define HK_M_ALL 1
#else
#define HK_M_ALL 0
#endif

#ifndef HK_M_KEYS
#define HK_M_KEYS HK_M_ALL
#endif
#ifndef HK_M_CANARY
#define HK_M_CANARY HK_M_ALL
#endif
#ifndef HK_M_SLACK
#define HK_M_SLACK HK_M_ALL
#endif
#ifndef HK_M_SHUFFLE
#define HK_M_SHUFFLE HK_M_ALL
#endif
#ifndef HK_M_DELAY
#define HK_M_DELAY HK_M_ALL
#endif
#ifndef HK_M_GUARD
#define HK_M_GUARD HK_M_ALL
#endif
#ifndef HK_M_KIND
#define HK_M_KIND HK_M_ALL
#endif
#ifndef HK_M_SIZED
#define HK_M_SIZED HK_M_ALL
#endif
#ifndef HK_M_FILL
#define HK_M_FILL HK_M_ALL
#endif
#ifndef HK_M_UNDER
#define HK_M_UNDER HK_M_ALL
#endif
#ifndef HK_M_ZERO
#define HK_M_ZERO HK_M_ALL
#endif
#ifndef HK_M_COPY
#define HK_M_COPY HK_M_ALL
#endif

/* the measures that live in the trailer word need it */
#if (HK_M_SLACK || HK_M_KIND || HK_M_SIZED || HK_M_FILL || HK_M_UNDER || HK_M_COPY) && !HK_M_CANARY
#undef HK_M_CANARY
#define HK_M_CANARY 1
#endif

/* The measures in table order, for what names them at run time (the exit
 * line of HAKMEM_VERBOSE) and the only list of their names: CMake,
 * tests/repo/layers.py, tests/security/matrix.sh and bench/security_cost.sh read it. */
#define HK_MEASURE_LIST(X)                                                    \
  X(keys, HK_M_KEYS) X(canary, HK_M_CANARY) X(slack, HK_M_SLACK)              \
  X(shuffle, HK_M_SHUFFLE) X(delay, HK_M_DELAY) X(guard, HK_M_GUARD)          \
  X(kind, HK_M_KIND) X(sized, HK_M_SIZED) X(fill, HK_M_FILL)                \
  X(under, HK_M_UNDER) X(zero, HK_M_ZERO) X(copy, HK_M_COPY)
#define HK_M_AND_ON(name, on) && (on)
#define HK_M_EVERY (1 HK_MEASURE_LIST(HK_M_AND_ON))  /* all on: the secure build */

/* Derived: what the layers below test. */
#define HK_PAD (HK_M_CANARY ? 8 : 0)        /* bytes of trailer per small block */
/* under: the last bytes of every slab's area are never a block, so the
 * byte before a slab's first block is known (zero) */
#define HK_SLAB_TAIL (HK_M_UNDER ? 8 : 0)
#define HK_SLAB_KEYED (HK_M_KEYS || HK_M_CANARY)  /* malloc and free read s->key */
/* large blocks remember their requested size: what usable_size says and
 * sized delete checks (sized turns canary on) */
#define HK_LARGE_REQUESTED (HK_M_CANARY || HK_M_GUARD)

#endif
