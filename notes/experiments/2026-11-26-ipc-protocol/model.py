"""The flag protocol of hpdl_mpi.h's IPC allreduce, run on random interleavings.

Each rank runs its calls one after another (stream order); the blocks of one
call run interleaved at random, with the ranks' progress interleaved at random
too. Memory is sequentially consistent here: what is checked is the protocol
(marks = call x 2^16 + step in 32-bit flags, compared "at least" modulo 2^32,
two staging halves, no closing meeting), not the GPU's memory ordering, which
the release/acquire pairs provide. Every read of a staging buffer must see data
of the same call; a schedule that stops moving is a deadlock.

Calls mix the two kernels and change the grid size:
  one-shot  push: each step of a block's part goes into this rank's slot of
            every peer's staging buffer; step s is pushed, step s-1 summed
            (after waiting for the peers' mark of s-1), then s signalled;
  two-shot  pull: copy into one's own staging buffer, meet, reduce-scatter
            (the reduced segment written back there), meet, all-gather.
The one-shot slots and the two-shot copy share the same staging memory, as in
hpdl_mpi.h. Call numbers start just below 2^16, so the marks wrap round
2^32 during every run.

    python3 model.py      # ok: ... then each mutation caught (about 20 s)
Mutations it must catch: one staging buffer instead of two, "== mark" instead
of "at least", the same mark for every step of a call, signalling a step
before pushing it.
"""
import random

SLOT = 16          # packs of a one-shot slot (at least any call's packs)
STEP = 2           # packs a block pushes per step
SEQ0 = (1 << 16) - 12   # first call's number: marks wrap round 2^32 mid-run
MASK = (1 << 32) - 1


class Deadlock(Exception):
    pass


def split(n, k, p):  # hpdl__ipc_split
    return k*(n//p) + min(k, n % p)


def mark(seq, step, mut):
    return ((seq << 16) + (0 if mut == 'one_mark' else step)) & MASK


def reached(flag, want, mut):  # (int32_t)(flag - want) >= 0, or == under mutation
    if mut == 'equal':
        return flag == want
    d = (flag - want) & MASK
    return d < (1 << 31)


def run(seed, P=2, calls=30, maxblocks=4, mut=None):
    rnd = random.Random(seed)
    packs = [rnd.choice([1, 3, 5, 8, 13]) for _ in range(calls)]
    twoshot = [rnd.random() < 0.5 for _ in range(calls)]
    staging = [[[None]*(SLOT*P) for _ in range(2)] for _ in range(P)]  # [rank][parity][pack]
    # flags hold the previous call's mark, as after a long run
    flags = [[[[mark(SEQ0 - 1, 0, mut)]*P for _ in range(maxblocks)] for _ in range(2)] for _ in range(P)]

    def parity(seq):
        return 0 if mut == 'one_buffer' else seq & 1

    def slot(to, frm):  # hpdl__ipc_slot
        return (frm if frm < to else frm - 1) * SLOT

    def signal(r, phase, b, m):
        for j in range(P):
            if j != r:
                flags[j][phase][b][r] = m
                yield

    def wait(r, phase, b, m):
        for j in range(P):
            while j != r and not reached(flags[r][phase][b][j], m, mut):
                yield 'wait'

    def oneshot(r, k, seq, beg, end, b):
        par = parity(seq)
        bases = list(range(beg, end, STEP))

        def add(t):
            yield from wait(r, 0, b, mark(seq, t, mut))
            for u in range(bases[t], min(bases[t] + STEP, end)):
                for j in range(P):
                    if j != r:
                        v = staging[r][par][slot(r, j) + u]
                        assert v == (k, j, 'in'), (seed, '1s', k, r, b, u, j, v)
                        yield
        for s, base in enumerate(bases):
            if mut == 'signal_first':
                yield from signal(r, 0, b, mark(seq, s, mut))
            for u in range(base, min(base + STEP, end)):
                for j in range(P):
                    if j != r:
                        staging[j][par][slot(j, r) + u] = (k, r, 'in')
                        yield
            if s > 0:
                yield from add(s - 1)
            if mut != 'signal_first':
                yield from signal(r, 0, b, mark(seq, s, mut))
        if bases:
            yield from add(len(bases) - 1)

    def twoshot_block(r, k, seq, beg, end, b):
        par = parity(seq)
        m = mark(seq, 0, mut)
        for u in range(beg, end):
            staging[r][par][u] = (k, r, 'in')
            yield
        yield from signal(r, 0, b, m)
        yield from wait(r, 0, b, m)
        ln = end - beg
        s0, s1 = beg + split(ln, r, P), beg + split(ln, r+1, P)
        for u in range(s0, s1):
            for j in range(P):
                v = staging[j][par][u]
                assert v == (k, j, 'in'), (seed, 'rs', k, r, b, u, j, v)
                yield
            staging[r][par][u] = (k, r, 'red')
            yield
        yield from signal(r, 1, b, m)
        yield from wait(r, 1, b, m)
        for j in range(P):
            if j == r:
                continue
            for u in range(beg + split(ln, j, P), beg + split(ln, j+1, P)):
                v = staging[j][par][u]
                assert v == (k, j, 'red'), (seed, 'ag', k, r, b, u, j, v)
                yield

    def block(r, k, b, nb):
        seq = (SEQ0 + k) & 0xFFFF  # what (a.seq << 16) keeps of the call number
        n = packs[k]
        beg, end = split(n, b, nb), split(n, b+1, nb)
        kernel = twoshot_block if twoshot[k] else oneshot
        yield from kernel(r, k, seq, beg, end, b)

    cur = [0]*P
    live = [[] for _ in range(P)]

    def launch(r):
        k = cur[r]
        nb = min(maxblocks, packs[k])
        live[r] = [block(r, k, b, nb) for b in range(nb)]
    for r in range(P):
        launch(r)
    steps = 0
    while any(cur[r] < calls for r in range(P)):
        steps += 1
        if steps > 10**6:
            raise Deadlock(seed)
        r = rnd.randrange(P)
        if cur[r] >= calls:
            continue
        if not live[r]:
            cur[r] += 1
            if cur[r] < calls:
                launch(r)
            continue
        g = rnd.choice(live[r])
        try:
            next(g)
        except StopIteration:
            live[r].remove(g)


def ranks(seed):
    return random.Random(seed).choice([2, 3, 4])


for seed in range(3000):
    run(seed, P=ranks(seed))
print('ok: 3000 random schedules, 2-4 ranks, one-shot (push, pipelined) and two-shot mixed, varying grids, '
      'marks wrapping round 2^32')
for mut in ['one_buffer', 'equal', 'one_mark', 'signal_first']:
    for seed in range(3000):
        try:
            run(seed, P=ranks(seed), mut=mut)
        except (AssertionError, Deadlock) as e:
            print('mutation %-12s caught at seed %d (%s)' % (mut, seed, type(e).__name__))
            break
    else:
        raise SystemExit('mutation %s NOT caught' % mut)
