/* Call stacks for the heap profiler: see callstack.h.
 *
 * The cached walker tracks three registers, rip, rsp and rbp: on x86-64
 * every rule gcc and clang emit for the caller's CFA, return address and
 * rbp is written in them (CFA = rsp or rbp + n; gcc's realigned frames:
 * CFA = *(rbp + n), rbp at rbp + n). A return address's rule is worked out
 * once, from its FDE (_Unwind_Find_FDE, the lookup libgcc itself uses),
 * and kept in a table keyed by the address. Any other rule, a signal
 * frame, a frame without an FDE, a stack other than the thread's own (a
 * coroutine's), or a step that does not go up the stack gives the walk to
 * libgcc.
 *
 * The table is read without a lock and written under one (a miss is rare:
 * once per call site). A slot is rewritten seqlock-fashion: its key goes
 * to 0 first, so a reader that saw the old key and the new rule sees the
 * key change when it looks again. Rules carry the generation they were
 * made in; a library unloaded (dl_iterate_phdr's count of unloads moves,
 * looked at every 64th walk) starts a new generation, since another may now
 * be mapped where it was. Between an unload and its finding, a stale rule
 * can misname frames, never fault: every read is bounded by the thread's
 * stack. */
#define _GNU_SOURCE
#include "base/callstack.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <unwind.h>

#include "base/lock.h"

/* ---- libgcc's walk ---------------------------------------------------------- */

struct lwalk { uintptr_t *pc; unsigned n, max, skip; };

static _Unwind_Reason_Code lstep(struct _Unwind_Context *ctx, void *arg) {
  struct lwalk *w = arg;
  uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->skip) { w->skip--; return _URC_NO_REASON; }
  w->pc[w->n++] = ip;
  return w->n == w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static __thread uint64_t walks_cached, walks_libgcc;

/* libgcc's walk, inlined into hk_unwind_with: its first frame (that
 * function's) is skipped */
HK_INLINE unsigned libgcc_walk(uintptr_t *pc, unsigned max) {
  walks_libgcc++;
  struct lwalk w = { pc, 0, max, 1 };
  _Unwind_Backtrace(lstep, &w);
  __asm__ volatile("" ::: "memory");  /* not a tail call: the caller's frame stays */
  return w.n;
}

void hk_unwind_counts(uint64_t *cached, uint64_t *fallback) {
  *cached = walks_cached;
  *fallback = walks_libgcc;
}

#if defined(__x86_64__)

/* ---- rules -------------------------------------------------------------------- */

enum { R_MISS, R_WALK, R_END, R_LIBGCC };           /* kind */
enum { C_RSP, C_RBP, C_DEREF_RBP };                 /* CFA = rsp+n, rbp+n, *(rbp+n) */
enum { B_SAME, B_AT_CFA, B_AT_RBP };                /* the caller's rbp */

/* kind 2 bits | CFA base 2 | rbp rule 2 | RA offset int8 | rbp offset
 * int16 | CFA offset int24 | generation 8 */
static uint64_t pack(unsigned kind, unsigned base, unsigned rbp, int ra_off, int rbp_off, int cfa_off,
                     unsigned gen) {
  return (uint64_t)kind | (uint64_t)base << 2 | (uint64_t)rbp << 4 | (uint64_t)(uint8_t)ra_off << 8 |
         (uint64_t)(uint16_t)rbp_off << 16 | (uint64_t)((uint32_t)cfa_off & 0xffffff) << 32 |
         (uint64_t)(gen & 0xff) << 56;
}
#define R_KIND(r)    ((unsigned)(r) & 3)
#define R_BASE(r)    ((unsigned)((r) >> 2) & 3)
#define R_RBP(r)     ((unsigned)((r) >> 4) & 3)
#define R_RA_OFF(r)  ((intptr_t)(int8_t)((r) >> 8))
#define R_RBP_OFF(r) ((intptr_t)(int16_t)((r) >> 16))
#define R_CFA_OFF(r) ((intptr_t)((int32_t)((uint32_t)((r) >> 32) << 8) >> 8))
#define R_GEN(r)     ((unsigned)((r) >> 56))

