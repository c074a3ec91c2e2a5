#!/usr/bin/env bash
# Two H200s. The plain padded mma GEMM's C through shared memory in 16-byte
# pieces too (F: the tree after 0158af5), against the code before (H,
# 0158af5): gpu_gemm and gpu_mlp (F, GPU 0); bench/gemm --mlp and --quick
# f32 / f64, H and F in turns, two rounds (GPU 0); the short focus rows of
# dp_scaling H and F in turns, four rounds (their 1-GPU epoch is the anchor
# that changes); then F's committed run (every setting, PyTorch DDP first).
# Two calls (the carry's limit): PHASE=gemm with the GEMM binaries in
# build/c12, PHASE=dp with dp_scaling and the Fashion-MNIST files in
# build/c13; binaries built on the host for sm_90a, carried as xz. Each
# phase is packed as it ends.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
declare -A COMMITS=([H]=0158af5 [F]=${COMMIT})
C=$([ $PHASE = gemm ] && echo build/c12 || echo build/c13); B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
if [ $PHASE = gemm ]; then
for t in gpu_gemm gpu_mlp; do
  step "$t (F)"; CUDA_VISIBLE_DEVICES=0 timeout 240 $B/$t > $W/r/$t.log 2>&1; echo "rc=$?" >> $W/r/$t.log
  tail -n 2 $W/r/$t.log
done; pack r
for round in 1 2; do for v in H F; do
  export HPDL_COMMIT=${COMMITS[$v]}
  for mode in "--mlp --precision f32" "--quick --precision f32" "--quick --precision f64"; do
    d=$W/gemm/$v$round/$(echo $mode | tr -d ' -'); mkdir -p $d; step "gemm$v $mode, round $round"
    CUDA_VISIBLE_DEVICES=0 timeout 90 $B/gemm$v $mode --output $d > $d/gemm.log 2>&1; echo "rc=$?" >> $d/gemm.log
  done
done; done; pack gemm
step done; pack r; exit 0
fi
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3 4; do for v in H F; do
  export HPDL_COMMIT=${COMMITS[$v]}
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab
[ "${FINAL:-1}" = 1 ] || { step done; pack r; exit 0; } # FINAL=0: no committed run
export HPDL_COMMIT=${COMMITS[F]}
step "focus F ($HPDL_COMMIT), every setting, PyTorch DDP first"; mkdir -p $W/focus
timeout 300 $MPIRUN -np 2 $B/dpF --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
step done; pack r
