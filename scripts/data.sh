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
        # Into $out.tmp first, then renamed: a failed copy leaves nothing
        # that a later run would take for a finished file.
        if [ -f "$cand.gz" ]; then from=$cand.gz; copy="gzip -dc"
        elif [ -f "$cand" ]; then from=$cand; copy="cat"
        else continue; fi
        if ! $copy "$from" > "$out.tmp"; then
            rm -f "$out.tmp"
            echo "data: cannot read $from ($copy failed; a corrupt or truncated file?): nothing written" >&2
            exit 1
        fi
        mv "$out.tmp" "$out"
        found=1
        break
    done
    if [ -z "$found" ]; then
        echo "data: no $name-$kind-ubyte[.gz] in $src (install dataset-fashion-mnist or set MNIST_DIR)" >&2
        exit 1
    fi
done
echo "data: IDX files ready in $dst"