/* ---- reading an FDE --------------------------------------------------------------- */

/* _Unwind_Find_FDE is exported by libgcc_s.so.1 (version GCC_3.0) and
 * libgcc_eh.a; its out-parameter is libgcc's struct dwarf_eh_bases, three
 * pointers, of which only func is read. test_callstack fails if either
 * changes. */
struct eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct eh_bases *bases);

typedef struct { const uint8_t *p, *end; bool bad; } rd_t;

/* a LEB128 number; sign: sign-extended from its last byte's bit 6 */
static uint64_t leb(rd_t *r, bool sign) {
  uint64_t v = 0;
  for (unsigned sh = 0;; sh += 7) {
    if (r->p >= r->end || sh > 63) { r->bad = true; return 0; }
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) {
      if (sign && sh + 7 < 64 && (b & 0x40)) v |= ~0ull << (sh + 7);
      return v;
    }
  }
}
static uint64_t uleb(rd_t *r) { return leb(r, false); }
static int64_t sleb(rd_t *r) { return (int64_t)leb(r, true); }

static uint64_t fixed(rd_t *r, unsigned n) {
  if (r->end - r->p < (ptrdiff_t)n) { r->bad = true; return 0; }
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)r->p[i] << (8 * i);
  r->p += n;
  return v;
}

/* past a pointer encoded as enc (DW_EH_PE_*), its value unneeded */
static void skip_enc(rd_t *r, uint8_t enc) {
  if (enc == 0xff) return;  /* omit */
  switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: fixed(r, 8); return;
    case 0x02: case 0x0a: fixed(r, 2); return;
    case 0x03: case 0x0b: fixed(r, 4); return;
    case 0x01: uleb(r); return;
    case 0x09: sleb(r); return;
    default: r->bad = true; return;
  }
}

enum { H_SAME, H_AT_CFA, H_AT_RBP, H_UNDEF, H_BAD };  /* a register's rule */
enum { F_REG, F_DEREF_RBP, F_BAD };                   /* the CFA's */

typedef struct {
  int cfa_how, cfa_reg;
  int64_t cfa_off;
  int rbp_how, ra_how;
  int64_t rbp_off, ra_off;
} cstate_t;

typedef struct { int64_t daf; uint64_t caf; uint8_t fde_enc; bool z, signal; } cie_t;

enum { RBP = 6, RSP = 7, RA = 16 };

static void set_reg(cstate_t *s, uint64_t reg, int how, int64_t off) {
  if (reg == RBP) { s->rbp_how = how; s->rbp_off = off; }
  else if (reg == RA) { s->ra_how = how; s->ra_off = off; }
}

/* DW_CFA_restore: the register's rule as the CIE left it */
static void restore_reg(cstate_t *s, const cstate_t *init, uint64_t reg) {
  if (reg == RBP) set_reg(s, reg, init->rbp_how, init->rbp_off);
  else if (reg == RA) set_reg(s, reg, init->ra_how, init->ra_off);
}

/* Run a CFA program while its location is below pc (the rules at pc - 1,
 * inside the call). init: the CIE's state, for DW_CFA_restore. */
