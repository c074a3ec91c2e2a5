# One H200: kernel durations (ncu) of the narrow MN-major kernel with B's
# rows loaded 8 at a time and the next round's A loads in flight, f16 and
# f32, at 512 x 10 x 128 and 2048 x 10 x 3000, beside cuBLAS's kernels.
for s in "512 128" "2048 3000" "512 3000" "512 32"; do
  set -- $s
  ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum build/exp/narrow_probe $1 $2 > $OUT/dur_$1_$2.txt 2>&1
done
ncu --set full --kernel-name regex:narrow --launch-skip 1 --launch-count 1 build/exp/narrow_probe 2048 3000 > $OUT/full_f16_2048_3000.txt 2>&1
for f in $OUT/dur_*.txt; do echo "== $f"; grep -E "^  [a-z]|gpu__time" $f | sed -e 's/(T1::Params).*//' -e 's/(cublasLt::cublasSplitKParams.*//' -e 's/(hpdl__gemm_args.*//' | paste - - | awk '{print $2, $NF}'; done
