// test_cxx — every C++ operator new/delete form, over-aligned types, failure
// behaviour (nullptr / std::bad_alloc / new_handler), and STL churn with
// verified contents. Built linked to libhakmem.so (test_cxx) and plain
// (test_cxx_plain, run under LD_PRELOAD by preload_programs.sh).
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "check.h"
#ifndef HK_TEST_PLAIN
#include "hakmem.h"
#endif

static volatile size_t v_huge = SIZE_MAX / 2;
static volatile size_t v_size_max = SIZE_MAX;
static volatile size_t v_ptrdiff_max1 = (size_t)PTRDIFF_MAX + 1;

static bool hakmem_expected() {
#ifdef HK_TEST_PLAIN
  return hk_plain_expect_active();
#else
  return 1;
#endif
}

static void owned(const void *p, const char *what) {
#ifndef HK_TEST_PLAIN
  CHECKF(hak_owns(p) == 1, "%s: %p not from hakmem", what, p);
#else
  (void)p, (void)what;
#endif
}

// ---- every operator resolves to libhakmem ----
static void test_symbols() {
  static const char *const syms[] = {
      "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
      "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZdlPvRKSt9nothrow_t",
      "_ZdaPvRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
      "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
      "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t",
      "_ZdaPvmSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
      "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
  if (!hakmem_expected()) {
    fprintf(stderr, "note: hakmem not expected here; operator symbols not checked\n");
    return;
  }
  for (const char *s : syms) {
    void *f = dlsym(RTLD_DEFAULT, s);
    CHECKF(f != nullptr, "%s not found", s);
    if (!f) continue;
    Dl_info info;
    int ok = dladdr(f, &info);
    CHECKF(ok && info.dli_fname && std::strstr(info.dli_fname, "hakmem"),
           "%s resolves to %s, not libhakmem", s, ok && info.dli_fname ? info.dli_fname : "?");
  }
}

static void touch(void *p, size_t n, unsigned char v) {
  std::memset(p, v, n);
  unsigned char *c = static_cast<unsigned char *>(p);
  CHECK(c[0] == v && c[n - 1] == v);
}

// ---- explicit calls of every form ----
static void test_forms() {
  const size_t sizes[] = {1, 8, 16, 100, 1024, 5000, 40000, 300000, 3u << 20};
  for (size_t n : sizes) {
    void *p = ::operator new(n);
    owned(p, "new");
    CHECK(reinterpret_cast<uintptr_t>(p) % (n >= 16 ? 16 : 1) == 0);
    touch(p, n, 1);
    ::operator delete(p);

    p = ::operator new(n);
    touch(p, n, 2);
    ::operator delete(p, n);

    p = ::operator new[](n);
    owned(p, "new[]");
    touch(p, n, 3);
    ::operator delete[](p);

    p = ::operator new[](n);
    touch(p, n, 4);
    ::operator delete[](p, n);

    p = ::operator new(n, std::nothrow);
    CHECK(p != nullptr);
    owned(p, "new nothrow");
    touch(p, n, 5);
    ::operator delete(p, std::nothrow);

    p = ::operator new[](n, std::nothrow);
    CHECK(p != nullptr);
    touch(p, n, 6);
    ::operator delete[](p, std::nothrow);

    for (size_t al = 16; al <= (1u << 21); al *= 8) {
      std::align_val_t a{al};
      auto aligned = [&](void *q) { return reinterpret_cast<uintptr_t>(q) % al == 0; };
      p = ::operator new(n, a);
      CHECKF(aligned(p), "new(%zu, align %zu) = %p", n, al, p);
      owned(p, "aligned new");
      touch(p, n, 7);
      ::operator delete(p, a);

      p = ::operator new(n, a);
      CHECK(aligned(p));
      touch(p, n, 8);
      ::operator delete(p, n, a);

      p = ::operator new[](n, a);
      CHECK(aligned(p));
      touch(p, n, 9);
      ::operator delete[](p, a);

      p = ::operator new[](n, a);
      CHECK(aligned(p));
      touch(p, n, 10);
      ::operator delete[](p, n, a);

      p = ::operator new(n, a, std::nothrow);
      CHECK(p && aligned(p));
      if (p) touch(p, n, 11);
      ::operator delete(p, a, std::nothrow);

      p = ::operator new[](n, a, std::nothrow);
      CHECK(p && aligned(p));
      if (p) touch(p, n, 12);
      ::operator delete[](p, a, std::nothrow);
    }
  }
  // delete of nullptr in every form is a no-op
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  ::operator delete(nullptr, std::nothrow);
  ::operator delete(nullptr, std::align_val_t{64});
  ::operator delete[](nullptr, std::align_val_t{64});
  // new(0) returns a unique pointer
  void *z1 = ::operator new(0), *z2 = ::operator new(0);
  CHECK(z1 && z2 && z1 != z2);
  ::operator delete(z1);
  ::operator delete(z2);
}

struct alignas(64) A64 {
  char c[100];
};
struct alignas(4096) A4K {
  int v[3];
};

static void test_overaligned() {
  for (int r = 0; r < 200; r++) {
    A64 *a = new A64;
    CHECKF(reinterpret_cast<uintptr_t>(a) % 64 == 0, "new A64 = %p", (void *)a);
    std::memset(a->c, r, sizeof a->c);
    A64 *arr = new A64[7];
    CHECK(reinterpret_cast<uintptr_t>(arr) % 64 == 0);
    std::memset(arr, 1, sizeof(A64) * 7);
    A4K *b = new A4K;
    CHECKF(reinterpret_cast<uintptr_t>(b) % 4096 == 0, "new A4K = %p", (void *)b);
    b->v[0] = r;
    A4K *barr = new A4K[3];
    CHECK(reinterpret_cast<uintptr_t>(barr) % 4096 == 0);
    barr[2].v[2] = r;
    A4K *nb = new (std::nothrow) A4K;
    CHECK(nb && reinterpret_cast<uintptr_t>(nb) % 4096 == 0);
    auto up = std::make_unique<A4K>();
    CHECK(reinterpret_cast<uintptr_t>(up.get()) % 4096 == 0);
    std::vector<A64> v(r % 20 + 1);
    CHECK(reinterpret_cast<uintptr_t>(v.data()) % 64 == 0);
    CHECK(a->c[99] == (char)r && b->v[0] == r && barr[2].v[2] == r);
    delete a;
    delete[] arr;
    delete b;
    delete[] barr;
    delete nb;
  }
}

static int handler_calls;
static void one_shot_handler() {
  handler_calls++;
  std::set_new_handler(nullptr);  // next failure throws
}

static void test_failures() {
  const size_t huge[] = {v_huge, v_size_max, v_ptrdiff_max1, v_size_max - 4096};
  for (size_t n : huge) {
    CHECKF(::operator new(n, std::nothrow) == nullptr, "nothrow new(%zu)", n);
    CHECKF(::operator new[](n, std::nothrow) == nullptr, "nothrow new[](%zu)", n);
    bool threw = false;
    if (!hakmem_expected() && n > SIZE_MAX - 4096) continue; /* libstdc++'s aligned new
                                           rounds SIZE_MAX up to 0 and succeeds */
    CHECKF(::operator new(n, std::align_val_t{64}, std::nothrow) == nullptr, "nothrow new(%zu, 64)", n);
    CHECKF(::operator new[](n, std::align_val_t{4096}, std::nothrow) == nullptr, "nothrow new[](%zu, 4096)", n);
    try {
      void *p = ::operator new(n);
      ::operator delete(p);
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    CHECKF(threw, "new(%zu) did not throw bad_alloc", n);
    threw = false;
    try {
      void *p = ::operator new[](n, std::align_val_t{256});
      ::operator delete[](p, std::align_val_t{256});
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    CHECKF(threw, "aligned new[](%zu) did not throw bad_alloc", n);
  }
  bool threw = false;
  try {
    size_t cnt = v_huge / 4;
    int *p = new int[cnt];  // huge element count: bad_alloc (or bad_array_new_length)
    delete[] p;
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  // new_handler: called on failure, then (handler removed) bad_alloc
  handler_calls = 0;
  std::set_new_handler(one_shot_handler);
  threw = false;
  try {
    void *p = ::operator new(v_huge);
    ::operator delete(p);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  CHECKF(handler_calls == 1, "new_handler called %d times", handler_calls);
  std::set_new_handler(nullptr);
  // the heap still works
  std::string s(1000, 'x');
  CHECK(s.size() == 1000 && s[999] == 'x');
}

// ---- STL churn with verified contents ----
static std::string key_of(uint64_t k) { return "key-" + std::to_string(k * 2654435761u % 100000) + "-" + std::string(k % 40, 'k'); }
static std::vector<int> value_of(const std::string &k) {
  std::vector<int> v(k.size() % 37 + (k.size() > 30 ? 300 : 0));
  for (size_t i = 0; i < v.size(); i++) v[i] = (int)(k.size() * 31 + i * 7 + (unsigned char)k[4]);
  return v;
}

static void test_map_churn(int seed) {
  std::map<std::string, std::vector<int>> m;
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)seed;
  for (int op = 0; op < 60000; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::string k = key_of(x % 5000);
    if (x % 3 == 0)
      m.erase(k);
    else
      m[k] = value_of(k);
  }
  size_t bad = 0;
  for (auto &kv : m)
    if (kv.second != value_of(kv.first)) bad++;
  CHECKF(bad == 0, "%zu map entries with wrong vectors", bad);
  CHECK(!m.empty());
  std::unordered_map<std::string, std::string> um;
  for (int i = 0; i < 20000; i++) um[std::to_string(i)] = std::string(i % 300, (char)('a' + i % 26));
  for (int i = 0; i < 20000; i += 7) CHECK(um[std::to_string(i)] == std::string(i % 300, (char)('a' + i % 26)));
}

static void test_strings() {
  std::string s;
  for (int i = 0; i < 20000; i++) s += std::to_string(i) + ",";
  size_t pos = 0;
  bool okk = true;
  for (int i = 0; i < 20000 && okk; i++) {
    size_t c = s.find(',', pos);
    okk = c != std::string::npos && s.compare(pos, c - pos, std::to_string(i)) == 0;
    pos = c + 1;
  }
  CHECK(okk && pos == s.size());
  std::string big;
  for (int i = 0; i < 64; i++) big = big + std::string(1 << (i % 16), (char)('A' + i % 26));
  size_t expect = 0;
  for (int i = 0; i < 64; i++) expect += 1u << (i % 16);
  CHECK(big.size() == expect);
  CHECK(big[0] == 'A' && big.back() == (char)('A' + 63 % 26));
  std::vector<std::string> parts;
  for (int i = 0; i < 5000; i++) parts.push_back(std::string(i % 50 + 1, 'z') + std::to_string(i));
  std::string joined;
  for (auto &p : parts) joined += p;
  size_t total = 0;
  for (auto &p : parts) total += p.size();
  CHECK(joined.size() == total);
}

// ---- threads: objects created in one thread, destroyed in another ----
static void test_threads() {
  std::vector<std::shared_ptr<std::string>> made(4000);
  std::vector<std::thread> th;
  for (int t = 0; t < 4; t++)
    th.emplace_back([&made, t] {
      for (int i = t; i < 4000; i += 4) made[i] = std::make_shared<std::string>(std::string(i % 500 + 1, 'q') + std::to_string(i));
      test_map_churn(t + 1);
    });
  for (auto &t : th) t.join();
  th.clear();
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++)
    th.emplace_back([&made, &bad, t] {
      for (int i = (t + 1) % 4; i < 4000; i += 4) {  // others' objects
        if (*made[i] != std::string(i % 500 + 1, 'q') + std::to_string(i)) bad++;
        made[i].reset();
      }
    });
  for (auto &t : th) t.join();
  CHECK(bad.load() == 0);
  // exceptions allocate (__cxa_allocate_exception) and are freed on catch
  int caught = 0;
  for (int i = 0; i < 2000; i++) {
    try {
      throw std::runtime_error(std::string(i % 300, 'e'));
    } catch (const std::runtime_error &e) {
      caught += std::strlen(e.what()) == (size_t)(i % 300);
    }
  }
  CHECK(caught == 2000);
}

int main() {
#ifdef HK_TEST_PLAIN
  if (hk_plain_expect_active()) CHECK(hk_plain_active() == 1);
#else
  CHECK(hak_is_active() == 1);
#endif
  test_symbols();
  test_forms();
  test_overaligned();
  test_failures();
  test_map_churn(0);
  test_strings();
  test_threads();
#ifdef HK_TEST_PLAIN
  return check_done("test_cxx_plain");
#else
  return check_done("test_cxx");
#endif
}
