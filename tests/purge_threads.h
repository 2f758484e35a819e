/* purge_threads.h: how many threads of this process are named
 * hakmem-purge (the background purge thread, src/policy/bg.c), from
 * /proc/self/task/TID/comm. Used by tests/system/test_idle.c and
 * tests/progs/static_probe.c. */
#ifndef HK_TEST_PURGE_THREADS_H
#define HK_TEST_PURGE_THREADS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

static int purge_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fgets(name, sizeof name, f) && strncmp(name, "hakmem-purge", 12) == 0) n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

#endif