static bool run_cfa(rd_t *r, const cie_t *c, uintptr_t loc, uintptr_t pc, cstate_t *s, const cstate_t *init) {
  cstate_t saved[8];
  unsigned nsaved = 0;
  while (r->p < r->end && loc < pc && !r->bad) {
    uint8_t op = *r->p++;
    uint64_t reg;
    switch (op >> 6) {
      case 1: loc += (op & 0x3f) * c->caf; continue;                    /* advance_loc */
      case 2: set_reg(s, op & 0x3f, H_AT_CFA, (int64_t)uleb(r) * c->daf); continue;  /* offset */
      case 3: restore_reg(s, init, op & 0x3f); continue;                 /* restore */
    }
    switch (op) {
      case 0x00: break;                                                 /* nop */
      case 0x02: loc += fixed(r, 1) * c->caf; break;                    /* advance_loc1 */
      case 0x03: loc += fixed(r, 2) * c->caf; break;
      case 0x04: loc += fixed(r, 4) * c->caf; break;
      case 0x05: reg = uleb(r); set_reg(s, reg, H_AT_CFA, (int64_t)uleb(r) * c->daf); break;
      case 0x06: restore_reg(s, init, uleb(r)); break;                  /* restore_extended */
      case 0x07: reg = uleb(r); set_reg(s, reg, reg == RA ? H_UNDEF : H_BAD, 0); break;  /* undefined */
      case 0x08: reg = uleb(r); set_reg(s, reg, reg == RBP ? H_SAME : H_BAD, 0); break;  /* same_value */
      case 0x09: reg = uleb(r); uleb(r); set_reg(s, reg, H_BAD, 0); break;              /* register */
      case 0x0a:                                                        /* remember_state */
        if (nsaved == 8) return false;
        saved[nsaved++] = *s;
        break;
      case 0x0b:                                                        /* restore_state */
        if (nsaved == 0) return false;
        *s = saved[--nsaved];
        break;
      case 0x0c: s->cfa_how = F_REG; s->cfa_reg = (int)uleb(r); s->cfa_off = (int64_t)uleb(r); break;
      case 0x0d: s->cfa_how = F_REG; s->cfa_reg = (int)uleb(r); break;
      case 0x0e: s->cfa_off = (int64_t)uleb(r); break;
      case 0x0f: {                                                      /* def_cfa_expression */
        uint64_t len = uleb(r);
        rd_t e = { r->p, r->p + len, false };
        if (len > (uint64_t)(r->end - r->p)) return false;
        r->p += len;
        s->cfa_how = F_BAD;  /* only gcc's realignment: DW_OP_breg6 n; DW_OP_deref */
        if (len >= 3 && *e.p++ == 0x76) {
          int64_t off = sleb(&e);
          if (!e.bad && e.p + 1 == e.end && *e.p == 0x06) { s->cfa_how = F_DEREF_RBP; s->cfa_off = off; }
        }
        break;
      }
      case 0x10: {                                                      /* expression */
        reg = uleb(r);
        uint64_t len = uleb(r);
        rd_t e = { r->p, r->p + len, false };
        if (len > (uint64_t)(r->end - r->p)) return false;
        r->p += len;
        int how = H_BAD;  /* only the realigned frame's rbp: DW_OP_breg6 n */
        int64_t off = 0;
        if (reg == RBP && len >= 2 && *e.p++ == 0x76) {
          off = sleb(&e);
          if (!e.bad && e.p == e.end) how = H_AT_RBP;
        }
        set_reg(s, reg, how, off);
        break;
      }
      case 0x11: reg = uleb(r); set_reg(s, reg, H_AT_CFA, sleb(r) * c->daf); break;
      case 0x12: s->cfa_how = F_REG; s->cfa_reg = (int)uleb(r); s->cfa_off = sleb(r) * c->daf; break;
      case 0x13: s->cfa_off = sleb(r) * c->daf; break;
      case 0x14: reg = uleb(r); uleb(r); set_reg(s, reg, H_BAD, 0); break;   /* val_offset */
      case 0x15: reg = uleb(r); sleb(r); set_reg(s, reg, H_BAD, 0); break;   /* val_offset_sf */
      case 0x16: {                                                           /* val_expression */
        reg = uleb(r);
        uint64_t len = uleb(r);
        if (len > (uint64_t)(r->end - r->p)) return false;
        r->p += len;
        set_reg(s, reg, H_BAD, 0);
        break;
      }
      case 0x2e: uleb(r); break;                                             /* GNU_args_size */
      case 0x2f: reg = uleb(r); set_reg(s, reg, H_AT_CFA, -(int64_t)uleb(r) * c->daf); break;
      default: return false;  /* set_loc, vendor ops: not modelled */
    }
  }
  return !r->bad;
}

/* the rule at return address pc (kind and where), without a generation */
#define NO_RULE pack(R_LIBGCC, 0, 0, 0, 0, 0, 0)

