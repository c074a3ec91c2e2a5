"""The flag protocol of hpdl_mpi.h's IPC allreduce, run on random interleavings.

Each rank runs its calls one after another (stream order); the blocks of one
call run interleaved at random, with the ranks' progress interleaved at random
too. Memory is sequentially consistent here: what is checked is the protocol
(call numbers in flags, two staging halves, no closing meeting), not the GPU's
memory ordering, which the release/acquire pairs provide. Every read of a
staging buffer must see data of the same call; a schedule that stops moving is
a deadlock. Calls mix one-shot and two-shot and change the grid size.

    python3 model.py      # ok: ... (a few seconds)
Mutations it catches: one staging buffer instead of two (a read sees the next
call's data), waiting for "== seq" instead of ">= seq" (deadlock).
"""
import random
def split(n, k, p):  # hpdl__ipc_split
    return k*(n//p) + min(k, n % p)

def run(seed, P=2, calls=30, maxblocks=4):
    rnd = random.Random(seed)
    packs = [rnd.choice([1, 3, 5, 8, 13]) for _ in range(calls)]
    twoshot = [rnd.random() < 0.5 for _ in range(calls)]
    staging = [[[None]*16 for _ in range(2)] for _ in range(P)]     # [rank][parity][pack] = (call, rank, kind)
    flags = [[[[0]*P for _ in range(maxblocks)] for _ in range(2)] for _ in range(P)]  # [owner][phase][block][from]
    # per rank: current call index, and per block a program counter (generator)
    def block(r, k, b, nb):
        seq = k + 1; par = seq & 1; n = packs[k]
        beg, end = split(n, b, nb), split(n, b+1, nb)
        for u in range(beg, end):
            staging[r][par][u] = (k, r, 'in'); yield
        for j in range(P):
            if j != r: flags[j][0][b][r] = seq; yield
        for j in range(P):
            while flags[r][0][b][j] < seq and j != r: yield 'wait'
        if not twoshot[k]:
            for u in range(beg, end):
                for j in range(P):
                    v = staging[j][par][u]; assert v == (k, j, 'in'), (seed, k, r, b, u, j, v); yield
            return
        ln = end - beg
        s0, s1 = beg + split(ln, r, P), beg + split(ln, r+1, P)
        for u in range(s0, s1):
            for j in range(P):
                v = staging[j][par][u]; assert v == (k, j, 'in'), (seed, 'rs', k, r, b, u, j, v); yield
            staging[r][par][u] = (k, r, 'red'); yield
        for j in range(P):
            if j != r: flags[j][1][b][r] = seq; yield
        for j in range(P):
            while flags[r][1][b][j] < seq and j != r: yield 'wait'
        for j in range(P):
            if j == r: continue
            for u in range(beg + split(ln, j, P), beg + split(ln, j+1, P)):
                v = staging[j][par][u]; assert v == (k, j, 'red'), (seed, 'ag', k, r, b, u, j, v); yield
    cur = [0]*P; live = [[] for _ in range(P)]
    def launch(r):
        k = cur[r]; nb = min(maxblocks, packs[k])
        live[r] = [block(r, k, b, nb) for b in range(nb)]
    for r in range(P): launch(r)
    steps = 0
    while any(cur[r] < calls for r in range(P)):
        steps += 1
        if steps > 10**6: raise SystemExit('deadlock %d' % seed)
        r = rnd.randrange(P)
        if cur[r] >= calls: continue
        if not live[r]:
            cur[r] += 1
            if cur[r] < calls: launch(r)
            continue
        g = rnd.choice(live[r])
        try: next(g)
        except StopIteration: live[r].remove(g)
for seed in range(3000):
    run(seed, P=random.Random(seed).choice([2, 3, 4]))
print('ok: 3000 random schedules, 2-4 ranks, one-shot and two-shot mixed, varying grids')
