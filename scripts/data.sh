#!/usr/bin/env bash
# Puts a data set under data/, checked, whole or not at all.
#
#   scripts/data.sh [DST]             the four MNIST-format IDX files into DST
#                                     (data/fashion-mnist/), decompressed, from
#                                     $MNIST_DIR if given (your own MNIST or
#                                     Fashion-MNIST folder, .gz or not, names with
#                                     '-' or '.' before "idx"), else from Debian's
#                                     dataset-fashion-mnist.
#   CIFAR_DIR=SRC scripts/data.sh --cifar10 [DST]
#                                     the six files of CIFAR-10's binary version
#                                     (data_batch_1..5.bin, test_batch.bin) into DST
#                                     (data/cifar-10/), from SRC: the folder
#                                     cifar-10-batches-bin, the folder above it, or
#                                     the archive cifar-10-binary.tar.gz.
set -eu

fashion_mnist() {
    local src=${MNIST_DIR:-/usr/share/datasets/fashion-mnist} dst=$1 pair name kind out found cand from copy
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
}

CIFAR_FILES="data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin"
CIFAR_RECORD=3073 # 1 label byte + 32x32 red, green and blue bytes

# The scratch folder of cifar10 goes when the script ends, however it ends.
stage=""
trap 'if [ -n "$stage" ]; then rm -rf "$stage"; fi' EXIT

cifar_fail() {
    echo "data: $1: nothing written" >&2
    exit 1
}

# The folder under $1 that holds data_batch_1.bin: $1 or $1/cifar-10-batches-bin.
cifar_folder() {
    local d
    for d in "$1" "$1/cifar-10-batches-bin"; do
        [ -f "$d/data_batch_1.bin" ] && { echo "$d"; return 0; }
    done
    return 1
}

# cifar_check FOLDER SHOWN: every file of FOLDER is there and a whole number
# of records (labels are the loader's to check: reading them here would take
# longer than the copy). Messages name a file as SHOWN<name>.
cifar_check() {
    local f size
    for f in $CIFAR_FILES; do
        [ -f "$1/$f" ] || cifar_fail "no $2$f"
        size=$(wc -c < "$1/$f") || cifar_fail "cannot read $2$f"
        if [ "$size" -eq 0 ] || [ $((size % CIFAR_RECORD)) -ne 0 ]; then
            cifar_fail "$2$f: $size bytes, expected a positive multiple of $CIFAR_RECORD (a truncated or foreign file?)"
        fi
    done
}

# The six files go to a scratch folder beside DST, are checked there, and
# only then are renamed into DST: a failure leaves DST as it was.
cifar10() {
    local src=${CIFAR_DIR:-} dst=$1 f from missing=""
    [ -n "$src" ] || cifar_fail "set CIFAR_DIR to the CIFAR-10 binary version (folder or .tar.gz)"
    for f in $CIFAR_FILES; do [ -s "$dst/$f" ] || missing=1; done
    if [ -z "$missing" ]; then echo "data: CIFAR-10 files ready in $dst"; return 0; fi
    [ -e "$src" ] || cifar_fail "CIFAR_DIR=$src: no such file or folder"
    mkdir -p "$(dirname "$dst")"
    stage=$(mktemp -d "${dst%/}.tmp.XXXXXX")
    if [ -d "$src" ]; then
        from=$(cifar_folder "$src") || cifar_fail "no data_batch_1.bin in $src or $src/cifar-10-batches-bin"
        cifar_check "$from" "$from/"
        for f in $CIFAR_FILES; do cp "$from/$f" "$stage/$f" || cifar_fail "cannot copy $from/$f"; done
    else
        tar -xzf "$src" -C "$stage" || cifar_fail "cannot unpack $src (tar failed; a corrupt or truncated archive?)"
        from=$(cifar_folder "$stage") || cifar_fail "no data_batch_1.bin in $src (expected cifar-10-batches-bin/)"
        if [ "$from" = "$stage" ]; then cifar_check "$from" "$src: "
        else cifar_check "$from" "$src: ${from#"$stage"/}/"; fi
        [ "$from" = "$stage" ] || for f in $CIFAR_FILES; do mv "$from/$f" "$stage/$f"; done
    fi
    mkdir -p "$dst"
    for f in $CIFAR_FILES; do mv "$stage/$f" "$dst/$f"; done
    echo "data: CIFAR-10 files ready in $dst"
}

if [ "${1:-}" = --cifar10 ]; then
    cifar10 "${2:-data/cifar-10}"
else
    fashion_mnist "${1:-data/fashion-mnist}"
fi