static uint64_t rule_for(uintptr_t pc) {
  struct eh_bases bases;
  const uint8_t *fde = _Unwind_Find_FDE((void *)(pc - 1), &bases);
  if (!fde) return NO_RULE;
  uint32_t len = (uint32_t)fixed(&(rd_t){ fde, fde + 4, false }, 4);
  if (len == 0 || len == 0xffffffffu) return NO_RULE;
  const uint8_t *fend = fde + 4 + len;
  const uint8_t *cie = fde + 4 - (uint32_t)fixed(&(rd_t){ fde + 4, fde + 8, false }, 4);
  uint32_t clen = (uint32_t)fixed(&(rd_t){ cie, cie + 4, false }, 4);
  if (clen == 0 || clen == 0xffffffffu) return NO_RULE;

  /* the CIE: version, augmentation, factors, the RA column, 'z' data */
  rd_t r = { cie + 8, cie + 4 + clen, false };
  cie_t c = { 0 };
  uint8_t version = (uint8_t)fixed(&r, 1);
  const char *aug = (const char *)r.p;
  while (r.p < r.end && *r.p) r.p++;
  r.p++;
  if ((version != 1 && version != 3) || r.p > r.end || (aug[0] == 'e' && aug[1] == 'h'))
    return NO_RULE;
  c.caf = uleb(&r);
  c.daf = sleb(&r);
  uint64_t ra_col = version == 1 ? fixed(&r, 1) : uleb(&r);
  c.fde_enc = 0;  /* absptr */
  if (aug[0] == 'z') {
    c.z = true;
    uint64_t alen = uleb(&r);
    if (r.bad || alen > (uint64_t)(r.end - r.p)) return NO_RULE;
    rd_t a = { r.p, r.p + alen, false };
    r.p += alen;
    for (const char *k = aug + 1; *k; k++) {
      if (*k == 'R') c.fde_enc = (uint8_t)fixed(&a, 1);
      else if (*k == 'L') fixed(&a, 1);
      else if (*k == 'P') skip_enc(&a, (uint8_t)fixed(&a, 1));
      else if (*k == 'S') c.signal = true;
      else if (*k != 'B') a.bad = true;
    }
    if (a.bad) return NO_RULE;
  } else if (aug[0]) {
    return NO_RULE;
  }
  if (r.bad || ra_col != RA || c.signal || c.caf == 0) return NO_RULE;

  cstate_t init = { F_BAD, 0, 0, H_SAME, H_BAD, 0, 0 }, s;
  if (!run_cfa(&r, &c, 0, UINTPTR_MAX, &init, &init)) return NO_RULE;

  /* the FDE: past the function's start and length and its 'z' data */
  rd_t f = { fde + 8, fend, false };
  skip_enc(&f, c.fde_enc);
  skip_enc(&f, c.fde_enc & 0x0f);
  if (c.z) {
    uint64_t alen = uleb(&f);
    if (alen > (uint64_t)(f.end - f.p)) return NO_RULE;
    f.p += alen;
  }
  s = init;
  if (f.bad || !run_cfa(&f, &c, (uintptr_t)bases.func, pc, &s, &init)) return NO_RULE;

  if (s.ra_how == H_UNDEF) return pack(R_END, 0, 0, 0, 0, 0, 0);
  unsigned base, rbp;
  if (s.cfa_how == F_DEREF_RBP) base = C_DEREF_RBP;
  else if (s.cfa_how == F_REG && s.cfa_reg == RSP) base = C_RSP;
  else if (s.cfa_how == F_REG && s.cfa_reg == RBP) base = C_RBP;
  else return NO_RULE;
  if (s.rbp_how == H_SAME) rbp = B_SAME;
  else if (s.rbp_how == H_AT_CFA) rbp = B_AT_CFA;
  else if (s.rbp_how == H_AT_RBP) rbp = B_AT_RBP;
  else return NO_RULE;
  /* the packed fields: a frame under 8 MiB, slots near the CFA */
  if (s.ra_how != H_AT_CFA || s.ra_off < -128 || s.ra_off > 127 || s.rbp_off < -32768 ||
      s.rbp_off > 32767 || s.cfa_off < -(1 << 23) || s.cfa_off >= (1 << 23))
    return NO_RULE;
  return pack(R_WALK, base, rbp, (int)s.ra_off, (int)s.rbp_off, (int)s.cfa_off, 0);
}

