#!/usr/bin/env bash
# Builds bench/allreduce on the GPU machine and runs it with one rank per GPU,
# writing the log, the CSVs and the charts under $OUT.
#   device tool, kind nvidia-h200-x2:  scripts/gpu_allreduce.sh [bench args]
#   NP=4 scripts/gpu_allreduce.sh      (on a 4-GPU machine)
# Needs nvcc and Open MPI there; NCCL from the CUDA Toolkit, /usr/include, or
# else the nvidia-nccl Python wheel that PyTorch brings.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
NP=${NP:-2}
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
log="$OUT/allreduce.log"
exec > >(tee "$log") 2>&1

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -n 4
for t in nvcc mpicc mpirun gnuplot; do printf '%-8s %s\n' "$t" "$(command -v $t || echo MISSING)"; done
mpirun --version 2>/dev/null | head -n 1
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "gpu_allreduce: Open MPI (mpicc, mpirun) is missing here: nothing to run"; exit 1
fi

echo "== build"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$CUDA_HOME/include/nccl.h" ] || [ -f /usr/include/nccl.h ]; then
    make --no-print-directory build/bench/allreduce || exit 1
else
    # NCCL only as PyTorch's wheel: build the Makefile's way, with its paths
    nccl=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
    if [ -z "$nccl" ] || [ ! -f "$nccl/include/nccl.h" ]; then
        echo "gpu_allreduce: no nccl.h found: building without the NCCL rows"
        make --no-print-directory build/bench/allreduce || exit 1
    else
        echo "gpu_allreduce: NCCL from $nccl"
        mkdir -p build/bench
        nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I. -I"$nccl/include" -Xcompiler -Wall,-Wextra \
            -lineinfo -DHPDL_HAVE_MPI $(mpicc --showme:compile) bench/allreduce.cu -o build/bench/allreduce \
            -lcublas -Xlinker -rpath="$CUDA_HOME/lib64" -Xlinker "$nccl"/lib/libnccl.so.2 -Xlinker -rpath="$nccl/lib" \
            $(mpicc --showme:link | sed 's/-Wl,/-Xlinker /g') || exit 1
    fi
fi

echo "== run: mpirun -np $NP"
HPDL_RESULTS="$OUT" timeout 480 mpirun --allow-run-as-root --bind-to none -np "$NP" \
    -x NCCL_NVLS_ENABLE -x HPDL_RESULTS build/bench/allreduce "$@"
rc=$?
if command -v gnuplot >/dev/null && [ -f "$OUT/allreduce_all.csv" ]; then
    gnuplot -e "dir='$OUT'" bench/plots/allreduce.gp && echo "charts: $OUT/allreduce_busbw.png $OUT/allreduce_time.png"
fi
[ -f "$OUT/allreduce.csv" ] && { echo "== $OUT/allreduce.csv"; cat "$OUT/allreduce.csv"; }
exit $rc
