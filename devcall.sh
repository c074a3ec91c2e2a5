make -j16 build/bench/gemm > $OUT/make.log 2>&1 || { tail -30 $OUT/make.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
HPDL_RESULTS=$OUT build/bench/gemm > $OUT/gemm.log 2>&1; echo "bench rc $?"
grep -E "cublas|warptile|  mma |wgmma|peak" $OUT/gemm.log | grep -v "unsupported\|skipped" | grep -E "cublas|warptile|  mma |wgmma_persistent|wgmma_cluster|peak" | grep -E "^(f32|f64|f16|bf16|tf32) " | awk '{print $1,$2,$3,$4,$5,$7,$8}'
cat $OUT/gemm.csv
