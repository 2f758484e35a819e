/* Frees a block and asks for another at once: the new block must not overlap
 * the one just freed, at the same size or a smaller one. argv[1]: the freed
 * block's size, argv[2]: the next request's size (default: the same),
 * argv[3]: "realloc" to make the next block by growing another block with
 * realloc (which moves it) instead of malloc. 2000 rounds, each with a fresh
 * freed block. Kept: secure (small and mid: delayed reuse; large: the
 * quarantine of the guard measure). */
#include "common.h"

static int overlaps(const char *a, size_t na, const char *b, size_t nb) { return b < a + na && a < b + nb; }

int main(int argc, char **argv) {
  size_t n1 = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 4096);
  size_t n2 = launder_size(argc > 2 ? strtoul(argv[2], NULL, 0) : n1);
  int use_realloc = argc > 3 && strcmp(argv[3], "realloc") == 0;
  require_allocator();
  for (int round = 0; round < 2000; round++) {
    char *keep = malloc(16);  /* something live beside it, as in a real heap */
    char *a = malloc(n1);
    if (!a || !keep) return not_caught("malloc failed");
    memset(a, 'a', n1 < 4096 ? n1 : 4096);
    char *grow = use_realloc ? malloc(1) : NULL;
    free(a);
    char *b = use_realloc ? realloc(grow, n2) : malloc(n2);
    if (!b) return not_caught("malloc failed");
    if (overlaps(a, n1, b, n2)) {
      fprintf(stderr, "round %d: freed %p (%zu bytes), then got %p (%zu bytes)\n", round, (void *)a, n1,
              (void *)b, n2);
      return not_caught("a just-freed block handed out again");
    }
    free(b);
    free(keep);
  }
  return 0;
}
