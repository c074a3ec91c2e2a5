#!/usr/bin/env bash
# Two-GPU run of the data-parallel driver with the first layer sharded by column blocks
# (hpdl_mpi_dp_config.shard_first_layer): the GPU test against the CPU driver on 2 ranks, on
# 3 ranks over the 2 GPUs (sharing a GPU: the sharded mode must be refused and skipped) and on
# 1; then dp_scaling --focus --shard (H 2048, b 512 and 3000, f32, IPC one-shot for everything
# that is not sharded). TORCH=1 adds the PyTorch DDP anchor. Binaries built there (with the data
# as .gz the tree and the binaries would not fit in one carry).
#   from the repository root, on a machine with 2 GPUs:  OUT=<dir> notes/experiments/2026-11-28-sharded-first-layer/device.sh
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT/dp"
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
status=0
step() { echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "device.sh: $1"; status=1; }
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"

step machine
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
cat .commit 2>/dev/null || true
step build
make build/gpu/gpu_mpi_dp build/bench/dp_scaling -j4 2>&1 | grep -E "error|warning" ; true
step data
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null || fail "no Fashion-MNIST"

if [ "${TESTS:-1}" = 1 ]; then
    step "gpu_mpi_dp on 2 ranks, 1 rank"
    timeout 120 $MPIRUN -np 2 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 2"
    timeout 60 $MPIRUN -np 1 build/gpu/gpu_mpi_dp || fail "gpu_mpi_dp -np 1"
fi

step "dp_scaling --focus --shard --algo ipc"
torch=--no-torch
[ "${TORCH:-0}" = 1 ] && torch=
# VARIANTS: "name:ENV=V,ENV=V ..." runs of the focus, each into its own folder (experiment knobs)
for v in ${VARIANTS:-base:}; do
    name=${v%%:*}; envs=${v#*:}
    mkdir -p "$OUT/dp/$name"
    echo "-- $name ${envs}"
    env $(echo "$envs" | tr ',' ' ') timeout 300 $MPIRUN -np 2 $(echo "$envs" | tr ',' '\n' | sed -n 's/=.*//p' | sed 's/^/-x /') \
        build/bench/dp_scaling --focus --shard --algo ipc --pieces 1 --halve 0 --ctas 8 --prio 1 \
        --reps 10 $torch --data data/fashion-mnist --output "$OUT/dp/$name" > "$OUT/dp/$name/focus.log" 2>&1 || fail "dp_scaling $name"
    grep -E "check:|^ +[0-9]+ (no overlap|sharded)|pytorch|trace" "$OUT/dp/$name/focus.log"
done

step "done, status $status"
exit $status
