/* hpdl_mpi.h - v0.3.0 - high-performance deep learning kernels, MPI part.

   SPDX-License-Identifier: MIT
   Copyright (c) 2026 the hpdl authors

   Permission is hereby granted, free of charge, to any person obtaining a
   copy of this software and associated documentation files (the
   "Software"), to deal in the Software without restriction, including
   without limitation the rights to use, copy, modify, merge, publish,
   distribute, sublicense, and/or sell copies of the Software, and to permit
   persons to whom the Software is furnished to do so, subject to the
   following conditions: The above copyright notice and this permission
   notice shall be included in all copies or substantial portions of the
   Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
   EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
   MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
   NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
   DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
   OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
   USE OR OTHER DEALINGS IN THE SOFTWARE.

   Data parallelism over MPI: start-up and GPU choice, in-place allreduce
   (MPI_Allreduce, a hand-written ring, NCCL), a bucketed non-blocking
   allreduce for gradients, broadcast, data sharding with per-epoch shuffling,
   and bus-bandwidth accounting; MLP training drivers for data and tensor
   (model) parallelism. Built on hpdl.h (included here) and, when
   compiled by nvcc, on hpdl_cuda.cuh: then every collective also takes
   device buffers.

   USAGE (C, CPU ranks)
       #include "hpdl_mpi.h"
       HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
       hpdl_mpi_shard_range(n, hpdl_mpi_rank(), hpdl_mpi_size(), &begin, &end);
       hpdl_mpi_epoch_permutation(idx, n, seed, epoch);   // same on every rank
       ... train on idx[begin .. end) ...
       HPDL_CHECK(hpdl_mpi_allreduce_avg_f32(grad, n, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD));
       HPDL_CHECK(hpdl_mpi_finalize());
       mpicc -std=c99 -O2 prog.c -lm && mpirun --oversubscribe -np 4 ./a.out
       (as root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

   USAGE (CUDA + NCCL, one GPU per rank)
       #define HPDL_USE_NCCL
       #include "hpdl_mpi.h"                // includes hpdl_cuda.cuh under nvcc
       hpdl_mpi_init(&argc, &argv);
       int gpu = hpdl_mpi_select_gpu();    // local rank % GPU count; -1: none
       HPDL_CHECK(hpdl_mpi_allreduce_f32(d_grad, n, HPDL_ALLREDUCE_NCCL, MPI_COMM_WORLD));
       nvcc -O3 -DHPDL_HAVE_MPI $(mpicc --showme:compile) prog.cu \
            $(mpicc --showme:link | sed 's/-Wl,/-Xlinker /g') -lnccl

   USAGE (NVLink allreduce between the GPUs of one node, CUDA IPC)
       HPDL_CHECK(hpdl_mpi_allreduce_f32(d_grad, n, HPDL_ALLREDUCE_AUTO, MPI_COMM_WORLD));
       or with a context of one's own (collective create and destroy):
       hpdl_mpi_ipc ctx;
       HPDL_CHECK(hpdl_mpi_ipc_create(&ctx, (size_t)8 << 20, MPI_COMM_WORLD));
       HPDL_CHECK(hpdl_mpi_ipc_allreduce(&ctx, d_grad, n, HPDL_MPI_F32, HPDL_ALLREDUCE_IPC_ONESHOT));
       hpdl_mpi_ipc_destroy(&ctx);

   USAGE (tensor parallelism: each rank owns a slice of the hidden layer)
       hpdl_mpi_tp_f32 tp;                // model: in -> H -> classes, rank 0's weights
       HPDL_CHECK(hpdl_mpi_tp_create_f32(&tp, &model, n, &cfg));
       each epoch: hpdl_mpi_tp_epoch_f32(&tp, X, labels, epoch, &stats);  // same X on every rank
       hpdl_mpi_tp_gather_f32(&tp, &full); hpdl_mpi_tp_destroy_f32(&tp);

   USAGE (gradient buckets: the reduction overlaps backward)
       hpdl_mpi_bucketer b;               // grads[i]: gradient of layer i
       HPDL_CHECK(hpdl_mpi_bucketer_create(&b, grads, counts, ntensors, HPDL_MPI_F32,
                                           0, 1, HPDL_ALLREDUCE_NCCL, MPI_COMM_WORLD));
       each step: forward; for (i = ntensors - 1; i >= 0; i--) { backward(i);
                  hpdl_mpi_bucketer_ready(&b, i); }  hpdl_mpi_bucketer_wait(&b); update;
       hpdl_mpi_bucketer_destroy(&b);
       Beside compute, a reduction takes fewer SMs with, before create,
       hpdl_mpi_set_nccl_max_ctas(8) and hpdl_mpi_set_bucket_priority(1).

   SEMANTICS
       Collectives are in place (SUM) and collective: every rank of the
       communicator calls them in the same order with the same count, type,
       algorithm, root and kind of buffer (all host or all device). Before each
       one, a small MPI_Allreduce compares these across ranks; a difference
       aborts all ranks with a message naming it instead of hanging
       (hpdl_mpi_set_checks(0) skips that for benchmarks). A bad argument on
       every rank gives HPDL_ERR_INVALID on every rank and leaves the buffer
       untouched; on some ranks only, the local statuses differ, and that
       too aborts all ranks with a message (the others would wait). A rank
       that fails half-way through a collective (CUDA, NCCL or MPI error, no
       memory) aborts them all with a message, since the rest would wait.
       Algorithms: HPDL_ALLREDUCE_MPI is MPI_Allreduce (f32, f64: MPI has no
       half type); HPDL_ALLREDUCE_RING is the bandwidth-optimal ring
       (reduce-scatter then allgather, Patarasuk & Yuan) over MPI_Sendrecv, for
       any count and rank number, f16/bf16 added in float and rounded at each
       hop (p-1 roundings, as NCCL does); HPDL_ALLREDUCE_NCCL is ncclAllReduce
       (device buffers, HPDL_USE_NCCL; one rank per GPU, else
       HPDL_ERR_UNSUPPORTED on every rank, the reason on stderr, before NCCL
       sees the ranks: NCCL would fail on some and leave the others
       waiting). HPDL_ALLREDUCE_IPC_ONESHOT and
       _IPC_TWOSHOT (device buffers, nvcc builds) are one kernel that reads
       the peers' buffers over NVLink through CUDA IPC, for GPUs of one node
       with peer access, one rank per GPU (else HPDL_ERR_UNSUPPORTED on every
       rank, the reason on stderr), sums in f32 for f16/bf16, the same bits on
       every rank; the context behind them is made on first use per
       communicator (collective) and freed by hpdl_mpi_finalize, or made
       explicitly with hpdl_mpi_ipc_create (not inside CUDA graph capture).
       HPDL_ALLREDUCE_AUTO takes IPC up to HPDL_MPI_IPC_AUTO_BYTES (two
       ranks) or HPDL_MPI_IPC_AUTO_BYTES_MANY (more) where it
       can (at any size without NCCL), else NCCL where it can, else MPI (f32,
       f64) or RING (f16, bf16); on host buffers MPI or RING. So with more
       ranks than GPUs (ranks sharing one) AUTO reduces through MPI.
       Device buffers (nvcc builds, found with cudaPointerGetAttributes): work
       queued on the hpdl stream (hpdl_mpi_set_stream; default: the legacy
       default stream 0) is finished before a collective reads the buffer.
       MPI and RING return with the result in place; NCCL and IPC are
       stream-ordered (below). MPI hands device pointers
       to MPI when MPIX_Query_cuda_support() says it is CUDA-aware, otherwise
       both stage chunks through pinned host buffers, copies in both
       directions overlapping the MPI transfer of other chunks; the ring adds
       on the GPU. NCCL is stream-ordered, like NCCL itself: later work on the
       hpdl stream sees the result; synchronise it before reading on the host.
       Without MPI (HPDL_NO_MPI) the program is one rank: rank 0 of size 1,
       collectives leave the buffer as it is (the sum over one rank), and the
       same program runs serially with no MPI installed.
       Settings and caches (staging buffers, NCCL communicators) live per
       translation unit: call the collectives and hpdl_mpi_finalize from one.

   OPTIONS (define before including)
       HPDL_NO_MPI            one-rank build without MPI; automatic when the
                              compiler cannot find <mpi.h> (__has_include)
       HPDL_HAVE_MPI          use <mpi.h> without looking (the Makefile sets it
                              for nvcc builds that include this header)
       HPDL_USE_NCCL          enable HPDL_ALLREDUCE_NCCL (nvcc; link -lnccl)
       HPDL_MPI_BUCKET_BYTES  default gradient bucket size (25 MiB)
       HPDL_MPI_CHUNK_BYTES   staging chunk for device buffers (4 MiB); the
                              environment variable of that name overrides it
       HPDL_MPI_IPC_BYTES     staging buffer of the IPC contexts that
                              hpdl_mpi_allreduce makes (16 MiB, twice per GPU)
       HPDL_MPI_IPC_AUTO_BYTES  AUTO on two ranks: IPC up to this size
                              (16 MiB), NCCL above; the environment variable
                              overrides it for any rank count (the same on
                              every rank)
       HPDL_MPI_IPC_AUTO_BYTES_MANY  AUTO on more than two ranks: IPC up to
                              this size (4 MiB), NCCL above
       HPDL_MPI_IPC_ONESHOT_BYTES  AUTO, IPC on more than 2 ranks: one-shot up
                              to this size (1 MiB), two-shot above
       HPDL_MPI_IPC_BLOCKS    IPC kernels' grid limit (128; at most 128 and the
                              SM count); the environment variable overrides it
                              (the data-parallel step's fused kernel takes
                              every SM)
       HPDL_MPI_IPC_EARLY=0   (environment) IPC kernels without programmatic
                              dependent launch (on by default for sm_90 code)
       HPDL_MPI_IPC_MAX_RANKS most GPUs an IPC context joins (8)
       HPDL_NO_NVTX           no NVTX ranges (nvcc builds mark each collective,
                              bucket launch and wait, and the phases of a
                              data- or tensor-parallel step for Nsight Systems)
       HPDL_MPI_NO_IPC        leaves the IPC kernels out (about 1 s of nvcc
                              per program that calls an allreduce); IPC is
                              then HPDL_ERR_UNSUPPORTED and AUTO takes NCCL
       Open MPI's C++ bindings are skipped (OMPI_SKIP_MPICXX), so C++ and nvcc
       builds link with the C library alone.

   CONTENTS (search for the banner)
       section                                 test                         bench
       Start-up, ranks, GPU choice             tests/mpi_allreduce.c        -
       Allreduce, broadcast                    tests/mpi_allreduce.c        bench/allreduce.cu
         NVLink allreduce through CUDA IPC     tests/gpu_mpi_ipc.cu         bench/allreduce.cu
       Bucketed non-blocking allreduce         tests/mpi_allreduce.c        bench/dp_scaling.cu
       Data sharding and per-epoch shuffling   tests/mpi_dp.c               -
       Data-parallel MLP training              tests/mpi_dp.c               bench/dp_scaling.cu (notes/dp.md)
       Tensor-parallel MLP training            tests/mpi_tp.c               examples/mlp_train_tp.c (notes/tp.md)
       CNN data parallelism                    tests/mpi_cnn.c              bench/cnn_dp.cu (notes/cnn.md)
       Under nvcc every function here is a template compiled only where it
       is called, like those of hpdl_cuda.cuh (HPDL_MPI_API).

   MAP (every public function; <t> is f32, f64, f16 or bf16 where it exists)
   docs/API.md spells out each name (hpdl_mpi_allreduce_f32, ...) with its signature and contract.
       start-up, ranks, GPU choice
         int hpdl_mpi_cuda_aware()
         hpdl_status hpdl_mpi_finalize()
         hpdl_status hpdl_mpi_init(argc, argv)
         int hpdl_mpi_local_rank()
         int hpdl_mpi_rank()
         void hpdl_mpi_relaunch_per_gpu(argc, argv, who)
         int hpdl_mpi_select_gpu()
         int hpdl_mpi_size()
       collectives
         const char * hpdl_allreduce_algo_name(a)
         double hpdl_mpi_algbw(bytes, seconds)
         hpdl_status hpdl_mpi_allreduce(buf, count, t, algo, comm)
         hpdl_status hpdl_mpi_allreduce_<t>(buf, count, algo, comm)
         hpdl_status hpdl_mpi_allreduce_avg(buf, count, t, algo, comm)
         hpdl_status hpdl_mpi_allreduce_avg_<t>(buf, count, algo, comm)
         hpdl_status hpdl_mpi_bcast(buf, count, t, root, comm)
         hpdl_status hpdl_mpi_bcast_<t>(buf, count, root, comm)
         double hpdl_mpi_busbw(bytes, seconds, p)
         const char * hpdl_mpi_dtype_name(t)
         size_t hpdl_mpi_dtype_size(t)
         hpdl_status hpdl_mpi_nccl_comm(comm, out)
         hpdl_status hpdl_mpi_ipc_allreduce(ctx, buf, count, t, algo)
         hpdl_status hpdl_mpi_ipc_create(ctx, max_bytes, comm)
         void hpdl_mpi_ipc_destroy(ctx)
         int hpdl_mpi_set_checks(on)
         hpdl_status hpdl_mpi_set_chunk_bytes(bytes)
         hpdl_status hpdl_mpi_set_nccl_max_ctas(ctas)
         void hpdl_mpi_set_stream(stream)
       bucketed allreduce
         hpdl_status hpdl_mpi_bucketer_create(b, tensors, counts, ntensors, t, bucket_bytes, average,
                        algo, comm)
         void hpdl_mpi_bucketer_destroy(b)
         hpdl_status hpdl_mpi_bucketer_ready(b, tensor)
         hpdl_status hpdl_mpi_bucketer_wait(b)
         int hpdl_mpi_set_bucket_priority(high)
       sharding and shuffling
         hpdl_status hpdl_mpi_epoch_permutation(idx, n, seed, epoch)
         hpdl_status hpdl_mpi_shard_range(n, rank, size, begin, end)
       data-parallel training
         void hpdl_mpi_dp_config_default(c)
         hpdl_status hpdl_mpi_dp_create_<t>(dp, model, n_train, cfg)
         hpdl_status hpdl_mpi_dp_cuda_create_<t>(dp, g, n_train, cfg)
         void hpdl_mpi_dp_cuda_destroy_<t>(dp)
         hpdl_status hpdl_mpi_dp_cuda_epoch_<t>(dp, g, data, epoch, out)
         void hpdl_mpi_dp_destroy_<t>(dp)
         hpdl_status hpdl_mpi_dp_epoch_<t>(dp, X, labels, epoch, out)
         hpdl_status hpdl_mpi_dp_lr(c, ranks, progress, lr)
         hpdl_status hpdl_mpi_dp_plan_create(p, n, batch, rank, size)
         void hpdl_mpi_dp_plan_destroy(p)
         hpdl_status hpdl_mpi_dp_plan_epoch(p, seed, epoch)
         hpdl_status hpdl_mpi_dp_plan_step(p, s, first, rows, global_rows)
         hpdl_status hpdl_mpi_dp_roofline_cpu(grad_count, algo, comm, out)
         hpdl_status hpdl_mpi_dp_roofline_cuda(grad_count, algo, comm, out)
       CNN data parallelism (any hpdl_cnn backend)
         hpdl_status hpdl_mpi_cnn_create(d, run, algo, bucket_bytes, bn, comm)
         void hpdl_mpi_cnn_destroy(d)
         hpdl_status hpdl_mpi_cnn_train_step(d, batch, X, labels)
       tensor-parallel training
         void hpdl_mpi_tp_config_default(c)
         hpdl_status hpdl_mpi_tp_create_<t>(tp, model, n_train, cfg)
         void hpdl_mpi_tp_destroy_<t>(tp)
         hpdl_status hpdl_mpi_tp_epoch_<t>(tp, X, labels, epoch, out)
         hpdl_status hpdl_mpi_tp_gather_<t>(tp, out)
         hpdl_status hpdl_mpi_tp_cuda_create_f32(tp, model, n_train, cfg)
         void hpdl_mpi_tp_cuda_destroy_f32(tp)
         hpdl_status hpdl_mpi_tp_cuda_epoch_f32(tp, data, epoch, out)
         hpdl_status hpdl_mpi_tp_cuda_gather_f32(tp, out)

   CHANGELOG
       CHANGELOG.md; this version: v0.3.0 (2026-11-26): data-parallel CNN training
*/
#ifndef HPDL_MPI_H
#define HPDL_MPI_H

#ifdef __CUDACC__
#include "hpdl_cuda.cuh" /* includes hpdl.h */
#define HPDL_MPI_API HPDL_LAZY /* compiled where called: see hpdl_cuda.cuh */
#else
#include "hpdl.h"
#define HPDL_MPI_API HPDL_API
#endif

#include <limits.h>
#ifdef __CUDACC__
#include <unistd.h> /* execvp: hpdl_mpi_relaunch_per_gpu */
#endif

/* NVTX ranges around each collective, bucket and training phase, from
   hpdl_cuda.cuh under nvcc (nvtx3 is header-only: no library to link);
   without nvcc, or with HPDL_NO_NVTX, they compile to nothing. */
#ifndef HPDL_NVTX_PUSH
#define HPDL_NVTX_PUSH(name) ((void)0)
#define HPDL_NVTX_POP() ((void)0)
#endif

#ifndef HPDL_MPI_BUCKET_BYTES
#define HPDL_MPI_BUCKET_BYTES ((size_t)25 << 20)
#endif
#ifndef HPDL_MPI_CHUNK_BYTES
#define HPDL_MPI_CHUNK_BYTES ((size_t)4 << 20)
#endif
#ifndef HPDL_MPI_IPC_BYTES
#define HPDL_MPI_IPC_BYTES ((size_t)16 << 20)
#endif
#ifndef HPDL_MPI_IPC_AUTO_BYTES
#define HPDL_MPI_IPC_AUTO_BYTES ((size_t)16 << 20)
#endif
/* Past two ranks (2026-11-28, against NCCL's bus bandwidth in the same
   runs): the two-shot kernel won at 4 MiB and lost from 8 MiB on (4 H100s
   1.09x and 0.87x, 3 H100s 1.29x and 0.93x; 4 H200s 0.71x at 16 MiB): each
   GPU reads 2(p-1)/p of the buffer from its peers, where NCCL's ring keeps
   every link busy. The one-shot, which writes (p-1) x the buffer, won up to
   1 MiB (4 H100s 1.31x at 512 KiB and 1.01x at 1 MiB, the two-shot 0.87x
   and 0.94x). On two GPUs IPC led at every size measured. */
#ifndef HPDL_MPI_IPC_AUTO_BYTES_MANY
#define HPDL_MPI_IPC_AUTO_BYTES_MANY ((size_t)4 << 20)
#endif
#ifndef HPDL_MPI_IPC_ONESHOT_BYTES
#define HPDL_MPI_IPC_ONESHOT_BYTES ((size_t)1 << 20)
#endif
#ifndef HPDL_MPI_IPC_BLOCKS
#define HPDL_MPI_IPC_BLOCKS 128
#endif

/* No MPI unless asked for or findable. */
#if !defined(HPDL_NO_MPI) && !defined(HPDL_HAVE_MPI) && defined(__has_include)
#if !__has_include(<mpi.h>)
#define HPDL_NO_MPI
#endif
#endif

/* ------------------------------------------------------------------------ */
/* MPI, or a one-rank stand-in for it                                        */
/* ------------------------------------------------------------------------ */

#ifndef HPDL_NO_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#if defined(__CUDACC__) && defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#else
/* Just enough MPI for one process: a datatype is its size in bytes, and every
   collective over one rank leaves the data as it is. Point-to-point calls are
   never reached with one rank and report an error. */
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Info;
typedef struct MPI_Status { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;
#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 16
#define MPI_MAX_ERROR_STRING 64
#define MPI_COMM_NULL 0
#define MPI_COMM_WORLD 1
#define MPI_COMM_TYPE_SHARED 1
#define MPI_INFO_NULL 0
#define MPI_REQUEST_NULL 0
#define MPI_PROC_NULL (-2)
#define MPI_IN_PLACE ((void *)1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_BYTE 1
#define MPI_CHAR 1
#define MPI_INT ((int)sizeof(int))
#define MPI_FLOAT 4
#define MPI_DOUBLE 8
#define MPI_INT64_T 8
#define MPI_SUM 1
#define MPI_MIN 2
#define MPI_MAX 3
static inline int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return MPI_SUCCESS; }
static inline int MPI_Initialized(int *flag) { *flag = 1; return MPI_SUCCESS; }
static inline int MPI_Finalized(int *flag) { *flag = 0; return MPI_SUCCESS; }
static inline int MPI_Finalize(void) { return MPI_SUCCESS; }
static inline int MPI_Comm_rank(MPI_Comm c, int *r) { (void)c; *r = 0; return MPI_SUCCESS; }
static inline int MPI_Comm_size(MPI_Comm c, int *s) { (void)c; *s = 1; return MPI_SUCCESS; }
static inline int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
    (void)type; (void)key; (void)info; *out = c; return MPI_SUCCESS;
}
static inline int MPI_Comm_free(MPI_Comm *c) { *c = MPI_COMM_NULL; return MPI_SUCCESS; }
static inline int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out) { *out = c; return MPI_SUCCESS; }
static inline int MPI_Abort(MPI_Comm c, int code) { (void)c; exit(code); }
static inline int MPI_Barrier(MPI_Comm c) { (void)c; return MPI_SUCCESS; }
static inline double MPI_Wtime(void) { return hpdl_time_now(); }
static inline int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    (void)op; (void)c;
    if (send != MPI_IN_PLACE && count > 0) memmove(recv, send, (size_t)count * (size_t)t);
    return MPI_SUCCESS;
}
static inline int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op,
                                 MPI_Comm c, MPI_Request *req) {
    *req = MPI_REQUEST_NULL;
    return MPI_Allreduce(send, recv, count, t, op, c);
}
static inline int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c) {
    (void)buf; (void)count; (void)t; (void)root; (void)c; return MPI_SUCCESS;
}
static inline int MPI_Allgatherv(const void *send, int scount, MPI_Datatype st, void *recv, const int *rcounts,
                                 const int *displs, MPI_Datatype rt, MPI_Comm c) {
    (void)rcounts; (void)c;
    if (send != MPI_IN_PLACE && scount > 0)
        memmove((char *)recv + (size_t)displs[0] * (size_t)rt, send, (size_t)scount * (size_t)st);
    return MPI_SUCCESS;
}
static inline int MPI_Allgather(const void *send, int scount, MPI_Datatype st, void *recv, int rcount,
                                MPI_Datatype rt, MPI_Comm c) {
    (void)rcount; (void)rt; (void)c;
    if (send != MPI_IN_PLACE && scount > 0) memmove(recv, send, (size_t)scount * (size_t)st);
    return MPI_SUCCESS;
}
static inline int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int dest, int stag, void *rb, int rn,
                               MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *status) {
    (void)sb; (void)sn; (void)st; (void)dest; (void)stag; (void)rb; (void)rn; (void)rt; (void)src;
    (void)rtag; (void)c; (void)status; return MPI_ERR_OTHER;
}
static inline int MPI_Wait(MPI_Request *r, MPI_Status *s) { (void)s; *r = MPI_REQUEST_NULL; return MPI_SUCCESS; }
static inline int MPI_Waitall(int n, MPI_Request *r, MPI_Status *s) {
    int i; (void)s; for (i = 0; i < n; i++) r[i] = MPI_REQUEST_NULL; return MPI_SUCCESS;
}
static inline int MPI_Testall(int n, MPI_Request *r, int *flag, MPI_Status *s) {
    *flag = 1; return MPI_Waitall(n, r, s);
}
static inline int MPI_Error_string(int code, char *text, int *len) {
    *len = snprintf(text, MPI_MAX_ERROR_STRING, "MPI error %d (one-rank build)", code); return MPI_SUCCESS;
}
#endif /* HPDL_NO_MPI */

#if defined(__CUDACC__) && defined(HPDL_USE_NCCL)
#include <nccl.h>
#define HPDL_MPI_HAVE_NCCL 1
#endif

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */
/* ------------------------------------------------------------------------ */

/* For programs: print the failing MPI call with file:line, then abort every
   rank (exiting one rank alone would leave the others waiting forever). */
