#!/usr/bin/env bash
# After the fix of the consumers' stage release in a cluster of slices: the
# probe first (short limit), gpu_gemm, racecheck on the slice test, the probe again.
B=build/h90
timeout 45 $B/exp/probe_ws 50 > $OUT/probe1.csv 2> $OUT/probe1.err; echo "probe rc $?"
cat $OUT/probe1.csv; grep -v 'rel err' $OUT/probe1.err | head
timeout 150 $B/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; grep -E "FAIL|passed" $OUT/gpu_gemm.log | tail -3
timeout 90 compute-sanitizer --tool racecheck $B/gpu/gpu_gemm hopper_ws_slices > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
timeout 45 $B/exp/probe_ws 50 > $OUT/probe2.csv 2> $OUT/probe2.err; echo "probe rc $?"
