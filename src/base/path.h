/* File names that hold the process id: HAKMEM_STATS_FILE's and
 * HAKMEM_PROF_FILE's `%p` (the pid) and `%%` (a `%`), so that each
 * process a script starts writes a file of its own. A leaf: the callers
 * say what went wrong. */
#ifndef HK_PATH_H
#define HK_PATH_H

#include "base/config.h"

/* pattern with %p replaced by this process's id and %% by %, into dst
 * (size bytes, terminated); false when it does not fit (dst then holds
 * what fit). Any other % is copied as it is. */
bool hk_path_expand(const char *pattern, char *dst, size_t size);
/* Whether pattern has a %p (not one escaped as %%p). */
bool hk_path_has_pid(const char *pattern);

#endif