#define HPDL_MPI_CHECK(call)                                                  \
    do {                                                                      \
        int hpdl__m = (call);                                                 \
        if (hpdl__m != MPI_SUCCESS) {                                         \
            char hpdl__t[MPI_MAX_ERROR_STRING];                               \
            int hpdl__n = 0;                                                  \
            MPI_Error_string(hpdl__m, hpdl__t, &hpdl__n);                     \
            fprintf(stderr, "%s:%d: MPI error %s in %s\n", __FILE__, __LINE__, \
                    hpdl__t, #call);                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

/* For MPI programs: HPDL_CHECK for hpdl calls, but a failure aborts every
   rank instead of exiting this one. */
#define HPDL_MPI_CHECK_STATUS(call)                                           \
    do {                                                                      \
        hpdl_status hpdl__s = (call);                                         \
        if (hpdl__s != HPDL_OK) {                                             \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #call, hpdl_status_string(hpdl__s));                      \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

/* For library code: report the failing call and return HPDL_ERR_MPI. (With
   MPI's default error handler a failing call has aborted already.) */
#define HPDL__MPI_TRY(call)                                                   \
    do {                                                                      \
        if ((call) != MPI_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: MPI call failed: %s\n", __FILE__, __LINE__, #call); \
            return HPDL_ERR_MPI;                                              \
        }                                                                     \
    } while (0)

#ifdef HPDL_MPI_HAVE_NCCL
#define HPDL_NCCL_CHECK(call)                                                 \
    do {                                                                      \
        ncclResult_t hpdl__r = (call);                                        \
        if (hpdl__r != ncclSuccess) {                                         \
            fprintf(stderr, "%s:%d: NCCL error %s in %s\n", __FILE__, __LINE__, \
                    ncclGetErrorString(hpdl__r), #call);                      \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

#define HPDL__NCCL_TRY(call)                                                  \
    do {                                                                      \
        ncclResult_t hpdl__r = (call);                                        \
        if (hpdl__r != ncclSuccess) {                                         \
            fprintf(stderr, "%s:%d: NCCL error %s in %s\n", __FILE__, __LINE__, \
                    ncclGetErrorString(hpdl__r), #call);                      \
            return HPDL_ERR_NCCL;                                             \
        }                                                                     \
    } while (0)
#endif

/* ------------------------------------------------------------------------ */
/* Element types and algorithms                                              */
/* ------------------------------------------------------------------------ */

/* Element type of a collective's buffer. HPDL_ALLREDUCE_MPI takes F32 and F64 only: F16 and BF16
   (hpdl_f16, hpdl_bf16) get HPDL_ERR_UNSUPPORTED there. */
typedef enum hpdl_mpi_dtype { HPDL_MPI_F32, HPDL_MPI_F64, HPDL_MPI_F16, HPDL_MPI_BF16 } hpdl_mpi_dtype;

/* How hpdl_mpi_allreduce reduces. NCCL, IPC_ONESHOT and IPC_TWOSHOT take device buffers only: host
   buffers get HPDL_ERR_UNSUPPORTED. */
typedef enum hpdl_allreduce_algo {
    HPDL_ALLREDUCE_MPI,         /* MPI_Allreduce (CUDA-aware, or staged through pinned host memory) */
    HPDL_ALLREDUCE_RING,        /* hand-written ring over MPI point-to-point */
    HPDL_ALLREDUCE_NCCL,        /* ncclAllReduce (device buffers, HPDL_USE_NCCL) */
    HPDL_ALLREDUCE_IPC_ONESHOT, /* GPUs of one node read each other's buffers (CUDA IPC): one pass */
    HPDL_ALLREDUCE_IPC_TWOSHOT, /* the same as reduce-scatter then all-gather: two passes */
    HPDL_ALLREDUCE_AUTO         /* IPC up to a size on one node, else NCCL (else MPI or RING) */
} hpdl_allreduce_algo;

HPDL_MPI_API int hpdl__mpi_dtype_valid(hpdl_mpi_dtype t) { return t >= HPDL_MPI_F32 && t <= HPDL_MPI_BF16; }
HPDL_MPI_API int hpdl__mpi_algo_valid(hpdl_allreduce_algo a) {
    return a >= HPDL_ALLREDUCE_MPI && a <= HPDL_ALLREDUCE_AUTO;
}
HPDL_MPI_API int hpdl__mpi_algo_is_ipc(hpdl_allreduce_algo a) {
    return a == HPDL_ALLREDUCE_IPC_ONESHOT || a == HPDL_ALLREDUCE_IPC_TWOSHOT;
}
/* Algorithms that take device buffers only. */
HPDL_MPI_API int hpdl__mpi_algo_device_only(hpdl_allreduce_algo a) {
    return a == HPDL_ALLREDUCE_NCCL || hpdl__mpi_algo_is_ipc(a);
}

/* Bytes per element of type t (4, 8, 2, 2); 0 for a value outside the enum. */
HPDL_MPI_API size_t hpdl_mpi_dtype_size(hpdl_mpi_dtype t) {
    switch (t) {
    case HPDL_MPI_F32: return 4;
    case HPDL_MPI_F64: return 8;
    case HPDL_MPI_F16: return 2;
    case HPDL_MPI_BF16: return 2;
    }
    return 0;
}

/* Name of t ("f32", "f64", "f16", "bf16"), a static string; "?" for a value outside the enum. */
HPDL_MPI_API const char *hpdl_mpi_dtype_name(hpdl_mpi_dtype t) {
    switch (t) {
    case HPDL_MPI_F32: return "f32";
    case HPDL_MPI_F64: return "f64";
    case HPDL_MPI_F16: return "f16";
    case HPDL_MPI_BF16: return "bf16";
    }
    return "?";
}

/* Name of a ("mpi", "ring", "nccl", "ipc_oneshot", "ipc_twoshot", "auto"), a static string; "?" for a
   value outside the enum. */
HPDL_MPI_API const char *hpdl_allreduce_algo_name(hpdl_allreduce_algo a) {
    switch (a) {
    case HPDL_ALLREDUCE_MPI: return "mpi";
    case HPDL_ALLREDUCE_RING: return "ring";
    case HPDL_ALLREDUCE_NCCL: return "nccl";
    case HPDL_ALLREDUCE_IPC_ONESHOT: return "ipc_oneshot";
    case HPDL_ALLREDUCE_IPC_TWOSHOT: return "ipc_twoshot";
    case HPDL_ALLREDUCE_AUTO: return "auto";
    }
    return "?";
}

/* The MPI datatype of an element type; 0 for the half types MPI lacks. */
HPDL_MPI_API int hpdl__mpi_datatype(hpdl_mpi_dtype t, MPI_Datatype *out) {
    if (t == HPDL_MPI_F32) { *out = MPI_FLOAT; return 1; }
    if (t == HPDL_MPI_F64) { *out = MPI_DOUBLE; return 1; }
    *out = MPI_BYTE;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Settings (per translation unit)                                           */
/* ------------------------------------------------------------------------ */

typedef struct hpdl__mpi_settings {
    int checks;          /* compare arguments across ranks before each collective */
    size_t chunk_bytes;  /* staging chunk for device buffers */
    int nccl_max_ctas;   /* NCCL communicators made from now on: CTA cap (0: NCCL's choice) */
    int bucket_priority; /* bucketers made from now on: 1 = side stream at the GPU's highest priority */
    long long ipc_auto_bytes; /* HPDL_ALLREDUCE_AUTO: IPC up to this size, NCCL above; -1: by rank count */
#ifdef __CUDACC__
    cudaStream_t stream; /* orders device work; 0 = legacy default stream */
#endif
} hpdl__mpi_settings;

HPDL_MPI_API hpdl__mpi_settings *hpdl__mpi_settings_get(void) {
    static hpdl__mpi_settings s;
    static int initialised = 0;
    if (!initialised) {
        const char *env = getenv("HPDL_MPI_CHUNK_BYTES");
        long long v = env ? atoll(env) : 0;
        memset(&s, 0, sizeof s);
        s.checks = 1;
        s.chunk_bytes = v >= 8 ? (size_t)v & ~(size_t)7 : HPDL_MPI_CHUNK_BYTES;
        env = getenv("HPDL_MPI_IPC_AUTO_BYTES");
        v = env ? atoll(env) : -1;
        s.ipc_auto_bytes = v >= 0 ? v : -1;
        initialised = 1;
    }
    return &s;
}

/* AUTO's largest IPC allreduce on `ranks` ranks, in bytes: the environment's
   HPDL_MPI_IPC_AUTO_BYTES, else the measured default for two ranks or more. */
HPDL_MPI_API size_t hpdl__mpi_ipc_auto_bytes(int ranks) {
    long long set = hpdl__mpi_settings_get()->ipc_auto_bytes;
    if (set >= 0) return (size_t)set;
    return ranks <= 2 ? HPDL_MPI_IPC_AUTO_BYTES : HPDL_MPI_IPC_AUTO_BYTES_MANY;
}

/* Turns the cross-rank argument comparison on or off; returns the old value. */
HPDL_MPI_API int hpdl_mpi_set_checks(int on) {
    int old = hpdl__mpi_settings_get()->checks;
    hpdl__mpi_settings_get()->checks = on != 0;
    return old;
}

/* At most `ctas` thread blocks (so SMs) per NCCL collective on communicators
   made from now on (1..64; 0: NCCL's choice). Communicators are cached per
   cap, so each cap is bootstrapped once. A reduction that runs beside
   compute (bucketer) then leaves the other SMs to the compute kernels.
   HPDL_ERR_UNSUPPORTED without NCCL 2.17 or later. */
HPDL_MPI_API hpdl_status hpdl_mpi_set_nccl_max_ctas(int ctas) {
    if (ctas < 0 || ctas > 64) return HPDL_ERR_INVALID;
#if !defined(HPDL_MPI_HAVE_NCCL) || NCCL_VERSION_CODE < 21700
    if (ctas > 0) return HPDL_ERR_UNSUPPORTED;
#endif
    hpdl__mpi_settings_get()->nccl_max_ctas = ctas;
    return HPDL_OK;
}

/* 1: bucketers made from now on reduce on a side stream of the GPU's highest
   priority, so a bucket's reduction gets SMs as soon as any free up instead
   of queueing behind the next backward kernel's blocks; 0 (default): normal
   priority. Returns the old value. */
HPDL_MPI_API int hpdl_mpi_set_bucket_priority(int high) {
    int old = hpdl__mpi_settings_get()->bucket_priority;
    hpdl__mpi_settings_get()->bucket_priority = high != 0;
    return old;
}

/* Staging chunk for device buffers when MPI is not CUDA-aware (rounded down
   to a multiple of 8 bytes; at least 8). */
HPDL_MPI_API hpdl_status hpdl_mpi_set_chunk_bytes(size_t bytes) {
    if (bytes < 8) return HPDL_ERR_INVALID;
    hpdl__mpi_settings_get()->chunk_bytes = bytes & ~(size_t)7;
    return HPDL_OK;
}

#ifdef __CUDACC__
/* The stream whose work a collective on device buffers waits for, and on
   which NCCL's results become visible. */
HPDL_MPI_API void hpdl_mpi_set_stream(cudaStream_t stream) { hpdl__mpi_settings_get()->stream = stream; }
#endif

/* ------------------------------------------------------------------------ */
/* Start-up, ranks, GPU choice                                               */
/* ------------------------------------------------------------------------ */

/* Initialises MPI unless the program already did. */
HPDL_MPI_API hpdl_status hpdl_mpi_init(int *argc, char ***argv) {
    int initialised = 0;
    if (MPI_Initialized(&initialised) != MPI_SUCCESS) return HPDL_ERR_MPI;
    if (!initialised && MPI_Init(argc, argv) != MPI_SUCCESS) return HPDL_ERR_MPI;
    return HPDL_OK;
}

/* This process's rank in MPI_COMM_WORLD; MPI must be initialised (hpdl_mpi_init). Not collective. */
HPDL_MPI_API int hpdl_mpi_rank(void) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* The number of ranks in MPI_COMM_WORLD; MPI must be initialised (hpdl_mpi_init). Not collective. */
HPDL_MPI_API int hpdl_mpi_size(void) {
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

/* Rank among the processes of this node (those that can share memory):
   what picks a GPU when each node runs one rank per GPU. */
HPDL_MPI_API int hpdl_mpi_local_rank(void) {
    MPI_Comm node;
    int r = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return 0;
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

/* Makes GPU (local rank % GPU count) current and returns it; -1 when there is
   no GPU or the program was not built by nvcc (CPU ranks). */
HPDL_MPI_API int hpdl_mpi_select_gpu(void) {
#ifdef __CUDACC__
    int count = 0, device;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return -1;
    }
    device = hpdl_mpi_local_rank() % count;
    if (cudaSetDevice(device) != cudaSuccess) { cudaGetLastError(); return -1; }
    return device;
#else
    return -1;
#endif
}

#if defined(__CUDACC__) && !defined(HPDL_NO_MPI)
/* For benches that want one rank per GPU: a program started on its own (no
   MPI launcher in the environment) on a machine with several GPUs replaces
   itself by `mpirun -np <GPUs> <the same command>`. Call it before
   hpdl_mpi_init; it returns only when there is nothing to do or mpirun could
   not be started (then the program goes on as one rank). */
HPDL_MPI_API void hpdl_mpi_relaunch_per_gpu(int argc, char **argv, const char *who) {
    char np[16], **args;
    int gpus = 0, i;
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) return;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2) { cudaGetLastError(); return; }
    args = (char **)hpdl_alloc((size_t)argc + 4, sizeof *args);
    if (!args) return;
    snprintf(np, sizeof np, "%d", gpus);
    args[0] = (char *)"mpirun";
    args[1] = (char *)"-np";
    args[2] = np;
    for (i = 0; i < argc; i++) args[3 + i] = argv[i];
    args[3 + argc] = NULL;
    fprintf(stderr, "%s: %d GPUs: running as mpirun -np %d\n", who, gpus, gpus);
    execvp("mpirun", args);
    HPDL_FREE(args);
}
#endif

/* 1 when MPI accepts device pointers (Open MPI built with CUDA support). */
HPDL_MPI_API int hpdl_mpi_cuda_aware(void) {
#if defined(__CUDACC__) && defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------------ */
/* Cost accounting (nccl-tests definitions)                                  */
/* ------------------------------------------------------------------------ */

/* Algorithm bandwidth: bytes of the buffer over the time, in bytes/s. */
HPDL_MPI_API double hpdl_mpi_algbw(double bytes, double seconds) {
    return seconds > 0.0 ? bytes / seconds : 0.0;
}

/* Bus bandwidth of an allreduce over p ranks: algbw * 2(p-1)/p, what each
   link carries in a bandwidth-optimal allreduce, so it compares with the
   hardware's peak whatever p is. 0 for one rank (nothing moves). */
HPDL_MPI_API double hpdl_mpi_busbw(double bytes, double seconds, int p) {
    return p > 0 ? hpdl_mpi_algbw(bytes, seconds) * 2.0 * (double)(p - 1) / (double)p : 0.0;
}

/* ------------------------------------------------------------------------ */
/* Data sharding and per-epoch shuffling                                     */
/* ------------------------------------------------------------------------ */

/* Where part k of n items split into p parts begins (k = p: n). */
HPDL_MPI_API int64_t hpdl__mpi_split_begin(int64_t n, int k, int p) {
    int64_t base = n / p, extra = n % p;
    return (int64_t)k * base + (k < extra ? k : extra);
}

/* Rank `rank` of `size` gets [begin, end) of [0, n): contiguous, in rank
   order, sizes differing by at most one (the first n % size ranks get one
   more). Also how the ring splits a buffer into segments. */
HPDL_MPI_API hpdl_status hpdl_mpi_shard_range(int64_t n, int rank, int size, int64_t *begin, int64_t *end) {
    if (n < 0 || size <= 0 || rank < 0 || rank >= size || !begin || !end) return HPDL_ERR_INVALID;
    *begin = hpdl__mpi_split_begin(n, rank, size);
    *end = hpdl__mpi_split_begin(n, rank + 1, size);
    return HPDL_OK;
}

/* idx = a permutation of 0..n-1 that depends only on (seed, epoch), so every
   rank computes the same one and takes its shard of it: each epoch visits
   the data in a new order while the ranks still split it without overlap
   (the reason PyTorch's DistributedSampler needs set_epoch). */
HPDL_MPI_API hpdl_status hpdl_mpi_epoch_permutation(int32_t *idx, int64_t n, uint64_t seed, int epoch) {
    hpdl_rng rng;
    int64_t i;
    if (n < 0 || n > INT32_MAX || (!idx && n > 0)) return HPDL_ERR_INVALID;
    for (i = 0; i < n; i++) idx[i] = (int32_t)i;
    /* splitmix64 inside hpdl_rng_seed spreads nearby (seed, epoch) pairs apart */
    hpdl_rng_seed(&rng, seed ^ ((uint64_t)(uint32_t)epoch * 0xd1342543de82ef95ull));
    hpdl_rng_shuffle_index(&rng, idx, n);
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Argument agreement across ranks                                           */
/* ------------------------------------------------------------------------ */

enum { HPDL__MPI_OP_ALLREDUCE = 1, HPDL__MPI_OP_BCAST, HPDL__MPI_OP_BUCKETER };
enum { HPDL__MPI_NFIELDS = 7 };

/* What one rank brings to a collective. status carries a local failure
   (bad argument, no memory) and is compared like the other fields: when
   every rank has the same one, all return it together; when only some
   ranks fail, the job is aborted with a message, as for any mismatch. */
typedef struct hpdl__mpi_call {
    int64_t op, count, dtype, algo, root, on_device, status;
} hpdl__mpi_call;

HPDL_MPI_API void hpdl__mpi_call_fields(const hpdl__mpi_call *c, int64_t *v) {
    v[0] = c->op; v[1] = c->count < 0 ? -1 : c->count; v[2] = c->dtype; v[3] = c->algo;
    v[4] = c->root; v[5] = c->on_device; v[6] = c->status;
}

/* extremes = MAX over ranks of (v, -v): the first field whose max and min
   differ, or -1 when all ranks agree. */
HPDL_MPI_API int hpdl__mpi_first_mismatch(const int64_t *extremes, int nfields) {
    int i;
    for (i = 0; i < nfields; i++)
        if (extremes[i] != -extremes[nfields + i]) return i;
    return -1;
}

HPDL_MPI_API void hpdl__mpi_report_mismatch(const char *fn, const int64_t *mine, const int64_t *extremes, MPI_Comm comm) {
    static const char *const names[HPDL__MPI_NFIELDS] = {
        "operation (1 allreduce, 2 bcast, 3 bucketer)", "count", "type (0 f32, 1 f64, 2 f16, 3 bf16)",
        "algorithm (0 mpi, 1 ring, 2 nccl, 3 ipc one-shot, 4 ipc two-shot, 5 auto)", "root / tensor count",
        "buffer on device", "local status"};
    int i, rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (i = 0; i < HPDL__MPI_NFIELDS; i++) {
        if (extremes[i] == -extremes[HPDL__MPI_NFIELDS + i]) continue;
        fprintf(stderr, "hpdl_mpi: %s: ranks disagree on %s: rank %d of %d has %lld, ranks range %lld..%lld\n",
                fn, names[i], rank, size, (long long)mine[i],
                (long long)-extremes[HPDL__MPI_NFIELDS + i], (long long)extremes[i]);
    }
    fprintf(stderr, "hpdl_mpi: rank %d: aborting all ranks rather than hang\n", rank);
    fflush(stderr);
}

/* Collective: every rank passes its view of the call; returns the (common)
   status, or aborts all ranks with a message when the views differ. With
   checks off it only returns the local status. */
HPDL_MPI_API hpdl_status hpdl__mpi_agree(const char *fn, const hpdl__mpi_call *call, MPI_Comm comm) {
    int64_t mine[HPDL__MPI_NFIELDS], both[2 * HPDL__MPI_NFIELDS], extremes[2 * HPDL__MPI_NFIELDS];
    int i;
    if (!hpdl__mpi_settings_get()->checks) return (hpdl_status)call->status;
    hpdl__mpi_call_fields(call, mine);
    for (i = 0; i < HPDL__MPI_NFIELDS; i++) { both[i] = mine[i]; both[HPDL__MPI_NFIELDS + i] = -mine[i]; }
    HPDL__MPI_TRY(MPI_Allreduce(both, extremes, 2 * HPDL__MPI_NFIELDS, MPI_INT64_T, MPI_MAX, comm));
    if (hpdl__mpi_first_mismatch(extremes, HPDL__MPI_NFIELDS) >= 0) {
        hpdl__mpi_report_mismatch(fn, mine, extremes, comm);
        MPI_Abort(comm, 1);
    }
    return (hpdl_status)call->status;
}

/* After the agreement, the other ranks are inside the collective: a rank
   that fails half-way (CUDA, NCCL or MPI error, no memory) stops them all
   rather than leave them waiting forever. */
HPDL_MPI_API hpdl_status hpdl__mpi_finish(const char *fn, hpdl_status s, MPI_Comm comm) {
    if (s != HPDL_OK) {
        fprintf(stderr, "hpdl_mpi: %s failed half-way (%s); aborting all ranks rather than hang\n", fn,
                hpdl_status_string(s));
        fflush(stderr);
        MPI_Abort(comm, 1);
    }
    return s;
}

/* ------------------------------------------------------------------------ */
/* Reduction templates                                                       */
/* ------------------------------------------------------------------------ */

/* dst += src and x /= d, computed in ACC_T (float for the half types). */
#define HPDL_DEFINE_MPI_REDUCE(SUFFIX, T, ACC_T, LOAD, STORE)                  \
    HPDL_MPI_API void hpdl__mpi_sum_into_##SUFFIX(T *HPDL_RESTRICT dst, const T *HPDL_RESTRICT src, int64_t n) { \
        int64_t i;                                                             \
        for (i = 0; i < n; i++) dst[i] = STORE((ACC_T)LOAD(dst[i]) + (ACC_T)LOAD(src[i])); \
    }                                                                          \
    HPDL_MPI_API void hpdl__mpi_divide_##SUFFIX(T *x, int64_t n, ACC_T d) {        \
        int64_t i;                                                             \
        for (i = 0; i < n; i++) x[i] = STORE((ACC_T)LOAD(x[i]) / d);           \
    }

HPDL_DEFINE_MPI_REDUCE(f32, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)
HPDL_DEFINE_MPI_REDUCE(f64, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)
HPDL_DEFINE_MPI_REDUCE(f16, hpdl_f16, float, HPDL_LOAD_F16, HPDL_STORE_F16)
HPDL_DEFINE_MPI_REDUCE(bf16, hpdl_bf16, float, HPDL_LOAD_BF16, HPDL_STORE_BF16)

HPDL_MPI_API void hpdl__mpi_sum_into_host(hpdl_mpi_dtype t, void *dst, const void *src, int64_t n) {
    switch (t) {
    case HPDL_MPI_F32: hpdl__mpi_sum_into_f32((float *)dst, (const float *)src, n); break;
    case HPDL_MPI_F64: hpdl__mpi_sum_into_f64((double *)dst, (const double *)src, n); break;
    case HPDL_MPI_F16: hpdl__mpi_sum_into_f16((hpdl_f16 *)dst, (const hpdl_f16 *)src, n); break;
    case HPDL_MPI_BF16: hpdl__mpi_sum_into_bf16((hpdl_bf16 *)dst, (const hpdl_bf16 *)src, n); break;
    }
}

HPDL_MPI_API void hpdl__mpi_divide_host(hpdl_mpi_dtype t, void *x, int64_t n, int d) {
    switch (t) {
    case HPDL_MPI_F32: hpdl__mpi_divide_f32((float *)x, n, (float)d); break;
    case HPDL_MPI_F64: hpdl__mpi_divide_f64((double *)x, n, (double)d); break;
    case HPDL_MPI_F16: hpdl__mpi_divide_f16((hpdl_f16 *)x, n, (float)d); break;
    case HPDL_MPI_BF16: hpdl__mpi_divide_bf16((hpdl_bf16 *)x, n, (float)d); break;
    }
}

/* ------------------------------------------------------------------------ */
/* MPI building blocks on host memory                                        */
/* ------------------------------------------------------------------------ */

/* MPI counts are int: large messages go in pieces of at most 1 GiB. */
#define HPDL__MPI_PIECE_BYTES ((size_t)1 << 30)
#define HPDL__MPI_RING_TAG 7201

HPDL_MPI_API int hpdl__mpi_piece(size_t total, size_t off) {
    if (off >= total) return 0;
    return (int)(total - off < HPDL__MPI_PIECE_BYTES ? total - off : HPDL__MPI_PIECE_BYTES);
}

/* Sends sbytes to `right` while receiving rbytes from `left`. An empty side
   talks to MPI_PROC_NULL, so piece k of a send always meets piece k of the
   matching receive, whatever the neighbours' other sizes are. */
HPDL_MPI_API hpdl_status hpdl__mpi_sendrecv(const void *send, size_t sbytes, int right, void *recv, size_t rbytes,
                                        int left, MPI_Comm comm) {
    size_t off;
    for (off = 0; off < sbytes || off < rbytes; off += HPDL__MPI_PIECE_BYTES) {
        int sn = hpdl__mpi_piece(sbytes, off), rn = hpdl__mpi_piece(rbytes, off);
        HPDL__MPI_TRY(MPI_Sendrecv(sn ? (const char *)send + off : NULL, sn, MPI_BYTE, sn ? right : MPI_PROC_NULL,
                                   HPDL__MPI_RING_TAG, rn ? (char *)recv + off : NULL, rn, MPI_BYTE,
                                   rn ? left : MPI_PROC_NULL, HPDL__MPI_RING_TAG, comm, MPI_STATUS_IGNORE));
    }
    return HPDL_OK;
}

/* MPI_Allreduce in place, in pieces (buf may be a device pointer when MPI is
   CUDA-aware). */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_mpi(void *buf, int64_t count, hpdl_mpi_dtype t, MPI_Comm comm) {
    MPI_Datatype type;
    size_t es = hpdl_mpi_dtype_size(t), bytes = (size_t)count * es, off;
    if (!hpdl__mpi_datatype(t, &type)) return HPDL_ERR_UNSUPPORTED;
    for (off = 0; off < bytes; off += HPDL__MPI_PIECE_BYTES)
        HPDL__MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off, hpdl__mpi_piece(bytes, off) / (int)es,
                                    type, MPI_SUM, comm));
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bcast_host(void *buf, size_t bytes, int root, MPI_Comm comm) {
    size_t off;
    for (off = 0; off < bytes; off += HPDL__MPI_PIECE_BYTES)
        HPDL__MPI_TRY(MPI_Bcast((char *)buf + off, hpdl__mpi_piece(bytes, off), MPI_BYTE, root, comm));
    return HPDL_OK;
}

/* Ring schedule for rank r of p, step `step` of a phase. Reduce-scatter
   (phase 0) sends segment r-step and receives r-step-1, adding it: after
   p-1 steps rank r holds the full sum of segment r+1. Allgather (phase 1)
   then passes the complete segments on: send r+1-step, receive r-step. */
HPDL_MPI_API void hpdl__mpi_ring_segments(int phase, int step, int r, int p, int *send_seg, int *recv_seg) {
    int shift = phase == 0 ? 0 : 1;
    *send_seg = ((r - step + shift) % p + p) % p;
    *recv_seg = ((r - step - 1 + shift) % p + p) % p;
}

/* One ring step's two segments as element ranges. */
typedef struct hpdl__mpi_ring_step {
    int64_t send_begin, send_count, recv_begin, recv_count;
    int reduce; /* 1: add what arrives (reduce-scatter); 0: store it (allgather) */
} hpdl__mpi_ring_step;

HPDL_MPI_API hpdl__mpi_ring_step hpdl__mpi_ring_step_at(int64_t count, int phase, int step, int r, int p) {
    hpdl__mpi_ring_step s;
    int send_seg, recv_seg;
    hpdl__mpi_ring_segments(phase, step, r, p, &send_seg, &recv_seg);
    s.send_begin = hpdl__mpi_split_begin(count, send_seg, p);
    s.send_count = hpdl__mpi_split_begin(count, send_seg + 1, p) - s.send_begin;
    s.recv_begin = hpdl__mpi_split_begin(count, recv_seg, p);
    s.recv_count = hpdl__mpi_split_begin(count, recv_seg + 1, p) - s.recv_begin;
    s.reduce = phase == 0;
    return s;
}

/* The ring on host memory; tmp holds one segment (count / p + 1 elements). */
HPDL_MPI_API hpdl_status hpdl__mpi_ring_host(void *buf, int64_t count, hpdl_mpi_dtype t, void *tmp, MPI_Comm comm) {
    size_t es = hpdl_mpi_dtype_size(t);
    char *data = (char *)buf;
    int r, p, phase, step;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    for (phase = 0; phase < 2; phase++) {
        for (step = 0; step < p - 1; step++) {
            hpdl__mpi_ring_step s = hpdl__mpi_ring_step_at(count, phase, step, r, p);
            char *into = s.reduce ? (char *)tmp : data + (size_t)s.recv_begin * es;
            hpdl_status st = hpdl__mpi_sendrecv(data + (size_t)s.send_begin * es, (size_t)s.send_count * es,
                                                (r + 1) % p, into, (size_t)s.recv_count * es, (r + p - 1) % p, comm);
            if (st != HPDL_OK) return st;
            if (s.reduce) hpdl__mpi_sum_into_host(t, data + (size_t)s.recv_begin * es, tmp, s.recv_count);
        }
    }
    return HPDL_OK;
}

/* ======================================================================== */
/* Device buffers (nvcc builds)                                              */
/* ======================================================================== */
#ifdef __CUDACC__

#define HPDL_DEFINE_MPI_REDUCE_CUDA(SUFFIX, T, ACC_T, LOAD, STORE)             \
    static __global__ void hpdl__mpi_sum_kernel_##SUFFIX(T *HPDL_RESTRICT dst, const T *HPDL_RESTRICT src, int64_t n) { \
        int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;            \
        for (; i < n; i += (int64_t)gridDim.x * blockDim.x)                    \
            dst[i] = STORE((ACC_T)LOAD(dst[i]) + (ACC_T)LOAD(src[i]));         \
    }                                                                          \
    static __global__ void hpdl__mpi_divide_kernel_##SUFFIX(T *x, int64_t n, ACC_T d) { \
        int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;            \
        for (; i < n; i += (int64_t)gridDim.x * blockDim.x) x[i] = STORE((ACC_T)LOAD(x[i]) / d); \
    }

HPDL_DEFINE_MPI_REDUCE_CUDA(f32, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)
HPDL_DEFINE_MPI_REDUCE_CUDA(f64, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)
HPDL_DEFINE_MPI_REDUCE_CUDA(f16, hpdl_f16, float, HPDL_LOAD_F16, HPDL_STORE_F16)
HPDL_DEFINE_MPI_REDUCE_CUDA(bf16, hpdl_bf16, float, HPDL_LOAD_BF16, HPDL_STORE_BF16)

HPDL_MPI_API unsigned hpdl__mpi_grid(int64_t n) {
    int64_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096); /* grid-stride beyond */
}

HPDL_MPI_API hpdl_status hpdl__mpi_sum_into_device(hpdl_mpi_dtype t, void *dst, const void *src, int64_t n,
                                               cudaStream_t stream) {
    unsigned g = hpdl__mpi_grid(n);
    if (n == 0) return HPDL_OK;
    switch (t) {
    case HPDL_MPI_F32: hpdl__mpi_sum_kernel_f32<<<g, 256, 0, stream>>>((float *)dst, (const float *)src, n); break;
    case HPDL_MPI_F64: hpdl__mpi_sum_kernel_f64<<<g, 256, 0, stream>>>((double *)dst, (const double *)src, n); break;
    case HPDL_MPI_F16: hpdl__mpi_sum_kernel_f16<<<g, 256, 0, stream>>>((hpdl_f16 *)dst, (const hpdl_f16 *)src, n); break;
    case HPDL_MPI_BF16: hpdl__mpi_sum_kernel_bf16<<<g, 256, 0, stream>>>((hpdl_bf16 *)dst, (const hpdl_bf16 *)src, n); break;
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_divide_device(hpdl_mpi_dtype t, void *x, int64_t n, int d, cudaStream_t stream) {
    unsigned g = hpdl__mpi_grid(n);
    if (n == 0) return HPDL_OK;
    switch (t) {
    case HPDL_MPI_F32: hpdl__mpi_divide_kernel_f32<<<g, 256, 0, stream>>>((float *)x, n, (float)d); break;
    case HPDL_MPI_F64: hpdl__mpi_divide_kernel_f64<<<g, 256, 0, stream>>>((double *)x, n, (double)d); break;
    case HPDL_MPI_F16: hpdl__mpi_divide_kernel_f16<<<g, 256, 0, stream>>>((hpdl_f16 *)x, n, (float)d); break;
    case HPDL_MPI_BF16: hpdl__mpi_divide_kernel_bf16<<<g, 256, 0, stream>>>((hpdl_bf16 *)x, n, (float)d); break;
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* 1 for device (or managed) memory, 0 for host memory. */
HPDL_MPI_API int hpdl__mpi_on_device(const void *p) {
    cudaPointerAttributes a;
    if (!p) return 0;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) { cudaGetLastError(); return 0; }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* ---- staging through pinned host memory ---------------------------------- */

/* Chunks cycle through HPDL__MPI_SLOTS slots: while chunk c is on the wire,
   chunk c-1 is copied up (and added) on one stream and chunks c+1, c+2 are
   copied down on another, so PCIe in both directions overlaps MPI. */
#define HPDL__MPI_SLOTS 4
#define HPDL__MPI_LOOKAHEAD (HPDL__MPI_SLOTS - 2)

typedef struct hpdl__mpi_stage {
    int ready, device;
    size_t chunk_bytes;
    char *host_send[HPDL__MPI_SLOTS], *host_recv[HPDL__MPI_SLOTS], *dev_tmp[HPDL__MPI_SLOTS];
    cudaStream_t d2h, h2d;
    cudaEvent_t d2h_done[HPDL__MPI_SLOTS], h2d_done[HPDL__MPI_SLOTS], order;
} hpdl__mpi_stage;

HPDL_MPI_API hpdl__mpi_stage *hpdl__mpi_stage_state(void) {
    static hpdl__mpi_stage st; /* zero: not set up */
    return &st;
}

HPDL_MPI_API void hpdl__mpi_stage_release(hpdl__mpi_stage *st) {
    int i;
    if (st->d2h) cudaStreamSynchronize(st->d2h);
    if (st->h2d) cudaStreamSynchronize(st->h2d);
    for (i = 0; i < HPDL__MPI_SLOTS; i++) {
        hpdl_cuda_free_pinned(st->host_send[i]);
        hpdl_cuda_free_pinned(st->host_recv[i]);
        hpdl_cuda_free(st->dev_tmp[i]);
        if (st->d2h_done[i]) cudaEventDestroy(st->d2h_done[i]);
        if (st->h2d_done[i]) cudaEventDestroy(st->h2d_done[i]);
    }
    if (st->order) cudaEventDestroy(st->order);
    if (st->d2h) cudaStreamDestroy(st->d2h);
    if (st->h2d) cudaStreamDestroy(st->h2d);
    memset(st, 0, sizeof *st);
}

HPDL_MPI_API hpdl_status hpdl__mpi_stage_alloc(hpdl__mpi_stage *st, size_t chunk) {
    int i;
    HPDL_CUDA_TRY(cudaGetDevice(&st->device));
    st->chunk_bytes = chunk;
    HPDL_CUDA_TRY(cudaStreamCreateWithFlags(&st->d2h, cudaStreamNonBlocking));
    HPDL_CUDA_TRY(cudaStreamCreateWithFlags(&st->h2d, cudaStreamNonBlocking));
    HPDL_CUDA_TRY(cudaEventCreateWithFlags(&st->order, cudaEventDisableTiming));
    for (i = 0; i < HPDL__MPI_SLOTS; i++) {
        if (hpdl_cuda_alloc_pinned((void **)&st->host_send[i], chunk) != HPDL_OK ||
            hpdl_cuda_alloc_pinned((void **)&st->host_recv[i], chunk) != HPDL_OK ||
            hpdl_cuda_alloc((void **)&st->dev_tmp[i], chunk) != HPDL_OK)
            return HPDL_ERR_NOMEM;
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&st->d2h_done[i], cudaEventDisableTiming));
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&st->h2d_done[i], cudaEventDisableTiming));
    }
    st->ready = 1;
    return HPDL_OK;
}

/* The staging buffers for the current device and chunk size, made on first
   use and kept (pinned allocations cost milliseconds). */
HPDL_MPI_API hpdl_status hpdl__mpi_stage_get(hpdl__mpi_stage **out) {
    hpdl__mpi_stage *st = hpdl__mpi_stage_state();
    size_t chunk = hpdl__mpi_settings_get()->chunk_bytes;
    int device = 0;
    hpdl_status s;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    if (!st->ready || st->device != device || st->chunk_bytes != chunk) {
        hpdl__mpi_stage_release(st);
        s = hpdl__mpi_stage_alloc(st, chunk);
        if (s != HPDL_OK) { hpdl__mpi_stage_release(st); return s; }
    }
    *out = st;
    return HPDL_OK;
}

/* Both staging streams start after the work queued on the hpdl stream. */
HPDL_MPI_API hpdl_status hpdl__mpi_stage_begin(hpdl__mpi_stage *st) {
    HPDL_CUDA_TRY(cudaEventRecord(st->order, hpdl__mpi_settings_get()->stream));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(st->d2h, st->order, 0));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(st->h2d, st->order, 0));
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_stage_end(hpdl__mpi_stage *st) {
    HPDL_CUDA_TRY(cudaStreamSynchronize(st->h2d));
    HPDL_CUDA_TRY(cudaStreamSynchronize(st->d2h));
    return HPDL_OK;
}

enum { HPDL__STAGE_ALLREDUCE, HPDL__STAGE_EXCHANGE };

/* One staged pass over device memory: chunks of `send` go down to the host
   and are either allreduced in place (MPI_Allreduce; send == recv) or sent to
   `right` while the same-numbered chunks of `recv` come from `left`;
   results go back up, added to recv when `reduce`. */
typedef struct hpdl__mpi_stage_job {
    int mode, reduce, left, right;
    hpdl_mpi_dtype dtype;
    const char *send;
    char *recv;
    size_t send_bytes, recv_bytes;
    MPI_Comm comm;
} hpdl__mpi_stage_job;

HPDL_MPI_API size_t hpdl__mpi_chunk_len(size_t total, size_t chunk, int64_t c) {
    size_t off = (size_t)c * chunk;
    return off >= total ? 0 : (total - off < chunk ? total - off : chunk);
}

/* Copies chunk c down into its slot once the slot's previous upload is done
   (that upload read host_send or host_recv of the same slot). */
HPDL_MPI_API hpdl_status hpdl__mpi_stage_down(hpdl__mpi_stage *st, const hpdl__mpi_stage_job *job, int64_t c) {
    int slot = (int)(c % HPDL__MPI_SLOTS);
    size_t n = hpdl__mpi_chunk_len(job->send_bytes, st->chunk_bytes, c);
    HPDL_CUDA_TRY(cudaEventSynchronize(st->h2d_done[slot]));
    if (n == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaMemcpyAsync(st->host_send[slot], job->send + (size_t)c * st->chunk_bytes, n,
                                  cudaMemcpyDeviceToHost, st->d2h));
    HPDL_CUDA_TRY(cudaEventRecord(st->d2h_done[slot], st->d2h));
    return HPDL_OK;
}

/* MPI for chunk c (blocking: the copies of other chunks run meanwhile). */
HPDL_MPI_API hpdl_status hpdl__mpi_stage_wire(hpdl__mpi_stage *st, const hpdl__mpi_stage_job *job, int64_t c) {
    int slot = (int)(c % HPDL__MPI_SLOTS);
    size_t ns = hpdl__mpi_chunk_len(job->send_bytes, st->chunk_bytes, c);
    size_t nr = hpdl__mpi_chunk_len(job->recv_bytes, st->chunk_bytes, c);
    if (ns) HPDL_CUDA_TRY(cudaEventSynchronize(st->d2h_done[slot]));
    if (job->mode == HPDL__STAGE_ALLREDUCE)
        return hpdl__mpi_allreduce_mpi(st->host_send[slot], (int64_t)(ns / hpdl_mpi_dtype_size(job->dtype)),
                                       job->dtype, job->comm);
    return hpdl__mpi_sendrecv(st->host_send[slot], ns, job->right, st->host_recv[slot], nr, job->left, job->comm);
}

/* Copies chunk c's result up (into dev_tmp and adds it when reducing). */
HPDL_MPI_API hpdl_status hpdl__mpi_stage_up(hpdl__mpi_stage *st, const hpdl__mpi_stage_job *job, int64_t c) {
    int slot = (int)(c % HPDL__MPI_SLOTS);
    size_t n = hpdl__mpi_chunk_len(job->recv_bytes, st->chunk_bytes, c);
    char *dst = job->recv + (size_t)c * st->chunk_bytes;
    const char *src = job->mode == HPDL__STAGE_ALLREDUCE ? st->host_send[slot] : st->host_recv[slot];
    if (n == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaMemcpyAsync(job->reduce ? st->dev_tmp[slot] : dst, src, n, cudaMemcpyHostToDevice, st->h2d));
    if (job->reduce) {
        hpdl_status s = hpdl__mpi_sum_into_device(job->dtype, dst, st->dev_tmp[slot],
                                                  (int64_t)(n / hpdl_mpi_dtype_size(job->dtype)), st->h2d);
        if (s != HPDL_OK) return s;
    }
    HPDL_CUDA_TRY(cudaEventRecord(st->h2d_done[slot], st->h2d));
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_stage_run(hpdl__mpi_stage *st, const hpdl__mpi_stage_job *job) {
    size_t chunk = st->chunk_bytes;
    size_t most = job->send_bytes > job->recv_bytes ? job->send_bytes : job->recv_bytes;
    int64_t n = (int64_t)((most + chunk - 1) / chunk), c;
    hpdl_status s = HPDL_OK;
    /* what this pass sends may be what the previous pass wrote */
    HPDL_CUDA_TRY(cudaEventRecord(st->order, st->h2d));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(st->d2h, st->order, 0));
    for (c = 0; c < n && c < HPDL__MPI_LOOKAHEAD && s == HPDL_OK; c++) s = hpdl__mpi_stage_down(st, job, c);
    for (c = 0; c < n && s == HPDL_OK; c++) {
        s = hpdl__mpi_stage_wire(st, job, c);
        if (s == HPDL_OK) s = hpdl__mpi_stage_up(st, job, c);
        if (s == HPDL_OK && c + HPDL__MPI_LOOKAHEAD < n) s = hpdl__mpi_stage_down(st, job, c + HPDL__MPI_LOOKAHEAD);
    }
    return s;
}

/* MPI_Allreduce of a device buffer through pinned host chunks. */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_staged(void *buf, int64_t count, hpdl_mpi_dtype t, MPI_Comm comm) {
    hpdl__mpi_stage *st;
    hpdl__mpi_stage_job job;
    hpdl_status s = hpdl__mpi_stage_get(&st);
    if (s == HPDL_OK) s = hpdl__mpi_stage_begin(st);
    memset(&job, 0, sizeof job);
    job.mode = HPDL__STAGE_ALLREDUCE;
    job.dtype = t;
    job.send = (const char *)buf;
    job.recv = (char *)buf;
    job.send_bytes = job.recv_bytes = (size_t)count * hpdl_mpi_dtype_size(t);
    job.comm = comm;
    if (s == HPDL_OK) s = hpdl__mpi_stage_run(st, &job);
    if (s == HPDL_OK) s = hpdl__mpi_stage_end(st);
    return s;
}

/* The ring on a device buffer: each step is one staged exchange, and the
   reduce-scatter's additions run on the GPU. */
HPDL_MPI_API hpdl_status hpdl__mpi_ring_device(void *buf, int64_t count, hpdl_mpi_dtype t, MPI_Comm comm) {
    hpdl__mpi_stage *st;
    hpdl__mpi_stage_job job;
    size_t es = hpdl_mpi_dtype_size(t);
    int r, p, phase, step;
    hpdl_status s = hpdl__mpi_stage_get(&st);
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (s == HPDL_OK) s = hpdl__mpi_stage_begin(st);
    memset(&job, 0, sizeof job);
    job.mode = HPDL__STAGE_EXCHANGE;
    job.dtype = t;
    job.left = (r + p - 1) % p;
    job.right = (r + 1) % p;
    job.comm = comm;
    for (phase = 0; phase < 2 && s == HPDL_OK; phase++) {
        for (step = 0; step < p - 1 && s == HPDL_OK; step++) {
            hpdl__mpi_ring_step rs = hpdl__mpi_ring_step_at(count, phase, step, r, p);
            job.send = (const char *)buf + (size_t)rs.send_begin * es;
            job.send_bytes = (size_t)rs.send_count * es;
            job.recv = (char *)buf + (size_t)rs.recv_begin * es;
            job.recv_bytes = (size_t)rs.recv_count * es;
            job.reduce = rs.reduce;
            s = hpdl__mpi_stage_run(st, &job);
        }
    }
    if (s == HPDL_OK) s = hpdl__mpi_stage_end(st);
    return s;
}

/* Broadcast of a device buffer through the first staging slot. */
HPDL_MPI_API hpdl_status hpdl__mpi_bcast_staged(void *buf, size_t bytes, int root, MPI_Comm comm) {
    hpdl__mpi_stage *st;
    size_t off;
    int rank = 0;
    hpdl_status s = hpdl__mpi_stage_get(&st);
    MPI_Comm_rank(comm, &rank);
    if (s == HPDL_OK) s = hpdl__mpi_stage_begin(st);
    for (off = 0; off < bytes && s == HPDL_OK; off += st->chunk_bytes) {
        size_t n = bytes - off < st->chunk_bytes ? bytes - off : st->chunk_bytes;
        char *d = (char *)buf + off;
        if (rank == root) {
            HPDL_CUDA_TRY(cudaMemcpyAsync(st->host_send[0], d, n, cudaMemcpyDeviceToHost, st->d2h));
            HPDL_CUDA_TRY(cudaStreamSynchronize(st->d2h));
        }
        s = hpdl__mpi_bcast_host(st->host_send[0], n, root, comm);
        if (s == HPDL_OK && rank != root) {
            HPDL_CUDA_TRY(cudaMemcpyAsync(d, st->host_send[0], n, cudaMemcpyHostToDevice, st->h2d));
            HPDL_CUDA_TRY(cudaStreamSynchronize(st->h2d));
        }
    }
    return s;
}

/* ---- NCCL ------------------------------------------------------------------ */
#ifdef HPDL_MPI_HAVE_NCCL

#define HPDL__MPI_NCCL_CACHE 16

typedef struct hpdl__mpi_nccl_entry {
    MPI_Comm mpi;
    int device, max_ctas;
    int refused;     /* 1: ranks of mpi share a GPU, no communicator made */
    ncclComm_t nccl; /* NULL and not refused: free entry */
} hpdl__mpi_nccl_entry;

HPDL_MPI_API hpdl__mpi_nccl_entry *hpdl__mpi_nccl_cache(void) {
    static hpdl__mpi_nccl_entry cache[HPDL__MPI_NCCL_CACHE];
    return cache;
}

HPDL_MPI_API void hpdl__mpi_nccl_release(void) {
    hpdl__mpi_nccl_entry *cache = hpdl__mpi_nccl_cache();
    int i;
    for (i = 0; i < HPDL__MPI_NCCL_CACHE; i++) {
        if (cache[i].nccl) ncclCommDestroy(cache[i].nccl);
        cache[i].nccl = NULL;
        cache[i].refused = 0;
    }
}

/* Joins the NCCL communicator of `size` ranks identified by id, with at
   most max_ctas CTAs per collective (0: NCCL's choice). */
HPDL_MPI_API hpdl_status hpdl__mpi_nccl_init(ncclComm_t *nc, int size, ncclUniqueId id, int rank, int max_ctas) {
#if NCCL_VERSION_CODE >= 21700
    if (max_ctas > 0) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.minCTAs = 1; /* NCCL rejects minCTAs > maxCTAs */
        config.maxCTAs = max_ctas;
        HPDL__NCCL_TRY(ncclCommInitRankConfig(nc, size, id, rank, &config));
        return HPDL_OK;
    }
#endif
    HPDL__NCCL_TRY(ncclCommInitRank(nc, size, id, rank));
    return HPDL_OK;
}

/* 1 on every rank of comm when two of its ranks on one node use the same
   GPU (the same PCI bus id, whatever CUDA_VISIBLE_DEVICES says): more
   ranks than GPUs. NCCL refuses that, on some of the ranks only, while the
   others wait for them. Collective. */
HPDL_MPI_API int hpdl__mpi_gpus_shared(MPI_Comm comm) {
    MPI_Comm node;
    char(*bus)[32] = NULL;
    int n = 0, me = 0, device = 0, j, have = 0, all_have = 0, shared = 0, any = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &n);
        MPI_Comm_rank(node, &me);
        bus = (char(*)[32])calloc((size_t)n, 32);
        have = bus != NULL;
        MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, node);
        if (all_have) {
            if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus[me], 32, device) != cudaSuccess) {
                cudaGetLastError();
                snprintf(bus[me], 32, "no GPU, node rank %d", me); /* unlike any other */
            }
            if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, bus, 32, MPI_CHAR, node) == MPI_SUCCESS)
                for (j = 0; j < n; j++) shared |= j != me && !strcmp(bus[j], bus[me]);
        }
        free(bus);
        MPI_Comm_free(&node);
    }
    MPI_Allreduce(&shared, &any, 1, MPI_INT, MPI_MAX, comm);
    return any;
}

/* A refusal for ranks that share a GPU, said on rank 0 when `verbose`. */
HPDL_MPI_API hpdl_status hpdl__mpi_nccl_refused(MPI_Comm comm, int verbose) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (verbose && rank == 0)
        fprintf(stderr, "hpdl_mpi: NCCL unsupported here: ranks share a GPU (NCCL takes one GPU a rank)\n");
    return HPDL_ERR_UNSUPPORTED;
}

/* hpdl_mpi_nccl_comm, saying on rank 0 why it refuses when `verbose`. */
HPDL_MPI_API hpdl_status hpdl__mpi_nccl_comm(MPI_Comm comm, int verbose, ncclComm_t *out) {
    hpdl__mpi_nccl_entry *cache = hpdl__mpi_nccl_cache();
    struct { int ok; ncclUniqueId id; } boot;
    ncclComm_t nc;
    int i, device = 0, rank = 0, size = 1, slot = -1, ctas = hpdl__mpi_settings_get()->nccl_max_ctas;
    hpdl_status s;
    if (!out || comm == MPI_COMM_NULL) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    for (i = 0; i < HPDL__MPI_NCCL_CACHE; i++) {
        hpdl__mpi_nccl_entry *e = &cache[i];
        if ((e->nccl || e->refused) && e->mpi == comm && e->device == device && e->max_ctas == ctas) {
            *out = e->nccl;
            return e->refused ? hpdl__mpi_nccl_refused(comm, verbose) : HPDL_OK;
        }
        if (!e->nccl && !e->refused && slot < 0) slot = i;
    }
    if (slot < 0) return HPDL_ERR_UNSUPPORTED; /* same count on every rank: all return this */
    cache[slot].mpi = comm;
    cache[slot].device = device;
    cache[slot].max_ctas = ctas;
    /* the same answer on every rank, before NCCL sees the ranks */
    if (hpdl__mpi_gpus_shared(comm)) {
        cache[slot].refused = 1;
        return hpdl__mpi_nccl_refused(comm, verbose);
    }
    HPDL__MPI_TRY(MPI_Comm_rank(comm, &rank));
    HPDL__MPI_TRY(MPI_Comm_size(comm, &size));
    memset(&boot, 0, sizeof boot);
    if (rank == 0) boot.ok = ncclGetUniqueId(&boot.id) == ncclSuccess;
    /* the flag travels with the id, so a failure on rank 0 fails every rank */
    HPDL__MPI_TRY(MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, comm));
    if (!boot.ok) return HPDL_ERR_NCCL;
    s = hpdl__mpi_nccl_init(&nc, size, boot.id, rank, ctas);
    if (s != HPDL_OK) return s; /* the entry stays free */
    cache[slot].nccl = nc;
    *out = nc;
    return HPDL_OK;
}

