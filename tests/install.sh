#!/usr/bin/env bash
# make install into a staging folder (DESTDIR), then build small programs
# against it as a user would: with pkg-config (hpdl; hpdl-mpi with mpicc;
# hpdl-cuda with nvcc, compiled and linked, not run) and with CMake's
# find_package(hpdl); then make uninstall must leave the prefix empty.
# Closing line: N passed, N failed, N skipped.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
stage=$scratch/stage prefix=/opt/hpdl
passed=0 failed=0 skipped=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | tail -n 20 | sed 's/^/    /'; failed=$((failed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }
run() { # run NAME COMMAND...: pass when the command succeeds
    local out
    if out=$("${@:2}" 2>&1); then pass "$1"; else fail "$1" "$out"; return 1; fi
}
# make and cmake --build from inside make test: not the outer make's jobs and flags.
unset MAKEFLAGS MAKELEVEL MFLAGS
mk() { make -s --no-print-directory -C "$root" "$@" DESTDIR="$stage" PREFIX="$prefix"; }
pc() { PKG_CONFIG_PATH=$stage$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage pkg-config "$@"; }
version=$(sed -n 's/^#define HPDL_VERSION "\(.*\)"$/\1/p' "$root/hpdl.h")
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
cd "$scratch" || exit 1

cat > prog.c <<'C'
#include <stdio.h>
#include "hpdl.h"
int main(void) {
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, c[3];
    if (hpdl_vec_add_f32(3, a, b, c) != HPDL_OK) return 1;
    printf("hpdl %s: %g %g %g %g\n", HPDL_VERSION, c[0], c[1], c[2], sqrt(c[2] * c[2]));
    return 0;
}
C
expected="hpdl $version: 5 7 9 9"
sed 's/"hpdl.h"/"hpdl_mpi.h"/' prog.c > prog_mpi.c

run "make install DESTDIR=... PREFIX=$prefix" mk install || { echo "$passed passed, $failed failed, $skipped skipped"; exit 1; }
files=$(cd "$stage$prefix" && find . -type f | sort | tr '\n' ' ')
want="./include/hpdl/hpdl.h ./include/hpdl/hpdl_cuda.cuh ./include/hpdl/hpdl_mpi.h ./lib/cmake/hpdl/hpdlConfig.cmake \
./lib/cmake/hpdl/hpdlConfigVersion.cmake ./lib/pkgconfig/hpdl-cuda.pc ./lib/pkgconfig/hpdl-cudnn.pc \
./lib/pkgconfig/hpdl-mpi.pc ./lib/pkgconfig/hpdl.pc "
if [ "$files" = "$want" ]; then pass "installed: headers in include/hpdl/, 4 .pc files, 2 CMake files"
else fail "installed files" "found: $files"$'\n'"wanted: $want"; fi

if ! command -v pkg-config >/dev/null 2>&1; then skip "pkg-config: not installed (scripts/deps.sh installs it)"
else
    v=$(pc --modversion hpdl 2>&1)
    if [ "$v" = "$version" ]; then pass "pkg-config --modversion hpdl: $v"; else fail "pkg-config --modversion hpdl" "$v"; fi
    flags=$(pc --cflags --libs hpdl)
    if run "cc prog.c \$(pkg-config --cflags --libs hpdl): $flags" cc -std=c99 -pedantic -Wall -Wextra -Werror prog.c $flags -o prog_pc; then
        out=$(./prog_pc 2>&1)
        if [ "$out" = "$expected" ]; then pass "its program runs: $out"; else fail "its program runs" "$out"; fi
    fi
    for m in hpdl-cuda hpdl-cudnn hpdl-mpi; do
        out=$(pc --cflags --libs $m 2>&1)
        if [ $? -eq 0 ] && [[ "$out" == *"-I$stage$prefix/include/hpdl"* ]]; then pass "pkg-config --cflags --libs $m: $out"
        else fail "pkg-config --cflags --libs $m" "$out"; fi
    done
    if ! command -v mpicc >/dev/null 2>&1; then skip "mpicc prog.c with hpdl-mpi: no mpicc"
    else
        run "mpicc prog.c (hpdl_mpi.h) \$(pkg-config --cflags --libs hpdl-mpi)" \
            mpicc -std=c99 -Wall -Wextra -Werror prog_mpi.c $(pc --cflags --libs hpdl-mpi) -o prog_mpi
    fi
    if [ -z "$nvcc" ]; then skip "nvcc prog.cu with hpdl-cuda: no nvcc"
    else
        cat > prog.cu <<'CU'
#include "hpdl_cuda.cuh"
int main(void) {
    if (!hpdl_cuda_available()) return 1;
    float *a, *b, *c;
    HPDL_CUDA_CHECK(cudaMalloc(&a, 3 * sizeof(float)));
    b = a, c = a;
    HPDL_CHECK(hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, 3, a, b, c, 0));
    return 0;
}
CU
        run "nvcc prog.cu \$(pkg-config --cflags --libs hpdl-cuda) (compiled and linked, not run)" \
            "$nvcc" -std=c++17 -arch=sm_80 prog.cu $(pc --cflags --libs hpdl-cuda) -o prog_cuda
    fi
