/* test_api — semantics of every malloc-family function hakmem exports and of
 * the hak_* API: sizes across all tiers, alignment, usable size, contents,
 * error cases (ENOMEM / EINVAL), introspection calls, and that each exported
 * symbol really resolves to libhakmem. Linked against libhakmem.so. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <iconv.h>
#include <locale.h>
#include <malloc.h>
#include <netdb.h>
#include <pwd.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

/* glibc 2.36 does not declare these (C23); hakmem exports them. Weak so the
 * glibc stub build still links. */
extern void free_sized(void *, size_t) __attribute__((weak));
extern void free_aligned_sized(void *, size_t, size_t) __attribute__((weak));

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* Opaque sizes: keep the compiler from folding or warning about calls that
 * are meant to fail. */
static volatile size_t v_size_max = SIZE_MAX;
static volatile size_t v_ptrdiff_max1 = (size_t)PTRDIFF_MAX + 1;
static volatile size_t v_half = SIZE_MAX / 2 + 1;

static int global_var;
static const char *const literal = "a string literal";

static unsigned char pat(const void *base, size_t i, unsigned seed) {
  return (unsigned char)(((uintptr_t)base >> 4) * 31 + i * 131 + seed * 7 + (i >> 8));
}
static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = pat(p, i, seed);
}
/* returns index of the first bad byte, or (size_t)-1 */
static size_t verify(const void *p, size_t n, const void *key, unsigned seed) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != pat(key, i, seed)) return i;
  return (size_t)-1;
}
static int is_zero(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return 0;
  return 1;
}
static size_t floor_pow2(size_t n) {
  size_t r = 1;
  while (r * 2 <= n) r *= 2;
  return r;
}
/* Alignment the C standard requires for a block of n bytes, capped at what
 * hakmem promises (16). */
static size_t required_align(size_t n) {
  if (n == 0) return 1;
  return n >= 16 ? 16 : floor_pow2(n);
}

static size_t sizes[512];
static int nsizes;
static void build_sizes(void) {
  for (size_t s = 0; s <= 48; s++) sizes[nsizes++] = s;
  for (size_t p = 64; p <= 64 * MiB; p *= 2) {
    sizes[nsizes++] = p - 1;
    sizes[nsizes++] = p;
    sizes[nsizes++] = p + 1;
    sizes[nsizes++] = p + p / 2 + 3; /* between classes */
  }
  static const size_t extra[] = {80,   96,   100,  112,  160,  200,  333,   1000,
                                 1023, 1025, 1500, 3000, 5000, 12345, 32767, 32769,
                                 40000, 100000, 250000, 999999, 3 * MiB + 5,
                                 10 * MiB + 123};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) sizes[nsizes++] = extra[i];
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

/* ---- symbol resolution: the whole family must come from libhakmem ---- */
static void test_symbols(void) {
  static const char *const syms[] = {
      "malloc",        "free",       "calloc",           "realloc",
      "reallocarray",  "posix_memalign", "aligned_alloc", "memalign",
      "valloc",        "pvalloc",    "malloc_usable_size", "free_sized",
      "free_aligned_sized", "mallinfo", "mallinfo2",     "malloc_trim",
      "malloc_stats",  "mallopt",    "malloc_info"};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *f = dlsym(RTLD_DEFAULT, syms[i]);
    CHECKF(f != NULL, "symbol %s not found", syms[i]);
    if (!f) continue;
    Dl_info info;
    int ok = dladdr(f, &info);
    CHECKF(ok && info.dli_fname && strstr(info.dli_fname, "hakmem"),
           "%s resolves to %s, not libhakmem", syms[i],
           ok && info.dli_fname ? info.dli_fname : "?");
  }
}

static void test_hak_identity(void) {
  char want[32];  /* the library's version is the header's */
  snprintf(want, sizeof want, "%d.%d.%d", HAKMEM_VERSION_MAJOR, HAKMEM_VERSION_MINOR, HAKMEM_VERSION_PATCH);
  CHECK(strcmp(hak_version(), want) == 0);
  CHECK(hak_is_active() == 1);
  int local = 0;
  CHECK(hak_owns(&local) == 0);
  CHECK(hak_owns(&global_var) == 0);
  CHECK(hak_owns(literal) == 0);
  CHECK(hak_owns(NULL) == 0);
  CHECK(hak_owns((void *)test_hak_identity) == 0);
  void *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK_FATAL(m != MAP_FAILED);
  CHECK(hak_owns(m) == 0);
  CHECK(hak_owns((char *)m + 2 * MiB) == 0);
  munmap(m, 4 * MiB);
}

/* ---- every small size gets the smallest block that holds it: malloc finds
 * its slab by the request size itself (heap.h direct[]), one entry per
 * size, so a wrong entry would give too small a block or a needlessly big
 * one. The usable size is at least n, and grows only where the block of
 * n - 1 no longer holds n. ---- */