/* Collective on first use per (MPI communicator, device, CTA cap of
   hpdl_mpi_set_nccl_max_ctas): rank 0 makes the ncclUniqueId and broadcasts
   it over MPI, every rank joins. Later calls return the cached communicator.
   HPDL_ERR_UNSUPPORTED on every rank, and why on rank 0's stderr, where
   ranks share a GPU. */
HPDL_MPI_API hpdl_status hpdl_mpi_nccl_comm(MPI_Comm comm, ncclComm_t *out) { return hpdl__mpi_nccl_comm(comm, 1, out); }

HPDL_MPI_API int hpdl__mpi_nccl_type(hpdl_mpi_dtype t, ncclDataType_t *out) {
    switch (t) {
    case HPDL_MPI_F32: *out = ncclFloat32; return 1;
    case HPDL_MPI_F64: *out = ncclFloat64; return 1;
    case HPDL_MPI_F16: *out = ncclFloat16; return 1;
    case HPDL_MPI_BF16:
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 21000
        *out = ncclBfloat16; return 1;
#else
        return 0;
#endif
    }
    return 0;
}

/* ncclAllReduce in place on `stream`; returns without waiting for it. */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_nccl(void *buf, int64_t count, hpdl_mpi_dtype t, MPI_Comm comm,
                                              cudaStream_t stream) {
    ncclComm_t nc;
    ncclDataType_t type;
    hpdl_status s;
    if (!hpdl__mpi_nccl_type(t, &type)) return HPDL_ERR_UNSUPPORTED;
    s = hpdl_mpi_nccl_comm(comm, &nc);
    if (s != HPDL_OK) return s;
    HPDL__NCCL_TRY(ncclAllReduce(buf, buf, (size_t)count, type, ncclSum, nc, stream));
    return HPDL_OK;
}
#endif /* HPDL_MPI_HAVE_NCCL */

/* ---- NVLink allreduce through CUDA IPC ------------------------------------ */
/* For small and mid-size messages between the GPUs of one node, NCCL's fixed
   costs dominate. Here every rank shares one device region with its peers
   through CUDA IPC handles (exchanged over MPI once, at create), and an
   allreduce is one kernel that reads the peers' memory directly over NVLink
   (or PCIe peer access), as vLLM's and TensorRT-LLM's custom allreduces do.
   Each block of the grid owns one contiguous part of the buffer, the same
   part on every rank:
     one-shot  the block pushes its part of the caller's buffer into this
               rank's slot of every peer's inbox (16-byte stores over
               NVLink, posted: no round trip per load) and keeps it in
               registers; as the peers' packs land in its own inbox, it sums
               them with its registers (local reads) into the caller's
               buffer: (p-1) x bytes written per GPU. The part goes in steps
               of HPDL__IPC_UNROLL packs a thread, pipelined: a thread pushes
               step s, then sums step s-1, so NVLink carries step s while
               step s-1 is summed. No flags: an inbox word is empty (all bits
               set) until its pack lands (hpdl__ipc_mailable), so nothing
               waits for a store to be acknowledged;
     two-shot  the block copies its part into its own staging buffer,
               meets the peers, sums only segment r of the part (rank r,
               reduce-scatter, reading the peers' staging buffers) and
               writes it to its staging buffer, meets the peers again, then
               copies their reduced segments (all-gather): two meetings,
               2(p-1)/p x bytes read per GPU.
   Sums run in the accumulation type (f32 for f16/bf16) in rank order, so
   every rank gets the same bits.

   Region of each rank (one cudaMalloc, shared by IPC):
     flags[phase][block][from]  uint32: rank `from` writes, the owner polls
     staging[0], staging[1]     two-shot, max_bytes each: calls with even /
                                odd seq; this rank's own copy, read by the
                                peers
     inbox[0], inbox[1]         one-shot, max_bytes each: calls with even /
                                odd seq; p-1 slots of slot_bytes, one per
                                peer that pushes into it, emptied by their
                                reader

   Synchronisation. Calls are numbered seq = 1, 2, ... (the same on every
   rank: calls are collective), and the two-shot's flags hold the mark seq
   (modulo 2^32). A block signals its peers by
   writing the mark into its flag in each peer's region with
   st.release.sys, and waits until each peer's flag in its own region has
   reached the mark, read with ld.acquire.sys: what
   the peer's block wrote before its release (its part of the staging
   buffer) is visible after our acquire. Only block b of each rank waits
   for block b of the others (one-shot: a thread for the packs of the same
   thread of the others): no grid-wide barrier. The grid is small (at most
   `blocks`, and at most one block per SM) so all blocks of every rank's
   kernel can be resident together: a waiting block never waits for one
   that cannot start.
   No meeting at the end: call seq+1 uses the other staging buffer or
   inbox, and before a peer's call seq+2 writes into this one, that peer
   has received something our kernel of call seq+1 wrote (a mark, or a
   pushed pack), and that kernel starts only once our kernel of call seq
   (which read or emptied this buffer) has finished. A flag is never ahead
   of the mark its reader waits for: a peer writes flag [0][b] of a later
   two-shot call only after its block b met ours in phase 1 of this one,
   and flag [1][b] only after ours signalled phase 0 of the later call. So
   a block waits for "equal": "at least" would take a flag that no two-shot
   call has written for 2^31 calls (one-shot calls in between) for a new
   one. The same reasoning needs one rank's calls to run one after another:
   a call on another stream than the last waits for the last. The call number is a
   kernel argument, so these calls cannot be captured in a CUDA graph. */

#ifndef HPDL_MPI_IPC_MAX_RANKS
#define HPDL_MPI_IPC_MAX_RANKS 8 /* GPUs of one node */
#endif
#define HPDL__IPC_MAX_BLOCKS 128
#define HPDL__IPC_THREADS 512
/* Packs a thread handles per step: 4 x 512 threads x 128 blocks = 4 MiB a
   one-shot step. Measured on two H200s against 2 packs: the same at 8 MiB
   (29.3 us), 9 % faster at 16 MiB, 0.4-0.9 us slower at 1-4 MiB. */
#ifndef HPDL__IPC_UNROLL /* experiments build other step lengths */
#define HPDL__IPC_UNROLL 4
#endif
#define HPDL__IPC_PHASES 2
#define HPDL__IPC_MAX_STAGING ((size_t)512 << 20)
#define HPDL__IPC_FLAG_BYTES ((size_t)HPDL__IPC_PHASES * HPDL__IPC_MAX_BLOCKS * HPDL_MPI_IPC_MAX_RANKS * 4)

/* A persistent context: made once per communicator (collective), used by
   every call on it. */
typedef struct hpdl_mpi_ipc {
    MPI_Comm comm;    /* this context's duplicate of the communicator */
    int rank, size;   /* in comm */
    int blocks;       /* grid size limit, the same on every rank */
    int early;        /* 1: programmatic dependent launch (sm_90 code), 0: not, -1: not asked yet */
    size_t max_bytes; /* each staging buffer and inbox: larger two-shot calls go in pieces of it */
    size_t slot_bytes; /* one peer's slot of it: larger one-shot calls go in pieces of it */
    uint32_t seq;     /* calls made so far */
    char *region[HPDL_MPI_IPC_MAX_RANKS]; /* every rank's region as mapped here */
    cudaStream_t last_stream;             /* where the last call ran (compared, never used) */
    cudaEvent_t last_done;                /* recorded after each call: a call on another stream waits for it */
} hpdl_mpi_ipc;

/* Why a context cannot be made; agreed across ranks (largest reason wins). */
enum { HPDL__IPC_OK, HPDL__IPC_TOO_MANY, HPDL__IPC_NODES, HPDL__IPC_SHARED_GPU, HPDL__IPC_NO_PEER,
       HPDL__IPC_NO_MEMORY, HPDL__IPC_OPEN_FAILED };

HPDL_MPI_API const char *hpdl__mpi_ipc_reason(int code) {
    switch (code) {
    case HPDL__IPC_TOO_MANY: return "more ranks than HPDL_MPI_IPC_MAX_RANKS";
    case HPDL__IPC_NODES: return "the ranks are on different nodes";
    case HPDL__IPC_SHARED_GPU: return "two ranks share a GPU";
    case HPDL__IPC_NO_PEER: return "a GPU has no peer access to another rank's GPU";
    case HPDL__IPC_NO_MEMORY: return "no device memory for the shared region";
    case HPDL__IPC_OPEN_FAILED: return "cudaIpcOpenMemHandle failed (processes isolated from each other?)";
    }
    return "ok";
}

HPDL_MPI_API int hpdl__mpi_ipc_agree(int code, MPI_Comm comm) {
    int worst = code;
    if (MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return HPDL__IPC_OPEN_FAILED;
    return worst;
}

/* HPDL__IPC_OK when every rank of comm runs on this node. */
HPDL_MPI_API int hpdl__mpi_ipc_same_node(MPI_Comm comm, int size) {
    MPI_Comm node;
    int node_size = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return HPDL__IPC_NODES;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    return node_size == size ? HPDL__IPC_OK : HPDL__IPC_NODES;
}

/* HPDL__IPC_OK when this rank's GPU differs from every peer's and can access
   each of them. GPUs are named by PCI bus id, which is the same in every
   process whatever CUDA_VISIBLE_DEVICES says. */
HPDL_MPI_API int hpdl__mpi_ipc_check_peers(MPI_Comm comm, int rank, int size) {
    char bus[HPDL_MPI_IPC_MAX_RANKS][32];
    int device = 0, j, named = 1;
    memset(bus, 0, sizeof bus);
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus[rank], 32, device) != cudaSuccess) {
        cudaGetLastError();
        named = 0; /* still takes part in the exchange: the others wait for it */
    }
    if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, bus, 32, MPI_CHAR, comm) != MPI_SUCCESS || !named)
        return HPDL__IPC_NO_PEER;
    for (j = 0; j < size; j++) {
        int peer_device = -1, can = 0;
        if (j == rank) continue;
        if (!strcmp(bus[j], bus[rank])) return HPDL__IPC_SHARED_GPU;
        if (cudaDeviceGetByPCIBusId(&peer_device, bus[j]) != cudaSuccess ||
            cudaDeviceCanAccessPeer(&can, device, peer_device) != cudaSuccess || !can) {
            cudaGetLastError();
            return HPDL__IPC_NO_PEER;
        }
    }
    return HPDL__IPC_OK;
}

/* Where a region's staging buffers (two-shot) and inboxes (one-shot) begin:
   flags, staging[0], staging[1], inbox[0], inbox[1]. */
HPDL_MPI_API size_t hpdl__mpi_ipc_staging_at(size_t max_bytes, int twoshot, uint32_t seq) {
    return HPDL__IPC_FLAG_BYTES + ((twoshot ? 0 : 2) + (seq & 1)) * max_bytes;
}

HPDL_MPI_API size_t hpdl__mpi_ipc_region_bytes(size_t max_bytes) { return HPDL__IPC_FLAG_BYTES + 4 * max_bytes; }

/* This rank's region, flags and staging buffers zeroed (flags start below
   seq 1), inboxes empty (all bits set), and every peer's region mapped
   through the IPC handles. */
HPDL_MPI_API int hpdl__mpi_ipc_map(hpdl_mpi_ipc *c) {
    cudaIpcMemHandle_t handles[HPDL_MPI_IPC_MAX_RANKS];
    size_t bytes = hpdl__mpi_ipc_region_bytes(c->max_bytes);
    int code = HPDL__IPC_OK, j;
    if (cudaMalloc((void **)&c->region[c->rank], bytes) != cudaSuccess ||
        cudaMemset(c->region[c->rank], 0, bytes) != cudaSuccess ||
        cudaMemset(c->region[c->rank] + hpdl__mpi_ipc_staging_at(c->max_bytes, 0, 0), 0xFF, 2 * c->max_bytes) !=
            cudaSuccess ||
        cudaIpcGetMemHandle(&handles[c->rank], c->region[c->rank]) != cudaSuccess) {
        cudaGetLastError();
        code = HPDL__IPC_NO_MEMORY;
    }
    code = hpdl__mpi_ipc_agree(code, c->comm);
    if (code != HPDL__IPC_OK) return code;
    if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, handles, (int)sizeof handles[0], MPI_BYTE, c->comm) != MPI_SUCCESS)
        return HPDL__IPC_OPEN_FAILED;
    for (j = 0; j < c->size && code == HPDL__IPC_OK; j++) {
        if (j == c->rank) continue;
        if (cudaIpcOpenMemHandle((void **)&c->region[j], handles[j], cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
            cudaGetLastError();
            c->region[j] = NULL;
            code = HPDL__IPC_OPEN_FAILED;
        }
    }
    code = hpdl__mpi_ipc_agree(code, c->comm);
    /* no peer may write our flags or inboxes before the memsets are done */
    if (code == HPDL__IPC_OK && cudaDeviceSynchronize() != cudaSuccess) code = HPDL__IPC_NO_MEMORY;
    return hpdl__mpi_ipc_agree(code, c->comm);
}

/* Unmaps the peers' regions and frees this rank's. Collective: the first
   barrier waits until no kernel reads any region any more, the second until
   every peer has unmapped ours. */
HPDL_MPI_API void hpdl__mpi_ipc_unmap(hpdl_mpi_ipc *c) {
    int j;
    MPI_Barrier(c->comm);
    for (j = 0; j < c->size; j++)
        if (j != c->rank && c->region[j]) cudaIpcCloseMemHandle(c->region[j]);
    MPI_Barrier(c->comm);
    if (c->region[c->rank]) cudaFree(c->region[c->rank]);
}

/* Collective over the ranks of comm, one GPU each (the current device), all
   on one node with peer access between every pair. Makes a context whose
   staging buffers and inboxes take max_bytes each (rounded down to 16
   bytes, at least 16 per peer; 4 x max_bytes of device memory a rank);
   larger calls go in pieces (one-shot: of max_bytes / peers).
   HPDL_ERR_UNSUPPORTED on every rank, with the reason on rank 0's stderr
   when `verbose`, where that is not so. */
HPDL_MPI_API hpdl_status hpdl__mpi_ipc_create(hpdl_mpi_ipc *ctx, size_t max_bytes, MPI_Comm comm, int verbose) {
    hpdl_mpi_ipc made;
    const char *env = getenv("HPDL_MPI_IPC_BLOCKS");
    int code, device = 0, sms = 0, peers, blocks = env ? atoi(env) : HPDL_MPI_IPC_BLOCKS;
    if (comm == MPI_COMM_NULL) return HPDL_ERR_INVALID; /* nobody to agree with */
#ifdef HPDL_MPI_NO_IPC
    if (verbose && hpdl_mpi_rank() == 0) fprintf(stderr, "hpdl_mpi_ipc_create: unsupported: built with HPDL_MPI_NO_IPC\n");
    return HPDL_ERR_UNSUPPORTED; /* on every rank: no kernels to run */
#endif
    memset(&made, 0, sizeof made);
    /* one block per SM at most, so all blocks are resident together */
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess && blocks > sms)
        blocks = sms;
    cudaGetLastError();
    HPDL__MPI_TRY(MPI_Comm_rank(comm, &made.rank));
    HPDL__MPI_TRY(MPI_Comm_size(comm, &made.size));
    peers = made.size > 1 ? made.size - 1 : 1;
    code = !ctx || max_bytes / peers < 16 || blocks < 1 || blocks > HPDL__IPC_MAX_BLOCKS;
    if (hpdl__mpi_ipc_agree(code, comm)) return HPDL_ERR_INVALID;
    code = made.size > HPDL_MPI_IPC_MAX_RANKS ? HPDL__IPC_TOO_MANY : hpdl__mpi_ipc_same_node(comm, made.size);
    if (code == HPDL__IPC_OK) code = hpdl__mpi_ipc_check_peers(comm, made.rank, made.size);
    code = hpdl__mpi_ipc_agree(code, comm);
    if (code == HPDL__IPC_OK) {
        HPDL__MPI_TRY(MPI_Comm_dup(comm, &made.comm));
        HPDL__MPI_TRY(MPI_Allreduce(&blocks, &made.blocks, 1, MPI_INT, MPI_MIN, comm));
        /* at most 512 MiB a buffer: larger calls go in pieces */
        made.max_bytes = (max_bytes < HPDL__IPC_MAX_STAGING ? max_bytes : HPDL__IPC_MAX_STAGING) & ~(size_t)15;
        made.slot_bytes = (made.max_bytes / peers) & ~(size_t)15;
        made.last_stream = hpdl__mpi_settings_get()->stream;
        made.early = -1; /* asked at the first launch (hpdl__mpi_ipc_early) */
        code = hpdl__mpi_ipc_map(&made);
        if (code == HPDL__IPC_OK && cudaEventCreateWithFlags(&made.last_done, cudaEventDisableTiming) != cudaSuccess)
            code = HPDL__IPC_NO_MEMORY;
        code = hpdl__mpi_ipc_agree(code, comm);
        if (code != HPDL__IPC_OK) {
            hpdl__mpi_ipc_unmap(&made);
            if (made.last_done) cudaEventDestroy(made.last_done);
            MPI_Comm_free(&made.comm);
        }
    }
    if (code != HPDL__IPC_OK) {
        if (verbose && made.rank == 0)
            fprintf(stderr, "hpdl_mpi_ipc_create: unsupported: %s\n", hpdl__mpi_ipc_reason(code));
        return code == HPDL__IPC_NO_MEMORY ? HPDL_ERR_NOMEM : HPDL_ERR_UNSUPPORTED;
    }
    *ctx = made;
    return HPDL_OK;
}

/* See hpdl__mpi_ipc_create; says why on rank 0 when it refuses. */
HPDL_MPI_API hpdl_status hpdl_mpi_ipc_create(hpdl_mpi_ipc *ctx, size_t max_bytes, MPI_Comm comm) {
    return hpdl__mpi_ipc_create(ctx, max_bytes, comm, 1);
}

/* Collective: waits for this rank's calls, then frees the context. */
HPDL_MPI_API void hpdl_mpi_ipc_destroy(hpdl_mpi_ipc *ctx) {
    if (!ctx || !ctx->region[ctx->rank]) return;
    cudaEventSynchronize(ctx->last_done); /* the calls before it are ordered before it */
    hpdl__mpi_ipc_unmap(ctx);
    cudaEventDestroy(ctx->last_done);
    MPI_Comm_free(&ctx->comm);
    memset(ctx, 0, sizeof *ctx);
}

/* ---- the kernels ---- */

/* What a kernel needs: every rank's region as mapped in this process. */
typedef struct hpdl__ipc_args {
    char *region[HPDL_MPI_IPC_MAX_RANKS];
    size_t staging; /* offset of this call's staging buffer (two-shot) or inbox (one-shot) in every region */
    int64_t count;  /* elements of this call */
    int rank, size;
    uint32_t seq;
    int64_t slot_packs; /* one-shot: a peer's slot in a staging buffer */
    int buf_aligned;    /* the caller's buffer allows 16-byte accesses */
} hpdl__ipc_args;

/* 16 bytes of elements of type T: one vector load or store. */
typedef uint4 hpdl__ipc_pack;

/* Storage type <-> accumulation type (hpdl__acc: f32, f64 for f64). */
template <typename T> struct hpdl__ipc_cvt;
template <> struct hpdl__ipc_cvt<float> {
    static __device__ __forceinline__ float acc(float x) { return x; }
    static __device__ __forceinline__ float store(float v) { return v; }
};
template <> struct hpdl__ipc_cvt<double> {
    static __device__ __forceinline__ double acc(double x) { return x; }
    static __device__ __forceinline__ double store(double v) { return v; }
};
template <> struct hpdl__ipc_cvt<__half> {
    static __device__ __forceinline__ float acc(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half store(float v) { return __float2half_rn(v); }
};
template <> struct hpdl__ipc_cvt<__nv_bfloat16> {
    static __device__ __forceinline__ float acc(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

/* 16-byte packs holding count elements of elem_bytes (the last one may be partial). */
static __host__ __device__ __forceinline__ int64_t hpdl__ipc_packs(int64_t count, size_t elem_bytes) {
    return (count * (int64_t)elem_bytes + 15) / 16;
}

/* Where part k of n items split into p parts begins (hpdl_mpi_shard_range). */
static __host__ __device__ __forceinline__ int64_t hpdl__ipc_split(int64_t n, int k, int p) {
    int64_t base = n / p, extra = n % p;
    return (int64_t)k * base + (k < extra ? k : extra);
}

static __device__ __forceinline__ uint32_t *hpdl__ipc_flag(char *region, int phase, int block, int from) {
    return (uint32_t *)region + ((size_t)phase * HPDL__IPC_MAX_BLOCKS + block) * HPDL_MPI_IPC_MAX_RANKS + from;
}

/* a.region[rank] without indexing the kernel's parameters at run time
   (which would copy them all to local memory first). */
static __host__ __device__ __forceinline__ char *hpdl__ipc_region(const hpdl__ipc_args &a, int rank) {
    char *p = a.region[0];
    int r;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (r = 1; r < HPDL_MPI_IPC_MAX_RANKS; r++)
        if (r == rank) p = a.region[r];
    return p;
}

static __host__ __device__ __forceinline__ hpdl__ipc_pack *hpdl__ipc_staging(const hpdl__ipc_args &a, int rank) {
    return (hpdl__ipc_pack *)(hpdl__ipc_region(a, rank) + a.staging);
}

/* One-shot: the slot of rank `from` in rank `to`'s inbox (p-1 slots: `to`
   keeps its own packs in registers). */
static __host__ __device__ __forceinline__ hpdl__ipc_pack *hpdl__ipc_slot(const hpdl__ipc_args &a, int to, int from) {
    return hpdl__ipc_staging(a, to) + (int64_t)(from < to ? from : from - 1) * a.slot_packs;
}

/* Release store and acquire load at system scope: they order memory between
   GPUs, not only within one (fences of GPU scope would not). */
static __device__ __forceinline__ void hpdl__ipc_store_release(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
    __threadfence_system();
    *(volatile uint32_t *)p = v;
#else
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#endif
}

static __device__ __forceinline__ uint32_t hpdl__ipc_load_acquire(const uint32_t *p) {
    uint32_t v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
    v = *(const volatile uint32_t *)p;
    __threadfence_system();
#else
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
#endif
    return v;
}


/* Tells block blockIdx.x of every peer that this block's writes so far are
   done: thread j writes `mark` into its flag in peer j's region. The
   __syncthreads puts the whole block's writes before the release. */
static __device__ __forceinline__ void hpdl__ipc_signal(const hpdl__ipc_args &a, int phase, uint32_t mark) {
    int peer = (int)threadIdx.x;
    __syncthreads();
    if (peer < a.size && peer != a.rank)
        hpdl__ipc_store_release(hpdl__ipc_flag(hpdl__ipc_region(a, peer), phase, blockIdx.x, a.rank), mark);
}

/* Waits until block blockIdx.x of every peer has signalled `mark`: thread
   j polls peer j's flag in this rank's region (local reads). The
   __syncthreads puts every thread's later reads after the acquires. */
static __device__ __forceinline__ void hpdl__ipc_wait(const hpdl__ipc_args &a, int phase, uint32_t mark) {
    int peer = (int)threadIdx.x;
    if (peer < a.size && peer != a.rank) {
        const uint32_t *mine = hpdl__ipc_flag(hpdl__ipc_region(a, a.rank), phase, blockIdx.x, peer);
        while (hpdl__ipc_load_acquire(mine) != mark) {
        }
    }
    __syncthreads();
}

/* Block blockIdx.x of every rank meets here (two-shot: phase 0 or 1). */
static __device__ __forceinline__ void hpdl__ipc_meet(const hpdl__ipc_args &a, int phase) {
    hpdl__ipc_signal(a, phase, a.seq);
    hpdl__ipc_wait(a, phase, a.seq);
}

/* Pack u of the caller's buffer: one vector access when it is aligned and
   whole, else element by element (the last pack may be partial: zeros). */
template <typename T>
static __device__ __forceinline__ hpdl__ipc_pack hpdl__ipc_load_buf(const T *buf, int64_t u, const hpdl__ipc_args &a) {
    enum { N = 16 / sizeof(T) };
    int64_t first = u * N;
    hpdl__ipc_pack p = make_uint4(0, 0, 0, 0);
    int i;
    if (a.buf_aligned && first + N <= a.count) return *(const hpdl__ipc_pack *)(buf + first);
    for (i = 0; i < N && first + i < a.count; i++) ((T *)&p)[i] = buf[first + i];
    return p;
}

template <typename T>
static __device__ __forceinline__ void hpdl__ipc_store_buf(T *buf, int64_t u, const hpdl__ipc_args &a,
                                                           hpdl__ipc_pack p) {
    enum { N = 16 / sizeof(T) };
    int64_t first = u * N;
    int i;
    if (a.buf_aligned && first + N <= a.count) { *(hpdl__ipc_pack *)(buf + first) = p; return; }
    for (i = 0; i < N && first + i < a.count; i++) buf[first + i] = ((const T *)&p)[i];
}

/* A thread's packs of one step: u, u + blockDim.x, ... (HPDL__IPC_UNROLL of
   them), those below end. Each step issues all its loads before the first
   use, so several of them are in flight at once. __ldcg reads through L2
   only: the staging buffers change between calls. */
#define HPDL__IPC_STEP(j, u, end) \
    for (j = 0; j < HPDL__IPC_UNROLL; j++) if ((u) + (int64_t)j * blockDim.x < (end))

/* One-shot inboxes need no flags: every 8-byte word of an inbox holds
   HPDL__IPC_EMPTY (all bits set) until a peer's pack lands there, and the
   reader puts it back once it has taken the pack. A pushed word never has
   those bits: hpdl__ipc_mailable turns them into another NaN (they are a NaN
   in every element type, and a NaN sums to a NaN). Words are stored and
   loaded as 8-byte elements, which the memory model keeps whole, so a word
   is either all old or all new. */
#define HPDL__IPC_EMPTY 0xFFFFFFFFu       /* both halves of an empty word */
#define HPDL__IPC_OTHER_NAN 0x7FFF7FFFu   /* a NaN as f32, a pair of NaNs as f16 and bf16, a NaN as f64 */

static __device__ __forceinline__ int hpdl__ipc_word_empty(uint32_t lo, uint32_t hi) {
    return lo == HPDL__IPC_EMPTY && hi == HPDL__IPC_EMPTY;
}

/* p with every all-ones 8-byte word replaced by HPDL__IPC_OTHER_NAN's. */
static __device__ __forceinline__ hpdl__ipc_pack hpdl__ipc_mailable(hpdl__ipc_pack p) {
    if (hpdl__ipc_word_empty(p.x, p.y)) p.x = p.y = HPDL__IPC_OTHER_NAN;
    if (hpdl__ipc_word_empty(p.z, p.w)) p.z = p.w = HPDL__IPC_OTHER_NAN;
    return p;
}

static __device__ __forceinline__ int hpdl__ipc_arrived(hpdl__ipc_pack p) {
    return !hpdl__ipc_word_empty(p.x, p.y) && !hpdl__ipc_word_empty(p.z, p.w);
}

/* Stores and loads of inbox packs: two 8-byte words each, volatile (they
   race with the other GPU on purpose; never served from L1). */
static __device__ __forceinline__ void hpdl__ipc_post(hpdl__ipc_pack *to, hpdl__ipc_pack p) {
    unsigned long long lo = ((unsigned long long)p.y << 32) | p.x, hi = ((unsigned long long)p.w << 32) | p.z;
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(to), "l"(lo), "l"(hi) : "memory");
}

static __device__ __forceinline__ hpdl__ipc_pack hpdl__ipc_peek(const hpdl__ipc_pack *from) {
    unsigned long long lo, hi;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(from) : "memory");
    return make_uint4((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32));
}

/* The step's packs of one peer's slot in this rank's inbox: all loads go
   out together, then each is read again until its pack has landed; the
   slot is left empty for a later call. */
static __device__ __forceinline__ void hpdl__ipc_take(hpdl__ipc_pack *slot, int64_t u, int64_t end,
                                                      hpdl__ipc_pack *in) {
    const hpdl__ipc_pack empty = make_uint4(HPDL__IPC_EMPTY, HPDL__IPC_EMPTY, HPDL__IPC_EMPTY, HPDL__IPC_EMPTY);
    int j;
#pragma unroll
    HPDL__IPC_STEP(j, u, end) in[j] = hpdl__ipc_peek(slot + u + (int64_t)j * blockDim.x);
#pragma unroll
    HPDL__IPC_STEP(j, u, end) {
        while (!hpdl__ipc_arrived(in[j])) in[j] = hpdl__ipc_peek(slot + u + (int64_t)j * blockDim.x);
        hpdl__ipc_post(slot + u + (int64_t)j * blockDim.x, empty);
    }
}

/* The data-parallel driver's GEMM mirror (hpdl__gemm_auto_mirrored): each
   16-byte piece of the GEMM's output C[i..] is posted, as hpdl__ipc_push
   posts a pack, into this rank's slot of the peer's inbox, where a
   one-shot call on the same buffer finds it (`to`: the slot's place for
   C[0], the first pack of the gradient `from`). Before its main loop each
   block also posts its share of the gradient's packs [rest, end), the
   ones no tile makes (the other layers', made by earlier kernels): they
   cross NVLink while the tiles are computed, and the step's last kernel
   has nothing left to send. */
template <typename T> struct hpdl__ipc_mirror {
    enum { STAGED = 1 };
    T *to;
    const T *from;
    hpdl__ipc_args a;
    int64_t rest, end;
    __device__ __forceinline__ void start() const {
        const int64_t blocks = (int64_t)gridDim.x * gridDim.y, block = (int64_t)blockIdx.y * gridDim.x + blockIdx.x;
        const int64_t share = (end - rest + blocks - 1) / blocks, first = rest + block * share;
        const int64_t last = first + share < end ? first + share : end;
        int64_t u;
        for (u = first + threadIdx.x; u < last; u += blockDim.x)
            hpdl__ipc_post((hpdl__ipc_pack *)to + u, hpdl__ipc_mailable(hpdl__ipc_load_buf(from, u, a)));
    }
    __device__ __forceinline__ void operator()(size_t i, const T *v) const {
        hpdl__ipc_post((hpdl__ipc_pack *)(to + i), hpdl__ipc_mailable(*(const hpdl__ipc_pack *)v));
    }
};

/* This step's packs summed over every rank in rank order (so every rank
   gets the same bits). One-shot (PUSHED): this rank's own packs come from
   own[], each peer's from its slot in this rank's inbox; two-shot: every
   rank's from that rank's staging buffer. */
template <typename T, bool PUSHED>
static __device__ __forceinline__ void hpdl__ipc_sum(const hpdl__ipc_args &a, int64_t u, int64_t end,
                                                     const hpdl__ipc_pack *own, hpdl__ipc_pack *out) {
    typedef typename hpdl__acc<T>::type A;
    enum { N = 16 / sizeof(T) };
    A acc[HPDL__IPC_UNROLL][N];
    int r, i, j;
#pragma unroll
    for (j = 0; j < HPDL__IPC_UNROLL; j++)
#pragma unroll
        for (i = 0; i < N; i++) acc[j][i] = (A)0;
    for (r = 0; r < a.size; r++) {
        hpdl__ipc_pack in[HPDL__IPC_UNROLL];
        if (PUSHED && r == a.rank) {
#pragma unroll
            for (j = 0; j < HPDL__IPC_UNROLL; j++) in[j] = own[j];
        } else if (PUSHED) {
            hpdl__ipc_take(hpdl__ipc_slot(a, a.rank, r), u, end, in);
        } else {
            const hpdl__ipc_pack *src = hpdl__ipc_staging(a, r);
#pragma unroll
            HPDL__IPC_STEP(j, u, end) in[j] = __ldcg(src + u + (int64_t)j * blockDim.x);
        }
#pragma unroll
        HPDL__IPC_STEP(j, u, end) {
#pragma unroll
            for (i = 0; i < N; i++) acc[j][i] += hpdl__ipc_cvt<T>::acc(((const T *)&in[j])[i]);
        }
    }
#pragma unroll
    for (j = 0; j < HPDL__IPC_UNROLL; j++)
#pragma unroll
        for (i = 0; i < N; i++) ((T *)&out[j])[i] = hpdl__ipc_cvt<T>::store(acc[j][i]);
}

/* This block's packs [*begin, *end): its part, the same on every rank. */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_block_part(const hpdl__ipc_args &a, int64_t *begin, int64_t *end) {
    int64_t packs = hpdl__ipc_packs(a.count, sizeof(T));
    *begin = hpdl__ipc_split(packs, blockIdx.x, gridDim.x);
    *end = hpdl__ipc_split(packs, blockIdx.x + 1, gridDim.x);
}

/* One-shot, step from pack u: the thread's packs of buf into own[], and
   each into this rank's slot of every peer's inbox (stores over NVLink:
   they need no answer, so the loop goes on while they travel). */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_push(const hpdl__ipc_args &a, const T *buf, int64_t u, int64_t end,
                                                      hpdl__ipc_pack *own) {
    int r, j;
#pragma unroll
    HPDL__IPC_STEP(j, u, end) own[j] = hpdl__ipc_mailable(hpdl__ipc_load_buf(buf, u + (int64_t)j * blockDim.x, a));
    for (r = 0; r < a.size; r++) {
        hpdl__ipc_pack *slot;
        if (r == a.rank) continue;
        slot = hpdl__ipc_slot(a, r, a.rank);
#pragma unroll
        HPDL__IPC_STEP(j, u, end) hpdl__ipc_post(slot + u + (int64_t)j * blockDim.x, own[j]);
    }
}

/* One-shot, the step from pack u: its sum, once every peer's packs have
   landed, into buf. */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_add_step(const hpdl__ipc_args &a, T *buf, int64_t u, int64_t end,
                                                          const hpdl__ipc_pack *own) {
    hpdl__ipc_pack s[HPDL__IPC_UNROLL];
    int j;
    hpdl__ipc_sum<T, true>(a, u, end, own, s);
#pragma unroll
    HPDL__IPC_STEP(j, u, end) hpdl__ipc_store_buf(buf, u + (int64_t)j * blockDim.x, a, s[j]);
}

/* One-shot over this block's part [begin, end), in steps of
   HPDL__IPC_UNROLL packs a thread: step s is pushed, then step s-1 summed
   (the peers' packs of it have landed meanwhile). Each thread goes on its
   own: it waits only for the packs it sums. NVLink carries step s while
   step s-1 is summed; buf's step s is read before step s-1 is written, so
   no pack is read after it was written. */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_oneshot(const hpdl__ipc_args &a, T *buf, int64_t begin,
                                                         int64_t end) {
    const int64_t stride = (int64_t)HPDL__IPC_UNROLL * blockDim.x;
    hpdl__ipc_pack now[HPDL__IPC_UNROLL], before[HPDL__IPC_UNROLL];
    int64_t u;
    int j;
    for (u = begin + threadIdx.x; u < end; u += stride) {
        hpdl__ipc_push(a, buf, u, end, now);
        if (u - stride >= begin) hpdl__ipc_add_step(a, buf, u - stride, end, before);
#pragma unroll
        for (j = 0; j < HPDL__IPC_UNROLL; j++) before[j] = now[j];
    }
    if (u - stride >= begin) hpdl__ipc_add_step(a, buf, u - stride, end, before);
}

/* Two-shot: copies this block's part of buf into this rank's staging buffer, then
   meets the peers: afterwards every rank's copy of the part is readable. */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_publish(const hpdl__ipc_args &a, const T *buf, int64_t begin,
                                                         int64_t end) {
    hpdl__ipc_pack *mine = hpdl__ipc_staging(a, a.rank), p[HPDL__IPC_UNROLL];
    int64_t u;
    int j;
    for (u = begin + threadIdx.x; u < end; u += HPDL__IPC_UNROLL * blockDim.x) {
#pragma unroll
        HPDL__IPC_STEP(j, u, end) p[j] = hpdl__ipc_load_buf(buf, u + (int64_t)j * blockDim.x, a);
#pragma unroll
        HPDL__IPC_STEP(j, u, end) mine[u + (int64_t)j * blockDim.x] = p[j];
    }
    hpdl__ipc_meet(a, 0);
}

/* Two-shot: sums packs [from, to) of every rank's staging buffer into buf
   and into this rank's staging buffer (the reduced segment the peers
   gather). */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_reduce(const hpdl__ipc_args &a, T *buf, int64_t from, int64_t to) {
    hpdl__ipc_pack *mine = hpdl__ipc_staging(a, a.rank), s[HPDL__IPC_UNROLL];
    int64_t u;
    int j;
    for (u = from + threadIdx.x; u < to; u += HPDL__IPC_UNROLL * blockDim.x) {
        hpdl__ipc_sum<T, false>(a, u, to, NULL, s);
#pragma unroll
        HPDL__IPC_STEP(j, u, to) {
            mine[u + (int64_t)j * blockDim.x] = s[j];
            hpdl__ipc_store_buf(buf, u + (int64_t)j * blockDim.x, a, s[j]);
        }
    }
}

/* Copies packs [from, to) of rank r's staging buffer into buf. */
template <typename T>
static __device__ __forceinline__ void hpdl__ipc_gather(const hpdl__ipc_args &a, T *buf, int r, int64_t from,
                                                        int64_t to) {
    const hpdl__ipc_pack *src = hpdl__ipc_staging(a, r);
    hpdl__ipc_pack p[HPDL__IPC_UNROLL];
    int64_t u;
    int j;
    for (u = from + threadIdx.x; u < to; u += HPDL__IPC_UNROLL * blockDim.x) {
#pragma unroll
        HPDL__IPC_STEP(j, u, to) p[j] = __ldcg(src + u + (int64_t)j * blockDim.x);
#pragma unroll
        HPDL__IPC_STEP(j, u, to) hpdl__ipc_store_buf(buf, u + (int64_t)j * blockDim.x, a, p[j]);
    }
}

/* Programmatic dependent launch (sm_90 code; hpdl__mpi_ipc_start asks for
   it only then): the kernel's blocks may start while the stream's previous
   kernel ends. Here they wait for that kernel to finish and its writes to
   be visible (as plain stream order would), then let the next IPC kernel's
   blocks be placed behind this one's, so its launch overlaps this run. All
   of this kernel's blocks are resident before that: the next kernel's
   waiting blocks never keep one of them out. */
static __device__ __forceinline__ void hpdl__ipc_follow(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* One-shot, or two-shot when `twoshot` (one kernel for both: half the
   kernels to compile in every program that calls an allreduce). */
template <typename T>
static __global__ void __launch_bounds__(HPDL__IPC_THREADS) hpdl__ipc_kernel(hpdl__ipc_args a, T *buf, int twoshot) {
    int64_t begin, end, len;
    int r;
    hpdl__ipc_follow();
    hpdl__ipc_block_part<T>(a, &begin, &end);
    if (!twoshot) {
        hpdl__ipc_oneshot(a, buf, begin, end);
        return;
    }
    len = end - begin;
    hpdl__ipc_publish(a, buf, begin, end);
    /* reduce-scatter: segment `rank` of the part, kept in our staging buffer
       (no peer reads that segment of it in this phase) and written to buf */
    hpdl__ipc_reduce(a, buf, begin + hpdl__ipc_split(len, a.rank, a.size),
                     begin + hpdl__ipc_split(len, a.rank + 1, a.size));
    hpdl__ipc_meet(a, 1);
    /* all-gather: every peer's reduced segment */
    for (r = 0; r < a.size; r++)
        if (r != a.rank)
            hpdl__ipc_gather(a, buf, r, begin + hpdl__ipc_split(len, r, a.size),
                             begin + hpdl__ipc_split(len, r + 1, a.size));
}

/* ---- host side ---- */

/* One-shot writes (p-1) x bytes per GPU to its peers, two-shot reads
   2(p-1)/p x bytes in two meetings: the same bytes for two ranks, fewer
   for more ranks. */
HPDL_MPI_API hpdl_allreduce_algo hpdl__mpi_ipc_pick(size_t bytes, int size) {
    return size <= 2 || bytes <= HPDL_MPI_IPC_ONESHOT_BYTES ? HPDL_ALLREDUCE_IPC_ONESHOT : HPDL_ALLREDUCE_IPC_TWOSHOT;
}

/* A call on another stream than the last waits for the last one's work.
   (An event, not the old stream: the caller may have destroyed that.) */
HPDL_MPI_API hpdl_status hpdl__mpi_ipc_order(hpdl_mpi_ipc *c, cudaStream_t stream) {
    if (stream == c->last_stream) return HPDL_OK;
    HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, c->last_done, 0));
    c->last_stream = stream;
    return HPDL_OK;
}

