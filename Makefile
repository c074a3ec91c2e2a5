# hpdl - build, test and bench. `make help` lists the targets.
#
# Sources are found by name, so adding a file needs no edit here:
#   tests/test_*.c   CPU tests (gcc, clang, C++, ASan+UBSan)
#   tests/gpu_*.cu   GPU tests (skip cleanly without a GPU)
#   tests/mpi_*.c    MPI tests, run on 1..4 ranks
#   examples/*.c|cu  one program per course task
#   bench/*.c|cu     one bench per task
# A .cu file that includes hpdl_mpi.h is built with MPI flags too, a .c
# example that does with mpicc.

SHELL     := /bin/bash
# make predefines CC as cc, so `CC ?= gcc` would never apply: gcc unless CC
# is given (make CC=clang, or in the environment).
ifeq ($(origin CC),default)
CC        := gcc
endif
CLANG     ?= clang
CXX       ?= g++
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
PREFIX    ?= /usr/local
B         := build
# Open MPI refuses root (CI, containers) unless both are set.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
# NVLink multicast stays off: it can take a shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0

# ---- features ---------------------------------------------------------------
HAVE_NVCC  := $(if $(NVCC),1,)
GPU_CC     := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '. ')
HAVE_GPU   := $(if $(GPU_CC),1,)
HAVE_MPI    = $(shell command -v mpicc >/dev/null 2>&1 && echo 1)
HAVE_NCCL  := $(shell test -f $(CUDA_HOME)/include/nccl.h -o -f /usr/include/nccl.h && echo 1)
HAVE_CUDNN := $(shell ls $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/*-linux-gnu/cudnn.h 2>/dev/null | grep -q . && echo 1)
HAVE_PLOT   = $(shell command -v gnuplot >/dev/null 2>&1 && echo 1)
mark        = $(if $(1),✓,✗)

# Build for the GPU present. Without one, nothing runs device code, so every
# program is compiled to unoptimised Hopper PTX and host code (-Xcicc -O0,
# -O0: it checks that the program compiles and links, and lets its GPU tests
# skip; no ptxas; 4-9x less nvcc time, e.g. bench/gemm.cu 92 -> 10 s here), and
# tests/all_headers.cu to optimised machine code for Hopper (sm_90a) and
# Ampere (sm_80). A program builds only the kernels it calls (HPDL_LAZY in
# hpdl_cuda.cuh: including the header costs ~3 s, a call of the f16 GEMM
# ~30 s, bench/compile), so all_headers.cu, which calls every public
# function, is the one file that checks every kernel for both GPUs. Binaries
# built without a GPU are for checking only: build on the GPU machine to run.
ifeq ($(GPU_CC),90)
NVARCH := -gencode arch=compute_90a,code=sm_90a
else ifneq ($(GPU_CC),)
NVARCH := -gencode arch=compute_$(GPU_CC),code=sm_$(GPU_CC)
else
NVARCH := -gencode arch=compute_90a,code=compute_90a -Xcicc -O0
NVOPT  := -O0
ARCH_CHECKS := $(B)/check/sm80_all_headers.o $(B)/check/sm90a_all_headers.o
endif

WARN      := -Wall -Wextra -Werror
CFLAGS_C  := -std=c99 -pedantic $(WARN) -O2 -march=native -I.
CXXFLAGS  := -x c++ -std=c++11 $(WARN) -O2 -I.
SANFLAGS  := -std=c99 -pedantic $(WARN) -O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer -I.
NVOPT     ?= -O3
NVCOMMON  := -std=c++17 -I. -Xcompiler -Wall,-Wextra -lineinfo
NVFLAGS   := $(NVCOMMON) $(NVOPT) $(NVARCH)
SM80_ARCH := -gencode arch=compute_80,code=sm_80
# -ldl: the NVML sampler's dlopen (part of libc from glibc 2.34, a library before)
NVLIBS    := -lcublas -lcublasLt -ldl -Xlinker -rpath=$(CUDA_HOME)/lib64
ifeq ($(HAVE_NCCL),1)
NVLIBS    += -lnccl
endif
# cuDNN: the convolution's vendor backend (HPDL_CONV_CUDNN) and bench/conv's anchor.
ifeq ($(HAVE_CUDNN),1)
NVFLAGS   += -DHPDL_HAVE_CUDNN
NVLIBS    += -lcudnn
endif
MPI_CFLAGS  = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LDFLAGS = $(shell mpicc --showme:link 2>/dev/null)

# ---- sources ----------------------------------------------------------------
HEADERS    := hpdl.h hpdl_cuda.cuh hpdl_mpi.h $(wildcard tests/*.h tests/fuzz/*.h)
CPU_TESTS  := $(patsubst tests/%.c,%,$(wildcard tests/test_*.c))
GPU_TESTS  := $(patsubst tests/%.cu,%,$(wildcard tests/gpu_*.cu))
MPI_TESTS  := $(patsubst tests/%.c,%,$(wildcard tests/mpi_*.c))
EX_C       := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
EX_CU      := $(patsubst examples/%.cu,$(B)/examples/%,$(wildcard examples/*.cu))
# .c examples with a GPU option (they include hpdl_cuda.cuh behind __CUDACC__)
EX_C_CUDA  := $(patsubst examples/%.c,%,$(shell grep -l 'hpdl_cuda.cuh' examples/*.c 2>/dev/null))
BENCH_C    := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
BENCH_CU   := $(patsubst bench/%.cu,$(B)/bench/%,$(wildcard bench/*.cu))
uses_mpi    = $(shell grep -l 'hpdl_mpi.h' $(1) 2>/dev/null)

CPU_BINS   := $(addprefix $(B)/cpu/,$(CPU_TESTS)) $(addprefix $(B)/asan/,$(CPU_TESTS))
CHECK_OBJS := $(addprefix $(B)/clang/,$(addsuffix .o,$(CPU_TESTS))) \
              $(addprefix $(B)/cxx/,$(addsuffix .o,$(CPU_TESTS))) \
              $(B)/cpu/two_units $(B)/cxx/two_units
GPU_BINS   := $(if $(HAVE_NVCC),$(ARCH_CHECKS) $(addprefix $(B)/gpu/,$(GPU_TESTS)) $(EX_CU) $(BENCH_CU) \
              $(if $(HAVE_GPU),,$(addprefix $(B)/check/,$(addsuffix _cuda,$(EX_C_CUDA)))))
MPI_BINS    = $(if $(HAVE_MPI),$(addprefix $(B)/mpi/,$(MPI_TESTS)))

.PHONY: all test check fuzz bench examples data plots install uninstall clean help features deps course
.DEFAULT_GOAL := all

# The longest jobs first (the two all-headers checks, ~2 min each here), so
# that make -j never ends with one of them running alone.
all: features $(GPU_BINS) $(CPU_BINS) $(CHECK_OBJS) $(EX_C) $(BENCH_C) $(MPI_BINS)

features:
	@echo "hpdl features: $(call mark,$(HAVE_NVCC)) nvcc  $(call mark,$(HAVE_GPU)) GPU$(if $(GPU_CC), (sm_$(GPU_CC)))  $(call mark,$(HAVE_MPI)) mpicc  $(call mark,$(HAVE_NCCL)) NCCL  $(call mark,$(HAVE_CUDNN)) cuDNN  $(call mark,$(HAVE_PLOT)) gnuplot"

deps:
	@scripts/deps.sh

# ---- CPU builds ---------------------------------------------------------------
$(B)/cpu/%: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) $< -o $@ -lm

$(B)/asan/%: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) $< -o $@ -lm

$(B)/clang/%.o: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CLANG) $(CFLAGS_C) -c $< -o $@

$(B)/cxx/%.o: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# Two translation units of one program include the headers: must link.
$(B)/cpu/two_units: tests/two_units/a.c tests/two_units/b.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) tests/two_units/a.c tests/two_units/b.c -o $@ -lm

$(B)/cxx/two_units: tests/two_units/a.c tests/two_units/b.c $(HEADERS)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) tests/two_units/a.c tests/two_units/b.c -o $@ -lm

# A .c example that includes hpdl_mpi.h is built with mpicc when there is one
# (else it builds as a one-rank program: hpdl_mpi.h's HPDL_NO_MPI). One that
# includes hpdl_cuda.cuh (behind #ifdef __CUDACC__: a CPU program with a GPU
# option) is compiled as CUDA by nvcc where there is a GPU to run it, else
# by the C compiler, and its CUDA build is then compile-checked as
# $(B)/check/<name>_cuda.
c_example    = $(if $(and $(HAVE_MPI),$(call uses_mpi,$(1))),mpicc,$(CC)) $(CFLAGS_C) $(1) -o $(2) -lm -pthread
cuda_example = $(NVCC) -x cu $(NVFLAGS) $(1) -o $(2) $(NVLIBS) -lpthread
$(B)/examples/%: examples/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(if $(and $(HAVE_GPU),$(HAVE_NVCC),$(filter $*,$(EX_C_CUDA))),$(call cuda_example,$<,$@),$(call c_example,$<,$@))

$(B)/check/%_cuda: examples/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(call cuda_example,$<,$@)

$(B)/bench/%: bench/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -O3 $< -o $@ -lm

# ---- CUDA and MPI builds --------------------------------------------------------
define nvcc_build
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $(if $(call uses_mpi,$<),$(if $(HAVE_MPI),-DHPDL_HAVE_MPI $(MPI_CFLAGS),)) $< -o $@ $(NVLIBS) \
	    $(if $(call uses_mpi,$<),$(if $(HAVE_MPI),$(addprefix -Xlinker ,$(MPI_LDFLAGS)),))
endef
$(B)/gpu/%: tests/%.cu $(HEADERS)
	$(nvcc_build)
$(B)/examples/%: examples/%.cu $(HEADERS)
	$(nvcc_build)
$(B)/bench/%: bench/%.cu $(HEADERS)
	$(nvcc_build)

# The compile check instantiates every public function of the CUDA and MPI
# headers: tests/all_headers.cu includes their list, api.inc, which each
# check writes for itself into its own folder first (a shared list made by
# a rule of its own would let make -j start the checks last, not first).
CHECK_DEFS = $(if $(HAVE_MPI),-DHPDL_HAVE_MPI $(MPI_CFLAGS)) $(if $(HAVE_NCCL),-DHPDL_USE_NCCL)
define api_list
	@mkdir -p $(1)
	set -o pipefail; echo '#include "hpdl_mpi.h"' | $(NVCC) -E -x cu -std=c++17 -I. $(CHECK_DEFS) - | scripts/api_names.sh \
	    | sed 's/.*/    HPDL_INSTANTIATE(&)/' > $(1)/api.inc
endef

$(B)/check/sm80_all_headers.o: tests/all_headers.cu $(HEADERS) scripts/api_names.sh
	$(call api_list,$(B)/check/sm80)
	$(NVCC) $(NVCOMMON) -O3 $(SM80_ARCH) -I$(B)/check/sm80 $(CHECK_DEFS) -c $< -o $@

$(B)/check/sm90a_all_headers.o: tests/all_headers.cu $(HEADERS) scripts/api_names.sh
	$(call api_list,$(B)/check/sm90a)
	$(NVCC) $(NVCOMMON) -O3 -gencode arch=compute_90a,code=sm_90a -I$(B)/check/sm90a $(CHECK_DEFS) -c $< -o $@

$(B)/mpi/%: tests/%.c $(HEADERS)
	@mkdir -p $(@D)
	mpicc $(CFLAGS_C) $< -o $@ -lm

# ---- fuzzing ------------------------------------------------------------------------
# libFuzzer targets for the parsers of outside input (tests/fuzz/fuzz_*.c),
# each started from its committed seed corpus tests/fuzz/corpus/<name>/.
# make fuzz runs each for FUZZ_SECONDS; make test for FUZZ_TEST_SECONDS.
FUZZ_TARGETS      := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS         := $(addprefix $(B)/fuzz/,$(FUZZ_TARGETS))
FUZZ_SECONDS      ?= 60
FUZZ_TEST_SECONDS ?= 5
FUZZFLAGS         := -std=c99 $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined,float-cast-overflow \
                     -fno-sanitize-recover=all -I.
HAVE_FUZZER        = $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' \
                       | $(CLANG) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1 && echo 1)
fuzz_cmd           = scripts/fuzz.sh $(if $(HAVE_FUZZER),$(1) $(FUZZ_BINS),--skip $(FUZZ_TARGETS))
FUZZ_CMD           = $(call fuzz_cmd,$(FUZZ_TEST_SECONDS))

$(B)/fuzz/%: tests/fuzz/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZFLAGS) $< -o $@ -lm

