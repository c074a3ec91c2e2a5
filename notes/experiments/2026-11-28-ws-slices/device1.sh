#!/usr/bin/env bash
# The warp-specialized rung's K slices in clusters: gpu_gemm (with its new
# slice test under racecheck), then the probe twice.
B=build/h90
timeout 150 $B/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?"; grep -E "FAIL|passed" $OUT/gpu_gemm.log | tail -3
timeout 90 compute-sanitizer --tool racecheck $B/gpu/gpu_gemm hopper_ws_slices > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
for i in 1 2; do timeout 60 $B/exp/probe_ws 50 > $OUT/probe$i.csv 2> $OUT/probe$i.err; echo "probe rc $?"; done
cat $OUT/probe1.csv; grep -v 'rel err' $OUT/probe1.err | head
