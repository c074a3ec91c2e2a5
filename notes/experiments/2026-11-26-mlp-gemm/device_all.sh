#!/usr/bin/env bash
# device.sh's checks and bench, plus the GPU tests of AUTO's other users (gpu_mlp, gpu_cnn):
# AUTO now takes splitk for skinny products. One H100/H200, $OUT set; under 10 minutes.
set -u
OUT=${OUT:?set OUT}; mkdir -p "$OUT" build
t0=$SECONDS
make -j16 build/gpu/gpu_gemm build/bench/gemm build/gpu/gpu_mlp build/gpu/gpu_cnn > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $((SECONDS-t0)) s"
for t in gpu_gemm gpu_mlp gpu_cnn; do
    timeout 100 build/gpu/$t > "$OUT/$t.log" 2>&1; echo "$t rc=$? $(tail -1 $OUT/$t.log) at $((SECONDS-t0)) s"
    grep -E "^FAIL|expected" "$OUT/$t.log" | head -10
done
timeout 30 compute-sanitizer --tool racecheck build/gpu/gpu_gemm splitk_graph 2>&1 | grep -E "SUMMARY|passed"
timeout 50 compute-sanitizer --tool memcheck build/gpu/gpu_gemm mlp_f16 2>&1 | grep -E "SUMMARY|passed"
echo "bench at $((SECONDS-t0)) s"
timeout 90 build/bench/gemm --mlp --output "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
grep -E "geometric|WRONG" "$OUT/bench.log"
echo "done at $((SECONDS-t0)) s"
