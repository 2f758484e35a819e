/* test_budget — the OS-call budget: after warm-up, a steady random_mixed
 * loop (16-1024 B, 400 live slots) of 10 M ops must make at most one
 * mmap/munmap/madvise call, as counted by hakmem itself. tests/system/budget.sh runs
 * it under strace too: the window is marked with two getppid() calls, and
 * strace's count between them must agree with hakmem's.
 *
 *   test_budget [OPS=10000000] [WARMUP=2000000] */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t next(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

static void *slot[400];

static void run(uint64_t ops) {
  for (uint64_t i = 0; i < ops; i += 2) {
    unsigned k = (unsigned)(next() % 400);
    free(slot[k]);
    size_t n = 16 + (size_t)(next() % 1009);
    slot[k] = malloc(n);
    ((char *)slot[k])[0] = (char)n;
    ((char *)slot[k])[n - 1] = (char)k;
  }
}

static unsigned long os_calls(void) {
  struct hak_stats s;
  hak_stats_get(&s);
  return s.mmap_calls + s.munmap_calls + s.madvise_calls;
}

int main(int argc, char **argv) {
  uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
  uint64_t warm = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
  CHECK(hak_is_active());
  run(warm);
  unsigned long before = os_calls();
  syscall(SYS_getppid);  /* window start, for strace */
  run(ops);
  syscall(SYS_getppid);  /* window end */
  unsigned long calls = os_calls() - before;
  printf("budget: %llu ops after %llu warm-up: %lu mmap/munmap/madvise calls (hakmem's count)\n",
         (unsigned long long)ops, (unsigned long long)warm, calls);
  CHECKF(calls <= 1, "%lu OS calls in the steady window, budget 1", calls);
  for (int k = 0; k < 400; k++) free(slot[k]);
  return check_done("test_budget");
}
