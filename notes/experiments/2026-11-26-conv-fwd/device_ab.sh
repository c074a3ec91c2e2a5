#!/usr/bin/env bash
# Ping-pong against cooperative consumers on the same GPU (2026-11-26): HPDL_EXP_NO_PP=1 (an experiment
# switch) launches the cooperative kernel for every tile width. ResNet-18's layers (int8 AUTO, int8 mma,
# f16 AUTO, batch 256; ../2026-11-26-conv-epilogue/layers.cu), bench/conv's wgmma rung (f16, ResNet-50
# layers), bench/quantize's CNN rows, each in turns. Files in $OUT: device.log, build.log, csv.tar.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/device.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
t() { local left=$((570 - (SECONDS-start))); [ $left -lt 10 ] && { echo "skipped: no time left"; return 124; }
      timeout $(( $1 < left ? $1 : left )) "${@:2}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $HPDL_COMMIT"
make -j16 build/bench/conv build/bench/quantize > $O/build.log 2>&1 &
mk=$!
nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a notes/experiments/2026-11-26-conv-epilogue/layers.cu \
    -o build/layers_f16 -lcublas -ldl -lcuda
at "layers built"
for r in 1 2; do
  echo "-- ping-pong"; t 45 build/layers_f16 256 2>&1 | tail -13
  echo "-- cooperative"; HPDL_EXP_NO_PP=1 t 45 build/layers_f16 256 2>&1 | tail -13
done
wait $mk; echo "build exit $?"
mkdir -p $O/pp $O/co $O/qpp $O/qco
for pass in forward backward-data; do
  at "bench/conv f16 wgmma $pass"
  t 60 build/bench/conv --precision f16 --rung wgmma --pass $pass --output $O/pp > $O/pp/conv_$pass.log 2>&1
  HPDL_EXP_NO_PP=1 t 60 build/bench/conv --precision f16 --rung wgmma --pass $pass --output $O/co > $O/co/conv_$pass.log 2>&1
  for v in pp co; do echo "-- $v"; grep -E "geometric|(3x3|1x1) .* wgmma" $O/$v/conv_$pass.log; done
done
at "bench/quantize"
t 100 build/bench/quantize --output $O/qpp > $O/qpp/quantize.log 2>&1; grep -E "batch 256" $O/qpp/quantize.log
HPDL_EXP_NO_PP=1 t 100 build/bench/quantize --output $O/qco > $O/qco/quantize.log 2>&1; grep -E "batch 256" $O/qco/quantize.log
tar cf $O/csv.tar -C $O pp co qpp qco && rm -rf $O/pp $O/co $O/qpp $O/qco
at "done"