/* ---- the table ------------------------------------------------------------------- */

#define NRULE 8192u   /* a power of two; 128 KiB of .bss, touched only when used */
#define PROBES 32u

typedef struct { _Atomic uintptr_t pc; _Atomic uint64_t rule; } slot_t;

HK_BSS_ARRAY static slot_t table[NRULE];
static hk_lock_t table_lock = HK_LOCK_INIT;
static _Atomic unsigned gen;             /* low 8 bits are a rule's */
static unsigned long long seen_subs;     /* dl_iterate_phdr's unloads; table_lock */

static unsigned home(uintptr_t pc) { return (unsigned)((pc * 0x9e3779b97f4a7c15ull) >> 51) & (NRULE - 1); }

/* pc's rule of generation g, or R_MISS */
static uint64_t probe(uintptr_t pc, unsigned g) {
  for (unsigned i = home(pc), k = 0; k < PROBES; k++, i = (i + 1) & (NRULE - 1)) {
    uintptr_t key = atomic_load_explicit(&table[i].pc, memory_order_acquire);
    if (key == 0) return R_MISS;
    if (key != pc) continue;
    uint64_t r = atomic_load_explicit(&table[i].rule, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&table[i].pc, memory_order_relaxed) != pc) return R_MISS;
    return R_GEN(r) == (g & 0xff) ? r : R_MISS;
  }
  return R_MISS;
}

static HK_NOINLINE uint64_t miss(uintptr_t pc, unsigned g) {
  uint64_t r = rule_for(pc) | (uint64_t)(g & 0xff) << 56;
  hk_lock(&table_lock);
  for (unsigned i = home(pc), k = 0; k < PROBES; k++, i = (i + 1) & (NRULE - 1)) {
    uintptr_t key = atomic_load_explicit(&table[i].pc, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&table[i].rule, memory_order_relaxed);
    if (key != 0 && key != pc && R_GEN(old) == (g & 0xff)) continue;
    /* free, stale, or pc's own: key to 0, then the rule, then the key */
    atomic_store_explicit(&table[i].pc, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&table[i].rule, r, memory_order_relaxed);
    atomic_store_explicit(&table[i].pc, pc, memory_order_release);
    break;
  }
  hk_unlock(&table_lock);
  return r;  /* (a full chain: used, not kept) */
}

static int count_subs(struct dl_phdr_info *info, size_t size, void *arg) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *(unsigned long long *)arg = info->dlpi_subs;
  return 1;
}

/* a new generation when a library was unloaded */
static void check_unloads(void) {
  unsigned long long subs = 0;
  dl_iterate_phdr(count_subs, &subs);
  if (HK_UNLIKELY(subs != __atomic_load_n(&seen_subs, __ATOMIC_RELAXED))) {
    hk_lock(&table_lock);
    if (subs != seen_subs) {
      __atomic_store_n(&seen_subs, subs, __ATOMIC_RELAXED);
      atomic_fetch_add_explicit(&gen, 1, memory_order_release);
    }
    hk_unlock(&table_lock);
  }
}

/* rip, rsp and rbp as they are in the caller, just after this returns */
void hk_unwind_regs(uintptr_t regs[3]) HK_HIDDEN;
__asm__(".text\n"
        ".globl hk_unwind_regs\n"
        ".hidden hk_unwind_regs\n"
        ".type hk_unwind_regs, @function\n"
        "hk_unwind_regs:\n"
        ".cfi_startproc\n"
        "  movq (%rsp), %rax\n"
        "  movq %rax, (%rdi)\n"
        "  leaq 8(%rsp), %rax\n"
        "  movq %rax, 8(%rdi)\n"
        "  movq %rbp, 16(%rdi)\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size hk_unwind_regs, .-hk_unwind_regs\n");

