/* HAKMEM_ABORT_ON_INVALID=0 (docs/ENV_VARS.md: "reported and ignored"): an
 * interleaved double free a, b, a must be reported and then ignored, so that
 * the heap stays sound: a is handed out at most once afterwards. Exits 0 when
 * it was; the script also wants the report on stderr.
 * Found by this test and fixed in 6aebb45 (secure build): hk_sec_on_free
 * reported the double free, but the caller then pushed the block on the free
 * list a second time (a cycle): a came back from malloc again and again. */
#include "common.h"

int main(void) {
  require_hakmem();
  char *a = malloc(64), *b = malloc(64);
  free(a);
  free(b);
  free(launder(a));  /* reported, then (knob 0) ignored */
  int times = 0;
  for (int i = 0; i < 20000; i++)
    if (malloc(64) == a) times++;
  if (times > 1) {
    fprintf(stderr, "security test: NOT IGNORED: the double-freed block was handed out %d times\n", times);
    return 1;
  }
  return 0;
}
