"""alloc_heavy.py — an allocation-heavy, deterministic Python workload.

Run by preload_programs.sh with and without LD_PRELOAD=libhakmem.so (and
PYTHONMALLOC=malloc, so that every object goes through malloc); the two
stdouts must be identical. Prints section digests, never addresses."""
import hashlib
import json
import random
import threading
import zlib
from collections import Counter, defaultdict, deque

rng = random.Random(20240601)
out = []


def digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


# 1. dicts of lists of strings, grown and shrunk
d = {}
for i in range(60000):
    k = "k%d" % rng.randrange(20000)
    if rng.random() < 0.25 and k in d:
        del d[k]
    else:
        d.setdefault(k, []).append("v" * rng.randrange(1, 200) + str(i))
out.append(("dict", len(d), digest(sorted((k, len(v), v[-1][-6:]) for k, v in d.items()))))

# 2. json round trips of nested structures
docs = []
for i in range(300):
    doc = {"id": i, "name": "doc-%05d" % i,
           "tags": [rng.choice("abcdefgh") * rng.randrange(1, 30) for _ in range(rng.randrange(1, 40))],
           "nested": {"x": [rng.random() for _ in range(50)], "y": {str(j): j * j for j in range(rng.randrange(100))}}}
    s = json.dumps(doc, sort_keys=True)
    back = json.loads(s)
    assert back == doc
    docs.append(s)
big = json.dumps(docs)
out.append(("json", len(big), hashlib.sha256(big.encode()).hexdigest()[:16]))

# 3. strings: concatenation, splitting, joins, replace, bytes
parts = []
for i in range(40000):
    parts.append(("%x" % (i * 2654435761 % 2**32)) * (1 + i % 7))
s = "|".join(parts)
s2 = s.replace("a", "AA").upper().lower()
words = s2.split("|")
out.append(("str", len(s), len(s2), len(words), hashlib.md5(s2.encode()).hexdigest()[:16]))
comp = zlib.compress(s2.encode() * 3, 6)
assert zlib.decompress(comp) == s2.encode() * 3
out.append(("zlib", len(comp) > 0))

# 4. lists, sorting, Counter, deque, sets
nums = [rng.randrange(10**9) for _ in range(200000)]
nums.sort()
c = Counter(n % 1000 for n in nums)
dq = deque(maxlen=5000)
for n in nums:
    dq.append(str(n))
st = set(x % 77777 for x in nums)
out.append(("list", nums[0], nums[-1], c.most_common(3), len(dq), len(st)))

# 5. object graphs: many small objects with cycles, dropped
class Node:
    __slots__ = ("val", "kids", "parent")

    def __init__(self, val, parent=None):
        self.val, self.kids, self.parent = val, [], parent


for rep in range(5):
    root = Node(0)
    frontier = [root]
    count = 1
    while count < 30000:
        n = frontier[rng.randrange(len(frontier))]
        k = Node(count, n)
        n.kids.append(k)
        frontier.append(k)
        count += 1
    total = 0
    stack = [root]
    while stack:
        n = stack.pop()
        total += n.val
        stack.extend(n.kids)
    out.append(("tree", rep, total))
    del root, frontier, stack

# 6. threads: each builds its own structures, results joined in order
results = [None] * 6


def work(t):
    r = random.Random(t)
    dd = defaultdict(list)
    for i in range(20000):
        dd[r.randrange(500)].append("t%d-%d" % (t, i))
    results[t] = digest(sorted((k, len(v), v[0]) for k, v in dd.items()))


ths = [threading.Thread(target=work, args=(t,)) for t in range(6)]
for th in ths:
    th.start()
for th in ths:
    th.join()
out.append(("threads", results))

for line in out:
    print(line)
print("digest", digest([list(map(str, o)) for o in out]))