#ifndef HPDL_MPI_NO_IPC
/* Launches the kernel, with programmatic dependent launch when the context
   says its code waits for it (hpdl__ipc_follow). */
template <typename T>
static hpdl_status hpdl__mpi_ipc_start(const hpdl_mpi_ipc *c, const hpdl__ipc_args &a, T *buf, int twoshot,
                                       unsigned blocks, cudaStream_t stream) {
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute early;
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(HPDL__IPC_THREADS);
    cfg.stream = stream;
    cfg.attrs = &early;
    cfg.numAttrs = c->early ? 1 : 0;
    HPDL_CUDA_TRY(cudaLaunchKernelEx(&cfg, hpdl__ipc_kernel<T>, a, buf, twoshot));
    return HPDL_OK;
}

/* 1 when the IPC kernels as built wait for their predecessor themselves
   (compiled from sm_90 PTX: hpdl__ipc_follow), unless HPDL_MPI_IPC_EARLY=0. */
HPDL_MPI_API int hpdl__mpi_ipc_early(void) {
    const char *env = getenv("HPDL_MPI_IPC_EARLY");
    struct cudaFuncAttributes fa;
    if ((env && !strcmp(env, "0")) || cudaFuncGetAttributes(&fa, hpdl__ipc_kernel<float>) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return fa.ptxVersion >= 90;
}
#endif

/* The next call on the context (its number taken) over count elements at
   buf: its kernel's arguments. */
HPDL_MPI_API hpdl__ipc_args hpdl__mpi_ipc_next_call(hpdl_mpi_ipc *c, const void *buf, int64_t count, int twoshot) {
    hpdl__ipc_args a;
    memset(&a, 0, sizeof a);
    memcpy(a.region, c->region, sizeof a.region);
    a.seq = ++c->seq;
    a.staging = hpdl__mpi_ipc_staging_at(c->max_bytes, twoshot, a.seq);
    a.count = count;
    a.rank = c->rank;
    a.size = c->size;
    a.slot_packs = (int64_t)(c->slot_bytes / 16);
    a.buf_aligned = ((uintptr_t)buf & 15) == 0;
    return a;
}

/* Grid of an IPC kernel over count elements: a block per HPDL__IPC_THREADS
   packs, at least 1, at most `most`. */
HPDL_MPI_API unsigned hpdl__ipc_grid(int64_t count, size_t elem_bytes, int most) {
    int64_t packs = hpdl__ipc_packs(count, elem_bytes);
    int64_t want = (packs + HPDL__IPC_THREADS - 1) / HPDL__IPC_THREADS;
    return (unsigned)(want < most ? (want > 0 ? want : 1) : most);
}

/* One kernel over count elements of buf (at most a slot, one-shot, or a
   staging buffer, two-shot). */
HPDL_MPI_API hpdl_status hpdl__mpi_ipc_launch(hpdl_mpi_ipc *c, void *buf, int64_t count, hpdl_mpi_dtype t,
                                              int twoshot, cudaStream_t stream) {
    const hpdl__ipc_args a = hpdl__mpi_ipc_next_call(c, buf, count, twoshot);
    unsigned blocks = hpdl__ipc_grid(count, hpdl_mpi_dtype_size(t), c->blocks); /* the context's limit */
#ifdef HPDL_MPI_NO_IPC
    (void)a; (void)buf; (void)t; (void)twoshot; (void)stream; (void)blocks;
    return HPDL_ERR_UNSUPPORTED; /* not reached: no context is made */
#else
    if (c->early < 0) c->early = hpdl__mpi_ipc_early();
    switch (t) {
    case HPDL_MPI_F32: return hpdl__mpi_ipc_start(c, a, (float *)buf, twoshot, blocks, stream);
    case HPDL_MPI_F64: return hpdl__mpi_ipc_start(c, a, (double *)buf, twoshot, blocks, stream);
    case HPDL_MPI_F16: return hpdl__mpi_ipc_start(c, a, (__half *)buf, twoshot, blocks, stream);
    case HPDL_MPI_BF16: return hpdl__mpi_ipc_start(c, a, (__nv_bfloat16 *)buf, twoshot, blocks, stream);
    }
    return HPDL_ERR_INVALID; /* not reached: the type was checked */
#endif
}

/* The allreduce on an agreed call: pieces of a slot (one-shot) or of a
   staging buffer (two-shot), one kernel each, on the hpdl stream
   (stream-ordered, like NCCL). */
HPDL_MPI_API hpdl_status hpdl__mpi_ipc_run(hpdl_mpi_ipc *c, void *buf, int64_t count, hpdl_mpi_dtype t,
                                           hpdl_allreduce_algo algo) {
    cudaStream_t stream = hpdl__mpi_settings_get()->stream;
    size_t es = hpdl_mpi_dtype_size(t);
    int64_t piece, off;
    hpdl_status s = hpdl__mpi_ipc_order(c, stream);
    if (algo == HPDL_ALLREDUCE_AUTO) algo = hpdl__mpi_ipc_pick((size_t)count * es, c->size);
    piece = (int64_t)((algo == HPDL_ALLREDUCE_IPC_TWOSHOT ? c->max_bytes : c->slot_bytes) / es);
    for (off = 0; off < count && s == HPDL_OK; off += piece)
        s = hpdl__mpi_ipc_launch(c, (char *)buf + (size_t)off * es, count - off < piece ? count - off : piece, t,
                                 algo == HPDL_ALLREDUCE_IPC_TWOSHOT, stream);
    if (s == HPDL_OK) HPDL_CUDA_TRY(cudaEventRecord(c->last_done, stream));
    return s;
}

/* Collective: in-place sum of the device buffer buf[0..count) over the
   context's ranks, with HPDL_ALLREDUCE_IPC_ONESHOT, _IPC_TWOSHOT or AUTO
   (one-shot for two ranks or small messages); f32, f64, f16, bf16.
   Stream-ordered on the hpdl stream, like NCCL. */
HPDL_MPI_API hpdl_status hpdl_mpi_ipc_allreduce(hpdl_mpi_ipc *ctx, void *buf, int64_t count, hpdl_mpi_dtype t,
                                                hpdl_allreduce_algo algo) {
    hpdl__mpi_call call;
    hpdl_status s;
    if (!ctx || !ctx->region[ctx->rank]) return HPDL_ERR_INVALID; /* no communicator to agree on */
    memset(&call, 0, sizeof call);
    call.op = HPDL__MPI_OP_ALLREDUCE;
    call.count = count;
    call.dtype = t;
    call.algo = algo;
    call.on_device = hpdl__mpi_on_device(buf);
    if (count < 0 || (!buf && count > 0) || !hpdl__mpi_dtype_valid(t) || (count > 0 && !call.on_device) ||
        (!hpdl__mpi_algo_is_ipc(algo) && algo != HPDL_ALLREDUCE_AUTO))
        call.status = HPDL_ERR_INVALID;
    s = hpdl__mpi_agree("hpdl_mpi_ipc_allreduce", &call, ctx->comm);
    if (s != HPDL_OK || count == 0) return s;
    return hpdl__mpi_finish("hpdl_mpi_ipc_allreduce", hpdl__mpi_ipc_run(ctx, buf, count, t, algo), ctx->comm);
}

/* Contexts behind hpdl_mpi_allreduce(..., HPDL_ALLREDUCE_IPC_*, comm): one
   per (communicator, device), made on first use and kept, refusals too. */
#define HPDL__MPI_IPC_CACHE 4

typedef struct hpdl__mpi_ipc_entry {
    MPI_Comm mpi;
    int device, used;
    hpdl_status status;
    hpdl_mpi_ipc ctx;
} hpdl__mpi_ipc_entry;

HPDL_MPI_API hpdl__mpi_ipc_entry *hpdl__mpi_ipc_cache(void) {
    static hpdl__mpi_ipc_entry cache[HPDL__MPI_IPC_CACHE];
    return cache;
}

/* Collective on first use per communicator, like hpdl_mpi_nccl_comm. */
HPDL_MPI_API hpdl_status hpdl__mpi_ipc_cached(MPI_Comm comm, int verbose, hpdl_mpi_ipc **out) {
    hpdl__mpi_ipc_entry *cache = hpdl__mpi_ipc_cache();
    int i, device = 0, slot = -1;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    for (i = 0; i < HPDL__MPI_IPC_CACHE; i++) {
        if (cache[i].used && cache[i].mpi == comm && cache[i].device == device) {
            *out = &cache[i].ctx;
            return cache[i].status;
        }
        if (!cache[i].used && slot < 0) slot = i;
    }
    if (slot < 0) return HPDL_ERR_UNSUPPORTED; /* same count on every rank: all return this */
    cache[slot].status = hpdl__mpi_ipc_create(&cache[slot].ctx, HPDL_MPI_IPC_BYTES, comm, verbose);
    cache[slot].mpi = comm;
    cache[slot].device = device;
    cache[slot].used = 1;
    *out = &cache[slot].ctx;
    return cache[slot].status;
}

/* Collective (hpdl_mpi_finalize); after MPI_Finalize only forgets them. */
HPDL_MPI_API void hpdl__mpi_ipc_release(void) {
    hpdl__mpi_ipc_entry *cache = hpdl__mpi_ipc_cache();
    int i, finalised = 0;
    MPI_Finalized(&finalised);
    for (i = 0; i < HPDL__MPI_IPC_CACHE; i++) {
        if (cache[i].used && cache[i].status == HPDL_OK && !finalised) hpdl_mpi_ipc_destroy(&cache[i].ctx);
        memset(&cache[i], 0, sizeof cache[i]);
    }
}
#endif /* __CUDACC__ */

/* ======================================================================== */
/* Allreduce, broadcast                                                      */
/* ======================================================================== */

HPDL_MPI_API int hpdl__mpi_buffer_on_device(const void *p) {
#ifdef __CUDACC__
    return hpdl__mpi_on_device(p);
#else
    (void)p;
    return 0;
#endif
}

/* Whether this build can run (type, algorithm, buffer kind). */
HPDL_MPI_API hpdl_status hpdl__mpi_supported(hpdl_mpi_dtype t, hpdl_allreduce_algo algo, int on_device) {
    MPI_Datatype type;
    if (algo == HPDL_ALLREDUCE_MPI && !hpdl__mpi_datatype(t, &type)) return HPDL_ERR_UNSUPPORTED;
    if (algo == HPDL_ALLREDUCE_NCCL) {
#ifdef HPDL_MPI_HAVE_NCCL
        ncclDataType_t nt;
        if (!on_device || !hpdl__mpi_nccl_type(t, &nt)) return HPDL_ERR_UNSUPPORTED;
#else
        (void)on_device;
        return HPDL_ERR_UNSUPPORTED;
#endif
    }
    if (hpdl__mpi_algo_is_ipc(algo) && !on_device) return HPDL_ERR_UNSUPPORTED;
    return HPDL_OK;
}

/* The algorithm that runs a call of `algo`: AUTO picks one, the others stand
   for themselves. AUTO on device buffers: IPC up to the threshold (at any
   size without NCCL) when the ranks share a node with peer access, else
   NCCL where each rank has a GPU of its own; otherwise MPI_Allreduce (f32,
   f64) or the ring (f16, bf16). Collective on first use per communicator
   for device buffers (the IPC context and the NCCL communicator are made
   then, and an explicit IPC or NCCL algorithm gets HPDL_ERR_UNSUPPORTED on
   every rank when it cannot be); every rank resolves alike, as the size,
   the ranks and the threshold (hpdl__mpi_ipc_auto_bytes) are the same
   everywhere. */
HPDL_MPI_API hpdl_status hpdl__mpi_resolve(hpdl_allreduce_algo *algo, size_t bytes, hpdl_mpi_dtype t, int on_device,
                                           MPI_Comm comm) {
    MPI_Datatype type;
#ifdef __CUDACC__
    hpdl_mpi_ipc *ipc;
#ifdef HPDL_MPI_HAVE_NCCL
    ncclComm_t nc;
    if (on_device && *algo == HPDL_ALLREDUCE_NCCL) return hpdl__mpi_nccl_comm(comm, 1, &nc);
#endif
    if (on_device && hpdl__mpi_algo_is_ipc(*algo)) return hpdl__mpi_ipc_cached(comm, 1, &ipc);
    if (on_device && *algo == HPDL_ALLREDUCE_AUTO) {
        int nccl = hpdl__mpi_supported(t, HPDL_ALLREDUCE_NCCL, on_device) == HPDL_OK, ranks;
        hpdl_status s = HPDL_OK;
        MPI_Comm_size(comm, &ranks);
        if ((bytes <= hpdl__mpi_ipc_auto_bytes(ranks) || !nccl) &&
            hpdl__mpi_ipc_cached(comm, 0, &ipc) == HPDL_OK) {
            *algo = hpdl__mpi_ipc_pick(bytes, ipc->size);
            return HPDL_OK;
        }
#ifdef HPDL_MPI_HAVE_NCCL
        if (nccl) s = hpdl__mpi_nccl_comm(comm, 0, &nc);
#endif
        if (nccl && s == HPDL_OK) {
            *algo = HPDL_ALLREDUCE_NCCL;
            return HPDL_OK;
        }
        if (s != HPDL_ERR_UNSUPPORTED && s != HPDL_OK) return s; /* an NCCL error: no reason to fall back */
    }
#else
    (void)bytes; (void)on_device; (void)comm;
#endif
    if (*algo == HPDL_ALLREDUCE_AUTO) *algo = hpdl__mpi_datatype(t, &type) ? HPDL_ALLREDUCE_MPI : HPDL_ALLREDUCE_RING;
    return HPDL_OK;
}

/* Local validation of an allreduce; also fills the call record. */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_prepare(const void *buf, int64_t count, hpdl_mpi_dtype t,
                                                 hpdl_allreduce_algo algo, hpdl__mpi_call *call) {
    hpdl_status s = HPDL_OK;
    memset(call, 0, sizeof *call);
    call->op = HPDL__MPI_OP_ALLREDUCE;
    call->count = count;
    call->dtype = t;
    call->algo = algo;
    if (count < 0 || (!buf && count > 0) || !hpdl__mpi_dtype_valid(t) || !hpdl__mpi_algo_valid(algo))
        s = HPDL_ERR_INVALID;
    else if ((uint64_t)count > (uint64_t)INT64_MAX / hpdl_mpi_dtype_size(t))
        s = HPDL_ERR_INVALID;
    if (s == HPDL_OK) {
        call->on_device = hpdl__mpi_buffer_on_device(buf);
        s = hpdl__mpi_supported(t, algo, (int)call->on_device);
    }
    call->status = s;
    return s;
}

/* Runs an agreed, supported allreduce over more than one rank. */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_run(void *buf, int64_t count, hpdl_mpi_dtype t, hpdl_allreduce_algo algo,
                                             int on_device, MPI_Comm comm) {
    size_t es = hpdl_mpi_dtype_size(t);
    hpdl_status s;
    void *tmp;
    int p = 1;
    s = hpdl__mpi_resolve(&algo, (size_t)count * es, t, on_device, comm);
    if (s != HPDL_OK) return s;
#ifdef __CUDACC__
    if (on_device) {
        cudaStream_t stream = hpdl__mpi_settings_get()->stream;
        hpdl_mpi_ipc *ipc;
#ifdef HPDL_MPI_HAVE_NCCL
        if (algo == HPDL_ALLREDUCE_NCCL) return hpdl__mpi_allreduce_nccl(buf, count, t, comm, stream);
#endif
        if (hpdl__mpi_algo_is_ipc(algo)) {
            s = hpdl__mpi_ipc_cached(comm, 0, &ipc); /* made when resolved */
            return s == HPDL_OK ? hpdl__mpi_ipc_run(ipc, buf, count, t, algo) : s;
        }
        if (algo == HPDL_ALLREDUCE_RING) return hpdl__mpi_ring_device(buf, count, t, comm);
        if (!hpdl_mpi_cuda_aware()) return hpdl__mpi_allreduce_staged(buf, count, t, comm);
        HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
        return hpdl__mpi_allreduce_mpi(buf, count, t, comm);
    }
#else
    (void)on_device;
#endif
    if (algo == HPDL_ALLREDUCE_MPI) return hpdl__mpi_allreduce_mpi(buf, count, t, comm);
    MPI_Comm_size(comm, &p);
    tmp = hpdl_alloc((size_t)(count / p + 1), es);
    if (!tmp) return HPDL_ERR_NOMEM;
    s = hpdl__mpi_ring_host(buf, count, t, tmp, comm);
    HPDL_FREE(tmp);
    return s;
}

/* hpdl_mpi_allreduce; *used: the algorithm that ran (AUTO resolved). */
HPDL_MPI_API hpdl_status hpdl__mpi_allreduce_sum(void *buf, int64_t count, hpdl_mpi_dtype t, hpdl_allreduce_algo algo,
                                                 MPI_Comm comm, hpdl_allreduce_algo *used) {
    hpdl__mpi_call call;
    hpdl_status s;
    int p = 1;
    *used = algo;
    if (comm == MPI_COMM_NULL) return HPDL_ERR_INVALID;
    hpdl__mpi_allreduce_prepare(buf, count, t, algo, &call);
    s = hpdl__mpi_agree("hpdl_mpi_allreduce", &call, comm);
    if (s != HPDL_OK) return s;
    HPDL__MPI_TRY(MPI_Comm_size(comm, &p));
    if (p == 1 || count == 0) return HPDL_OK;
    s = hpdl__mpi_resolve(used, (size_t)count * hpdl_mpi_dtype_size(t), t, (int)call.on_device, comm);
    if (s != HPDL_OK) return s; /* IPC refused: the same on every rank */
    s = hpdl__mpi_allreduce_run(buf, count, t, *used, (int)call.on_device, comm);
    return hpdl__mpi_finish("hpdl_mpi_allreduce", s, comm);
}

/* In-place sum of buf[0..count) over the ranks of comm (see SEMANTICS). */
HPDL_MPI_API hpdl_status hpdl_mpi_allreduce(void *buf, int64_t count, hpdl_mpi_dtype t, hpdl_allreduce_algo algo,
                                        MPI_Comm comm) {
    hpdl_allreduce_algo used;
    hpdl_status s;
    HPDL_NVTX_PUSH("allreduce");
    s = hpdl__mpi_allreduce_sum(buf, count, t, algo, comm, &used);
    HPDL_NVTX_POP();
    return s;
}

/* The mean instead of the sum: what data-parallel training applies. */
HPDL_MPI_API hpdl_status hpdl_mpi_allreduce_avg(void *buf, int64_t count, hpdl_mpi_dtype t, hpdl_allreduce_algo algo,
                                            MPI_Comm comm) {
    hpdl_allreduce_algo used;
    hpdl_status s;
    int p = 1;
    HPDL_NVTX_PUSH("allreduce (mean)");
    s = hpdl__mpi_allreduce_sum(buf, count, t, algo, comm, &used);
    HPDL_NVTX_POP();
    if (s != HPDL_OK) return s;
    MPI_Comm_size(comm, &p);
    if (p == 1 || count == 0) return HPDL_OK;
#ifdef __CUDACC__
    if (hpdl__mpi_on_device(buf)) { /* NCCL and IPC stay stream-ordered; MPI and RING return with the mean */
        cudaStream_t stream = hpdl__mpi_settings_get()->stream;
        s = hpdl__mpi_divide_device(t, buf, count, p, stream);
        if (s == HPDL_OK && !hpdl__mpi_algo_device_only(used)) HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
        return s;
    }
#endif
    hpdl__mpi_divide_host(t, buf, count, p);
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bcast_run(void *buf, size_t bytes, int root, int on_device, MPI_Comm comm) {
#ifdef __CUDACC__
    if (on_device) {
        if (!hpdl_mpi_cuda_aware()) return hpdl__mpi_bcast_staged(buf, bytes, root, comm);
        HPDL_CUDA_TRY(cudaStreamSynchronize(hpdl__mpi_settings_get()->stream));
    }
#else
    (void)on_device;
#endif
    return hpdl__mpi_bcast_host(buf, bytes, root, comm);
}

HPDL_MPI_API hpdl_status hpdl__mpi_bcast(void *buf, int64_t count, hpdl_mpi_dtype t, int root, MPI_Comm comm) {
    hpdl__mpi_call call;
    hpdl_status s = HPDL_OK;
    int p = 1;
    if (comm == MPI_COMM_NULL) return HPDL_ERR_INVALID;
    HPDL__MPI_TRY(MPI_Comm_size(comm, &p));
    memset(&call, 0, sizeof call);
    call.op = HPDL__MPI_OP_BCAST;
    call.count = count;
    call.dtype = t;
    call.root = root;
    if (count < 0 || (!buf && count > 0) || !hpdl__mpi_dtype_valid(t) || root < 0 || root >= p)
        s = HPDL_ERR_INVALID;
    else
        call.on_device = hpdl__mpi_buffer_on_device(buf);
    call.status = s;
    s = hpdl__mpi_agree("hpdl_mpi_bcast", &call, comm);
    if (s != HPDL_OK || p == 1 || count == 0) return s;
    return hpdl__mpi_finish("hpdl_mpi_bcast", hpdl__mpi_bcast_run(buf, (size_t)count * hpdl_mpi_dtype_size(t), root,
                                                                  (int)call.on_device, comm), comm);
}

/* Copies root's buf[0..count) to every rank (e.g. initial parameters). */
HPDL_MPI_API hpdl_status hpdl_mpi_bcast(void *buf, int64_t count, hpdl_mpi_dtype t, int root, MPI_Comm comm) {
    hpdl_status s;
    HPDL_NVTX_PUSH("broadcast");
    s = hpdl__mpi_bcast(buf, count, t, root, comm);
    HPDL_NVTX_POP();
    return s;
}

/* Typed entry points: hpdl_mpi_allreduce_f32(buf, count, algo, comm), ... */
#define HPDL_DEFINE_MPI_COLLECTIVES(SUFFIX, T, DTYPE)                          \
    HPDL_MPI_API hpdl_status hpdl_mpi_allreduce_##SUFFIX(T *buf, int64_t count, hpdl_allreduce_algo algo, MPI_Comm comm) { \
        return hpdl_mpi_allreduce(buf, count, DTYPE, algo, comm);              \
    }                                                                          \
    HPDL_MPI_API hpdl_status hpdl_mpi_allreduce_avg_##SUFFIX(T *buf, int64_t count, hpdl_allreduce_algo algo, MPI_Comm comm) { \
        return hpdl_mpi_allreduce_avg(buf, count, DTYPE, algo, comm);          \
    }                                                                          \
    HPDL_MPI_API hpdl_status hpdl_mpi_bcast_##SUFFIX(T *buf, int64_t count, int root, MPI_Comm comm) { \
        return hpdl_mpi_bcast(buf, count, DTYPE, root, comm);                  \
    }

/* hpdl_mpi_allreduce_avg_f32 hpdl_mpi_allreduce_f32 hpdl_mpi_bcast_f32 */
HPDL_DEFINE_MPI_COLLECTIVES(f32, float, HPDL_MPI_F32)
/* hpdl_mpi_allreduce_avg_f64 hpdl_mpi_allreduce_f64 hpdl_mpi_bcast_f64 */
HPDL_DEFINE_MPI_COLLECTIVES(f64, double, HPDL_MPI_F64)
/* hpdl_mpi_allreduce_avg_f16 hpdl_mpi_allreduce_f16 hpdl_mpi_bcast_f16 */
HPDL_DEFINE_MPI_COLLECTIVES(f16, hpdl_f16, HPDL_MPI_F16)
/* hpdl_mpi_allreduce_avg_bf16 hpdl_mpi_allreduce_bf16 hpdl_mpi_bcast_bf16 */
HPDL_DEFINE_MPI_COLLECTIVES(bf16, hpdl_bf16, HPDL_MPI_BF16)

/* ======================================================================== */
/* Bucketed non-blocking allreduce for gradients                             */
/* ======================================================================== */

/* Tensors are grouped into buckets from the last one down (backward produces
   gradients in reverse layer order), each closed once it holds at least
   bucket_bytes. When every tensor of a bucket is ready, the bucket's
   reduction starts (buckets start in bucket order on every rank, as MPI and
   NCCL require); wait() finishes them all. How a bucket is reduced:
     host buffers, MPI:     packed into one buffer, MPI_Iallreduce;
     device buffers, NCCL:  grouped ncclAllReduce on a side stream (the
                            mean by ncclAvg where NCCL has it);
     otherwise:             a blocking hpdl_mpi_allreduce per tensor, at once
                            (correct, but without overlap). */
enum { HPDL__BUCKET_IALLREDUCE, HPDL__BUCKET_NCCL, HPDL__BUCKET_BLOCKING };

/* A bucketed allreduce over a fixed list of tensors (see above), written by hpdl_mpi_bucketer_create. It
   keeps the caller's tensor pointers, not copies; hpdl_mpi_bucketer_destroy frees what create allocated. */
typedef struct hpdl_mpi_bucketer {
    int ntensors, nbuckets, mode, average, on_device, next_launch;
    hpdl_mpi_dtype dtype;
    hpdl_allreduce_algo algo;
    MPI_Comm comm;
    void **tensors;
    int64_t *counts;
    int *bucket_of;          /* tensor -> bucket */
    int *bound;              /* bucket b holds tensors bound[b+1] .. bound[b]-1 */
    int *pending;            /* per bucket: tensors not ready yet this step */
    unsigned char *is_ready; /* per tensor */
    int64_t *offset;         /* IALLREDUCE: tensor's place in flat (elements) */
    int64_t *bucket_off;     /* IALLREDUCE: bucket b is flat[bucket_off[b] .. bucket_off[b+1]) */
    void *flat;              /* IALLREDUCE: packed buckets */
    MPI_Request *requests;   /* IALLREDUCE: one per bucket */
#ifdef __CUDACC__
    cudaStream_t side;           /* NCCL: where the buckets are reduced */
    cudaEvent_t produced, done;  /* NCCL: hpdl stream -> side, side -> hpdl stream */
#endif
#ifdef HPDL_MPI_HAVE_NCCL
    ncclComm_t nccl;             /* NCCL: taken at create (with the CTA cap of that time) */
#endif
    double wait_seconds;     /* host time spent in wait(), summed over steps */
    int64_t steps;           /* completed wait() calls */
} hpdl_mpi_bucketer;

/* Frees what create() made; finishes reductions still in flight. */
HPDL_MPI_API void hpdl_mpi_bucketer_destroy(hpdl_mpi_bucketer *b) {
    if (!b) return;
    if (b->requests && b->nbuckets > 0) MPI_Waitall(b->nbuckets, b->requests, MPI_STATUSES_IGNORE);
#ifdef __CUDACC__
    if (b->side) { cudaStreamSynchronize(b->side); cudaStreamDestroy(b->side); }
    if (b->produced) cudaEventDestroy(b->produced);
    if (b->done) cudaEventDestroy(b->done);
#endif
    HPDL_FREE(b->tensors); HPDL_FREE(b->counts); HPDL_FREE(b->bucket_of); HPDL_FREE(b->bound);
    HPDL_FREE(b->pending); HPDL_FREE(b->is_ready); HPDL_FREE(b->offset); HPDL_FREE(b->bucket_off);
    HPDL_FREE(b->requests); HPDL_FREE(b->flat);
    memset(b, 0, sizeof *b);
}

HPDL_MPI_API int hpdl__mpi_bucketer_mode(hpdl_allreduce_algo algo, int on_device) {
    if (algo == HPDL_ALLREDUCE_MPI && !on_device) return HPDL__BUCKET_IALLREDUCE;
    if (algo == HPDL_ALLREDUCE_NCCL && on_device) return HPDL__BUCKET_NCCL;
    return HPDL__BUCKET_BLOCKING;
}

/* Local checks of create()'s arguments; on_device = where the tensors live
   (all in the same place). */
HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_check(void *const *tensors, const int64_t *counts, int ntensors,
                                              hpdl_mpi_dtype t, hpdl_allreduce_algo algo, int *on_device,
                                              int64_t *total) {
    int i, where = -1;
    *total = 0;
    *on_device = 0;
    if (ntensors < 0 || (ntensors > 0 && (!tensors || !counts)) || !hpdl__mpi_dtype_valid(t) ||
        !hpdl__mpi_algo_valid(algo))
        return HPDL_ERR_INVALID;
    for (i = 0; i < ntensors; i++) {
        if (counts[i] < 0 || (counts[i] > 0 && !tensors[i])) return HPDL_ERR_INVALID;
        if (counts[i] == 0) continue;
        if (where < 0) where = hpdl__mpi_buffer_on_device(tensors[i]);
        else if (where != hpdl__mpi_buffer_on_device(tensors[i])) return HPDL_ERR_INVALID;
        if (counts[i] > INT64_MAX / 8 - *total) return HPDL_ERR_INVALID;
        *total += counts[i];
    }
    *on_device = where > 0;
    return hpdl__mpi_supported(t, algo, *on_device);
}

