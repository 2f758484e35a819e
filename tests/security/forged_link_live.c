/* Use after free, read and write, as in forged_link_metadata.c, but the
 * forged link points at a LIVE block c of the same slab, whose first word
 * the attacker also set so that it decodes to NULL (a valid end of list):
 * every link check passes, and malloc would hand out c while the program
 * still uses it (two owners of one block: the usual next step to a type
 * confusion). Caught: secure (the free bitmap says c is not free: "free list
 * corrupted"). The default build hands c out: its key is per process and its
 * link check only keeps lists inside their superslab. */
#include "common.h"

int main(void) {
  char *a = malloc(48), *b = malloc(48), *c = malloc(48);
  memset(c, 'c', 48);
  free(a);
  free(b);  /* the owner's local free list: b -> a */
  uintptr_t key = *(volatile uintptr_t *)launder(b) ^ (uintptr_t)a;
  *(volatile uintptr_t *)launder(c) = key;            /* c's "link": NULL  */
  *(volatile uintptr_t *)launder(b) = (uintptr_t)c ^ key;  /* b -> c      */
  for (int i = 0; i < 100000; i++)
    if (malloc(48) == c) return not_caught("malloc handed out a live block");
  return not_caught("forged link to a live block");
}
