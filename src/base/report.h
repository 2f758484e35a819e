/* Reports: messages to stderr that never allocate, heap errors and
 * assertion failures. A leaf below every layer, so that any layer may report
 * without knowing who started the process. */
#ifndef HK_REPORT_H
#define HK_REPORT_H

#include "base/config.h"

/* Message to stderr (or to fd) without allocating. */
void hk_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hk_message_fd(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report a heap error ("hakmem: invalid free(0x..): reason") and abort()
 * (returns, after the report, only when HAKMEM_ABORT_ON_INVALID=0).
 * caller: the return address of the malloc-family call that found it, named
 * in the report; NULL when not known. */
void hk_report_invalid_at(const void *caller, const char *what, const void *p, const char *reason)
    __attribute__((cold, noinline));
void hk_report_invalid(const char *what, const void *p, const char *reason)
    __attribute__((cold, noinline));

/* The reasons a free or realloc names, in one place: tests and users
 * search for these words. */
#define HK_WHY_FOREIGN     "not allocated by hakmem"
#define HK_WHY_NOT_LIVE    "not a live hakmem block"
#define HK_WHY_NEVER_HANDED HK_WHY_NOT_LIVE " (never handed out)"
#define HK_WHY_NOT_START   "not the start of a hakmem block"
#define HK_WHY_INTERIOR    HK_WHY_NOT_START " (interior or misaligned)"
#define HK_WHY_DOUBLE_FREE "block already freed (double free)"

/* The reason for a free whose kind (HK_KIND_MALLOC, _NEW, _NEW_ARRAY: what
 * the caller's call expects) is not the block's: says what was called, what
 * the memory came from, and the call that would have been right, e.g.
 * "delete of memory from new[] (use delete[])". */
const char *hk_why_kind(unsigned expected, unsigned have);

/* Report a heap error found outside the malloc family ("hakmem: TEXT",
 * TEXT from the printf format; the copy measure's "heap overflow in
 * memcpy(...)"), naming the caller as above, and abort() (returns only with
 * HAKMEM_ABORT_ON_INVALID=0). */
void hk_report_heap(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold, noinline));

/* Whether a report aborts (HAKMEM_ABORT_ON_INVALID; set by the knobs). */
void hk_report_set_abort(bool on);

void hk_assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn, cold));

#ifdef HK_DEBUG
#define HK_ASSERT(c) ((c) ? (void)0 : hk_assert_fail(#c, __FILE__, __LINE__))
#else
#define HK_ASSERT(c) ((void)0)
#endif

#endif
