/* Symbol overrides: the malloc family under its standard names, so that
 * LD_PRELOAD or linking libhakmem.a replaces the C library's allocator. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/ctl.h"
#include "api/alloc.h"
#include "mem/large.h"
#include "mem/prof.h"
#include "policy/stats.h"
#include "../include/hakmem.h"

HK_EXPORT void *malloc(size_t n) { return hk_malloc_inline(n); }
HK_EXPORT void free(void *p) { hk_free_inline(p); }
HK_EXPORT void *calloc(size_t count, size_t size) { return hk_calloc(count, size); }
HK_EXPORT void *realloc(void *p, size_t n) { return hk_realloc(p, n); }

HK_EXPORT void *reallocarray(void *p, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) { errno = ENOMEM; return NULL; }
  return hk_realloc(p, n);
}

HK_EXPORT void free_sized(void *p, size_t size) { hk_free_checked(p, HK_KIND_MALLOC, size); }
HK_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align;
  hk_free_checked(p, HK_KIND_MALLOC, size);
}

static bool is_pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

HK_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (!is_pow2(align) || align % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = hk_aligned(align, n, HK_KIND_MALLOC);
  if (!p) { errno = saved; return ENOMEM; }
  *out = p;
  return 0;
}

HK_EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (!is_pow2(align)) { errno = EINVAL; return NULL; }
  return hk_aligned(align, n, HK_KIND_MALLOC);
}

HK_EXPORT void *memalign(size_t align, size_t n) {
  if (align == 0) return hk_malloc_inline(n);
  if (!is_pow2(align)) { errno = EINVAL; return NULL; }
  return hk_aligned(align, n, HK_KIND_MALLOC);
}

HK_EXPORT void *valloc(size_t n) { return hk_aligned(HK_PAGE, n, HK_KIND_MALLOC); }

HK_EXPORT void *pvalloc(size_t n) {
  if (n > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  return hk_aligned(HK_PAGE, hk_align_up(n ? n : 1, HK_PAGE), HK_KIND_MALLOC);
}

HK_EXPORT size_t malloc_usable_size(void *p) { return hk_usable(p); }

/* glibc's internal names, which a few programs call directly. */
HK_EXPORT void *__libc_malloc(size_t n) { return hk_malloc_inline(n); }
HK_EXPORT void __libc_free(void *p) { hk_free_inline(p); }
HK_EXPORT void *__libc_calloc(size_t c, size_t s) { return hk_calloc(c, s); }
HK_EXPORT void *__libc_realloc(void *p, size_t n) { return hk_realloc(p, n); }
HK_EXPORT void *__libc_memalign(size_t a, size_t n) { return memalign(a, n); }
HK_EXPORT void *__libc_valloc(size_t n) { return valloc(n); }
HK_EXPORT void *__libc_pvalloc(size_t n) { return pvalloc(n); }

/* ---- glibc introspection ------------------------------------------------------ */

static size_t clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : v; }

HK_EXPORT struct mallinfo2 mallinfo2(void) {
  struct hak_stats s;
  hk_stats_collect(&s);
  struct mallinfo2 mi;
  memset(&mi, 0, sizeof mi);
  size_t slab_bytes = s.superslabs * HK_SS_SIZE;        /* superslabs mapped  */
  size_t slab_live = s.live_bytes - s.large_live_bytes;  /* in small blocks    */
  mi.arena = slab_bytes;
  mi.ordblks = s.superslabs_cached;
  mi.hblks = s.large_live;
  mi.hblkhd = s.large_live_bytes;
  mi.usmblks = s.peak_mapped_bytes;
  mi.uordblks = slab_live;
  mi.fordblks = slab_bytes > slab_live ? slab_bytes - slab_live : 0;
  mi.keepcost = 0;
  size_t pb, pm;  /* sampled blocks (HAKMEM_PROF): mappings of their own */
  hk_prof_live(&pb, &pm);
  mi.hblks += pb;
  mi.hblkhd += pm;
  return mi;
}

HK_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi;
  mi.arena = (int)clamp_int(m2.arena);
  mi.ordblks = (int)clamp_int(m2.ordblks);
  mi.smblks = 0;
  mi.hblks = (int)clamp_int(m2.hblks);
  mi.hblkhd = (int)clamp_int(m2.hblkhd);
  mi.usmblks = (int)clamp_int(m2.usmblks);
  mi.fsmblks = 0;
  mi.uordblks = (int)clamp_int(m2.uordblks);
  mi.fordblks = (int)clamp_int(m2.fordblks);
  mi.keepcost = 0;
  return mi;
}

HK_EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  /* in this order: superslabs lent by span arenas go back to them before
   * the arenas are purged and, when empty, unmapped */
  size_t bytes = hk_heap_trim(hk_tls_heap);
  bytes += hk_large_collect(true);
  bytes += hk_prof_trim();
  return bytes > 0;
}

/* glibc's parameters: M_CHECK_ACTION maps to HAKMEM_ABORT_ON_INVALID, the
 * other documented ones are accepted and change nothing (1), the rest are
 * refused (0): docs/ENV_VARS.md, "mallopt". */
HK_EXPORT int mallopt(int param, int value) { return hk_ctl_mallopt(param, value); }

HK_EXPORT void malloc_stats(void) { hk_stats_print_glibc_style(stderr); }

HK_EXPORT int malloc_info(int options, FILE *fp) {
  if (options != 0) { errno = EINVAL; return -1; }
  return hk_stats_print_xml(fp);
}
