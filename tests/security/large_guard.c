/* Overflows a large block (a whole number of pages, so its end is the end of
 * the mapping's usable part) by one byte. Caught: secure (guard page ->
 * SIGSEGV at the write). The page after the block must be a PROT_NONE page of
 * the block's own mapping (/proc/self/maps), or a page of it with a guard
 * marker (/proc/self/pagemap: the secure span tier's), not merely unmapped
 * address space, which would fault too but guards nothing once something is
 * mapped there. argv[1] says how the block came to be:
 *   new      a fresh mapping (default)
 *   realloc  grown by realloc from a smaller large block (pages moved by
 *            mremap: the guard must follow the new end)
 *   shrunk   a freed, cached, bigger mapping cut down for it
 *   grown    a freed, cached, smaller mapping grown for it
 *   moved    grown by realloc past its mapping's reserve twice (pages
 *            moved by mremap each time) and within it in between */
#include "common.h"

/* permissions of the mapping that holds addr ("---p"), or "" if unmapped */
static void perms_of(uintptr_t addr, char out[8]) {
  out[0] = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  unsigned long lo, hi;
  char perms[8];
  while (fscanf(f, "%lx-%lx %7s%*[^\n]", &lo, &hi, perms) == 3)
    if (addr >= lo && addr < hi) { strcpy(out, perms); break; }
  fclose(f);
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "new";
  size_t n = launder_size(25 * 4096);
  char *p;
  if (strcmp(how, "realloc") == 0) {
    p = malloc(9 * 4096);
    memset(p, 'a', 9 * 4096);
    p = realloc(p, 17 * 4096);
    p = realloc(p, n);
  } else if (strcmp(how, "moved") == 0) {
    n = launder_size(2560 * 4096);  /* 10 MiB */
    p = malloc(9 * 4096);
    memset(p, 'a', 9 * 4096);
    p = realloc(p, 768 * 4096);   /* 3 MiB: past a 2 MiB reserve */
    memset(p, 'b', 768 * 4096);
    p = realloc(p, 1536 * 4096);  /* 6 MiB: inside the new one */
    p = realloc(p, n);            /* past it again */
    for (size_t i = 0; i < 768 * 4096; i += 4096)
      if (p[i] != 'b') return not_caught("realloc lost the block's contents");
  } else if (strcmp(how, "shrunk") == 0 || strcmp(how, "grown") == 0) {
    free(launder(malloc(strcmp(how, "shrunk") == 0 ? 200 * 4096 : 9 * 4096)));
    p = malloc(n);
  } else {
    p = malloc(n);
  }
  memset(p, 'a', n);
  char perms[8];
  perms_of((uintptr_t)p + n, perms);
  if (strcmp(perms, "---p") != 0 && !(perms[0] && sec_guard_marker((uintptr_t)p + n))) {
    fprintf(stderr, "the page after the block is %s\n", perms[0] ? perms : "unmapped");
    return not_caught("no guard page after the large block");
  }
  ((volatile char *)p)[n] = 'X';  /* the overflow */
  free(p);
  return not_caught("overflow past a large block");
}
