/* double_free_mid_foreign: a block of 8000 bytes that the main thread
 * allocated is freed by another thread, which keeps it in its own mid
 * cache (a thread's stacks take other owners' blocks too, heap.h), and
 * stays alive; then the main thread, the block's owner, frees it again.
 * The free mark is there; the owner's confirmation must look in the other
 * thread's stacks, or the block would be pushed onto its slab while still
 * cached, and handed out twice. Caught: default (the mark and the walk of
 * every heap's stacks), secure (the trailer's state; no mid cache there).
 * With "pooled": the other thread has no heap of its own (it never calls
 * malloc), so the block goes to the mid pool (heap_slabs.h), where the
 * owner's confirmation must look as well. */
#include <pthread.h>
#include "common.h"

static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t freed;

static int pooled;

static void *other(void *p) {
  void *keep = pooled ? NULL : malloc(launder_size(100));  /* this thread gets a heap */
  free(p);
  pthread_barrier_wait(&freed);
  pthread_mutex_lock(&hold);  /* alive, its cache full, until main is done */
  pthread_mutex_unlock(&hold);
  free(keep);
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t t;
  pooled = argc > 1 && strcmp(argv[1], "pooled") == 0;
  char *p = malloc(launder_size(8000));
  memset(p, 'a', 8000);
  pthread_barrier_init(&freed, NULL, 2);
  pthread_mutex_lock(&hold);
  pthread_create(&t, NULL, other, p);
  pthread_barrier_wait(&freed);
  free(launder(p));
  pthread_mutex_unlock(&hold);
  pthread_join(t, NULL);
  return not_caught("owner's double free of a block in another thread's mid cache");
}
