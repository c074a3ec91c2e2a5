#!/usr/bin/env bash
# The IPC one-shot's step size (packs a thread handles per step, HPDL__IPC_UNROLL: 1, 2 as in the
# library, 4 -> steps of 1, 2, 4 MiB over 128 blocks) against NCCL in the same runs, 1-16 MiB,
# three rounds in turns. Binaries built on the host (-O3, sm_90a): build/ipc_u1/allreduce and
# build/ipc_u4/allreduce from a copy of hpdl_mpi.h with the one define changed, build/bench/allreduce
# from the library. Two GPUs, $OUT set; about 2 minutes.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_MPI_IPC_BLOCKS=128
O=${OUT:?set OUT}
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee -a $O/summary.log
nvidia-smi topo -m 2>/dev/null | head -n 3 | tee -a $O/summary.log
MPIRUN="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x HPDL_RESULTS -x HPDL_MPI_IPC_BLOCKS"
timeout 120 $MPIRUN build/gpu/gpu_mpi_ipc > $O/gpu_mpi_ipc.log 2>&1; log "gpu_mpi_ipc rc=$? $(tail -1 $O/gpu_mpi_ipc.log)"
mkdir -p $O/runs
for r in 1 2 3; do for v in u2 u1 u4; do
  bin=build/ipc_$v/allreduce; [ $v = u2 ] && bin=build/bench/allreduce
  mkdir -p $O/runs/${v}_$r
  HPDL_RESULTS=$O/runs/${v}_$r timeout 60 $MPIRUN $bin -b 1M -e 16M -f 2 --ipc-only --no-check > $O/runs/${v}_$r.log 2>&1
  log "$v round $r rc=$?"
  awk -F, -v run="${v}_$r" '$1 ~ /^(hpdl_ipc_oneshot|nccl_direct)$/ && ($2 == 1048576 || $2 == 4194304 || $2 == 8388608 || $2 == 16777216) {
      printf "  %-6s %-17s %9d B  %8.2f us  %7.1f GB/s  %.3fx\n", run, $1, $2, $6, $8, $10 }' $O/runs/${v}_$r/allreduce_all.csv | tee -a $O/summary.log
done; done
cd $O && tar czf runs.tgz runs gpu_mpi_ipc.log && rm -rf runs gpu_mpi_ipc.log
