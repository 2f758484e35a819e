// Correct C++ use: new/delete, new[]/delete[] (with and without array
// cookies), sized delete with the right size, aligned new, nothrow, the
// standard containers, several threads. Must exit 0 with no "hakmem:"
// report in either build.
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include "common.h"

struct WithDtor {
  std::string s;
  WithDtor() : s("a string long enough to be on the heap, not inline") {}
  ~WithDtor() {}
};
struct alignas(64) Aligned64 { char c[64]; };
struct alignas(4096) Page { char c[4096]; };

static void work(int id) {
  std::map<int, std::string> m;
  std::unordered_map<std::string, std::vector<int>> u;
  for (int i = 0; i < 20000; i++) {
    m[i % 997] = std::string((size_t)(i % 300), 'x');
    u[std::to_string(i % 311)].push_back(i);
    if (i % 7 == 0) m.erase((i * 13) % 997);
  }
  for (int i = 0; i < 2000; i++) {
    size_t n = (size_t)(i * 37 % 50000) + 1;
    char *a = new char[n]; a[n - 1] = 1; delete[] a;
    WithDtor *w = new WithDtor[(size_t)i % 20 + 1]; delete[] w;  // cookie
    WithDtor *o = new WithDtor; delete o;
    Aligned64 *x = new Aligned64; delete x;
    Aligned64 *xa = new Aligned64[(size_t)i % 5 + 1]; delete[] xa;
    Page *pg = new Page; delete pg;
    void *raw = ::operator new(n); ::operator delete(raw, n);
    void *raw_a = ::operator new[](n); ::operator delete[](raw_a, n);
    void *al = ::operator new(n, std::align_val_t(128));
    ::operator delete(al, n, std::align_val_t(128));
    int *nt = new (std::nothrow) int[100]; delete[] nt;
    auto sp = std::make_shared<std::vector<long>>((size_t)i % 5000);
    auto up = std::make_unique<WithDtor>();
    (void)sp; (void)up; (void)id;
  }
}

int main() {
  require_allocator();
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; i++) ts.emplace_back(work, i);
  for (auto &t : ts) t.join();
  return 0;
}
