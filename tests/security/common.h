/* Shared by the attack programs of tests/security/by_hand.sh. Each program is a plain
 * malloc user (not linked to hakmem) run under LD_PRELOAD of the library under
 * test; the script checks how it ends (signal, exit status) and what it wrote
 * to stderr. */
#ifndef SEC_COMMON_H
#define SEC_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hide where a pointer comes from, so that the compiler neither warns about
 * the deliberate misuse nor folds it away. */
static inline void *launder(void *p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}
static inline size_t launder_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/* Exit 3 unless hakmem serves this process's malloc: a test that expects a
 * clean exit must not pass because glibc ran it. */
static inline void require_hakmem(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hak_is_active");
  if (!active || !active()) {
    fprintf(stderr, "security test: hakmem is not this process's malloc (preload missing?)\n");
    exit(3);
  }
}

/* require_hakmem() for a program that tests no hakmem feature (a correct
 * malloc user: benign, benign_cxx, null_returns), so that it can run on a peer
 * allocator too: when HAKMEM_SECURITY_PEER names a library (peer.sh sets it to
 * the one it preloads, e.g. scudo), that library must serve malloc instead;
 * else hakmem must (require_hakmem). Exit 3 when not. */
static inline int under_peer(void) {
  const char *peer = getenv("HAKMEM_SECURITY_PEER");
  return peer && *peer;
}
static inline void require_allocator(void) {
  if (!under_peer()) {
    require_hakmem();
    return;
  }
  const char *peer = getenv("HAKMEM_SECURITY_PEER");
  void *lib = dlopen(peer, RTLD_NOW | RTLD_NOLOAD);  /* only if already loaded */
  void *fn = dlsym(RTLD_DEFAULT, "malloc");
  if (!lib || !fn || dlsym(lib, "malloc") != fn) {
    fprintf(stderr, "security test: the peer %s is not this process's malloc\n", peer);
    exit(3);
  }
}

/* Reached only when the allocator let the attack through. */
static inline int not_caught(const char *what) {
  fprintf(stderr, "security test: NOT CAUGHT: %s\n", what);
  return 1;
}

/* Every attack program says where a SIGSEGV hit: "caught" by a guard means a
 * fault in a PROT_NONE mapping ("---p" in /proc/self/maps) or on a page with
 * a guard marker (/proc/self/pagemap), never an
 * arbitrary crash (attack.sh's segv expectation wants the guard line). The
 * handler reads the maps with raw syscalls, prints one line, then lets the
 * fault happen again with the default action. */
static void sec_put(const char *s) { ssize_t r = write(2, s, strlen(s)); (void)r; }
static void sec_put_hex(uintptr_t v) {
  char b[19] = "0x";
  int n = 2;
  for (int sh = 60; sh >= 0; sh -= 4)
    if ((v >> sh) || n > 2 || sh == 0) b[n++] = "0123456789abcdef"[(v >> sh) & 15];
  b[n] = 0;
  sec_put(b);
}
/* The permissions ("rw-p", "---p") of the mapping holding addr, from
 * /proc/self/maps read with raw calls (a signal handler uses it); "" when
 * no mapping holds it. */
static void sec_map_perms(uintptr_t addr, char perms[5]) {
  char buf[8192];
  memset(perms, 0, 5);
  int fd = open("/proc/self/maps", O_RDONLY);
  size_t have = 0;
  for (ssize_t r; fd >= 0 && (r = read(fd, buf + have, sizeof buf - 1 - have)) > 0;) {
    have += (size_t)r;
    buf[have] = 0;
    char *line = buf, *nl;
    while ((nl = strchr(line, '\n')) != NULL) {  /* "lo-hi perms ..." */
      uintptr_t lo = (uintptr_t)strtoull(line, NULL, 16), hi = (uintptr_t)strtoull(strchr(line, '-') + 1, NULL, 16);
      if (addr >= lo && addr < hi) { memcpy(perms, strchr(line, ' ') + 1, 4); break; }
      line = nl + 1;
    }
    if (perms[0]) break;
    have = strlen(line);
    memmove(buf, line, have);
  }
  if (fd >= 0) close(fd);
}
/* Whether the page holding addr carries a guard marker (MADV_GUARD_INSTALL:
 * the mapping stays open, the page faults): bit 58 of its /proc/self/pagemap
 * entry (Linux 6.14 on). */
static int sec_guard_marker(uintptr_t addr) {
  uint64_t e = 0;
  int fd = open("/proc/self/pagemap", O_RDONLY);
  int ok = fd >= 0 && pread(fd, &e, sizeof e, (off_t)(addr / 4096) * (off_t)sizeof e) == (ssize_t)sizeof e;
  if (fd >= 0) close(fd);
  return ok && (e >> 58 & 1);
}
/* Whether the page at addr is a guard: PROT_NONE, or a guard marker. */
static inline int sec_is_guard(uintptr_t addr) {
  char perms[5];
  sec_map_perms(addr, perms);
  return strcmp(perms, "---p") == 0 || (perms[0] && sec_guard_marker(addr));
}
static void sec_segv(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  uintptr_t addr = (uintptr_t)si->si_addr;
  char perms[5];
  sec_map_perms(addr, perms);
  sec_put("security test: SIGSEGV at ");
  sec_put_hex(addr);
  if (strcmp(perms, "---p") == 0) sec_put(" in a guard (PROT_NONE mapping)\n");
  else if (perms[0] && sec_guard_marker(addr)) sec_put(" in a guard (guard marker)\n");
  else if (perms[0]) { sec_put(" in a mapping with permissions "); sec_put(perms); sec_put(" (not a guard)\n"); }
  else sec_put(" in no mapping (not a guard)\n");
  signal(sig, SIG_DFL);  /* the faulting access runs again and kills us */
}
__attribute__((constructor)) static void sec_segv_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = sec_segv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
}

#endif
