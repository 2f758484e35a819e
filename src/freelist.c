#define _GNU_SOURCE
#include "freelist.h"

#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

uintptr_t hk_list_key;
uintptr_t hk_free_mark;

static uint64_t mix64(uint64_t k) {
  k ^= k >> 29;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 32;
  return k;
}

/* 8 of the 16 random bytes the kernel gives every process (AT_RANDOM),
 * mixed; no syscall, no file. */
void hk_list_key_init(void) {
  const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
  uint64_t k = (uint64_t)(uintptr_t)&hk_list_key * 0x9e3779b97f4a7c15ull;
  if (r) memcpy(&k, r + 8, sizeof k);  /* no alignment promised */
  hk_list_key = (uintptr_t)(mix64(k) | 1);
  /* the mark: bytes of its own (one getrandom call at start; if that
   * fails, the clock and addresses, which ASLR makes differ per process) */
  uint64_t m;
  if (getrandom(&m, sizeof m, GRND_NONBLOCK) != (ssize_t)sizeof m) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    m = mix64((uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 32) ^ (uint64_t)(uintptr_t)&m ^
              ((uint64_t)(uintptr_t)&hk_free_mark << 17));
  }
  hk_free_mark = (uintptr_t)(m | 1);  /* never 0, what malloc leaves */
}

void hk_report_list_corrupt(const void *block) {
  hk_report_invalid("malloc", block,
                    "free list corrupted (heap overflow or write after free) next to this block");
  __builtin_trap();  /* a corrupted list cannot be followed, whatever the knob says */
}
