/* test_keys — the library's one source of randomness (src/base/random.c) and
 * what is drawn from it.
 *
 *   test_keys
 *
 * Linked statically (the key and the generator are internal):
 *   processes  three runs of this program get three free-list keys and three
 *              free marks, and start their aligned mappings at hint
 *              addresses that are not all the same (16-48 TiB; under a
 *              sanitizer there is no hint, and only the keys are compared)
 *   fork       a fork child keeps its parent's key and mark: its heap is
 *              the parent's
 *   output     hk_random is the same for the same (purpose, x), differs
 *              across purposes and across x, and every bit of it takes both
 *              values about half of the time; the generator's outputs do
 *              not repeat */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"
#include "mem/freelist.h"
#include "base/random.h"

#define HINT_LOW ((uintptr_t)16 << 40)
#define HINT_HIGH ((uintptr_t)48 << 40)

typedef struct { uint64_t key, mark, first; } draw_t;

static draw_t mine(void) {
  void *p = malloc(64);  /* the heap starts: the key, and the first superslab */
  draw_t d = { hk_list_key, hk_free_mark, (uintptr_t)p & ~(((uintptr_t)2 << 20) - 1) };
  free(p);
  return d;
}

/* a fresh run of this program (execve: a new AT_RANDOM), or a fork child
 * (exec false): its draw, through a pipe */
static draw_t run(bool exec) {
  int fd[2];
  CHECK_FATAL(pipe(fd) == 0);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  if (pid == 0) {
    close(fd[0]);
    if (exec) {
      dup2(fd[1], 1);
      char *argv[] = { "test_keys", "child", NULL };
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    draw_t d = mine();
    _exit(write(fd[1], &d, sizeof d) == sizeof d ? 0 : 1);
  }
  close(fd[1]);
  draw_t d = { 0, 0, 0 };
  CHECK(read(fd[0], &d, sizeof d) == sizeof d);
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
  return d;
}

static void processes(void) {
  draw_t d[3];
  for (int i = 0; i < 3; i++) {
    d[i] = run(true);
    printf("run %d: key %016" PRIx64 " mark %016" PRIx64 " first superslab %#" PRIx64 "\n", i, d[i].key, d[i].mark,
           d[i].first);
    CHECK(d[i].key & 1 && d[i].mark & 1);  /* never 0 */
    CHECK(d[i].key != d[i].mark);
  }
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++) {
      CHECKF(d[i].key != d[j].key, "runs %d and %d: the same free-list key %" PRIx64, i, j, d[i].key);
      CHECKF(d[i].mark != d[j].mark, "runs %d and %d: the same free mark %" PRIx64, i, j, d[i].mark);
    }
  bool hinted = true;
  for (int i = 0; i < 3; i++) hinted = hinted && d[i].first >= HINT_LOW && d[i].first < HINT_HIGH;
  if (!hinted) {
    printf("note: the first superslabs are not at hint addresses (a sanitizer build?): hints not compared\n");
    return;
  }
  /* 65536 starts: three the same by chance, once in 2^32 */
  CHECKF(!(d[0].first == d[1].first && d[1].first == d[2].first), "three runs start their mappings at %#" PRIx64,
         d[0].first);
}

static void forked(void) {
  draw_t p = mine(), c = run(false);
  CHECKF(c.key == p.key && c.mark == p.mark, "a fork child has key %" PRIx64 " mark %" PRIx64 ", its parent %" PRIx64
         " %" PRIx64, c.key, c.mark, p.key, p.mark);
}

static void output(void) {
  enum { N = 4096 };
  static uint64_t v[N];
  unsigned ones[64] = { 0 };
  for (unsigned i = 0; i < N; i++) {
    v[i] = hk_random(HK_RANDOM_SLAB_KEY, i);
    for (int b = 0; b < 64; b++) ones[b] += (unsigned)(v[i] >> b) & 1;
  }
  CHECK(hk_random(HK_RANDOM_SLAB_KEY, 7) == v[7]);  /* a pair's value is fixed */
  CHECK(hk_random(HK_RANDOM_CARVE, 7) != v[7]);     /* another purpose's is not it */
  CHECK(hk_random(HK_RANDOM_LIST_KEY, 0) != hk_random(HK_RANDOM_FREE_MARK, 0));
  CHECK((hk_random(HK_RANDOM_LIST_KEY, 0) | 1) == hk_list_key);
  int same = 0;
  for (unsigned i = 1; i < N; i++) same += v[i] == v[i - 1];
  CHECKF(same == 0, "%d values equal to the one before", same);
  /* each bit set in 2048 +- 32 (one deviation) of the draws: a bound of
   * 12 deviations never fails by chance, and fails a stuck or constant bit */
  for (int b = 0; b < 64; b++)
    CHECKF(ones[b] > N / 2 - 384 && ones[b] < N / 2 + 384, "bit %d set in %u of %d draws", b, ones[b], N);
  uint64_t s = 12345, prev = hk_random_next(&s);
  int repeats = 0;
  for (int i = 0; i < N; i++) {
    uint64_t x = hk_random_next(&s);
    repeats += x == prev;
    prev = x;
  }
  CHECKF(repeats == 0, "the generator repeated itself %d times", repeats);
  CHECK(hk_random_stream(1, 1) != hk_random_stream(1, 2));
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "child") == 0) {
    draw_t d = mine();
    return write(1, &d, sizeof d) == sizeof d ? 0 : 1;
  }
  if (!hak_is_active()) { printf("SKIP: hakmem is not malloc\n"); return 77; }
  processes();
  forked();
  output();
  return check_done("keys");
}
