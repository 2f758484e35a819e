/* cap.h: the one pinned cap: a cap a layer keeps (the superslab purge
 * delay, the large cache's caps) that the learner moves and the control
 * API pins.
 *
 * A cap is a long read and written with relaxed atomics: -1 while nobody
 * set it (the knob's value serves), else its value, carrying HK_CAP_PIN
 * once the control API set it (hak_ctl_set: ctl.c). Rules: the learner
 * sets it with hk_cap_learn, which leaves a pinned cap as it is (one
 * compare-and-swap, so a pin that lands meanwhile is never lost); the
 * control API with hk_cap_pin; readers take hk_cap_or, the value without
 * the pin or the knob's. The memory budget's scaling, pinned or not, is
 * the reader's (hk_mem_scale_*). */
#ifndef HK_CAP_H
#define HK_CAP_H

#include "base/config.h"

/* A cap the API set carries this bit: the learner no longer moves it
 * (docs/ENV_VARS.md, "Changing knobs at run time"). */
#define HK_CAP_PIN (1L << 62)
/* A cap nobody set. */
#define HK_CAP_UNSET (-1L)

/* The learner's value v, unless the cap is pinned. */
static inline void hk_cap_learn(long *cap, long v) {
  long old = HK_LOAD_RELAXED(*cap);
  while (!(old >= 0 && (old & HK_CAP_PIN)) &&  /* -1: unset, not pinned */
         !HK_CAS_RELAXED(*cap, &old, v)) {
  }
}

/* The control API's value v: pinned. */
static inline void hk_cap_pin(long *cap, long v) { HK_STORE_RELAXED(*cap, v | HK_CAP_PIN); }

/* The cap's value, or the knob's (read only then) while nobody set it. */
static inline long hk_cap_or(const long *cap, const long *knob) {
  long v = HK_LOAD_RELAXED(*cap) & ~HK_CAP_PIN;
  return v >= 0 ? v : HK_LOAD_RELAXED(*knob);
}

#endif