# Here, not on the line above: make reads a rule's prerequisites where the
# rule stands, and the fuzz variables are only defined just above.
all: $(if $(HAVE_FUZZER),$(FUZZ_BINS))

fuzz:
	@$(if $(HAVE_FUZZER),$(MAKE) --no-print-directory $(FUZZ_BINS) &&) $(call fuzz_cmd,$(FUZZ_SECONDS))

# ---- test -------------------------------------------------------------------------
# make test builds everything, then runs these phases, each with its sums and
# time; make check builds and runs the first three only (the edit-test loop).
MPI_RUN  := mpirun --oversubscribe --bind-to none
CPU_RUNS  = --phase "CPU tests (gcc; C99 and C++ two units)" \
            $(addprefix $(B)/cpu/,$(CPU_TESTS)) $(B)/cpu/two_units $(B)/cxx/two_units
SAN_RUNS  = --phase "sanitizers (ASan + UBSan)" $(addprefix $(B)/asan/,$(CPU_TESTS))
FUZZ_RUNS = --phase "fuzz targets ($(FUZZ_TEST_SECONDS) s each)" "$(FUZZ_CMD)"
MPI_RUNS  = $(if $(HAVE_MPI),--phase "MPI tests (1..4 ranks)" \
            $(foreach t,$(MPI_TESTS),$(foreach n,1 2 3 4,"$(MPI_RUN) -np $(n) $(B)/mpi/$(t)")))
