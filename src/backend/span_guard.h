/* span_guard.h: the guard measure of the span tier (the secure build),
 * for span.c and span_purge.c: closed pages around live blocks, freed
 * blocks closed whole, and the quarantine of freed blocks. Without the
 * measure (GUARD_PAGES 0, QUAR_ON 0) its callers make no call. */
#ifndef HK_SPAN_GUARD_H
#define HK_SPAN_GUARD_H

#include "backend/span_arena.h"

/* How a freed block is closed whole (hk_guard_close_how), or a block's
 * last page as its guard (CLOSE_GUARD). */
enum { CLOSE_NONE, CLOSE_KEEP, CLOSE_GUARD };

/* The pages a freed block may have, besides its guard, to be closed whole
 * (HAKMEM_CLOSE_FREED_KB). */
uint32_t hk_guard_close_pages(void);
/* How a freed block is closed now. Under the lock. */
unsigned hk_guard_close_how(void);
/* The call that closes pages [i, i + n) (no lock needed: the caller owns
 * them); false when it failed or `how` makes none. */
bool hk_guard_close_call(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how);
/* The bitmaps learn that the call closed them. Under the lock (but for
 * CLOSE_GUARD, which changes only `closed`, whose words are atomic). */
void hk_guard_close_done(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how);
/* Page i closed as a guard, no lock held: the caller owns it (a block's
 * last page) or it is nobody's but as a guard. */
bool hk_guard_close_page(hk_arena_t *a, uint32_t i);

/* Opening a block's pages: planned under the lock, the calls made with it
 * dropped, undone under it again when a call fails. */
#define OPEN_SHUT_RUNS 4
typedef struct {
  run_t commit[OPEN_SHUT_RUNS];  /* mprotect read-write: the shut runs (without markers: the block) */
  unsigned ncommit, done;        /* done: commit calls made */
  uint32_t at, n, last;          /* the block's pages [at, at + n); last: its guard (0: none) */
  uint32_t before;               /* the last page of the free run before it, to close (0: none) */
} opening_t;
/* Under the lock: the block's shut pages counted open; *o the calls that
 * open pages [i, i + n), close page i + n (when last) and page `before`
 * (when not 0). */
void hk_guard_opening_plan(hk_arena_t *a, uint32_t i, uint32_t n, bool last, uint32_t before, opening_t *o);
/* The planned calls, in order, with the arena opened as far as the block
 * reaches (markers); false at the first that fails. No lock. */
bool hk_guard_opening_calls(hk_arena_t *a, opening_t *o);
/* Under the lock, after hk_guard_opening_calls failed: the shut runs not
 * opened are shut again. */
void hk_guard_opening_undo(hk_arena_t *a, const opening_t *o);

/* An arena leaves (every lock held): its shut pages no longer count. */
void hk_guard_arena_gone(const hk_arena_t *a);

/* The quarantine: freed block i of arena a (its head tagged T_FREED, its
 * tail 0) waits in its shard's; the oldest leave as free runs. Under the lock. */
void hk_quar_push(hk_arena_t *a, uint32_t i, uint32_t stamp);
/* Every lock held: the quarantined blocks' pages freed delay_ms ago or
 * more are purged in place (force: the quarantine is emptied first), the
 * locks dropped while the calls are made (held again on return).
 * Bytes purged; *calls counts the madvise calls. */
size_t hk_quar_collect(bool force, uint64_t delay_ms, unsigned long *calls);
/* A fork child: a quarantine purge another thread was making is not
 * copied; its blocks may leave the quarantine (their pages stay marked). */
void hk_quar_fork_child(void);
/* The pages waiting in every shard's quarantine (read without the lock). */
size_t hk_quar_pages(void);

#endif
