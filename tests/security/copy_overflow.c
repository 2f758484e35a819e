/* A copy into a heap block that runs past its requested end, or starts
 * before it (issue 25). argv[1]: the function (memcpy, memmove, memset,
 * mempcpy, strcpy, strncpy, strcat, memcpy_chk: glibc's fortified entry, as
 * -D_FORTIFY_SOURCE=2 calls it; read: memcpy from the block onto the stack
 * past its end; after_free: memset of the whole block after its free),
 * argv[2]: the block size (default 8), argv[3]: +N writes N bytes past the
 * end (the copy is the block's size plus N), -N starts N bytes before the
 * block and runs to its end (the copy is the block's size plus N: it always
 * crosses the block's start; a copy wholly before it may land inside a live
 * neighbour, a legal copy, which the shuffled layout of the secure build
 * made a coin toss). Every call goes through a volatile
 * function pointer, so the compiler cannot inline it into moves.
 *
 * Caught by the secure build (measure copy) at the call, before any byte is
 * written: a SIGABRT handler compares the bytes around the block with a
 * snapshot taken before the call and exits 5 if any changed. With
 * HAKMEM_ABORT_ON_INVALID=0 the call is reported and not carried out: exit 0
 * when those bytes are unchanged. */
#include "common.h"

#include <signal.h>

#define SNAP 256  /* bytes compared on each side of the block, at most */

static char src[(2 << 20) + 4096];  /* a global: not heap memory */
/* the bytes before and after the block, not past its pages (the page
 * before a superslab's first slab is a guard page), and their snapshot */
static volatile unsigned char *lo, *hi;
static size_t nlo, nhi;
static unsigned char before[SNAP], after[SNAP];

/* byte by byte: a memcpy of bytes outside the block would be an over-read
 * that the measure reports */
static void snapshot(void) {
  for (size_t i = 0; i < nlo; i++) before[i] = lo[i];
  for (size_t i = 0; i < nhi; i++) after[i] = hi[i];
}
static int changed(void) {
  for (size_t i = 0; i < nlo; i++) if (before[i] != lo[i]) return 1;
  for (size_t i = 0; i < nhi; i++) if (after[i] != hi[i]) return 1;
  return 0;
}

static void on_abort(int sig) {
  if (changed()) {
    static const char msg[] = "copy_overflow: bytes were written before the report\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(5);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

extern void *__memcpy_chk(void *, const void *, size_t, size_t);

static void *(*volatile fn_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile fn_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile fn_mempcpy)(void *, const void *, size_t) = mempcpy;
static void *(*volatile fn_memset)(void *, int, size_t) = memset;
static char *(*volatile fn_strcpy)(char *, const char *) = strcpy;
static char *(*volatile fn_strncpy)(char *, const char *, size_t) = strncpy;
static char *(*volatile fn_strcat)(char *, const char *) = strcat;
static void *(*volatile fn_memcpy_chk)(void *, const void *, size_t, size_t) = __memcpy_chk;

int main(int argc, char **argv) {
  const char *fn = argc > 1 ? argv[1] : "memcpy";
  size_t size = launder_size(argc > 2 ? strtoul(argv[2], NULL, 0) : 8);
  long delta = argc > 3 ? strtol(argv[3], NULL, 0) : 1;
  size_t past = delta > 0 ? (size_t)delta : 0, early = delta < 0 ? (size_t)-delta : 0;
  memset(src, 'X', sizeof src - 1);
  char *guard_before = malloc(size);  /* live neighbours, most likely */
  char *p = malloc(size);
  char *guard_after = malloc(size);
  memset(p, 'a', size);
  char *d = (char *)launder(p) - early;
  size_t n = size + past + early;

  uintptr_t a = (uintptr_t)p, e = a + size, page = 4095;
  nlo = a - (a & ~page) < SNAP ? a - (a & ~page) : SNAP;
  nhi = (e | page) + 1 - e < SNAP ? (e | page) + 1 - e : SNAP;
  lo = (unsigned char *)a - nlo;
  hi = (unsigned char *)e;
  snapshot();
  signal(SIGABRT, on_abort);

  if (strcmp(fn, "memcpy") == 0) fn_memcpy(d, src, n);
  else if (strcmp(fn, "memmove") == 0) fn_memmove(d, src, n);
  else if (strcmp(fn, "mempcpy") == 0) fn_mempcpy(d, src, n);
  else if (strcmp(fn, "memset") == 0) fn_memset(d, 'X', n);
  else if (strcmp(fn, "memcpy_chk") == 0) fn_memcpy_chk(d, src, n, (size_t)-1);
  else if (strcmp(fn, "strcpy") == 0) {  /* n - 1 characters and the end */
    src[n - 1] = 0;
    fn_strcpy(d, src);
  } else if (strcmp(fn, "strncpy") == 0) {
    fn_strncpy(d, "short", n);  /* pads with zeroes up to n */
  } else if (strcmp(fn, "strcat") == 0) {  /* onto a string of size / 2 */
    memset(p, 'a', size / 2);
    p[size / 2] = 0;
    src[n - size / 2 - 1] = 0;
    fn_strcat(p, src);
  } else if (strcmp(fn, "read") == 0) {  /* the source runs past the block */
    static char sink[(2 << 20) + 4096];
    fn_memcpy(sink, d, n);
  } else if (strcmp(fn, "after_free") == 0) {
    free(p);
    hi = (unsigned char *)p;  /* the freed block's own bytes too */
    nhi = size < SNAP ? size : SNAP;
    snapshot();
    fn_memset(p, 'X', size);
  } else {
    fprintf(stderr, "copy_overflow: no function %s\n", fn);
    return 2;
  }
  const char *abort_on = getenv("HAKMEM_ABORT_ON_INVALID");
  if (abort_on && strcmp(abort_on, "0") == 0) {  /* reported, and not carried out */
    if (changed()) return not_caught("the reported copy was carried out");
    return 0;
  }
  free(guard_after);
  free(guard_before);
  return not_caught("copy past a heap block");
}
