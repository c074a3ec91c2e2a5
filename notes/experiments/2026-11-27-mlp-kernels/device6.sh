# One H200 at the thin kernel's final rule: GPU tests that run f16 GEMMs
# (gpu_gemm, gpu_mlp, gpu_fp8, gpu_cnn), bench/gemm --mlp (every type),
# bench/mlp (epochs on cuBLAS and on hpdl's own GEMMs, PyTorch).
export HPDL_COMMIT=$(cat .commit)
make -j16 build/gpu/gpu_mlp build/gpu/gpu_fp8 build/gpu/gpu_cnn build/bench/mlp GPU_CC=90 NVOPT=-O3 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
for t in gpu_gemm gpu_mlp gpu_fp8 gpu_cnn; do
  timeout 300 build/gpu/$t > $OUT/$t.log 2>&1; echo "$t rc $?" >> $OUT/$t.log; tail -2 $OUT/$t.log
done
mkdir -p $OUT/res
build/bench/gemm --mlp --output $OUT/res > $OUT/gemm_mlp.log 2>&1
grep -E "^  (auto|best)" $OUT/gemm_mlp.log
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist > $OUT/data.log 2>&1
timeout 400 build/bench/mlp --output $OUT/res > $OUT/mlp.log 2>&1; tail -12 $OUT/mlp.log
cd $OUT && tar czf res.tgz *.log res && rm -rf *.log res
