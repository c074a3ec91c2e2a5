#!/usr/bin/env bash
# The NVLink allreduce through CUDA IPC on the GPU machine, one rank per GPU:
# builds tests/gpu_mpi_ipc.cu and bench/allreduce, runs the test, then the
# bench beside NCCL at every size from 4 B to 256 MiB (factors of 2), then
# the IPC rows again with other grid limits (HPDL_MPI_IPC_BLOCKS 32, 128).
# Logs, CSVs and charts under $OUT; every step has a time limit, so a hang
# (a kernel waiting for a peer's flag forever) ends as a failure, not a stall.
#   device tool, kind nvidia-h100-x2:  scripts/gpu_ipc.sh
#   NP=4 scripts/gpu_ipc.sh            (on a 4-GPU machine)
# Needs nvcc and Open MPI there; NCCL from the CUDA Toolkit, /usr/include, or
# else the nvidia-nccl Python wheel that PyTorch brings.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
NP=${NP:-2}
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_ipc.log") 2>&1

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -n $((NP + 1))
for t in nvcc mpicc mpirun gnuplot; do printf '%-8s %s\n' "$t" "$(command -v $t || echo MISSING)"; done
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "gpu_ipc: Open MPI (mpicc, mpirun) is missing here: nothing to run"; exit 1
fi

echo "== build"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
TARGETS="build/gpu/gpu_mpi_ipc build/bench/allreduce"
nccl=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
if [ -f "$CUDA_HOME/include/nccl.h" ] || [ -f /usr/include/nccl.h ] || [ -z "$nccl" ] ||
    [ ! -f "$nccl/include/nccl.h" ]; then
    make --no-print-directory -j "$(nproc)" $TARGETS || exit 1
else
    # NCCL only as PyTorch's wheel: the Makefile's flags, with its paths
    echo "gpu_ipc: NCCL from $nccl"
    mkdir -p build/gpu build/bench
    for src in tests/gpu_mpi_ipc.cu bench/allreduce.cu; do
        out=build/gpu/gpu_mpi_ipc
        [ "$src" = bench/allreduce.cu ] && out=build/bench/allreduce
        nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I. -I"$nccl/include" -Xcompiler -Wall,-Wextra \
            -lineinfo -DHPDL_HAVE_MPI $(mpicc --showme:compile) "$src" -o "$out" \
            -lcublas -Xlinker -rpath="$CUDA_HOME/lib64" -Xlinker "$nccl"/lib/libnccl.so.2 -Xlinker -rpath="$nccl/lib" \
            $(mpicc --showme:link | sed 's/-Wl,/-Xlinker /g') || exit 1
    done
fi

MPIRUN="mpirun --allow-run-as-root --bind-to none -np $NP -x NCCL_NVLS_ENABLE -x HPDL_RESULTS -x HPDL_MPI_IPC_BLOCKS"
export HPDL_RESULTS="$OUT" HPDL_MPI_IPC_BLOCKS=${HPDL_MPI_IPC_BLOCKS:-64}

echo "== test: $MPIRUN build/gpu/gpu_mpi_ipc"
timeout 120 $MPIRUN build/gpu/gpu_mpi_ipc
test_rc=$?
[ $test_rc -eq 124 ] && echo "gpu_ipc: the test did not finish in 120 s (a hang?)"

echo "== bench: allreduce, 4 B .. 256 MiB, factors of 2, IPC grid limit $HPDL_MPI_IPC_BLOCKS"
timeout 210 $MPIRUN build/bench/allreduce --factor 2 --max-bytes 268435456 --no-check
bench_rc=$?
[ $bench_rc -eq 124 ] && echo "gpu_ipc: the bench did not finish in 210 s (a hang?)"

for blocks in 32 128; do
    echo "== bench: IPC rows with HPDL_MPI_IPC_BLOCKS=$blocks (at most the SM count), 4 B .. 64 MiB"
    mkdir -p "$OUT/ipc_blocks_$blocks"
    HPDL_MPI_IPC_BLOCKS=$blocks HPDL_RESULTS="$OUT/ipc_blocks_$blocks" timeout 40 $MPIRUN build/bench/allreduce \
        --factor 2 --max-bytes 67108864 --ipc-only --no-check || echo "gpu_ipc: the run with $blocks blocks failed"
done

if command -v gnuplot >/dev/null && [ -f "$OUT/allreduce_all.csv" ]; then
    gnuplot -e "dir='$OUT'" bench/plots/allreduce.gp && echo "charts: $OUT/allreduce_busbw.png $OUT/allreduce_time.png"
fi
if [ -f "$OUT/allreduce.csv" ]; then
    echo "== $OUT/allreduce.csv"
    cat "$OUT/allreduce.csv"
    echo "== IPC busbw over nccl_direct's (the aim: at least 1.5 at 1, 4 and 8 MiB)"
    awk -F, '$1 ~ /^hpdl_(ipc|auto)/ { printf "  %-28s %8.1f GB/s   nccl %8.1f GB/s   %.2fx %s\n", $1, $2, $5, $6,
        ($6 >= 1.5 ? "" : "(below 1.5)") }' "$OUT/allreduce.csv"
fi
echo "== test exit $test_rc, bench exit $bench_rc"
[ $test_rc -eq 0 ] && [ $bench_rc -eq 0 ]