static void test_small_sizes_tight(void) {
  size_t prev = 0;
  for (size_t n = 0; n <= 1100; n++) {
    void *p = malloc(n);
    CHECKF(p != NULL, "malloc(%zu) returned NULL", n);
    if (!p) continue;
    size_t u = malloc_usable_size(p);
    CHECKF(u >= n, "malloc_usable_size(malloc(%zu))=%zu", n, u);
    if (n > 0)
      CHECKF(u == prev || prev < n, "malloc(%zu) got %zu usable bytes, malloc(%zu) %zu: not the smallest block",
             n, u, n - 1, prev);
    memset(p, 0xa5, n);
    free(p);
    prev = u;
  }
}

/* ---- malloc over many sizes, all held at once: no overlap, contents kept ---- */
static void test_malloc_sizes(void) {
  void *ptrs[512];
  size_t us[512];
  for (int i = 0; i < nsizes; i++) {
    size_t n = sizes[i];
    errno = 0;
    void *p = malloc(n);
    CHECKF(p != NULL, "malloc(%zu) returned NULL", n);
    ptrs[i] = p;
    if (!p) continue;
    CHECKF((uintptr_t)p % required_align(n) == 0, "malloc(%zu)=%p misaligned", n, p);
    size_t u = malloc_usable_size(p);
    us[i] = u;
    CHECKF(u >= n, "malloc_usable_size(malloc(%zu))=%zu", n, u);
    CHECKF(hak_usable_size(p) == u, "hak_usable_size=%zu malloc_usable_size=%zu",
           hak_usable_size(p), u);
    CHECKF(hak_owns(p) == 1, "hak_owns(malloc(%zu))", n);
    fill(p, u, (unsigned)i); /* every usable byte is writable */
  }
  for (int i = 0; i < nsizes; i++) {
    if (!ptrs[i]) continue;
    size_t bad = verify(ptrs[i], us[i], ptrs[i], (unsigned)i);
    CHECKF(bad == (size_t)-1, "malloc(%zu) block corrupted at byte %zu", sizes[i], bad);
  }
  /* no two live blocks overlap */
  uintptr_t sorted[512][2];
  int m = 0;
  for (int i = 0; i < nsizes; i++)
    if (ptrs[i]) {
      sorted[m][0] = (uintptr_t)ptrs[i];
      sorted[m][1] = us[i];
      m++;
    }
  qsort(sorted, m, sizeof sorted[0], cmp_ptr);
  for (int i = 1; i < m; i++)
    CHECKF(sorted[i - 1][0] + sorted[i - 1][1] <= sorted[i][0],
           "blocks %#lx+%lu and %#lx overlap", (unsigned long)sorted[i - 1][0],
           (unsigned long)sorted[i - 1][1], (unsigned long)sorted[i][0]);
  for (int i = nsizes - 1; i >= 0; i--) free(ptrs[i]);
}

/* Many small/mid blocks live at once, random sizes, freed in random order. */
static void test_many_blocks(void) {
  enum { N = 60000 };
  void **p = malloc(N * sizeof *p);
  size_t *sz = malloc(N * sizeof *sz);
  uintptr_t(*s)[2] = malloc(N * sizeof *s);
  CHECK_FATAL(p && sz && s);
  unsigned long long x = 88172645463325252ull;
  for (int i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = (x % 16 == 0) ? 1025 + x % (32 * KiB) : 1 + x % 1024;
    p[i] = malloc(n);
    sz[i] = n;
    CHECK_FATAL(p[i] != NULL);
    CHECKF((uintptr_t)p[i] % required_align(n) == 0, "malloc(%zu)=%p misaligned", n, p[i]);
    memset(p[i], (int)(i & 0xff), n);
    s[i][0] = (uintptr_t)p[i];
    s[i][1] = n;
  }
  qsort(s, N, sizeof s[0], cmp_ptr);
  long overlaps = 0;
  for (int i = 1; i < N; i++)
    if (s[i - 1][0] + s[i - 1][1] > s[i][0]) overlaps++;
  CHECKF(overlaps == 0, "%ld overlapping live blocks", overlaps);
  /* shuffle, verify, free */
  for (int i = N - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int j = (int)(x % (unsigned)(i + 1));
    void *t = p[i]; p[i] = p[j]; p[j] = t;
    size_t u = sz[i]; sz[i] = sz[j]; sz[j] = u;
  }
  long bad = 0;
  for (int i = 0; i < N; i++) {
    unsigned char *c = p[i];
    unsigned char v = c[0];
    if (c[sz[i] - 1] != v || c[sz[i] / 2] != v) bad++;
    free(p[i]);
  }
  CHECKF(bad == 0, "%ld blocks lost their contents", bad);
  free(p), free(sz), free(s);
}

/* The hak_* API and the standard names share one heap when hakmem is the
 * process's malloc: blocks may cross between them. */
