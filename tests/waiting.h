/* waiting.h: clocks, sleeps and resident-set readings for tests that wait
 * for the allocator to give memory back. Nothing here calls malloc: a test
 * that sleeps after its frees must not run the allocator's slow paths
 * itself (they purge on their own clock), and stdio's fopen would.
 *
 * rss_kib()              resident set of this process in KiB, from
 *                        /proc/self/statm (a test that cannot read it
 *                        fails at once: no check may pass on a 0)
 * now_ms(), now_us()     a monotonic clock in milliseconds, microseconds
 * sleep_ms(ms), sleep_us(us)   sleep the whole time, across signals
 * spin_us(us)            compute for us microseconds, never blocking (the
 *                        clock is the vDSO's: no system call that waits)
 * pages_add(pg, &n, cap, p, len)  the 4 KiB pages [p, p + len) touches,
 *                        appended to pg (at most cap in all)
 * pages_kib(pg, n)       how many distinct pages pg holds, in KiB (sorts
 *                        pg): the pages blocks still held pin, which no
 *                        allocator that leaves blocks in place can return */
#ifndef HK_TEST_WAITING_H
#define HK_TEST_WAITING_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void rss_unreadable_(void) {
  static const char msg[] = "FAIL: /proc/self/statm cannot be read\n";
  if (write(1, msg, sizeof msg - 1) < 0) {
  }
  exit(1);
}

static inline long rss_kib(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) rss_unreadable_();
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) rss_unreadable_();
  buf[n] = 0;
  char *p = buf, *end;
  strtol(p, &p, 10);  /* size, then resident */
  long res = strtol(p, &end, 10);
  if (end == p) rss_unreadable_();
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static inline int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static inline int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static inline void spin_us(long us) {
  int64_t end = now_us() + us;
  volatile uint64_t x = 0;
  while (now_us() < end)
    for (int i = 0; i < 1000; i++) x += (uint64_t)i * 13;
}

static inline void sleep_us(long us) {
  struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
  while (nanosleep(&t, &t) != 0) {
  }
}

static inline void sleep_ms(long ms) { sleep_us(ms * 1000); }

static inline void pages_add(uintptr_t *pg, size_t *n, size_t cap, const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p, z = a + (len ? len : 1) - 1;
  for (uintptr_t q = a >> 12; q <= z >> 12 && *n < cap; q++) pg[(*n)++] = q;
}

static inline int pages_cmp_(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static inline size_t pages_kib(uintptr_t *pg, size_t n) {
  qsort(pg, n, sizeof *pg, pages_cmp_);
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || pg[i] != pg[i - 1]) distinct++;
  return distinct * 4;
}

#endif
