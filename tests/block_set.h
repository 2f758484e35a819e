/* block_set.h — a set of held blocks for the purge tests (test_purge,
 * test_bg_purge): large_mib of 1 MiB blocks, mid_mib of 8 KiB blocks and
 * tiny_mib of 100 B blocks, every page touched so that it is resident, then
 * freed in an interleaved order so that slabs empty late. Needs check.h. */
#ifndef HKT_BLOCK_SET_H
#define HKT_BLOCK_SET_H

#include <malloc.h>
#include <stdlib.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

typedef struct {
  void **p;
  size_t n;
} set_t;

static set_t alloc_set(size_t large_mib, size_t mid_mib, size_t tiny_mib) {
  size_t nl = large_mib, nm = mid_mib * MiB / (8 * KiB), nt = tiny_mib * MiB / 100;
  set_t s = {malloc((nl + nm + nt) * sizeof(void *)), 0};
  CHECK_FATAL(s.p);
  for (size_t i = 0; i < nl; i++) s.p[s.n++] = malloc(MiB);
  for (size_t i = 0; i < nm; i++) s.p[s.n++] = malloc(8 * KiB);
  for (size_t i = 0; i < nt; i++) s.p[s.n++] = malloc(100);
  for (size_t i = 0; i < s.n; i++) {
    CHECK_FATAL(s.p[i]);
    size_t u = malloc_usable_size(s.p[i]);
    for (size_t o = 0; o < u; o += 4096) ((volatile char *)s.p[i])[o] = 1;
    ((volatile char *)s.p[i])[u - 1] = 1;
  }
  return s;
}

static void free_set(set_t *s) {
  for (size_t i = 0; i < s->n; i += 2) free(s->p[i]);
  for (size_t i = 1; i < s->n; i += 2) free(s->p[i]);
  free(s->p);
  s->p = NULL;
  s->n = 0;
}

#endif
