/* bench_arena — the arena pattern: build a tree of small nodes, then drop
 * all of it at once (a parser's or a compiler's per-unit data).
 *
 *   bench_arena ROUNDS NODES SEED MODE
 *
 * Each round builds a balanced binary tree of NODES nodes depth first (48 B
 * each, plus a string of 8-120 B for one node in two: random keys), walks
 * it (the digest), then drops it. MODE says how:
 *   free     every node and string freed one by one (a post-order walk)
 *   destroy  all allocated from a heap of the allocator's own, and the
 *            heap destroyed in one call: hakmem's hak_heap_new/destroy,
 *            mimalloc's mi_heap_new/destroy, jemalloc's arenas.create and
 *            arena.<i>.destroy (mallocx without a thread cache). Found at
 *            run time with dlsym; an allocator with none (glibc, tcmalloc)
 *            frees one by one and says so ("arena: none").
 * Ops: nodes built and dropped (a node and its string count once). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench_common.h"

typedef struct node {
  struct node *left, *right;
  uint64_t key;
  char *name;
  uint64_t pad[2];
} node_t;

/* ---- the allocator's heap API, found at run time ------------------------- */

typedef void *(*heap_new_fn)(void);
typedef void *(*heap_malloc_fn)(void *heap, size_t n);
typedef void (*heap_destroy_fn)(void *heap);
typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef void *(*mallocx_fn)(size_t, int);

static const char *api_name = "none";
static heap_new_fn heap_new;
static heap_malloc_fn heap_malloc;
static heap_destroy_fn heap_destroy;
static mallctl_fn je_mallctl;
static mallocx_fn je_mallocx;
static unsigned je_arena;

static void find_api(void) {
  if ((heap_new = (heap_new_fn)dlsym(RTLD_DEFAULT, "hak_heap_new"))) {
    heap_malloc = (heap_malloc_fn)dlsym(RTLD_DEFAULT, "hak_heap_malloc");
    heap_destroy = (heap_destroy_fn)dlsym(RTLD_DEFAULT, "hak_heap_destroy");
    api_name = "hak_heap";
  } else if ((heap_new = (heap_new_fn)dlsym(RTLD_DEFAULT, "mi_heap_new"))) {
    heap_malloc = (heap_malloc_fn)dlsym(RTLD_DEFAULT, "mi_heap_malloc");
    heap_destroy = (heap_destroy_fn)dlsym(RTLD_DEFAULT, "mi_heap_destroy");
    api_name = "mi_heap";
  } else if ((je_mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl")) &&
             (je_mallocx = (mallocx_fn)dlsym(RTLD_DEFAULT, "mallocx"))) {
    api_name = "je_arena";
  }
  if (heap_new && (!heap_malloc || !heap_destroy)) heap_new = NULL, api_name = "none";
}

/* jemalloc: MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE, spelled out (no header) */
#define JE_FLAGS(a) ((int)((((unsigned)(a) + 1) << 20) | (1u << 8)))

static void *arena;
static bool arena_open(void) {
  if (heap_new) return (arena = heap_new()) != NULL;
  if (je_mallctl) {
    size_t sz = sizeof je_arena;
    return je_mallctl("arenas.create", &je_arena, &sz, NULL, 0) == 0;
  }
  return false;
}
static void *arena_alloc(size_t n) {
  if (heap_new) return heap_malloc(arena, n);
  return je_mallocx(n, JE_FLAGS(je_arena));
}
static void arena_close(void) {
  if (heap_new) { heap_destroy(arena); return; }
  char name[64];
  snprintf(name, sizeof name, "arena.%u.destroy", je_arena);
  if (je_mallctl(name, NULL, NULL, NULL, 0) != 0) { fprintf(stderr, "arena.destroy failed\n"); exit(1); }
}

/* ---- the tree -------------------------------------------------------------- */

static bool use_arena;
static void *alloc(size_t n) {
  void *p = use_arena ? arena_alloc(n) : malloc(n);
  if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
  return p;
}

/* A balanced tree of n nodes, built depth first (a parser's order): the
 * cost is the allocations and the writes, not a search. */
static node_t *build(long n, bc_rng *rng) {
  if (n == 0) return NULL;
  node_t *t = alloc(sizeof *t);
  t->key = bc_rng_next(rng);
  t->name = NULL;
  if (t->key & 1) {
    size_t len = 8 + (size_t)(t->key >> 8) % 113;
    t->name = alloc(len);
    memset(t->name, 'a' + (int)(t->key % 26), len - 1);
    t->name[len - 1] = 0;
  }
  long left = (n - 1) / 2;
  t->left = build(left, rng);
  t->right = build(n - 1 - left, rng);
  return t;
}

static uint64_t digest(const node_t *t) {  /* iterative: a skewed tree is deep */
  uint64_t h = 0;
  const node_t *stack[128];
  unsigned sp = 0;
  while (t || sp) {
    if (t) {
      h = h * 31 + t->key + (t->name ? (unsigned char)t->name[0] : 0);
      if (t->right && sp < 128) stack[sp++] = t->right;
      t = t->left;
    } else {
      t = stack[--sp];
    }
  }
  return h;
}

static void free_tree(node_t *t) {
  while (t) {  /* rotate the left child up until there is none, then free */
    if (t->left) {
      node_t *l = t->left;
      t->left = l->right;
      l->right = t;
      t = l;
    } else {
      node_t *r = t->right;
      free(t->name);
      free(t);
      t = r;
    }
  }
}

int main(int argc, char **argv) {
  bc_usage(argc, argv, 4, "[ROUNDS] [NODES] [SEED] [free|destroy]",
           "  The arena pattern: ROUNDS times, build a tree of NODES small nodes,\n"
           "  walk it, then drop it: node by node (free), or by destroying the\n"
           "  allocator's own heap (destroy: hak_heap_*, mi_heap_*, jemalloc's\n"
           "  arenas; freed one by one where the allocator has none).\n"
           "  Defaults: 40 100000 7 free.\n");
  long rounds = (long)bc_arg_u64(argc, argv, 1, 40);
  long nodes = (long)bc_arg_u64(argc, argv, 2, 100000);
  uint64_t seed = bc_arg_u64(argc, argv, 3, 7);
  bool destroy = argc > 4 && strcmp(argv[4], "destroy") == 0;
  if (argc > 4 && !destroy && strcmp(argv[4], "free") != 0) {
    fprintf(stderr, "bench_arena: the mode is free or destroy, not '%s'\n", argv[4]);
    bc_print_usage(stderr);
    return 2;
  }
  bc_print_allocator();
  find_api();
  if (!destroy || (!heap_new && !je_mallctl)) api_name = "none";
  printf("arena: %s%s\n", api_name, destroy && strcmp(api_name, "none") == 0 ? " (freed one by one)" : "");
  bc_rng rng;
  bc_rng_seed(&rng, seed);
  uint64_t work = 0, t0 = bc_now_ns();
  for (long r = 0; r < rounds; r++) {
    use_arena = destroy && strcmp(api_name, "none") != 0;
    if (use_arena && !arena_open()) { fprintf(stderr, "cannot create a heap\n"); return 1; }
    node_t *root = build(nodes, &rng);
    work = work * 1000003 + digest(root);
    if (use_arena) arena_close();
    else free_tree(root);
  }
  uint64_t t1 = bc_now_ns();
  bc_report((uint64_t)rounds * (uint64_t)nodes, t1 - t0);
  bc_work(work);
  return 0;
}
