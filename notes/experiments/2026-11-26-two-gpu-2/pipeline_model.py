# Processor-sharing simulation of the deep linear model's pipelines on 2 GPUs.
import sys
T1 = 26.47                      # one-GPU step, ms (DIM 4096, batch 512, depth 24)
U = T1 / 72                     # one layer, one phase, whole batch, full efficiency
EFF = {512: 1.0, 384: 0.99, 256: 0.967, 128: 0.889, 64: 0.704, 32: 0.473}
def eff(rows, conc):            # concurrency: k ops of M rows behave like one of k*M
    r = min(512, rows * conc)
    return EFF.get(r, EFF[min(EFF, key=lambda x: abs(x - r))])
NVLINK = 350e6                  # bytes per ms
def copy_ms(rows): return rows * 4096 * 4 / NVLINK + 0.008

def build(depth, G, v, m, shared):
    S = G * v; L = depth // S; rows = 512 // m
    ops = {}  # name -> dict(gpu, stream, work, rows, deps, kind)
    streams = {}
    def add(stream, name, gpu, work, deps, kind='c', r=512):
        ops[name] = dict(gpu=gpu, work=work, deps=deps, kind=kind, rows=r, left=work, done=None, start=None)
        streams.setdefault(stream, []).append(name)
    order = []
    # forward: breadth-first rounds; backward: reverse
    for k_round in range(v):
        for i in range(m):
            for g in range(G):
                order.append(('F', k_round * G + g, i))
    for k_round in reversed(range(v)):
        for i in range(m):
            for g in reversed(range(G)):
                order.append(('B', k_round * G + g, i))
    if not shared:  # per-stage streams, GPipe order within each
        order = sorted(order, key=lambda o: (o[1], o[0] == 'B', o[2]))
    for (ph, k, i) in order:
        g = k % G; st = g if shared else k
        first_layer = k * L
        if ph == 'F':
            deps = []
            if k > 0:
                add(st, f'pF{k},{i}', g, copy_ms(rows), [f'F{k-1},{i}'], 'x'); deps = []
            add(st, f'F{k},{i}', g, L * rows / 512 * U, deps, 'c', rows)
        else:
            if k < S - 1:
                add(st, f'pB{k},{i}', g, copy_ms(rows), [f'B{k+1},{i}'], 'x')
            n = L - (1 if first_layer == 0 else 0)
            add(st, f'B{k},{i}', g, n * rows / 512 * U, [], 'c', rows)
    for k in range(S):
        add(k % G if shared else k, f'W{k}', k % G, L * U, [], 'c', 512)
    return ops, streams

def simulate(ops, streams, G, dt=0.001):
    ptr = {s: 0 for s in streams}
    t = 0.0
    busy = [0.0] * G
    while any(ptr[s] < len(streams[s]) for s in streams):
        active = []
        for s in streams:
            if ptr[s] >= len(streams[s]): continue
            o = ops[streams[s][ptr[s]]]
            if all(ops[d]['done'] is not None for d in o['deps']): active.append((s, o))
        for g in range(G):
            comp = [o for s, o in active if o['gpu'] == g and o['kind'] == 'c']
            n = len(comp)
            if n: busy[g] += dt
            for o in comp:
                o['left'] -= dt / n * eff(o['rows'], n)
        for s, o in active:
            if o['kind'] == 'x': o['left'] -= dt
        t += dt
        for s, o in active:
            if o['left'] <= 1e-12:
                o['done'] = t; ptr[s] += 1
    return t, busy

if __name__ == '__main__':
    for (v, m, shared) in [(1,4,1),(1,8,1),(1,4,0),(2,4,1),(2,4,0),(2,2,1),(2,2,0),(2,8,0),(3,4,1),(3,4,0),(4,2,1),(4,4,1),(4,4,0),(2,8,1),(6,2,1),(6,4,0)]:
        ops, st = build(24, 2, v, m, shared)
        t, busy = simulate(ops, st, 2)
        print(f"v={v} m={m} {'one stream/GPU, breadth-first' if shared else 'stream per stage     '}: {t:6.2f} ms  /naive(26.70) {t/26.70:.3f}")
