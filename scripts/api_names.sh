#!/usr/bin/env bash
# Lists the public functions (hpdl_<name>, one per line, sorted) that a
# preprocessed translation unit on stdin defines as HPDL_LAZY templates:
# every public function of hpdl_cuda.cuh, and of hpdl_mpi.h under nvcc.
# The compile check (tests/all_headers.cu) instantiates each of them.
set -eu
grep -oE 'template <int hpdl__lazy = 0> static inline [^(]*[ *]hpdl_[a-z0-9][a-z0-9_]* *\(' \
    | sed -E 's/.*[ *](hpdl_[a-z0-9_]+) *\($/\1/' | sort -u
