/* A new block holding an earlier block's bytes, the shape glibc does not
 * show for big blocks (issue 63): COUNT blocks of SIZE bytes are filled
 * with 0x5A and freed, then one block of that size is allocated and read,
 * from byte 16 to its last 8 (where an allocator keeps its links and
 * marks). argv[1]: SIZE (default 262144), argv[2]: COUNT (default 4096;
 * 4096 blocks of 256 KiB are 1 GiB).
 * Exits 0 when no byte of the new block is 0x5A (it came from memory the
 * freed blocks' bytes did not reach, or that was given back); else NOT
 * CAUGHT, with how many bytes were. Runs on any allocator (a peer too). */
#include "common.h"

#define SECRET 0x5A

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 262144);
  size_t count = argc > 2 ? strtoul(argv[2], NULL, 0) : 4096;
  require_allocator();
  unsigned char **v = calloc(count, sizeof *v);
  if (!v) return not_caught("calloc failed");
  for (size_t i = 0; i < count; i++) {
    v[i] = malloc(n);
    if (!v[i]) return not_caught("malloc failed");
    memset(v[i], SECRET, n);
  }
  for (size_t i = 0; i < count; i++) free(v[i]);
  volatile unsigned char *q = launder(malloc(n));
  if (!q) return not_caught("malloc failed");
  size_t old = 0, looked = 0;
  for (size_t i = 16; i + 8 < n; i++, looked++) old += q[i] == SECRET;
  fprintf(stderr, "old_bytes: a new %zu-byte block (after %zu freed) holds %zu of %zu bytes looked at from freed blocks\n",
          n, count, old, looked);
  free((void *)q);
  free(v);
  return old ? not_caught("a new block holds an earlier block's bytes") : 0;
}
