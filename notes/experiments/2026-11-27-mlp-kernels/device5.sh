# One H200: gpu_gemm (thin kernel: accumulator chains, MN-major A);
# bench/gemm --mlp f16, in turns over two rounds: one chain (chain1),
# four chains (chains4), four chains + MN-major A in the thin kernel (mn).
export HPDL_COMMIT=$(cat .commit)
build/gpu/gpu_gemm > $OUT/gpu_gemm.log 2>&1; echo "gpu_gemm rc $?" >> $OUT/gpu_gemm.log
for i in 1 2; do
  build/exp/gemm_chain1 --mlp --precision f16 --output $OUT/chain1_$i > $OUT/chain1_$i.log 2>&1
  build/exp/gemm_chains4 --mlp --precision f16 --output $OUT/chains4_$i > $OUT/chains4_$i.log 2>&1
  build/bench/gemm --mlp --precision f16 --output $OUT/mn_$i > $OUT/mn_$i.log 2>&1
done
cd $OUT && tar czf res.tgz *.log && rm -rf *.log chain* mn_*
