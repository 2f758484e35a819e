// hello.cc — a C++ program using hakmem.
//
// Build against an installed hakmem:
//   c++ hello.cc $(pkg-config --cflags --libs hakmem) -Wl,-rpath,$(pkg-config --variable=libdir hakmem)
// or see CMakeLists.txt (find_package) and Makefile (pkg-config) here.
//
// Linking libhakmem replaces operator new/delete (every form) as well as
// malloc. Exits 1 if anything is inconsistent.
#include <hakmem.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct alignas(64) Line {
  char bytes[64];
};

int main() {
  bool ok = true;
  const int active = hak_is_active();

  // operator new / delete, through the standard containers too
  auto n = std::make_unique<int>(42);
  std::vector<std::string> words;
  std::map<int, std::string> m;
  for (int i = 0; i < 10000; i++) {
    words.push_back("word number " + std::to_string(i));
    m[i % 997] = words.back();
  }
  auto *line = new Line[4];  // aligned new
  if (reinterpret_cast<std::uintptr_t>(line) % alignof(Line) != 0) ok = false;

  // hakmem's own API
  void *p = hak_malloc(100);
  if (!p || !hak_owns(p) || hak_usable_size(p) < 100) ok = false;

  std::printf("hakmem %s\n", hak_version());
  std::printf("hak_is_active=%d\n", active);
  std::printf("new'd object owned by hakmem: %d\n", hak_owns(n.get()));
  std::printf("%zu words, %zu map entries, last: %s\n", words.size(), m.size(),
              words.back().c_str());
  if (hak_owns(n.get()) != active || hak_owns(line) != active ||
      hak_owns(words.data()) != active)
    ok = false;

  hak_free(p);
  delete[] line;
  if (!ok) std::fprintf(stderr, "hello_cxx: inconsistent results\n");
  return ok ? 0 : 1;
}
