/* parked SIZE double|remote|write: blocks of SIZE freed all but one every
 * 16 KiB, and malloc_trim: with HAKMEM_PARK_PAGES=1 the free pages between
 * the survivors are parked (src/mem/slab_park.h), their blocks off the free
 * lists and their free marks gone with the pages. Then one of those blocks
 * is
 *   double: freed again, by this thread (the free finds no mark), then
 *           malloc_trim again: the park finds it listed on a parked page;
 *   remote: the same, the second free from another thread;
 *   write:  written to (a write after free), then as many blocks allocated
 *           again: the slab takes its parked pages back and finds one
 *           written;
 *   idle:   no malloc_trim: the program sleeps, and the purge thread parks
 *           the pages of its idle heap (HAKMEM_PARK_IDLE: run with the
 *           thread on and a short purge delay); then freed again, and as
 *           many blocks allocated again: the slab takes its parked pages
 *           back and finds the page written, bearing the free mark;
 *   heap_idle: the same with the blocks from a first-class heap
 *           (hak_heap_malloc, freed with free: a remote free to the heap),
 *           parked by the purge thread's pass over idle first-class heaps;
 *           the second free, then as many blocks from the heap again. On a
 *           peer (no hak_heap_new) plain malloc, as in idle;
 *   last:   every survivor freed but the one before it, then freed again
 *           by this thread: its slab's count now reads as holding nothing
 *           but parked blocks, and the next park would give the slab back
 *           with a block still live (a later block of another size would
 *           then share its bytes). The park must find the parked page
 *           written and report the double free instead.
 * Caught: default (those two checks), secure (nothing is parked there: the
 * trailer's state at the free; the write: not caught, a line of its own). */
#include "common.h"
#include <malloc.h>
#include <pthread.h>
#include <time.h>

/* hakmem's first-class heap, looked up so that the program runs on a peer
 * too: hak_heap_new and hak_heap_malloc, or NULL. */
typedef void *(*heap_new_fn)(void);
typedef void *(*heap_malloc_fn)(void *, size_t);
static void *heap;
static heap_malloc_fn heap_malloc;
static void *alloc(size_t n) { return heap ? heap_malloc(heap, launder_size(n)) : malloc(launder_size(n)); }

static void *second_free(void *p) {
  free(launder(p));
  return NULL;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
  const char *how = argc > 2 ? argv[2] : "double";
  size_t count = ((size_t)2 << 20) / n, stride = 4 * 4096 / n < 4 ? 4 : 4 * 4096 / n;
  size_t keep = count * 3 / 4;
  char **v = calloc(count, sizeof *v);
  if (!v) return 2;
  if (strcmp(how, "heap_idle") == 0) {
    heap_new_fn make = (heap_new_fn)dlsym(RTLD_DEFAULT, "hak_heap_new");
    heap_malloc = (heap_malloc_fn)dlsym(RTLD_DEFAULT, "hak_heap_malloc");
    if (make && heap_malloc && !(heap = make())) return 2;
  }
  for (size_t i = 0; i < count; i++) {
    v[i] = alloc(n);
    if (!v[i]) return 2;
    memset(v[i], 0x5a, n);
  }
  char *p = v[stride + stride / 2];  /* between two survivors */
  for (size_t i = 0; i < keep; i++)
    if (i % stride) free(v[i]);
  if (strcmp(how, "idle") == 0 || strcmp(how, "heap_idle") == 0) {
    struct timespec t = { 0, 300 * 1000000L };  /* a dozen purge ticks of 20 ms */
    while (nanosleep(&t, &t) != 0) {
    }
    free(launder(p));
    for (size_t i = 0; i < count; i++) {
      char *q = alloc(n);
      if (!q) return 2;
      memset(q, 1, n);
    }
    return not_caught(heap ? "double free of a block on a page parked while its first-class heap idled"
                           : "double free of a block on a page parked while its thread idled");
  }
  malloc_trim(0);
  if (strcmp(how, "write") == 0) {
    memset(launder(p), 0x77, 16);
    for (size_t i = 0; i < count; i++) memset(malloc(launder_size(n)), 1, n);
    return not_caught("write after free into a parked page");
  }
  if (strcmp(how, "last") == 0) {
    char *live = v[stride];  /* the survivor before p, in p's slab */
    for (size_t i = 0; i < keep; i += stride)
      if (v[i] != live) free(v[i]);
    malloc_trim(0);  /* the other survivors' slabs go back whole */
    free(launder(p));
    malloc_trim(0);
    /* not caught: did live's slab go to another size? */
    char *w[4096];
    for (int k = 0; k < 4096; k++) memset(w[k] = malloc(launder_size(200)), 0x33, 200);
    int changed = 0;
    for (size_t k = 0; k < n; k++) changed |= live[k] != 0x5a;
    return not_caught(changed ? "double free of a parked block: a live block's slab given back"
                              : "double free of a block on a parked page (its slab kept)");
  }
  if (strcmp(how, "remote") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, second_free, p);
    pthread_join(t, NULL);
  } else {
    free(launder(p));
  }
  malloc_trim(0);
  return not_caught("double free of a block on a parked page");
}