static void test_api_mixing(void) {
  static const size_t ms[] = {0, 24, 1000, 20000, 300000, 5 * MiB};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    size_t n = ms[i];
    void *p = malloc(n);
    CHECK_FATAL(p);
    fill(p, n, 11);
    p = hak_realloc(p, n + 100);
    CHECK_FATAL(p);
    hak_free(p);
    p = hak_malloc(n);
    CHECK_FATAL(p);
    fill(p, n, 12);
    void *key = p;
    p = realloc(p, n * 2 + 1);
    CHECK_FATAL(p);
    CHECK(verify(p, n, key, 12) == (size_t)-1);
    CHECK(malloc_usable_size(p) == hak_usable_size(p));
    free(p);
    p = hak_aligned_alloc(4096, n);
    CHECK_FATAL(p);
    free(p);
    p = hak_calloc(1, n);
    CHECK_FATAL(p);
    CHECK(is_zero(p, n));
    free(p);
  }
}

static void test_zero_and_null(void) {
  enum { N = 1000 };
  void *z[N];
  for (int i = 0; i < N; i++) {
    z[i] = malloc(0);
    CHECK(z[i] != NULL);
  }
  qsort(z, N, sizeof z[0], cmp_ptr);
  int dup = 0;
  for (int i = 1; i < N; i++) dup += z[i] == z[i - 1];
  CHECKF(dup == 0, "malloc(0) returned %d duplicate pointers", dup);
  for (int i = 0; i < N; i++) free(z[i]);
  void *a = hak_malloc(0), *b = hak_malloc(0);
  CHECK(a && b && a != b);
  hak_free(a), hak_free(b);

  free(NULL);
  hak_free(NULL);
  CHECK(hak_usable_size(NULL) == 0);
  CHECK(malloc_usable_size(NULL) == 0);
  void *c0 = calloc(0, 10), *c1 = calloc(10, 0);
  CHECK(c0 != NULL && c1 != NULL && c0 != c1);
  free(c0), free(c1);

  void *r = realloc(NULL, 100);
  CHECK(r != NULL);
  if (r) { memset(r, 1, 100); free(r); }
  r = hak_realloc(NULL, 100);
  CHECK(r != NULL);
  hak_free(r);
  /* realloc(p, 0) frees and returns NULL (glibc behaviour) */
  r = malloc(100);
  CHECK_FATAL(r);
  CHECK(realloc(r, 0) == NULL);
  r = malloc(5 * MiB);
  CHECK_FATAL(r);
  CHECK(realloc(r, 0) == NULL);
}

