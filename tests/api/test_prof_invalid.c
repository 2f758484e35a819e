/* Sampled blocks (HAKMEM_PROF=1 HAKMEM_PROF_SAMPLE=1: every block is
 * sampled) answer as other blocks do: malloc_usable_size at least the
 * request, realloc keeps the bytes, and a free of an interior pointer or a
 * second free is reported by name and changes nothing. Run with
 * HAKMEM_ABORT_ON_INVALID=0; stderr goes through a pipe to be read back.
 *
 * That the blocks were sampled at all is read from the profile
 * (hak_prof_dump): the stacks whose caller is alloc_site must hold its 64
 * blocks, allocated and live, and lose exactly the two really freed (the
 * moved one and the one freed twice) after the invalid frees, and the rest
 * after the last frees. With the profiler off (HAKMEM_PROF=0) or sampling
 * nothing (HAKMEM_PROF_SAMPLE=1099511627776) it fails.
 *
 * The blocks come from a thread of their own: the main thread's free lists
 * filled before the profiler started (mallocs before hakmem's constructor)
 * are not cut, and their blocks go unsampled (PROFILING.md, Limits). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hakmem.h"

enum { N = 64 };
static char *p[N];
static size_t len[N];
static uintptr_t site_ra;  /* alloc_site's return address: frame 1 of its blocks' stacks */

static __attribute__((noinline, noipa)) void alloc_site(void) {
  site_ra = (uintptr_t)__builtin_return_address(0);
  for (int i = 0; i < N; i++) {
    len[i] = 24 + (size_t)i * 600;  /* small, mid and large (> 32 KiB) */
    p[i] = malloc(len[i]);
  }
}

/* what the profile says of alloc_site's blocks: objects and bytes live and
 * allocated (weights are 1 at HAKMEM_PROF_SAMPLE=1); -1 if no profile */
typedef struct { long long lo, lb, ao, ab; } site_t;

static int site_counts(const char *path, site_t *s) {
  memset(s, 0, sizeof *s);
  if (hak_prof_dump(path) != 0) return -1;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    long long lo, lb, ao, ab;
    int at = 0;
    unsigned long pc0, pc1;
    if (sscanf(line, "%lld: %lld [%lld: %lld] @%n", &lo, &lb, &ao, &ab, &at) != 4 || at == 0) continue;
    if (sscanf(line + at, " %lx %lx", &pc0, &pc1) != 2) continue;  /* the header, or one frame */
    /* frame 0 in alloc_site, frame 1 its return into main */
    if (pc1 != site_ra || pc0 - (uintptr_t)alloc_site > 4096) continue;
    s->lo += lo;
    s->lb += lb;
    s->ao += ao;
    s->ab += ab;
  }
  fclose(f);
  return 0;
}

static char path[] = "/tmp/hakmem-test-prof-invalid-XXXXXX";
static int bad, r0, r1, r2;
static long long sum, usable, moved, twice;
static site_t all, after_invalid, after_free;

static void *body(void *arg) {
  alloc_site();
  for (int i = 0; i < N; i++) {
    if (!p[i] || malloc_usable_size(p[i]) < len[i]) bad = 1;
    else memset(p[i], i, len[i]);
    sum += (long long)len[i];
    usable += p[i] ? (long long)malloc_usable_size(p[i]) : 0;
  }
  r0 = site_counts(path, &all);
  moved = (long long)malloc_usable_size(p[3]);
  twice = (long long)malloc_usable_size(p[7]);
  p[3] = realloc(p[3], 9000);
  for (size_t k = 0; k < len[3]; k++) if (p[3][k] != 3) bad = 1;
  free(p[5] + 16);         /* interior */
  free(p[7]);
  free(p[7]);              /* double */
  r1 = site_counts(path, &after_invalid);
  for (int i = 0; i < N; i++) if (i != 7) free(p[i]);
  r2 = site_counts(path, &after_free);
  return arg;
}

int main(void) {
  int tmp = mkstemp(path);
  if (tmp < 0) return 2;
  close(tmp);
  int fd[2];
  if (pipe(fd) != 0) return 2;
  int saved = dup(2);
  dup2(fd[1], 2);
  pthread_t t;
  if (pthread_create(&t, NULL, body, NULL) != 0 || pthread_join(t, NULL) != 0) bad = 1;
  unlink(path);
  fflush(stderr);
  dup2(saved, 2);
  close(fd[1]);
  char buf[8192];
  ssize_t r = read(fd[0], buf, sizeof buf - 1);
  buf[r > 0 ? r : 0] = 0;
  int interior = strstr(buf, "not the start of a hakmem block") != NULL;
  int twice_rep = strstr(buf, "block already freed (double free)") != NULL;
  fprintf(stderr, "%s", buf);
  /* every block sampled, each counted at a size between its request and
   * its usable size; the invalid frees changed nothing, the real ones
   * ended their samples */
  int sampled = r0 == 0 && all.ao == N && all.lo == N && all.ab >= sum && all.ab <= usable && all.lb == all.ab;
  int kept = r1 == 0 && after_invalid.ao == N && after_invalid.lo == N - 2 &&
             after_invalid.lb == all.lb - moved - twice;
  int ended = r2 == 0 && after_free.ao == N && after_free.lo == 0 && after_free.lb == 0;
  if (bad || !interior || !twice_rep || !sampled || !kept || !ended) {
    fprintf(stderr,
            "test_prof_invalid: FAIL (sizes/contents %s, interior %s, double %s; profile of alloc_site: "
            "%s: %lld live of %lld allocated, %lld bytes, requests %lld, usable %lld; "
            "after the invalid frees %s: %lld live, %lld bytes; after all frees %s: %lld live)\n",
            bad ? "bad" : "ok", interior ? "reported" : "MISSED", twice_rep ? "reported" : "MISSED",
            r0 ? "no profile" : sampled ? "ok" : "WRONG", all.lo, all.ao, all.ab, sum, usable,
            r1 ? "no profile" : kept ? "ok" : "WRONG", after_invalid.lo, after_invalid.lb,
            r2 ? "no profile" : ended ? "ok" : "WRONG", after_free.lo);
    return 1;
  }
  printf("test_prof_invalid: OK (%lld blocks sampled at alloc_site, %lld bytes)\n", all.ao, all.ab);
  return 0;
}