/* Groups the tensors into buckets (see above). */
HPDL_MPI_API void hpdl__mpi_bucketer_layout(hpdl_mpi_bucketer *b, size_t bucket_bytes) {
    size_t es = hpdl_mpi_dtype_size(b->dtype), filled = 0;
    int64_t off = 0;
    int i, k;
    b->nbuckets = 0;
    b->bound[0] = b->ntensors;
    for (i = b->ntensors - 1; i >= 0; i--) {
        b->bucket_of[i] = b->nbuckets;
        filled += (size_t)b->counts[i] * es;
        if (filled >= bucket_bytes || i == 0) {
            b->bound[++b->nbuckets] = i;
            filled = 0;
        }
    }
    for (k = 0; k < b->nbuckets; k++) {
        b->bucket_off[k] = off;
        for (i = b->bound[k + 1]; i < b->bound[k]; i++) { b->offset[i] = off; off += b->counts[i]; }
    }
    b->bucket_off[b->nbuckets] = off;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_alloc(hpdl_mpi_bucketer *b, int64_t total) {
    int i, n = b->ntensors;
    b->tensors = (void **)hpdl_alloc((size_t)n, sizeof *b->tensors);
    b->counts = (int64_t *)hpdl_alloc((size_t)n, sizeof *b->counts);
    b->bucket_of = (int *)hpdl_alloc((size_t)n, sizeof *b->bucket_of);
    b->bound = (int *)hpdl_alloc((size_t)n + 1, sizeof *b->bound);
    b->pending = (int *)hpdl_alloc((size_t)n, sizeof *b->pending);
    b->is_ready = (unsigned char *)hpdl_alloc((size_t)n, 1);
    b->offset = (int64_t *)hpdl_alloc((size_t)n, sizeof *b->offset);
    b->bucket_off = (int64_t *)hpdl_alloc((size_t)n + 1, sizeof *b->bucket_off);
    b->requests = (MPI_Request *)hpdl_alloc((size_t)n, sizeof *b->requests);
    if (b->mode == HPDL__BUCKET_IALLREDUCE) b->flat = hpdl_alloc((size_t)total, hpdl_mpi_dtype_size(b->dtype));
    if (!b->tensors || !b->counts || !b->bucket_of || !b->bound || !b->pending || !b->is_ready || !b->offset ||
        !b->bucket_off || !b->requests || (b->mode == HPDL__BUCKET_IALLREDUCE && !b->flat))
        return HPDL_ERR_NOMEM;
    for (i = 0; i < n; i++) b->requests[i] = MPI_REQUEST_NULL; /* destroy() may wait on them */
    return HPDL_OK;
}

/* Marks every bucket idle and every tensor not ready: the start of a step. */
HPDL_MPI_API void hpdl__mpi_bucketer_reset(hpdl_mpi_bucketer *b) {
    int i;
    for (i = 0; i < b->nbuckets; i++) {
        b->pending[i] = b->bound[i] - b->bound[i + 1];
        b->requests[i] = MPI_REQUEST_NULL;
    }
    for (i = 0; i < b->ntensors; i++) b->is_ready[i] = 0;
    b->next_launch = 0;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_streams(hpdl_mpi_bucketer *b) {
#ifdef __CUDACC__
    int least = 0, greatest = 0;
    if (b->mode != HPDL__BUCKET_NCCL) return HPDL_OK;
    HPDL_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    HPDL_CUDA_TRY(cudaStreamCreateWithPriority(&b->side, cudaStreamNonBlocking,
                                               hpdl__mpi_settings_get()->bucket_priority ? greatest : least));
    HPDL_CUDA_TRY(cudaEventCreateWithFlags(&b->produced, cudaEventDisableTiming));
    HPDL_CUDA_TRY(cudaEventCreateWithFlags(&b->done, cudaEventDisableTiming));
#else
    (void)b;
#endif
    return HPDL_OK;
}

/* Collective. Registers ntensors gradient tensors (tensors[i] holds
   counts[i] elements of type t, all on the host or all on the device);
   bucket_bytes 0 means HPDL_MPI_BUCKET_BYTES; average divides the sums by
   the number of ranks. *b is written only on success. */
HPDL_MPI_API hpdl_status hpdl_mpi_bucketer_create(hpdl_mpi_bucketer *b, void *const *tensors, const int64_t *counts,
                                              int ntensors, hpdl_mpi_dtype t, size_t bucket_bytes, int average,
                                              hpdl_allreduce_algo algo, MPI_Comm comm) {
    hpdl_mpi_bucketer nb;
    hpdl__mpi_call call;
    int64_t total = 0;
    int on_device = 0, i;
    hpdl_status s;
    if (!b || comm == MPI_COMM_NULL) return HPDL_ERR_INVALID;
    memset(&nb, 0, sizeof nb);
    s = hpdl__mpi_bucketer_check(tensors, counts, ntensors, t, algo, &on_device, &total);
    if (s == HPDL_OK) {
        nb.ntensors = ntensors;
        nb.dtype = t;
        nb.algo = algo;
        nb.comm = comm;
        nb.average = average != 0;
        nb.on_device = on_device;
        nb.mode = hpdl__mpi_bucketer_mode(algo, on_device);
        s = hpdl__mpi_bucketer_alloc(&nb, total);
    }
    if (s == HPDL_OK) {
        for (i = 0; i < ntensors; i++) { nb.tensors[i] = tensors[i]; nb.counts[i] = counts[i]; }
        hpdl__mpi_bucketer_layout(&nb, bucket_bytes ? bucket_bytes : HPDL_MPI_BUCKET_BYTES);
        for (i = 0; i < nb.nbuckets && nb.mode == HPDL__BUCKET_IALLREDUCE; i++)
            if (nb.bucket_off[i + 1] - nb.bucket_off[i] > INT_MAX) s = HPDL_ERR_UNSUPPORTED;
    }
    if (s == HPDL_OK) s = hpdl__mpi_bucketer_streams(&nb);
    memset(&call, 0, sizeof call);
    call.op = HPDL__MPI_OP_BUCKETER;
    call.count = total;
    call.dtype = t;
    call.algo = algo;
    call.root = ntensors;
    call.on_device = on_device;
    call.status = s;
    s = hpdl__mpi_agree("hpdl_mpi_bucketer_create", &call, comm);
#ifdef HPDL_MPI_HAVE_NCCL
    if (s == HPDL_OK && nb.mode == HPDL__BUCKET_NCCL)
        s = hpdl_mpi_nccl_comm(comm, &nb.nccl); /* collective: bootstrap now, not mid-backward */
#endif
    if (s != HPDL_OK) { hpdl_mpi_bucketer_destroy(&nb); return s; }
    hpdl__mpi_bucketer_reset(&nb);
    *b = nb;
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_launch_iallreduce(hpdl_mpi_bucketer *b, int k) {
    size_t es = hpdl_mpi_dtype_size(b->dtype);
    char *flat = (char *)b->flat;
    MPI_Datatype type;
    int i;
    for (i = b->bound[k + 1]; i < b->bound[k]; i++)
        if (b->counts[i]) memcpy(flat + (size_t)b->offset[i] * es, b->tensors[i], (size_t)b->counts[i] * es);
    hpdl__mpi_datatype(b->dtype, &type);
    HPDL__MPI_TRY(MPI_Iallreduce(MPI_IN_PLACE, flat + (size_t)b->bucket_off[k] * es,
                                 (int)(b->bucket_off[k + 1] - b->bucket_off[k]), type, MPI_SUM, b->comm,
                                 &b->requests[k]));
    return HPDL_OK;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_launch_nccl(hpdl_mpi_bucketer *b, int k) {
#ifdef HPDL_MPI_HAVE_NCCL
    ncclDataType_t type = ncclFloat32; /* set by hpdl__mpi_nccl_type */
    ncclRedOp_t op = ncclSum;
    int i, p = 1, divide;
    hpdl_status s;
    hpdl__mpi_nccl_type(b->dtype, &type);
    MPI_Comm_size(b->comm, &p);
    divide = b->average && p > 1;
#if NCCL_VERSION_CODE >= 21000
    if (divide) { op = ncclAvg; divide = 0; } /* the mean inside the reduction: no divide kernel per tensor */
#endif
    /* the side stream starts once backward has written this bucket */
    HPDL_CUDA_TRY(cudaEventRecord(b->produced, hpdl__mpi_settings_get()->stream));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(b->side, b->produced, 0));
    HPDL__NCCL_TRY(ncclGroupStart());
    for (i = b->bound[k + 1]; i < b->bound[k]; i++)
        if (b->counts[i]) HPDL__NCCL_TRY(ncclAllReduce(b->tensors[i], b->tensors[i], (size_t)b->counts[i], type,
                                                       op, b->nccl, b->side));
    HPDL__NCCL_TRY(ncclGroupEnd());
    for (i = b->bound[k + 1]; i < b->bound[k] && divide; i++) {
        s = hpdl__mpi_divide_device(b->dtype, b->tensors[i], b->counts[i], p, b->side);
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
#else
    (void)b; (void)k;
    return HPDL_ERR_UNSUPPORTED;
#endif
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_launch_blocking(hpdl_mpi_bucketer *b, int k) {
    int i;
    for (i = b->bound[k + 1]; i < b->bound[k]; i++) {
        hpdl_status s = b->average ? hpdl_mpi_allreduce_avg(b->tensors[i], b->counts[i], b->dtype, b->algo, b->comm)
                                   : hpdl_mpi_allreduce(b->tensors[i], b->counts[i], b->dtype, b->algo, b->comm);
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
}

/* Starts every bucket whose tensors are all ready, in bucket order. */
HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_launch_ready(hpdl_mpi_bucketer *b) {
    while (b->next_launch < b->nbuckets && b->pending[b->next_launch] == 0) {
        int k = b->next_launch++;
        hpdl_status s;
        HPDL_NVTX_PUSH("bucket launch");
        s = b->mode == HPDL__BUCKET_IALLREDUCE ? hpdl__mpi_bucketer_launch_iallreduce(b, k)
            : b->mode == HPDL__BUCKET_NCCL     ? hpdl__mpi_bucketer_launch_nccl(b, k)
                                               : hpdl__mpi_bucketer_launch_blocking(b, k);
        HPDL_NVTX_POP();
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
}

/* Call when backward has produced (queued, on the hpdl stream) the gradient
   in tensors[tensor]; starts its bucket's reduction once the bucket is full.
   HPDL_ERR_INVALID for an unknown tensor or one already marked this step. */
HPDL_MPI_API hpdl_status hpdl_mpi_bucketer_ready(hpdl_mpi_bucketer *b, int tensor) {
    int flag;
    hpdl_status s;
    if (!b || tensor < 0 || tensor >= b->ntensors || b->is_ready[tensor]) return HPDL_ERR_INVALID;
    b->is_ready[tensor] = 1;
    b->pending[b->bucket_of[tensor]]--;
    s = hpdl__mpi_finish("hpdl_mpi_bucketer_ready", hpdl__mpi_bucketer_launch_ready(b), b->comm);
    /* non-blocking collectives advance only inside MPI calls: nudge them */
    if (b->mode == HPDL__BUCKET_IALLREDUCE && b->next_launch > 0)
        HPDL__MPI_TRY(MPI_Testall(b->next_launch, b->requests, &flag, MPI_STATUSES_IGNORE));
    return s;
}

HPDL_MPI_API hpdl_status hpdl__mpi_bucketer_finish_iallreduce(hpdl_mpi_bucketer *b) {
    size_t es = hpdl_mpi_dtype_size(b->dtype);
    int i, p = 1;
    HPDL__MPI_TRY(MPI_Waitall(b->nbuckets, b->requests, MPI_STATUSES_IGNORE));
    MPI_Comm_size(b->comm, &p);
    if (b->average && p > 1) hpdl__mpi_divide_host(b->dtype, b->flat, b->bucket_off[b->nbuckets], p);
    for (i = 0; i < b->ntensors; i++)
        if (b->counts[i]) memcpy(b->tensors[i], (char *)b->flat + (size_t)b->offset[i] * es, (size_t)b->counts[i] * es);
    return HPDL_OK;
}

/* Reduces the tensors not marked ready yet too, then completes every bucket:
   host tensors hold the result on return; with NCCL, work queued on the
   hpdl stream afterwards sees it. Ready for the next step. */
HPDL_MPI_API hpdl_status hpdl_mpi_bucketer_wait(hpdl_mpi_bucketer *b) {
    double t0 = hpdl_time_now();
    int i;
    hpdl_status s = HPDL_OK;
    if (!b) return HPDL_ERR_INVALID;
    HPDL_NVTX_PUSH("bucket wait");
    for (i = b->ntensors - 1; i >= 0; i--)
        if (!b->is_ready[i]) { b->is_ready[i] = 1; b->pending[b->bucket_of[i]]--; }
    s = hpdl__mpi_bucketer_launch_ready(b);
    if (s == HPDL_OK && b->mode == HPDL__BUCKET_IALLREDUCE) s = hpdl__mpi_bucketer_finish_iallreduce(b);
#ifdef __CUDACC__
    if (s == HPDL_OK && b->mode == HPDL__BUCKET_NCCL &&
        (cudaEventRecord(b->done, b->side) != cudaSuccess ||
         cudaStreamWaitEvent(hpdl__mpi_settings_get()->stream, b->done, 0) != cudaSuccess))
        s = HPDL_ERR_CUDA;
#endif
    hpdl__mpi_finish("hpdl_mpi_bucketer_wait", s, b->comm);
    HPDL_NVTX_POP();
    hpdl__mpi_bucketer_reset(b);
    b->wait_seconds += hpdl_time_now() - t0;
    b->steps++;
    return s;
}


/* ------------------------------------------------------------------------ */
/* Shut-down                                                                 */
/* ------------------------------------------------------------------------ */

/* Releases this translation unit's staging buffers and NCCL communicators,
   then finalises MPI (unless already done). */
HPDL_MPI_API hpdl_status hpdl_mpi_finalize(void) {
    int finalised = 0;
#ifdef __CUDACC__
    hpdl__mpi_stage_release(hpdl__mpi_stage_state());
    hpdl__mpi_ipc_release();
#endif
#ifdef HPDL_MPI_HAVE_NCCL
    hpdl__mpi_nccl_release();
#endif
    if (MPI_Finalized(&finalised) != MPI_SUCCESS) return HPDL_ERR_MPI;
    if (!finalised && MPI_Finalize() != MPI_SUCCESS) return HPDL_ERR_MPI;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Data-parallel MLP training                                                 */
/* ------------------------------------------------------------------------ */
/* Every rank holds the whole model. One training step on P ranks:
       1. global batch s of the epoch = rows [s*P*b, (s+1)*P*b) of a
          permutation that depends only on (seed, epoch), the same on every
          rank (hpdl_mpi_epoch_permutation); rank r takes its part of it
          (hpdl_mpi_shard_range), so each sample is used once per epoch and
          the P local batches together are exactly the batch of P*b that one
          process would take;
       2. forward and backward on the local b rows (mean loss over them);
       3. the gradients are summed over the ranks (MPI, RING, NCCL; with
          overlap: in buckets started as backward produces them, last layer
          first, waited for before the update);
       4. every rank applies the same SGD step. The 1/P of the mean is folded
          into it: W -= (lr/P) * (sum + (l2*P) * W), which is lr*(mean + l2*W).
   GPU ranks on the one-shot IPC allreduce (HPDL_ALLREDUCE_IPC_ONESHOT, or
   AUTO where it picks it) without overlap do 3 and 4 in one kernel
   (hpdl__dp_reduce_sgd_kernel), and on two ranks the first layer's dW GEMM
   pushes its output to the peer as it writes it (hpdl__gemm_auto_mirrored;
   notes/dp.md has what it gains). cfg.separate_update = 1 keeps the
   allreduce and the SGD kernel apart.
   A short last step (P*b does not divide n) gives ranks unequal rows; each
   rank then weights its mean gradient by rows*P/global_rows, so the sum is
   still the mean over the global batch (a rank with no rows adds zeros).
   Large batches: lr is scaled linearly, lr*P*b/batch_ref, and reached by a
   linear warm-up over the first warmup_epochs epochs, step by step (Goyal et
   al., 2017).

   CPU ranks: hpdl_mpi_dp_<s> (f32, f64) around hpdl_mlp_<s>. GPU ranks (nvcc
   builds): hpdl_mpi_dp_cuda_<s> (f32, f64) around hpdl_cuda_mlp_<s>, data
   resident on the device (hpdl_cuda_dataset), steps launched eagerly.
   Per epoch both report loss, running training accuracy, epoch time, compute
   and communication time (slowest rank) and the allreduce's algbw/busbw. */

#ifndef HPDL_MPI_DP_BUCKET_BYTES
#define HPDL_MPI_DP_BUCKET_BYTES ((size_t)1 << 20) /* small buckets: the MLP's gradients are a few MB */
#endif
#define HPDL_MPI_DP_MAX_PIECES 64

/* Settings of the data-parallel MLP drivers (hpdl_mpi_dp_<s>, hpdl_mpi_dp_cuda_<s>), read by their create;
   start from hpdl_mpi_dp_config_default. */
typedef struct hpdl_mpi_dp_config {
    int batch;                /* rows per rank per step (b) */
    hpdl_allreduce_algo algo; /* MPI, RING, NCCL */
    int overlap;              /* 1: bucketed, buckets reduced during backward */
    size_t bucket_bytes;      /* overlap: bucket size (0: HPDL_MPI_DP_BUCKET_BYTES) */
    int first_layer_pieces;   /* GPU overlap: first layer's dW computed and reduced in this many row blocks (0: 1) */
    int pieces_halving;       /* GPU overlap: 1 = each block half the previous one (the last, whose reduction
                                 nothing hides, the smallest); 0: equal blocks */
    int nccl_max_ctas;        /* GPU overlap: CTA cap of the buckets' NCCL reductions (0: NCCL's choice;
                                 ignored before NCCL 2.17) */
    int comm_priority;        /* GPU overlap: 1 = buckets reduced on a highest-priority stream */
    int separate_update;      /* GPU, IPC one-shot without overlap: 1 = the allreduce kernel, then the SGD
                                 kernel; 0 (default): one kernel for both, and on two ranks the first
                                 layer's dW pushed to the peer by its GEMM */
    double lr, l2;            /* reference learning rate, L2 weight decay */
    int lr_scale;             /* 1: linear scaling lr * P * b / batch_ref */
    int batch_ref;            /* batch the reference lr was tuned for (0: b) */
    double warmup_epochs;     /* linear warm-up from lr to the scaled lr (0: none) */
    uint64_t seed;            /* epoch permutations */
    MPI_Comm comm;
} hpdl_mpi_dp_config;

/* What an epoch reports; times are the slowest rank's. The GPU driver
   times every HPDL__DP_TIMED_EVERY-th step and the last one, and scales
   their compute and reduction times to all steps (hpdl__dp_timed_slot). */
typedef struct hpdl_mpi_dp_stats {
    int64_t steps, samples;
    double loss, accuracy;    /* mean training loss, running accuracy of the steps' forward passes */
    double lr_first, lr_last; /* learning rate of the first and last step */
    double epoch_s;           /* wall time of the epoch */
    double compute_s;         /* gather, forward, backward, update */
    double comm_s;            /* time the steps waited for the reduction (all of it without overlap; with
                                 the update where one kernel does both) */
    double comm_span_s;       /* reduction time from first bucket start to last bucket end (GPU overlap),
                                 else comm_s */
    double grad_bytes;        /* bytes reduced per step */
    double algbw, busbw;      /* bytes/s of one step's reduction: grad_bytes / (comm_span_s / steps) */
} hpdl_mpi_dp_stats;

/* Roofline inputs of the course's model (hpdl_roofline_combined). */
typedef struct hpdl_mpi_dp_roofline {
    double p_flops; /* measured GEMM rate, FLOP/s */
    double p_pci;   /* measured host->device bandwidth, bytes/s (0 on CPU ranks) */
    double p_mpi;   /* measured allreduce bus bandwidth for the gradient's size, bytes/s */
    double p_mpi_algbw;
} hpdl_mpi_dp_roofline;

/* Fills *c with the defaults: batch 128, HPDL_ALLREDUCE_MPI without overlap, lr 0.05, no L2, seed 1,
   MPI_COMM_WORLD; for GPU overlap 8 NCCL CTAs and a high-priority stream. A NULL c is ignored. */
HPDL_MPI_API void hpdl_mpi_dp_config_default(hpdl_mpi_dp_config *c) {
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->batch = 128;
    c->algo = HPDL_ALLREDUCE_MPI;
    c->first_layer_pieces = 1;
    /* the reduction runs beside the backward GEMMs: a few CTAs that get their
       SMs at once take less from the GEMMs than NCCL's default share */
    c->nccl_max_ctas = 8;
    c->comm_priority = 1;
    c->lr = 0.05;
    c->seed = 1;
    c->comm = MPI_COMM_WORLD;
}

HPDL_MPI_API int hpdl__dp_config_ok(const hpdl_mpi_dp_config *c) {
    return c && c->batch >= 1 && hpdl__mpi_algo_valid(c->algo) && hpdl__hyper_ok(c->lr, c->l2) && c->batch_ref >= 0 &&
           c->warmup_epochs >= 0 && c->warmup_epochs <= 1e9 && c->first_layer_pieces >= 0 &&
           c->first_layer_pieces <= HPDL_MPI_DP_MAX_PIECES && c->nccl_max_ctas >= 0 && c->nccl_max_ctas <= 64 &&
           c->comm != MPI_COMM_NULL;
}

/* Collective: the worst status over the ranks, so a bad argument on one rank
   makes every rank return before any of them enters a collective. */
HPDL_MPI_API hpdl_status hpdl__dp_agree(hpdl_status s, MPI_Comm comm) {
    int mine = (int)s, worst = 0;
    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return HPDL_ERR_MPI;
    return (hpdl_status)worst;
}

/* ---- learning-rate schedule ----------------------------------------------- */

/* The learning rate `progress` epochs into training (epoch + fraction of it
   done) on `ranks` ranks: target = lr * (lr_scale ? ranks*b/batch_ref : 1);
   during warm-up lr + (target - lr) * progress / warmup_epochs, then target. */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_lr(const hpdl_mpi_dp_config *c, int ranks, double progress, double *lr) {
    double target, ref;
    if (!c || !lr || ranks < 1 || c->batch < 1 || c->batch_ref < 0 || !hpdl__hyper_ok(c->lr, 0) ||
        !(c->warmup_epochs >= 0) || !(progress >= 0) || progress > 1e12)
        return HPDL_ERR_INVALID;
    ref = c->batch_ref ? c->batch_ref : c->batch;
    target = c->lr_scale ? c->lr * ranks * c->batch / ref : c->lr;
    *lr = progress < c->warmup_epochs ? c->lr + (target - c->lr) * progress / c->warmup_epochs : target;
    return HPDL_OK;
}

/* ---- epoch plan: which rows each rank takes at each step ------------------ */

/* Which rows of an epoch this rank takes at each step (see the steps above): made by
   hpdl_mpi_dp_plan_create, drawn by hpdl_mpi_dp_plan_epoch, freed by hpdl_mpi_dp_plan_destroy. */
typedef struct hpdl_mpi_dp_plan {
    int64_t n;      /* samples per epoch */
    int batch;      /* per rank */
    int rank, size;
    int64_t steps;  /* ceil(n / (size * batch)) */
    int64_t local;  /* this rank's samples per epoch */
    int32_t *perm;  /* the epoch's permutation of [0, n) */
    int32_t *order; /* this rank's samples, step after step: step s starts at s * batch */
} hpdl_mpi_dp_plan;

/* Frees perm and order and zeroes *p; a NULL p is ignored. */
HPDL_MPI_API void hpdl_mpi_dp_plan_destroy(hpdl_mpi_dp_plan *p) {
    if (!p) return;
    HPDL_FREE(p->perm);
    HPDL_FREE(p->order);
    memset(p, 0, sizeof *p);
}

/* Global batch s (rows [s*size*batch, ...) of the permutation) and this
   rank's part of it: [*begin, *end) of the permutation. */
HPDL_MPI_API void hpdl__dp_plan_part(const hpdl_mpi_dp_plan *p, int64_t s, int64_t *global_begin, int64_t *global_rows,
                                 int64_t *begin, int64_t *end) {
    int64_t big = (int64_t)p->size * p->batch, g0 = s * big, rows = p->n - g0 < big ? p->n - g0 : big;
    *begin = *end = 0;
    hpdl_mpi_shard_range(rows, p->rank, p->size, begin, end);
    *begin += g0;
    *end += g0;
    *global_begin = g0;
    *global_rows = rows;
}

/* Plan of an epoch of n samples, batch rows per rank per step, for rank `rank` of `size`: allocates perm
   and order (drawn by hpdl_mpi_dp_plan_epoch); no communication. HPDL_ERR_INVALID for a NULL p or bad
   sizes (n or batch * size above INT32_MAX), HPDL_ERR_NOMEM; *p is written only on success. */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_plan_create(hpdl_mpi_dp_plan *p, int64_t n, int batch, int rank, int size) {
    hpdl_mpi_dp_plan made;
    int64_t gb, rows, b, e;
    if (!p || n < 1 || n > INT32_MAX || batch < 1 || size < 1 || rank < 0 || rank >= size ||
        (int64_t)batch * size > INT32_MAX)
        return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n = n;
    made.batch = batch;
    made.rank = rank;
    made.size = size;
    made.steps = (n + (int64_t)batch * size - 1) / ((int64_t)batch * size);
    hpdl__dp_plan_part(&made, made.steps - 1, &gb, &rows, &b, &e);
    made.local = (made.steps - 1) * batch + (e - b);
    made.perm = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    made.order = (int32_t *)hpdl_alloc((size_t)made.local, sizeof(int32_t));
    if (!made.perm || !made.order) { hpdl_mpi_dp_plan_destroy(&made); return HPDL_ERR_NOMEM; }
    *p = made;
    return HPDL_OK;
}

/* Draws epoch `epoch`'s permutation and this rank's order (same on every
   rank for the same seed and epoch: no communication). */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_plan_epoch(hpdl_mpi_dp_plan *p, uint64_t seed, int epoch) {
    int64_t s, gb, rows, b, e, o = 0;
    if (!p || !p->perm || !p->order || epoch < 0) return HPDL_ERR_INVALID;
    hpdl_mpi_epoch_permutation(p->perm, p->n, seed, epoch);
    for (s = 0; s < p->steps; s++) {
        hpdl__dp_plan_part(p, s, &gb, &rows, &b, &e);
        memcpy(p->order + o, p->perm + b, (size_t)(e - b) * sizeof(int32_t));
        o += e - b;
    }
    return HPDL_OK;
}

/* Step s: this rank's rows are order[*first .. *first + *rows), the global
   batch has *global_rows rows (rows may be 0 on the short last step). */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_plan_step(const hpdl_mpi_dp_plan *p, int64_t s, int64_t *first, int *rows,
                                           int *global_rows) {
    int64_t gb, grows, b, e;
    if (!p || !p->order || s < 0 || s >= p->steps || !first || !rows || !global_rows) return HPDL_ERR_INVALID;
    hpdl__dp_plan_part(p, s, &gb, &grows, &b, &e);
    *first = s * p->batch;
    *rows = (int)(e - b);
    *global_rows = (int)grows;
    return HPDL_OK;
}

/* The factor on a rank's mean gradient that makes the ranks' sum, divided by
   P, the global batch's mean: rows * P / global_rows (1 on full steps). */
HPDL_MPI_API double hpdl__dp_grad_weight(int rows, int global_rows, int size) {
    return (double)rows * size / (double)global_rows;
}

/* Fills the cross-rank parts of an epoch's stats. local[] = {loss_sum, hits,
   samples} summed, times[] = {epoch, compute, comm, span} maxed. */
HPDL_MPI_API hpdl_status hpdl__dp_finish_stats(hpdl_mpi_dp_stats *out, const double *local, const double *times,
                                           int64_t steps, double grad_bytes, int size, MPI_Comm comm) {
    double sums[3], maxes[4];
    HPDL__MPI_TRY(MPI_Allreduce((void *)local, sums, 3, MPI_DOUBLE, MPI_SUM, comm));
    HPDL__MPI_TRY(MPI_Allreduce((void *)times, maxes, 4, MPI_DOUBLE, MPI_MAX, comm));
    out->steps = steps;
    out->samples = (int64_t)sums[2];
    out->loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
    out->accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
    out->epoch_s = maxes[0];
    out->compute_s = maxes[1];
    out->comm_s = maxes[2];
    out->comm_span_s = maxes[3];
    out->grad_bytes = grad_bytes;
    out->algbw = size > 1 && steps > 0 ? hpdl_mpi_algbw(grad_bytes, maxes[3] / (double)steps) : 0.0;
    out->busbw = size > 1 && steps > 0 ? hpdl_mpi_busbw(grad_bytes, maxes[3] / (double)steps, size) : 0.0;
    return HPDL_OK;
}

/* ======================================================================== */
/* CPU ranks                                                                 */
/* ======================================================================== */

/* hpdl_mpi_dp_<s> as the type-independent functions below see it: the same
   members in the same order with untyped buffers, a byte copy of the typed
   struct (as hpdl__mlp_any is of hpdl_mlp_<s>). */
typedef struct hpdl__mpi_dp_any {
    hpdl_mpi_dp_config cfg;
    int rank, size;
    void *model;                /* the caller's hpdl_mlp_<s>, not owned */
    hpdl__mlp_any grad;         /* views of flat */
    void *flat;
    int64_t n_grad;
    hpdl__mlp_work_any work;
    hpdl_mpi_dp_plan plan;
    hpdl_mpi_bucketer bucketer; /* overlap only; tensor 2l = W[l], 2l+1 = b[l] */
    void *X;                    /* the step's rows */
    int32_t *y;
    double ready_s;             /* time inside bucketer_ready this step */
    hpdl_mpi_dtype dtype;       /* the element type, for MPI */
    const hpdl__mlp_ops *ops;   /* and its numeric primitives */
} hpdl__mpi_dp_any;

/* *view mirrors the hpdl_mlp_<s> at model; NULL for a NULL model. */
HPDL_MPI_API hpdl__mlp_any *hpdl__dp_model_view(const void *model, hpdl__mlp_any *view) {
    if (!model) return NULL;
    memcpy(view, model, sizeof *view);
    return view;
}

/* Frees all that create made and zeroes *dp. */
HPDL_MPI_API void hpdl__mpi_dp_free_any(hpdl__mpi_dp_any *dp) {
    hpdl_mpi_bucketer_destroy(&dp->bucketer);
    hpdl__mlp_work_free_any(&dp->work);
    hpdl_mpi_dp_plan_destroy(&dp->plan);
    HPDL_FREE(dp->flat);
    HPDL_FREE(dp->X);
    HPDL_FREE(dp->y);
    memset(dp, 0, sizeof *dp);
}

/* Points the gradient model's arrays into flat: [W0 b0 W1 b1 ...]. */
HPDL_MPI_API void hpdl__dp_grad_views(hpdl__mpi_dp_any *dp) {
    char *p = (char *)dp->flat;
    int l;
    for (l = 0; l < dp->grad.n_layers; l++) {
        dp->grad.W[l] = p;
        p += (size_t)dp->grad.widths[l] * dp->grad.widths[l + 1] * dp->ops->size;
        dp->grad.b[l] = p;
        p += (size_t)dp->grad.widths[l + 1] * dp->ops->size;
    }
}

/* Plan, workspace, flat gradient and the step's rows for model m. */
HPDL_MPI_API hpdl_status hpdl__dp_alloc(hpdl__mpi_dp_any *dp, const hpdl__mlp_any *m, int64_t n) {
    size_t size = dp->ops->size;
    int l;
    hpdl_status s = hpdl_mpi_dp_plan_create(&dp->plan, n, dp->cfg.batch, dp->rank, dp->size);
    if (s == HPDL_OK) s = hpdl__mlp_work_create_any(&dp->work, m, dp->cfg.batch, dp->ops);
    if (s != HPDL_OK) return s;
    dp->grad.n_layers = m->n_layers;
    dp->grad.act = m->act;
    memcpy(dp->grad.widths, m->widths, sizeof m->widths);
    for (l = 0; l < m->n_layers; l++) dp->n_grad += (int64_t)(m->widths[l] + 1) * m->widths[l + 1];
    dp->flat = hpdl_alloc((size_t)dp->n_grad, size);
    dp->X = hpdl_alloc((size_t)dp->cfg.batch * m->widths[0], size);
    dp->y = (int32_t *)hpdl_alloc((size_t)dp->cfg.batch, sizeof(int32_t));
    if (!dp->flat || !dp->X || !dp->y) return HPDL_ERR_NOMEM;
    hpdl__dp_grad_views(dp);
    return HPDL_OK;
}

/* Parameters from rank 0 to all, layer by layer. */
HPDL_MPI_API hpdl_status hpdl__dp_bcast_model(const hpdl__mlp_any *m, hpdl_mpi_dtype dtype, MPI_Comm comm) {
    int l;
    hpdl_status s = HPDL_OK;
    for (l = 0; s == HPDL_OK && l < m->n_layers; l++) {
        s = hpdl_mpi_bcast(m->W[l], (int64_t)m->widths[l] * m->widths[l + 1], dtype, 0, comm);
        if (s == HPDL_OK) s = hpdl_mpi_bcast(m->b[l], m->widths[l + 1], dtype, 0, comm);
    }
    return s;
}

/* One bucketer over the gradient's tensors, W[l] as 2l and b[l] as 2l+1. */
HPDL_MPI_API hpdl_status hpdl__dp_bucketer(hpdl__mpi_dp_any *dp) {
    void *tensors[2 * HPDL_MLP_MAX_LAYERS];
    int64_t counts[2 * HPDL_MLP_MAX_LAYERS];
    int l;
    for (l = 0; l < dp->grad.n_layers; l++) {
        tensors[2 * l] = dp->grad.W[l];
        counts[2 * l] = (int64_t)dp->grad.widths[l] * dp->grad.widths[l + 1];
        tensors[2 * l + 1] = dp->grad.b[l];
        counts[2 * l + 1] = dp->grad.widths[l + 1];
    }
    return hpdl_mpi_bucketer_create(&dp->bucketer, tensors, counts, 2 * dp->grad.n_layers, dp->dtype,
                                    dp->cfg.bucket_bytes ? dp->cfg.bucket_bytes : HPDL_MPI_DP_BUCKET_BYTES, 0,
                                    dp->cfg.algo, dp->cfg.comm);
}

/* Collective. Trains the hpdl_mlp_<s> at model (kept by the caller) on
   n_train samples per epoch; rank 0's parameters are copied to every rank
   first. A bad argument on any rank (have_dp 0: no place for the result)
   gives every rank HPDL_ERR_INVALID; on an error nothing stays allocated. */
HPDL_MPI_API hpdl_status hpdl__mpi_dp_create_any(hpdl__mpi_dp_any *made, int have_dp, void *model, int64_t n_train,
                                                 const hpdl_mpi_dp_config *cfg, hpdl_mpi_dtype dtype,
                                                 const hpdl__mlp_ops *ops) {
    hpdl__mlp_any m;
    hpdl_status s = HPDL_OK;
    if (!cfg || cfg->comm == MPI_COMM_NULL) return HPDL_ERR_INVALID; /* nobody to agree with */
    if (!have_dp || !hpdl__mlp_ok_any(hpdl__dp_model_view(model, &m)) || !hpdl__dp_config_ok(cfg) || n_train < 1 ||
        n_train > INT32_MAX)
        s = HPDL_ERR_INVALID;
    else if (hpdl__mpi_algo_device_only(cfg->algo))
        s = HPDL_ERR_UNSUPPORTED; /* host buffers */
    s = hpdl__dp_agree(s, cfg->comm);
    if (s != HPDL_OK) return s;
    memset(made, 0, sizeof *made);
    made->cfg = *cfg;
    made->model = model;
    made->dtype = dtype;
    made->ops = ops;
    MPI_Comm_rank(cfg->comm, &made->rank);
    MPI_Comm_size(cfg->comm, &made->size);
    s = hpdl__dp_agree(hpdl__dp_alloc(made, &m, n_train), cfg->comm);
    if (s == HPDL_OK) s = hpdl__dp_bcast_model(&m, dtype, cfg->comm);
    if (s == HPDL_OK && cfg->overlap) s = hpdl__dp_bucketer(made);
    if (s != HPDL_OK) hpdl__mpi_dp_free_any(made);
    return s;
}

/* Hands a finished gradient tensor to the bucketer, timing it as
   communication. */
HPDL_MPI_API hpdl_status hpdl__dp_ready(hpdl__mpi_dp_any *dp, int tensor) {
    double t0 = hpdl_time_now();
    hpdl_status s = hpdl_mpi_bucketer_ready(&dp->bucketer, tensor);
    dp->ready_s += hpdl_time_now() - t0;
    return s;
}

/* hpdl_mlp_backward_<s> on model m, layer by layer so that each layer's
   gradient can go to the bucketer as soon as it exists (mark). */
HPDL_MPI_API hpdl_status hpdl__dp_backward(hpdl__mpi_dp_any *dp, const hpdl__mlp_any *m, int rows, int mark,
                                           double *loss, int64_t *hits) {
    hpdl__mlp_work_any *w = &dp->work;
    int L = m->n_layers, classes = m->widths[L], l;
    hpdl_status s = hpdl__mlp_forward_any(m, w, rows, dp->X, dp->ops);
    if (s != HPDL_OK) return s;
    *hits = dp->ops->argmax_hits(rows, classes, w->act[L], dp->y);
    s = dp->ops->softmax_xent(rows, classes, w->act[L], dp->y, w->delta[L], loss);
    for (l = L - 1; s == HPDL_OK && l >= 0; l--) {
        s = hpdl__mlp_layer_back_any(m, w, l, rows, l ? w->act[l] : dp->X, &dp->grad, dp->ops);
        if (s == HPDL_OK && mark) s = hpdl__dp_ready(dp, 2 * l + 1);
        if (s == HPDL_OK && mark) s = hpdl__dp_ready(dp, 2 * l);
    }
    return s;
}

/* This rank's gradient for a step: backward on its rows, weighted for a
   short last step; zeros when it has no rows. */
HPDL_MPI_API hpdl_status hpdl__dp_local_grad(hpdl__mpi_dp_any *dp, const hpdl__mlp_any *m, int rows, int global_rows,
                                             double *loss, int64_t *hits) {
    double weight = hpdl__dp_grad_weight(rows, global_rows, dp->size);
    hpdl_status s;
    *loss = 0.0;
    *hits = 0;
    if (rows == 0) { memset(dp->flat, 0, (size_t)dp->n_grad * dp->ops->size); return HPDL_OK; }
    s = hpdl__dp_backward(dp, m, rows, dp->cfg.overlap && weight == 1.0, loss, hits);
    if (s == HPDL_OK && weight != 1.0) dp->ops->scale((size_t)dp->n_grad, dp->flat, weight);
    return s;
}

/* One step on the rows already in dp->X / dp->y. times[1] += compute,
   times[2] += communication. */
HPDL_MPI_API hpdl_status hpdl__dp_step(hpdl__mpi_dp_any *dp, hpdl__mlp_any *m, int rows, int global_rows, double lr,
                                       double *loss, int64_t *hits, double *times) {
    double t0 = hpdl_time_now(), t1, t2;
    int P = dp->size;
    hpdl_status s;
    dp->ready_s = 0.0;
    HPDL_NVTX_PUSH("DP local gradient");
    s = hpdl__dp_local_grad(dp, m, rows, global_rows, loss, hits);
    HPDL_NVTX_POP();
    t1 = hpdl_time_now();
    HPDL_NVTX_PUSH("DP gradient reduction");
    if (s == HPDL_OK)
        s = dp->cfg.overlap ? hpdl_mpi_bucketer_wait(&dp->bucketer)
                            : hpdl_mpi_allreduce(dp->flat, dp->n_grad, dp->dtype, dp->cfg.algo, dp->cfg.comm);
    HPDL_NVTX_POP();
    t2 = hpdl_time_now();
    /* the summed gradient is P times the mean: lr / P, l2 * P, each rounded
       to the element type as a typed call would */
    HPDL_NVTX_PUSH("DP update");
    if (s == HPDL_OK)
        s = hpdl__mlp_sgd_any(m, &dp->grad, dp->ops->to_acc(lr / P), dp->ops->to_acc(dp->cfg.l2 * P), dp->ops);
    HPDL_NVTX_POP();
    times[1] += (t1 - t0 - dp->ready_s) + (hpdl_time_now() - t2);
    times[2] += (t2 - t1) + dp->ready_s;
    return s;
}

/* Copies this rank's rows of step `first` (plan order) of X and labels
   into dp->X and dp->y. */
HPDL_MPI_API void hpdl__dp_gather(hpdl__mpi_dp_any *dp, int64_t first, int rows, int in, const void *X,
                                  const int32_t *labels) {
    size_t row_bytes = (size_t)in * dp->ops->size;
    int i;
    for (i = 0; i < rows; i++) {
        int32_t r = dp->plan.order[first + i];
        memcpy((char *)dp->X + (size_t)i * row_bytes, (const char *)X + (size_t)r * row_bytes, row_bytes);
        dp->y[i] = labels[r];
    }
}

/* Collective: one epoch (index `epoch`, from 0: it keys the shuffle and
   the lr schedule) over X (n_train x widths[0]) and labels, the same data
   on every rank. out (optional) gets the epoch's stats. */
HPDL_MPI_API hpdl_status hpdl__mpi_dp_epoch_any(hpdl__mpi_dp_any *dp, const void *X, const int32_t *labels, int epoch,
                                                hpdl_mpi_dp_stats *out) {
    hpdl_mpi_dp_stats st;
    hpdl__mlp_any m;
    double local[3] = {0, 0, 0}, times[4] = {0, 0, 0, 0}, t0, lr = 0;
    int64_t s, first = 0;
    int rows = 0, global_rows = 1;
    hpdl_status status = HPDL_OK;
    if (!dp->flat) return HPDL_ERR_INVALID;
    hpdl__dp_model_view(dp->model, &m);
    if (!X || epoch < 0 || !hpdl__labels_ok(dp->plan.n, labels, m.widths[m.n_layers])) status = HPDL_ERR_INVALID;
    status = hpdl__dp_agree(status, dp->cfg.comm);
    if (status != HPDL_OK) return status;
    memset(&st, 0, sizeof st);
    t0 = hpdl_time_now();
    hpdl_mpi_dp_plan_epoch(&dp->plan, dp->cfg.seed, epoch);
    for (s = 0; status == HPDL_OK && s < dp->plan.steps; s++) {
        double loss;
        int64_t hits;
        status = hpdl_mpi_dp_plan_step(&dp->plan, s, &first, &rows, &global_rows);
        if (status == HPDL_OK)
            status = hpdl_mpi_dp_lr(&dp->cfg, dp->size, epoch + (double)s / (double)dp->plan.steps, &lr);
        if (status != HPDL_OK) break;
        if (s == 0) st.lr_first = lr;
        hpdl__dp_gather(dp, first, rows, m.widths[0], X, labels);
        status = hpdl__dp_step(dp, &m, rows, global_rows, lr, &loss, &hits, times);
        local[0] += loss * rows;
        local[1] += (double)hits;
        local[2] += rows;
    }
    st.lr_last = lr;
    times[0] = hpdl_time_now() - t0;
    times[3] = times[2];
    if (status == HPDL_OK)
        status = hpdl__dp_finish_stats(&st, local, times, dp->plan.steps, (double)dp->n_grad * dp->ops->size, dp->size,
                                       dp->cfg.comm);
    if (status == HPDL_OK && out) *out = st;
    return status;
}

/* hpdl_mpi_dp_<s>: trains a hpdl_mlp_<s> in place. The gradient model's
   arrays are views of one flat buffer [W0 b0 W1 b1 ...], so one allreduce
   (or one bucketer) covers them all. The struct mirrors hpdl__mpi_dp_any;
   each function is a call of the hpdl__mpi_dp_*_any above. */
#define HPDL_DEFINE_MPI_DP(SUFFIX, T, DTYPE)                                                                          \
    typedef struct hpdl_mpi_dp_##SUFFIX {                                                                             \
        hpdl_mpi_dp_config cfg;                                                                                       \
        int rank, size;                                                                                               \
        hpdl_mlp_##SUFFIX *model;  /* not owned */                                                                    \
        hpdl_mlp_##SUFFIX grad;    /* views of flat */                                                                \
        T *flat;                                                                                                      \
        int64_t n_grad;                                                                                               \
        hpdl_mlp_work_##SUFFIX work;                                                                                  \
        hpdl_mpi_dp_plan plan;                                                                                        \
        hpdl_mpi_bucketer bucketer; /* overlap only; tensor 2l = W[l], 2l+1 = b[l] */                                 \
        T *X;                       /* the step's rows */                                                             \
        int32_t *y;                                                                                                   \
        double ready_s;             /* time inside bucketer_ready this step */                                        \
        hpdl_mpi_dtype dtype;                                                                                         \
        const hpdl__mlp_ops *ops;                                                                                     \
    } hpdl_mpi_dp_##SUFFIX;                                                                                           \
    typedef char hpdl__mpi_dp_layout_check_##SUFFIX                                                                  \
        [sizeof(hpdl_mpi_dp_##SUFFIX) == sizeof(hpdl__mpi_dp_any) ? 1 : -1];                                          \
    HPDL_MPI_API void hpdl_mpi_dp_destroy_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp) {                                        \
        hpdl__mpi_dp_any v;                                                                                           \
        if (!dp) return;                                                                                              \
        memcpy(&v, dp, sizeof v);                                                                                     \
        hpdl__mpi_dp_free_any(&v);                                                                                    \
        memset(dp, 0, sizeof *dp);                                                                                    \
    }                                                                                                                 \
    /* *dp is written only on success. */                                                                             \
    HPDL_MPI_API hpdl_status hpdl_mpi_dp_create_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, hpdl_mlp_##SUFFIX *model,          \
                                                         int64_t n_train, const hpdl_mpi_dp_config *cfg) {            \
        hpdl__mpi_dp_any made;                                                                                        \
        hpdl_status s = hpdl__mpi_dp_create_any(&made, dp != NULL, model, n_train, cfg, DTYPE,                        \
                                                hpdl__mlp_ops_##SUFFIX());                                            \
        if (s == HPDL_OK) memcpy(dp, &made, sizeof *dp);                                                              \
        return s;                                                                                                     \
    }                                                                                                                 \
    HPDL_MPI_API hpdl_status hpdl_mpi_dp_epoch_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, const T *X, const int32_t *labels,  \
                                                        int epoch, hpdl_mpi_dp_stats *out) {                          \
        hpdl__mpi_dp_any v;                                                                                           \
        hpdl_status s;                                                                                                \
        if (!dp) return HPDL_ERR_INVALID;                                                                             \
        memcpy(&v, dp, sizeof v);                                                                                     \
        s = hpdl__mpi_dp_epoch_any(&v, X, labels, epoch, out);                                                        \
        memcpy(dp, &v, sizeof *dp); /* the plan and bucketer keep their state */                                      \
        return s;                                                                                                     \
    }

/* hpdl_mpi_dp_create_f32 hpdl_mpi_dp_destroy_f32 hpdl_mpi_dp_epoch_f32 */
HPDL_DEFINE_MPI_DP(f32, float, HPDL_MPI_F32)
/* hpdl_mpi_dp_create_f64 hpdl_mpi_dp_destroy_f64 hpdl_mpi_dp_epoch_f64 */
HPDL_DEFINE_MPI_DP(f64, double, HPDL_MPI_F64)

/* Roofline inputs on CPU ranks: P_flops from a 256^3 f32 GEMM, P_mpi from
   allreducing grad_bytes of f32 with algo (median of 5). Collective. */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_roofline_cpu(int64_t grad_count, hpdl_allreduce_algo algo, MPI_Comm comm,
                                              hpdl_mpi_dp_roofline *out) {
    const int n = 256, reps = 5;
    float *a = (float *)hpdl_alloc((size_t)n * n, sizeof(float)), *c = (float *)hpdl_alloc((size_t)n * n, sizeof(float));
    float *g = (float *)hpdl_alloc((size_t)(grad_count > 0 ? grad_count : 1), sizeof(float));
    double gemm_s[5], comm_s[5];
    hpdl_stats sg, sc;
    int64_t i;
    int p = 1, r;
    hpdl_status s = HPDL_OK;
    if (!out || grad_count < 1) s = HPDL_ERR_INVALID;
    else if (!a || !c || !g) s = HPDL_ERR_NOMEM;
    s = hpdl__dp_agree(s, comm);
    if (s != HPDL_OK) { HPDL_FREE(a); HPDL_FREE(c); HPDL_FREE(g); return s; }
    for (i = 0; i < (int64_t)n * n; i++) a[i] = (float)(i % 7) * 0.25f;
    for (i = 0; i < grad_count; i++) g[i] = 1.0f;
    MPI_Comm_size(comm, &p);
    for (r = 0; r < reps && s == HPDL_OK; r++) {
        double t0 = hpdl_time_now();
        s = hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, 1.0f, a, n, a, n, 0.0f, c, n);
        gemm_s[r] = hpdl_time_now() - t0;
        MPI_Barrier(comm);
        t0 = hpdl_time_now();
        if (s == HPDL_OK) s = hpdl_mpi_allreduce_f32(g, grad_count, algo, comm);
        comm_s[r] = hpdl_time_now() - t0;
    }
    if (s == HPDL_OK) s = hpdl_stats_compute(gemm_s, reps, &sg);
    if (s == HPDL_OK) s = hpdl_stats_compute(comm_s, reps, &sc);
    if (s == HPDL_OK) {
        out->p_flops = 2.0 * n * n * n / sg.median;
        out->p_pci = 0.0;
        out->p_mpi = hpdl_mpi_busbw(4.0 * grad_count, sc.median, p);
        out->p_mpi_algbw = p > 1 ? hpdl_mpi_algbw(4.0 * grad_count, sc.median) : 0.0;
    }
    HPDL_FREE(a); HPDL_FREE(c); HPDL_FREE(g);
    return s;
}

/* ======================================================================== */
/* GPU ranks (nvcc builds): hpdl_mpi_dp_cuda_<s> around hpdl_cuda_mlp_<s>    */
/* ======================================================================== */
#ifdef __CUDACC__

/* Per timed step, events on the model's stream: 0 start, 1 local
   gradient done, 2 reduction done, 3 update done; with NCCL buckets also
   4 first bucket started and 5 (on the bucketer's side stream) last
   bucket done. */
enum { HPDL__DP_EVENTS = 6 };

/* The steps of an epoch of `steps` that record their events, in the GPU
   data- and tensor-parallel drivers: every HPDL__DP_TIMED_EVERY-th and the
   last (a bucketed epoch waits on its event 5). An event recorded between
   two kernels costs about 3 us of the stream: on two H200s, timing every
   step made the epoch of the 784-2048-10 MLP at 512 rows a GPU 7 % longer,
   on one GPU and on two (16.1 -> 17.4 ms, 8.8 -> 9.5 ms); every 8th step,
   1 %. Only those steps have events. */
#define HPDL__DP_TIMED_EVERY 8
HPDL_MPI_API int64_t hpdl__dp_timed_steps(int64_t steps) {
    if (steps < 1) return 0;
    return (steps + HPDL__DP_TIMED_EVERY - 1) / HPDL__DP_TIMED_EVERY + ((steps - 1) % HPDL__DP_TIMED_EVERY != 0);
}

/* Where step `step`'s events are among the timed steps', or -1 for a step
   that records none. */
HPDL_MPI_API int64_t hpdl__dp_timed_slot(int64_t step, int64_t steps) {
    if (step % HPDL__DP_TIMED_EVERY == 0) return step / HPDL__DP_TIMED_EVERY;
    return step == steps - 1 ? hpdl__dp_timed_steps(steps) - 1 : -1;
}

/* What the timed steps' sum of a time is scaled by for the epoch: steps
   over the timed ones. */
HPDL_MPI_API double hpdl__dp_timed_scale(int64_t steps) {
    const int64_t timed = hpdl__dp_timed_steps(steps);
    return timed > 0 ? (double)steps / (double)timed : 0.0;
}

template <typename T> __global__ void hpdl__dp_scale_kernel(int64_t n, T *x, T w) {
    int64_t i;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) x[i] *= w;
}

/* hpdl__dp_reduce_sgd_kernel's block shares start on whole 128-byte lines
   (hpdl__unit_part): 8 packs. */
#define HPDL__DP_UNIT 8

/* This block's share of the gradient's packs below `posted` ([*begin,
   *end)) and from `posted` on ([*tail_begin, *tail_end)): every block has
   some of both, so the packs left to push go out from every block at once. */
template <typename T>
static __device__ __forceinline__ void hpdl__dp_reduce_parts(const hpdl__ipc_args &a, int64_t posted, int64_t *begin,
                                                             int64_t *end, int64_t *tail_begin, int64_t *tail_end) {
    const int64_t packs = hpdl__ipc_packs(a.count, sizeof(T));
    hpdl__unit_part(posted, gridDim.x, HPDL__DP_UNIT, blockIdx.x, begin, end);
    hpdl__unit_part(packs - posted, gridDim.x, HPDL__DP_UNIT, blockIdx.x, tail_begin, tail_end);
    *tail_begin += posted;
    *tail_end += posted;
}

/* Packs one block keeps in shared memory (hpdl__dp_reduce_parts' shares). */
HPDL_MPI_API int64_t hpdl__dp_kept_packs(int64_t packs, int64_t posted, int blocks) {
    return hpdl__unit_share(posted, blocks, HPDL__DP_UNIT) + hpdl__unit_share(packs - posted, blocks, HPDL__DP_UNIT);
}

/* Pushes packs [begin, end) of buf into every peer's inbox as the one-shot
   does (hpdl__ipc_push), for hpdl__dp_sum_sgd to take there. */
template <typename T>
static __device__ __forceinline__ void hpdl__dp_post_part(const hpdl__ipc_args &a, const T *buf, int64_t begin,
                                                          int64_t end) {
    hpdl__ipc_pack own[HPDL__IPC_UNROLL];
    int64_t u;
    for (u = begin + threadIdx.x; u < end; u += (int64_t)HPDL__IPC_UNROLL * blockDim.x) hpdl__ipc_push(a, buf, u, end, own);
}

/* Whether an element of pack p is inf or NaN (a last pack's unused
   elements are zeros). */
template <typename T> static __device__ __forceinline__ int hpdl__dp_nonfinite(hpdl__ipc_pack p) {
    int i, bad = 0;
#pragma unroll
    for (i = 0; i < (int)(16 / sizeof(T)); i++) bad |= !hpdl__finite(((const T *)&p)[i]);
    return bad;
}

/* Packs [begin, end): the gradient G summed with every peer's, in rank
   order as the one-shot sums them, as each peer's pack lands in this
   rank's inbox, and SGD at once on their parameters P (laid out as the
   gradient), whose old values go to kept[u - begin] (shared memory, for
   hpdl__dp_restore); G is left as it was. A thread loads its
   HPDL__IPC_UNROLL packs of G and of P before it takes the peers': with
   one block an SM, fewer loads in flight would leave HBM waiting on
   latency. Returns whether a sum is not finite. */
template <typename T>
static __device__ __forceinline__ int hpdl__dp_sum_sgd(const hpdl__ipc_args &a, const T *G, T *P, int64_t n_w,
                                                       int64_t begin, int64_t end, hpdl__ipc_pack *kept,
                                                       const hpdl__mlp_state *st) {
    typedef typename hpdl__acc<T>::type Acc;
    enum { N = 16 / sizeof(T) };
    const Acc lr = (Acc)st->lr, l2 = (Acc)st->l2;
    hpdl__ipc_pack own[HPDL__IPC_UNROLL], p[HPDL__IPC_UNROLL], sum[HPDL__IPC_UNROLL];
    int64_t u;
    int i, j, bad = 0;
    for (u = begin + threadIdx.x; u < end; u += (int64_t)HPDL__IPC_UNROLL * blockDim.x) {
#pragma unroll
        HPDL__IPC_STEP(j, u, end) own[j] = hpdl__ipc_load_buf(G, u + (int64_t)j * blockDim.x, a);
#pragma unroll
        HPDL__IPC_STEP(j, u, end) p[j] = hpdl__ipc_load_buf(P, u + (int64_t)j * blockDim.x, a);
        hpdl__ipc_sum<T, true>(a, u, end, own, sum);
#pragma unroll
        HPDL__IPC_STEP(j, u, end) {
            const int64_t at = u + (int64_t)j * blockDim.x;
            hpdl__ipc_pack next;
            bad |= hpdl__dp_nonfinite<T>(sum[j]);
#pragma unroll
            for (i = 0; i < N; i++)
                ((T *)&next)[i] = (T)hpdl__mlp_sgd_one((Acc)((const T *)&p[j])[i], (Acc)((const T *)&sum[j])[i], lr,
                                                       l2, at * N + i < n_w);
            hpdl__ipc_store_buf(P, at, a, next);
            kept[at - begin] = p[j];
        }
    }
    return bad;
}

/* Puts back the parameters of packs [begin, end) that hpdl__dp_sum_sgd
   kept (a step that is not applied). */
template <typename T>
static __device__ __forceinline__ void hpdl__dp_restore(const hpdl__ipc_args &a, const hpdl__ipc_pack *kept, T *P,
                                                       int64_t begin, int64_t end) {
    int64_t u;
    for (u = begin + threadIdx.x; u < end; u += blockDim.x) hpdl__ipc_store_buf(P, u, a, kept[u - begin]);
}

/* The data-parallel step's gradient reduction and SGD update in one
   cooperative kernel (one-shot IPC, one rank per GPU of a node). The packs
   of the gradient G below `posted` reached the peers from the first
   layer's GEMM (hpdl__ipc_mirror); each block pushes its share of the rest
   first, then sums its shares (hpdl__dp_reduce_parts), checking the sums,
   and updates their parameters with them at once, keeping the old values
   in shared memory. After a grid-wide barrier, if a sum anywhere
   was not finite, every block puts its old values back: the step is not
   applied, on every rank alike (they all have the same sums). So no block
   waits for the others before it updates; the end is hpdl__mlp_sgd_kernel's.
   Against the allreduce kernel then the SGD kernel: one launch fewer, and
   the summed gradient never goes to memory (G keeps this rank's own). */
template <typename T>
static __global__ void __launch_bounds__(HPDL__IPC_THREADS)
    hpdl__dp_reduce_sgd_kernel(hpdl__ipc_args a, const T *G, int64_t posted, T *P, int64_t n_w, hpdl__mlp_state *st,
                               int batch) {
    extern __shared__ hpdl__ipc_pack hpdl__dp_kept[];
    hpdl__ipc_pack *tail = NULL;
    int64_t begin, end, tail_begin, tail_end;
    int bad;
    hpdl__dp_reduce_parts<T>(a, posted, &begin, &end, &tail_begin, &tail_end);
    tail = hpdl__dp_kept + (end - begin);
    hpdl__dp_post_part(a, G, tail_begin, tail_end);
    bad = hpdl__dp_sum_sgd(a, G, P, n_w, begin, end, hpdl__dp_kept, st);
    bad |= hpdl__dp_sum_sgd(a, G, P, n_w, tail_begin, tail_end, tail, st);
    if (__syncthreads_or(bad) && threadIdx.x == 0) st->found_inf = 1;
    cooperative_groups::this_grid().sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) st->cursor += batch;
    if (st->found_inf) {
        hpdl__dp_restore(a, hpdl__dp_kept, P, begin, end);
        hpdl__dp_restore(a, tail, P, tail_begin, tail_end);
    }
    hpdl__mlp_sgd_finish(st, 0);
}

/* A full step's local gradient (gather to the last dW GEMM) captured as a
   graph, for one model (and its parameter buffer), GEMM algorithm, batch of
   `rows` and peer slot its first-layer GEMM posts into (mirror_to: one a
   call parity, or NULL), with what that GEMM posted. Four: two parities,
   and each epoch's short last step. The posting GEMM's captured call differs
   from a later call of its parity only in the sequence number, which the
   GEMM does not read. */
typedef struct hpdl__dp_graph {
    const void *model, *params;
    hpdl_gemm_algo algo;
    int rows;
    void *mirror_to;
    int64_t posted;
    cudaGraphExec_t exec;
} hpdl__dp_graph;
#define HPDL__DP_GRAPHS 4

/* Fields of every hpdl_mpi_dp_cuda_<s> (g: the model, typed). */
#define HPDL__DP_CUDA_FIELDS                                                                                   \
    hpdl_mpi_dp_config cfg;                                                                                    \
    int rank, size;                                                                                            \
    hpdl_mpi_dtype dtype;                                                                                      \
    hpdl_mpi_dp_plan plan;                                                                                     \
    int32_t *d_order;             /* plan.order on the device */                                               \
    int32_t *h_order;             /* pinned copy of plan.order: its upload never blocks the host */             \
    int planned;                  /* epoch whose order d_order holds once the queued copy lands (-1: none) */   \
    int pieces;                   /* row blocks of the first layer's dW (bucketed) */                          \
    int bucketed, span_started;                                                                                \
    hpdl_mpi_bucketer bucketer;   /* per layer l: dW[l] pieces last to first, then db[l] */                    \
    cudaEvent_t *ev;              /* HPDL__DP_EVENTS per timed step (hpdl__dp_timed_slot) */                    \
    int64_t n_ev;                                                                                              \
    hpdl_mpi_ipc *fused;          /* the one-shot's context where reduction and update are one kernel */        \
    hpdl__ipc_args call;          /* fused: this step's one-shot call */                                       \
    void *mirror_to;              /* fused, this step: the first layer's dW in the peer's inbox, or NULL */     \
    int64_t posted;               /* fused, this step: packs of the gradient its GEMM pushed (from the start) */ \
    hpdl__dp_graph graphs[HPDL__DP_GRAPHS]; /* captured local gradients (hpdl__dp_cuda_graph_pass) */           \
    int next_graph, use_graphs;   /* the slot to fill next; 0 once a capture failed: eager steps */           \
    cudaStream_t prev_stream      /* the hpdl_mpi stream before create, restored by destroy */

/* First row of piece p of k rows in `pieces` blocks, equal or each half the
   one before (halving: rows k (1 - 2^-p) / (1 - 2^-pieces)); multiples of 64
   keep every block's pointers aligned for the GEMM kernels' vector loads. */
HPDL_MPI_API int hpdl__dp_piece_row(int k, int pieces, int halving, int p) {
    if (p >= pieces) return k;
    if (halving) return (int)(k * (1.0 - ldexp(1.0, -p)) / (1.0 - ldexp(1.0, -pieces))) & ~63;
    return (int)((int64_t)k * p / pieces) & ~63;
}

/* Index of layer l's first bucketer tensor. */
template <typename D> static inline int hpdl__dp_tensor_base(const D *dp, int l) {
    return l == 0 ? 0 : dp->pieces + 1 + 2 * (l - 1);
}

template <typename D, typename M> static inline void hpdl__dp_cuda_destroy(D *dp) {
    int64_t i;
    if (!dp) return;
    hpdl_mpi_bucketer_destroy(&dp->bucketer);
    for (i = 0; i < HPDL__DP_GRAPHS; i++)
        if (dp->graphs[i].exec) cudaGraphExecDestroy(dp->graphs[i].exec);
    for (i = 0; dp->ev && i < dp->n_ev; i++)
        if (dp->ev[i]) cudaEventDestroy(dp->ev[i]);
    HPDL_FREE(dp->ev);
    hpdl_cuda_free(dp->d_order);
    hpdl_cuda_free_pinned(dp->h_order);
    hpdl_mpi_dp_plan_destroy(&dp->plan);
    hpdl_mpi_set_stream(dp->prev_stream);
    memset(dp, 0, sizeof *dp);
}

/* The bucketer, its NCCL communicator capped at cfg.nccl_max_ctas CTAs and
   its stream at cfg.comm_priority; the library-wide settings are restored. */
template <typename D, typename M> static inline hpdl_status hpdl__dp_cuda_bucketer(D *dp, M *g) {
    void *tensors[2 * HPDL_MLP_MAX_LAYERS + HPDL_MPI_DP_MAX_PIECES];
    int64_t counts[2 * HPDL_MLP_MAX_LAYERS + HPDL_MPI_DP_MAX_PIECES];
    int l, p, t = 0, old_ctas = hpdl__mpi_settings_get()->nccl_max_ctas;
    int old_priority = hpdl_mpi_set_bucket_priority(dp->cfg.comm_priority);
    hpdl_status s;
    for (l = 0; l < g->n_layers; l++) {
        int k = g->widths[l], n = g->widths[l + 1], pieces = l == 0 ? dp->pieces : 1;
        for (p = pieces - 1; p >= 0; p--) {
            int r0 = hpdl__dp_piece_row(k, pieces, dp->cfg.pieces_halving, p);
            int r1 = hpdl__dp_piece_row(k, pieces, dp->cfg.pieces_halving, p + 1);
            tensors[t] = g->dW[l] + (size_t)r0 * n;
            counts[t++] = (int64_t)(r1 - r0) * n;
        }
        tensors[t] = g->db[l];
        counts[t++] = n;
    }
    hpdl_mpi_set_nccl_max_ctas(dp->cfg.nccl_max_ctas); /* HPDL_ERR_UNSUPPORTED before NCCL 2.17: no cap */
    s = hpdl_mpi_bucketer_create(&dp->bucketer, tensors, counts, t, dp->dtype,
                                 dp->cfg.bucket_bytes ? dp->cfg.bucket_bytes : HPDL_MPI_DP_BUCKET_BYTES, 0,
                                 dp->cfg.algo, dp->cfg.comm);
    hpdl_mpi_set_nccl_max_ctas(old_ctas);
    hpdl_mpi_set_bucket_priority(old_priority);
    return s;
}

template <typename D, typename M> static inline hpdl_status hpdl__dp_cuda_alloc(D *dp, M *g, int64_t n) {
    int64_t i;
    hpdl_status s = hpdl_mpi_dp_plan_create(&dp->plan, n, dp->cfg.batch, dp->rank, dp->size);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dp->d_order, (size_t)dp->plan.local * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_alloc_pinned((void **)&dp->h_order, (size_t)dp->plan.local * sizeof(int32_t));
    if (s != HPDL_OK) return s;
    dp->n_ev = HPDL__DP_EVENTS * hpdl__dp_timed_steps(dp->plan.steps);
    dp->ev = (cudaEvent_t *)hpdl_alloc((size_t)dp->n_ev, sizeof(cudaEvent_t));
    if (!dp->ev) return HPDL_ERR_NOMEM;
    memset(dp->ev, 0, (size_t)dp->n_ev * sizeof(cudaEvent_t));
    for (i = 0; i < dp->n_ev; i++) HPDL_CUDA_TRY(cudaEventCreate(&dp->ev[i]));
    (void)g;
    return HPDL_OK;
}

/* Grid of hpdl__dp_reduce_sgd_kernel over count elements: as an IPC
   kernel's, but up to one block on every SM, not the context's limit (it
   reads no flags, so its grid need not fit them; cooperative, so its blocks
   are all resident). */
template <typename C> static inline unsigned hpdl__dp_fused_blocks(int64_t count) {
    int sms = 1;
    if (hpdl__sm_count(&sms) != HPDL_OK) sms = 1;
    return hpdl__ipc_grid(count, sizeof(C), sms);
}

/* Whether hpdl__dp_reduce_sgd_kernel can run on the gradient and the
   parameters (count elements each): both 16-byte aligned, one call of the
   one-shot (a slot), every block's old parameters in its shared memory,
   every block resident together, one an SM (hpdl__dp_fused_blocks). Raises
   the kernel's shared-memory limit to what it needs. */
template <typename C>
static inline int hpdl__dp_kernel_fits(const hpdl_mpi_ipc *ipc, const C *grads, const C *params, int64_t count) {
#ifdef HPDL_MPI_NO_IPC
    (void)ipc; (void)grads; (void)params; (void)count;
    return 0;
#else
    const unsigned blocks = hpdl__dp_fused_blocks<C>(count);
    const int64_t packs = hpdl__ipc_packs(count, sizeof(C));
    /* hpdl__dp_kept_packs for any split: at most 15 more than an even share */
    const size_t most = (size_t)((packs + blocks - 1) / blocks + 15) * sizeof(hpdl__ipc_pack);
    int device = 0, optin = 0, per_sm = 0;
    if ((uintptr_t)grads % 16 || (uintptr_t)params % 16 || (size_t)count * sizeof(C) > ipc->slot_bytes) return 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        most > (size_t)optin ||
        cudaFuncSetAttribute(hpdl__dp_reduce_sgd_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)most) !=
            cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hpdl__dp_reduce_sgd_kernel<C>, HPDL__IPC_THREADS, most) !=
            cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return per_sm >= 1;
#endif
}

/* Collective: makes dp->fused the IPC context where the reduction the
   driver would run is the one-shot on it and hpdl__dp_reduce_sgd_kernel
   can run (hpdl__dp_kernel_fits), on every rank; else leaves it NULL. */
template <typename D, typename M> static inline hpdl_status hpdl__dp_cuda_fuse(D *dp, M *g) {
    hpdl_allreduce_algo algo = dp->cfg.algo;
    size_t bytes = (size_t)g->n_params * hpdl_mpi_dtype_size(dp->dtype);
    hpdl_mpi_ipc *ipc = NULL;
    int ok = 0, all = 0;
    if (dp->size > 1 && (algo == HPDL_ALLREDUCE_IPC_ONESHOT || algo == HPDL_ALLREDUCE_AUTO) &&
        hpdl__mpi_resolve(&algo, bytes, dp->dtype, 1, dp->cfg.comm) == HPDL_OK &&
        algo == HPDL_ALLREDUCE_IPC_ONESHOT && hpdl__mpi_ipc_cached(dp->cfg.comm, 0, &ipc) == HPDL_OK)
        ok = hpdl__dp_kernel_fits(ipc, g->grads, g->params, g->n_params);
    HPDL__MPI_TRY(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, dp->cfg.comm));
    dp->fused = all ? ipc : NULL;
    return HPDL_OK;
}

/* Collective: see hpdl_mpi_dp_cuda_create_<s>. */
template <typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_create(D *dp, M *g, int64_t n_train, const hpdl_mpi_dp_config *cfg,
                                               hpdl_mpi_dtype dtype) {
    D made;
    hpdl_status s = HPDL_OK;
    if (!cfg || cfg->comm == MPI_COMM_NULL) return HPDL_ERR_INVALID;
    if (!dp || !g || !g->params || !hpdl__dp_config_ok(cfg) || n_train < 1 || n_train > INT32_MAX ||
        cfg->batch > g->max_batch)
        s = HPDL_ERR_INVALID;
    else if (g->amp)
        s = HPDL_ERR_UNSUPPORTED; /* per-rank loss scales would disagree */
    s = hpdl__dp_agree(s, cfg->comm);
    if (s != HPDL_OK) return s;
    memset(&made, 0, sizeof made);
    made.cfg = *cfg;
    made.dtype = dtype;
    made.pieces = cfg->overlap && cfg->first_layer_pieces > 1 ? cfg->first_layer_pieces : 1;
    made.bucketed = cfg->overlap;
    made.planned = -1;
    made.use_graphs = 1;
    MPI_Comm_rank(cfg->comm, &made.rank);
    MPI_Comm_size(cfg->comm, &made.size);
    made.prev_stream = hpdl__mpi_settings_get()->stream;
    hpdl_mpi_set_stream(g->stream); /* collectives order after the model's work */
    s = hpdl__dp_agree(hpdl__dp_cuda_alloc(&made, g, n_train), cfg->comm);
    if (s == HPDL_OK) s = hpdl_mpi_bcast(g->params, g->n_params, dtype, 0, cfg->comm);
    if (s == HPDL_OK && cfg->overlap) s = hpdl__dp_cuda_bucketer(&made, g);
    if (s == HPDL_OK && !cfg->overlap && !cfg->separate_update) s = hpdl__dp_cuda_fuse(&made, g);
    if (s == HPDL_OK)
        s = hpdl__dp_agree(cudaStreamSynchronize(g->stream) == cudaSuccess ? HPDL_OK : HPDL_ERR_CUDA, cfg->comm);
    if (s != HPDL_OK) { hpdl__dp_cuda_destroy<D, M>(&made); return s; }
    *dp = made;
    return HPDL_OK;
}

/* The first layer's dW as one padded mma kernel that stores C from its
   staged tile (hpdl__gemm_auto_mirrored), each tile also posted into this
   rank's slot of the peer's inbox (dp->mirror_to) where there is one, and
   the rest of the gradient with them (hpdl__ipc_mirror): the fused step's
   kernel then has every pack to sum and none to push. With no
   peer to post to (one rank, a separate update) the same kernel runs
   without the posts, so E compares a 2-GPU step with a 1-GPU step of the
   same GEMM. HPDL_ERR_UNSUPPORTED (nothing launched) where AUTO would not
   run it as one padded mma kernel. */
template <typename C, typename D, typename M> static inline hpdl_status hpdl__dp_cuda_first_dw(D *dp, M *g, int batch) {
    const int k = g->widths[0], n = g->widths[1];
    hpdl_status s;
    if (g->algo != HPDL_GEMM_AUTO) return HPDL_ERR_UNSUPPORTED;
    if (!dp->mirror_to)
        return hpdl__gemm_auto_mirrored(HPDL_TRANS, HPDL_NO_TRANS, k, n, batch, (const C *)g->A[0], k,
                                        (const C *)g->D[0], n, (C *)g->dW[0], n, hpdl__gemm_staged_stores(), g->stream);
#ifdef HPDL_MPI_NO_IPC
    (void)s;
    return HPDL_ERR_UNSUPPORTED; /* not reached: no context is made */
#else
    hpdl__ipc_mirror<C> mirror;
    mirror.to = (C *)dp->mirror_to;
    mirror.from = (const C *)g->grads;
    mirror.a = dp->call;
    mirror.rest = (int64_t)k * n * (int64_t)sizeof(C) / 16;
    mirror.end = hpdl__ipc_packs(g->n_params, sizeof(C));
    s = hpdl__gemm_auto_mirrored(HPDL_TRANS, HPDL_NO_TRANS, k, n, batch, (const C *)g->A[0], k, (const C *)g->D[0], n,
                                 (C *)g->dW[0], n, mirror, g->stream);
    if (s == HPDL_OK) dp->posted = mirror.end;
    return s;
#endif
}

/* hpdl__cmlp_backward with hand-offs: layer l's db goes to the bucketer
   before its dW is queued, each row block of dW (the first layer's in
   dp->pieces blocks) as soon as it is queued. */
template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_backward(D *dp, M *g, int batch, int mark, cudaEvent_t first_bucket) {
    int l, p;
    hpdl_status s = hpdl__cmlp_output_db<C>(g, batch);
    for (l = g->n_layers - 1; l >= 0 && s == HPDL_OK; l--) {
        int k = g->widths[l], pieces = l == 0 ? dp->pieces : 1, t = hpdl__dp_tensor_base(dp, l);
        if (mark) s = hpdl_mpi_bucketer_ready(&dp->bucketer, t + pieces);
        for (p = 0; p < pieces && s == HPDL_OK; p++) {
            s = l == 0 && pieces == 1 ? hpdl__dp_cuda_first_dw<C>(dp, g, batch) : HPDL_ERR_UNSUPPORTED;
            if (s == HPDL_ERR_UNSUPPORTED)
                s = hpdl__cmlp_backward_dw<C>(g, batch, l, hpdl__dp_piece_row(k, pieces, dp->cfg.pieces_halving, p),
                                              hpdl__dp_piece_row(k, pieces, dp->cfg.pieces_halving, p + 1));
            if (s == HPDL_OK && mark) s = hpdl_mpi_bucketer_ready(&dp->bucketer, t + pieces - 1 - p);
            if (s == HPDL_OK && mark && !dp->span_started && dp->bucketer.next_launch > 0) {
                dp->span_started = 1; /* the first bucket starts from this point of the stream */
                if (first_bucket) HPDL_CUDA_TRY(cudaEventRecord(first_bucket, g->stream));
            }
        }
        if (s == HPDL_OK && l > 0) s = hpdl__cmlp_backward_delta<C>(g, batch, l);
    }
    return s;
}

/* Gather, forward, loss and backward of `rows` rows. */
template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_pass(D *dp, M *g, int rows, int mark, cudaEvent_t first_bucket) {
    hpdl_status s = hpdl__cmlp_gather<C>(g, rows);
    if (s == HPDL_OK) s = hpdl__cmlp_forward<C>(g, rows);
    if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, rows, 1);
    return s == HPDL_OK ? hpdl__dp_cuda_backward<C>(dp, g, rows, mark, first_bucket) : s;
}

