/* File names that hold the process id (path.h). */
#include "base/path.h"

#include <unistd.h>

bool hk_path_expand(const char *pattern, char *dst, size_t size) {
  size_t n = 0;
  if (!size) return false;
  for (const char *s = pattern; *s; s++) {
    char buf[24];
    const char *add = buf;
    if (s[0] == '%' && s[1] == 'p') {
      /* the pid in decimal, without snprintf */
      unsigned long v = (unsigned long)getpid();
      char *p = buf + sizeof buf;
      *--p = 0;
      do { *--p = (char)('0' + v % 10); v /= 10; } while (v);
      add = p;
      s++;
    } else if (s[0] == '%' && s[1] == '%') {
      buf[0] = '%'; buf[1] = 0;
      s++;
    } else {
      buf[0] = *s; buf[1] = 0;
    }
    for (; *add; add++) {
      if (n + 1 >= size) { dst[n] = 0; return false; }
      dst[n++] = *add;
    }
  }
  dst[n] = 0;
  return true;
}

bool hk_path_has_pid(const char *pattern) {
  for (const char *s = pattern; *s; s++) {
    if (s[0] == '%' && s[1] == '%') s++;
    else if (s[0] == '%' && s[1] == 'p') return true;
  }
  return false;
}
