"""Processor-sharing simulation of the deep linear model's pipelines (DIM 4096, batch 512,
DEPTH 24, f32) on G GPUs with V interleaved stages a GPU (notes/multi.md).

Each stage runs GPipe in its own stream (or, shared=True, one stream per GPU in breadth-first
order); a GPU shares its throughput among the products its streams have ready, and k products
of M rows side by side run like one of k*M rows (EFF, fitted to the committed measurements).
Pulls occupy the receiving stream, not the GPU's arithmetic.
    python3 pipeline_model.py     # a few seconds
"""
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

def step_ms(G, v, m, shared=False):
    ops, streams = build(24, G, v, m, shared)
    return simulate(ops, streams, G)[0]

if __name__ == '__main__':
    NAIVE = 26.70  # measured, 2 x H200
    print('calibration: 2 GPUs, GPipe m = 2/4/8: %.2f %.2f %.2f ms (measured 18.0, 16.85, 18.65)'
          % tuple(step_ms(2, 1, m) for m in (2, 4, 8)))
    print('calibration: 1 GPU, 2 logical stages, m = 4/8: %.2f %.2f ms (measured 26.52, 29.38)'
          % tuple(step_ms(1, 2, m) for m in (4, 8)))
    plain = eff
    for title, gain in (('stream per stage', True), ('stream per stage, no gain side by side', False)):
        eff = plain if gain else (lambda rows, conc: plain(rows, 1))
        print(title + ': ms (/ naive %.2f)' % NAIVE)
        for v in (1, 2, 3, 4):
            print('  V = %d  ' % v + '  '.join('m=%d %6.2f (%.3f)' % (m, t, t / NAIVE)
                                               for m, t in ((m, step_ms(2, v, m)) for m in (2, 4, 8))))
    eff = plain
    print('one stream per GPU, breadth-first: V = 3 m = 4 %.2f, V = 4 m = 2 %.2f ms'
          % (step_ms(2, 3, 4, True), step_ms(2, 4, 2, True)))