/* hpdl__dp_cuda_pass replayed from a graph (hpdl__dp_graph), as the
   single-GPU trainer replays its steps: launched one by one, the step's
   kernels leave about 1 us idle between each two (an H200 at 512 rows a
   GPU: 10 kernels, 11.5 of 136 us a step). The first pass of a kind runs
   eagerly (it also warms up what the GEMMs set up lazily), then is captured
   for the next. Its gather reads the device's cursor, so every replay takes
   the next rows. */
template <typename C, typename D, typename M> static inline hpdl_status hpdl__dp_cuda_graph_pass(D *dp, M *g, int rows) {
    hpdl__dp_graph *slot = &dp->graphs[dp->next_graph];
    cudaGraphExec_t exec;
    int64_t posted;
    hpdl_status s;
    int k;
    for (k = 0; k < HPDL__DP_GRAPHS; k++) {
        const hpdl__dp_graph *x = &dp->graphs[k];
        if (x->exec && x->model == (const void *)g && x->params == (const void *)g->params && x->algo == g->algo &&
            x->rows == rows && x->mirror_to == dp->mirror_to) {
            HPDL_CUDA_TRY(cudaGraphLaunch(x->exec, g->stream));
            dp->posted = x->posted;
            return HPDL_OK;
        }
    }
    if ((s = hpdl__dp_cuda_pass<C>(dp, g, rows, 0, NULL)) != HPDL_OK) return s;
    posted = dp->posted;
    if (!hpdl__record_graph(g->stream, [&] { return hpdl__dp_cuda_pass<C>(dp, g, rows, 0, NULL); }, &exec) ||
        dp->posted != posted) {
        dp->use_graphs = 0;
        return HPDL_OK;
    }
    if (slot->exec) cudaGraphExecDestroy(slot->exec);
    slot->model = g;
    slot->params = g->params;
    slot->algo = g->algo;
    slot->rows = rows;
    slot->mirror_to = dp->mirror_to;
    slot->posted = posted;
    slot->exec = exec;
    dp->next_graph = (dp->next_graph + 1) % HPDL__DP_GRAPHS;
    return HPDL_OK;
}

/* This rank's gradient for a step in g->grads (see the CPU twin): from a
   graph where the step is a plain one (no buckets, nothing rescaled). */
template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_local_grad(D *dp, M *g, int rows, int global_rows, cudaEvent_t first_bucket) {
    double weight = hpdl__dp_grad_weight(rows, global_rows, dp->size);
    hpdl_status s;
    if (rows == 0) {
        HPDL_CUDA_TRY(cudaMemsetAsync(g->grads, 0, (size_t)g->n_params * sizeof(C), g->stream));
        return HPDL_OK;
    }
    if (!dp->bucketed && weight == 1.0 && dp->use_graphs) return hpdl__dp_cuda_graph_pass<C>(dp, g, rows);
    s = hpdl__dp_cuda_pass<C>(dp, g, rows, dp->bucketed && weight == 1.0, first_bucket);
    if (s == HPDL_OK && weight != 1.0) {
        hpdl__dp_scale_kernel<C><<<hpdl__grid_for(g->n_params, 256), 256, 0, g->stream>>>(g->n_params, (C *)g->grads,
                                                                                          (C)weight);
        HPDL_CUDA_TRY_LAUNCH();
    }
    return s;
}

/* Fused: this step's one-shot call on dp->fused, and where the first
   layer's GEMM posts the gradient (two ranks, a step whose gradient is not
   rescaled after backward, dW[0] first in the gradient in whole packs;
   else mirror_to is NULL and the kernel pushes all of the gradient). */
template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_fused_call(D *dp, M *g, int rows, int global_rows) {
    hpdl_mpi_ipc *c = dp->fused;
    const int64_t first = (int64_t)g->widths[0] * g->widths[1];
    dp->call = hpdl__mpi_ipc_next_call(c, g->grads, g->n_params, 0);
    dp->posted = 0;
    dp->mirror_to = NULL;
    if (c->size == 2 && rows > 0 && hpdl__dp_grad_weight(rows, global_rows, dp->size) == 1.0 && g->dW[0] == g->grads &&
        first * (int64_t)sizeof(C) % 16 == 0)
        dp->mirror_to = hpdl__ipc_slot(dp->call, 1 - c->rank, c->rank);
    return hpdl__mpi_ipc_order(c, g->stream);
}

/* Fused: the reduction and the update, hpdl__dp_reduce_sgd_kernel on the
   model's stream (cooperative: its grid-wide barrier needs every block
   resident, one an SM, which hpdl__dp_cuda_fuse checked). */
template <typename C, typename D, typename M> static inline hpdl_status hpdl__dp_cuda_reduce_update(D *dp, M *g, int rows) {
#ifdef HPDL_MPI_NO_IPC
    (void)dp; (void)g; (void)rows;
    return HPDL_ERR_UNSUPPORTED; /* not reached: no context is made */
#else
    const C *grads = g->grads;
    C *params = g->params;
    int64_t n_w = g->n_weights;
    hpdl__mlp_state *st = g->state;
    void *args[] = {&dp->call, (void *)&grads, &dp->posted, &params, &n_w, &st, &rows};
    const unsigned blocks = hpdl__dp_fused_blocks<C>(g->n_params);
    const size_t kept = (size_t)hpdl__dp_kept_packs(hpdl__ipc_packs(g->n_params, sizeof(C)), dp->posted, (int)blocks);
    HPDL_CUDA_TRY(cudaLaunchCooperativeKernel((const void *)hpdl__dp_reduce_sgd_kernel<C>, blocks, HPDL__IPC_THREADS, args,
                                              kept * sizeof(hpdl__ipc_pack), g->stream));
    HPDL_CUDA_TRY(cudaEventRecord(dp->fused->last_done, g->stream));
    return HPDL_OK;
#endif
}

