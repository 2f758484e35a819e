/* Sampled blocks (HAKMEM_PROF=1 HAKMEM_PROF_SAMPLE=1: every block is
 * sampled) answer as other blocks do: malloc_usable_size at least the
 * request, realloc keeps the bytes, and a free of an interior pointer or a
 * second free is reported by name and changes nothing. Run with
 * HAKMEM_ABORT_ON_INVALID=0; stderr goes through a pipe to be read back. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  int fd[2];
  if (pipe(fd) != 0) return 2;
  int saved = dup(2);
  dup2(fd[1], 2);
  enum { N = 64 };
  char *p[N];
  int bad = 0;
  for (int i = 0; i < N; i++) {
    size_t n = 24 + (size_t)i * 600;
    p[i] = malloc(n);
    if (!p[i] || malloc_usable_size(p[i]) < n) bad = 1;
    memset(p[i], i, n);
  }
  p[3] = realloc(p[3], 9000);
  for (size_t k = 0; k < 24 + 3 * 600; k++) if (p[3][k] != 3) bad = 1;
  free(p[5] + 16);         /* interior */
  free(p[7]);
  free(p[7]);              /* double */
  for (int i = 0; i < N; i++) if (i != 7) free(p[i]);
  fflush(stderr);
  dup2(saved, 2);
  close(fd[1]);
  char buf[8192];
  ssize_t r = read(fd[0], buf, sizeof buf - 1);
  buf[r > 0 ? r : 0] = 0;
  int interior = strstr(buf, "not the start of a hakmem block") != NULL;
  int twice = strstr(buf, "block already freed (double free)") != NULL;
  fprintf(stderr, "%s", buf);
  if (bad || !interior || !twice) {
    fprintf(stderr, "test_prof_invalid: FAIL (sizes/contents %s, interior %s, double %s)\n", bad ? "bad" : "ok",
            interior ? "reported" : "MISSED", twice ? "reported" : "MISSED");
    return 1;
  }
  printf("test_prof_invalid: OK\n");
  return 0;
}
