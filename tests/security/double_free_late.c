/* double_free_late SIZE [THREAD]: free(p), then 1024 x free(malloc(SIZE)),
 * then free(p) again: p has long left the head of any list (it may even
 * have been handed out and freed again in between). THREAD=remote: the
 * second free comes from another thread. Caught: default (the free mark:
 * freelist.h), secure (the trailer's state). */
#include "common.h"
#include <pthread.h>

static void *second_free(void *p) {
  free(launder(p));
  return NULL;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
  int remote = argc > 2 && strcmp(argv[2], "remote") == 0;
  char *p = malloc(launder_size(n));
  memset(p, 0x5a, n);
  free(p);
  for (int i = 0; i < 1024; i++) {
    char *q = malloc(launder_size(n));
    memset(q, i, n);
    free(q);
  }
  if (remote) {
    pthread_t t;
    pthread_create(&t, NULL, second_free, p);
    pthread_join(t, NULL);
  } else {
    free(launder(p));
  }
  return not_caught("late double free");
}
