/* test_os_stats — each OS figure of hak_stats counts what its name says.
 *
 *   - munmap bytes are bytes handed to munmap: a run of large-block
 *     reallocs that only mremaps (grow and shrink in place, or move) adds
 *     no munmap bytes unless it also adds munmap calls. On 9d4dbd7 mremap's
 *     shrinks and moves were added to munmap bytes ("munmap 0 (270336
 *     bytes)").
 *   - the peak RSS is never below the current RSS (the peak came from the
 *     kernel's high-water mark and the current from statm: "RSS: 2117632
 *     (peak 2007040)").
 *   - the mapped figure moves with mremap: after a shrink it is smaller.
 *   - the peak RSS is this program's: a child this program starts (fork,
 *     then exec) while it holds 64 MiB reads a small peak (ru_maxrss,
 *     which exec keeps, gave the child its parent's 64 MiB). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hakmem.h"

#define MiB ((size_t)1 << 20)

static struct hak_stats snap(void) {
  struct hak_stats s;
  CHECK_FATAL(hak_stats_get(&s) == 0);
  CHECKF(s.peak_rss_bytes >= s.rss_bytes, "peak RSS %zu below RSS %zu", s.peak_rss_bytes,
         s.rss_bytes);
  CHECKF(s.peak_mapped_bytes >= s.mapped_bytes, "peak mapped %zu below mapped %zu",
         s.peak_mapped_bytes, s.mapped_bytes);
  return s;
}

int main(int argc, char **argv) {
  CHECK(hak_is_active());
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    struct hak_stats s = snap();
    CHECKF(s.peak_rss_bytes < 32 * MiB, "a child's peak RSS reads %zu MiB: its parent's", s.peak_rss_bytes >> 20);
    return check_done("test_os_stats child");
  }
  /* RSS: touch memory in steps, a snapshot after each */
  void *keep[16];
  for (int i = 0; i < 16; i++) {
    keep[i] = malloc(4 * MiB);
    CHECK_FATAL(keep[i]);
    memset(keep[i], i + 1, 4 * MiB);
    snap();
  }
  char *child_argv[] = { argv[0], (char *)"child", NULL };
  int st = check_run_self(child_argv, NULL);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child (started holding 64 MiB) failed: status %d", st);

  /* realloc chains of one huge block (above the spans' 128 MiB: a mapping
   * of its own): mremap only, in place or moved. One byte per page. */
  unsigned long remaps = 0, unmap_calls_seen = 0;
  size_t stray = 0;
  size_t n = 144 * MiB;
  char *p = malloc(n);
  CHECK_FATAL(p);
  for (size_t o = 0; o < n; o += 4096) p[o] = 0x11;
  for (int round = 0; round < 12; round++) {
    struct hak_stats a = snap();
    size_t m = round % 2 ? n / 2 : n * 2;  /* grow, then shrink by a lot */
    char *q = realloc(p, m);
    CHECK_FATAL(q);
    for (size_t o = 0; o < (m < n ? m : n); o += 4096) CHECKF(q[o] == 0x11, "lost at %zu", o);
    for (size_t o = 0; o < m; o += 4096) q[o] = 0x11;
    struct hak_stats b = snap();
    remaps += b.mremap_calls - a.mremap_calls;
    if (b.munmap_calls == a.munmap_calls) stray += b.munmap_bytes - a.munmap_bytes;
    else unmap_calls_seen++;
    if (m < n && b.mremap_calls > a.mremap_calls && b.mmap_calls == a.mmap_calls)
      CHECKF(b.mapped_bytes < a.mapped_bytes, "a shrink by mremap left mapped at %zu (was %zu)",
             b.mapped_bytes, a.mapped_bytes);
    p = q;
    n = m;
  }
  CHECKF(remaps > 0, "no mremap was made: the test reached nothing");
  CHECKF(stray == 0, "%zu munmap bytes counted with no munmap call (%lu rounds had calls)", stray,
         unmap_calls_seen);
  struct hak_stats s = snap();
  if (s.munmap_calls == 0) CHECK(s.munmap_bytes == 0);
  free(p);
  for (int i = 0; i < 16; i++) free(keep[i]);
  snap();
  return check_done("test_os_stats");
}
