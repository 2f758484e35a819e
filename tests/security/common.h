/* Shared by the attack programs of tests/security.sh. Each program is a plain
 * malloc user (not linked to hakmem) run under LD_PRELOAD of the library under
 * test; the script checks how it ends (signal, exit status) and what it wrote
 * to stderr. */
#ifndef SEC_COMMON_H
#define SEC_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hide where a pointer comes from, so that the compiler neither warns about
 * the deliberate misuse nor folds it away. */
static inline void *launder(void *p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}
static inline size_t launder_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/* Exit 3 unless hakmem serves this process's malloc: a test that expects a
 * clean exit must not pass because glibc ran it. */
static inline void require_hakmem(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hak_is_active");
  if (!active || !active()) {
    fprintf(stderr, "security test: hakmem is not this process's malloc (preload missing?)\n");
    exit(3);
  }
}

/* Reached only when the allocator let the attack through. */
static inline int not_caught(const char *what) {
  fprintf(stderr, "security test: NOT CAUGHT: %s\n", what);
  return 1;
}

#endif
