#!/usr/bin/env bash
# splitk adding its slices in the kernel (the last block of a tile) where the product has fewer
# than 8 tiles, instead of the second kernel from 4 slices on (build/exp/gemm_tiles8, built with
# -DHPDL__SPLITK_APART_TILES=8): the logits' product at batch 32 and 128 (32 or 128 x 10 x H, one
# tile). gpu_gemm of that build, then bench/gemm --mlp f16 and f32 against build/bench/gemm
# (f7086f6) in turns, two rounds; CSVs tarred.
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/w"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/w/gpu.txt"
timeout 200 build/exp/gpu_gemm_tiles8 > "$OUT/w/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"; tail -1 "$OUT/w/gpu_gemm.log"
for run in 1f16 1f32 2f16 2f32; do
    r=${run:0:1}; p=${run:1}
    for v in lib tiles8; do
        bin=build/bench/gemm; [ $v = tiles8 ] && bin=build/exp/gemm_tiles8
        mkdir -p "$OUT/w/$v$r$p"
        timeout 60 $bin --mlp --precision $p --output "$OUT/w/$v$r$p" > "$OUT/w/$v$r$p/gemm.log" 2>&1 || echo "gemm $v$r$p failed"
        grep -E "geomean_auto" "$OUT/w/$v$r$p/gemm_mlp.csv" | sed "s/^/$v$r /"
        grep -E "_b(32|128)_fwd_l1_auto" "$OUT/w/$v$r$p/gemm_mlp_all.csv" | cut -d, -f1-3,5,6 | sed "s/^/$v$r /"
    done
    (cd "$OUT" && tar czf runs.tgz w)
done
rm -rf "$OUT/w"