GPU_RUNS  = $(if $(HAVE_NVCC),--phase "GPU tests$(if $(HAVE_GPU),, (skipped: no GPU))" $(addprefix $(B)/gpu/,$(GPU_TESTS)))
DOC_RUNS  = --phase "README programs, charts, header maps, course docs, version, install, profiler" tests/readme.sh \
            "scripts/plots.sh --check" "scripts/api_map.py check" "scripts/api_doc.py --check" "scripts/course.py --check" tests/version.sh tests/install.sh \
            tests/kernel_trace.sh
timed     = t=$$SECONDS; $(1) && echo "-- build: $$((SECONDS - t)) s"
# deps is a prerequisite, not a line of the recipe: make expands a recipe's
# variables before it runs the first line, so MPI that deps installs on a
# fresh machine would otherwise leave HAVE_MPI empty and the MPI phase out.
test: deps
	@echo "make test: install what is missing (scripts/deps.sh; NO_DEPS=1 skips it), build everything (nvcc takes"
	@echo "most of the time), then CPU tests, sanitizers, MPI tests, GPU tests, README programs and charts,"
	@echo "version and install checks; make check: the CPU, sanitizer and MPI tests only"
	@$(call timed,$(MAKE) --no-print-directory -j$(shell nproc) data all)
	@scripts/run_tests.sh $(CPU_RUNS) $(SAN_RUNS) $(FUZZ_RUNS) $(MPI_RUNS) $(GPU_RUNS) $(DOC_RUNS)

