#!/usr/bin/env bash
# One H200: gpu_mlp at dc4adbf (the launcher's last change), then the SGD
# test and the mixed-precision tests under compute-sanitizer (memcheck,
# racecheck, synccheck). Built on the host for sm_90a, carried gzipped in build/c6.
set -u -o pipefail
B=build/c6/x; mkdir -p $B; gunzip -c build/c6/gpu_mlp.gz > $B/gpu_mlp; chmod +x $B/gpu_mlp
exec > >(tee "$OUT/check.log") 2>&1
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $B/gpu_mlp; echo "rc=$?"
for tool in memcheck racecheck synccheck; do
  echo "== $tool"
  timeout 240 $CS --tool $tool --error-exitcode 9 $B/gpu_mlp test_sgd 2>&1 | tail -n 4; echo "rc=$?"
done
echo "== memcheck amp"; timeout 200 $CS --tool memcheck --error-exitcode 9 $B/gpu_mlp test_amp 2>&1 | tail -n 4
