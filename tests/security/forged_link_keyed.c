/* An attacker who learnt a slab's list key (here from a use-after-free read
 * of two freed blocks, as in forged_link_live.c) forges a link to a LIVE
 * block x of another size class in the same superslab, and sets x's first
 * word so that it decodes to the end of the list. The default build's link
 * check keeps a list inside its superslab only, so malloc(48) would hand out
 * x, a 200-byte block still in use. Caught by measure keys (a link must be a
 * block of the same slab: "free list corrupted"), and by canary (x's trailer
 * is not a free 48-byte block's). */
#include "common.h"

int main(void) {
  char *x = malloc(200);
  memset(x, 'x', 200);
  char *a = malloc(48), *b = malloc(48);
  free(a);
  free(b);  /* the owner's local free list: b -> a */
  uintptr_t key = *(volatile uintptr_t *)launder(b) ^ (uintptr_t)a;
  *(volatile uintptr_t *)launder(x) = key;                 /* x's "link": NULL */
  *(volatile uintptr_t *)launder(b) = (uintptr_t)x ^ key;  /* b -> x           */
  for (int i = 0; i < 100000; i++)
    if (malloc(48) == x) return not_caught("malloc(48) handed out a live 200-byte block");
  return not_caught("forged link to another slab");
}
