# One H200: gpu_gemm at the commit; ncu sections of the thin kernel and of
# cuBLAS's kernel on two first-layer products; bench/mlp built here.
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log
make -j16 build/bench/mlp GPU_CC=90 NVOPT=-O3 > $OUT/build.log 2>&1 &
for spec in "f16 fwd_l0 512 32" "f16 fwd_l0 2048 512"; do
  set -- $spec
  ncu --set full --kernel-name regex:'^[^p]' --launch-skip 2 build/exp/probe_kernels $spec > $OUT/full_$2_$3_$4.txt 2>&1
done
wait
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > $OUT/data.log 2>&1
timeout 400 build/bench/mlp --output $OUT/mlp > $OUT/mlp.log 2>&1
cd $OUT && tar czf res.tgz *.log *.txt mlp && rm -rf *.log *.txt mlp
