/* C++ operator new/delete in every standard form, written in C under their
 * Itanium-ABI names so the library needs no C++ runtime. Failing throwing
 * forms call the program's new_handler and then throw std::bad_alloc through
 * libstdc++ (present in any C++ program) or abort when there is none. */
#include <errno.h>
#include <stdlib.h>

#include "api/alloc.h"

typedef void (*hk_new_handler_t)(void);
extern hk_new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static HK_NOINLINE void *new_failed(size_t n, size_t align, bool nothrow, unsigned kind) {
  for (;;) {
    hk_new_handler_t handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
    if (handler == NULL) {
      if (nothrow) return NULL;
      if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
      hk_message("hakmem: operator new(%zu) failed and std::bad_alloc is unavailable\n", n);
      abort();
    }
    handler();
    void *p = align ? hk_aligned(align, n, kind) : hk_malloc_kind(n, kind);
    if (p) return p;
  }
}

HK_INLINE void *cxx_new(size_t n, unsigned kind) {
  void *p = hk_malloc_kind(n, kind);
  if (HK_UNLIKELY(p == NULL)) return new_failed(n, 0, false, kind);
  return p;
}
HK_INLINE void *cxx_new_nothrow(size_t n, unsigned kind) {
  void *p = hk_malloc_kind(n, kind);
  if (HK_UNLIKELY(p == NULL)) return new_failed(n, 0, true, kind);
  return p;
}
static void *cxx_new_aligned(size_t n, size_t a, bool nothrow, unsigned kind) {
  if (a == 0 || (a & (a - 1)) != 0) {  /* undefined behaviour in C++; be safe */
    if (nothrow) return NULL;
    return new_failed(n, 16, false, kind);
  }
  void *p = hk_aligned(a, n, kind);
  if (HK_UNLIKELY(p == NULL)) return new_failed(n, a, nothrow, kind);
  return p;
}

typedef struct { char dummy; } hk_nothrow_t;
#define N  HK_KIND_NEW
#define NA HK_KIND_NEW_ARRAY

/* new */
HK_EXPORT void *_Znwm(size_t n) { return cxx_new(n, N); }
HK_EXPORT void *_Znam(size_t n) { return cxx_new(n, NA); }
HK_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const hk_nothrow_t *t) { (void)t; return cxx_new_nothrow(n, N); }
HK_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const hk_nothrow_t *t) { (void)t; return cxx_new_nothrow(n, NA); }
HK_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false, N); }
HK_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false, NA); }
HK_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const hk_nothrow_t *t) {
  (void)t; return cxx_new_aligned(n, a, true, N);
}
HK_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const hk_nothrow_t *t) {
  (void)t; return cxx_new_aligned(n, a, true, NA);
}

/* delete: kinds and sizes are checked in the secure build */
HK_EXPORT void _ZdlPv(void *p) { hk_free_checked(p, N, 0); }
HK_EXPORT void _ZdaPv(void *p) { hk_free_checked(p, NA, 0); }
HK_EXPORT void _ZdlPvm(void *p, size_t n) { hk_free_checked(p, N, n); }
HK_EXPORT void _ZdaPvm(void *p, size_t n) { hk_free_checked(p, NA, n); }
HK_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const hk_nothrow_t *t) { (void)t; hk_free_checked(p, N, 0); }
HK_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const hk_nothrow_t *t) { (void)t; hk_free_checked(p, NA, 0); }
HK_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; hk_free_checked(p, N, 0); }
HK_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; hk_free_checked(p, NA, 0); }
HK_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)a; hk_free_checked(p, N, n); }
HK_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)a; hk_free_checked(p, NA, n); }
HK_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const hk_nothrow_t *t) {
  (void)a; (void)t; hk_free_checked(p, N, 0);
}
HK_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const hk_nothrow_t *t) {
  (void)a; (void)t; hk_free_checked(p, NA, 0);
}
