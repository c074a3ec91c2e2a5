#!/usr/bin/env bash
# GPU utilisation while the small CNN trains (batch 32, the launch-bound case), sampled by NVML
# every 100 ms (cnn_train --util-csv), twice: steps launched kernel by kernel (--eager), then the
# same training with each step one CUDA graph replay (the change that should raise utilisation:
# no launch gaps between a step's ~50 kernels). Each run trains for LIMIT seconds, 185 by default
# (cnn_train --time-limit: epochs until one ends past it, evaluation included), so each series
# covers over 3 minutes, which the script checks; --quick: 15 s each, for a first look. Constant
# learning rate (the schedule does not matter here). Writes DIR/cnn_util_eager.csv and
# cnn_util_graphs.csv (t_s,gpu_util_pct,mem_util_pct,mem_used_mib,sm_clock_mhz,power_w,
# power_capped; + .context) and appends to DIR/cnn_util.log (the runs' output, with the means).
#   scripts/gpu_cnn_util.sh [--quick] [DIR]   DIR: results/<gpu>
#   LIMIT=S overrides the seconds, MODES="eager" or "graphs" runs one of the two
set -u
cd "$(dirname "$0")/.." || exit 1
limit=${LIMIT:-185}
[ "${1:-}" = --quick ] && { limit=${LIMIT:-15}; shift; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu" ] || { echo "gpu_cnn_util: no GPU (nvidia-smi found none)"; exit 1; }
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
DIR=${1:-results/$slug}
mkdir -p "$DIR" || exit 1
[ -x build/examples/cnn_train ] || make --no-print-directory build/examples/cnn_train || exit 1
[ -s data/fashion-mnist/t10k-labels-idx1-ubyte ] || scripts/data.sh data/fashion-mnist || exit 1
export HPDL_COMMIT=${HPDL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
for mode in ${MODES:-eager graphs}; do
    csv=$DIR/cnn_util_$mode.csv
    echo "== small CNN, batch 32, $limit s, $mode"
    build/examples/cnn_train --net small --batch 32 --lr 0.02 --schedule constant --epochs 100000 \
        --time-limit "$limit" --util-csv "$csv" $([ "$mode" = eager ] && echo --eager) || exit 1
    # the series' length: its last sample's time
    seconds=$(tail -n 1 "$csv" 2>/dev/null | cut -d, -f1)
    echo "$mode: ${seconds:-no} s of samples in $csv"
    if awk -v s="${seconds:-0}" -v want="$limit" 'BEGIN { exit !(want >= 180 && s < 180) }'; then
        echo "gpu_cnn_util: WARNING: the $mode series is shorter than 3 minutes"
    fi
done 2>&1 | tee -a "$DIR/cnn_util.log"
exit "${PIPESTATUS[0]}"
