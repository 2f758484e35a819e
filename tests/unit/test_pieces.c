/* test_pieces — the shared pieces of src/base/ (docs/ARCHITECTURE.md,
 * "Shared pieces"), each against a plain model:
 *
 *   - dlist.h: random pushes (head, tail) and unlinks on lists of pointers
 *     and of table indices, with and without a tail, walked both ways after
 *     every step against an array of the expected order; its debug
 *     assertions (this file builds with HK_DEBUG) stop a broken link or a
 *     node pushed twice (in a child, which must abort);
 *   - gate.h: due and pass at the deadline's edges, a forced set, and
 *     threads racing for one due gate: exactly one passes each round;
 *   - cap.h: unset reads the knob, the learner's value, a pin the learner
 *     leaves (also against a thread learning meanwhile), a pin replaced;
 *   - collect.h: pick runs under the lock (its hold counted by the
 *     no-system-call check), release after it. */
#ifndef HK_DEBUG
#define HK_DEBUG 1
#endif
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "base/cap.h"
#include "base/collect.h"
#include "base/dlist.h"
#include "base/gate.h"
#include "check.h"

/* the debug library's count of the no-system-call locks a thread holds
 * (lock.h); a release library, which this file may link, has none */
__attribute__((weak)) __thread unsigned hk_nosys_held;

