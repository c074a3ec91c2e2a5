#!/usr/bin/env bash
# scripts/kernel_trace.{c,py}: the tracer builds (where CUPTI's headers are),
# and the summary of two made-up processes' records gives the sums worked out
# by hand: time per kernel (template instances together, namespaces kept),
# and per NVTX range at launch (the innermost one, on the launching thread,
# a range's end excluded, kernels launched outside any range apart), and
# --skip leaving out a range's kernels.
# Closing line: N passed, N failed, N skipped.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0
expect() { # expect WHAT FILE LINE: FILE holds LINE
    if grep -qxF "$3" "$2"; then echo "ok   $1"; passed=$((passed + 1))
    else echo "FAIL $1: no line '$3' in"; sed 's/^/    /' "$2"; failed=$((failed + 1)); fi
}

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$cuda/include/cupti.h" ]; then
    if gcc -shared -fPIC -O2 -std=c11 -Wall -Wextra -Werror -I"$cuda/include" "$root/scripts/kernel_trace.c" \
        -L"$cuda/lib64" -lcupti -o "$tmp/lib.so" 2> "$tmp/gcc.log"; then
        echo "ok   kernel_trace.c builds"; passed=$((passed + 1))
    else echo "FAIL kernel_trace.c:"; cat "$tmp/gcc.log"; failed=$((failed + 1)); fi
else echo "skip kernel_trace.c: no CUPTI headers under $cuda"; skipped=$((skipped + 1)); fi

mkdir "$tmp/run"
# Process 1, thread 7: "step" holds "forward" (100-200) and "backward"
# (200-300); kernels launched at 150 (forward), 250 (backward), 300 (the
# step: backward ended there) and 600 (after the step, no range). Thread 8
# launches at 150, in no range of its own. Kernel times in us.
cat > "$tmp/run/trace.1.csv" << 'EOF'
mark,7,50,start,1,step
mark,7,100,start,2,forward
mark,7,200,end,2,
mark,7,200,start,3,backward
mark,7,300,end,3,
mark,7,500,end,1,
call,7,150,151,10
call,7,250,251,11
call,7,300,301,12
call,7,600,601,13
call,8,150,151,14
kernel,0,7,1000000,1010000,10,_Z4gemmIfEvPT_
kernel,0,7,1010000,1040000,11,_Z4gemmIdEvPT_
kernel,0,7,1040000,1045000,12,_ZN3sgd6updateEPf
kernel,0,7,1045000,1047000,13,_ZN3sgd6updateEPf
kernel,0,13,1000000,1004000,14,_Z4gemmIfEvPT_
EOF
# Process 2: one kernel whose launch was not traced, in the range "step, rank 1".
cat > "$tmp/run/trace.2.csv" << 'EOF'
mark,9,0,start,1,step, rank 1
kernel,1,7,2000000,2006000,99,_Z4gemmIfEvPT_
EOF
python3 "$root/scripts/kernel_trace.py" "$tmp/run" --csv "$tmp/run/out" > "$tmp/run/stdout" 2>&1
# 57 us of kernels in all: gemm 10 + 30 + 4 + 6 = 50, sgd::update 5 + 2 = 7.
expect "kernels: template instances together" "$tmp/run/out_kernels.csv" '"gemm",4,0.0500,12.500,0.8772'
expect "kernels: the namespace kept" "$tmp/run/out_kernels.csv" '"sgd::update",2,0.0070,3.500,0.1228'
expect "phases: the innermost range (forward)" "$tmp/run/out_phases.csv" '"forward",1,0.0100,10.000,0.1754'
expect "phases: the innermost range (backward)" "$tmp/run/out_phases.csv" '"backward",1,0.0300,30.000,0.5263'
expect "phases: a range's end excluded" "$tmp/run/out_phases.csv" '"step",1,0.0050,5.000,0.0877'
expect "phases: outside any range, or on another thread" "$tmp/run/out_phases.csv" '"(no range)",2,0.0060,3.000,0.1053'
expect "phases: a launch not traced" "$tmp/run/out_phases.csv" '"(launch not traced)",1,0.0060,6.000,0.1053'
expect "summary line" "$tmp/run/stdout" "2 processes ran kernels: 6 kernels"
# Skipping "step" leaves out what was launched inside it, nested ranges too.
python3 "$root/scripts/kernel_trace.py" "$tmp/run" --skip step --csv "$tmp/run/skip" > "$tmp/run/skip.out" 2>&1
expect "--skip: nested ranges left out too" "$tmp/run/skip_kernels.csv" '"gemm",2,0.0100,5.000,0.8333'
expect "--skip: what was left out" "$tmp/run/skip.out" "left out: 3 kernels, 0.045 GPU ms, launched inside step"

mkdir "$tmp/empty"
if python3 "$root/scripts/kernel_trace.py" "$tmp/empty" > "$tmp/empty.log" 2>&1; then
    echo "FAIL no trace files: exit 0"; failed=$((failed + 1))
else expect "no trace files: an error that says so" "$tmp/empty.log" "kernel_trace.py: no trace.*.csv in $tmp/empty"; fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
