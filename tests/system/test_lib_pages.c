/* test_lib_pages — what a small program keeps resident of libhakmem's code
 * (cmake/hot_text.py, cmake/hot_text.cmake).
 *
 * The kernel maps a file's pages around each one a program touches, up to
 * 64 KiB from the start of that window (fault-around; the window starts
 * at the mapping's start when that is closer). The functions every program
 * runs come first in the library's .text, so a program that starts,
 * allocates and frees small blocks (and a 4 KiB stdio buffer) and prints
 * must have no page of the library's code resident past the first window
 * of its code mapping: a function it runs that the list misses (renamed,
 * split, new) lands further on and fails this, naming the pages; rerun
 * cmake/hot_text.py. The pages are read from /proc/self/pagemap (the
 * present bit needs no privilege).
 *
 * A kernel with large folios in the page cache (6.18 here, for a file
 * written or read ahead in big pieces) maps a whole folio at a fault, and
 * a folio may reach past the window. So the test runs on a copy of the
 * library it writes itself a page at a time (small folios), preloaded into
 * a second run of itself: what it measures is then the order of the code,
 * not how the library reached the page cache. A file not in the page
 * cache maps less, never more. Even so, now and then every page of the
 * copy comes back mapped, the unwind tables too, which nothing reads: that
 * run measures nothing (exit 75), and a new copy is measured, three at
 * most.
 *
 * The unwind tables (PT_GNU_EH_FRAME and the .eh_frame after it) are
 * read only when a stack is walked, and this program walks none: the link
 * script gives them a segment of their own, so that fault-around, which
 * stops at a mapping's end, does not map them with the read-only data
 * every program reads. None of their pages may be resident.
 *
 * The code every load and exit runs whatever the program does (DT_INIT,
 * DT_FINI and the entries of their arrays) must lie in the first window
 * too: the checks above see a program before it exits, and the linker's
 * default puts .fini, which DT_FINI runs at every exit, after all of
 * .text, a window of its own (the link script moves it beside .init).
 *
 * `test_lib_pages busy`: a busier program, run with the guarded sampler
 * at a high rate and the purge thread on (tests/CMakeLists.txt sets the
 * knobs): two threads, every block freed by the other one, with a pause
 * halfway and a sleep at the end, each through a few purge ticks. The
 * sampler walks the stacks of the blocks it takes (libgcc's unwinder,
 * which the link script places right after the list), and the purge
 * thread's idle passes look at both heaps while the program lives (what
 * they find to park depends on timing: here, under gdb, none of their
 * passes parked a page). Its code must stay within the first two windows;
 * before the unwinder and the purge thread's passes were placed, they sat
 * in a third. The unwind tables must be resident here (a stack was
 * walked: else the run proves nothing).
 * `busy_nostack`: the same under lowmem's default HAKMEM_GUARDED_STACKS=0:
 * the sampler still takes blocks but walks no stack, so none of the unwind
 * tables may be resident (their pages, and those of every library on the
 * stack, are what the knob saves).
 * `test_lib_pages large`: a program of big blocks, as bench_large's row
 * large_realloc is (tests/CMakeLists.txt runs it under the default profile
 * and lowmem): blocks of 64 KiB to 32 MiB taken, touched and freed, then
 * realloc chains that grow one from 64 KiB to 32 MiB. Its code must stay
 * within the first two windows: the span tier's functions were left out
 * of the list once (a budget check added after the list was made sat in a
 * third window, 64 KiB more resident in every program of big blocks).
 * With the order wrong, every code page is resident, which is also what a
 * large folio looks like: the folio check is made at start.
 *
 * Every run also counts the library's zeroed data past its file (.bss and
 * .lbss) that is resident: at most ZEROED_PAGES. This kernel maps no zero
 * page, so a table that is only read is resident too; the busy runs reach
 * the purge tick's look at the mid pool's heads.
 *
 * Only where the build placed the list (tests/CMakeLists.txt registers it
 * then) and with the shared library linked or preloaded; exit 77 without
 * a libhakmem mapping (a static link). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* libhakmem's unwind tables: from PT_GNU_EH_FRAME to the end of the
 * PT_LOAD that holds it */
