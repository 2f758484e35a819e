/* bench_lru [LIMIT_MB] [PHASES] [OPS_PER_PHASE] [MIN_B] [MAX_B] [GROWTH_PCT] [SEED]
 *
 * A fragmenting long-running service (issue 61): an LRU cache with a byte
 * limit, as a cache server under maxmemory. Each entry is a node (40 B, its
 * own allocation) and a value (another). Phase 0 draws values of MIN_B-MAX_B
 * bytes; phase k draws them GROWTH_PCT/100 ^ k times larger (default 1.5^k):
 * the cache is refilled with larger values, evicting the least recently used
 * to stay under LIMIT_MB, so the holes the small values leave must be reused
 * by larger ones or given back. An op is a set (40%: a new value for a key,
 * written in full; an existing key's value is replaced) or a get (60%: a hit
 * checks the value and moves it to the front). Keys are uniform over a fixed
 * space of 2 x LIMIT / phase-0 mean size.
 *
 * RSS is printed every 100 ms as `rss T_MS KIB pK` and at the end of each
 * phase as `phase K rss_kib N live_kib L entries E`; at the end, with the
 * cache still full, `End RSS = N KiB` (the figure that matters: what a
 * long-running service holds after the refills). Then the cache is freed.
 * Defaults 64 8 1500000 64 512 150 1; one op = one get or set. */
#include "bench_common.h"

typedef struct lru_node {
    struct lru_node *prev, *next;
    unsigned char *val;
    uint32_t key, size;
    uint64_t tag;
} lru_node;

typedef struct {
    lru_node head;         /* sentinel: head.next most recent, head.prev least */
    lru_node **map;        /* key -> node */
    size_t bytes, limit, entries;
    uint64_t evictions, hits, misses, bad;
} lru;