check: deps
	@$(call timed,$(MAKE) --no-print-directory -j$(shell nproc) data $(B)/cpu/two_units $(B)/cxx/two_units \
	    $(addprefix $(B)/cpu/,$(CPU_TESTS)) $(addprefix $(B)/asan/,$(CPU_TESTS)) $(MPI_BINS))
	@scripts/run_tests.sh $(CPU_RUNS) $(SAN_RUNS) $(MPI_RUNS)

# ---- bench, data, plots ---------------------------------------------------------
GPU_SLUG := $(shell nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$$//')
# Your measurements go to results/<gpu>/ (git ignores it); bench/results/<gpu>/
# holds the published ones that the README cites.
RESULTS  ?= results/$(or $(GPU_SLUG),cpu)
NO_GPU   := no CUDA GPU (or no driver)
# The benches over MPI (allreduce, dp_scaling, cnn_dp) run with one rank per GPU present.
NGPU      := $(shell nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU')
BENCH_MPI := $(patsubst bench/%.cu,$(B)/bench/%,$(call uses_mpi,$(wildcard bench/*.cu)))
bench:
ifeq ($(HAVE_GPU),)
	@echo "bench: skipped all $(words $(BENCH_CU)) benches, $(NO_GPU); nothing measured"; exit 1
else ifeq ($(HAVE_NVCC),)
	@echo "bench: skipped all $(words $(BENCH_CU)) benches, no nvcc (install the CUDA Toolkit); nothing measured"; exit 1
else
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(shell nproc) data all
	@mkdir -p $(RESULTS)
	@failed=""; commit=$$(git rev-parse --short HEAD 2>/dev/null); \
	    for b in $(BENCH_C) $(BENCH_CU); do \
	        launch=; case " $(BENCH_MPI) " in *" $$b "*) launch="$(MPI_RUN) -np $(NGPU) -x HPDL_RESULTS -x HPDL_COMMIT";; esac; \
	        echo "== $$launch $$b"; HPDL_RESULTS=$(RESULTS) HPDL_COMMIT=$$commit $$launch $$b || failed+=" $${b##*/}"; \
	    done; \
	    $(MAKE) --no-print-directory plots; \
	    if [ -n "$$failed" ]; then echo "bench: measured nothing or failed:$$failed"; exit 1; fi
endif

examples: $(EX_C) $(EX_CU)

# CIFAR-10 only when CIFAR_DIR names a copy (folder or .tar.gz); first, so a
# machine without Fashion-MNIST still gets it.
data:
	@$(if $(CIFAR_DIR),CIFAR_DIR='$(CIFAR_DIR)' scripts/data.sh --cifar10 data/cifar-10)
	@scripts/data.sh data/fashion-mnist

plots:
	@scripts/plots.sh $(RESULTS)

# The tables of docs/course/*.md, from the committed CSVs under bench/results/.
course:
	@scripts/course.py

# make install PREFIX=/usr/local DESTDIR=: the headers in include/hpdl/,
# pkg-config files (hpdl, hpdl-cuda, hpdl-cudnn, hpdl-mpi) in lib/pkgconfig/
# and a CMake package (hpdl::hpdl, hpdl::cuda, hpdl::cudnn, hpdl::mpi) in
# lib/cmake/hpdl/, filled in from packaging/*.in. make uninstall removes them
# and the folders they leave empty. tests/install.sh tries both.
VERSION    := $(shell sed -n 's/^.define HPDL_VERSION "\(.*\)"$$/\1/p' hpdl.h)
INST_INC   := $(DESTDIR)$(PREFIX)/include/hpdl
INST_PC    := $(DESTDIR)$(PREFIX)/lib/pkgconfig
INST_CMAKE := $(DESTDIR)$(PREFIX)/lib/cmake/hpdl
PC_FILES   := hpdl.pc hpdl-cuda.pc hpdl-cudnn.pc hpdl-mpi.pc
CMAKE_FILES := hpdlConfig.cmake hpdlConfigVersion.cmake
FILL       := sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
              -e 's|@MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' -e 's|@MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g'
install:
	install -d $(INST_INC) $(INST_PC) $(INST_CMAKE)
	install -m 644 hpdl.h hpdl_cuda.cuh hpdl_mpi.h $(INST_INC)
	for f in $(PC_FILES); do $(FILL) packaging/$$f.in > $(INST_PC)/$$f && chmod 644 $(INST_PC)/$$f || exit 1; done
	for f in $(CMAKE_FILES); do $(FILL) packaging/$$f.in > $(INST_CMAKE)/$$f && chmod 644 $(INST_CMAKE)/$$f || exit 1; done

uninstall:
	rm -f $(addprefix $(INST_INC)/,hpdl.h hpdl_cuda.cuh hpdl_mpi.h) $(addprefix $(INST_PC)/,$(PC_FILES)) \
	    $(addprefix $(INST_CMAKE)/,$(CMAKE_FILES))
	for d in $(INST_INC) $(INST_CMAKE) $(INST_PC) $(DESTDIR)$(PREFIX)/lib/cmake $(DESTDIR)$(PREFIX)/include \
	    $(DESTDIR)$(PREFIX)/lib; do [ ! -d $$d ] || rmdir --ignore-fail-on-non-empty $$d; done

clean:
	rm -rf $(B)

help:
	@echo "make            build tests, examples and benches for what this machine has"
	@echo "make test       install missing deps, build everything, run CPU/ASan/fuzz/MPI(1..4 ranks)/GPU tests,"
	@echo "                the README's programs and the chart check; phases with times (CI runs this)"
	@echo "make check      CPU, sanitizer and MPI tests only: a few minutes, for the edit-test loop"
	@echo "make fuzz       run each libFuzzer target (tests/fuzz/) for FUZZ_SECONDS [60]; make test runs them 5 s"
	@echo "make bench      run every bench on this machine's GPU; CSVs and charts go to results/<gpu>/"
	@echo "make examples   build the examples"
	@echo "make data       put Fashion-MNIST IDX files in data/fashion-mnist (MNIST_DIR=... for your own);"
	@echo "                CIFAR_DIR=... (cifar-10-batches-bin or its .tar.gz) adds data/cifar-10"
	@echo "make plots      draw the charts of results/<gpu>/ (RESULTS=bench/results/h200: a published folder)"
	@echo "make course     regenerate the tables of docs/course/*.md from bench/results/*/*.csv"
	@echo "make install PREFIX=/usr/local   headers in include/hpdl/, pkg-config and CMake files (DESTDIR=... to stage)"
	@echo "make uninstall PREFIX=/usr/local remove what make install put"
	@echo "make clean      remove build/"
