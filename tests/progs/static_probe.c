/* static_probe: a program linked with libhakmem.a (tests/system/static_link.sh).
 * It allocates a little of every tier, then with the argument "fork" forks
 * and counts, in parent and child, the threads named hakmem-purge: the
 * child has one only if hakmem's fork handler ran (threads are not copied
 * by fork, the handler starts a new one). Everything else the script reads
 * from what the library prints at start and exit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../purge_threads.h"


int main(int argc, char **argv) {
  static const size_t sizes[] = {16, 1000, 40000, 300000, 4u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    unsigned char *p = malloc(sizes[i]);
    if (!p) { printf("malloc(%zu) failed\n", sizes[i]); return 1; }
    memset(p, 0x5a, sizes[i]);
    if (p[sizes[i] - 1] != 0x5a) return 1;
    free(p);
  }
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      /* the new thread may take a moment to name itself */
      int n = 0;
      for (int tries = 0; tries < 200 && (n = purge_threads()) < 1; tries++) usleep(10000);
      void *q = malloc(100);
      free(q);
      _exit(n == 1 ? 0 : 10 + n);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int child = WIFEXITED(st) ? (WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) - 10) : -1;
    printf("purge threads: parent %d, child %d\n", purge_threads(), child);
  }
  printf("static_probe: done\n");
  return 0;
}
