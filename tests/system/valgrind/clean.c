/* Correct use of every tier and of realloc/calloc/aligned allocations,
 * from two threads: under memcheck with libhakmem-valgrind.so this must
 * give no error and no leak (no false positives). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *work(void *arg) {
  unsigned seed = (unsigned)(size_t)arg;
  void *keep[64] = {0};
  for (int i = 0; i < 3000; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t n = (seed >> 8) % (i % 50 == 0 ? 300000 : 2000);
    int k = (int)((seed >> 4) % 64);
    free(keep[k]);
    keep[k] = (i % 7 == 0) ? calloc(1, n + 1) : malloc(n + 1);
    memset(keep[k], i, n + 1);
    if (i % 11 == 0) {
      keep[k] = realloc(keep[k], n * 2 + 16);
      memset(keep[k], 1, n * 2 + 16);
    }
    if (i % 13 == 0) {
      void *a = aligned_alloc(256, 512);
      memset(a, 2, 512);
      free(a);
    }
  }
  for (int k = 0; k < 64; k++) free(keep[k]);
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, work, (void *)1);
  work((void *)2);
  pthread_join(t, NULL);
  char *s = strdup("clean");
  printf("%s\n", s);
  free(s);
  return 0;
}
