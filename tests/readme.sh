#!/usr/bin/env bash
# Builds and runs the README's programs (and docs/usage.md's) as a reader
# would: each ```c block after a line "<!-- test: NAME -->" is saved as
# prog.c (prog.cu for CUDA) in a scratch folder beside copies of the three
# headers, built with the documented command and run. The CPU program must also be
# examples/mlp_train_cpu.c, word for word. Closing line: N passed, N failed, N skipped.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
passed=0 failed=0 skipped=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | tail -n 20 | sed 's/^/    /'; failed=$((failed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }

# block NAME: the code block after "<!-- test: NAME -->" in README.md or docs/usage.md.
block() {
    awk -v mark="<!-- test: $1 -->" '
        $0 == mark { armed = 1; next }
        armed && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }' "$root/README.md" "$root/docs/usage.md"
}

# prepare NAME FILE: a fresh folder with the headers and the block as FILE.
prepare() {
    rm -rf "$scratch/$1" && mkdir -p "$scratch/$1" && cd "$scratch/$1" || exit 1
    cp "$root"/hpdl.h "$root"/hpdl_cuda.cuh "$root"/hpdl_mpi.h .
    block "$1" > "$2"
}

# The CPU program: same as the example, builds warning-free, learns.
prepare cpu prog.c
if cmp -s prog.c "$root/examples/mlp_train_cpu.c"; then pass "cpu: README program is examples/mlp_train_cpu.c"
else fail "cpu: README program differs from examples/mlp_train_cpu.c" "$(diff prog.c "$root/examples/mlp_train_cpu.c")"; fi
if out=$(cc -std=c99 -O2 -pedantic -Wall -Wextra -Werror prog.c -lm 2>&1); then
    pass "cpu: cc -std=c99 -O2 prog.c -lm"
    if [ ! -s "$root/data/fashion-mnist/t10k-labels-idx1-ubyte" ]; then skip "cpu: run (no data: make data)"
    else
        mkdir -p data && ln -s "$root/data/fashion-mnist" data/fashion-mnist
        out=$(./a.out 2>&1)
        acc=$(printf '%s\n' "$out" | sed -n 's/^epoch 3: .*test accuracy \([0-9.]*\) %$/\1/p')
        if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 80) }' && [ "$(wc -l < mlp_cpu.csv)" -eq 4 ]; then
            pass "cpu: three epochs, test accuracy $acc %"
        else fail "cpu: run" "$out"; fi
    fi
else fail "cpu: cc -std=c99 -O2 prog.c -lm" "$out"; fi

# The MPI program, with the README's command line (as root, with the two
# variables the README names; make exports them).
prepare mpi prog.c
if ! command -v mpicc >/dev/null 2>&1; then skip "mpi: no mpicc"
elif ! out=$(mpicc -std=c99 -O2 -Wall -Wextra -Werror prog.c -lm 2>&1); then fail "mpi: mpicc -std=c99 -O2 prog.c -lm" "$out"
else
    pass "mpi: mpicc -std=c99 -O2 prog.c -lm"
    out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe -np 4 ./a.out 2>&1)
    if printf '%s\n' "$out" | grep -qx 'sum over 4 ranks: 10 20 30'; then pass "mpi: mpirun --oversubscribe -np 4 ./a.out"
    else fail "mpi: mpirun --oversubscribe -np 4 ./a.out" "$out"; fi
fi

# The CUDA program: without a GPU it must say so and exit 1.
prepare cuda prog.cu
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
if [ -z "$nvcc" ]; then skip "cuda: no nvcc"
elif ! out=$("$nvcc" -O3 -arch=native prog.cu -lcublas 2>&1); then fail "cuda: nvcc -O3 -arch=native prog.cu -lcublas" "$out"
else
    pass "cuda: nvcc -O3 -arch=native prog.cu -lcublas"
    out=$(./a.out 2>&1); rc=$?
    if printf '%s\n' "$out" | grep -qx 'c\[0\] = 3, c\[n-1\] = 3'; then pass "cuda: run on the GPU"
    elif [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q 'no CUDA GPU (or no driver)'; then pass "cuda: without a GPU it says so"
    else fail "cuda: run" "$out"; fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
