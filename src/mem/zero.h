/* Zero-size blocks (measure zero): malloc(0) returns a pointer that no
 * other live block shares and that faults on any read or write, because it
 * points into memory that is never accessible (PROT_NONE). free and realloc
 * of it work as for any block; its usable size is 0. */
#ifndef HK_ZERO_H
#define HK_ZERO_H

#include "base/config.h"

void *hk_zero_alloc(void);                 /* NULL and ENOMEM when out of address space */
/* p is in a zero-size chunk (chunk map HK_CHUNK_ZERO): free it, or report
 * (what: "free" or "realloc") and return false. size: sized free's, 0 if none. */
bool hk_zero_free(const char *what, void *p, size_t size);
bool hk_zero_live(const void *p);          /* a zero-size block handed out and not freed */

#endif
