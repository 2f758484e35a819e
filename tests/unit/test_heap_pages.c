/* test_heap_pages — what a thread's heap struct keeps resident
 * (src/heap/heap.c, registry_alloc and heap_zero).
 *
 * A thread that allocates small blocks only touches the fields of its
 * heap up to the mid cache's stacks: under 12 KiB, three pages when the
 * struct starts on a page. The stacks (10 KiB, last) are touched only by
 * a class of mid blocks the thread uses. Counted with mincore over the
 * struct's slot, for each thread:
 *
 *   fresh:  four threads alive at once, each in a fresh slot (two share
 *           a 64 KiB chunk): its struct starts on a page, and at most
 *           three of its pages are resident (a struct laid out at the
 *           size of the last one straddled a fourth);
 *   reused: threads one after another, each taking the struct the one
 *           before gave back: still three (zeroing the whole struct on
 *           reuse touched the stacks' pages too: six);
 *   mid:    a thread that frees a mid block into its stack has a page of
 *           the stacks resident (the count sees past three pages: the
 *           checks above can fail). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "heap/heap.h"

#define PAGE 4096u

/* pages of the slot h's struct lies on that are resident */
static unsigned resident_pages(const void *h) {
  uintptr_t start = (uintptr_t)h & ~(uintptr_t)(PAGE - 1);
  uintptr_t end = ((uintptr_t)h + sizeof(hk_heap_t) + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
  return (unsigned)check_resident_pages((const void *)start, end - start);
}

typedef struct { size_t mid; unsigned pages; uintptr_t heap; } job_t;
static pthread_barrier_t bar;
static int use_barrier;

static void *run(void *arg) {
  job_t *j = arg;
  for (int i = 0; i < 100; i++) {  /* small classes only, blocks written */
    char *p = malloc(16 + (size_t)i * 8);
    CHECK_FATAL(p != NULL);
    memset(p, i, 16 + (size_t)i * 8);
    free(p);
  }
  if (j->mid) {
    char *m = malloc(j->mid);
    CHECK_FATAL(m != NULL);
    memset(m, 1, j->mid);
    free(m);  /* onto this thread's stack of its class */
  }
  j->heap = (uintptr_t)hk_tls_heap;
  j->pages = resident_pages(hk_tls_heap);
  if (use_barrier) pthread_barrier_wait(&bar);  /* all alive at once: fresh slots */
  return NULL;
}

static void run_threads(job_t *jobs, int n, int together) {
  pthread_t t[8];
  use_barrier = together;
  if (together) pthread_barrier_init(&bar, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) {
    CHECK_FATAL(pthread_create(&t[i], NULL, run, &jobs[i]) == 0);
    if (!together) pthread_join(t[i], NULL);
  }
  if (together)
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  if (together) pthread_barrier_destroy(&bar);
}

int main(void) {
  free(malloc(16));
  job_t fresh[4] = {{0}};
  run_threads(fresh, 4, 1);
  for (int i = 0; i < 4; i++) {
    CHECKF(fresh[i].heap % PAGE == 0, "fresh thread %d: heap struct at %#lx, not on a page", i,
           (unsigned long)fresh[i].heap);
    CHECKF(fresh[i].pages <= 3, "fresh thread %d: %u pages of its heap struct resident", i, fresh[i].pages);
  }
  job_t reused[6] = {{0}};
  run_threads(reused, 6, 0);
  for (int i = 0; i < 6; i++)
    CHECKF(reused[i].pages <= 3, "reused thread %d: %u pages of its heap struct resident", i, reused[i].pages);
  job_t mid[1] = {{ .mid = 24 * 1024 }};
  run_threads(mid, 1, 0);
  CHECKF(mid[0].pages >= 4, "mid thread: %u pages resident: the count does not see the stacks", mid[0].pages);
  printf("heap struct %zu B; pages resident: fresh %u %u %u %u, reused %u .. %u, mid %u\n", sizeof(hk_heap_t),
         fresh[0].pages, fresh[1].pages, fresh[2].pages, fresh[3].pages, reused[0].pages, reused[5].pages,
         mid[0].pages);
  return check_done("heap_pages");
}
