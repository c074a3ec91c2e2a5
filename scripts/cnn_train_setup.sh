# Sourced by the scripts that run examples/cnn_train on the GPU present: sets DIR to $1, else
# results/<gpu> (the GPU's name as make bench spells it), makes it, builds cnn_train and unpacks
# Fashion-MNIST where missing, and exports HPDL_COMMIT. NAME: the calling script's, for messages.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu" ] || { echo "$NAME: no GPU (nvidia-smi found none)"; exit 1; }
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')
DIR=${1:-results/$slug}
mkdir -p "$DIR" || exit 1
[ -x build/examples/cnn_train ] || make --no-print-directory build/examples/cnn_train || exit 1
[ -s data/fashion-mnist/t10k-labels-idx1-ubyte ] || scripts/data.sh data/fashion-mnist || exit 1
export HPDL_COMMIT=${HPDL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
