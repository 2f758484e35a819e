/* Fill on free (secure build). Reads a block right after freeing it (the
 * program is allowed to in this test; a real one is not):
 *   HAKMEM_FREE_FILL=0  (the default) no fill: the data stays
 *   HAKMEM_FREE_FILL=1  bytes 8..end are zero
 *   HAKMEM_FREE_FILL=2  bytes 8..end hold 0xDF
 * (bytes 0..7 are the encoded free-list link, the last 8 the block's trailer
 * word; without the canary measure bytes 8..15 hold the free mark, so mode
 * 0 looks from byte 16). argv[1]: the mode under test, which must match the environment.
 * Exits 0 when the freed data is gone (modes 1, 2) or, mode 0, still there
 * (the switch does what it says). */
#include "common.h"

int main(int argc, char **argv) {
  require_hakmem();
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  const size_t sizes[] = {32, 200, 1000, 4000, 20000};
  int fails = 0;
  for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    unsigned char *p = malloc(n);
    memset(p, 0x5A, n);  /* "secret" */
    free(p);
    volatile unsigned char *v = launder(p);
    size_t end = n - 8;  /* the block's last word may be its trailer */
    unsigned char want = mode == 0 ? 0x5A : mode == 1 ? 0x00 : 0xDF;
    for (size_t i = mode == 0 ? 16 : 8; i < end; i++)
      if (v[i] != want) {
        fprintf(stderr, "FAIL size %zu mode %d: byte %zu is 0x%02x after free (want 0x%02x)\n",
                n, mode, i, v[i], want);
        fails++;
        break;
      }
  }
  return fails ? 1 : 0;
}
