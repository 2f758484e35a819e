/* The memory budget's cgroup reader (hk_mem_read_cgroup, hidden: linked
 * statically) on fake cgroup trees written to a temporary directory: v2's
 * memory.max and memory.high, v1's limit_in_bytes and soft_limit_in_bytes,
 * "max" and v1's unlimited, the smallest limit of a cgroup and its
 * ancestors, a cgroup namespace (the path not under the root), a hybrid
 * system (the "0::" line without a v2 memory controller; a v1 memory line
 * read first, v2 after it when v1 has no file), no limit at all;
 * the cgroup whose limit binds and its usage less inactive file pages
 * (hk_mem_read_cgroup_group, hk_mem_read_group_usage). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "backend/mem_limit.h"

static char top[256];

/* creates dirs along top/rel and writes text into top/rel */
static void put(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", top, rel);
  for (char *s = path + strlen(top) + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = 0;
    mkdir(path, 0700);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  CHECK_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static int case_no;
/* a fresh tree for each case: top/N */
static void fresh(void) {
  static char base[200];
  if (!base[0]) {
    snprintf(base, sizeof base, "%s/hakmem-cgroup.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK_FATAL(mkdtemp(base));
  }
  snprintf(top, sizeof top, "%s/%d", base, ++case_no);
  mkdir(top, 0700);
}

static unsigned read_tree(size_t *hard, size_t *soft) {
  char proc[512], root[512];
  snprintf(proc, sizeof proc, "%s/proc_self_cgroup", top);
  snprintf(root, sizeof root, "%s/sys", top);
  return hk_mem_read_cgroup(proc, root, hard, soft);
}

/* the same, and the folder of the cgroup whose limit binds */
static unsigned read_tree_group(size_t *hard, size_t *soft, char *group, size_t size) {
  char proc[512], root[512];
  snprintf(proc, sizeof proc, "%s/proc_self_cgroup", top);
  snprintf(root, sizeof root, "%s/sys", top);
  return hk_mem_read_cgroup_group(proc, root, hard, soft, group, size);
}

#define EXPECT(src_, hard_, soft_)                                                              \
  do {                                                                                          \
    size_t h_, s_;                                                                              \
    unsigned r_ = read_tree(&h_, &s_);                                                          \
    CHECKF(r_ == (src_) && h_ == (size_t)(hard_) && s_ == (size_t)(soft_),                      \
           "case %d: source %u hard %zu soft %zu, expected %u %zu %zu", case_no, r_, h_, s_,    \
           (unsigned)(src_), (size_t)(hard_), (size_t)(soft_));                                 \
  } while (0)

int main(void) {
  /* v2: max and high of the leaf */
  fresh();
  put("proc_self_cgroup", "0::/app/web\n");
  put("sys/app/web/memory.max", "536870912\n");
  put("sys/app/web/memory.high", "402653184\n");
  EXPECT(HK_MEM_SRC_CGROUP2, 536870912, 402653184);

  /* v2: "max" in the leaf, a limit on the parent binds */
  fresh();
  put("proc_self_cgroup", "0::/app/web\n");
  put("sys/app/web/memory.max", "max\n");
  put("sys/app/web/memory.high", "max\n");
  put("sys/app/memory.max", "268435456\n");
  put("sys/app/memory.high", "max\n");
  EXPECT(HK_MEM_SRC_CGROUP2, 268435456, 0);

  /* v2: every level "max": no limit */
  fresh();
  put("proc_self_cgroup", "0::/app\n");
  put("sys/app/memory.max", "max\n");
  put("sys/app/memory.high", "max\n");
  EXPECT(HK_MEM_SRC_NONE, 0, 0);

  /* v2 in a cgroup namespace: the path is not under the root, whose own
   * files are the cgroup's */
  fresh();
  put("proc_self_cgroup", "0::/../../kubepods/pod1\n");
  put("sys/memory.max", "1073741824\n");
  put("sys/memory.high", "805306368\n");
  EXPECT(HK_MEM_SRC_CGROUP2, 1073741824, 805306368);

  /* v1 (this machine's kind): the memory controller's line among others */
  fresh();
  put("proc_self_cgroup", "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n");
  put("sys/memory/process_api/abc/memory.limit_in_bytes", "134217728\n");
  put("sys/memory/process_api/abc/memory.soft_limit_in_bytes", "100663296\n");
  put("sys/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT(HK_MEM_SRC_CGROUP1, 134217728, 100663296);

  /* v1: a controller list ("cpu,memory"), unlimited leaf, limited parent */
  fresh();
  put("proc_self_cgroup", "3:cpu,memory:/a/b\n");
  put("sys/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/a/b/memory.soft_limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/a/memory.limit_in_bytes", "201326592\n");
  EXPECT(HK_MEM_SRC_CGROUP1, 201326592, 0);

  /* v1 unlimited everywhere: none */
  fresh();
  put("proc_self_cgroup", "4:memory:/x\n0::/\n");
  put("sys/memory/x/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT(HK_MEM_SRC_NONE, 0, 0);

  /* a v1 line naming memory: v1 is read first (the controller is bound to
   * one hierarchy; v2's files are not probed), so a stray v2 file at the
   * root does not count */
  fresh();
  put("proc_self_cgroup", "4:memory:/job\n0::/\n");
  put("sys/memory.max", "1048576\n");
  put("sys/memory/job/memory.limit_in_bytes", "314572800\n");
  EXPECT(HK_MEM_SRC_CGROUP1, 314572800, 0);

  /* ...and where v1 has no limit file, v2 is still read */
  fresh();
  put("proc_self_cgroup", "4:memory:/job\n0::/svc\n");
  put("sys/svc/memory.max", "419430400\n");
  put("sys/svc/memory.high", "max\n");
  EXPECT(HK_MEM_SRC_CGROUP2, 419430400, 0);

  /* a value without its newline is read to the end of the file */
  fresh();
  put("proc_self_cgroup", "0::/app\n");
  put("sys/app/memory.max", "536870912");
  put("sys/app/memory.high", "max");
  EXPECT(HK_MEM_SRC_CGROUP2, 536870912, 0);

  /* "memoryx" is not "memory" */
  fresh();
  put("proc_self_cgroup", "4:memoryx:/x\n");
  put("sys/memory/x/memory.limit_in_bytes", "1048576\n");
  EXPECT(HK_MEM_SRC_NONE, 0, 0);

  /* no /proc file */
  fresh();
  EXPECT(HK_MEM_SRC_NONE, 0, 0);

  /* the cgroup whose limit binds, and its usage less inactive file pages:
   * v2, the parent's limit is the smaller one */
  fresh();
  put("proc_self_cgroup", "0::/app/web\n");
  put("sys/app/web/memory.max", "536870912\n");
  put("sys/app/web/memory.high", "max\n");
  put("sys/app/memory.max", "268435456\n");
  put("sys/app/memory.high", "max\n");
  put("sys/app/memory.current", "209715200\n");
  put("sys/app/memory.stat", "anon 100000000\nfile 90000000\nactive_file 10485760\ninactive_file 52428800\n");
  put("sys/app/web/memory.current", "1048576\n");
  {
    char group[768];
    size_t h, so;
    unsigned src = read_tree_group(&h, &so, group, sizeof group);
    CHECKF(src == HK_MEM_SRC_CGROUP2 && h == 268435456, "group v2: source %u hard %zu", src, h);
    CHECKF(strstr(group, "/sys/app/") && !strstr(group, "web"), "group v2: the binding cgroup is %.200s", group);
    size_t u = hk_mem_read_group_usage(group, src);
    CHECKF(u == 209715200 - 52428800, "group v2: usage %zu, expected %d", u, 209715200 - 52428800);
    CHECKF(hk_mem_read_group_usage(group, HK_MEM_SRC_KNOB) == 0, "a knob's limit has no group usage");
  }

  /* v1: the leaf binds; total_inactive_file, not inactive_file, counts */
  fresh();
  put("proc_self_cgroup", "4:memory:/jobs/a\n0::/\n");
  put("sys/memory/jobs/a/memory.limit_in_bytes", "134217728\n");
  put("sys/memory/jobs/a/memory.soft_limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/jobs/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/memory/jobs/a/memory.usage_in_bytes", "104857600\n");
  put("sys/memory/jobs/a/memory.stat", "cache 20971520\ninactive_file 1048576\ntotal_inactive_file 4194304\n");
  {
    char group[768];
    size_t h, so;
    unsigned src = read_tree_group(&h, &so, group, sizeof group);
    CHECKF(src == HK_MEM_SRC_CGROUP1 && h == 134217728, "group v1: source %u hard %zu", src, h);
    CHECKF(strstr(group, "/jobs/a/") != NULL, "group v1: the binding cgroup is %.200s", group);
    size_t u = hk_mem_read_group_usage(group, src);
    CHECKF(u == 104857600 - 4194304, "group v1: usage %zu, expected %d", u, 104857600 - 4194304);
  }

  /* a usage file missing: 0, the process's own resident set is used */
  fresh();
  put("proc_self_cgroup", "0::/x\n");
  put("sys/x/memory.max", "1048576000\n");
  {
    char group[768];
    size_t h, so;
    unsigned src = read_tree_group(&h, &so, group, sizeof group);
    CHECKF(hk_mem_read_group_usage(group, src) == 0, "no memory.current: usage 0");
  }

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strrchr(top, '/') - top), top);
  if (system(cmd) != 0) fprintf(stderr, "could not remove the fake trees\n");
  return check_done("test_memlimit_cgroup");
}