static void test_errors(void) {
  void *p;
#define EXPECT_ENOMEM(expr)                                                   \
  do {                                                                        \
    errno = 0;                                                                \
    p = (expr);                                                               \
    CHECKF(p == NULL && errno == ENOMEM, "%s -> %p errno %d", #expr, p, errno); \
    if (p) free(p);                                                           \
  } while (0)
  EXPECT_ENOMEM(malloc(v_size_max));
  EXPECT_ENOMEM(malloc(v_size_max - 4096));
  EXPECT_ENOMEM(malloc(v_ptrdiff_max1));
  EXPECT_ENOMEM(malloc(v_half));
  EXPECT_ENOMEM(calloc(2, v_half));
  EXPECT_ENOMEM(calloc(v_size_max, v_size_max));
  EXPECT_ENOMEM(calloc(v_size_max >> 31, v_size_max >> 31));
  EXPECT_ENOMEM(calloc(v_ptrdiff_max1, 1));
  EXPECT_ENOMEM(reallocarray(NULL, v_size_max, 2));
  EXPECT_ENOMEM(reallocarray(NULL, v_size_max >> 30, v_size_max >> 32));
  EXPECT_ENOMEM(realloc(NULL, v_size_max));
  EXPECT_ENOMEM(aligned_alloc(64, v_size_max - 4096));
  EXPECT_ENOMEM(memalign(4096, v_ptrdiff_max1));
  EXPECT_ENOMEM(valloc(v_size_max));
  EXPECT_ENOMEM(hak_malloc(v_size_max));
  EXPECT_ENOMEM(hak_calloc(2, v_half));
  EXPECT_ENOMEM(hak_realloc(NULL, v_size_max));
  EXPECT_ENOMEM(hak_aligned_alloc(4096, v_size_max));

  /* failed realloc/reallocarray leave the old block intact */
  /* (a volatile pointer: gcc cannot know a failed realloc keeps q valid) */
  char *volatile q = malloc(1000);
  CHECK_FATAL(q);
  fill(q, 1000, 5);
  errno = 0;
  CHECK(realloc(q, v_size_max) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(reallocarray(q, v_size_max >> 30, v_size_max >> 30) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(hak_realloc(q, v_ptrdiff_max1) == NULL && errno == ENOMEM);
  CHECK(verify(q, 1000, q, 5) == (size_t)-1);
  char *q2 = reallocarray(q, 500, 4);
  CHECK(q2 != NULL);
  if (q2) {
    CHECK(verify(q2, 1000, q, 5) == (size_t)-1);
    CHECK(malloc_usable_size(q2) >= 2000);
    free(q2);
  } else
    free(q);

  int rc;
  void *sentinel = (void *)0x1234;
  p = sentinel;
  rc = posix_memalign(&p, 16, v_size_max);
  CHECKF(rc == ENOMEM, "posix_memalign(16, SIZE_MAX) rc=%d", rc);
  if (rc == 0) free(p);
#undef EXPECT_ENOMEM
}

static void test_bad_alignments(void) {
  static const size_t bad_pm[] = {0, 1, 2, 4, 3, 12, 24, 48, 100, 4097, (size_t)3 << 20};
  for (size_t i = 0; i < sizeof bad_pm / sizeof bad_pm[0]; i++) {
    void *p = (void *)0x5a5a;
    int rc = posix_memalign(&p, bad_pm[i], 64);
    CHECKF(rc == EINVAL, "posix_memalign(align=%zu) rc=%d", bad_pm[i], rc);
    CHECKF(p == (void *)0x5a5a, "posix_memalign(align=%zu) touched *p", bad_pm[i]);
    if (rc == 0 && p != (void *)0x5a5a) free(p);
  }
  static const size_t bad_aa[] = {0, 3, 12, 24, 48, 100, 4097, (size_t)3 << 20};
  for (size_t i = 0; i < sizeof bad_aa / sizeof bad_aa[0]; i++) {
    size_t a = bad_aa[i];
    void *p;
    errno = 0;
    p = aligned_alloc(a, 64);  /* (glibc 2.36's rounds odd alignments up) */
    CHECKF(p == NULL && errno == EINVAL, "aligned_alloc(%zu, 64) -> %p errno %d", a, p, errno);
    if (p) free(p);
    if (a != 0) {
      errno = 0;
      p = memalign(a, 64);
      CHECKF(p == NULL && errno == EINVAL, "memalign(%zu, 64) -> %p errno %d", a, p, errno);
      if (p) free(p);
    }
    errno = 0;
    p = hak_aligned_alloc(a, 64);
    CHECKF(p == NULL && errno == EINVAL, "hak_aligned_alloc(%zu, 64) -> %p errno %d", a, p, errno);
    if (p) hak_free(p);
  }
}

/* Aligned allocation: alignments 8 .. 4 MiB, sizes 1 B .. 64 MiB. */
static void test_alignments(void) {
  static const size_t asz[] = {1, 8, 16, 24, 100, 1000, 4096, 5000, 32 * KiB, 40000,
                               MiB, MiB + 3, 3 * MiB, 64 * MiB};
  for (size_t al = 8; al <= 4 * MiB; al *= 2) {
    for (size_t j = 0; j < sizeof asz / sizeof asz[0]; j++) {
      size_t n = asz[j];
      if (n == 64 * MiB && al != 16 && al < MiB) continue; /* keep it quick */
      void *p = NULL;
      int rc = posix_memalign(&p, al, n);
      CHECKF(rc == 0 && p, "posix_memalign(%zu, %zu) rc=%d", al, n, rc);
      if (rc || !p) continue;
      CHECKF((uintptr_t)p % al == 0, "posix_memalign(%zu, %zu)=%p misaligned", al, n, p);
      size_t u = malloc_usable_size(p);
      CHECKF(u >= n, "usable %zu < %zu (align %zu)", u, n, al);
      CHECK(hak_owns(p) == 1);
      fill(p, n, 3);
      CHECK(verify(p, n, p, 3) == (size_t)-1);
      memset(p, 0xee, u);
      free(p);

      errno = 0;
      p = aligned_alloc(al, n);
      CHECKF(p && (uintptr_t)p % al == 0, "aligned_alloc(%zu, %zu)=%p errno %d", al, n, p, errno);
      if (p) {
        CHECK(malloc_usable_size(p) >= n);
        memset(p, 0x11, n);
        if (free_aligned_sized)
          free_aligned_sized(p, al, n);
        else
          free(p);
      }
      p = memalign(al, n);
      CHECKF(p && (uintptr_t)p % al == 0, "memalign(%zu, %zu)=%p", al, n, p);
      if (p) {
        memset(p, 0x22, n);
        free(p);
      }
      p = hak_aligned_alloc(al, n);
      CHECKF(p && (uintptr_t)p % al == 0, "hak_aligned_alloc(%zu, %zu)=%p", al, n, p);
      if (p) {
        CHECK(hak_usable_size(p) >= n);
        memset(p, 0x33, n);
        hak_free(p);
      }
    }
  }
  /* aligned blocks held at once, freed in another order */
  void *held[64];
  int k = 0;
  for (size_t al = 16; al <= 2 * MiB && k < 64; al *= 2) {
    held[k] = aligned_alloc(al, 3 * al / 2);
    CHECK(held[k] && (uintptr_t)held[k] % al == 0);
    if (held[k]) fill(held[k], 3 * al / 2, 9);
    k++;
  }
  for (int i = 0; i < k; i += 2) free(held[i]);
  for (int i = 1; i < k; i += 2) {
    size_t al = (size_t)16 << i;
    if (held[i]) CHECK(verify(held[i], 3 * al / 2, held[i], 9) == (size_t)-1);
    free(held[i]);
  }
  /* posix_memalign with size 0: success, freeable */
  void *z = (void *)1;
  CHECK(posix_memalign(&z, 64, 0) == 0);
  if (z != (void *)1) free(z);
}

static void test_page_allocs(void) {
  long pg = sysconf(_SC_PAGESIZE);
  static const size_t vs[] = {0, 1, 100, 4095, 4096, 4097, 10000, 100000, 3 * MiB};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    size_t n = vs[i];
    void *p = valloc(n);
    CHECKF(p && (uintptr_t)p % pg == 0, "valloc(%zu)=%p", n, p);
    if (p) {
      CHECK(malloc_usable_size(p) >= n);
      memset(p, 0x44, n);
      free(p);
    }
    p = pvalloc(n);
    size_t r = (n + pg - 1) / pg * pg;
    CHECKF(p && (uintptr_t)p % pg == 0, "pvalloc(%zu)=%p", n, p);
    if (p) {
      size_t u = malloc_usable_size(p);
      CHECKF(u >= r, "pvalloc(%zu) usable %zu < %zu", n, u, r);
      memset(p, 0x55, r); /* pvalloc rounds the request up to a page */
      free(p);
    }
  }
}

static void test_calloc(void) {
  static const size_t cs[] = {1, 16, 100, 1024, 4000, 32 * KiB, 100 * KiB, MiB + 17, 8 * MiB, 64 * MiB};
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      size_t n = cs[i];
      /* dirty a block of the same size first so reuse is likely */
      void *d = malloc(n);
      CHECK_FATAL(d);
      memset(d, 0xab, malloc_usable_size(d));
      free(d);
      unsigned char *c = round == 1 ? hak_calloc(n, 1) : calloc(round == 2 ? n / 4 + 1 : 1,
                                                              round == 2 ? 4 : n);
      size_t want = round == 2 ? (n / 4 + 1) * 4 : n;
      CHECK_FATAL(c);
      CHECKF(is_zero(c, want), "calloc(%zu) not zeroed (round %d)", want, round);
      CHECK(malloc_usable_size(c) >= want);
      memset(c, 0x77, want);
      free(c);
    }
  /* many small callocs after dirty frees of the same class */
  for (int i = 0; i < 2000; i++) {
    size_t n = 1 + (size_t)(i * 37) % 2000;
    void *d = malloc(n);
    memset(d, 0xff, n);
    free(d);
    unsigned char *c = calloc(1, n);
    CHECK_FATAL(c);
    if (!is_zero(c, n)) CHECKF(0, "calloc(1,%zu) not zeroed", n);
    free(c);
  }
}

/* realloc across tiers, up and down, contents preserved. */
static void test_realloc_ladder(void) {
  static const size_t ladder[] = {1,    16,     24,     100,     1000,    1024,
                                  1025, 4096,   32 * KiB, 32 * KiB + 1, 100 * KiB, MiB,
                                  MiB + 1, 8 * MiB, 64 * MiB};
  const int L = sizeof ladder / sizeof ladder[0];
  for (int api = 0; api < 2; api++) {
    void *(*re)(void *, size_t) = api ? hak_realloc : realloc;
    size_t cur = ladder[0];
    unsigned char *p = api ? hak_malloc(cur) : malloc(cur);
    CHECK_FATAL(p);
    fill(p, cur, 1);
    void *key = p;
    /* up then down */
    for (int step = 1; step < 2 * L - 1; step++) {
      size_t n = step < L ? ladder[step] : ladder[2 * L - 2 - step];
      unsigned char *q = re(p, n);
      CHECKF(q != NULL, "realloc(%zu -> %zu) failed", cur, n);
      if (!q) break;
      size_t keep = cur < n ? cur : n;
      size_t bad = verify(q, keep, key, 1);
      CHECKF(bad == (size_t)-1, "realloc %zu -> %zu lost byte %zu (api %d)", cur, n, bad, api);
      CHECKF((uintptr_t)q % required_align(n) == 0, "realloc(%zu)=%p misaligned", n, q);
      CHECK(malloc_usable_size(q) >= n);
      p = q;
      cur = n;
      fill(p, cur, 1);
      key = p;
    }
    api ? hak_free(p) : free(p);
  }
  /* same size and small shrink/grow keep contents */
  unsigned char *p = malloc(3000);
  CHECK_FATAL(p);
  fill(p, 3000, 2);
  void *key = p;
  p = realloc(p, 3000);
  CHECK(p && verify(p, 3000, key, 2) == (size_t)-1);
  p = realloc(p, 2990);
  CHECK(p && verify(p, 2990, key, 2) == (size_t)-1);
  p = realloc(p, 3001);
  CHECK(p && verify(p, 2990, key, 2) == (size_t)-1);
  free(p);
}

/* Random realloc chains over all tiers, several blocks live at once. */
static void test_realloc_random(void) {
  enum { SLOTS = 32, OPS = 3000 };
  unsigned char *p[SLOTS] = {0};
  size_t sz[SLOTS] = {0};
  unsigned seed[SLOTS] = {0};
  unsigned long long x = 0x9E3779B97F4A7C15ull;
  for (int op = 0; op < OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int s = (int)(x % SLOTS);
    unsigned r = (unsigned)(x >> 20) % 1000;
    size_t n;
    if (r < 700) n = 1 + (x >> 32) % 1024;
    else if (r < 950) n = 1025 + (x >> 32) % (32 * KiB);
    else if (r < 995) n = 32 * KiB + (x >> 32) % (2 * MiB);
    else n = 2 * MiB + (x >> 32) % (16 * MiB);
    unsigned char *q = realloc(p[s], n);
    CHECKF(q != NULL, "realloc(%zu) failed", n);
    if (!q) continue;
    if (p[s]) {
      size_t keep = sz[s] < n ? sz[s] : n;
      size_t bad = verify(q, keep, p[s], seed[s]);
      CHECKF(bad == (size_t)-1, "op %d: realloc %zu -> %zu lost byte %zu", op, sz[s], n, bad);
    }
    p[s] = q, sz[s] = n, seed[s] = (unsigned)op;
    fill(q, n, seed[s]);
  }
  for (int s = 0; s < SLOTS; s++) {
    if (p[s]) CHECK(verify(p[s], sz[s], p[s], seed[s]) == (size_t)-1);
    free(p[s]);
  }
}

static void test_free_sized(void) {
  if (!free_sized || !free_aligned_sized) {
    CHECKF(0, "free_sized/free_aligned_sized not exported");
    return;
  }
  static const size_t fs[] = {1, 16, 17, 500, 1024, 2000, 32 * KiB, 70000, 3 * MiB};
  for (int r = 0; r < 50; r++)
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
      size_t n = fs[i];
      void *p = malloc(n);
      CHECK_FATAL(p);
      memset(p, 1, n);
      free_sized(p, n);
      p = calloc(1, n);
      CHECK_FATAL(p);
      free_sized(p, n);
      for (size_t al = 16; al <= 64 * KiB; al *= 16) {
        size_t an = (n + al - 1) / al * al;
        p = aligned_alloc(al, an);
        CHECK_FATAL(p);
        memset(p, 2, an);
        free_aligned_sized(p, al, an);
      }
    }
  free_sized(NULL, 0);
  free_aligned_sized(NULL, 64, 0);
}