#define N 64

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {  /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* ---- the model: the expected order of the nodes (indices 1..N-1) ---- */

static unsigned model[N], model_n;
static bool on[N];

static void model_push(unsigned x, bool head) {
  if (head) {
    memmove(model + 1, model, model_n * sizeof model[0]);
    model[0] = x;
  } else {
    model[model_n] = x;
  }
  model_n++;
  on[x] = true;
}
static void model_unlink(unsigned x) {
  unsigned k = 0;
  while (model[k] != x) k++;
  memmove(model + k, model + k + 1, (model_n - k - 1) * sizeof model[0]);
  model_n--;
  on[x] = false;
}
static void model_reset(void) {
  model_n = 0;
  memset(on, 0, sizeof on);
}

/* ---- lists of pointers ---- */

typedef struct node {
  unsigned id;
  struct node *next, *prev;
} node_t;

static node_t nodes[N];
static node_t *head, *tail;

/* the list, both ways, is the model */
static bool ptr_list_is_model(bool with_tail) {
  unsigned k = 0;
  node_t *prev = NULL;
  for (node_t *x = head; x; prev = x, x = x->next, k++) {
    if (k >= model_n || x->id != model[k] || x->prev != prev) return false;
  }
  if (k != model_n) return false;
  if (!with_tail) return true;
  if (tail != prev) return false;
  k = model_n;
  for (node_t *x = tail; x; x = x->prev) {
    if (k == 0 || x->id != model[--k]) return false;
  }
  return k == 0;
}

static void test_ptr_lists(bool with_tail) {
  head = tail = NULL;
  model_reset();
  for (unsigned i = 0; i < N; i++) nodes[i] = (node_t){ .id = i };
  for (unsigned step = 0; step < 20000; step++) {
    unsigned x = 1 + (unsigned)(rnd() % (N - 1));
    if (on[x]) {
      if (with_tail) HK_DLT_UNLINK(head, tail, &nodes[x], next, prev);
      else HK_DL_UNLINK(head, &nodes[x], next, prev);
      model_unlink(x);
    } else {
      bool at_head = !with_tail || rnd() & 1;
      if (!with_tail) HK_DL_PUSH(head, &nodes[x], next, prev);
      else if (at_head) HK_DLT_PUSH_HEAD(head, tail, &nodes[x], next, prev);
      else HK_DLT_PUSH_TAIL(head, tail, &nodes[x], next, prev);
      model_push(x, at_head);
    }
    if (!ptr_list_is_model(with_tail)) {
      CHECKF(false, "%s list differs from the model at step %u", with_tail ? "tailed" : "head-only", step);
      return;
    }
  }
  CHECK(true);
}

/* ---- lists of table indices (0: none), links named f.next, f.prev ---- */

typedef struct {
  uint32_t pad;
  struct { uint32_t next, prev; } f;
} entry_t;

static entry_t table[N];
static uint32_t ihead, itail;
#define AT(i) (table[i])

static bool ix_list_is_model(bool with_tail) {
  unsigned k = 0;
  uint32_t prev = 0;
  for (uint32_t x = ihead; x; prev = x, x = AT(x).f.next, k++) {
    if (k >= model_n || x != model[k] || AT(x).f.prev != prev) return false;
  }
  if (k != model_n) return false;
  if (!with_tail) return true;
  if (itail != prev) return false;
  k = model_n;
  for (uint32_t x = itail; x; x = AT(x).f.prev) {
    if (k == 0 || x != model[--k]) return false;
  }
  return k == 0;
}

static void test_ix_lists(bool with_tail) {
  ihead = itail = 0;
  model_reset();
  memset(table, 0xab, sizeof table);  /* links start as garbage: push sets them */
  for (unsigned step = 0; step < 20000; step++) {
    uint32_t x = 1 + (uint32_t)(rnd() % (N - 1));
    if (on[x]) {
      if (with_tail) HK_DLT_UNLINK_AT(AT, ihead, itail, x, f.next, f.prev);
      else HK_DL_UNLINK_AT(AT, ihead, x, f.next, f.prev);
      model_unlink(x);
    } else {
      bool at_head = !with_tail || rnd() & 1;
      if (!with_tail) HK_DL_PUSH_AT(AT, ihead, x, f.next, f.prev);
      else if (at_head) HK_DLT_PUSH_HEAD_AT(AT, ihead, itail, x, f.next, f.prev);
      else HK_DLT_PUSH_TAIL_AT(AT, ihead, itail, x, f.next, f.prev);
      model_push(x, at_head);
    }
    if (!ix_list_is_model(with_tail)) {
      CHECKF(false, "%s index list differs from the model at step %u", with_tail ? "tailed" : "head-only", step);
      return;
    }
  }
  CHECK(true);
}

/* ---- the debug build's assertions, in a child that must abort ---- */

static void corrupt_next(void) {  /* 1's next skips 2: unlinking 2 trips */
  HK_DLT_PUSH_TAIL(head, tail, &nodes[1], next, prev);
  HK_DLT_PUSH_TAIL(head, tail, &nodes[2], next, prev);
  HK_DLT_PUSH_TAIL(head, tail, &nodes[3], next, prev);
  nodes[1].next = &nodes[3];  /* 2 is skipped forwards, still linked backwards */
  HK_DLT_UNLINK(head, tail, &nodes[2], next, prev);
}
static void push_twice(void) {  /* the head pushed again */
  HK_DL_PUSH(head, &nodes[1], next, prev);
  HK_DL_PUSH(head, &nodes[1], next, prev);
}
static void stale_tail(void) {  /* the tail no longer last */
  HK_DLT_PUSH_TAIL(head, tail, &nodes[1], next, prev);
  HK_DLT_PUSH_TAIL(head, tail, &nodes[2], next, prev);
  tail = &nodes[1];
  HK_DLT_PUSH_TAIL(head, tail, &nodes[3], next, prev);
}

static void expect_abort(const char *what, void (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);  /* the assertion's report */
    if (null >= 0) dup2(null, 2);
    head = tail = NULL;
    for (unsigned i = 0; i < N; i++) nodes[i] = (node_t){ .id = i };
    fn();
    _exit(0);  /* no assertion: the test fails */
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: the debug assertion did not stop it", what);
}

/* ---- gate.h ---- */

static void test_gate_edges(void) {
  uint64_t g = 0;
  CHECK(hk_gate_due(&g, 0));                /* 0: the first caller passes */
  CHECK(hk_gate_pass(&g, 5, 10) && g == 15);
  CHECK(!hk_gate_due(&g, 14) && !hk_gate_pass(&g, 14, 10) && g == 15);
  CHECK(hk_gate_due(&g, 15) && hk_gate_pass(&g, 15, 10) && g == 25);
  CHECK(!hk_gate_pass(&g, 20, 10));
  hk_gate_set(&g, 0);                       /* a shorter interval: due at once */
  CHECK(hk_gate_due(&g, 20) && hk_gate_pass(&g, 20, 100) && g == 120);
  hk_gate_set(&g, 200);                     /* a forced run sets it */
  CHECK(!hk_gate_due(&g, 199) && hk_gate_due(&g, 200));
  CHECK(hk_gate_pass(&g, 300, 0) && hk_gate_pass(&g, 300, 0));  /* every 0 ms: always */
}

#define RACERS 6
#define ROUNDS 2000
static uint64_t race_gate;
static _Atomic unsigned race_passed[ROUNDS];
static pthread_barrier_t race_start;

/* Round r: every racer, released at once, finds the gate due at the same
 * `now` (the last round moved it there); one moves it on. The barrier keeps
 * the rounds apart. */
static void *racer(void *arg) {
  (void)arg;
  for (unsigned r = 0; r < ROUNDS; r++) {
    pthread_barrier_wait(&race_start);
    if (hk_gate_pass(&race_gate, 1000 + 10 * (uint64_t)r, 10)) atomic_fetch_add(&race_passed[r], 1);
  }
  return NULL;
}

static void test_gate_race(void) {
  pthread_t t[RACERS];
  pthread_barrier_init(&race_start, NULL, RACERS);
  for (unsigned i = 0; i < RACERS; i++) pthread_create(&t[i], NULL, racer, NULL);
  for (unsigned i = 0; i < RACERS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race_start);
  unsigned bad = 0;
  for (unsigned r = 0; r < ROUNDS; r++) bad += atomic_load(&race_passed[r]) != 1;
  CHECKF(bad == 0, "%u of %u rounds did not pass exactly one racer", bad, ROUNDS);
}

/* ---- cap.h ---- */

static long cap = HK_CAP_UNSET, knob = 250;
static _Atomic bool learning;

static void *learner(void *arg) {
  (void)arg;
  for (long v = 0; atomic_load(&learning); v = (v + 1) & 1023) hk_cap_learn(&cap, v);
  return NULL;
}

static void test_cap(void) {
  CHECK(hk_cap_or(&cap, &knob) == 250);     /* unset: the knob's */
  hk_cap_learn(&cap, 40);
  CHECK(hk_cap_or(&cap, &knob) == 40);
  hk_cap_pin(&cap, 0);                      /* a pin of 0 is a value, not unset */
  CHECK(hk_cap_or(&cap, &knob) == 0);
  hk_cap_learn(&cap, 99);
  CHECK(hk_cap_or(&cap, &knob) == 0);       /* pinned: the learner leaves it */
  hk_cap_pin(&cap, 77);
  CHECK(hk_cap_or(&cap, &knob) == 77);
  /* a pin while the learner writes: the pin stands */
  for (unsigned round = 0; round < 200; round++) {
    cap = HK_CAP_UNSET;
    atomic_store(&learning, true);
    pthread_t t;
    pthread_create(&t, NULL, learner, NULL);
    for (volatile unsigned spin = 0; spin < round * 50; spin++) {
    }
    hk_cap_pin(&cap, 5000 + round);
    for (volatile unsigned spin = 0; spin < 1000; spin++) {
    }
    atomic_store(&learning, false);
    pthread_join(t, NULL);
    if (hk_cap_or(&cap, &knob) != 5000 + (long)round) {
      CHECKF(false, "round %u: the pin was lost (%ld)", round, hk_cap_or(&cap, &knob));
      break;
    }
  }
}

/* ---- collect.h ---- */

static hk_lock_t clock_ = HK_LOCK_INIT;
static int picked, released;
static void pick(void *ctx) {
  picked = !hk_trylock(&clock_) && hk_nosys_held == 1;  /* held, and counted */
  (*(int *)ctx)++;
}
static size_t release(void *ctx) {
  released = hk_trylock(&clock_) && hk_nosys_held == 0;  /* dropped */
  if (released) hk_unlock(&clock_);
  return (size_t)(*(int *)ctx) * 10;
}

static void test_collect(void) {
  int n = 1;
  CHECK(hk_collect(&clock_, pick, release, &n) == 20);
  CHECK(picked && released && n == 2);
}

int main(void) {
  test_ptr_lists(false);
  test_ptr_lists(true);
  test_ix_lists(false);
  test_ix_lists(true);
  expect_abort("a broken next link", corrupt_next);
  expect_abort("a node pushed twice", push_twice);
  expect_abort("a stale tail", stale_tail);
  test_gate_edges();
  test_gate_race();
  test_cap();
  test_collect();
  return check_done("test_pieces");
}
