/* bench_app [ROUNDS] [NODES] [SEED]
 *
 * An application-like workload: a document tree (think DOM, JSON or a
 * compiler's AST) of NODES nodes, built, used, edited and torn down ROUNDS
 * times. Each node has a name string (strdup'd, 3-40 chars), sometimes a value
 * buffer (calloc, 8-300 bytes) and a child array grown with realloc.
 * Per round:
 *   build     NODES nodes, each attached to a random existing node
 *   query     a depth-first walk hashing every name and value
 *   edit      NODES/10 times: delete a random subtree, or rename a node, or
 *             grow a value with realloc
 *   serialize the tree into a text buffer grown with realloc ("name=value;")
 *   teardown  free everything, children first
 * Defaults: 10 200000 11. One op = one malloc, calloc, realloc or free call. */
#include "bench_common.h"

static uint64_t g_ops;

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) { fprintf(stderr, "malloc(%zu) failed\n", n); exit(1); }
    g_ops++;
    return p;
}
static void *xcalloc(size_t a, size_t b)
{
    void *p = calloc(a, b);
    if (!p) { fprintf(stderr, "calloc failed\n"); exit(1); }
    g_ops++;
    return p;
}
static void *xrealloc(void *q, size_t n)
{
    void *p = realloc(q, n);
    if (!p) { fprintf(stderr, "realloc(%zu) failed\n", n); exit(1); }
    g_ops++;
    return p;
}
static void xfree(void *p)
{
    free(p);
    g_ops++;
}

struct node {
    struct node *parent;
    struct node **kids;
    uint32_t nkids, cap;
    uint32_t index;          /* position in the live-node table */
    uint32_t vlen;
    char *name;
    unsigned char *value;
};

/* live-node table for random picks (swap-remove on delete) */
static struct node **g_live;
static size_t g_nlive, g_caplive;

static void live_add(struct node *n)
{
    if (g_nlive == g_caplive) {
        g_caplive = g_caplive ? g_caplive * 2 : 1024;
        g_live = xrealloc(g_live, g_caplive * sizeof *g_live);
    }
    n->index = (uint32_t)g_nlive;
    g_live[g_nlive++] = n;
}

static void live_del(struct node *n)
{
    struct node *last = g_live[--g_nlive];
    g_live[n->index] = last;
    last->index = n->index;
}

static char *make_name(bc_rng *r)
{
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";
    char buf[48];
    size_t n = bc_rng_range(r, 3, 40);
    for (size_t i = 0; i < n; i++) buf[i] = alpha[bc_rng_below(r, sizeof alpha - 1)];
    buf[n] = 0;
    char *s = xmalloc(n + 1);    /* strdup, counted */
    memcpy(s, buf, n + 1);
    return s;
}

static struct node *new_node(bc_rng *r, struct node *parent)
{
    struct node *n = xmalloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->parent = parent;
    n->name = make_name(r);
    if (bc_rng_below(r, 2)) {
        n->vlen = (uint32_t)bc_rng_range(r, 8, 300);
        n->value = xcalloc(1, n->vlen);
        n->value[0] = (unsigned char)n->vlen;
        n->value[n->vlen - 1] = (unsigned char)n->name[0];
    }
    if (parent) {
        if (parent->nkids == parent->cap) {
            parent->cap = parent->cap ? parent->cap * 2 : 2;
            parent->kids = xrealloc(parent->kids, parent->cap * sizeof *parent->kids);
        }
        parent->kids[parent->nkids++] = n;
    }
    live_add(n);
    return n;
}

static void free_subtree(struct node *n)
{
    /* iterative post-order would be nicer; depth stays small (random tree) */
    for (uint32_t i = 0; i < n->nkids; i++) free_subtree(n->kids[i]);
    live_del(n);
    if (n->kids) xfree(n->kids);
    xfree(n->name);
    if (n->value) xfree(n->value);
    xfree(n);
}

static void detach(struct node *n)
{
    struct node *p = n->parent;
    for (uint32_t i = 0; i < p->nkids; i++) {
        if (p->kids[i] == n) {
            p->kids[i] = p->kids[--p->nkids];
            return;
        }
    }
}

