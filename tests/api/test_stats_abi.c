/* test_stats_abi — struct hak_stats grows only at its end, and each caller
 * gets exactly the bytes its own struct has (include/hakmem.h, the ABI rule):
 *
 *   - hak_stats_get (the 0.1 call) writes the 0.1.0 struct, everything
 *     before `profile`, and not one byte more: a program built against 0.1's
 *     header has no room for what came later;
 *   - hak_stats_read(out, size) writes min(size, the library's size) bytes,
 *     zeroes the rest of a bigger caller's struct, returns what it filled,
 *     and writes nothing for size 0 or NULL;
 *   - the fields of 0.1 are where they were (offsets frozen);
 *   - the appended `profile` is the profile in force;
 *   - allocated, active, metadata, resident, retained follow span_shards,
 *     in that order, and allocated <= active <= resident <= mapped; metadata
 *     counts resident pages (a big block's arena maps 9 MiB of page map);
 *   - purge_window_ms, lock_wait_count, lock_wait_ns come last: the
 *     windows in force (each at least the knob's delay, the floor), and
 *     each lock wait counted under exactly one lock. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hakmem.h"

#define V1_SIZE offsetof(struct hak_stats, profile)
#define GUARD 0xA5

static int all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

int main(void) {
  static unsigned char buf[sizeof(struct hak_stats) + 256];
  void *keep = malloc(100);  /* something live to count */
  CHECK_FATAL(keep);
  /* and a big block, whose span arena maps a descriptor of about 9 MiB */
  unsigned char *blob = malloc(1 << 20);
  CHECK_FATAL(blob);
  memset(blob, 1, 1 << 20);

  /* the 0.1.0 layout: these offsets are the installed ABI */
  CHECK(offsetof(struct hak_stats, counting) == 0);
  CHECK(offsetof(struct hak_stats, live_bytes) == 8);
  CHECK(offsetof(struct hak_stats, classes) == 208);
  CHECK(V1_SIZE == 5968);
  CHECK(sizeof(struct hak_class_stats) == 80);

  /* hak_stats_get: the old struct, not one byte past it */
  memset(buf, GUARD, sizeof buf);
  CHECK(hak_stats_get((struct hak_stats *)buf) == 0);
  CHECKF(all_bytes(buf + V1_SIZE, sizeof buf - V1_SIZE, GUARD),
         "hak_stats_get wrote past the 0.1 struct (%zu bytes)", (size_t)V1_SIZE);
  CHECK(((struct hak_stats *)buf)->live_bytes >= 100);
  CHECK(hak_stats_get(NULL) == -1);

  /* hak_stats_read with the full size */
  struct hak_stats s;
  memset(&s, GUARD, sizeof s);
  CHECK(hak_stats_read(&s, sizeof s) == sizeof s);
  CHECK(s.profile == 1);  /* balanced: the test runs with no HAKMEM_PROFILE */
  CHECK(s.live_bytes >= 100);
  CHECK(s.classes[0].block_size == 16);

  /* jemalloc's figures: appended after span_shards, in this order, and
   * ordered as their meanings say (hakmem.h) */
  CHECK(offsetof(struct hak_stats, allocated) > offsetof(struct hak_stats, span_shards));
  CHECK(offsetof(struct hak_stats, active) == offsetof(struct hak_stats, allocated) + sizeof(size_t));
  CHECK(offsetof(struct hak_stats, metadata) == offsetof(struct hak_stats, active) + sizeof(size_t));
  CHECK(offsetof(struct hak_stats, resident) == offsetof(struct hak_stats, metadata) + sizeof(size_t));
  CHECK(offsetof(struct hak_stats, retained) == offsetof(struct hak_stats, resident) + sizeof(size_t));
  CHECK(offsetof(struct hak_stats, purge_window_ms) == offsetof(struct hak_stats, retained) + sizeof(size_t));
  CHECK(offsetof(struct hak_stats, lock_wait_count) ==
        offsetof(struct hak_stats, purge_window_ms) + HAK_STATS_TIERS * sizeof(long));
  CHECK(offsetof(struct hak_stats, lock_wait_ns) ==
        offsetof(struct hak_stats, lock_wait_count) + HAK_STATS_LOCKS * sizeof(unsigned long));
  CHECK(sizeof(struct hak_stats) == offsetof(struct hak_stats, lock_wait_ns) + HAK_STATS_LOCKS * sizeof(unsigned long));
  CHECK(HAK_STATS_TIERS == 3 && HAK_STATS_LOCKS == 10);
  long delay = 0;
  CHECK(hak_ctl_get("HAKMEM_PURGE_DELAY_MS", &delay) == 0);
  for (int t = 0; t < HAK_STATS_TIERS; t++)
    CHECKF(s.purge_window_ms[t] >= delay, "tier %d: window %ld under the delay %ld", t, s.purge_window_ms[t], delay);
  unsigned long named = 0;
  for (int i = 0; i < HAK_STATS_LOCKS; i++) named += s.lock_wait_count[i];
  CHECKF(named == s.lock_waits, "waits per lock sum to %lu, lock_waits %lu", named, s.lock_waits);
  CHECK(s.allocated == s.live_bytes);
  CHECKF(s.active >= s.allocated && s.active >= 64 * 1024, "active %zu, allocated %zu", s.active, s.allocated);
  CHECKF(s.metadata >= s.superslabs * 8192 && s.metadata > 0, "metadata %zu", s.metadata);
  /* memory, not address space: the arena's descriptor counts the pages it
   * touched (it counted all of it, 8.5 MB in a 2.8 MB process) */
  CHECKF(s.metadata < s.rss_bytes && s.metadata < (4u << 20), "metadata %zu, RSS %zu", s.metadata, s.rss_bytes);
  CHECKF(s.resident >= s.active && s.resident <= s.mapped_bytes, "resident %zu, active %zu, mapped %zu",
         s.resident, s.active, s.mapped_bytes);
  CHECK(s.retained == s.mapped_bytes - s.resident);

  /* a caller built against an older header: only its bytes */
  size_t sizes[] = { 1, 8, 16, 207, 208, V1_SIZE - 1, V1_SIZE };
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    memset(buf, GUARD, sizeof buf);
    size_t n = hak_stats_read((struct hak_stats *)buf, sizes[i]);
    CHECKF(n == sizes[i], "size %zu: filled %zu", sizes[i], n);
    CHECKF(all_bytes(buf + sizes[i], sizeof buf - sizes[i], GUARD),
           "size %zu: wrote past the caller's struct", sizes[i]);
  }
  /* a caller built against a newer header: its unknown tail is zeroed */
  memset(buf, GUARD, sizeof buf);
  size_t big = sizeof(struct hak_stats) + 64;
  CHECK(hak_stats_read((struct hak_stats *)buf, big) == sizeof(struct hak_stats));
  CHECK(all_bytes(buf + sizeof(struct hak_stats), 64, 0));
  CHECK(all_bytes(buf + big, sizeof buf - big, GUARD));

  /* nothing for nothing */
  memset(buf, GUARD, sizeof buf);
  CHECK(hak_stats_read((struct hak_stats *)buf, 0) == 0);
  CHECK(all_bytes(buf, sizeof buf, GUARD));
  CHECK(hak_stats_read(NULL, sizeof s) == 0);

  free(blob);
  free(keep);
  return check_done("stats_abi");
}