fi

if ! command -v cmake >/dev/null 2>&1; then skip "CMake find_package(hpdl): cmake not installed"
else
    mkdir -p cmake_src && cp prog.c cmake_src/ && cat > cmake_src/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.10)
project(consumer C)
find_package(hpdl ${version%.*} REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog hpdl::hpdl)
CMAKE
    if run "cmake: find_package(hpdl ${version%.*}), target_link_libraries(prog hpdl::hpdl)" \
        bash -c "cmake -S cmake_src -B cmake_build -DCMAKE_PREFIX_PATH='$stage$prefix' && cmake --build cmake_build"; then
        out=$(cmake_build/prog 2>&1)
        if [ "$out" = "$expected" ]; then pass "its program runs: $out"; else fail "its program runs" "$out"; fi
    fi
    # Components: hpdl::mpi builds the MPI program; hpdl::cuda is found (CUDAToolkit).
    components="$(command -v mpicc >/dev/null 2>&1 && echo mpi) $([ -n "$nvcc" ] && echo cuda)"
    if [ -z "${components// /}" ]; then skip "cmake: COMPONENTS mpi cuda (no mpicc, no nvcc)"
    else
        mkdir -p cmake_comp && cp prog_mpi.c cmake_comp/ && cat > cmake_comp/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.10)
project(consumer C)
find_package(hpdl REQUIRED COMPONENTS $components)
if(TARGET hpdl::mpi)
  add_executable(prog_mpi prog_mpi.c)
  target_link_libraries(prog_mpi hpdl::mpi)
endif()
CMAKE
        run "cmake: find_package(hpdl REQUIRED COMPONENTS$(printf ' %s' $components))$([[ $components == *mpi* ]] && echo ', prog_mpi with hpdl::mpi')" \
            bash -c "cmake -S cmake_comp -B cmake_comp_build -DCMAKE_PREFIX_PATH='$stage$prefix' && cmake --build cmake_comp_build"
    fi
    sed -i "s/find_package(hpdl [0-9.]* REQUIRED)/find_package(hpdl 99.0 REQUIRED)/" cmake_src/CMakeLists.txt
    if cmake -S cmake_src -B cmake_build99 -DCMAKE_PREFIX_PATH="$stage$prefix" >/dev/null 2>&1; then
        fail "cmake: find_package(hpdl 99.0) must fail"
    else pass "cmake: find_package(hpdl 99.0) fails (version $version)"; fi
fi

run "make uninstall DESTDIR=... PREFIX=$prefix" mk uninstall
left=$(cd "$stage$prefix" && find . -mindepth 1)
if [ -z "$left" ]; then pass "after make uninstall the prefix is empty"; else fail "after make uninstall the prefix holds" "$left"; fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
