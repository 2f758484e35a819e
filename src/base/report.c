/* Reports (report.h): messages that never allocate, heap errors named with
 * their caller, assertion failures. */
#define _GNU_SOURCE  /* dladdr */
#include "base/report.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <unwind.h>

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

/* ---- who called: the first frame outside hakmem's own object ------------
 * The unwinder reads the tables the compiler left (.eh_frame), so this works
 * without frame pointers and through the fast paths' tail calls; neither it
 * nor dladdr allocates. When hakmem is linked into the program itself, every
 * frame is in its object and the caller is not named. */
struct caller_walk { const void *self; uintptr_t ip; };

static _Unwind_Reason_Code caller_step(struct _Unwind_Context *ctx, void *arg) {
  struct caller_walk *w = arg;
  uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  Dl_info info;
  if (dladdr((void *)(ip - 1), &info) && info.dli_fbase == w->self) return _URC_NO_REASON;
  w->ip = ip;
  return _URC_END_OF_STACK;  /* found: stop */
}

static uintptr_t find_caller(void) {
  Dl_info self;
  if (!dladdr((void *)&find_caller, &self) || !self.dli_fbase) return 0;
  struct caller_walk w = { self.dli_fbase, 0 };
  _Unwind_Backtrace(caller_step, &w);
  return w.ip;
}

/* " (called from ADDR: WHERE)" for the caller ip, or nothing when unknown */
static void caller_text(uintptr_t ip, char *where, size_t size) {
  Dl_info info;
  where[0] = 0;
  if (ip && dladdr((void *)(ip - 1), &info) && info.dli_fname) {
    const char *file = info.dli_fname[0] ? info.dli_fname : "the program";
    if (info.dli_sname)
      snprintf(where, size, " (called from %p: %s+0x%lx in %s)", (void *)ip, info.dli_sname,
               (unsigned long)(ip - (uintptr_t)info.dli_saddr), file);
    else
      snprintf(where, size, " (called from %p: %s+0x%lx)", (void *)ip, file,
               (unsigned long)(ip - (uintptr_t)info.dli_fbase));
  } else if (ip) {
    snprintf(where, size, " (called from %p)", (void *)ip);
  }
}

void hk_report_invalid_at(const void *caller, const char *what, const void *p, const char *reason) {
  char where[320];
  caller_text(caller ? (uintptr_t)caller : find_caller(), where, sizeof where);
  hk_message("hakmem: invalid %s(%p): %s%s\n", what, p, reason, where);
  if (abort_on_invalid) abort();
}

void hk_report_heap(const char *fmt, ...) {
  char text[256], where[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  caller_text(find_caller(), where, sizeof where);
  hk_message("hakmem: %s%s\n", text, where);
  if (abort_on_invalid) abort();
}

void hk_report_invalid(const char *what, const void *p, const char *reason) {
  hk_report_invalid_at(NULL, what, p, reason);
}

void hk_assert_fail(const char *expr, const char *file, int line) {
  hk_message("hakmem: assertion failed: %s (%s:%d)\n", expr, file, line);
  abort();
}

const char *hk_why_kind(unsigned expected, unsigned have) {
  static const char *const why[3][3] = {
    [HK_KIND_MALLOC] = {
      [HK_KIND_NEW] = "free of memory from new (use delete)",
      [HK_KIND_NEW_ARRAY] = "free of memory from new[] (use delete[])",
    },
    [HK_KIND_NEW] = {
      [HK_KIND_MALLOC] = "delete of memory from malloc (use free)",
      [HK_KIND_NEW_ARRAY] = "delete of memory from new[] (use delete[])",
    },
    [HK_KIND_NEW_ARRAY] = {
      [HK_KIND_MALLOC] = "delete[] of memory from malloc (use free)",
      [HK_KIND_NEW] = "delete[] of memory from new (use delete)",
    },
  };
  const char *r = expected < 3 && have < 3 ? why[expected][have] : NULL;
  return r ? r : "free with a kind the block was not allocated with";
}
