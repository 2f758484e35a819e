/* Correct use of every entry point, many sizes, several threads, blocks
 * freed by other threads, every byte up to malloc_usable_size written. Must
 * exit 0 with no "hakmem:" report in either build: the checks have no false
 * positives. argv[1]: threads (default 4), argv[2]: rounds (default 20000). */
#include <malloc.h>
#include <pthread.h>
#include "common.h"

/* C23; glibc before 2.39 lacks them: hakmem's, found at run time */
static void (*fn_free_sized)(void *, size_t);
static void (*fn_free_aligned_sized)(void *, size_t, size_t);

static void free_ignoring_size(void *p, size_t n) { (void)n; free(p); }
static void free_ignoring_size_alignment(void *p, size_t a, size_t n) { (void)a; (void)n; free(p); }

#define SLOTS 512
static int rounds = 20000;
static void *_Atomic handoff[64];  /* blocks passed to the next thread */
static int nthreads = 4;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
  return *s;
}

static size_t pick_size(uint64_t *s) {
  uint64_t r = rnd(s);
  switch (r % 16) {
    case 0: return r >> 40 & 7;                  /* 0..7       */
    case 1: case 2: case 3: case 4: return (r >> 32) % 128 + 1;
    case 5: case 6: case 7: return (r >> 32) % 1024 + 1;
    case 8: case 9: return (r >> 32) % 32768 + 1;  /* mid, up to the edge */
    case 10: return 32768 - 8 + (r >> 32) % 16;     /* around the tier edge */
    case 11: return (r >> 32) % (1 << 20) + 32769;  /* large */
    default: return (r >> 32) % 256 + 1;
  }
}

static int check(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

static void *worker(void *arg) {
  long id = (long)arg;
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
  unsigned char *slot[SLOTS] = {0};
  size_t len[SLOTS] = {0};
  unsigned char tag[SLOTS] = {0};
  for (int r = 0; r < rounds; r++) {
    unsigned i = rnd(&s) % SLOTS;
    if (slot[i]) {
      if (!check(slot[i], len[i], tag[i])) {
        fprintf(stderr, "benign: data corrupted (thread %ld)\n", id);
        exit(1);
      }
      switch (rnd(&s) % 6) {
        case 0: {  /* realloc, grow or shrink, contents kept */
          size_t n = pick_size(&s);
          unsigned char *q = realloc(slot[i], n ? n : 1);
          if (!q) { perror("realloc"); exit(1); }
          size_t keep = len[i] < n ? len[i] : n;
          if (!check(q, keep, tag[i])) { fprintf(stderr, "benign: realloc lost data\n"); exit(1); }
          memset(q, tag[i], n ? n : 1);
          slot[i] = q; len[i] = n ? n : 1;
          continue;
        }
        case 1: {  /* hand it to another thread to free */
          void *old = __atomic_exchange_n(&handoff[(id * 7 + r) % 64], slot[i], __ATOMIC_ACQ_REL);
          free(old);
          break;
        }
        case 2: fn_free_sized(slot[i], len[i]); break;
        default: free(slot[i]); break;
      }
      slot[i] = NULL;
    } else {
      size_t n = pick_size(&s);
      unsigned char *p;
      switch (rnd(&s) % 8) {
        case 0: p = calloc(1, n); if (p && !check(p, n, 0)) { fprintf(stderr, "benign: calloc not zero\n"); exit(1); } break;
        case 1: {
          size_t a = (size_t)16 << (rnd(&s) % 9);  /* 16 .. 4096 */
          p = aligned_alloc(a, n);
          if (p && ((uintptr_t)p & (a - 1))) { fprintf(stderr, "benign: misaligned\n"); exit(1); }
          break;
        }
        case 2: {
          void *q = NULL;
          size_t a = (size_t)8 << (rnd(&s) % 10);
          if (posix_memalign(&q, a, n) != 0) q = NULL;
          p = q;
          break;
        }
        default: p = malloc(n); break;
      }
      if (!p) { fprintf(stderr, "benign: allocation of %zu failed\n", n); exit(1); }
      /* every usable byte belongs to the program */
      size_t u = malloc_usable_size(p);
      if (u < n) { fprintf(stderr, "benign: usable %zu < %zu\n", u, n); exit(1); }
      memset(p, 0xEE, u);
      tag[i] = (unsigned char)(rnd(&s) | 1);
      memset(p, tag[i], n);
      slot[i] = p; len[i] = n;
    }
  }
  for (unsigned i = 0; i < SLOTS; i++) free(slot[i]);
  return NULL;
}

int main(int argc, char **argv) {
  require_allocator();
  fn_free_sized = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  fn_free_aligned_sized = (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
  if (under_peer()) {  /* a peer without them (scudo): plain free in their place */
    if (!fn_free_sized) fn_free_sized = free_ignoring_size;
    if (!fn_free_aligned_sized) fn_free_aligned_sized = free_ignoring_size_alignment;
  }
  if (!fn_free_sized || !fn_free_aligned_sized) { fprintf(stderr, "benign: no free_sized\n"); return 1; }
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) rounds = atoi(argv[2]);
  /* the odd ones out, once */
  free(NULL);
  free(malloc(0));
  void *z = realloc(NULL, 10); z = realloc(z, 0); free(z);
  char *d = strdup("hello, hardened heap"); free(d);
  void *v = valloc(100); free(v);
  void *m = memalign(64, 3000); free(m);
  void *pv = pvalloc(5000); free(pv);
  void *fa = aligned_alloc(256, 512); fn_free_aligned_sized(fa, 256, 512);
  char *big = malloc(5 << 20); memset(big, 1, 5 << 20); big = realloc(big, 9 << 20); free(big);

  pthread_t t[64];
  if (nthreads > 64) nthreads = 64;
  for (long i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 64; i++) free(handoff[i]);
  return 0;
}
