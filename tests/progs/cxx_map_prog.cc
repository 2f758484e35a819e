// cxx_map_prog — a deterministic C++ program built on std::map and strings,
// run with and without LD_PRELOAD=libhakmem.so by preload_programs.sh; the two
// stdouts must be identical. Not linked to hakmem.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

static uint64_t rng(uint64_t &s) {
  s ^= s << 13, s ^= s >> 7, s ^= s << 17;
  return s;
}

static std::string word(uint64_t &s) {
  static const char *syl[] = {"ka", "mo", "ri", "ten", "su", "ha", "ku", "me", "no", "shi", "ro", "a"};
  std::string w;
  int n = 1 + rng(s) % 4;
  for (int i = 0; i < n; i++) w += syl[rng(s) % 12];
  return w;
}

// each thread counts words of its own text; results merged in a fixed order
static std::map<std::string, long> count_part(int part) {
  uint64_t s = 0x1234567ull + part * 7919;
  std::ostringstream text;
  for (int i = 0; i < 60000; i++) text << word(s) << (i % 17 ? ' ' : '\n');
  std::map<std::string, long> m;
  std::istringstream in(text.str());
  std::string w;
  while (in >> w) m[w]++;
  return m;
}

int main() {
  const int parts = 4;
  std::vector<std::map<std::string, long>> res(parts);
  std::vector<std::thread> th;
  for (int p = 0; p < parts; p++) th.emplace_back([&res, p] { res[p] = count_part(p); });
  for (auto &t : th) t.join();
  std::map<std::string, long> total;
  for (auto &m : res)
    for (auto &kv : m) total[kv.first] += kv.second;

  std::vector<std::pair<long, std::string>> byfreq;
  for (auto &kv : total) byfreq.emplace_back(-kv.second, kv.first);
  std::sort(byfreq.begin(), byfreq.end());
  std::printf("distinct words: %zu\n", total.size());
  for (size_t i = 0; i < 25 && i < byfreq.size(); i++)
    std::printf("%-16s %ld\n", byfreq[i].second.c_str(), -byfreq[i].first);

  // string building and a map of vectors
  std::map<std::string, std::vector<std::string>> by_first;
  for (auto &kv : total) by_first[kv.first.substr(0, 2)].push_back(kv.first);
  std::string summary;
  for (auto &kv : by_first) {
    std::string longest = *std::max_element(kv.second.begin(), kv.second.end(),
        [](const std::string &a, const std::string &b) { return a.size() < b.size() || (a.size() == b.size() && a > b); });
    summary += kv.first + ":" + std::to_string(kv.second.size()) + ":" + longest + ";";
  }
  std::printf("groups: %s\n", summary.c_str());
  uint64_t h = 1469598103934665603ull;
  for (auto &kv : total) {
    for (char c : kv.first) h = (h ^ (unsigned char)c) * 1099511628211ull;
    h = (h ^ (uint64_t)kv.second) * 1099511628211ull;
  }
  std::printf("digest: %016llx\n", (unsigned long long)h);
  return 0;
}
