/* Randomness: the seeding point (AT_RANDOM) and hk_random's derivation. */
#define _GNU_SOURCE
#include "base/random.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

/* the seed, read on first use (racing readers store the same words). glibc
 * makes its stack guard and pointer guard of these bytes too: no value
 * drawn here hands them out unmixed. */
static _Atomic uint64_t seed_word[2];
static atomic_bool seeded;

static void seed_read(uint64_t w[2]) {
  const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
  if (r) {
    memcpy(w, r, 2 * sizeof *w);  /* no alignment promised */
  } else {
    /* no AT_RANDOM (never seen on Linux): what ASLR and the clock give */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    w[0] = (uint64_t)(uintptr_t)&t ^ ((uint64_t)t.tv_nsec << 24) ^ (uint64_t)t.tv_sec;
    w[1] = (uint64_t)(uintptr_t)seed_word ^ (uint64_t)(uintptr_t)&getauxval;
  }
}

uint64_t hk_random(unsigned purpose, uint64_t x) {
  uint64_t a, b;
  if (HK_LIKELY(atomic_load_explicit(&seeded, memory_order_acquire))) {
    a = atomic_load_explicit(&seed_word[0], memory_order_relaxed);
    b = atomic_load_explicit(&seed_word[1], memory_order_relaxed);
  } else {
    uint64_t w[2];
    seed_read(w);
    a = w[0];
    b = w[1];
    atomic_store_explicit(&seed_word[0], a, memory_order_relaxed);
    atomic_store_explicit(&seed_word[1], b, memory_order_relaxed);
    atomic_store_explicit(&seeded, true, memory_order_release);
  }
  /* the pair, made one word (x + purpose * gamma: pairs of small x and of
   * addresses never meet), then keyed by each half of the seed in turn */
  uint64_t i = hk_mix64(x + (uint64_t)purpose * HK_RANDOM_GAMMA);
  return hk_mix64(a ^ hk_mix64(b ^ i));
}