/* The top of this thread's stack, found once (pthread_getattr_np may
 * allocate: the profiler calls here guarded); every read of a walk lies
 * between its first sp and this, so a rule that is wrong (a library
 * swapped under the table between two checks) can misname frames but
 * never fault. 1: not found, libgcc walks. */
static __thread uintptr_t stack_lo, stack_hi;
static __thread unsigned walks_since_check;

static void find_stack(void) {
  pthread_attr_t a;
  void *lo;
  size_t size;
  stack_lo = stack_hi = 1;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &lo, &size) == 0) {
      stack_lo = (uintptr_t)lo;
      stack_hi = (uintptr_t)lo + size;
    }
    pthread_attr_destroy(&a);
  }
}

/* The walk from regs (the first frame, the caller's own, is left out); -1:
 * give it to libgcc */
static int walk_cached(const uintptr_t regs[3], uintptr_t *out, unsigned max) {
  uintptr_t pc = regs[0], sp = regs[1], rbp = regs[2], sp0 = sp;
  if (HK_UNLIKELY(stack_hi == 0)) find_stack();
  /* not found, or sp on another stack (a coroutine's): libgcc */
  if (sp0 < stack_lo || sp0 + 64 > stack_hi) return -1;
  const uintptr_t room = stack_hi - sp0 - 8;  /* a read at a is safe when a - sp0 <= room */
  /* unloads are looked for every 64th walk of a thread (dl_iterate_phdr
   * takes a lock); any thread's finding counts for all at once */
  if ((walks_since_check++ & 63) == 0) check_unloads();
  unsigned g = atomic_load_explicit(&gen, memory_order_acquire), n = 0;
  for (bool first = true;; first = false) {
    if (!first) {
      out[n++] = pc;
      if (n == max) return (int)n;
    }
    uint64_t r = probe(pc, g);
    if (HK_UNLIKELY(R_KIND(r) == R_MISS)) r = miss(pc, g);
    if (R_KIND(r) == R_END) return (int)n;
    if (R_KIND(r) != R_WALK) return -1;
    uintptr_t cfa;
    switch (R_BASE(r)) {
      case C_RSP: cfa = sp + R_CFA_OFF(r); break;
      case C_RBP: cfa = rbp + R_CFA_OFF(r); break;
      default:
        if (rbp + R_CFA_OFF(r) - sp0 > room) return -1;
        cfa = *(const uintptr_t *)(rbp + R_CFA_OFF(r));
    }
    /* up the stack, 8-aligned, every read on it */
    if (cfa <= sp || (cfa & 7) || cfa + R_RA_OFF(r) - sp0 > room) return -1;
    uintptr_t ra = *(const uintptr_t *)(cfa + R_RA_OFF(r));
    if (R_RBP(r) == B_AT_CFA) {
      if (cfa + R_RBP_OFF(r) - sp0 > room) return -1;
      rbp = *(const uintptr_t *)(cfa + R_RBP_OFF(r));
    } else if (R_RBP(r) == B_AT_RBP) {
      if (rbp + R_RBP_OFF(r) - sp0 > room) return -1;
      rbp = *(const uintptr_t *)(rbp + R_RBP_OFF(r));
    }
    sp = cfa;
    pc = ra;
    if (pc == 0) return (int)n;
  }
}

HK_NOINLINE __attribute__((noclone)) unsigned hk_unwind_with(int how, uintptr_t *pc, unsigned max) {
  if (max == 0) return 0;
  if (how == HK_UNWIND_CACHED) {
    uintptr_t regs[3];
    hk_unwind_regs(regs);
    int n = walk_cached(regs, pc, max);
    if (n >= 0) {
      walks_cached++;
      return (unsigned)n;
    }
  }
  return libgcc_walk(pc, max);
}

void hk_unwind_fork_child(void) { hk_lock_reset(&table_lock); }

#else  /* not x86-64: libgcc every time */

HK_NOINLINE __attribute__((noclone)) unsigned hk_unwind_with(int how, uintptr_t *pc, unsigned max) {
  (void)how;
  if (max == 0) return 0;
  return libgcc_walk(pc, max);
}

void hk_unwind_fork_child(void) {}

#endif
