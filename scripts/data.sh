#!/usr/bin/env bash
# Puts the four MNIST-format IDX files into data/fashion-mnist/ (decompressed),
# from $MNIST_DIR if given (your own MNIST or Fashion-MNIST folder, .gz or not,
# names with '-' or '.' before "idx"), else from Debian's dataset-fashion-mnist.
set -eu
src=${MNIST_DIR:-/usr/share/datasets/fashion-mnist}
dst=${1:-data/fashion-mnist}
mkdir -p "$dst"
for pair in train-images:idx3 train-labels:idx1 t10k-images:idx3 t10k-labels:idx1; do
    name=${pair%%:*} kind=${pair##*:}
    out="$dst/$name-$kind-ubyte"
    [ -s "$out" ] && continue
    found=""
    for cand in "$src/$name-$kind-ubyte" "$src/$name.$kind-ubyte"; do
        if [ -f "$cand.gz" ]; then gzip -dc "$cand.gz" > "$out.tmp" && mv "$out.tmp" "$out"; found=1; break; fi
        if [ -f "$cand" ]; then cp "$cand" "$out"; found=1; break; fi
    done
    if [ -z "$found" ]; then
        echo "data: no $name-$kind-ubyte[.gz] in $src (install dataset-fashion-mnist or set MNIST_DIR)" >&2
        exit 1
    fi
done
echo "data: IDX files ready in $dst"