struct eh { uintptr_t lo, hi; };
static int find_eh(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct eh *e = arg;
  if (!info->dlpi_name || strcmp(info->dlpi_name, getenv("HK_LIB_PAGES_COPY")) != 0) return 0;
  uintptr_t hdr = 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) hdr = info->dlpi_phdr[i].p_vaddr;
  for (int i = 0; hdr && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type == PT_LOAD && hdr >= p->p_vaddr && hdr < p->p_vaddr + p->p_memsz) {
      e->lo = info->dlpi_addr + hdr;
      e->hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
    }
  }
  return 1;
}

/* The code libhakmem's dynamic section says runs at load and exit: DT_INIT,
 * DT_FINI and the entries of DT_INIT_ARRAY and DT_FINI_ARRAY. */
struct entry_points { uintptr_t at[64]; int n; };
static int find_entry_points(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct entry_points *e = arg;
  if (!info->dlpi_name || strcmp(info->dlpi_name, getenv("HK_LIB_PAGES_COPY")) != 0) return 0;
  /* d_ptr values: glibc relocates some in place, not these; an address
   * below the load base is an unrelocated one */
#define HK_ABS(v) ((uintptr_t)(v) < info->dlpi_addr ? info->dlpi_addr + (uintptr_t)(v) : (uintptr_t)(v))
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    uintptr_t arr[2] = { 0, 0 };
    size_t arrsz[2] = { 0, 0 };
    for (; d->d_tag != DT_NULL; d++) {
      switch (d->d_tag) {
      case DT_INIT: case DT_FINI:
        if (e->n < 64) e->at[e->n++] = HK_ABS(d->d_un.d_ptr);
        break;
      case DT_INIT_ARRAY: arr[0] = HK_ABS(d->d_un.d_ptr); break;
      case DT_FINI_ARRAY: arr[1] = HK_ABS(d->d_un.d_ptr); break;
      case DT_INIT_ARRAYSZ: arrsz[0] = d->d_un.d_val; break;
      case DT_FINI_ARRAYSZ: arrsz[1] = d->d_un.d_val; break;
      }
    }
    for (int k = 0; k < 2; k++)
      for (size_t j = 0; arr[k] && j < arrsz[k] / sizeof(uintptr_t); j++)
        if (e->n < 64) e->at[e->n++] = ((const uintptr_t *)arr[k])[j];
  }
#undef HK_ABS
  return 1;
}

/* the path of the libhakmem this process runs */
static int find_lib(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "libhakmem")) return 0;
  snprintf(arg, 4096, "%s", info->dlpi_name);
  return 1;
}

/* The first run: copies the library a page at a time and runs itself again
 * with the copy preloaded (its soname stands for the linked one); returns
 * that run's status. */
