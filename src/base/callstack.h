/* Call stacks for the heap profiler: the return addresses of the calling
 * thread, innermost first.
 *
 * libgcc's _Unwind_Backtrace costs about a thousand instructions a frame:
 * it finds each frame's FDE and runs its CFA program every time. A
 * profiled program samples the same few call sites over and over, so
 * hk_unwind keeps, per return address, the rule that program came to
 * (where the caller's CFA, return address and rbp are), and then a frame
 * costs a table probe and two loads. A frame whose rule it does not
 * model (a signal frame, a CFA expression other than gcc's realigned
 * frame) sends the whole walk to libgcc instead, so the result is always
 * what libgcc would give. x86-64 only; elsewhere libgcc does every walk.
 * Why not libunwind or frame pointers (measured): docs/PROFILING.md. */
#ifndef HK_CALLSTACK_H
#define HK_CALLSTACK_H

#include <stdint.h>
#include "base/config.h"

/* At most max return addresses, from the one into hk_unwind's caller
 * outwards; the count. May call malloc the first time (libgcc loads):
 * call it once at start-up with the allocator guarded. */
/* which walker: the cached one, or libgcc's every time (tests compare) */
enum { HK_UNWIND_CACHED, HK_UNWIND_LIBGCC };
unsigned hk_unwind_with(int how, uintptr_t *pc, unsigned max);
HK_INLINE unsigned hk_unwind(uintptr_t *pc, unsigned max) { return hk_unwind_with(HK_UNWIND_CACHED, pc, max); }

/* walks done by the cached walker to the end, and walks it handed to
 * libgcc (tests: the cached walker did the work) */
void hk_unwind_counts(uint64_t *cached, uint64_t *fallback);

/* a fork child: the cache lock may have been held by a thread now gone */
void hk_unwind_fork_child(void);

#endif
