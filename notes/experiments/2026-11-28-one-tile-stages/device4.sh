#!/bin/bash
# Variants of three launch rules, each a build of gemm_graph (-D), in turns twice:
# v0 as landed; nb1/nb4: the narrow MN-major kernel's blocks an SM (2 landed);
# sk1/sk4: splitk's blocks an SM (2 landed); s3: the one-tile rung's stages (4 landed).
B=build/h90/exp
O=/tmp/o4; mkdir -p $O
for r in 1 2; do
  for v in v0 nb1 nb4 sk1 sk4 s3; do $B/gg_$v > $O/gg_${v}_run$r.csv 2>&1; done
done
tar czf $OUT/o4.tgz -C /tmp o4