static int run_on_copy(char **argv) {
  char lib[4096] = "", copy[4200];
  dl_iterate_phdr(find_lib, lib);
  if (lib[0] == 0) {
    printf("lib_pages: no libhakmem loaded (static link?): skipped\n");
    return 77;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(copy, sizeof copy, "%s/libhakmem-lib_pages-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int out = mkstemp(copy), in = open(lib, O_RDONLY);
  CHECK_FATAL(out >= 0 && in >= 0);
  char page[4096];
  ssize_t n;
  while ((n = read(in, page, sizeof page)) > 0) CHECK_FATAL(write(out, page, (size_t)n) == n);
  CHECK_FATAL(n == 0);
  close(in);
  close(out);
  const char *env[] = { "LD_PRELOAD", copy, "HK_LIB_PAGES_COPY", copy, NULL };
  int st = check_run_self(argv, env);
  CHECK_FATAL(st != -1);
  unlink(copy);
  if (!WIFEXITED(st)) {
    printf("lib_pages: the run on the copy died (status %d)\n", st);
    return 1;
  }
  return WEXITSTATUS(st);
}

/* The first run, up to three times while the copy comes back mapped whole
 * (exit 75: a large folio, about one run in thirty here in a tight loop):
 * each time a new copy. */
static int run_on_copies(char **argv) {
  int rc = 75;
  for (int i = 0; i < 3 && rc == 75; i++) rc = run_on_copy(argv);
  if (rc == 75) printf("lib_pages: three copies mapped whole: the order of the code is not measurable here\n");
  return rc == 75 ? 1 : rc;
}

/* of the library's zeroed data past its file, what a program may keep */
#define ZEROED_PAGES 8

/* How many pages of [lo, hi) are mapped in (pagemap's present bit). */
static long resident_pages(int pm, uintptr_t lo, uintptr_t hi) {
  long n = 0;
  for (uintptr_t a = lo; a < hi; a += 4096) {
    uint64_t e = 0;
    CHECK_FATAL(pread(pm, &e, 8, (off_t)(a / 4096 * 8)) == 8);
    n += (long)(e >> 63);
  }
  return n;
}

/* The copy's code mapping: [*lo, *hi) at file offset *off; false if none. */
static bool find_code(const char *copy, unsigned long *lo, unsigned long *hi, unsigned long *off) {
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK_FATAL(maps != NULL);
  char line[512];
  *lo = *hi = *off = 0;
  while (fgets(line, sizeof line, maps)) {
    char perm[8];
    unsigned long a, b, o;
    if (sscanf(line, "%lx-%lx %7s %lx", &a, &b, perm, &o) != 4) continue;
    if (strstr(line, copy) && perm[2] == 'x') {
      *lo = a, *hi = b, *off = o;
      break;
    }
  }
  fclose(maps);
  return *lo != 0;
}

/* The copy's zeroed data past its file (.bss and .lbss): the anonymous
 * mapping that starts where the copy's last mapping ends; false if none. */
static bool find_zeroed(const char *copy, unsigned long *lo, unsigned long *hi) {
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK_FATAL(maps != NULL);
  char line[512];
  unsigned long end = 0;
  *lo = *hi = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long a, b;
    int name = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &name) != 2) continue;
    if (strstr(line, copy)) {
      end = b;
    } else if (end != 0 && a == end && (name == 0 || line[name] == '\0' || line[name] == '\n')) {
      *lo = a, *hi = b;
      break;
    } else if (end != 0) {
      break;
    }
  }
  fclose(maps);
  return *lo != 0;
}

static long window_pages(void) {
  long bytes = 65536;  /* the kernel's default fault_around_bytes */
  FILE *f = fopen("/sys/kernel/debug/fault_around_bytes", "r");
  if (f) {
    if (fscanf(f, "%ld", &bytes) != 1) bytes = 65536;
    fclose(f);
  }
  return bytes / 4096;
}

/* The busy program's other thread: frees what main allocated and
 * allocates what main frees, a round at a time. */
#define BUSY_BLOCKS 2000
#define BUSY_ROUNDS 100
static void *busy_in[BUSY_BLOCKS], *busy_out[BUSY_BLOCKS];
static pthread_barrier_t busy_bar;
static void *busy_peer(void *arg) {
  (void)arg;
  for (int r = 0; r < BUSY_ROUNDS; r++) {
    pthread_barrier_wait(&busy_bar);  /* main filled busy_in */
    for (int i = 0; i < BUSY_BLOCKS; i++) {
      free(busy_in[i]);
      busy_out[i] = malloc(16 + (size_t)(i % 32) * 16);
      CHECK_FATAL(busy_out[i] != NULL);
    }
    pthread_barrier_wait(&busy_bar);
  }
  return NULL;
}

/* The big-block program: a few blocks of every size band from 64 KiB to
 * 32 MiB, each touched (16 pages and its last byte) and freed, then
 * realloc chains from 64 KiB to 32 MiB, the new tail written each step. */
