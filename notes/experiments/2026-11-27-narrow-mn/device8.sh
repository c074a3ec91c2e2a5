# One H200, the committed run at the commit: bench/gemm --mlp (f32, f16,
# bf16) and bench/mlp, their CSVs in one archive.
export HPDL_COMMIT=$(cat .commit)
timeout 200 build/bench/gemm --mlp --output $OUT/res > $OUT/gemm_mlp.log 2>&1; echo "gemm --mlp rc $?"; grep -E "^  auto|best" $OUT/gemm_mlp.log | head
timeout 300 build/bench/mlp --output $OUT/res > $OUT/mlp.log 2>&1; echo "mlp rc $?"
cd $OUT && tar czf res.tgz res *.log && rm -rf res *.log
