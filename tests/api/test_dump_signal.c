/* test_dump_signal — HAKMEM_DUMP_SIGNAL=10 (SIGUSR1): raising it writes the
 * stats report (to HAKMEM_STATS_FILE) and, with HAKMEM_PROF=1, a heap
 * profile (FILE.0001.heap), from the background thread, and the process
 * goes on: the action hakmem replaced (SIG_DFL, which would end the
 * process, or SIG_IGN, inherited through exec) is not taken. The program
 * re-runs itself with the knobs set, once per previous action. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int file_has(const char *path, const char *what) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[16384];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, what) != NULL;
  fclose(f);
  return found;
}

static int child(void) {
  const char *stats = getenv("HAKMEM_STATS_FILE"), *prof = getenv("HK_DUMP_PROF");
  void *keep[32];
  for (int i = 0; i < 32; i++) keep[i] = malloc(1000 + i);
  CHECK(raise(SIGUSR1) == 0);
  int ok = 0;
  for (int i = 0; i < 200 && !ok; i++) {  /* up to 10 s: a hang guard */
    ok = file_has(stats, "statistics (pid") && access(prof, F_OK) == 0;
    if (!ok) usleep(50000);
  }
  CHECKF(file_has(stats, "statistics (pid"), "no stats report in %s after the signal", stats);
  CHECKF(file_has(stats, "memory: allocated"), "the report lacks the memory figures");
  CHECKF(access(prof, F_OK) == 0, "no heap profile %s after the signal", prof);
  for (int i = 0; i < 32; i++) free(keep[i]);
  return check_done("dump_signal child");
}

int main(int argc, char **argv) {
  (void)argc;
  if (getenv("HK_DUMP_PROF")) return child();
  const char *prev[] = { "SIG_DFL", "SIG_IGN" };
  for (int k = 0; k < 2; k++) {
    char stats[256], prof[256], dump[280];
    snprintf(stats, sizeof stats, "/tmp/hakmem_dump_signal.%d.%d.txt", (int)getpid(), k);
    snprintf(prof, sizeof prof, "/tmp/hakmem_dump_signal.%d.%d.heap", (int)getpid(), k);
    snprintf(dump, sizeof dump, "/tmp/hakmem_dump_signal.%d.%d.0001.heap", (int)getpid(), k);
    unlink(stats);
    unlink(dump);
    const char *env[] = { "HAKMEM_DUMP_SIGNAL", "10", "HAKMEM_STATS_FILE", stats, "HAKMEM_PROF", "1",
                          "HAKMEM_PROF_FILE", prof, "HK_DUMP_PROF", dump, NULL };
    signal(SIGUSR1, k ? SIG_IGN : SIG_DFL);  /* the child's: SIG_IGN survives fork and exec */
    int st = check_run_self(argv, env);
    signal(SIGUSR1, SIG_DFL);
    CHECK(st != -1);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "previous action %s: the child %s %d", prev[k],
           WIFSIGNALED(st) ? "died of signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    unlink(stats);
    unlink(dump);
    unlink(prof);
  }
  return check_done("dump_signal");
}