static void test_introspection(void) {
  /* hold ~24 MiB live, then ask */
  enum { NB = 200 };
  void *b[NB];
  size_t live = 0;
  for (int i = 0; i < NB; i++) {
    size_t n = i % 10 == 0 ? 2 * MiB : 1 + (size_t)i * 97;
    b[i] = malloc(n);
    CHECK_FATAL(b[i]);
    memset(b[i], 3, n);
    live += n;
  }
  struct mallinfo2 mi2 = mallinfo2();
  size_t mapped = mi2.arena + mi2.hblkhd;
  CHECKF(mapped > 0, "mallinfo2 arena=%zu hblkhd=%zu", mi2.arena, mi2.hblkhd);
  CHECKF(mapped >= live, "mallinfo2 arena+hblkhd=%zu < %zu bytes live", mapped, live);
  /* every field is a byte/ block count; none may be absurd (> 1 TiB) */
  size_t f2[] = {mi2.arena, mi2.ordblks, mi2.smblks, mi2.hblks, mi2.hblkhd, mi2.usmblks,
                 mi2.fsmblks, mi2.uordblks, mi2.fordblks, mi2.keepcost};
  for (size_t i = 0; i < sizeof f2 / sizeof f2[0]; i++)
    CHECKF(f2[i] < ((size_t)1 << 40), "mallinfo2 field %zu = %zu", i, f2[i]);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo mi = mallinfo();
#pragma GCC diagnostic pop
  int f1[] = {mi.arena, mi.ordblks, mi.smblks, mi.hblks, mi.hblkhd, mi.usmblks,
              mi.fsmblks, mi.uordblks, mi.fordblks, mi.keepcost};
  for (size_t i = 0; i < sizeof f1 / sizeof f1[0]; i++)
    CHECKF(f1[i] >= 0, "mallinfo field %zu = %d", i, f1[i]);
  CHECK((long)mi.arena + mi.hblkhd > 0);

  for (int i = 0; i < NB; i++) free(b[i]);

  int t = malloc_trim(0);
  CHECKF(t == 0 || t == 1, "malloc_trim(0)=%d", t);
  t = malloc_trim(1 * MiB);
  CHECKF(t == 0 || t == 1, "malloc_trim(1MiB)=%d", t);

  int r;
  r = mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  CHECKF(r == 0 || r == 1, "mallopt(M_MMAP_THRESHOLD)=%d", r);
  r = mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
  CHECKF(r == 0 || r == 1, "mallopt(M_TRIM_THRESHOLD)=%d", r);
  r = mallopt(M_ARENA_MAX, 2);
  CHECKF(r == 0 || r == 1, "mallopt(M_ARENA_MAX)=%d", r);
  r = mallopt(-1234, 5);
  CHECKF(r == 0 || r == 1, "mallopt(unknown)=%d", r);

  FILE *f = tmpfile();
  CHECK_FATAL(f);
  r = malloc_info(0, f);
  CHECKF(r == 0, "malloc_info(0)=%d", r);
  fflush(f);
  rewind(f);
  char buf[64] = {0};
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  CHECKF(got >= 7 && strncmp(buf, "<malloc", 7) == 0, "malloc_info wrote \"%.20s\"", buf);
  errno = 0;
  r = malloc_info(1, f);
  /* documented: -1 with errno EINVAL; glibc itself returns EINVAL */
  CHECKF((r == -1 && errno == EINVAL) || r == EINVAL, "malloc_info(1)=%d errno %d", r, errno);
  fclose(f);

  /* malloc_stats prints to stderr: send it to /dev/null */
  fflush(stderr);
  int saved = dup(2);
  FILE *dn = fopen("/dev/null", "w");
  if (saved >= 0 && dn) {
    dup2(fileno(dn), 2);
    malloc_stats();
    fflush(stderr);
    dup2(saved, 2);
  } else
    malloc_stats();
  if (dn) fclose(dn);
  if (saved >= 0) close(saved);
  CHECK(1); /* survived */
}