/* One step, all of it queued on g->stream (the reduction too, with NCCL
   and IPC); a timed step (hpdl__dp_timed_slot) records its events. Fused,
   events 2 and 3 both follow the one kernel that reduces and updates: its
   time counts as communication. */
template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_step(D *dp, M *g, int64_t step, int rows, int global_rows, double lr,
                                             int lr_changed) {
    const int64_t slot = hpdl__dp_timed_slot(step, dp->plan.steps);
    cudaEvent_t *ev = slot >= 0 ? dp->ev + HPDL__DP_EVENTS * slot : NULL;
    int P = dp->size;
    hpdl_status s = HPDL_OK;
    dp->span_started = 0;
    if (ev) HPDL_CUDA_TRY(cudaEventRecord(ev[0], g->stream));
    if (lr_changed) s = hpdl__mlp_begin(g->state, lr / P, dp->cfg.l2 * P, 0, 0, g->stream);
    if (s == HPDL_OK && dp->fused) s = hpdl__dp_cuda_fused_call<C>(dp, g, rows, global_rows);
    HPDL_NVTX_PUSH("DP local gradient");
    if (s == HPDL_OK) s = hpdl__dp_cuda_local_grad<C>(dp, g, rows, global_rows, ev ? ev[4] : NULL);
    HPDL_NVTX_POP();
    if (ev) HPDL_CUDA_TRY(cudaEventRecord(ev[1], g->stream));
    HPDL_NVTX_PUSH("DP gradient reduction");
    if (s == HPDL_OK && dp->bucketed) {
        if (ev && !dp->span_started) HPDL_CUDA_TRY(cudaEventRecord(ev[4], g->stream));
        s = hpdl_mpi_bucketer_wait(&dp->bucketer);
        if (ev)
            HPDL_CUDA_TRY(cudaEventRecord(ev[5], dp->bucketer.mode == HPDL__BUCKET_NCCL ? dp->bucketer.side : g->stream));
    } else if (s == HPDL_OK && dp->fused) {
        s = hpdl__dp_cuda_reduce_update<C>(dp, g, rows);
    } else if (s == HPDL_OK) {
        s = hpdl_mpi_allreduce(g->grads, g->n_params, dp->dtype, dp->cfg.algo, dp->cfg.comm);
    }
    HPDL_NVTX_POP();
    if (ev) HPDL_CUDA_TRY(cudaEventRecord(ev[2], g->stream));
    HPDL_NVTX_PUSH("DP update");
    if (s == HPDL_OK && !dp->fused) s = hpdl__cmlp_update<C>(g, rows);
    HPDL_NVTX_POP();
    if (ev) HPDL_CUDA_TRY(cudaEventRecord(ev[3], g->stream));
    return s;
}

/* Seconds between two recorded, completed events. */
HPDL_MPI_API double hpdl__dp_elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) { cudaGetLastError(); return 0.0; }
    return 1e-3 * ms;
}

/* times[1..3] += compute, exposed communication and reduction span of the
   epoch: the timed steps' sums, scaled to all steps. */
template <typename D> static inline void hpdl__dp_cuda_times(const D *dp, double *times) {
    const double scale = hpdl__dp_timed_scale(dp->plan.steps);
    int64_t k;
    for (k = 0; k < hpdl__dp_timed_steps(dp->plan.steps); k++) {
        const cudaEvent_t *ev = dp->ev + HPDL__DP_EVENTS * k;
        double comm;
        comm = scale * hpdl__dp_elapsed(ev[1], ev[2]);
        times[1] += scale * (hpdl__dp_elapsed(ev[0], ev[1]) + hpdl__dp_elapsed(ev[2], ev[3]));
        times[2] += comm;
        times[3] += dp->bucketed ? scale * hpdl__dp_elapsed(ev[4], ev[5]) : comm;
    }
}

/* Elements the bucketer reduces per step (no padding). */
template <typename D> static inline int64_t hpdl__dp_bucketed_count(const D *dp) {
    int64_t n = 0;
    int i;
    for (i = 0; i < dp->bucketer.ntensors; i++) n += dp->bucketer.counts[i];
    return n;
}

/* Draws epoch `epoch`'s plan on the host and queues its upload to d_order on
   the model's stream, behind the steps already queued there (which read the
   previous order). The pinned source is free again once the epoch's closing
   synchronisation has passed, before anyone writes it next. */
template <typename D, typename M> static inline hpdl_status hpdl__dp_cuda_plan(D *dp, M *g, int epoch) {
    size_t bytes = (size_t)dp->plan.local * sizeof(int32_t);
    hpdl_status s = hpdl_mpi_dp_plan_epoch(&dp->plan, dp->cfg.seed, epoch);
    if (s != HPDL_OK) return s;
    memcpy(dp->h_order, dp->plan.order, bytes);
    HPDL_CUDA_TRY(cudaMemcpyAsync(dp->d_order, dp->h_order, bytes, cudaMemcpyHostToDevice, g->stream));
    dp->planned = epoch;
    return HPDL_OK;
}

template <typename C, typename D, typename M>
static inline hpdl_status hpdl__dp_cuda_epoch(D *dp, M *g, hpdl_cuda_dataset *data, int epoch, hpdl_mpi_dp_stats *out) {
    hpdl_mpi_dp_stats st;
    hpdl__mlp_state h;
    double local[3], times[4] = {0, 0, 0, 0}, t0, lr = 0, prev = 0;
    int64_t s, first = 0;
    int rows = 0, global_rows = 1;
    hpdl_status status = HPDL_OK;
    if (!dp || !dp->d_order || !g || !g->params) return HPDL_ERR_INVALID;
    if (!hpdl__mlp_data_fits(data, g->widths[0], g->widths[g->n_layers]) || !data->resident ||
        data->n != dp->plan.n || epoch < 0)
        status = HPDL_ERR_INVALID;
    status = hpdl__dp_agree(status, dp->cfg.comm);
    if (status != HPDL_OK) return status;
    memset(&st, 0, sizeof st);
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    HPDL__MPI_TRY(MPI_Barrier(dp->cfg.comm));
    t0 = hpdl_time_now();
    /* drawn at the end of the previous call unless epochs come out of order:
       a 60000-sample shuffle is ~0.3 ms of host time with the GPU idle */
    if (dp->planned != epoch) status = hpdl__dp_cuda_plan<D, M>(dp, g, epoch);
    if (status == HPDL_OK) status = hpdl_mpi_dp_lr(&dp->cfg, dp->size, epoch, &lr);
    if (status == HPDL_OK) status = hpdl__mlp_begin(g->state, lr / dp->size, dp->cfg.l2 * dp->size, 1, 0, g->stream);
    if (status == HPDL_OK) status = hpdl__mlp_set_feed(g->state, data->images, 0, data->labels, dp->d_order, 0, g->stream);
    st.lr_first = prev = lr;
    for (s = 0; status == HPDL_OK && s < dp->plan.steps; s++) {
        status = hpdl_mpi_dp_plan_step(&dp->plan, s, &first, &rows, &global_rows);
        if (status == HPDL_OK) status = hpdl_mpi_dp_lr(&dp->cfg, dp->size, epoch + (double)s / dp->plan.steps, &lr);
        if (status == HPDL_OK) status = hpdl__dp_cuda_step<C>(dp, g, s, rows, global_rows, lr, lr != prev);
        prev = lr;
    }
    st.lr_last = lr;
    /* the next epoch's order, drawn while the GPU works through this one */
    if (status == HPDL_OK && epoch < INT_MAX) status = hpdl__dp_cuda_plan<D, M>(dp, g, epoch + 1);
    if (status == HPDL_OK) status = hpdl__mlp_read_state(g->state, &h, g->stream);
    if (status == HPDL_OK && dp->bucketed) HPDL_CUDA_TRY(cudaEventSynchronize(dp->ev[dp->n_ev - 1]));
    times[0] = hpdl_time_now() - t0;
    if (status != HPDL_OK) return hpdl__mpi_finish("hpdl_mpi_dp_cuda_epoch", status, dp->cfg.comm);
    hpdl__dp_cuda_times(dp, times);
    local[0] = h.loss_sum;
    local[1] = (double)h.correct;
    local[2] = (double)dp->plan.local;
    status = hpdl__dp_finish_stats(&st, local, times, dp->plan.steps,
                                   (double)(dp->bucketed ? hpdl__dp_bucketed_count(dp) : g->n_params) *
                                       hpdl_mpi_dtype_size(dp->dtype),
                                   dp->size, dp->cfg.comm);
    if (status == HPDL_OK && out) *out = st;
    /* the ranks skipped the same steps: their reduced gradients are equal */
    if (status == HPDL_OK && h.nonfinite_steps > 0) status = HPDL_ERR_NUMERIC;
    return status;
}

/* hpdl_mpi_dp_cuda_<s>: data-parallel training of a hpdl_cuda_mlp_<s> on GPU ranks; the model stays the
   caller's and is passed to each call. destroy frees what create made (plan, order copies, events,
   bucketer), restores the hpdl_mpi stream of before create and zeroes *dp; a NULL dp is ignored. */
#define HPDL_DEFINE_MPI_DP_CUDA(SUFFIX, T, DTYPE)                                                               \
    typedef struct hpdl_mpi_dp_cuda_##SUFFIX {                                                                  \
        HPDL__DP_CUDA_FIELDS;                                                                                   \
    } hpdl_mpi_dp_cuda_##SUFFIX;                                                                                \
    /* Collective. Trains *g (kept by the caller; f32/f64, not mixed        \
       precision) on a resident data set of n_train samples; rank 0's       \
       parameters are copied to every rank. Sets the hpdl_mpi stream to     \
       g->stream. A bad argument on any rank: every rank gets the error. */                                     \
    HPDL_MPI_API hpdl_status hpdl_mpi_dp_cuda_create_##SUFFIX(hpdl_mpi_dp_cuda_##SUFFIX *dp,                        \
                                                          hpdl_cuda_mlp_##SUFFIX *g, int64_t n_train,           \
                                                          const hpdl_mpi_dp_config *cfg) {                      \
        return hpdl__dp_cuda_create<hpdl_mpi_dp_cuda_##SUFFIX, hpdl_cuda_mlp_##SUFFIX>(dp, g, n_train, cfg,     \
                                                                                       DTYPE);                  \
    }                                                                                                           \
    /* Collective: one epoch over data (resident, n_train rows). Steps with \
       a gradient that is not finite are not applied, on every rank, and   \
       the epoch returns HPDL_ERR_NUMERIC (out filled) on every rank. */                                       \
    HPDL_MPI_API hpdl_status hpdl_mpi_dp_cuda_epoch_##SUFFIX(hpdl_mpi_dp_cuda_##SUFFIX *dp,                         \
                                                         hpdl_cuda_mlp_##SUFFIX *g, hpdl_cuda_dataset *data,    \
                                                         int epoch, hpdl_mpi_dp_stats *out) {                   \
        return hpdl__dp_cuda_epoch<T>(dp, g, data, epoch, out);                                                 \
    }                                                                                                           \
    HPDL_MPI_API void hpdl_mpi_dp_cuda_destroy_##SUFFIX(hpdl_mpi_dp_cuda_##SUFFIX *dp) {                            \
        hpdl__dp_cuda_destroy<hpdl_mpi_dp_cuda_##SUFFIX, hpdl_cuda_mlp_##SUFFIX>(dp);                           \
    }

/* hpdl_mpi_dp_cuda_create_f32 hpdl_mpi_dp_cuda_destroy_f32 hpdl_mpi_dp_cuda_epoch_f32 */
HPDL_DEFINE_MPI_DP_CUDA(f32, float, HPDL_MPI_F32)
/* hpdl_mpi_dp_cuda_create_f64 hpdl_mpi_dp_cuda_destroy_f64 hpdl_mpi_dp_cuda_epoch_f64 */
HPDL_DEFINE_MPI_DP_CUDA(f64, double, HPDL_MPI_F64)

/* Roofline inputs on a GPU rank: P_flops from a 4096^3 f32 cuBLAS GEMM,
   P_pci from 64 MiB pinned host->device copies, P_mpi from allreducing
   grad_count f32 on the device with algo (medians of 5). Collective. */
typedef struct hpdl__dp_gemm_ctx { float *a, *c; int n; } hpdl__dp_gemm_ctx;
HPDL_MPI_API void hpdl__dp_gemm_run(void *ctx, cudaStream_t stream) {
    hpdl__dp_gemm_ctx *x = (hpdl__dp_gemm_ctx *)ctx;
    hpdl_cuda_gemm_algo_f32(HPDL_GEMM_CUBLAS, HPDL_NO_TRANS, HPDL_NO_TRANS, x->n, x->n, x->n, 1.0f, x->a, x->n, x->a,
                            x->n, 0.0f, x->c, x->n, stream);
}
typedef struct hpdl__dp_copy_ctx { void *dst; const void *src; size_t bytes; } hpdl__dp_copy_ctx;
HPDL_MPI_API void hpdl__dp_copy_run(void *ctx, cudaStream_t stream) {
    hpdl__dp_copy_ctx *x = (hpdl__dp_copy_ctx *)ctx;
    cudaMemcpyAsync(x->dst, x->src, x->bytes, cudaMemcpyHostToDevice, stream);
}

HPDL_MPI_API hpdl_status hpdl__dp_time_allreduce(float *d, int64_t count, hpdl_allreduce_algo algo, MPI_Comm comm,
                                             double *median_s) {
    double t[5];
    hpdl_stats st;
    hpdl_status s = HPDL_OK;
    int r;
    for (r = -1; r < 5 && s == HPDL_OK; r++) { /* r = -1: warm-up (NCCL bootstrap) */
        double t0;
        HPDL_CUDA_TRY(cudaDeviceSynchronize());
        HPDL__MPI_TRY(MPI_Barrier(comm));
        t0 = hpdl_time_now();
        s = hpdl_mpi_allreduce(d, count, HPDL_MPI_F32, algo, comm);
        HPDL_CUDA_TRY(cudaDeviceSynchronize());
        if (r >= 0) t[r] = hpdl_time_now() - t0;
    }
    if (s == HPDL_OK) s = hpdl_stats_compute(t, 5, &st);
    if (s == HPDL_OK) *median_s = st.median;
    return s;
}

/* Collective: this GPU rank's roofline inputs into *out, measured as described above. HPDL_ERR_INVALID
   (out NULL or grad_count < 1) or HPDL_ERR_NOMEM on any rank makes every rank return the worst of them;
   *out is written only on success. */
HPDL_MPI_API hpdl_status hpdl_mpi_dp_roofline_cuda(int64_t grad_count, hpdl_allreduce_algo algo, MPI_Comm comm,
                                               hpdl_mpi_dp_roofline *out) {
    const size_t copy_bytes = (size_t)64 << 20;
    hpdl__dp_gemm_ctx gc;
    hpdl__dp_copy_ctx cc;
    float *grad = NULL;
    void *host = NULL, *dev = NULL;
    double gemm_ms = 0, copy_ms = 0, comm_s = 0;
    int p = 1;
    hpdl_status s = HPDL_OK;
    memset(&gc, 0, sizeof gc);
    gc.n = 4096;
    if (!out || grad_count < 1) s = HPDL_ERR_INVALID;
    else if (hpdl_cuda_alloc((void **)&gc.a, sizeof(float) * gc.n * gc.n) ||
             hpdl_cuda_alloc((void **)&gc.c, sizeof(float) * gc.n * gc.n) ||
             hpdl_cuda_alloc((void **)&grad, sizeof(float) * (size_t)grad_count) ||
             hpdl_cuda_alloc(&dev, copy_bytes) || hpdl_cuda_alloc_pinned(&host, copy_bytes))
        s = HPDL_ERR_NOMEM;
    s = hpdl__dp_agree(s, comm);
    HPDL_NVTX_PUSH("roofline rates"); /* a profile can tell these kernels from training's */
    if (s == HPDL_OK && (cudaMemset(gc.a, 0x3c, sizeof(float) * gc.n * gc.n) != cudaSuccess ||
                         cudaMemset(grad, 0, sizeof(float) * (size_t)grad_count) != cudaSuccess))
        s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) {
        memset(host, 1, copy_bytes);
        cc.dst = dev;
        cc.src = host;
        cc.bytes = copy_bytes;
        s = hpdl_cuda_time_median_ms(hpdl__dp_gemm_run, &gc, 0, 1, 5, NULL, &gemm_ms);
    }
    if (s == HPDL_OK) s = hpdl_cuda_time_median_ms(hpdl__dp_copy_run, &cc, 0, 1, 5, NULL, &copy_ms);
    if (s == HPDL_OK) s = hpdl__dp_time_allreduce(grad, grad_count, algo, comm, &comm_s);
    if (s == HPDL_OK) {
        MPI_Comm_size(comm, &p);
        out->p_flops = 2.0 * gc.n * gc.n * gc.n / (1e-3 * gemm_ms);
        out->p_pci = copy_bytes / (1e-3 * copy_ms);
        out->p_mpi = hpdl_mpi_busbw(4.0 * grad_count, comm_s, p);
        out->p_mpi_algbw = p > 1 ? hpdl_mpi_algbw(4.0 * grad_count, comm_s) : 0.0;
    }
    HPDL_NVTX_POP();
    hpdl_cuda_free(gc.a); hpdl_cuda_free(gc.c); hpdl_cuda_free(grad); hpdl_cuda_free(dev);
    hpdl_cuda_free_pinned(host);
    return s;
}
#endif /* __CUDACC__ */

/* ------------------------------------------------------------------------ */
/* Tensor-parallel MLP training                                               */
/* ------------------------------------------------------------------------ */
/* Model (tensor) parallelism for the one-hidden-layer MLP in -> H -> C, the
   course's alternative to data parallelism. Every rank trains on the same
   batch: the data set is on every rank and the batch order is keyed by
   (seed, epoch) as in hpdl_mpi_dp, so no sample is ever sent. Rank r owns
   hidden units [h0, h1) = hpdl_mpi_shard_range(H, r, P): columns h0..h1 of
   W[0] and b[0], rows h0..h1 of W[1] (hpdl stores W as in x out, so these
   are the course's "rows of W1, columns of W2"); b[1] is replicated. With
   X the batch, A_r the rank's slice of the hidden layer and D = dloss/dZ:

       forward   A_r = act(X·W0[:, r] + b0[r])          batch x h_r
                 Z_r = A_r·W1[r, :]                      batch x C, partial logits
                 Z   = sum over ranks of Z_r, + b1       the ONE allreduce of a step
                 loss and D = (softmax(Z) - onehot)/batch, the same on every rank
       backward  dW1[r, :] = A_r^T·D     db1 = column sums of D (replicated)
                 dA_r = (D·W1[r, :]^T) * act'(A_r)
                 dW0[:, r] = X^T·dA_r    db0[r] = column sums of dA_r
       update    the SGD of hpdl_mlp_sgd_<s> (lr; l2 on weights), slice by slice.

   Why one allreduce suffices: Z = sum_j A[:, j] W1[j, :] is a sum over
   hidden units, so splitting them over ranks splits Z into partial sums.
   After Z everything is either replicated (loss, D, db1, b1's update) or
   belongs to one hidden unit j and so to the rank that owns j: column j of
   A, W0, b0, dA and row j of W1 only meet D, which every rank has. The
   backward pass of a Megatron column/row pair needs a second allreduce, of
   the gradient of the pair's input; here that input is the data X, whose
   gradient nobody needs. Deeper MLPs are refused (HPDL_ERR_UNSUPPORTED):
   each further pair would add an allreduce forward and one backward.

   Bytes per step: batch x C x sizeof(T), against hpdl_mpi_dp's gradient of
   ((in + 1) x H + (H + 1) x C) x sizeof(T). Tensor parallelism sends less
   when batch x C < the parameter count, and its bytes do not grow with H.
   Every rank holds 1/P of the hidden layer's weights and activations but
   computes the whole softmax; with H not divisible by P some ranks own one
   unit more, and with P > H some own none (they send zeros). */

/* Settings of the tensor-parallel MLP drivers (hpdl_mpi_tp_<s>, hpdl_mpi_tp_cuda_f32), read by their
   create; start from hpdl_mpi_tp_config_default. */
typedef struct hpdl_mpi_tp_config {
    int batch;                /* rows per step, the same rows on every rank */
    hpdl_allreduce_algo algo; /* MPI or RING (host buffers) */
    double lr, l2;            /* as hpdl_mlp_train_step_<s> */
    uint64_t seed;            /* epoch permutations (hpdl_mpi_epoch_permutation) */
    MPI_Comm comm;
} hpdl_mpi_tp_config;

/* What an epoch reports. Bytes are counted as the driver hands them to the
   allreduce (the buffer, as hpdl_mpi_dp_stats.grad_bytes; a ring moves
   2(P-1)/P of that per rank); times are the slowest rank's. */
typedef struct hpdl_mpi_tp_stats {
    int64_t steps, samples;
    double loss, accuracy;   /* mean training loss, running accuracy of the steps' forward passes */
    double epoch_s;          /* wall time of the epoch */
    double compute_s;        /* gather, forward, loss, backward, update */
    double comm_s;           /* inside the allreduce, waiting for the slowest rank included (the GPU
                                driver times the steps hpdl__dp_timed_slot picks and scales their sum) */
    int64_t allreduces;      /* collectives the steps made: one per step */
    double step_bytes;       /* bytes of the largest step's allreduce: batch x classes x sizeof(T) */
    double epoch_bytes;      /* bytes allreduced over the epoch (the short last step sends less) */
    double dp_grad_bytes;    /* what hpdl_mpi_dp_<s> allreduces per step for the same model */
    double algbw, busbw;     /* epoch_bytes / comm_s, and as a bandwidth-optimal allreduce's link load */
} hpdl_mpi_tp_stats;

/* This rank's share of the model: in -> hidden -> classes, hidden units
   [h0, h0 + h) (h may be 0 when there are more ranks than hidden units). */
typedef struct hpdl_mpi_tp_shape {
    int in, hidden, classes, h0, h;
    hpdl_activation act;
} hpdl_mpi_tp_shape;

/* Fills *c with the defaults: batch 128, HPDL_ALLREDUCE_MPI, lr 0.05, no L2, seed 1, MPI_COMM_WORLD. A
   NULL c is ignored. */
HPDL_MPI_API void hpdl_mpi_tp_config_default(hpdl_mpi_tp_config *c) {
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->batch = 128;
    c->algo = HPDL_ALLREDUCE_MPI;
    c->lr = 0.05;
    c->seed = 1;
    c->comm = MPI_COMM_WORLD;
}

HPDL_MPI_API int hpdl__tp_config_ok(const hpdl_mpi_tp_config *c) {
    return c && c->batch >= 1 && hpdl__mpi_algo_valid(c->algo) && hpdl__hyper_ok(c->lr, c->l2) &&
           c->comm != MPI_COMM_NULL;
}

/* Rank r's hidden units [*h0, *h0 + *h): hpdl_mpi_shard_range of hidden. */
HPDL_MPI_API void hpdl__tp_units(int hidden, int r, int size, int *h0, int *h) {
    *h0 = (int)hpdl__mpi_split_begin(hidden, r, size);
    *h = (int)hpdl__mpi_split_begin(hidden, r + 1, size) - *h0;
}

/* Elements of a slice of h hidden units, laid out [W0 in x h | b0 h | W1 h x classes]. */
HPDL_MPI_API int64_t hpdl__tp_slice_count(const hpdl_mpi_tp_shape *sh, int h) {
    return (int64_t)h * (sh->in + 1 + sh->classes);
}

HPDL_MPI_API double hpdl__tp_dp_grad_bytes(const hpdl_mpi_tp_shape *sh, size_t elem) {
    return ((double)(sh->in + 1) * sh->hidden + (double)(sh->hidden + 1) * sh->classes) * (double)elem;
}

/* Collective: the worst status over the ranks, or HPDL_ERR_INVALID when
   the ranks' values v[0..n) differ (n <= 16). Compares MAX(v) with
   MIN(v) = ~MAX(~v), which, unlike -v, cannot overflow. */
HPDL_MPI_API hpdl_status hpdl__tp_agree(hpdl_status s, const int64_t *v, int n, MPI_Comm comm) {
    int64_t mine[33], top[33];
    int i;
    mine[0] = (int64_t)s;
    for (i = 0; i < n; i++) { mine[1 + i] = v[i]; mine[1 + n + i] = ~v[i]; }
    HPDL__MPI_TRY(MPI_Allreduce(mine, top, 1 + 2 * n, MPI_INT64_T, MPI_MAX, comm));
    for (i = 0; i < n; i++)
        if (top[1 + i] != ~top[1 + n + i]) return top[0] != HPDL_OK ? (hpdl_status)top[0] : HPDL_ERR_INVALID;
    return (hpdl_status)top[0];
}

/* A double as an int64_t for hpdl__tp_agree (same bits, same value). */
HPDL_MPI_API int64_t hpdl__tp_bits(double x) {
    int64_t v;
    memcpy(&v, &x, sizeof v);
    return v;
}

/* Hidden units [h0, h0 + h) of a full model's W0 (in x hidden), b0 and W1
   (hidden x classes) to a slice [W0 in x h | b0 h | W1 h x classes]
   (get), and back (put). elem: bytes per element. */
HPDL_MPI_API void hpdl__tp_slice_get(const hpdl_mpi_tp_shape *sh, int h0, int h, const void *W0, const void *b0,
                                 const void *W1, void *slice, size_t elem) {
    char *s = (char *)slice;
    size_t nw0 = (size_t)sh->in * h * elem, nb = (size_t)h * elem;
    hpdl__copy_rows(s, h, (const char *)W0 + (size_t)h0 * elem, sh->hidden, sh->in, h, elem);
    memcpy(s + nw0, (const char *)b0 + (size_t)h0 * elem, nb);
    memcpy(s + nw0 + nb, (const char *)W1 + (size_t)h0 * sh->classes * elem, (size_t)h * sh->classes * elem);
}

HPDL_MPI_API void hpdl__tp_slice_put(const hpdl_mpi_tp_shape *sh, int h0, int h, const void *slice, void *W0, void *b0,
                                 void *W1, size_t elem) {
    const char *s = (const char *)slice;
    size_t nw0 = (size_t)sh->in * h * elem, nb = (size_t)h * elem;
    hpdl__copy_rows((char *)W0 + (size_t)h0 * elem, sh->hidden, s, h, sh->in, h, elem);
    memcpy((char *)b0 + (size_t)h0 * elem, s + nw0, nb);
    memcpy((char *)W1 + (size_t)h0 * sh->classes * elem, s + nw0 + nb, (size_t)h * sh->classes * elem);
}

/* Collective: every rank's slice (the first hpdl__tp_slice_count elements
   of its params) into all[], rank after rank, which is hidden-unit order;
   then all[] into the full model's W0, b0, W1. counts, displs: size ints.
   The caller has checked that the whole model's count fits in an int. */
HPDL_MPI_API hpdl_status hpdl__tp_allgather(const hpdl_mpi_tp_shape *sh, const void *mine, void *all, hpdl_mpi_dtype t,
                                        int *counts, int *displs, int rank, int size, MPI_Comm comm) {
    MPI_Datatype type;
    int r;
    if (!hpdl__mpi_datatype(t, &type)) return HPDL_ERR_UNSUPPORTED;
    for (r = 0; r < size; r++) {
        int h0, h;
        hpdl__tp_units(sh->hidden, r, size, &h0, &h);
        counts[r] = (int)hpdl__tp_slice_count(sh, h);
        displs[r] = (int)hpdl__tp_slice_count(sh, h0);
    }
    HPDL__MPI_TRY(MPI_Allgatherv(mine, counts[rank], type, all, counts, displs, type, comm));
    return HPDL_OK;
}

HPDL_MPI_API void hpdl__tp_unpack(const hpdl_mpi_tp_shape *sh, const void *all, void *W0, void *b0, void *W1, int size,
                              size_t elem) {
    int r;
    for (r = 0; r < size; r++) {
        int h0, h;
        const char *slice;
        hpdl__tp_units(sh->hidden, r, size, &h0, &h);
        slice = (const char *)all + (size_t)hpdl__tp_slice_count(sh, h0) * elem;
        hpdl__tp_slice_put(sh, h0, h, slice, W0, b0, W1, elem);
    }
}

/* The step's one collective: the in-place sum of the partial logits. The
   arguments were agreed when the driver was made and each epoch began, and
   every rank takes count from the same plan, so this skips the agreement
   round of hpdl_mpi_allreduce (a second, small allreduce every step). */
HPDL_MPI_API hpdl_status hpdl__tp_allreduce(void *buf, int64_t count, hpdl_mpi_dtype t, const hpdl_mpi_tp_config *cfg,
                                        int size) {
    if (size == 1 || count == 0) return HPDL_OK;
    return hpdl__mpi_finish("hpdl_mpi_tp_epoch", hpdl__mpi_allreduce_run(buf, count, t, cfg->algo, 0, cfg->comm),
                            cfg->comm);
}

/* Collective: the rank's counters become the epoch's stats; times[] =
   {epoch, compute, comm} are maxed over the ranks. Loss and hits come from
   logits that the allreduce made identical on every rank. */
HPDL_MPI_API hpdl_status hpdl__tp_finish_stats(hpdl_mpi_tp_stats *st, const double *times, int size, MPI_Comm comm) {
    double maxes[3];
    HPDL__MPI_TRY(MPI_Allreduce((void *)times, maxes, 3, MPI_DOUBLE, MPI_MAX, comm));
    st->epoch_s = maxes[0];
    st->compute_s = maxes[1];
    st->comm_s = maxes[2];
    st->algbw = size > 1 && maxes[2] > 0 ? hpdl_mpi_algbw(st->epoch_bytes, maxes[2]) : 0.0;
    st->busbw = size > 1 && maxes[2] > 0 ? hpdl_mpi_busbw(st->epoch_bytes, maxes[2], size) : 0.0;
    return HPDL_OK;
}

/* hpdl_mpi_tp_<s> as the type-independent functions below see it: the same
   members in the same order with untyped buffers, a byte copy of the typed
   struct (as hpdl__mlp_any is of hpdl_mlp_<s>). */
typedef struct hpdl__mpi_tp_any {
    hpdl_mpi_tp_config cfg;
    int rank, size;
    hpdl_mpi_tp_shape shape;
    void *params, *W0, *b0, *W1, *b1; /* in x h, h, h x classes, classes (replicated): views of params */
    void *grads, *dW0, *db0, *dW1, *db1;
    void *X;                          /* the step's rows, batch x in */
    int32_t *y;
    void *A, *dA;                     /* hidden slice and its gradient, batch x h */
    void *Z, *dZ;                     /* logits (the allreduce buffer) and their gradient, batch x classes */
    hpdl_mpi_dp_plan plan;            /* rank 0 of 1: the serial batch order, the same on every rank */
    int64_t allreduces;               /* this epoch's count, and its bytes */
    double reduced_bytes, largest_bytes;
    hpdl_mpi_dtype dtype;             /* the element type, for MPI */
    const hpdl__mlp_ops *ops;         /* and its numeric primitives */
} hpdl__mpi_tp_any;

/* Frees all that create made and zeroes *tp. */
HPDL_MPI_API void hpdl__mpi_tp_free_any(hpdl__mpi_tp_any *tp) {
    HPDL_FREE(tp->params); HPDL_FREE(tp->grads); HPDL_FREE(tp->X); HPDL_FREE(tp->y);
    HPDL_FREE(tp->A); HPDL_FREE(tp->dA); HPDL_FREE(tp->Z); HPDL_FREE(tp->dZ);
    hpdl_mpi_dp_plan_destroy(&tp->plan);
    memset(tp, 0, sizeof *tp);
}

/* W0, b0, W1, b1 inside one array p = [W0 | b0 | W1 | b1] of elements of
   `size` bytes. */
HPDL_MPI_API void hpdl__tp_views(const hpdl_mpi_tp_shape *sh, void *p, size_t size, void **W0, void **b0, void **W1,
                                 void **b1) {
    *W0 = p;
    *b0 = (char *)*W0 + (size_t)sh->in * sh->h * size;
    *W1 = (char *)*b0 + (size_t)sh->h * size;
    *b1 = (char *)*W1 + (size_t)sh->h * sh->classes * size;
}

/* The plan, the slice's parameters and gradients, and the step's buffers. */
HPDL_MPI_API hpdl_status hpdl__tp_alloc(hpdl__mpi_tp_any *tp, int64_t n) {
    const hpdl_mpi_tp_shape *sh = &tp->shape;
    size_t size = tp->ops->size;
    size_t b = (size_t)tp->cfg.batch, np = (size_t)hpdl__tp_slice_count(sh, sh->h) + sh->classes;
    hpdl_status s = hpdl_mpi_dp_plan_create(&tp->plan, n, tp->cfg.batch, 0, 1);
    if (s != HPDL_OK) return s;
    tp->params = hpdl_alloc(np, size);
    tp->grads = hpdl_alloc(np, size);
    tp->X = hpdl_alloc(b * sh->in, size);
    tp->y = (int32_t *)hpdl_alloc(b, sizeof(int32_t));
    tp->A = hpdl_alloc(b * sh->h, size);
    tp->dA = hpdl_alloc(b * sh->h, size);
    tp->Z = hpdl_alloc(b * sh->classes, size);
    tp->dZ = hpdl_alloc(b * sh->classes, size);
    if (!tp->params || !tp->grads || !tp->X || !tp->y || !tp->A || !tp->dA || !tp->Z || !tp->dZ)
        return HPDL_ERR_NOMEM;
    hpdl__tp_views(sh, tp->params, size, &tp->W0, &tp->b0, &tp->W1, &tp->b1);
    hpdl__tp_views(sh, tp->grads, size, &tp->dW0, &tp->db0, &tp->dW1, &tp->db1);
    return HPDL_OK;
}

/* Collective: rank 0's parameters, via a full copy on every rank that
   lives only as long as this call; then each rank keeps its slice. */
HPDL_MPI_API hpdl_status hpdl__tp_load(hpdl__mpi_tp_any *tp, const hpdl__mlp_any *model) {
    size_t size = tp->ops->size;
    hpdl__mlp_any full;
    hpdl_status s;
    memset(&full, 0, sizeof full); /* freeable even if creating it fails */
    s = hpdl__mlp_create_zero_any(&full, 3, model->widths, model->act, tp->ops);
    if (s == HPDL_OK) s = hpdl__mlp_copy_any(&full, model, tp->ops);
    s = hpdl__dp_agree(s, tp->cfg.comm);
    if (s == HPDL_OK) s = hpdl__dp_bcast_model(&full, tp->dtype, tp->cfg.comm);
    if (s == HPDL_OK) {
        hpdl__tp_slice_get(&tp->shape, tp->shape.h0, tp->shape.h, full.W[0], full.b[0], full.W[1], tp->params, size);
        memcpy(tp->b1, full.b[1], (size_t)tp->shape.classes * size);
    }
    hpdl__mlp_free_any(&full);
    return s;
}

/* Collective. Splits rank 0's model (in -> hidden -> classes; every rank
   passes one of that shape, none is modified; NULL: no model) over the
   ranks of cfg->comm for training on n_train samples per epoch. The config
   must be the same on every rank. A bad argument on any rank (have_tp 0: no
   place for the result) gives every rank HPDL_ERR_INVALID (a deeper MLP or
   NCCL: HPDL_ERR_UNSUPPORTED); on an error nothing stays allocated. */
HPDL_MPI_API hpdl_status hpdl__mpi_tp_create_any(hpdl__mpi_tp_any *made, int have_tp, const hpdl__mlp_any *model,
                                                 int64_t n_train, const hpdl_mpi_tp_config *cfg, hpdl_mpi_dtype dtype,
                                                 const hpdl__mlp_ops *ops) {
    int64_t v[11];
    hpdl_status s = HPDL_OK;
    int ok;
    if (!cfg || cfg->comm == MPI_COMM_NULL) return HPDL_ERR_INVALID; /* nobody to agree with */
    ok = have_tp && hpdl__mlp_ok_any(model) && hpdl__tp_config_ok(cfg) && n_train >= 1 && n_train <= INT32_MAX;
    if (!ok) s = HPDL_ERR_INVALID;
    else if (model->n_layers != 2 || hpdl__mpi_algo_device_only(cfg->algo)) s = HPDL_ERR_UNSUPPORTED;
    memset(v, 0, sizeof v);
    if (ok) { /* what every rank must agree on */
        v[0] = model->n_layers; v[1] = model->widths[0]; v[2] = model->widths[1]; v[3] = model->widths[2];
        v[4] = model->act; v[5] = cfg->batch; v[6] = cfg->algo; v[7] = n_train;
        v[8] = (int64_t)cfg->seed; v[9] = hpdl__tp_bits(cfg->lr); v[10] = hpdl__tp_bits(cfg->l2);
    }
    s = hpdl__tp_agree(s, v, 11, cfg->comm);
    if (s != HPDL_OK) return s;
    memset(made, 0, sizeof *made);
    made->cfg = *cfg;
    made->dtype = dtype;
    made->ops = ops;
    MPI_Comm_rank(cfg->comm, &made->rank);
    MPI_Comm_size(cfg->comm, &made->size);
    made->shape.in = model->widths[0];
    made->shape.hidden = model->widths[1];
    made->shape.classes = model->widths[2];
    made->shape.act = model->act;
    hpdl__tp_units(made->shape.hidden, made->rank, made->size, &made->shape.h0, &made->shape.h);
    s = hpdl__dp_agree(hpdl__tp_alloc(made, n_train), cfg->comm);
    if (s == HPDL_OK) s = hpdl__tp_load(made, model);
    if (s != HPDL_OK) hpdl__mpi_tp_free_any(made);
    return s;
}

/* Z = this rank's partial logits A·W1[r, :] for the rows in tp->X: zeros
   when it owns no hidden unit, so that it still joins the sum. */
