#!/usr/bin/env bash
# One H200: every kernel of one int8 and one f16 forward of both CNNs (nets.cu's profiled
# section), durations and launch shapes from ncu.
set -u
O=${OUT:?}/r; mkdir -p $O
mkdir -p build/x; gunzip -c build/carry4/int8_nets.gz > build/x/int8_nets; chmod +x build/x/int8_nets
timeout 300 ncu --profile-from-start off --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__shared_mem_per_block_dynamic \
  build/x/int8_nets > $O/ncu.csv 2> $O/ncu.err; echo "rc=$?"
grep -c '"' $O/ncu.csv; tail -3 $O/ncu.err
(cd ${OUT} && tar czf all.tgz r && rm -rf r)