static void large_life(void) {
  void *b[8];
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 8; i++) {
      size_t n = ((size_t)64 << 10) << (i + r) % 10;
      unsigned char *q = malloc(n);
      CHECK_FATAL(q != NULL);
      for (size_t o = 0; o < n && o < 16 * 4096; o += 4096) q[o] = (unsigned char)i;
      q[n - 1] = (unsigned char)i;
      b[i] = q;
    }
    for (int i = 0; i < 8; i++) free(b[i]);
  }
  const size_t top = (size_t)32 << 20;
  for (int c = 0; c < 5; c++) {
    size_t n = (size_t)64 << 10;
    unsigned char *q = malloc(n);
    CHECK_FATAL(q != NULL);
    q[0] = (unsigned char)c;
    while (n < top) {
      size_t m = n + n / 2 + (size_t)c * 512;
      if (m > top) m = top;
      q = realloc(q, m);
      CHECK_FATAL(q != NULL);
      CHECKF(q[0] == (unsigned char)c, "realloc lost the block's first byte");
      q[m - 1] = 1;
      n = m;
    }
    free(q);
  }
}

static void busy_life(void) {
  pthread_t t;
  CHECK_FATAL(pthread_barrier_init(&busy_bar, NULL, 2) == 0);
  CHECK_FATAL(pthread_create(&t, NULL, busy_peer, NULL) == 0);
  for (int r = 0; r < BUSY_ROUNDS; r++) {
    /* halfway, both threads idle a while: the purge thread's idle
     * passes run over their heaps */
    if (r == BUSY_ROUNDS / 2) sleep_ms(100);
    for (int i = 0; i < BUSY_BLOCKS; i++) {
      busy_in[i] = malloc(16 + (size_t)(i % 32) * 16);
      CHECK_FATAL(busy_in[i] != NULL);
    }
    pthread_barrier_wait(&busy_bar);
    pthread_barrier_wait(&busy_bar);  /* the peer freed them, filled busy_out */
    for (int i = 0; i < BUSY_BLOCKS; i++) free(busy_out[i]);
  }
  pthread_join(t, NULL);
  sleep_ms(300);  /* purge ticks over the idle heaps */
}