/* Large blocks: allocate/free cycles of the same big size (cache path), and
 * usable bytes fully writable. */
static void test_large_cycles(void) {
  static const size_t ls[] = {33 * KiB, 128 * KiB, 1000 * KiB, 2 * MiB - 1, 2 * MiB + 1,
                              5 * MiB, 17 * MiB};
  for (int r = 0; r < 20; r++)
    for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
      size_t n = ls[i];
      unsigned char *p = malloc(n);
      CHECK_FATAL(p);
      CHECK((uintptr_t)p % 16 == 0);
      size_t u = malloc_usable_size(p);
      CHECK(u >= n);
      p[0] = 1, p[n / 2] = 2, p[u - 1] = 3;
      if (r == 0) memset(p, 9, u);
      CHECK(p[0] == (r == 0 ? 9 : 1));
      free(p);
    }
}

/* Huge blocks side by side: growing one (in place or not) must never touch
 * its neighbours; shrinking keeps the head. */
static void test_huge_neighbours(void) {
  enum { H = 12 };
  unsigned char *h[H];
  size_t n[H];
  for (int i = 0; i < H; i++) {
    n[i] = 3 * MiB + (size_t)i * 4096;
    h[i] = malloc(n[i]);
    CHECK_FATAL(h[i]);
    fill(h[i], n[i], (unsigned)i);
  }
  for (int i = 0; i < H; i += 2) {
    size_t nn = n[i] * (i % 4 ? 3 : 5);
    unsigned char *q = realloc(h[i], nn);
    CHECK_FATAL(q);
    CHECK(verify(q, n[i], h[i], (unsigned)i) == (size_t)-1);
    memset(q + n[i], 0xcd, nn - n[i]); /* write the whole new tail */
    h[i] = q;
    n[i] = nn;
    fill(h[i], n[i], (unsigned)i);
  }
  for (int i = 0; i < H; i++)
    CHECKF(verify(h[i], n[i], h[i], (unsigned)i) == (size_t)-1, "huge block %d damaged by a neighbour's realloc", i);
  for (int i = 1; i < H; i += 2) {
    unsigned char *q = realloc(h[i], 40 * KiB);
    CHECK_FATAL(q);
    CHECK(verify(q, 40 * KiB, h[i], (unsigned)i) == (size_t)-1);
    h[i] = q;
    n[i] = 40 * KiB;
    fill(h[i], n[i], (unsigned)i + 100);
  }
  for (int i = 0; i < H; i++) {
    CHECK(verify(h[i], n[i], h[i], (unsigned)(i % 2 ? i + 100 : i)) == (size_t)-1);
    free(h[i]);
  }
}

