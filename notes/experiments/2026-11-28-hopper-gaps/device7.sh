# At the commit: gpu_mlp, then the committed run: bench/gemm --mlp (f32, f16, bf16) and bench/mlp.
export HPDL_COMMIT=$(cat .commit)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
build/gpu/gpu_mlp > $OUT/gpu_mlp.log 2>&1; echo "gpu_mlp rc $?" >> $OUT/gpu_mlp.log; tail -2 $OUT/gpu_mlp.log
timeout 200 build/bench/gemm --mlp --output $OUT/res > $OUT/gemm_mlp.log 2>&1; echo "gemm --mlp rc $?"; grep -E "geomean" $OUT/res/gemm_mlp.csv | grep -E "auto|best"
timeout 300 build/bench/mlp --output $OUT/res > $OUT/mlp.log 2>&1; echo "mlp rc $?"
cd $OUT && tar czf res.tgz *.log res && rm -rf *.log res
