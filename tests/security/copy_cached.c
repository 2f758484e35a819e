/* A copy into (or out of) a heap block that was fine a moment ago: the
 * copy checks' per-thread hints must not pass it (measure copy,
 * src/override/copy_check.c). Each case first makes a legal copy, so that
 * the block is the one the thread checked last (for a span block: its
 * hinted start), then changes the block and copies again:
 *
 *   span_freed    a span block (100000 bytes) freed, then written: "not in a
 *                 live hakmem block"
 *   span_shrunk   a span block shrunk in place by realloc (100000 to 50000
 *                 bytes), then written with 90000 bytes: "block ... of
 *                 50000 bytes"
 *   span_read     a span block read onto a global, freed, read again
 *                 (the source's hint): heap over-read
 *   slab_freed    a small block written, its neighbour in the slab freed,
 *                 then written
 *
 * Every call goes through a volatile function pointer, so the compiler
 * cannot inline it into moves. Caught by the secure build at the second
 * call (SIGABRT); exit 1 ("NOT CAUGHT") when the copy goes through. */
#include "common.h"

static char src[100000];
static char sink[100000];
static void *(*volatile fn_memcpy)(void *, const void *, size_t) = memcpy;

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "span_freed";
  require_hakmem();
  memset(src, 'X', sizeof src);
  if (strcmp(how, "span_freed") == 0) {
    char *p = malloc(launder_size(100000));
    fn_memcpy(p, src, 64);
    fn_memcpy(p + 50000, src, 64);
    free(p);
    fn_memcpy(launder(p), src, 64);
    return not_caught("a copy into a freed span block");
  }
  if (strcmp(how, "span_shrunk") == 0) {
    char *p = malloc(launder_size(100000));
    fn_memcpy(p, src, 90000);
    char *q = realloc(p, launder_size(50000));
    if (q != p) fprintf(stderr, "copy_cached: realloc moved the block (the copy below is into the new one)\n");
    fn_memcpy(q, src, 90000);
    return not_caught("a copy past a span block shrunk in place");
  }
  if (strcmp(how, "span_read") == 0) {
    char *p = malloc(launder_size(100000));
    memset(p, 'a', 100000);
    fn_memcpy(sink, p, 64);
    free(p);
    fn_memcpy(sink, launder(p), 64);
    return not_caught("a copy out of a freed span block");
  }
  if (strcmp(how, "slab_freed") == 0) {
    char *a = malloc(launder_size(48)), *b = malloc(launder_size(48));
    fn_memcpy(a, src, 48);
    fn_memcpy(b, src, 48);
    free(b);
    fn_memcpy(a, src, 48);
    fn_memcpy(launder(b), src, 48);
    free(a);
    return not_caught("a copy into a freed small block");
  }
  fprintf(stderr, "copy_cached: no case %s\n", how);
  return 2;
}
