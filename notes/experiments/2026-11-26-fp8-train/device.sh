#!/usr/bin/env bash
# FP8 training of the MLP on the GPU (2026-11-26): tests/gpu_fp8.cu (the
# earlier cast and GEMM tests, the fused cast + transpose against the CPU's
# codes, the FP8 step of hpdl_cuda_mlp_*_fp8 stage by stage and whole
# steps against hpdl_mlp_train_step_fp8_f32, epochs on a small problem,
# bad arguments), the new kernels once more under compute-sanitizer, then
# examples/mlp_train on Fashion-MNIST at the setting of mlp_sweep --fp8
# (bench/results/cpu/mlp_sweep_fp8.context: 784-128-10 ReLU, SGD lr 0.05,
# batch 64, seed 1, 20 epochs) in f32, f16 (mixed precision) and fp8.
# Run from the repository root on one H100/H200, with the Fashion-MNIST
# files (train/t10k -images-idx3 / -labels-idx1 -ubyte[.gz]) in
# data/fashion-mnist and $OUT an output folder:
#     OUT=/tmp/out bash notes/experiments/2026-11-26-fp8-train/device.sh
# Writes under $OUT (8 files): build.log, gpu_fp8.log (the memcheck run
# appended), train.log (the three runs), curve_{f32,f16,fp8}.csv (per
# epoch), and mlp_fp8.csv with mlp_fp8.context for bench/results/<gpu>/:
# final test accuracy of f16 and fp8 against f32 (ratio value / f32), and
# the median epoch time over epochs 2-20 (epoch 1 captures the graphs)
# against f32's (ratio f32 / value). Worst case 290 + 80 + 30 + 3 x 40 s:
# under 9 minutes.
set -u
OUT=${OUT:?set OUT to an output folder}
DATA=${DATA:-data/fashion-mnist}
mkdir -p "$OUT" build
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

say "building gpu_fp8 and mlp_train"
if ! timeout 290 make -j16 build/gpu/gpu_fp8 build/examples/mlp_train ${EXTRA_TARGETS:-} >"$OUT/build.log" 2>&1; then
    say "build failed or timed out: tail of build.log"; tail -30 "$OUT/build.log"; exit 1
fi

say "tests/gpu_fp8"
timeout 80 build/gpu/gpu_fp8 >"$OUT/gpu_fp8.log" 2>&1
say "gpu_fp8 exit $?: $(tail -1 "$OUT/gpu_fp8.log")"
grep -E "FAIL|fail|expected|differ|largest|step [0-9]|W[01]:|loss .* epoch|bound" "$OUT/gpu_fp8.log" | head -40

if command -v compute-sanitizer >/dev/null; then
    say "compute-sanitizer memcheck on the cast + transpose and the FP8 model's refusals"
    for t in test_cast_transpose test_mlp_fp8_arguments; do
        echo "---- compute-sanitizer --tool memcheck build/gpu/gpu_fp8 $t" >>"$OUT/gpu_fp8.log"
        timeout 15 compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/gpu_fp8 "$t" >>"$OUT/gpu_fp8.log" 2>&1
        say "memcheck $t exit $?"
    done
fi

for p in f32 f16 fp8; do
    say "mlp_train --precision $p"
    timeout 40 build/examples/mlp_train --data "$DATA" --hidden 128 --batch 64 --lr 0.05 --epochs 20 --seed 1 \
        --precision "$p" --csv "$OUT/curve_$p.csv" --util-csv "/tmp/mlp_fp8_util_$p.csv" >>"$OUT/train.log" 2>&1
    say "exit $?: $(grep "epoch 20/20" "$OUT/train.log" | tail -1)"
done

# final test accuracy and median epoch time (epochs 2..) of one curve
final_acc() { awk -F, 'NR > 1 { a = $6 } END { print a }' "$OUT/curve_$1.csv" 2>/dev/null; }
median_ms() {
    awk -F, 'NR > 2 { print $7 }' "$OUT/curve_$1.csv" 2>/dev/null | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
row() { # metric value unit anchor anchor_value ratio-kind (rate: value/anchor, time: anchor/value)
    awk -v m="$1" -v v="$2" -v u="$3" -v a="$4" -v av="$5" -v k="$6" 'BEGIN {
        if (v == "" || av == "" || v + 0 == 0 || av + 0 == 0) exit
        printf "%s,%s,%s,%s,%s,%.4f\n", m, v, u, a, av, k == "time" ? av / v : v / av }'
}
{
    echo "metric,value,unit,anchor,anchor_value,ratio"
    for p in fp8 f16; do
        row "test_acc_${p}_h128_b64_e20" "$(final_acc $p)" fraction test_acc_f32 "$(final_acc f32)" rate
        row "epoch_ms_${p}_h128_b64" "$(median_ms $p)" ms epoch_ms_f32 "$(median_ms f32)" time
    done
} >"$OUT/mlp_fp8.csv"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(cat .commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
    echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "command: build/examples/mlp_train --data $DATA --hidden 128 --batch 64 --lr 0.05 --epochs 20 --seed 1 --precision {f32,f16,fp8}"
    echo "epoch_ms: median over epochs 2-20 of the training part of each epoch (evaluation excluded)"
} >"$OUT/mlp_fp8.context"
cat "$OUT/mlp_fp8.csv"
say "done"
