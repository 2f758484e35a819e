/* One stray store, not a contiguous run: a single byte written DIST bytes
 * away from a block, skipping every byte in between (the slack byte, the
 * canary, the guard page: what a bad index or a bad offset does, where an
 * overflow by a loop or a memcpy writes every byte on its way). Then the
 * block and its neighbours are freed, and a round of mallocs and frees of
 * the same size follows (a freed neighbour is handed out again).
 *
 * argv[1]: the block size (default 8). argv[2]: DIST, signed (default +32):
 *   +D  the byte at p + n - 1 + D: the last byte an overflow of D bytes
 *       would write (+32: 32 bytes past the block's last byte)
 *   -D  the byte at p - D: the first byte an underflow of D bytes would
 *       write (-32: a store at p - 32)
 * argv[3]: "exact" for +D at p + n + D instead (the byte after that one).
 *
 * The store must land in writable heap memory, or the test measures
 * nothing: the program allocates blocks of the size (up to MAXB of them, in
 * batches) until one block's target lies inside another live block's
 * requested bytes (its data), and writes there; it says on stderr where the
 * byte landed. When no target lands in a live block (e.g. +32 past a mid
 * block of the secure build lands in the block's own slack), the middle
 * block's target is written, and the program says what memory holds it
 * (/proc/self/maps). A SIGSEGV is reported by common.h's handler: in a
 * guard (PROT_NONE) it is a catch; anywhere else it is not.
 *
 * Not caught by the secure build when the byte lands in a neighbour's data
 * or in slack after the first slack byte: free checks the byte after the
 * request and the canary, which a single store skips (docs/SECURITY.md,
 * "Known gaps"). */
#include "common.h"

#include <malloc.h>

#define MAXB (1u << 20)
static char *blk[MAXB];     /* the live blocks, in allocation order */
static char *sorted[MAXB];  /* the same, by address */

static int by_addr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(char *const *)a, y = (uintptr_t)*(char *const *)b;
  return x < y ? -1 : x > y;
}

/* the live block at the highest address at or below t, or NULL */
static char *below(size_t nb, uintptr_t t) {
  size_t lo = 0, hi = nb;  /* the last block starting at or before t */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((uintptr_t)sorted[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo ? sorted[lo - 1] : NULL;
}
/* the live block whose requested bytes [q, q + n) hold t, or NULL */
static char *holder(size_t nb, size_t n, uintptr_t t) {
  char *q = below(nb, t);
  return q && t < (uintptr_t)q + n ? q : NULL;
}

/* the process's mappings, read once: [lo, hi) and permissions */
#define MAXM 4096
static uintptr_t map_lo[MAXM], map_hi[MAXM];
static char map_perms[MAXM][5];
static int nmaps;
static void read_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  nmaps = 0;
  while (f && nmaps < MAXM && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, map_perms[nmaps]) != 3) continue;
    map_lo[nmaps] = lo;
    map_hi[nmaps++] = hi;
  }
  if (f) fclose(f);
}
/* the mapping that holds t, or -1 */
static int mapping_of(uintptr_t t) {
  for (int i = 0; i < nmaps; i++)
    if (t >= map_lo[i] && t < map_hi[i]) return i;
  return -1;
}

/* the byte DIST away from block b */
static uintptr_t target_of(const char *b, size_t n, long dist, int exact) {
  if (dist < 0) return (uintptr_t)b - (size_t)-dist;
  return (uintptr_t)b + n - 1 + (size_t)dist + (exact ? 1 : 0);
}

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 8);
  long dist = argc > 2 ? strtol(argv[2], NULL, 0) : 32;
  int exact = argc > 3 && strcmp(argv[3], "exact") == 0;
  size_t d = dist < 0 ? (size_t)-dist : (size_t)dist;
  /* enough blocks to cover DIST and 2 MiB more, at most MAXB and 64 MiB */
  size_t want = (d + (2u << 20)) / (n + 8) + 64, cap = ((size_t)64 << 20) / (n + 8) + 8;
  if (want > cap) want = cap;
  if (want < 16) want = 16;
  if (want > MAXB) want = MAXB;
  size_t batch = want / 8 + 1;

  size_t nb = 0;
  char *p = NULL, *q = NULL;
  while (!q && nb < want) {
    size_t end = nb + batch < want ? nb + batch : want;
    for (; nb < end; nb++) {
      char *b = malloc(n);
      if (!b) return not_caught("malloc failed");
      for (volatile char *c = b; c < b + n; c += 512) *c = 'a';  /* touched, cheaply */
      b[n - 1] = 'a';
      blk[nb] = sorted[nb] = b;
    }
    qsort(sorted, nb, sizeof sorted[0], by_addr);
    for (size_t i = 0; i < nb && !q; i++) {  /* allocation order: an early block first */
      char *h = holder(nb, n, target_of(blk[i], n, dist, exact));
      if (h && h != blk[i]) { p = blk[i]; q = h; }
    }
  }
  read_maps();
  if (!p) {  /* no target in a live block's data: the first block from the
              * middle on whose target is writable memory (not a guard page,
              * which would catch the store: the write must land somewhere) */
    for (size_t k = 0; k < nb && !p; k++) {
      char *b = blk[(nb / 2 + k) % nb];
      int m = mapping_of(target_of(b, n, dist, exact));
      if (m >= 0 && map_perms[m][0] == 'r' && map_perms[m][1] == 'w') p = b;
    }
    if (!p) p = blk[nb / 2];  /* none: let it fault */
  }
  uintptr_t t = target_of(p, n, dist, exact);

  /* where the byte lands: the nearest live block at or below it */
  char *near = below(nb, t);
  int m = mapping_of(t);
  char what[160];
  if (near && t < (uintptr_t)near + n)
    snprintf(what, sizeof what, "in live block %p, offset %zu of its %zu bytes (its data)", (void *)near,
             (size_t)(t - (uintptr_t)near), n);
  else if (near && t < (uintptr_t)near + n + 65536)
    snprintf(what, sizeof what, "%zu bytes past the end of live block %p (its slack or trailer, or a free block)",
             (size_t)(t - (uintptr_t)near - n), (void *)near);
  else
    snprintf(what, sizeof what, "in no live block");
  fprintf(stderr, "single_write: %zu blocks of %zu bytes live; block %p (usable size %zu), byte %p (%+ld): %s; mapping %s\n",
          nb, n, (void *)p, malloc_usable_size(p), (void *)t, (long)(t - (uintptr_t)p), what,
          m >= 0 ? map_perms[m] : "none (the store faults outside a guard)");

  *(volatile char *)launder((void *)t) = 'X';  /* the one store */

  free(p);
  if (q) free(q);
  for (size_t i = 0; i < nb; i++)
    if (blk[i] != p && blk[i] != q) free(blk[i]);
  /* a round after: the freed blocks handed out again and freed */
  for (size_t i = 0; i < nb; i++) {
    blk[i] = malloc(n);
    if (!blk[i]) return not_caught("malloc failed");
  }
  for (size_t i = 0; i < nb; i++) free(blk[i]);
  fprintf(stderr, "single_write: every block freed, %zu handed out and freed again\n", nb);
  return not_caught(q ? "a single store into a live neighbour's data" : "a single store");
}
