/* glibc's copy functions, for the copy measure (measures.h).
 *
 * The measure exports memcpy, memset and the rest of their family
 * (copy_check.c), so every call of those names in the process reaches its
 * checks, hakmem's own included: realloc's copy and calloc's zeroing would
 * be checked for nothing, and fill on free, which writes a freed block,
 * reported. So in its builds this header renames the three that hakmem
 * uses to hidden functions of libc.c that call glibc's directly; GCC then
 * uses those names for the calls it makes itself (struct copies, zeroing,
 * loops it turns into a memcpy). Every file of src/ that copies includes
 * it; one that forgets references memcpy itself, which copy_check.c
 * defines, and tests/repo/layers.sh reports that edge (UP ... -> copy_check.c).
 * copy_check.c and libc.c keep the names (HK_LIBC_KEEP_NAMES before the
 * include): the one defines them, the other must not call them.
 *
 * Without the interposers (HK_NO_OVERRIDE: CMake's HAKMEM_OVERRIDE=OFF, the
 * TSan build) nothing is renamed and nothing is checked. */
#ifndef HK_LIBC_H
#define HK_LIBC_H

#include <string.h>

#include "base/config.h"
#include "base/measures.h"

#if HK_M_COPY && !defined(HK_NO_OVERRIDE)
#define HK_COPY_CHECKS 1
#else
#define HK_COPY_CHECKS 0
#endif

/* glibc's functions, found once by dlsym(RTLD_NEXT, ...), which hands out
 * the implementation its IFUNC resolver picks for this CPU. Until they are
 * found (the first call finds them; a call that comes while they are being
 * found, from dlsym itself or another thread, does not wait) and where
 * there is nothing to find (a static program), byte loops of libc.c. */
typedef struct {
  void *(*memcpy)(void *, const void *, size_t);
  void *(*memmove)(void *, const void *, size_t);
  void *(*memset)(void *, int, size_t);
  void *(*mempcpy)(void *, const void *, size_t);
  char *(*strcpy)(char *, const char *);
  char *(*stpcpy)(char *, const char *);
  char *(*strncpy)(char *, const char *, size_t);
  char *(*strcat)(char *, const char *);
  char *(*strncat)(char *, const char *, size_t);
} hk_libc_t;
extern hk_libc_t hk_libc HK_HIDDEN;

#if HK_COPY_CHECKS && !defined(HK_LIBC_KEEP_NAMES)
void *memcpy(void *, const void *, size_t) __asm__("hk_libc_memcpy") HK_HIDDEN;
void *memmove(void *, const void *, size_t) __asm__("hk_libc_memmove") HK_HIDDEN;
void *memset(void *, int, size_t) __asm__("hk_libc_memset") HK_HIDDEN;
#endif

#endif
