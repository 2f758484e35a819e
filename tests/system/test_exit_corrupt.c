/* A corrupted free list is reported at thread exit, not followed. A thread
 * frees blocks of its own, then (as a write after free would) overwrites
 * the link word of one of them, then exits: the hand-over of its heap
 * (heap_slabs.c, unhand_free_list) joins its current slab's two lists, and
 * must report the link ("free list corrupted") and abort. Each case runs in
 * a child process whose stderr is read back through a pipe:
 *   join     the lists join at the shorter one's tail (nothing counted).
 *            The thread's frees go aside, onto local_free (stats turned on
 *            and off again set its current slab aside), so the corrupted
 *            block heads local_free, the shorter list.
 *   counted  stats on at exit: the free list is walked whole to count its
 *            blocks; the corrupted block is on it, the thread's first free
 *            (the last one a stray malloc of the class would reach).
 *   clean    join's steps without the write: the child exits 0 and reports
 *            nothing, so the setup alone does not abort.
 * The report must come after the thread's last word ("thread returns"): at
 * its exit, not in a malloc of its own. Blocks of 176 B, a class nothing
 * else in the process uses. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hakmem.h"

enum { N = 8, SIZE = 176 };
enum { JOIN, COUNTED, CLEAN };
static const char *const names[] = { "join", "counted", "clean" };
static const char last_word[] = "thread returns\n";

static void say(const char *s) {
  ssize_t w = write(STDERR_FILENO, s, strlen(s));
  (void)w;
}

static void *body(void *arg) {
  int mode = (int)(intptr_t)arg;
  void *volatile p[N];
  for (int i = 0; i < N; i++) p[i] = malloc(SIZE);
  if (mode != COUNTED) {  /* set aside: the frees below go onto local_free */
    hak_ctl_set("STATS", 1);
    hak_ctl_set("STATS", 0);
  }
  for (int i = 0; i < N; i++) free(p[i]);
  /* the write after free: join's on the last freed block (local_free's
   * head), counted's on the first freed (deepest on the free list) */
  if (mode == JOIN) *(volatile uintptr_t *)p[N - 1] = (uintptr_t)0x4141414141414141ull;
  if (mode == COUNTED) *(volatile uintptr_t *)p[0] = (uintptr_t)0x4141414141414141ull;
  if (mode == COUNTED) hak_ctl_set("STATS", 1);  /* counted at exit */
  say(last_word);
  return NULL;
}

/* the child: one thread runs the case and exits */
static void child(int mode) {
  if (hak_ctl_set("ABORT_ON_INVALID", 1) != 0) _exit(2);
  pthread_t t;
  if (pthread_create(&t, NULL, body, (void *)(intptr_t)mode) != 0) _exit(2);
  pthread_join(t, NULL);
  say("joined\n");
  _exit(0);
}

static int run(int mode) {
  int fd[2];
  if (pipe(fd) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], STDERR_FILENO);
    child(mode);
  }
  close(fd[1]);
  static char out[8192];
  size_t len = 0;
  ssize_t r;
  while (len < sizeof out - 1 && (r = read(fd[0], out + len, sizeof out - 1 - len)) > 0) len += (size_t)r;
  out[len] = 0;
  close(fd[0]);
  int st;
  if (waitpid(pid, &st, 0) != pid) return 1;

  const char *word = strstr(out, last_word);
  const char *report = strstr(out, "free list corrupted");
  int ok;
  if (mode == CLEAN) {
    ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && word && !strstr(out, "hakmem: invalid");
  } else {
    ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && word && report && report > word &&
         !strstr(out, "joined");
  }
  printf("%-8s %s (%s %d)\n", names[mode], ok ? "ok" : "FAILED",
         WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  if (!ok) printf("  its stderr:\n%s", out);
  fflush(stdout);
  return !ok;
}

int main(void) {
  fflush(stdout);
  int bad = 0;
  for (int mode = JOIN; mode <= CLEAN; mode++) bad |= run(mode);
  return bad;
}
