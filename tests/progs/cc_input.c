/* cc_input.c — compiled by `cc` with and without LD_PRELOAD=libhakmem.so
 * (preload_programs.sh); the objects' symbols and the program's output must
 * match. Not part of the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
  char name[24];
  unsigned long score;
  struct entry *next;
};

static unsigned long xs = 88172645463325252ul;
static unsigned long next_rand(void) {
  xs ^= xs << 13, xs ^= xs >> 7, xs ^= xs << 17;
  return xs;
}

static int by_score(const void *a, const void *b) {
  const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return strcmp(x->name, y->name);
}

#define N 5000
int table_size = N;
const char *const greeting = "hakmem cc test";

int main(void) {
  struct entry *head = NULL, *all[N];
  for (int i = 0; i < N; i++) {
    struct entry *e = malloc(sizeof *e);
    snprintf(e->name, sizeof e->name, "item-%lu", next_rand() % 100000);
    e->score = next_rand() % 1000003;
    e->next = head;
    head = e;
    all[i] = e;
  }
  qsort(all, N, sizeof all[0], by_score);
  unsigned long h = 1469598103934665603ul;
  for (int i = 0; i < N; i++)
    for (const char *c = all[i]->name; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ul;
  printf("%s: %d entries, min %s=%lu, max %s=%lu, hash %016lx\n", greeting, table_size,
         all[0]->name, all[0]->score, all[N - 1]->name, all[N - 1]->score, h);
  while (head) {
    struct entry *n = head->next;
    free(head);
    head = n;
  }
  return 0;
}
