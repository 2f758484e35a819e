/* gate.h: the one interval gate, "at most once every N ms", over the
 * deadline (on hk_os_now_ms's clock) of the next run.
 *
 * A gate is a uint64_t that holds that deadline; 0 lets the first caller
 * through. Threads share it with relaxed atomics: a gate that is not due
 * costs one load. Rules:
 *
 *  - hk_gate_pass is the gate: true for the one caller that finds the
 *    deadline due and moves it (a compare-and-swap: of two threads that
 *    find it due, one passes, the other sees the new deadline);
 *  - where the interval costs something to compute (a call), test
 *    hk_gate_due first, and pass the gate with the interval after;
 *  - a run that must happen anyway (force: a trim) sets the deadline with
 *    hk_gate_set and runs, as does a gate that one thread alone passes
 *    (a heap's own clock: hk_gate_due, then hk_gate_set when it runs);
 *  - hk_gate_set(g, 0) makes it due at once (a shorter interval pinned). */
#ifndef HK_GATE_H
#define HK_GATE_H

#include "base/config.h"

/* Whether gate g is due at now. */
static inline bool hk_gate_due(const uint64_t *g, uint64_t now) {
  return now >= HK_LOAD_RELAXED(*g);
}

/* True for the one caller that finds g due at now and moves it to
 * now + every_ms; false when it is not due, or another caller moved it. */
static inline bool hk_gate_pass(uint64_t *g, uint64_t now, uint64_t every_ms) {
  uint64_t due = HK_LOAD_RELAXED(*g);
  return now >= due && HK_CAS_RELAXED(*g, &due, now + every_ms);
}

/* The next run is due at `at`. */
static inline void hk_gate_set(uint64_t *g, uint64_t at) { HK_STORE_RELAXED(*g, at); }

#endif