HPDL_MPI_API hpdl_status hpdl__tp_forward(hpdl__mpi_tp_any *tp, int rows) {
    const hpdl_mpi_tp_shape *sh = &tp->shape;
    const hpdl__mlp_ops *ops = tp->ops;
    int h = sh->h;
    hpdl_status s;
    if (h == 0) { memset(tp->Z, 0, (size_t)rows * sh->classes * ops->size); return HPDL_OK; }
    s = ops->gemm(HPDL_NO_TRANS, HPDL_NO_TRANS, rows, h, sh->in, tp->X, sh->in, tp->W0, h, tp->A, h);
    if (s == HPDL_OK) s = ops->bias_act(rows, h, tp->A, tp->b0, 1, sh->act);
    if (s == HPDL_OK)
        s = ops->gemm(HPDL_NO_TRANS, HPDL_NO_TRANS, rows, sh->classes, h, tp->A, h, tp->W1, sh->classes, tp->Z,
                      sh->classes);
    return s;
}

/* After the allreduce: logits = Z + b1, then the loss, dZ and hits,
   identical on every rank. */
HPDL_MPI_API hpdl_status hpdl__tp_loss(hpdl__mpi_tp_any *tp, int rows, double *loss, int64_t *hits) {
    int C = tp->shape.classes;
    tp->ops->bias_act(rows, C, tp->Z, tp->b1, 0, tp->shape.act); /* no activation: cannot fail */
    *hits = tp->ops->argmax_hits(rows, C, tp->Z, tp->y);
    return tp->ops->softmax_xent(rows, C, tp->Z, tp->y, tp->dZ, loss);
}

/* The slice's gradients from dZ; no communication (see above). */
HPDL_MPI_API hpdl_status hpdl__tp_backward(hpdl__mpi_tp_any *tp, int rows) {
    const hpdl_mpi_tp_shape *sh = &tp->shape;
    const hpdl__mlp_ops *ops = tp->ops;
    int h = sh->h, C = sh->classes;
    hpdl_status s;
    ops->column_sums(rows, C, tp->dZ, tp->db1);
    if (h == 0) return HPDL_OK;
    s = ops->gemm(HPDL_TRANS, HPDL_NO_TRANS, h, C, rows, tp->A, h, tp->dZ, C, tp->dW1, C);
    if (s == HPDL_OK) s = ops->gemm(HPDL_NO_TRANS, HPDL_TRANS, rows, h, C, tp->dZ, C, tp->W1, C, tp->dA, h);
    if (s == HPDL_OK) s = ops->act_grad((int64_t)rows * h, tp->A, tp->dA, sh->act);
    if (s == HPDL_OK) s = ops->gemm(HPDL_TRANS, HPDL_NO_TRANS, sh->in, h, rows, tp->X, sh->in, tp->dA, h, tp->dW0, h);
    if (s == HPDL_OK) ops->column_sums(rows, h, tp->dA, tp->db0);
    return s;
}

/* hpdl_mlp_sgd_<s> on the slice: weights with l2, biases without; lr and
   l2 rounded to the element type first, as the typed call would. */
HPDL_MPI_API void hpdl__tp_update(hpdl__mpi_tp_any *tp) {
    const hpdl_mpi_tp_shape *sh = &tp->shape;
    const hpdl__mlp_ops *ops = tp->ops;
    double lr = ops->to_acc(tp->cfg.lr), l2 = ops->to_acc(tp->cfg.l2);
    ops->sgd_update((size_t)sh->in * sh->h, tp->W0, tp->dW0, lr, l2, 1);
    ops->sgd_update((size_t)sh->h, tp->b0, tp->db0, lr, 0, 1);
    ops->sgd_update((size_t)sh->h * sh->classes, tp->W1, tp->dW1, lr, l2, 1);
    ops->sgd_update((size_t)sh->classes, tp->b1, tp->db1, lr, 0, 1);
}

/* One step on the rows in tp->X / tp->y. times[1] += compute,
   times[2] += communication. */
HPDL_MPI_API hpdl_status hpdl__tp_step(hpdl__mpi_tp_any *tp, int rows, double *loss, int64_t *hits, double *times) {
    int64_t count = (int64_t)rows * tp->shape.classes;
    double bytes = (double)count * tp->ops->size, t0 = hpdl_time_now(), t1, t2;
    hpdl_status s;
    HPDL_NVTX_PUSH("TP forward");
    s = hpdl__tp_forward(tp, rows);
    HPDL_NVTX_POP();
    t1 = hpdl_time_now();
    HPDL_NVTX_PUSH("TP logits allreduce");
    if (s == HPDL_OK) {
        s = hpdl__tp_allreduce(tp->Z, count, tp->dtype, &tp->cfg, tp->size);
        tp->allreduces++;
        tp->reduced_bytes += bytes;
        if (bytes > tp->largest_bytes) tp->largest_bytes = bytes;
    }
    HPDL_NVTX_POP();
    t2 = hpdl_time_now();
    HPDL_NVTX_PUSH("TP loss, backward, update");
    if (s == HPDL_OK) s = hpdl__tp_loss(tp, rows, loss, hits);
    /* The loss is the same on every rank, so all stop at the same step,
       before updating, without another message. (A slice update that
       overflows on one rank shows up as a non-finite loss one step later.) */
    if (s == HPDL_OK && !(fabs(*loss) <= DBL_MAX)) s = HPDL_ERR_NUMERIC;
    if (s == HPDL_OK) s = hpdl__tp_backward(tp, rows);
    if (s == HPDL_OK) hpdl__tp_update(tp);
    HPDL_NVTX_POP();
    times[1] += (t1 - t0) + (hpdl_time_now() - t2);
    times[2] += t2 - t1;
    return s;
}

/* Collective: one epoch (index `epoch`, from 0: it keys the shuffle) over
   X (n_train x in) and labels, the same data on every rank: the serial
   trainer's steps of cfg.batch rows, the last one short. out (optional)
   gets the epoch's stats. */
HPDL_MPI_API hpdl_status hpdl__mpi_tp_epoch_any(hpdl__mpi_tp_any *tp, const void *X, const int32_t *labels, int epoch,
                                                hpdl_mpi_tp_stats *out) {
    hpdl_mpi_tp_stats st;
    double loss_sum = 0, times[3] = {0, 0, 0}, t0;
    int64_t s, first = 0, hits_sum = 0, i, e = epoch;
    int rows = 0, global_rows = 0;
    size_t row_bytes;
    hpdl_status status = HPDL_OK;
    if (!tp->params) return HPDL_ERR_INVALID;
    row_bytes = (size_t)tp->shape.in * tp->ops->size;
    if (!X || epoch < 0 || !hpdl__labels_ok(tp->plan.n, labels, tp->shape.classes)) status = HPDL_ERR_INVALID;
    status = hpdl__tp_agree(status, &e, 1, tp->cfg.comm);
    if (status != HPDL_OK) return status;
    memset(&st, 0, sizeof st);
    tp->allreduces = 0;
    tp->reduced_bytes = tp->largest_bytes = 0;
    t0 = hpdl_time_now();
    hpdl_mpi_dp_plan_epoch(&tp->plan, tp->cfg.seed, epoch);
    for (s = 0; status == HPDL_OK && s < tp->plan.steps; s++) {
        double loss = 0;
        int64_t hits = 0;
        double g0 = hpdl_time_now();
        hpdl_mpi_dp_plan_step(&tp->plan, s, &first, &rows, &global_rows);
        for (i = 0; i < rows; i++) {
            int32_t r = tp->plan.order[first + i];
            memcpy((char *)tp->X + (size_t)i * row_bytes, (const char *)X + (size_t)r * row_bytes, row_bytes);
            tp->y[i] = labels[r];
        }
        times[1] += hpdl_time_now() - g0;
        status = hpdl__tp_step(tp, rows, &loss, &hits, times);
        loss_sum += loss * rows;
        hits_sum += hits;
    }
    times[0] = hpdl_time_now() - t0;
    st.steps = tp->plan.steps;
    st.samples = tp->plan.n;
    st.loss = loss_sum / (double)tp->plan.n;
    st.accuracy = (double)hits_sum / (double)tp->plan.n;
    st.allreduces = tp->allreduces;
    st.step_bytes = tp->largest_bytes;
    st.epoch_bytes = tp->reduced_bytes;
    st.dp_grad_bytes = hpdl__tp_dp_grad_bytes(&tp->shape, tp->ops->size);
    if (status == HPDL_OK) status = hpdl__tp_finish_stats(&st, times, tp->size, tp->cfg.comm);
    if (status == HPDL_OK && out) *out = st;
    return status;
}

/* Collective: the whole model into *out on every rank (out: a model of the
   same widths, NULL: none), by one allgather of the slices. A bad argument
   on any rank gives every rank HPDL_ERR_INVALID and *out is left as it was. */
HPDL_MPI_API hpdl_status hpdl__mpi_tp_gather_any(const hpdl__mpi_tp_any *tp, hpdl__mlp_any *out) {
    const hpdl_mpi_tp_shape *sh = &tp->shape;
    size_t size = tp->ops->size;
    hpdl_status s = HPDL_OK;
    int widths[3];
    void *all = NULL;
    int *counts = NULL, *displs = NULL;
    widths[0] = sh->in; widths[1] = sh->hidden; widths[2] = sh->classes;
    if (!hpdl__mlp_ok_any(out) || !hpdl__same_widths(out->n_layers, out->widths, 2, widths))
        s = HPDL_ERR_INVALID;
    else if (hpdl__tp_slice_count(sh, sh->hidden) > INT_MAX)
        s = HPDL_ERR_UNSUPPORTED; /* MPI counts are int */
    else {
        all = hpdl_alloc((size_t)hpdl__tp_slice_count(sh, sh->hidden), size);
        counts = (int *)hpdl_alloc((size_t)tp->size, sizeof(int));
        displs = (int *)hpdl_alloc((size_t)tp->size, sizeof(int));
        if (!all || !counts || !displs) s = HPDL_ERR_NOMEM;
    }
    s = hpdl__dp_agree(s, tp->cfg.comm);
    if (s == HPDL_OK)
        s = hpdl__tp_allgather(sh, tp->params, all, tp->dtype, counts, displs, tp->rank, tp->size, tp->cfg.comm);
    if (s == HPDL_OK) {
        hpdl__tp_unpack(sh, all, out->W[0], out->b[0], out->W[1], tp->size, size);
        memcpy(out->b[1], tp->b1, (size_t)sh->classes * size);
        out->act = sh->act;
    }
    HPDL_FREE(all); HPDL_FREE(counts); HPDL_FREE(displs);
    return s;
}

/* hpdl_mpi_tp_<s>: this rank's slice of a hpdl_mlp_<s> with one hidden
   layer, its gradients and the step's buffers. params and grads are laid
   out [W0 | b0 | W1 | b1] so that the first hpdl__tp_slice_count elements
   are what hpdl_mpi_tp_gather_<s> sends. The struct mirrors
   hpdl__mpi_tp_any; each function is a call of the hpdl__mpi_tp_*_any
   above. */
#define HPDL_DEFINE_MPI_TP(SUFFIX, T, DTYPE)                                                                          \
    typedef struct hpdl_mpi_tp_##SUFFIX {                                                                             \
        hpdl_mpi_tp_config cfg;                                                                                       \
        int rank, size;                                                                                               \
        hpdl_mpi_tp_shape shape;                                                                                      \
        T *params, *W0, *b0, *W1, *b1; /* in x h, h, h x classes, classes (replicated): views of params */            \
        T *grads, *dW0, *db0, *dW1, *db1;                                                                             \
        T *X;                          /* the step's rows, batch x in */                                              \
        int32_t *y;                                                                                                   \
        T *A, *dA;                     /* hidden slice and its gradient, batch x h */                                 \
        T *Z, *dZ;                     /* logits (the allreduce buffer) and their gradient, batch x classes */        \
        hpdl_mpi_dp_plan plan;         /* rank 0 of 1: the serial batch order, the same on every rank */              \
        int64_t allreduces;            /* this epoch's count, and its bytes */                                        \
        double reduced_bytes, largest_bytes;                                                                          \
        hpdl_mpi_dtype dtype;                                                                                         \
        const hpdl__mlp_ops *ops;                                                                                     \
    } hpdl_mpi_tp_##SUFFIX;                                                                                           \
    typedef char hpdl__mpi_tp_layout_check_##SUFFIX                                                                  \
        [sizeof(hpdl_mpi_tp_##SUFFIX) == sizeof(hpdl__mpi_tp_any) ? 1 : -1];                                          \
    HPDL_MPI_API void hpdl_mpi_tp_destroy_##SUFFIX(hpdl_mpi_tp_##SUFFIX *tp) {                                        \
        hpdl__mpi_tp_any v;                                                                                           \
        if (!tp) return;                                                                                              \
        memcpy(&v, tp, sizeof v);                                                                                     \
        hpdl__mpi_tp_free_any(&v);                                                                                    \
        memset(tp, 0, sizeof *tp);                                                                                    \
    }                                                                                                                 \
    /* *tp is written only on success. */                                                                             \
    HPDL_MPI_API hpdl_status hpdl_mpi_tp_create_##SUFFIX(hpdl_mpi_tp_##SUFFIX *tp, const hpdl_mlp_##SUFFIX *model,    \
                                                         int64_t n_train, const hpdl_mpi_tp_config *cfg) {            \
        hpdl__mpi_tp_any made;                                                                                        \
        hpdl__mlp_any m;                                                                                              \
        hpdl_status s = hpdl__mpi_tp_create_any(&made, tp != NULL, hpdl__mlp_view_##SUFFIX(model, &m), n_train, cfg,  \
                                                DTYPE, hpdl__mlp_ops_##SUFFIX());                                     \
        if (s == HPDL_OK) memcpy(tp, &made, sizeof *tp);                                                              \
        return s;                                                                                                     \
    }                                                                                                                 \
    HPDL_MPI_API hpdl_status hpdl_mpi_tp_epoch_##SUFFIX(hpdl_mpi_tp_##SUFFIX *tp, const T *X, const int32_t *labels,  \
                                                        int epoch, hpdl_mpi_tp_stats *out) {                          \
        hpdl__mpi_tp_any v;                                                                                           \
        hpdl_status s;                                                                                                \
        if (!tp) return HPDL_ERR_INVALID;                                                                             \
        memcpy(&v, tp, sizeof v);                                                                                     \
        s = hpdl__mpi_tp_epoch_any(&v, X, labels, epoch, out);                                                        \
        memcpy(tp, &v, sizeof *tp); /* the plan and counters keep their state */                                      \
        return s;                                                                                                     \
    }                                                                                                                 \
    HPDL_MPI_API hpdl_status hpdl_mpi_tp_gather_##SUFFIX(const hpdl_mpi_tp_##SUFFIX *tp, hpdl_mlp_##SUFFIX *out) {    \
        hpdl__mpi_tp_any v;                                                                                           \
        hpdl__mlp_any o;                                                                                              \
        if (!tp || !tp->params) return HPDL_ERR_INVALID; /* nobody to agree with */                                   \
        memcpy(&v, tp, sizeof v);                                                                                     \
        return hpdl__mlp_take_##SUFFIX(hpdl__mpi_tp_gather_any(&v, hpdl__mlp_view_##SUFFIX(out, &o)), &o, out);       \
    }

/* hpdl_mpi_tp_create_f32 hpdl_mpi_tp_destroy_f32 hpdl_mpi_tp_epoch_f32 hpdl_mpi_tp_gather_f32 */
HPDL_DEFINE_MPI_TP(f32, float, HPDL_MPI_F32)
/* hpdl_mpi_tp_create_f64 hpdl_mpi_tp_destroy_f64 hpdl_mpi_tp_epoch_f64 hpdl_mpi_tp_gather_f64 */
HPDL_DEFINE_MPI_TP(f64, double, HPDL_MPI_F64)

#ifdef __CUDACC__
/* ------------------------------------------------------------------------ */
/* Tensor-parallel MLP training on GPUs                                      */
/* ------------------------------------------------------------------------ */
/* The split above with one rank per GPU (f32). Rank r's slice is a GPU MLP
   in -> h_r -> classes (hpdl_cuda_mlp_f32): columns of W0 and b0, rows of
   W1, and the whole b1. Its forward leaves the output bias to the loss
   kernel, so its logits buffer A[2] holds exactly the partial sum Z_r: the
   step is the GPU MLP's own (gather, forward, loss, backward, SGD) with one
   allreduce of batch x classes floats on the model's stream between forward
   and loss (stream-ordered with NCCL); the loss and D are then the same on
   every rank and the backward needs no communication. The CPU driver
   (tp->host, created with MPI as its algorithm) agreed the arguments,
   broadcast rank 0's model, sliced it and made the batch order (one part,
   keyed by seed and epoch: the serial order); it keeps the host copy that
   hpdl_mpi_tp_cuda_gather_f32 refreshes. Every rank needs a hidden unit
   (hidden >= ranks, else HPDL_ERR_UNSUPPORTED). */
typedef struct hpdl_mpi_tp_cuda_f32 {
    hpdl_mpi_tp_f32 host;        /* shape, plan, agreed config; the slice's host copy */
    hpdl_allreduce_algo algo;    /* of the logits allreduce (device buffers: NCCL, IPC, MPI, AUTO) */
    hpdl_cuda_mlp_f32 g;         /* the slice on this rank's GPU */
    int32_t *d_order;            /* the epoch's batch order, on the device */
    cudaEvent_t *ev;             /* per step: before and after the allreduce */
    int64_t n_ev;
    cudaStream_t prev_stream;    /* the hpdl_mpi stream before create, restored by destroy */
} hpdl_mpi_tp_cuda_f32;

/* The host slice as the CPU model hpdl_cuda_mlp_create / _download take. */
HPDL_MPI_API hpdl_mlp_f32 hpdl__tp_cuda_host_view(hpdl_mpi_tp_f32 *h) {
    hpdl_mlp_f32 v;
    memset(&v, 0, sizeof v);
    v.n_layers = 2;
    v.widths[0] = h->shape.in; v.widths[1] = h->shape.h; v.widths[2] = h->shape.classes;
    v.act = h->shape.act;
    v.W[0] = h->W0; v.b[0] = h->b0; v.W[1] = h->W1; v.b[1] = h->b1;
    return v;
}

/* Frees all that create made (the GPU slice, the host driver) and zeroes *tp;
   restores the hpdl_mpi stream create replaced. */
HPDL_MPI_API void hpdl_mpi_tp_cuda_destroy_f32(hpdl_mpi_tp_cuda_f32 *tp) {
    int64_t i;
    if (!tp) return;
    for (i = 0; tp->ev && i < tp->n_ev; i++)
        if (tp->ev[i]) cudaEventDestroy(tp->ev[i]);
    HPDL_FREE(tp->ev);
    hpdl_cuda_free(tp->d_order);
    if (tp->g.params) { hpdl_cuda_mlp_destroy_f32(&tp->g); hpdl_mpi_set_stream(tp->prev_stream); }
    hpdl_mpi_tp_destroy_f32(&tp->host);
    memset(tp, 0, sizeof *tp);
}

/* The slice on the GPU, the device order and the step events. */
HPDL_MPI_API hpdl_status hpdl__tp_cuda_alloc(hpdl_mpi_tp_cuda_f32 *tp) {
    hpdl_mlp_f32 view = hpdl__tp_cuda_host_view(&tp->host);
    int64_t i;
    hpdl_status s = hpdl_cuda_mlp_create_f32(&tp->g, &view, tp->host.cfg.batch);
    if (s != HPDL_OK) return s;
    tp->prev_stream = hpdl__mpi_settings_get()->stream;
    hpdl_mpi_set_stream(tp->g.stream); /* the allreduce orders after the forward */
    s = hpdl_cuda_alloc((void **)&tp->d_order, (size_t)tp->host.plan.n * sizeof(int32_t));
    if (s != HPDL_OK) return s;
    tp->n_ev = 2 * hpdl__dp_timed_steps(tp->host.plan.steps);
    tp->ev = (cudaEvent_t *)hpdl_alloc((size_t)tp->n_ev, sizeof(cudaEvent_t));
    if (!tp->ev) return HPDL_ERR_NOMEM;
    memset(tp->ev, 0, (size_t)tp->n_ev * sizeof(cudaEvent_t));
    for (i = 0; i < tp->n_ev; i++) HPDL_CUDA_TRY(cudaEventCreate(&tp->ev[i]));
    return HPDL_OK;
}

/* Collective. As hpdl_mpi_tp_create_f32 (rank 0's model split over the
   ranks of cfg->comm), each slice then on this rank's current GPU, for
   batches of cfg->batch rows; cfg->algo reduces device buffers (NCCL,
   IPC, MPI, AUTO). Sets the hpdl_mpi stream to the slice's stream. */
HPDL_MPI_API hpdl_status hpdl_mpi_tp_cuda_create_f32(hpdl_mpi_tp_cuda_f32 *tp, const hpdl_mlp_f32 *model,
                                                 int64_t n_train, const hpdl_mpi_tp_config *cfg) {
    hpdl_mpi_tp_cuda_f32 made;
    hpdl_mpi_tp_config host_cfg;
    hpdl_status s;
    if (!cfg) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    host_cfg = *cfg;
    host_cfg.algo = HPDL_ALLREDUCE_MPI; /* the host driver only broadcasts and gathers */
    s = hpdl_mpi_tp_create_f32(tp ? &made.host : NULL, model, n_train, &host_cfg);
    if (s != HPDL_OK) return s;
    made.algo = cfg->algo;
    s = made.host.shape.h < 1 ? HPDL_ERR_UNSUPPORTED : hpdl__tp_cuda_alloc(&made);
    s = hpdl__dp_agree(s, cfg->comm);
    if (s != HPDL_OK) { hpdl_mpi_tp_cuda_destroy_f32(&made); return s; }
    *tp = made;
    return HPDL_OK;
}

/* One step of `rows` rows from the feed; the allreduce between events a, b
   (NULL on a step that is not timed). */
HPDL_MPI_API hpdl_status hpdl__tp_cuda_step(hpdl_mpi_tp_cuda_f32 *tp, int rows, cudaEvent_t a, cudaEvent_t b) {
    hpdl_cuda_mlp_f32 *g = &tp->g;
    hpdl_status s;
    HPDL_NVTX_PUSH("TP forward");
    s = hpdl__cmlp_gather<float>(g, rows);
    if (s == HPDL_OK) s = hpdl__cmlp_forward<float>(g, rows);
    HPDL_NVTX_POP();
    HPDL_NVTX_PUSH("TP logits allreduce");
    if (s == HPDL_OK && a && cudaEventRecord(a, g->stream) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK && tp->host.size > 1)
        s = hpdl_mpi_allreduce(g->A[2], (int64_t)rows * tp->host.shape.classes, HPDL_MPI_F32, tp->algo,
                               tp->host.cfg.comm);
    if (s == HPDL_OK && b && cudaEventRecord(b, g->stream) != cudaSuccess) s = HPDL_ERR_CUDA;
    HPDL_NVTX_POP();
    HPDL_NVTX_PUSH("TP loss, backward, update");
    if (s == HPDL_OK) s = hpdl__cmlp_loss<float>(g, rows, 1);
    if (s == HPDL_OK) s = hpdl__cmlp_backward<float>(g, rows);
    if (s == HPDL_OK) s = hpdl__cmlp_update<float>(g, rows);
    HPDL_NVTX_POP();
    return s;
}

/* The epoch's order on the device and the feed pointed at it. */
HPDL_MPI_API hpdl_status hpdl__tp_cuda_begin(hpdl_mpi_tp_cuda_f32 *tp, hpdl_cuda_dataset *data, int epoch) {
    hpdl_mpi_tp_f32 *h = &tp->host;
    hpdl_status s = hpdl_mpi_dp_plan_epoch(&h->plan, h->cfg.seed, epoch);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(tp->d_order, h->plan.order, (size_t)h->plan.n * sizeof(int32_t), cudaMemcpyHostToDevice));
    s = hpdl__mlp_begin(tp->g.state, h->cfg.lr, h->cfg.l2, 1, 0, tp->g.stream);
    if (s == HPDL_OK) s = hpdl__mlp_set_feed(tp->g.state, data->images, 0, data->labels, tp->d_order, 0, tp->g.stream);
    if (s == HPDL_OK) HPDL_CUDA_TRY(cudaStreamSynchronize(tp->g.stream));
    return s;
}

/* Collective: one epoch (index `epoch`: it keys the order) over a resident
   data set of the n_train rows given to create, the same on every rank;
   the steps of the serial trainer. out (optional): as the CPU driver's,
   compute_s = epoch_s - comm_s (comm: the allreduces on the stream). */
HPDL_MPI_API hpdl_status hpdl_mpi_tp_cuda_epoch_f32(hpdl_mpi_tp_cuda_f32 *tp, hpdl_cuda_dataset *data, int epoch,
                                                hpdl_mpi_tp_stats *out) {
    hpdl_mpi_tp_f32 *h;
    hpdl_mpi_tp_stats st;
    hpdl__mlp_state state;
    double times[3] = {0, 0, 0}, t0;
    int64_t s, first = 0, e = epoch;
    int rows = 0, global_rows = 0;
    hpdl_status status = HPDL_OK;
    if (!tp || !tp->g.params) return HPDL_ERR_INVALID;
    h = &tp->host;
    if (!hpdl__mlp_data_fits(data, h->shape.in, h->shape.classes) || !data->resident || data->n != h->plan.n ||
        epoch < 0)
        status = HPDL_ERR_INVALID;
    status = hpdl__tp_agree(status, &e, 1, h->cfg.comm);
    if (status == HPDL_OK) status = hpdl__dp_agree(hpdl__tp_cuda_begin(tp, data, epoch), h->cfg.comm);
    if (status != HPDL_OK) return status;
    HPDL__MPI_TRY(MPI_Barrier(h->cfg.comm));
    t0 = hpdl_time_now();
    memset(&st, 0, sizeof st);
    for (s = 0; status == HPDL_OK && s < h->plan.steps; s++) {
        const int64_t slot = hpdl__dp_timed_slot(s, h->plan.steps);
        const cudaEvent_t *ev = slot >= 0 ? tp->ev + 2 * slot : NULL;
        status = hpdl_mpi_dp_plan_step(&h->plan, s, &first, &rows, &global_rows);
        if (status == HPDL_OK) status = hpdl__tp_cuda_step(tp, rows, ev ? ev[0] : NULL, ev ? ev[1] : NULL);
        st.step_bytes = (double)rows * h->shape.classes * sizeof(float) > st.step_bytes
                            ? (double)rows * h->shape.classes * sizeof(float) : st.step_bytes;
        st.epoch_bytes += (double)rows * h->shape.classes * sizeof(float);
    }
    if (status == HPDL_OK) status = hpdl__mlp_read_state(tp->g.state, &state, tp->g.stream);
    times[0] = hpdl_time_now() - t0;
    if (status != HPDL_OK) return hpdl__mpi_finish("hpdl_mpi_tp_cuda_epoch", status, h->cfg.comm);
    for (s = 0; s < hpdl__dp_timed_steps(h->plan.steps); s++)
        times[2] += hpdl__dp_elapsed(tp->ev[2 * s], tp->ev[2 * s + 1]);
    times[2] *= hpdl__dp_timed_scale(h->plan.steps);
    times[1] = times[0] - times[2];
    st.steps = h->plan.steps;
    st.samples = h->plan.n;
    st.loss = state.loss_sum / (double)h->plan.n;
    st.accuracy = (double)state.correct / (double)h->plan.n;
    st.allreduces = h->size > 1 ? h->plan.steps : 0;
    st.dp_grad_bytes = hpdl__tp_dp_grad_bytes(&h->shape, sizeof(float));
    status = hpdl__tp_finish_stats(&st, times, h->size, h->cfg.comm);
    if (status == HPDL_OK && out) *out = st;
    /* the loss is the same on every rank: a step it made non-finite was skipped everywhere */
    if (status == HPDL_OK && state.nonfinite_steps > 0) status = HPDL_ERR_NUMERIC;
    return status;
}

/* Collective: the whole model into *out on every rank (as
   hpdl_mpi_tp_gather_f32, after copying the slice back from the GPU). */
HPDL_MPI_API hpdl_status hpdl_mpi_tp_cuda_gather_f32(hpdl_mpi_tp_cuda_f32 *tp, hpdl_mlp_f32 *out) {
    hpdl_mlp_f32 view;
    hpdl_status s;
    if (!tp || !tp->g.params) return HPDL_ERR_INVALID;
    view = hpdl__tp_cuda_host_view(&tp->host);
    s = hpdl__dp_agree(hpdl_cuda_mlp_download_f32(&tp->g, &view), tp->host.cfg.comm);
    return s != HPDL_OK ? s : hpdl_mpi_tp_gather_f32(&tp->host, out);
}
#endif /* __CUDACC__ */

/* ======================================================================== */
/* CNN data parallelism                                                     */
/* ======================================================================== */
/* Data-parallel training of an hpdl_cnn_run (CPU or GPU backend), as
   PyTorch's DistributedDataParallel does it: every rank holds the whole
   network and trains on its own part of each global batch; the gradients
   are averaged over the ranks in buckets that start reducing while backward
   still runs (hpdl_mpi_bucketer, fed by the run's grads_ready hook), so
   every rank applies the same update and the replicas stay equal.

   Batch norm: each rank normalises with its own batch's statistics (as DDP
   does; synchronised batch norm is not here). Its running statistics either
   stay per rank (HPDL_MPI_BN_LOCAL, DDP with broadcast_buffers=False) or are
   rank 0's, broadcast before each step (HPDL_MPI_BN_BROADCAST, DDP's
   default), so evaluation gives the same answer on every rank.

   Every rank passes the same number of images per step (the gradient mean
   over ranks is then the mean over the global batch); a step whose averaged
   loss or gradients are not finite leaves the model unchanged on every rank
   (HPDL_ERR_NUMERIC on the CPU; the GPU backend skips it on the device and
   counts it, as hpdl_cnn_update does).

   GPU backends (hpdl_cuda_cnn, one GPU per rank): call hpdl_mpi_set_stream
   with the backend's stream before create, and pass HPDL_ALLREDUCE_NCCL:
   the buckets are then reduced on a side stream while backward goes on,
   the loss on the backend's stream after them, and rank 0's batch-norm
   statistics (HPDL_MPI_BN_BROADCAST) arrive by an NCCL broadcast queued
   before the forward pass, so a step never waits for the device on the
   host. Steps run eagerly (no CUDA graph: the bucket hand-offs are host
   calls). Other algorithms work on device buffers too, reducing each
   tensor when it is ready, with a host wait each.
   Test: tests/mpi_cnn.c (CPU ranks); bench: bench/cnn_dp.cu (GPUs). */

/* Batch-norm running statistics under hpdl_mpi_cnn. LOCAL: each rank updates its own, from rank 0's copied
   by create; BROADCAST: rank 0's are copied to every rank before each step. */
typedef enum hpdl_mpi_bn_mode { HPDL_MPI_BN_LOCAL = 0, HPDL_MPI_BN_BROADCAST } hpdl_mpi_bn_mode;

/* Data-parallel state of one hpdl_cnn_run, written by hpdl_mpi_cnn_create. The run stays the caller's; its
   grads_ready hook points at this struct until hpdl_mpi_cnn_destroy. */
typedef struct hpdl_mpi_cnn {
    hpdl_cnn_run *run;
    MPI_Comm comm;
    hpdl_mpi_bn_mode bn;
    hpdl_mpi_dtype dtype;
    hpdl_allreduce_algo algo;
    hpdl_mpi_bucketer buckets;
    int tensor_of_layer[HPDL_CNN_MAX_LAYERS]; /* a layer's gradient tensor in the bucketer; -1: none */
    hpdl_status hook_status;                  /* the first failed bucketer_ready of this step */
} hpdl_mpi_cnn;

/* The bucketer's view of the run: one tensor per layer with parameters
   (its weights and bias are contiguous in the flat gradient array). */
HPDL_MPI_API int hpdl__mpi_cnn_tensors(hpdl_mpi_cnn *d, void **tensors, int64_t *counts) {
    const hpdl_cnn *net = d->run->net;
    int i, n = 0;
    for (i = 0; i < net->n_layers; i++) {
        d->tensor_of_layer[i] = -1;
        if (net->weight_at[i] < 0) continue;
        d->tensor_of_layer[i] = n;
        tensors[n] = (char *)d->run->grads + (size_t)net->weight_at[i] * d->run->be->elem_size;
        counts[n++] = hpdl__cnn_weight_count(net, i) + hpdl__cnn_bias_count(net, i);
    }
    return n;
}

HPDL_MPI_API void hpdl__mpi_cnn_grads_ready(void *user, int layer) {
    hpdl_mpi_cnn *d = (hpdl_mpi_cnn *)user;
    hpdl_status s = hpdl_mpi_bucketer_ready(&d->buckets, d->tensor_of_layer[layer]);
    if (d->hook_status == HPDL_OK) d->hook_status = s;
}

/* Rank 0's batch-norm statistics on every rank: with NCCL buckets, a
   broadcast queued on the hpdl stream (no host wait); else hpdl_mpi_bcast. */
HPDL_MPI_API hpdl_status hpdl__mpi_cnn_bcast_state(hpdl_mpi_cnn *d) {
    hpdl_cnn_run *r = d->run;
#ifdef HPDL_MPI_HAVE_NCCL
    if (d->buckets.mode == HPDL__BUCKET_NCCL) {
        ncclDataType_t type = ncclFloat32;
        ncclResult_t e;
        hpdl__mpi_nccl_type(d->dtype, &type);
        e = ncclBroadcast(r->state, r->state, (size_t)r->net->state_count, type, 0, d->buckets.nccl,
                          hpdl__mpi_settings_get()->stream);
        /* the other ranks are inside the broadcast: a failure here stops them all */
        return hpdl__mpi_finish("hpdl_mpi_cnn_train_step", e == ncclSuccess ? HPDL_OK : HPDL_ERR_NCCL, d->comm);
    }
#endif
    return hpdl_mpi_bcast(r->state, r->net->state_count, d->dtype, 0, d->comm);
}

/* Rank 0's parameters (params = 1) and batch-norm statistics on every rank. */
HPDL_MPI_API hpdl_status hpdl__mpi_cnn_share(hpdl_mpi_cnn *d, int params) {
    hpdl_cnn_run *r = d->run;
    hpdl_status s = HPDL_OK;
    if (params) s = hpdl_mpi_bcast(r->params, r->net->param_count, d->dtype, 0, d->comm);
    if (s == HPDL_OK && r->net->state_count) s = hpdl__mpi_cnn_bcast_state(d);
    return s;
}

/* Collective: frees the buckets and unhooks the run (which stays usable). */
HPDL_MPI_API void hpdl_mpi_cnn_destroy(hpdl_mpi_cnn *d) {
    if (!d || !d->run) return;
    hpdl_mpi_bucketer_destroy(&d->buckets);
    d->run->grads_ready = NULL;
    d->run->grads_ready_user = NULL;
    memset(d, 0, sizeof *d);
}

/* Collective. Trains `run` (made with hpdl_cnn_run_create, parameters set)
   over the ranks of comm: copies rank 0's parameters and statistics to every
   rank and registers the gradients for bucketed averaging with `algo`
   (bucket_bytes 0: HPDL_MPI_BUCKET_BYTES). d must stay where it is while in
   use (the run's hook points at it). */
HPDL_MPI_API hpdl_status hpdl_mpi_cnn_create(hpdl_mpi_cnn *d, hpdl_cnn_run *run, hpdl_allreduce_algo algo,
                                             size_t bucket_bytes, hpdl_mpi_bn_mode bn, MPI_Comm comm) {
    void *tensors[HPDL_CNN_MAX_LAYERS];
    int64_t counts[HPDL_CNN_MAX_LAYERS];
    int n;
    hpdl_status s;
    if (!d || !run || !run->be || comm == MPI_COMM_NULL || (bn != HPDL_MPI_BN_LOCAL && bn != HPDL_MPI_BN_BROADCAST) ||
        (run->be->elem_size != sizeof(float) && run->be->elem_size != sizeof(double)))
        return HPDL_ERR_INVALID;
    memset(d, 0, sizeof *d);
    d->run = run;
    d->comm = comm;
    d->bn = bn;
    d->algo = algo;
    d->dtype = run->be->elem_size == sizeof(float) ? HPDL_MPI_F32 : HPDL_MPI_F64;
    n = hpdl__mpi_cnn_tensors(d, tensors, counts);
    s = hpdl__mpi_cnn_share(d, 1);
    if (s == HPDL_OK) s = hpdl_mpi_bucketer_create(&d->buckets, tensors, counts, n, d->dtype, bucket_bytes, 1, algo, comm);
    if (s != HPDL_OK) { memset(d, 0, sizeof *d); return s; }
    run->grads_ready = hpdl__mpi_cnn_grads_ready;
    run->grads_ready_user = d;
    return HPDL_OK;
}

/* One data-parallel step on this rank's `batch` images X and labels (the
   backend's memory; the same batch size on every rank): forward, backward
   with the gradients averaged over the ranks as they are produced, the
   mean loss averaged too (hpdl_cnn_loss then gives the global batch's),
   and the update. */
HPDL_MPI_API hpdl_status hpdl_mpi_cnn_train_step(hpdl_mpi_cnn *d, int batch, const void *X, const int32_t *labels) {
    int mine[2], most[2] = {0, 0};
    hpdl_status s = HPDL_OK;
    if (!d || !d->run) return HPDL_ERR_INVALID;
    mine[0] = batch; /* largest and, negated, smallest batch in one reduction */
    mine[1] = -batch;
    MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, d->comm);
    if (most[0] != -most[1]) return HPDL_ERR_INVALID; /* the same on every rank */
    if (d->bn == HPDL_MPI_BN_BROADCAST) s = hpdl__mpi_cnn_share(d, 0);
    d->hook_status = HPDL_OK;
    if (s == HPDL_OK) s = hpdl_cnn_forward(d->run, batch, X, 1);
    if (s == HPDL_OK) s = hpdl_cnn_backward(d->run, batch, X, labels);
    if (s == HPDL_OK) s = d->hook_status;
    if (s == HPDL_OK) s = hpdl_mpi_bucketer_wait(&d->buckets);
    if (s == HPDL_OK) s = hpdl_mpi_allreduce_avg(d->run->loss, 1, HPDL_MPI_F64, d->algo, d->comm);
    return s == HPDL_OK ? hpdl_cnn_update(d->run) : s;
}

#endif /* HPDL_MPI_H */
