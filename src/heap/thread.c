/* A thread's heap from its first slow path to its exit (thread.h). */
#include "heap/thread.h"

#include <pthread.h>

#include "heap/heap_slabs.h"

static pthread_key_t exit_key;       /* its destructor hands the heap over */
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void heap_thread_exit(void *arg) { hk_thread_heap_done((hk_heap_t *)arg); }
static void exit_key_create(void) { pthread_key_create(&exit_key, heap_thread_exit); }

hk_heap_t *hk_thread_heap_init(void) {
  hk_heap_t *h = hk_heap_new();
  if (!h) return NULL;
  pthread_once(&exit_key_once, exit_key_create);  /* allocates nothing */
  hk_tls_heap = h;
  pthread_setspecific(exit_key, h);  /* may allocate: the heap is in place already */
  return h;
}

void hk_thread_heap_done(hk_heap_t *h) {
  if (h == NULL || h == &hk_heap_empty || !h->live) return;
  hk_heap_enter(h);
  hk_heap_abandon(h);
  hk_heap_leave(h);
  if (hk_tls_heap == h) hk_tls_heap = &hk_heap_empty;
  hk_heap_retire(h);
}
