/* hakmem — a general-purpose memory allocator for Linux/x86-64.
 *
 * Linking libhakmem (or preloading libhakmem.so) replaces the whole malloc
 * family. This header adds hakmem's own entry points; they behave like the
 * standard functions of the same name and always use hakmem, whichever
 * malloc the process has. */
#ifndef HAKMEM_H
#define HAKMEM_H

#include <stddef.h>

#define HAKMEM_VERSION_MAJOR 0
#define HAKMEM_VERSION_MINOR 1
#define HAKMEM_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

void  *hak_malloc(size_t size);
void   hak_free(void *ptr);
void  *hak_calloc(size_t count, size_t size);
void  *hak_realloc(void *ptr, size_t size);
/* alignment: a power of two; otherwise NULL with errno = EINVAL. */
void  *hak_aligned_alloc(size_t alignment, size_t size);
/* Bytes usable at ptr (>= the size requested); 0 for NULL. */
size_t hak_usable_size(const void *ptr);

/* "MAJOR.MINOR.PATCH" */
const char *hak_version(void);

/* 1 when the process's malloc()/free() are hakmem's (preloaded or linked),
 * 0 when another allocator serves malloc and hakmem is only reachable
 * through the hak_* calls. */
int hak_is_active(void);

/* 1 when ptr is a live-or-cached block that hakmem handed out (cheap,
 * address arithmetic only). Meant for tests and diagnostics. */
int hak_owns(const void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* HAKMEM_H */
