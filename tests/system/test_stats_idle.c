/* test_stats_idle — with HAKMEM_STATS_INTERVAL and HAKMEM_STATS_FILE set,
 * the timeline gets points while the program calls nothing: the background
 * thread runs from start-up for it (policy/bg.c), whatever the program
 * holds. The program re-runs itself with the knobs set (they are read at
 * start-up), allocates a little, sleeps 500 ms without calling malloc, and
 * counts the timeline's lines written meanwhile and the span of their t_ms. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* lines of path, and the t_ms of the first line from `from` on and the last */
static int count(const char *path, int from, long *t_first, long *t_last) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[16384];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char *t = strstr(line, "\"t_ms\": ");
    if (!t) continue;
    long v = strtol(t + 8, NULL, 10);
    if (n == from) *t_first = v;
    if (n >= from) *t_last = v;
    n++;
  }
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  (void)argc;
  char path[256];
  if (!getenv("HK_IDLE_CHILD")) {
    snprintf(path, sizeof path, "/tmp/hakmem_stats_idle.%d.jsonl", (int)getpid());
    unlink(path);
    const char *env[] = {
      "HK_IDLE_CHILD", path,
      "HAKMEM_STATS_INTERVAL", "50",
      "HAKMEM_STATS_FILE", path,
      "HAKMEM_BACKGROUND_PURGE", "auto", /* a small program: no purge thread of its own */
      NULL };
    return check_exec_self(argv, env);
  }
  snprintf(path, sizeof path, "%s", getenv("HK_IDLE_CHILD"));
  void *keep[64];
  for (int i = 0; i < 64; i++) keep[i] = malloc(100 + i);
  long a = 0, b = 0;
  int before = count(path, 0, &a, &b);
  struct timespec ts = { 0, 500 * 1000000L };
  while (nanosleep(&ts, &ts) != 0) {
  }
  long t_first = -1, t_last = -1;
  int after = count(path, before, &t_first, &t_last);
  CHECKF(after - before >= 5, "%d timeline lines during a 500 ms sleep at a 50 ms interval (want >= 5)",
         after - before);
  CHECKF(t_last - t_first >= 200, "the lines span %ld..%ld ms (want >= 200 ms)", t_first, t_last);
  for (int i = 0; i < 64; i++) free(keep[i]);
  unlink(path);
  return check_done("stats_idle");
}