/* Many superslabs and lots of address space: 2000 blocks of 3 MiB (6 GiB of
 * address space, one page touched in each) and 150k tiny blocks. */
static void test_address_space(void) {
  enum { B = 2000, T = 150000 };
  unsigned char **b = malloc(B * sizeof *b);
  unsigned char **t = malloc(T * sizeof *t);
  CHECK_FATAL(b && t);
  for (int i = 0; i < B; i++) {
    b[i] = malloc(3 * MiB);
    CHECKF(b[i] != NULL, "block %d of 3 MiB failed", i);
    if (!b[i]) break;
    CHECK(hak_owns(b[i]) == 1);
    b[i][0] = (unsigned char)i;
    b[i][3 * MiB - 1] = (unsigned char)(i >> 3);
  }
  for (int i = 0; i < T; i++) {
    t[i] = malloc(1 + (size_t)i % 256);
    CHECK_FATAL(t[i]);
    t[i][0] = (unsigned char)(i * 7);
  }
  long bad = 0;
  for (int i = 0; i < B && b[i]; i++) {
    bad += b[i][0] != (unsigned char)i || b[i][3 * MiB - 1] != (unsigned char)(i >> 3);
    free(b[i]);
  }
  for (int i = 0; i < T; i++) {
    bad += t[i][0] != (unsigned char)(i * 7);
    free(t[i]);
  }
  CHECKF(bad == 0, "%ld blocks damaged", bad);
  free(b), free(t);
}

