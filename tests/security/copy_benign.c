/* Copies that stay inside their blocks (issue 25): none may be reported.
 * Exactly up to the requested end, at every offset class, through every
 * interposed function; overlapping memmove inside one block; copies into
 * and out of stack and global buffers; zero-length copies at a block's end;
 * blocks from calloc, realloc (shrunk in place, grown), aligned_alloc; small,
 * mid, span-sized (an offset past 2 MiB too) and huge (over 128 MiB)
 * blocks; two threads copying into blocks the other allocated. argv[1]:
 * rounds of the mixed part (default 2000). Exit 0 and no report. */
#include "common.h"

#include <pthread.h>

/* through volatile pointers: calls the compiler cannot inline */
static void *(*volatile fn_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile fn_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile fn_mempcpy)(void *, const void *, size_t) = mempcpy;
static void *(*volatile fn_memset)(void *, int, size_t) = memset;
static char *(*volatile fn_strcpy)(char *, const char *) = strcpy;
static char *(*volatile fn_stpcpy)(char *, const char *) = stpcpy;
static char *(*volatile fn_strncpy)(char *, const char *, size_t) = strncpy;
static char *(*volatile fn_strcat)(char *, const char *) = strcat;
static char *(*volatile fn_strncat)(char *, const char *, size_t) = strncat;
extern void *__memcpy_chk(void *, const void *, size_t, size_t);
extern void *__memset_chk(void *, int, size_t, size_t);
extern char *__strcpy_chk(char *, const char *, size_t);
static void *(*volatile fn_memcpy_chk)(void *, const void *, size_t, size_t) = __memcpy_chk;
static void *(*volatile fn_memset_chk)(void *, int, size_t, size_t) = __memset_chk;
static char *(*volatile fn_strcpy_chk)(char *, const char *, size_t) = __strcpy_chk;

static char global_src[12 << 20], global_dst[(1 << 20) + 64];  /* blocks up to 10 MiB */

static void fail(const char *what, size_t n) {
  fprintf(stderr, "copy_benign: %s (size %zu)\n", what, n);
  exit(1);
}

/* every kind of copy that ends exactly at p + n */
static void exercise(char *p, size_t n) {
  size_t half = n / 2;
  fn_memset(p, 'a', n);
  fn_memcpy(p, global_src, n);
  fn_memmove(p, global_src, n);
  if (fn_mempcpy(p, global_src, n) != p + n) fail("mempcpy's end", n);
  fn_memcpy(p + half, global_src, n - half);   /* from the middle to the end */
  fn_memset(p + n - 1, 'z', 1);                /* the last byte */
  fn_memcpy(p + n, global_src, 0);             /* nothing, at the end */
  fn_memset(p + n, 0, 0);
  fn_memcpy_chk(p, global_src, n, (size_t)-1);
  fn_memset_chk(p, 'b', n, n);
  if (n >= 2) {  /* overlapping, inside the block, both ways */
    fn_memmove(p + 1, p, n - 1);
    fn_memmove(p, p + 1, n - 1);
  }
  fn_memcpy(global_dst, p, n <= (1 << 20) ? n : (1 << 20));  /* out of the block */
  char stack[4096];
  fn_memcpy(stack, p, n < sizeof stack ? n : sizeof stack);
  /* strings that fill the block, the end included */
  fn_memset(global_src, 's', n - 1);
  global_src[n - 1] = 0;
  fn_strcpy(p, global_src);
  if (fn_stpcpy(p, global_src) != p + n - 1) fail("stpcpy's end", n);
  fn_strcpy_chk(p, global_src, n);
  fn_strncpy(p, "abc", n);  /* zeroes up to n */
  p[0] = 0;
  fn_strcat(p, global_src);
  p[half] = 0;
  fn_strncat(p, global_src, n - 1 - half);
  fn_memset(global_src, 'S', n);
}

static const size_t sizes[] = { 1, 8, 15, 16, 24, 100, 1000, 1024, 4096, 5000, 32000, 32760,
                                40000, 300000, (5 << 20) + 3 };

static void *other_thread(void *arg) {
  char **blocks = arg;
  for (int i = 0; blocks[i]; i++) exercise(blocks[i], strlen(blocks[i]) + 1);
  return NULL;
}

int main(int argc, char **argv) {
  require_hakmem();
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  fn_memset(global_src, 'S', sizeof global_src);

  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    char *p = malloc(n);
    if (!p) fail("malloc", n);
    exercise(p, n);
    /* calloc'd, aligned */
    char *c = calloc(1, n);
    exercise(c, n);
    free(c);
    char *a = aligned_alloc(64, n);
    exercise(a, n);
    free(a);
    /* shrunk by realloc (in place when it fits), then grown */
    p = realloc(p, n / 2 + 1);
    exercise(p, n / 2 + 1);
    p = realloc(p, n * 2);
    exercise(p, n * 2);
    free(p);
  }

  /* a span block: a copy that starts past its first 2 MiB */
  char *big = malloc(9 << 20);
  fn_memset(big + (5 << 20) + 7, 'q', (4 << 20) - 7);
  fn_memcpy(big + (8 << 20), global_src, 1 << 20);
  fn_memcpy(big + 4096 * 3 + 5, global_src, 100);
  free(big);
  /* a huge block (a mapping of its own): in its first 2 MiB, and past them */
  size_t hn = ((size_t)130 << 20) + 11;
  char *huge = malloc(hn);
  if (!huge) fail("malloc huge", hn);
  fn_memcpy(huge, global_src, 1 << 20);
  fn_memcpy(huge + 100, global_src, 4000);
  fn_memcpy(huge + hn - 4000, global_src, 4000);
  free(huge);

  /* blocks copied into by another thread */
  char *blocks[9] = {0};
  for (int i = 0; i < 8; i++) {
    size_t n = (size_t)7 << (i * 2);  /* 7 B .. 114 KiB */
    blocks[i] = malloc(n);
    fn_memset(blocks[i], 'x', n - 1);
    blocks[i][n - 1] = 0;
  }
  pthread_t t;
  pthread_create(&t, NULL, other_thread, blocks);
  pthread_join(t, NULL);
  for (int i = 0; i < 8; i++) free(blocks[i]);

  /* mixed: many live blocks, copies between them */
  char *slot[64] = {0};
  size_t len[64] = {0};
  unsigned x = 12345;
  for (int r = 0; r < rounds; r++) {
    x = x * 1103515245 + 12345;
    unsigned i = (x >> 8) % 64, j = (x >> 16) % 64;
    if (!slot[i]) {
      len[i] = 1 + (x >> 4) % 3000;
      slot[i] = malloc(len[i]);
      fn_memset(slot[i], (int)i, len[i]);
    } else if (slot[j] && i != j) {
      size_t n = len[i] < len[j] ? len[i] : len[j];
      fn_memcpy(slot[i], slot[j], n);
      fn_memmove(slot[j] + len[j] - n, slot[i] + len[i] - n, n);
    } else {
      free(slot[i]);
      slot[i] = NULL;
    }
  }
  for (int i = 0; i < 64; i++) free(slot[i]);
  return 0;
}
