/* Use after free, read and write: the link of a freed block b whose
 * successor a is known gives away its slab's key (link = a ^ key); the
 * attacker then points b's link at the slab descriptor's own `key` field,
 * whose content (the key) decodes to NULL, the end of a list. Expected: the
 * forged link is refused ("free list corrupted").
 * Found by this test and fixed in 6aebb45 (secure build): both link checks
 * passed (the target is in the superslab, its link decodes to NULL), and
 * hk_sec_on_alloc then cleared a bit of the free bitmap at an index computed
 * from the non-block pointer, out of bounds (SIGSEGV, or a silent bit flip
 * nearby). Secure links must now be blocks of the same slab. The default
 * build refuses it too (its key is not stored in the superslab).
 * The descriptor layout is the secure build's (src/backend/superslab.h): slabs[] at
 * the start of the 2 MiB superslab, 128 bytes each, key at +56; small slabs
 * are 64 KiB. If it changes this test only tests a link to some metadata. */
#include "common.h"

int main(void) {
  char *a = malloc(48), *b = malloc(48);
  free(a);
  free(b);  /* the owner's local free list: b -> a */
  uintptr_t key = *(volatile uintptr_t *)launder(b) ^ (uintptr_t)a;
  uintptr_t ss = (uintptr_t)b & ~(uintptr_t)((2u << 20) - 1);
  unsigned slab = (unsigned)(((uintptr_t)b & ((2u << 20) - 1)) >> 16);
  uintptr_t target = ss + slab * 128 + 56;
  *(volatile uintptr_t *)launder(b) = target ^ key;  /* the forged link */
  for (int i = 0; i < 100000; i++)
    if ((uintptr_t)malloc(48) == target) return not_caught("malloc returned slab metadata");
  return not_caught("forged link to slab metadata");
}
