#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *keep;
int main(void) {
  char *leak = malloc(100);            /* planted leak: never freed, pointer dropped */
  memset(leak, 1, 100);
  leak = NULL;
  keep = malloc(40);                   /* still reachable: not a leak */
  char *p = malloc(64);
  strcpy(p, "hello");
  free(p);
  volatile char c = p[1];              /* use after free */
  (void)c;
  char *big = malloc(200000);          /* large tier */
  big[0] = 1;
  free(big);
  volatile char d = big[10];           /* use after free, large */
  (void)d;
  char *q = malloc(32);
  for (int i = 0; i < 10000; i++) { void *x = malloc(i % 500); free(x); }
  free(q);
  printf("done %p\n", (void *)keep != NULL ? "x" : "y");
  return 0;
}
