/* Heap profiling's test program (tests/system/prof.sh), run under LD_PRELOAD of
 * libhakmem.so with HAKMEM_PROF=1. Three call sites allocate known amounts
 * in three tiers (small, mid, large), each far more than 200 sampling
 * intervals, and keep a known part live; it prints the truth per site.
 *   prof_sites sites   the three sites; dumps PATH.dump by hak_prof_dump
 *   prof_sites leak    a site whose blocks are never freed, one that frees */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

static void **keep;
static size_t nkeep;

/* n blocks of size bytes; every `live`-th one is kept, the rest freed */
static __attribute__((noinline)) size_t churn(size_t n, size_t size, size_t live, void *(*get)(size_t),
                                              size_t *kept) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    char *p = get(size);
    if (!p) { perror("malloc"); exit(2); }
    p[0] = (char)i;
    p[size - 1] = (char)i;
    bytes += size;
    if (live && i % live == 0) { keep[nkeep++] = p; *kept += size; }
    else free(p);
  }
  return bytes;
}

/* the sites: each calls malloc itself (the innermost frame outside
 * hakmem), not a tail call: the result is stored */
static __attribute__((noinline)) void *site_small(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
static __attribute__((noinline)) void *site_mid(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
static __attribute__((noinline)) void *site_large(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
static __attribute__((noinline)) void *leak_site(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }
static __attribute__((noinline)) void *temp_site(size_t n) { void *p = malloc(n); __asm__ volatile("" ::"r"(p) : "memory"); return p; }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "sites";
  keep = calloc(1 << 20, sizeof *keep);
  if (strcmp(mode, "sites") == 0) {
    /* total allocated, then live: small 1200/48 MiB, mid 800/24, large 400/12 */
    size_t ks = 0, km = 0, kl = 0;
    size_t s = churn(1200 * 4096, 256, 25, site_small, &ks);
    size_t m = churn(800 * 256, 4096, 33, site_mid, &km);
    size_t l = churn(400 * 16, 65536, 33, site_large, &kl);
    printf("truth site_small %.1f %.1f\ntruth site_mid %.1f %.1f\ntruth site_large %.1f %.1f\n",
           s / MiB, ks / MiB, m / MiB, km / MiB, l / MiB, kl / MiB);
    int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "hak_prof_dump");
    if (argc > 2) {
      if (!dump || dump(argv[2]) != 0) { fprintf(stderr, "hak_prof_dump failed\n"); return 1; }
    }
    for (size_t i = 0; i < nkeep; i++) free(keep[i]);
    return 0;
  }
  if (strcmp(mode, "leak") == 0) {
    size_t k = 0, t = 0;
    size_t leaked = churn(64 * 1024, 1024, 1, leak_site, &k);  /* 64 MiB, all kept */
    churn(400 * 4096, 256, 0, temp_site, &t);                  /* 400 MiB, all freed */
    printf("truth leak_site %.1f %.1f\n", leaked / MiB, k / MiB);
    return 0;  /* keep[] and its blocks leak */
  }
  fprintf(stderr, "usage: prof_sites sites [DUMP] | leak\n");
  return 2;
}
