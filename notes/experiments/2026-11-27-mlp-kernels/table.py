"""Per MLP product: the kernels cuBLAS and AUTO ran (ncu durations, grids).
usage: table.py probe_<t>.txt ncu_<t>.csv"""
import csv, sys, re

names = [l.split(' ', 1)[1].strip() for l in open(sys.argv[1]) if re.match(r'^\d+ ', l)]
lines = [l for l in open(sys.argv[2]) if l.startswith('"')]
kern = {}
for r in csv.DictReader(lines):
    k = kern.setdefault(int(r['ID']), {'name': r['Kernel Name'], 'grid': r['Grid Size'], 'block': r['Block Size']})
    k[r['Metric Name']] = r['Metric Value']
product, side, rows = -1, None, {}
for i in sorted(kern):
    k = kern[i]
    if k['name'].startswith('probe_marker'):
        m = re.search(r'\((-?\d+)\)', k['name'])
        if side is None or side == 'auto':
            product, side = product + 1, 'cublas'
        else:
            side = 'auto'
        continue
    if product < 0: continue
    short = re.sub(r'\(.*', '', k['name'])[:60]
    t = float(k['gpu__time_duration.sum'].replace(',', ''))
    rows.setdefault(product, {'cublas': [], 'auto': []})[side].append((short, k['grid'], k['launch__registers_per_thread'], t))
# an auto list also holds the next product's warm-up calls (its cuBLAS
# kernels, then its AUTO kernels): take them off, from the last product back
keep = {}
for p in sorted(rows, reverse=True):
    extra = len(rows[p + 1]['cublas']) + keep[p + 1] if p + 1 in rows else 0
    keep[p] = len(rows[p]['auto']) - extra
    rows[p]['auto'] = rows[p]['auto'][:keep[p]]
for p in sorted(rows):
    c = rows[p]['cublas']; a = rows[p]['auto']
    tc = sum(x[3] for x in c) / 1e3; ta = sum(x[3] for x in a) / 1e3
    print(f"{names[p]:32s} cublas {tc:6.2f} us  auto {ta:6.2f} us  ratio {tc/ta:5.2f}")
    for s, x in (('  cuBLAS', c), ('  auto  ', a)):
        for k in x: print(f"{s} {k[3]/1e3:6.2f} us grid {k[1]:14s} regs {k[2]:4s} {k[0]}")