/* glibc allocates internally with malloc and hands results back to be freed
 * with free(): all of that must work on hakmem's heap. */
static int cmp_int(const void *a, const void *b) {
  return *(const int *)a - *(const int *)b;
}
static void test_libc_internals(void) {
  char *s = strdup("hakmem strdup");
  CHECK(s && strcmp(s, "hakmem strdup") == 0);
  free(s);
  s = strndup("abcdef", 3);
  CHECK(s && strcmp(s, "abc") == 0);
  free(s);
  char *a = NULL;
  CHECK(asprintf(&a, "%s-%d-%0500d", "x", 42, 7) > 500 && a && a[0] == 'x');
  free(a);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  CHECK_FATAL(m);
  for (int i = 0; i < 20000; i++) fprintf(m, "line %d\n", i);
  fclose(m);
  CHECK(buf && len > 100000 && strncmp(buf, "line 0\n", 7) == 0);
  FILE *r = fmemopen(buf, len, "r");
  CHECK_FATAL(r);
  char *line = NULL;
  size_t cap = 0;
  int lines = 0;
  while (getline(&line, &cap, r) > 0) lines++;
  CHECK(lines == 20000);
  free(line);
  fclose(r);
  free(buf);
  char *rp = realpath("/proc/self/exe", NULL);
  CHECK(rp != NULL);
  free(rp);
  struct dirent **names = NULL;
  int nd = scandir("/proc/self", &names, NULL, alphasort);
  CHECK(nd > 5);
  for (int i = 0; i < nd; i++) free(names[i]);
  free(names);
  regex_t re;
  CHECK(regcomp(&re, "^(ab|cd)+[0-9]{2,}$", REG_EXTENDED) == 0);
  CHECK(regexec(&re, "abcdab123", 0, NULL, 0) == 0);
  CHECK(regexec(&re, "abx12", 0, NULL, 0) != 0);
  regfree(&re);
  glob_t g;
  CHECK(glob("/proc/self/*", 0, NULL, &g) == 0 && g.gl_pathc > 5);
  globfree(&g);
  struct passwd *pw = getpwuid(0); /* NSS: may dlopen and allocate */
  CHECK(pw == NULL || pw->pw_name != NULL);
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo("127.0.0.1", "80", &hints, &ai) == 0) {
    CHECK(ai != NULL);
    freeaddrinfo(ai);
  }
  locale_t loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  CHECK(loc != (locale_t)0);
  if (loc) freelocale(loc);
  setlocale(LC_ALL, "C.UTF-8");
  setlocale(LC_ALL, "C");
  iconv_t cd = iconv_open("UTF-16LE", "UTF-8");
  if (cd != (iconv_t)-1) {
    char in[] = "hakmem", out[64];
    char *ip = in, *op = out;
    size_t il = 6, ol = sizeof out;
    CHECK(iconv(cd, &ip, &il, &op, &ol) == 0 && ol == sizeof out - 12);
    iconv_close(cd);
  }
  /* glibc's qsort takes a malloc'd buffer for large arrays */
  enum { Q = 300000 };
  int *q = malloc(Q * sizeof *q);
  CHECK_FATAL(q);
  for (int i = 0; i < Q; i++) q[i] = (int)((i * 2654435761u) % 1000003);
  qsort(q, Q, sizeof *q, cmp_int);
  int sorted = 1;
  for (int i = 1; i < Q; i++) sorted &= q[i - 1] <= q[i];
  CHECK(sorted);
  free(q);
}

int main(void) {
  build_sizes();
  test_symbols();
  test_hak_identity();
  test_malloc_sizes();
  test_small_sizes_tight();
  test_many_blocks();
  test_zero_and_null();
  test_api_mixing();
  test_errors();
  test_bad_alignments();
  test_alignments();
  test_page_allocs();
  test_calloc();
  test_realloc_ladder();
  test_realloc_random();
  test_free_sized();
  test_introspection();
  test_large_cycles();
  test_huge_neighbours();
  test_address_space();
  test_libc_internals();
  return check_done("test_api");
}
