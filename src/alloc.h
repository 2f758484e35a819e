/* API layer: the malloc and free fast paths, inline, used by both the hak_*
 * functions and the malloc overrides. Stats, debug and hardening hooks go in
 * the hk_hook_* inlines, which compile to nothing when off. */
#ifndef HK_ALLOC_H
#define HK_ALLOC_H

#include "chunk_map.h"
#include "heap.h"
#include "size_class.h"
#include "slab.h"

void  *hk_malloc_large(size_t n);                  /* n > HK_MID_MAX       */
void  *hk_malloc_mid(size_t n);                    /* n > HK_SMALL_MAX     */
void   hk_free_slow(void *p);                      /* NULL, large, foreign */
void   hk_free_remote_checked(hk_slab_t *s, void *p);
void   hk_free_invalid(void *p, hk_slab_t *s);          /* reports, cold    */
void  *hk_calloc(size_t count, size_t size);
void  *hk_realloc(void *p, size_t n);
void  *hk_aligned(size_t align, size_t n);        /* align: power of two  */
size_t hk_usable(const void *p);
bool   hk_owns_block(const void *p);

#ifdef HK_DEBUG
void hk_debug_check_alloc(void *p, unsigned cls);
void hk_debug_check_free(void *p, hk_slab_t *s);
HK_INLINE void hk_hook_alloc(void *p, unsigned cls) { hk_debug_check_alloc(p, cls); }
HK_INLINE void hk_hook_free(void *p, hk_slab_t *s) { hk_debug_check_free(p, s); }
#else
HK_INLINE void hk_hook_alloc(void *p, unsigned cls) { (void)p; (void)cls; }
HK_INLINE void hk_hook_free(void *p, hk_slab_t *s) { (void)p; (void)s; }
#endif

HK_INLINE void *hk_alloc_class(unsigned cls) {
  hk_heap_t *h = hk_tls_heap;
  hk_slab_t *s = h->cur[cls];
  hk_block_t *b = s->free;
  if (HK_UNLIKELY(b == NULL)) return hk_heap_alloc_slow(h, cls);
  hk_block_t *nx = hk_block_next(b);
  if (HK_UNLIKELY(!hk_link_ok(b, nx))) hk_report_list_corrupt(b);
  s->free = nx;
  s->used++;
  hk_hook_alloc(b, cls);
  return b;
}

HK_INLINE void *hk_malloc_inline(size_t n) {
  if (HK_LIKELY(n <= HK_SMALL_MAX)) return hk_alloc_class(hk_class_small[(n + 15) >> 4]);
  return hk_malloc_mid(n);
}

HK_INLINE void hk_free_inline(void *p) {
  if (HK_UNLIKELY(hk_chunk_kind(p) != HK_CHUNK_SUPERSLAB)) {
    hk_free_slow(p);
    return;
  }
  hk_slab_t *s = hk_slab_of(hk_ss_of(p), p);
  hk_hook_free(p, s);
  if (HK_UNLIKELY(!hk_slab_is_block(s, p))) { hk_free_invalid(p, s); return; }
  if (HK_LIKELY(s->owner == hk_thread_id())) {
    hk_block_t *b = (hk_block_t *)p;
    if (HK_UNLIKELY(b == s->local_free)) { hk_free_invalid(p, s); return; }
    hk_block_set_next(b, s->local_free);
    s->local_free = b;
    if (HK_UNLIKELY(--s->used == 0 || s->state == HK_SLAB_FULL)) hk_heap_free_local_slow(s);
    return;
  }
  hk_free_remote_checked(s, p);
}

#endif
