/* test_writer — src/base/writer.c, the one buffered writer of the reports
 * (statistics, heap profile, configuration, malloc_stats/malloc_info):
 *
 *   - onto an fd, every byte arrives in order through a write() that is
 *     interrupted (EINTR) and then takes a few bytes at a time (short
 *     writes), for strings longer than the buffer and formatted pieces that
 *     do not fit behind what waits; a piece longer than the whole buffer is
 *     cut at its size; the count of bytes taken is exact;
 *   - a write that fails (EIO) or takes nothing makes the flush say false,
 *     and the output stays failed;
 *   - onto a FILE, the bytes keep their place among the FILE's own.
 * The program's own write() stands in for glibc's: the writer's calls reach
 * it (the white-box archive is linked into this program). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/writer.h"
#include "check.h"

/* The fd under test and what write() does to it. */
static int target = -1;
static enum { PASS, SCRIPTED, FAIL_EIO, TAKE_NOTHING } mode = PASS;
static unsigned calls, interrupts;

ssize_t write(int fd, const void *buf, size_t n) {
  if (fd != target || mode == PASS) return syscall(SYS_write, fd, buf, n);
  calls++;
  if (mode == FAIL_EIO) { errno = EIO; return -1; }
  if (mode == TAKE_NOTHING) return 0;
  if (calls % 4 == 1) { interrupts++; errno = EINTR; return -1; }  /* every fourth call interrupted */
  return syscall(SYS_write, fd, buf, n < 3 ? n : 3);                 /* the others: short */
}

static size_t contents(int fd, char *out, size_t size) {
  ssize_t r = pread(fd, out, size - 1, 0);
  out[r > 0 ? r : 0] = 0;
  return r > 0 ? (size_t)r : 0;
}

static void through_interrupts(void) {
  target = (int)syscall(SYS_memfd_create, "writer", 0);
  CHECK_FATAL(target >= 0);
  mode = SCRIPTED;
  char buf[16], want[200], got[200];
  hk_writer_t w;
  hk_writer_to_fd(&w, target, buf, sizeof buf);
  const char *long_text = "a string longer than two buffers of sixteen";
  hk_write_str(&w, long_text);                     /* longer than the buffer */
  hk_write_str(&w, "0123456789");
  hk_write_fmt(&w, "[%s]", "abcdefgh");            /* does not fit behind the ten */
  hk_write_fmt(&w, "%d-%zu", -42, (size_t)7);
  hk_write_bytes(&w, "x\0y", 3);                   /* bytes, a NUL among them */
  hk_write_flush(&w);
  hk_write_fmt(&w, "%s|", "0123456789abcdefghij");  /* longer than the buffer: cut */
  CHECK(hk_write_flush(&w));
  int n = snprintf(want, sizeof want, "%s0123456789[abcdefgh]-42-7", long_text);
  memcpy(want + n, "x\0y", 3);
  memcpy(want + n + 3, "0123456789abcde", 15);
  size_t len = (size_t)n + 3 + 15;
  size_t have = contents(target, got, sizeof got);
  CHECKF(have == len && memcmp(got, want, len) == 0, "%zu bytes of %zu: \"%s\"", have, len, got);
  CHECKF(w.total == len, "counted %zu bytes, wrote %zu", w.total, len);
  CHECKF(interrupts >= 5 && calls > len / 3, "%u calls, %u interrupted: the script did not run",
         calls, interrupts);
  close(target);
}

static void failing(int how) {
  target = (int)syscall(SYS_memfd_create, "writer-fail", 0);
  CHECK_FATAL(target >= 0);
  mode = how;
  calls = 0;
  char buf[8];
  hk_writer_t w;
  hk_writer_to_fd(&w, target, buf, sizeof buf);
  hk_write_str(&w, "abc");
  errno = 0;
  CHECK(!hk_write_flush(&w));
  if (how == FAIL_EIO) CHECKF(errno == EIO, "errno %d after a failed write", errno);
  CHECK(w.failed);
  hk_write_str(&w, "a longer text, past the buffer");  /* dropped, no write tried */
  unsigned before = calls;
  CHECK(!hk_write_flush(&w));
  CHECKF(calls == before, "%u writes after the failure", calls - before);
  mode = PASS;
  char got[64];
  CHECK(contents(target, got, sizeof got) == 0);
  close(target);
}

static void onto_a_file(void) {
  char *text = NULL;
  size_t size = 0;
  FILE *fp = open_memstream(&text, &size);
  CHECK_FATAL(fp != NULL);
  char buf[16];
  hk_writer_t w;
  hk_writer_to_file(&w, fp, buf, sizeof buf);
  fputs("<", fp);
  hk_write_fmt(&w, "%s=%d", "twelve", 12);
  hk_write_str(&w, ", then a text past the buffer");
  CHECK(hk_write_flush(&w));
  fputs(">", fp);
  fclose(fp);
  const char *want = "<twelve=12, then a text past the buffer>";
  CHECKF(text && strcmp(text, want) == 0, "\"%s\"", text ? text : "(null)");
  free(text);
}

int main(void) {
  through_interrupts();
  failing(FAIL_EIO);
  failing(TAKE_NOTHING);
  onto_a_file();
  return check_done("writer");
}
