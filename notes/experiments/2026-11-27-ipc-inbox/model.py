"""The inbox protocol of hpdl_mpi.h's IPC allreduce, run on random interleavings.

P = 2..4 ranks make the same calls seq = 1, 2, ..., each rank one after another
(stream order). A call, with its own grid (blocks, threads, packs), is
  one-shot  no flags; each rank has two inboxes (seq & 1) of P-1 slots, one per
            peer, a word EMPTY until a pack lands. Thread t, step s of its
            packs: push step s into slot r of every peer's inbox, then take
            step s-1 from its own (each peer in rank order: wait until not
            EMPTY, read, write EMPTY back); after its last step, take that.
  two-shot  copy the part into own staging[seq & 1], meet (phase 0), reduce own
            segment from every rank's staging into own staging, meet (phase 1),
            gather the peers' segments. meet: write mark seq into flag
            [phase][block][me] of every peer, then wait until each peer's flag
            here equals it.
A one-shot thread is one actor, a two-shot block one (its threads are in step
at each meeting). Memory is sequentially consistent, an action is one pack or
flag access: checked is the protocol, not the GPU memory ordering under it.
seq starts at 2^32 - 8 (marks wrap mid-run), flags at the previous call's mark,
inboxes EMPTY. Data is tagged (call, sender, pack). Checks: take (the pack is
this call's, that peer's, that index), push (lands on an EMPTY word, else an
untaken pack is lost), staging (two-shot reads see this call's data), deadlock
(nothing can move), end (every inbox word EMPTY after the last call).

Mutations to catch: 1 one inbox for all one-shot calls; 2 take does not write
EMPTY back; 3 no stream order (a rank's next kernel may start while its last
one runs, as programmatic dependent launch would without its wait); 4 "at
least the mark", (int32)(flag - seq) >= 0, instead of "equal", which the
flagged one-shot needed. No wait ever sees a flag ahead of its mark: a peer
writes flag [0][b] of its next two-shot call after its kernel of this call
ended, so after its block b met ours in phase 1, which ours enters after its
phase 0 wait; flag [1][b] after our block b signalled phase 0 of that call,
so after our kernel of this call ended. One-shot calls in between only
lengthen these chains. So "at least" is caught only by its cost: a flag not
written for 2^31 calls or more (no two-shot call with block b that long, as
on two ranks, where the automatic choice is one-shot) reads as ahead of the
new mark, and the wait passes before the peer has published. The mutation
runs start with flags 2^31 calls stale; the protocol passes from there too.

    python3 model.py    # two ok lines, then one line a mutation (about 30 s)
"""
import random
import time

U = 2                   # packs of a one-shot thread's step (HPDL__IPC_UNROLL)
SLOT = 16               # packs of a peer's inbox slot: at least any call's packs
MAXB = 3                # most blocks of a call, and most threads of a block
CALLS = 16              # calls a run
RUNS = 2000
SEQ0 = (1 << 32) - 8    # first call's number: marks wrap round 2^32 mid-run
MASK = (1 << 32) - 1
EMPTY = None            # no pack landed here; pushed data is never EMPTY


class Fail(Exception):  # a check failed; args[0] names it
    pass


