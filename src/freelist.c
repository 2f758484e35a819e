#define _GNU_SOURCE
#include "freelist.h"

#include <string.h>
#include <sys/auxv.h>

uintptr_t hk_list_key;

/* 8 of the 16 random bytes the kernel gives every process (AT_RANDOM),
 * mixed; no syscall, no file. */
void hk_list_key_init(void) {
  const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
  uint64_t k = (uint64_t)(uintptr_t)&hk_list_key * 0x9e3779b97f4a7c15ull;
  if (r) memcpy(&k, r + 8, sizeof k);  /* no alignment promised */
  k ^= k >> 29;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 32;
  hk_list_key = (uintptr_t)(k | 1);
}

void hk_report_list_corrupt(const void *block) {
  hk_report_invalid("malloc", block,
                    "free list corrupted (heap overflow or write after free) next to this block");
  __builtin_trap();  /* a corrupted list cannot be followed, whatever the knob says */
}
