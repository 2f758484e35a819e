/* A block of the main thread freed twice by another thread (remote frees).
 * Caught: default (same as the remote list head) and secure (free bitmap). */
#include <pthread.h>
#include "common.h"

static void *twice(void *p) {
  free(p);
  free(launder(p));
  return NULL;
}

int main(void) {
  pthread_t t;
  char *p = malloc(96);
  memset(p, 'a', 96);
  pthread_create(&t, NULL, twice, p);
  pthread_join(t, NULL);
  return not_caught("cross-thread double free");
}
