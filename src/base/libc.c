/* glibc's copy functions, found once (libc.h; the copy measure). Empty
 * without the measure's interposers.
 *
 * Nothing here may call memcpy, memmove or memset under their own names:
 * with the measure those are copy_check.c's, which call back here. The
 * byte loops below are kept loops (GCC would turn them into those calls),
 * and tests/repo/layers.sh would see such a call as an edge to copy_check.c. */
#define _GNU_SOURCE
#define HK_LIBC_KEEP_NAMES
#include "base/libc.h"

#if HK_COPY_CHECKS
#include <dlfcn.h>

#define KEEP_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* ---- byte loops: before glibc's functions are found, or without them ---- */

static void *slow_memcpy(void *d, const void *s, size_t n) {
  void *r = d;
  __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
  return r;
}
static void *slow_memmove(void *d, const void *s, size_t n) {
  if ((uintptr_t)d - (uintptr_t)s >= n) return slow_memcpy(d, s, n);  /* no overlap from the front */
  const uint8_t *ps = (const uint8_t *)s + n - 1;
  uint8_t *pd = (uint8_t *)d + n - 1;
  __asm__ volatile("std\n\trep movsb\n\tcld" : "+D"(pd), "+S"(ps), "+c"(n) : : "memory");
  return d;
}
static void *slow_memset(void *d, int c, size_t n) {
  void *r = d;
  __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
  return r;
}
static void *slow_mempcpy(void *d, const void *s, size_t n) { return (uint8_t *)slow_memcpy(d, s, n) + n; }
KEEP_LOOPS static char *slow_stpcpy(char *d, const char *s) {
  while ((*d = *s++) != 0) d++;
  return d;
}
static char *slow_strcpy(char *d, const char *s) {
  slow_stpcpy(d, s);
  return d;
}
KEEP_LOOPS static char *slow_strncpy(char *d, const char *s, size_t n) {
  size_t i = 0;
  for (; i < n && s[i]; i++) d[i] = s[i];
  for (; i < n; i++) d[i] = 0;
  return d;
}
KEEP_LOOPS static char *slow_strcat(char *d, const char *s) {
  char *e = d;
  while (*e) e++;
  slow_stpcpy(e, s);
  return d;
}
KEEP_LOOPS static char *slow_strncat(char *d, const char *s, size_t n) {
  char *e = d;
  while (*e) e++;
  size_t i = 0;
  for (; i < n && s[i]; i++) e[i] = s[i];
  e[i] = 0;
  return d;
}

/* ---- finding glibc's ------------------------------------------------------ */

static const hk_libc_t slow = {
  slow_memcpy, slow_memmove, slow_memset, slow_mempcpy, slow_strcpy,
  slow_stpcpy, slow_strncpy, slow_strcat, slow_strncat,
};

/* 0: not looked for; 1: being looked for; 2: found (or nothing to find) */
static int state;

#define FIND(f)                                                                 \
  do {                                                                          \
    void *sym = dlsym(RTLD_NEXT, #f);                                           \
    if (sym) __atomic_store_n((void **)&hk_libc.f, sym, __ATOMIC_RELEASE);      \
    else __atomic_store_n(&hk_libc.f, slow.f, __ATOMIC_RELEASE);                \
  } while (0)

/* True when the table now holds what there is to hold: the caller calls
 * through it again. False: a call that must make do with a byte loop
 * (dlsym, or another thread, is looking them up right now). */
static bool find(void) {
  int s = 0;
  if (!__atomic_compare_exchange_n(&state, &s, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
    return s == 2;
  FIND(memcpy); FIND(memmove); FIND(memset); FIND(mempcpy); FIND(strcpy);
  FIND(stpcpy); FIND(strncpy); FIND(strcat); FIND(strncat);
  __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
  return true;
}

/* The table's first entries: find glibc's, then call them. */
static void *first_memcpy(void *d, const void *s, size_t n) {
  return find() ? hk_libc.memcpy(d, s, n) : slow_memcpy(d, s, n);
}
static void *first_memmove(void *d, const void *s, size_t n) {
  return find() ? hk_libc.memmove(d, s, n) : slow_memmove(d, s, n);
}
static void *first_memset(void *d, int c, size_t n) {
  return find() ? hk_libc.memset(d, c, n) : slow_memset(d, c, n);
}
static void *first_mempcpy(void *d, const void *s, size_t n) {
  return find() ? hk_libc.mempcpy(d, s, n) : slow_mempcpy(d, s, n);
}
static char *first_strcpy(char *d, const char *s) { return find() ? hk_libc.strcpy(d, s) : slow_strcpy(d, s); }
static char *first_stpcpy(char *d, const char *s) { return find() ? hk_libc.stpcpy(d, s) : slow_stpcpy(d, s); }
static char *first_strncpy(char *d, const char *s, size_t n) {
  return find() ? hk_libc.strncpy(d, s, n) : slow_strncpy(d, s, n);
}
static char *first_strcat(char *d, const char *s) { return find() ? hk_libc.strcat(d, s) : slow_strcat(d, s); }
static char *first_strncat(char *d, const char *s, size_t n) {
  return find() ? hk_libc.strncat(d, s, n) : slow_strncat(d, s, n);
}

hk_libc_t hk_libc = {
  first_memcpy, first_memmove, first_memset, first_mempcpy, first_strcpy,
  first_stpcpy, first_strncpy, first_strcat, first_strncat,
};

/* ---- hakmem's own copies (libc.h renames its calls to these) ---------------- */

HK_HIDDEN void *hk_libc_memcpy(void *d, const void *s, size_t n) { return hk_libc.memcpy(d, s, n); }
HK_HIDDEN void *hk_libc_memmove(void *d, const void *s, size_t n) { return hk_libc.memmove(d, s, n); }
HK_HIDDEN void *hk_libc_memset(void *d, int c, size_t n) { return hk_libc.memset(d, c, n); }

#endif