static uint64_t walk(const struct node *n)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = n->name; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    if (n->value) h = bc_mix(h, n->value[0] + n->value[n->vlen - 1]);
    for (uint32_t i = 0; i < n->nkids; i++) h = bc_mix(h, walk(n->kids[i]));
    return h;
}

struct sbuf { char *p; size_t len, cap; };

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void serialize(const struct node *n, struct sbuf *b)
{
    sb_put(b, n->name, strlen(n->name));
    if (n->value) {
        char tmp[16];
        int k = snprintf(tmp, sizeof tmp, "=%u", n->vlen);
        sb_put(b, tmp, (size_t)k);
    }
    if (n->nkids) {
        sb_put(b, "{", 1);
        for (uint32_t i = 0; i < n->nkids; i++) serialize(n->kids[i], b);
        sb_put(b, "}", 1);
    }
    sb_put(b, ";", 1);
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 3, "[ROUNDS] [NODES] [SEED]",
             "  An application-like workload: a document tree (think DOM, JSON or a\n  compiler's AST) of NODES nodes, built, used, edited and torn down ROUNDS\n  times. Each node has a name string (strdup'd, 3-40 chars), sometimes a value\n  buffer (calloc, 8-300 bytes) and a child array grown with realloc.\n  Per round:\n    build     NODES nodes, each attached to a random existing node\n    query     a depth-first walk hashing every name and value\n    edit      NODES/10 times: delete a random subtree, or rename a node, or\n              grow a value with realloc\n    serialize the tree into a text buffer grown with realloc (\"name=value;\")\n    teardown  free everything, children first\n  Defaults: 10 200000 11. One op = one malloc, calloc, realloc or free call.\n");
    uint64_t rounds = bc_arg_u64(argc, argv, 1, 10);
    uint64_t nodes = bc_arg_u64(argc, argv, 2, 200000);
    uint64_t seed = bc_arg_u64(argc, argv, 3, 11);
    if (nodes < 2 || nodes > 100000000) {
        fprintf(stderr, "usage: bench_app [ROUNDS] [NODES>=2] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: app rounds=%llu nodes=%llu seed=%llu\n", (unsigned long long)rounds,
           (unsigned long long)nodes, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    uint64_t h = bc_mix(bc_mix(0, rounds), nodes);

    uint64_t t0 = bc_now_ns();
    for (uint64_t r = 0; r < rounds; r++) {
        struct node *root = new_node(&rng, NULL);
        /* build: attach to a random node, biased towards recent ones so the
         * tree gets some depth */
        for (uint64_t i = 1; i < nodes; i++) {
            size_t k = bc_rng_below(&rng, 4) ? g_nlive - 1 - bc_rng_below(&rng, (uint32_t)(g_nlive < 64 ? g_nlive : 64))
                                             : bc_rng_below(&rng, (uint32_t)g_nlive);
            new_node(&rng, g_live[k]);
        }
        h = bc_mix(h, walk(root));
        /* edit */
        for (uint64_t e = 0; e < nodes / 10; e++) {
            struct node *n = g_live[bc_rng_below(&rng, (uint32_t)g_nlive)];
            uint32_t what = bc_rng_below(&rng, 4);
            if (what == 0 && n != root) {
                detach(n);
                free_subtree(n);
                /* and grow a replacement twig */
                struct node *p = g_live[bc_rng_below(&rng, (uint32_t)g_nlive)];
                for (int j = 0; j < 3; j++) p = new_node(&rng, p);
            } else if (what == 1) {
                xfree(n->name);
                n->name = make_name(&rng);
            } else if (n->value) {
                uint32_t nl = n->vlen + (uint32_t)bc_rng_range(&rng, 1, 200);
                n->value = xrealloc(n->value, nl);
                memset(n->value + n->vlen, 0, nl - n->vlen);
                n->vlen = nl;
                n->value[nl - 1] = 7;
            } else {
                new_node(&rng, n);
            }
        }
        h = bc_mix(h, walk(root));
        struct sbuf sb = {0};
        serialize(root, &sb);
        h = bc_mix(h, sb.len);
        xfree(sb.p);
        h = bc_mix(h, g_nlive);
        free_subtree(root);
    }
    uint64_t t1 = bc_now_ns();
    xfree(g_live);
    bc_work(bc_mix(h, rng.s));
    bc_report(g_ops, t1 - t0);
    return 0;
}