def split(n, k, p):  # hpdl__ipc_split: where part k of n things in p parts begins
    return k * (n // p) + min(k, n % p)


def reached(flag, mark, mut):  # flag == mark, or (int32_t)(flag - mark) >= 0 under mutation 4
    return (flag - mark) & MASK < 1 << 31 if mut == 'at_least' else flag == mark


def run(seed, mut=None, flag0=-1):
    """One random schedule of CALLS calls; raises Fail when a check fails."""
    rnd = random.Random(seed)
    P = rnd.choice([2, 3, 4])
    calls = [(rnd.random() < 0.5, rnd.randint(1, SLOT), rnd.randint(1, MAXB), rnd.randint(1, MAXB))
             for _ in range(CALLS)]  # (two-shot?, packs, blocks, threads a block)
    inbox = [[[EMPTY] * (SLOT * (P - 1)) for _ in range(2)] for _ in range(P)]  # [rank][seq & 1][word]
    staging = [[['old'] * SLOT for _ in range(2)] for _ in range(P)]            # [rank][seq & 1][pack]
    flags = [[[[(SEQ0 + flag0) & MASK] * P for _ in range(MAXB)] for _ in range(2)]
             for _ in range(P)]                                   # [rank][phase][block][from]
    peers = [[j for j in range(P) if j != r] for r in range(P)]

    def words(to, frm, u, end, T):  # (word, pack): step from pack u, frm's slot in to's inbox
        at = (frm if frm < to else frm - 1) * SLOT
        return [(at + v, v) for v in range(u, min(end, u + U * T), T)]

    def push(r, k, box, u, end, T):
        for j in peers[r]:
            for w, v in words(j, r, u, end, T):
                if inbox[j][box][w] is not EMPTY:
                    raise Fail('push')
                inbox[j][box][w] = (k, r, v)
                yield

    def take(r, k, box, u, end, T):
        mine = inbox[r][box]
        for j in peers[r]:
            for w, v in words(r, j, u, end, T):
                while mine[w] is EMPTY:
                    yield 'wait'
                if mine[w] != (k, j, v):
                    raise Fail('take')
                yield
                if mut != 'no_empty':
                    mine[w] = EMPTY
                    yield

    def oneshot(r, k, seq, beg, end, t, T):
        box = 0 if mut == 'one_inbox' else seq & 1
        starts = list(range(beg + t, end, U * T))
        for s, u in enumerate(starts):  # push step s, then take step s-1
            yield from push(r, k, box, u, end, T)
            if s:
                yield from take(r, k, box, starts[s - 1], end, T)
        if starts:
            yield from take(r, k, box, starts[-1], end, T)

    def meet(r, phase, b, seq):
        for j in peers[r]:
            flags[j][phase][b][r] = seq
            yield
        for j in peers[r]:
            while not reached(flags[r][phase][b][j], seq, mut):
                yield 'wait'
            yield

    def load(j, par, u, want):  # a two-shot read of rank j's staging buffer
        if staging[j][par][u] != want:
            raise Fail('staging')
        yield

    def twoshot(r, k, seq, b, beg, end):
        def seg(j):  # segment j of the block's part
            return range(beg + split(end - beg, j, P), beg + split(end - beg, j + 1, P))
        par = seq & 1
        for u in range(beg, end):
            staging[r][par][u] = (k, r, 'copy')
            yield
        yield from meet(r, 0, b, seq)
        for u in seg(r):  # reduce-scatter
            for j in range(P):
                yield from load(j, par, u, (k, j, 'copy'))
            staging[r][par][u] = (k, r, 'sum')
            yield
        yield from meet(r, 1, b, seq)
        for j in peers[r]:  # all-gather
            for u in seg(j):
                yield from load(j, par, u, (k, j, 'sum'))

    cur = [0] * P                  # each rank's next call
    live = [[] for _ in range(P)]  # each rank's running actors: (call, generator)

    def may_launch(r):  # under 'no_order' the previous call may still be running
        if mut == 'no_order':
            return cur[r] < CALLS and all(k == cur[r] - 1 for k, _ in live[r])
        return cur[r] < CALLS and not live[r]

    def launch(r):
        k, cur[r] = cur[r], cur[r] + 1
        two, n, nb, T = calls[k]
        seq = (SEQ0 + k) & MASK
        for b in range(nb):
            beg, end = split(n, b, nb), split(n, b + 1, nb)
            live[r] += ([(k, twoshot(r, k, seq, b, beg, end))] if two else
                        [(k, oneshot(r, k, seq, beg, end, t, T)) for t in range(T)])

    stuck = set()  # actors that found nothing to do since the last real action
    while True:
        ready = [r for r in range(P) if live[r] or may_launch(r)]
        if not ready:
            break
        r = rnd.choice(ready)
        if may_launch(r) and (not live[r] or rnd.random() < 0.2):
            launch(r)
            stuck.clear()
            continue
        actor = rnd.choice(live[r])
        try:
            if next(actor[1]) == 'wait':
                stuck.add(actor[1])
                if len(stuck) == sum(map(len, live)) and not any(map(may_launch, range(P))):
                    raise Fail('deadlock')
                continue
        except StopIteration:
            live[r].remove(actor)
        stuck.clear()
    if any(w is not EMPTY for rank in inbox for box in rank for w in box):
        raise Fail('end')


def first_failure(mut, **kw):
    """(run, check) of the first of RUNS runs that fails, or None."""
    for i in range(RUNS):
        try:
            run(i, mut, **kw)
        except Fail as e:
            return i, e.args[0]
    return None


MUTATIONS = [('1 (one inbox)', 'one_inbox'), ('2 (no EMPTY written back)', 'no_empty'),
             ('3 (no stream order)', 'no_order'), ('4 (at least the mark)', 'at_least')]
STALE = -1 - (1 << 31)  # flags as if no two-shot call had written them for 2^31 calls


def main():
    t0, ok = time.time(), True
    for flag0, how in ((-1, 'flags at the last call\'s mark'), (STALE, 'flags 2^31 calls stale')):
        bad = first_failure(None, flag0=flag0)
        if bad:
            print('FAIL (%s): check %s in run %d' % (how, bad[1], bad[0]))
            return 1
        print('ok (%s): %d runs (P=2..4), no error, no deadlock' % (how, RUNS))
    for name, mut in MUTATIONS:
        got = first_failure(mut, flag0=STALE)
        print('mutation %s: ' % name + ('caught (check %s) in run %d' % got[::-1] if got else 'NOT caught'))
        ok = ok and bool(got)
    print('%.1f s' % (time.time() - t0))
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())
