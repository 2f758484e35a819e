/* hello.c — a C program using hakmem.
 *
 * Build against an installed hakmem:
 *   cc hello.c $(pkg-config --cflags --libs hakmem) -Wl,-rpath,$(pkg-config --variable=libdir hakmem)
 * or see CMakeLists.txt (find_package) and Makefile (pkg-config) here.
 *
 * Linking libhakmem (shared or static) makes malloc/free/... hakmem's; the
 * hak_* calls from <hakmem.h> use hakmem whatever the process's malloc is.
 * Exits 1 if anything is inconsistent. */
#include <hakmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  int ok = 1;

  /* the standard malloc family */
  char *s = malloc(64);
  if (!s) return 1;
  snprintf(s, 64, "hello from malloc");
  int *v = calloc(1000, sizeof *v);
  if (!v) return 1;
  for (int i = 0; i < 1000; i++) v[i] = i;
  v = realloc(v, 100000 * sizeof *v);
  if (!v || v[999] != 999) return 1;

  /* hakmem's own API */
  void *a = hak_aligned_alloc(4096, 100);
  if (!a || (uintptr_t)a % 4096 != 0 || hak_usable_size(a) < 100 || !hak_owns(a)) ok = 0;
  char *h = hak_malloc(32);
  if (!h || !hak_owns(h)) ok = 0;
  strcpy(h, "hello from hak_malloc");

  /* since 0.2 (find_package(hakmem 0.2) in CMakeLists.txt) */
  struct hak_stats st;
  long delay = -1;
  if (hak_stats_read(&st, sizeof st) != sizeof st || hak_ctl_get("PURGE_DELAY_MS", &delay) != 0 ||
      delay < 0)
    ok = 0;

  int active = hak_is_active();
  printf("hakmem %s (header %d.%d.%d)\n", hak_version(), HAKMEM_VERSION_MAJOR,
         HAKMEM_VERSION_MINOR, HAKMEM_VERSION_PATCH);
  printf("hak_is_active=%d\n", active);
  printf("malloc block owned by hakmem: %d\n", hak_owns(s));
  printf("%s; %s\n", s, h);
  /* when hakmem is the process's malloc, malloc's blocks are hakmem's */
  if (hak_owns(s) != active || hak_owns(v) != active) ok = 0;

  hak_free(h);
  hak_free(a);
  free(v);
  free(s);
  if (!ok) fprintf(stderr, "hello: inconsistent results\n");
  return ok ? 0 : 1;
}
