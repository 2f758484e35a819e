/* test_ss_header — what a superslab keeps resident of its 8 KiB header
 * (src/backend/superslab.h: the fields, then the descriptors;
 * superslab.c, ss_init).
 *
 * The superslab's fields and its first HK_SS_DESC_PAGE1 descriptors share
 * the header's first page, and ss_init leaves a descriptor past them
 * unwritten while it reads as an unused one does. So a thread's fresh
 * superslab, with a few slabs in use, has the first page of its header
 * resident and not the second (with the fields after 32 descriptors both
 * were written at once); once a slab past the first page's descriptors is
 * taken, the second is written too (the count sees it: the first check
 * can fail). A thread's exit, and a fork child's taking over of a thread
 * it lost, leave the second page as they found it. Written pages are read
 * from /proc/self/pagemap. Run with HAKMEM_THP=never; where the system backs every mapping
 * with huge pages (THP `always`), exit 77. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "check.h"
#include "backend/superslab.h"

/* The header's pages this process wrote (check_page_written). On a kernel
 * that maps the zero page a read maps it (not written); on one that maps
 * none (6.18 here) a read takes a page of its own and counts: no loop may
 * then read a descriptor past the first page before one is taken. */
static unsigned char header_pages(const hk_superslab_t *ss) {
  unsigned char r = 0;
  for (unsigned i = 0; i < 2; i++)
    if (check_page_written((const char *)ss + (size_t)i * 4096)) r |= (unsigned char)(1u << i);
  return r;
}

static unsigned slab_index(const void *p) {
  return (unsigned)(((uintptr_t)p & HK_SS_MASK) >> hk_ss_of(p)->slab_shift);
}

static void *run(void *arg) {
  (void)arg;
  char *first = malloc(16);
  CHECK_FATAL(first != NULL);
  memset(first, 1, 16);
  hk_superslab_t *ss = hk_ss_of(first);
  CHECKF(slab_index(first) < HK_SS_DESC_PAGE1, "the first block's slab %u", slab_index(first));
  unsigned char few = header_pages(ss);
  CHECKF(few == 1, "a superslab with one slab in use: header pages resident %s %s", few & 1 ? "yes" : "no",
         few & 2 ? "yes" : "no");
  /* 1 KiB blocks until one lies in a slab past the first page's descriptors */
  enum { MAX = 8192 };
  static void *kept[MAX];
  unsigned n = 0, past = 0;
  while (n < MAX && !past) {
    char *b = malloc(1000);
    CHECK_FATAL(b != NULL);
    memset(b, 2, 1000);
    kept[n++] = b;
    if (hk_ss_of(b) == ss && slab_index(b) >= HK_SS_DESC_PAGE1) past = 1;
  }
  CHECKF(past, "no block of %u in a slab past %u of the first superslab", n, HK_SS_DESC_PAGE1);
  unsigned char many = header_pages(ss);
  CHECKF(many == 3, "slab %u taken: header pages resident %s %s", HK_SS_DESC_PAGE1, many & 1 ? "yes" : "no",
         many & 2 ? "yes" : "no");
  printf("descriptors on the first page: %u; header pages resident: %u with one slab, %u with %u blocks more\n",
         (unsigned)HK_SS_DESC_PAGE1, few == 1 ? 1u : 2u, many == 3 ? 2u : 1u, n);
  for (unsigned i = 0; i < n; i++) free(kept[i]);
  free(first);
  return NULL;
}

/* A thread's exit hands its superslabs over (hk_heap_abandon), with a
 * block still live in one or with none: neither writes the descriptors
 * past the first page, which the abandon and the cache once reset for all
 * 32 slabs (a fifth page a thread, kept after it exited). */
static hk_superslab_t *exited_ss[2];
static unsigned char exited_before[2];
static void *exited_live;
static void *exiting(void *arg) {
  unsigned keep = (unsigned)(uintptr_t)arg;
  char *b = malloc(16);
  CHECK_FATAL(b != NULL);
  memset(b, 3, 16);
  exited_ss[keep] = hk_ss_of(b);
  exited_before[keep] = header_pages(hk_ss_of(b));
  if (keep) exited_live = b;
  else free(b);
  return NULL;
}

/* fork(): the child takes over the superslabs of threads it lost
 * (hk_ss_orphan_foreign) and writes only the descriptors of slabs in
 * use; a write to another would copy a page the parent never backed. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_state;  /* 1: the block is taken; 2: the parent forked */
static void *holding(void *arg) {
  char *b = malloc(16);
  CHECK_FATAL(b != NULL);
  memset(b, 4, 16);
  *(hk_superslab_t **)arg = hk_ss_of(b);
  pthread_mutex_lock(&hold_mu);
  hold_state = 1;
  pthread_cond_broadcast(&hold_cv);
  while (hold_state != 2) pthread_cond_wait(&hold_cv, &hold_mu);
  pthread_mutex_unlock(&hold_mu);
  free(b);
  return NULL;
}

static void fork_check(void) {
  hk_superslab_t *ss = NULL;
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, holding, &ss) == 0);
  pthread_mutex_lock(&hold_mu);
  while (hold_state != 1) pthread_cond_wait(&hold_cv, &hold_mu);
  pthread_mutex_unlock(&hold_mu);
  unsigned char before = header_pages(ss);
  CHECKF(!(before & 2), "the held superslab's second header page written before the fork");
  fflush(stdout);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  if (pid == 0) {
    void *p = malloc(24);
    free(p);
    _exit((header_pages(ss) & 2) ? 1 : 0);
  }
  int st = 0;
  CHECK_FATAL(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
         "fork child: the lost thread's superslab's second header page written (before: %u)", before);
  pthread_mutex_lock(&hold_mu);
  hold_state = 2;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
  pthread_join(t, NULL);
}

int main(void) {
  if (check_thp_always()) {
    printf("THP always: every superslab may be a huge page; nothing to count\n");
    return 77;
  }
  /* the exits first: a later thread may take over the superslab an exit
   * left, whose second page must still be unwritten then */
  pthread_t t;
  for (uintptr_t keep = 0; keep < 2; keep++) {
    CHECK_FATAL(pthread_create(&t, NULL, exiting, (void *)keep) == 0);
    pthread_join(t, NULL);
    unsigned char after = header_pages(exited_ss[keep]);
    CHECKF(!(exited_before[keep] & 2), "a thread's superslab (it may be one an exit left): second header page written");
    CHECKF(!(after & 2), "a thread exited with %s: its superslab's second header page written",
           keep ? "a block live" : "no block");
  }
  free(exited_live);
  fork_check();
  CHECK_FATAL(pthread_create(&t, NULL, run, NULL) == 0);  /* a fresh heap, a fresh superslab */
  pthread_join(t, NULL);
  return check_done("ss_header");
}