int main(int argc, char **argv) {
  const char *copy = getenv("HK_LIB_PAGES_COPY");
  if (copy == NULL) return run_on_copies(argv);
  bool busy = argc > 1 && strncmp(argv[1], "busy", 4) == 0;
  bool walks = busy && strcmp(argv[1], "busy") == 0;  /* busy_nostack: none */
  bool large = argc > 1 && strcmp(argv[1], "large") == 0;
  long windows = busy || large ? 2 : 1;  /* of code a run may touch */
  if (busy || large) {
    /* the busy part maps every window of the code when the order is
     * wrong, which is also what a large folio looks like: tell them apart
     * here, where only start-up has run (the sampler's knob is on from the
     * first malloc, so not after the small program either) */
    unsigned long clo, chi, coff;
    int cpm = open("/proc/self/pagemap", O_RDONLY);
    CHECK_FATAL(cpm >= 0 && find_code(copy, &clo, &chi, &coff));
    long at_start = resident_pages(cpm, clo, chi);
    close(cpm);
    if (at_start == (long)((chi - clo) / 4096)) {
      printf("lib_pages: every code page of the copy resident at start: one large folio\n");
      return 75;
    }
  }
  /* a small program's life: small blocks, a few sizes, one stdio buffer */
  void *p[100];
  for (int r = 0; r < 20000; r++) {
    for (int i = 0; i < 100; i++) p[i] = malloc(16 + (size_t)(i % 4) * 48);
    for (int i = 0; i < 100; i++) free(p[i]);
  }
  if (busy) busy_life();
  if (large) large_life();
  char *s = calloc(1, 200);
  s = realloc(s, 900);
  snprintf(s, 900, "%d", 42);
  printf("lib_pages: worked %s\n", s);
  free(s);

  int pm = open("/proc/self/pagemap", O_RDONLY);
  CHECK_FATAL(pm >= 0);
  unsigned long lo, hi, off;
  if (!find_code(copy, &lo, &hi, &off)) {
    printf("lib_pages: the copy %s has no code mapping\n", copy);
    return 1;
  }
  long window = window_pages(), present = 0, beyond = 0;
  struct eh eh = { 0, 0 };
  dl_iterate_phdr(find_eh, &eh);
  CHECKF(eh.lo != 0, "libhakmem's PT_GNU_EH_FRAME not found");
  long eh_pages = (long)((eh.hi - (eh.lo & ~(uintptr_t)4095) + 4095) / 4096);
  long code_pages = (long)((hi - lo) / 4096);
  if (!busy && eh.lo && resident_pages(pm, lo, hi) == code_pages &&
      resident_pages(pm, eh.lo & ~(uintptr_t)4095, eh.hi) == eh_pages) {
    /* every page of the copy, the unwind tables too, which nothing read:
     * the kernel mapped the file as one large folio (the page cache made
     * it so despite the copy's small writes), not by fault-around */
    printf("lib_pages: every page of the copy resident: one large folio, not the code's order\n");
    return 75;
  }
  for (unsigned long a = lo; a < hi; a += 4096) {
    uint64_t e = 0;
    CHECK_FATAL(pread(pm, &e, 8, (off_t)(a / 4096 * 8)) == 8);
    if (!(e >> 63)) continue;
    present++;
    long page = (long)((a - lo) / 4096);
    if (page >= window * windows) {
      beyond++;
      CHECKF(0, "code page %ld (file offset 0x%lx) resident, past the first %ld: "
             "a function this program runs is not in cmake/hot_text.ld (rerun cmake/hot_text.py)",
             page, off + (a - lo), window * windows);
    }
  }
  long eh_present = eh.lo ? resident_pages(pm, eh.lo & ~(uintptr_t)4095, eh.hi) : 0;
  printf("lib_pages: %ld of %ld pages of the unwind tables resident\n", eh_present, eh_pages);
  if (walks)
    CHECKF(eh_present > 0, "no page of the unwind tables resident: the sampler walked no stack "
           "(HAKMEM_GUARDED_RATE not set?), so the run measured nothing of the unwinder's place");
  else if (busy)
    CHECKF(eh_present == 0, "the unwind tables are resident: a stack was walked though the "
           "sampler takes none (HAKMEM_GUARDED_STACKS=0, lowmem's default)");
  else
    CHECKF(eh_present == 0, "the unwind tables are resident though no stack was walked: "
           "mapped with the read-only data (cmake/hot_text.cmake's gap missing?)");
  /* zeroed data: a page only read is a page of memory on a kernel that
   * maps no zero page (6.18 here), so the tables every program's ticks and
   * looks read (the mid pool's heads) sit apart from what only a busy
   * program fills (its slots): before, the purge tick's look at the 40
   * heads alone kept 40 pages */
  unsigned long zlo, zhi;
  CHECKF(find_zeroed(copy, &zlo, &zhi), "the copy's zeroed data (.bss) mapping not found");
  long zeroed = resident_pages(pm, zlo, zhi);
  printf("lib_pages: %ld pages of the zeroed data resident (of %lu)\n", zeroed, (zhi - zlo) / 4096);
  CHECKF(zeroed <= ZEROED_PAGES, "%ld pages of the library's zeroed data resident, more than %d: "
         "a zeroed table that every program reads spans pages (docs/ARCHITECTURE.md, "
         "\"The library's own pages\")", zeroed, ZEROED_PAGES);
  close(pm);
  struct entry_points ep = { .n = 0 };
  dl_iterate_phdr(find_entry_points, &ep);
  CHECKF(ep.n >= 2, "libhakmem's DT_INIT and DT_FINI not found (%d entry points)", ep.n);
  for (int i = 0; i < ep.n; i++) {
    CHECKF(ep.at[i] >= lo && ep.at[i] < hi, "entry point %d at %#lx outside the code mapping", i,
           (unsigned long)ep.at[i]);
    long page = (long)((ep.at[i] - lo) / 4096);
    CHECKF(page < window, "entry point %d (load or exit code) on code page %ld, past the first %ld: "
           "every exit maps that window (cmake/hot_text.cmake's .fini move missing?)",
           i, page, window);
  }
  printf("lib_pages: %d load and exit entry points checked\n", ep.n);
  printf("lib_pages: %ld of %lu code pages resident, %ld past the first %ld window(s) of %ld\n",
         present, (hi - lo) / 4096, beyond, windows, window);
  CHECKF(present > 0, "no code page resident: pagemap unreadable?");
  return check_done("lib_pages");
}
