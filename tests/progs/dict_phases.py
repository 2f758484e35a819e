# dict_phases.py: six phases that each build a dict of 150,000 byte strings
# of 1 to 3,000 bytes and keep a tenth of them (about 380 MB at its peak,
# pymalloc on, as Python runs by default). Under HAKMEM_PROFILE=lowmem it
# died with SIGSEGV in about 1 run in 5 on 9d4dbd7: the purge of a cached
# superslab reached into its header (issue 17).
import random
random.seed(1)
keep = []
for phase in range(6):
    d = {}
    for i in range(150000):
        d[i] = ("x" * random.randint(1, 3000)).encode()
    keep.append(list(d.values())[::10])
    del d
print(sum(len(k) for k in keep))
