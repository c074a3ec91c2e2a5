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
NAME=gpu_cnn_util
. scripts/cnn_train_setup.sh "$@"
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
