#!/usr/bin/env bash
# Two H200s: dp_scaling's short focus rows with the local gradient replayed
# from graphs (G) and without (E: 30dbcaf's code, e1af273's step), in turns,
# three rounds; the steps of mlp_train_dp on one and two GPUs under
# scripts/kernel_trace.sh (kernels and gaps); then G's committed run (every
# setting, PyTorch DDP first). Binaries built on the host for sm_90a,
# carried as xz with the Fashion-MNIST files (xz) in build/c27.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
declare -A COMMITS=([E]=30dbcaf [G]=${COMMIT:?})
C=build/c27; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3; do for v in E G; do
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"; export HPDL_COMMIT=${COMMITS[$v]}
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab
export HPDL_COMMIT=${COMMITS[G]}
for n in 1 2; do
  step "mlp_train_dp on $n GPU(s), traced"
  timeout 120 scripts/kernel_trace.sh $W/trace$n mpirun --allow-run-as-root --bind-to none -np $n \
    $B/mlp_train_dp --hidden 2048 --batch 512 --epochs 5 --algo ipc > $W/trace$n.log 2>&1; echo "rc=$?"
done
(cd $W && tar czf $OUT/traces.tgz trace1 trace2 trace1.log trace2.log)
step "focus G, every setting, PyTorch DDP first"; mkdir -p $W/focus
timeout 300 $MPIRUN -np 2 $B/dpG --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
step done; pack r
