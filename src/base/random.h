/* Randomness: the library's one source of it. The seed is the 16 random
 * bytes the kernel gives every process (AT_RANDOM: no syscall, no file, no
 * allocation, there from the first malloc on); hk_random derives 64 bits
 * for a purpose from them with the one mixing function, hk_mix64; a user
 * that draws many steps a generator, hk_random_next. A fork child has its
 * parent's seed: a user whose values must differ there mixes in what does
 * differ (the free-list key and free mark must not: the child's heap is
 * its parent's). */
#ifndef HK_RANDOM_H
#define HK_RANDOM_H

#include "base/config.h"

/* 2^64 divided by the golden ratio, odd: the generator's step */
#define HK_RANDOM_GAMMA 0x9e3779b97f4a7c15ull

/* The mixing function: splitmix64's finalizer, a bijection of 64 bits in
 * which every output bit depends on every input bit. */
HK_INLINE uint64_t hk_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* What a value is drawn for: each purpose has values of its own. */
enum {
  HK_RANDOM_LIST_KEY = 1,  /* freelist.c: the process's link key      */
  HK_RANDOM_FREE_MARK,     /* freelist.c: a freed block's mark         */
  HK_RANDOM_SLAB_KEY,      /* secure.c: a slab's key (x: a counter)    */
  HK_RANDOM_CARVE,         /* secure.c: a thread's shuffle (x: its TLS) */
  HK_RANDOM_MAP_HINT,      /* os.c: where aligned mappings start       */
  HK_RANDOM_PROF,          /* prof.c: the sampling seed (HAKMEM_PROF_SEED=0) */
  HK_RANDOM_GUARDED,       /* guarded.c: the sampling seed             */
};

/* 64 random bits for (purpose, x): the same for the same pair within a
 * process, unrelated for two pairs and between two programs started (each
 * exec brings new AT_RANDOM bytes). Neither they nor the seed can be read
 * back from another purpose's value without inverting three rounds of the
 * mix over 128 unknown bits (a hardening, not a cryptographic promise). */
uint64_t hk_random(unsigned purpose, uint64_t x);

/* A generator's next value (splitmix64): the state steps by the gamma. */
HK_INLINE uint64_t hk_random_next(uint64_t *state) { return hk_mix64(*state += HK_RANDOM_GAMMA); }

/* The n-th of the generator states drawn from one seed (one per thread);
 * not seed + n * gamma, whose streams would be one stream shifted. */
HK_INLINE uint64_t hk_random_stream(uint64_t seed, uint64_t n) {
  return seed ^ (n * 0xd1b54a32d192ed03ull);
}

#endif
