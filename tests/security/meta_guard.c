/* Underflow from the first block of a superslab into the allocator's
 * metadata. In the secure build a superslab is [metadata 8 KiB][guard page
 * 4 KiB][blocks] (src/backend/superslab.h: HK_SS_META_SIZE, HK_SS_HDR_SIZE): the byte
 * before the first block is in the guard page. Caught: secure (SIGSEGV). */
#include "common.h"

int main(void) {
  char *p = malloc(16);
  char *ss = (char *)((uintptr_t)p & ~(uintptr_t)((2u << 20) - 1));
  volatile char *first_block = (volatile char *)launder(ss + 8192 + 4096);
  first_block[-1] = 'X';  /* the underflow */
  return not_caught("write between superslab metadata and blocks");
}