static void unlink_node(lru_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

static void push_front(lru *c, lru_node *n)
{
    n->next = c->head.next;
    n->prev = &c->head;
    c->head.next->prev = n;
    c->head.next = n;
}

static size_t cost(const lru_node *n)
{
    return sizeof *n + n->size;
}

static void write_value(lru_node *n)
{
    unsigned char b = (unsigned char)(n->tag | 1);
    memset(n->val, b, n->size);
    n->val[0] = (unsigned char)n->key;
    n->val[n->size - 1] = (unsigned char)(n->tag >> 8);
}

/* touches the value: first, middle and last bytes, one per 4 KiB page */
static int check_value(const lru_node *n, uint64_t *d)
{
    unsigned char b = (unsigned char)(n->tag | 1);
    if (n->val[0] != (unsigned char)n->key || n->val[n->size - 1] != (unsigned char)(n->tag >> 8)) return 1;
    for (size_t i = 1; i + 1 < n->size; i += 4096)
        if (n->val[i] != b) return 1;
    if (n->size > 2 && n->val[n->size / 2] != b && n->size / 2 != 0) return 1;
    *d = bc_mix(*d, n->key ^ ((uint64_t)n->size << 32));
    return 0;
}

static void drop(lru *c, lru_node *n, uint64_t *d)
{
    if (check_value(n, d)) c->bad++;
    unlink_node(n);
    c->map[n->key] = NULL;
    c->bytes -= cost(n);
    c->entries--;
    free(n->val);
    free(n);
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 7, "[LIMIT_MB] [PHASES] [OPS_PER_PHASE] [MIN_B] [MAX_B] [GROWTH_PCT] [SEED]",
             "  An LRU cache of at most LIMIT_MB (node and value allocations), phase k\n"
             "  drawing values of MIN_B-MAX_B x (GROWTH_PCT/100)^k bytes; 40% sets (evicting\n"
             "  the least recently used), 60% gets (a hit moves to the front). RSS every\n"
             "  100 ms and at each phase's end; End RSS with the cache full.\n"
             "  Defaults 64 8 1500000 64 512 150 1.\n");
    size_t limit_mb = (size_t)bc_arg_u64(argc, argv, 1, 64);
    uint64_t phases = bc_arg_u64(argc, argv, 2, 8);
    uint64_t per_phase = bc_arg_u64(argc, argv, 3, 1500000);
    size_t min_b = (size_t)bc_arg_u64(argc, argv, 4, 64);
    size_t max_b = (size_t)bc_arg_u64(argc, argv, 5, 512);
    uint64_t growth = bc_arg_u64(argc, argv, 6, 150);
    uint64_t seed = bc_arg_u64(argc, argv, 7, 1);
    if (limit_mb == 0 || min_b < 2 || max_b < min_b || growth < 100 || phases == 0) {
        bc_print_usage(stderr);
        return 2;
    }
    bc_print_allocator();
    printf("bench: lru limit_mb=%zu phases=%llu ops_per_phase=%llu min_b=%zu max_b=%zu growth_pct=%llu "
           "seed=%llu\n", limit_mb, (unsigned long long)phases, (unsigned long long)per_phase, min_b, max_b,
           (unsigned long long)growth, (unsigned long long)seed);
    lru c;
    memset(&c, 0, sizeof c);
    c.head.next = c.head.prev = &c.head;
    c.limit = limit_mb << 20;
    size_t nkeys = 2 * c.limit / ((min_b + max_b) / 2 + sizeof(lru_node));
    if (nkeys < 16) nkeys = 16;
    if (nkeys > 0xffffffffull) nkeys = 0xffffffffull;
    c.map = calloc(nkeys, sizeof *c.map);
    if (!c.map) return 1;
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    uint64_t d = bc_mix(bc_mix(0, limit_mb), phases), ops = 0;
    uint64_t t0 = bc_now_ns(), next_sample = t0 + 100000000ull;
    double scale = 1.0;
    for (uint64_t ph = 0; ph < phases; ph++, scale *= (double)growth / 100.0) {
        size_t lo = (size_t)((double)min_b * scale), hi = (size_t)((double)max_b * scale);
        if (hi > 0xffffffffull) hi = 0xffffffffull;
        for (uint64_t k = 0; k < per_phase; k++, ops++) {
            uint32_t key = (uint32_t)bc_rng_below(&rng, (uint32_t)nkeys);
            lru_node *n = c.map[key];
            if (bc_rng_below(&rng, 100) < 60) {          /* get */
                if (n) {
                    c.hits++;
                    if (check_value(n, &d)) c.bad++;
                    unlink_node(n);
                    push_front(&c, n);
                } else {
                    c.misses++;
                }
            } else {                                     /* set */
                if (n) drop(&c, n, &d);
                n = malloc(sizeof *n);
                if (!n) { printf("malloc failed\n"); return 1; }
                n->key = key;
                n->size = (uint32_t)bc_rng_range(&rng, lo, hi);
                n->tag = bc_rng_next(&rng);
                n->val = malloc(n->size);
                if (!n->val) { printf("malloc failed\n"); return 1; }
                write_value(n);
                c.map[key] = n;
                push_front(&c, n);
                c.bytes += cost(n);
                c.entries++;
                while (c.bytes > c.limit && c.head.prev != n) {
                    drop(&c, c.head.prev, &d);
                    c.evictions++;
                }
            }
            if ((k & 1023) == 0 && bc_now_ns() >= next_sample) {
                printf("rss %llu %ld p%llu\n", (unsigned long long)((bc_now_ns() - t0) / 1000000), bc_rss_kib(),
                       (unsigned long long)ph);
                next_sample += 100000000ull;
            }
        }
        printf("phase %llu rss_kib %ld live_kib %zu entries %zu values %zu-%zu B\n", (unsigned long long)ph,
               bc_rss_kib(), c.bytes >> 10, c.entries, lo, hi);
        fflush(stdout);
        d = bc_mix(bc_mix(d, c.entries), c.bytes);
    }
    uint64_t t1 = bc_now_ns();
    long end_kib = bc_rss_kib();
    printf("rss %llu %ld end\n", (unsigned long long)((t1 - t0) / 1000000), end_kib);
    printf("hits %llu misses %llu evictions %llu\n", (unsigned long long)c.hits, (unsigned long long)c.misses,
           (unsigned long long)c.evictions);
    d = bc_mix(bc_mix(bc_mix(d, c.hits), c.misses), c.evictions);
    while (c.head.next != &c.head) drop(&c, c.head.next, &d);
    free(c.map);
    if (c.bad) {
        printf("FAILED: %llu values corrupted\n", (unsigned long long)c.bad);
        return 1;
    }
    printf("End RSS = %ld KiB\n", end_kib);
    bc_work(d);
    bc_report(ops, t1 - t0);
    return 0;
}
