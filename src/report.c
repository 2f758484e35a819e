#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* false until the knobs are read: as HAKMEM_ABORT_ON_INVALID was before */
static bool abort_on_invalid;

void hk_report_set_abort(bool on) { abort_on_invalid = on; }

static void message_v(int fd, const char *fmt, va_list ap) {
  char buf[512];
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  ssize_t w = write(fd, buf, (size_t)n);
  (void)w;
}

void hk_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message_v(STDERR_FILENO, fmt, ap);
  va_end(ap);
}

void hk_message_fd(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message_v(fd, fmt, ap);
  va_end(ap);
}

void hk_report_invalid_at(const void *caller, const char *what, const void *p, const char *reason) {
  if (caller) hk_message("hakmem: invalid %s(%p): %s (called from %p)\n", what, p, reason, caller);
  else hk_message("hakmem: invalid %s(%p): %s\n", what, p, reason);
  if (abort_on_invalid) abort();
}

void hk_report_invalid(const char *what, const void *p, const char *reason) {
  hk_report_invalid_at(NULL, what, p, reason);
}

void hk_assert_fail(const char *expr, const char *file, int line) {
  hk_message("hakmem: assertion failed: %s (%s:%d)\n", expr, file, line);
  abort();
}
