/* tests/gpu_mpi_ipc.cu - the NVLink allreduce through CUDA IPC (hpdl_mpi.h)
   against exact sums, one rank per GPU.

   Started on its own on a machine with several GPUs, it starts itself again
   under `mpirun -np <GPUs>`. The one-rank context runs on any GPU; the other
   tests need two ranks on two GPUs with peer access and are skipped (on every
   rank) without them, but one, which needs more ranks than GPUs.
       mpirun -np 2 build/gpu/gpu_mpi_ipc [name filter] */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL /* AUTO above its threshold takes NCCL */
#endif
#endif
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

static const hpdl_allreduce_algo k_algos[] = {HPDL_ALLREDUCE_IPC_ONESHOT, HPDL_ALLREDUCE_IPC_TWOSHOT,
                                              HPDL_ALLREDUCE_AUTO};
/* odd counts, counts around a 16-byte pack, more packs than a grid holds */
static const int64_t k_counts[] = {1, 3, 7, 8, 9, 33, 1023, 4097, 65537, 300001};

static int g_gpu = -1; /* this rank's GPU; -1: none */

/* Rank r's element i in call k: a small integer, so that every sum is exact,
   in bf16 too (8 ranks x 4 < 256). */
__host__ __device__ static inline int input_value(int rank, int64_t i, int k) {
    return (int)((i * 7 + rank * 3 + k) % 9) - 4;
}

__host__ __device__ static inline int expected_sum(int size, int64_t i, int k) {
    int r, s = 0;
    for (r = 0; r < size; r++) s += input_value(r, i, k);
    return s;
}

/* Element types: from an int, to a double (host and device). */
template <typename T> struct elem;
template <> struct elem<float> {
    static __host__ __device__ float make(int v) { return (float)v; }
    static __host__ __device__ double value(float x) { return x; }
    static hpdl_mpi_dtype dtype() { return HPDL_MPI_F32; }
};
template <> struct elem<double> {
    static __host__ __device__ double make(int v) { return (double)v; }
    static __host__ __device__ double value(double x) { return x; }
    static hpdl_mpi_dtype dtype() { return HPDL_MPI_F64; }
};
template <> struct elem<__half> {
    static __host__ __device__ __half make(int v) { return __float2half_rn((float)v); }
    static __host__ __device__ double value(__half x) { return __half2float(x); }
    static hpdl_mpi_dtype dtype() { return HPDL_MPI_F16; }
};
template <> struct elem<__nv_bfloat16> {
    static __host__ __device__ __nv_bfloat16 make(int v) { return __float2bfloat16_rn((float)v); }
    static __host__ __device__ double value(__nv_bfloat16 x) { return __bfloat162float(x); }
    static hpdl_mpi_dtype dtype() { return HPDL_MPI_BF16; }
};

template <typename T> static __global__ void fill_kernel(T *x, int64_t n, int rank, int k) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x) x[i] = elem<T>::make(input_value(rank, i, k));
}

/* Counts the elements that differ from the exact sum (and any write past n:
   x[n] holds `guard` before the call). */
template <typename T>
static __global__ void count_wrong_kernel(const T *x, int64_t n, int size, int k, unsigned long long *wrong) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long mine = 0;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x)
        mine += elem<T>::value(x[i]) != (double)expected_sum(size, i, k);
    if (mine) atomicAdd(wrong, mine);
}

static unsigned grid_for(int64_t n) { return (unsigned)(n / 256 + 1 < 1024 ? n / 256 + 1 : 1024); }

/* 1 when this rank has a GPU and the ranks of MPI_COMM_WORLD can share
   memory through IPC (the same answer on every rank); says why not once. */
static int ipc_ready(void) {
    static int known = 0, ready = 0;
    hpdl_mpi_ipc c;
    int have_gpu = g_gpu >= 0, all_gpus = 0;
    if (known) return ready;
    known = 1;
    MPI_Allreduce(&have_gpu, &all_gpus, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_gpus || hpdl_mpi_size() < 2) return ready = 0;
    ready = hpdl_mpi_ipc_create(&c, 4096, MPI_COMM_WORLD) == HPDL_OK;
    if (ready) hpdl_mpi_ipc_destroy(&c);
    return ready;
}

#define NEED_IPC()                                                                            \
    do {                                                                                      \
        if (!ipc_ready()) HPDL_SKIP("needs 2+ ranks on GPUs with peer access (one node)"); \
    } while (0)

/* Sum of rank inputs of call k on x[0..n) through `run`, checked on the GPU;
   x[n] is a guard that must survive. Returns the wrong elements over all
   ranks, or -1 when run failed. */
template <typename T, typename RUN> static long long reduce_and_count(T *x, int64_t n, int k, RUN run) {
    unsigned long long wrong = 0, *d_wrong;
    long long mine, total = 0;
    T guard = elem<T>::make(99), after;
    int ok;
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_wrong, sizeof *d_wrong));
    HPDL_CUDA_CHECK(cudaMemset(d_wrong, 0, sizeof *d_wrong));
    HPDL_CUDA_CHECK(cudaMemcpy(x + n, &guard, sizeof guard, cudaMemcpyHostToDevice));
    fill_kernel<<<grid_for(n), 256>>>(x, n, hpdl_mpi_rank(), k);
    ok = run(x, n) == HPDL_OK;
    count_wrong_kernel<<<grid_for(n), 256>>>(x, n, hpdl_mpi_size(), k, d_wrong);
    HPDL_CUDA_CHECK(cudaMemcpy(&wrong, d_wrong, sizeof wrong, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(&after, x + n, sizeof after, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaFree(d_wrong));
    mine = ok ? (long long)wrong + (elem<T>::value(after) != 99.0) : -1;
    MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

/* Every algorithm and count, at an aligned buffer and one element past it
   (no 16-byte accesses then), through hpdl_mpi_allreduce's own context, or
   through `ctx` when given. */
template <typename T> static void exact_sums(hpdl_mpi_ipc *ctx) {
    T *d;
    int a, c, offset;
    NEED_IPC();
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, (300001 + 2) * sizeof(T)));
    for (a = 0; a < HPDL_COUNT(k_algos); a++)
        for (c = 0; c < HPDL_COUNT(k_counts); c++)
            for (offset = 0; offset < 2; offset++) {
                hpdl_allreduce_algo algo = k_algos[a];
                long long wrong = reduce_and_count(d + offset, k_counts[c], a * 31 + c, [ctx, algo](T *x, int64_t n) {
                    return ctx ? hpdl_mpi_ipc_allreduce(ctx, x, n, elem<T>::dtype(), algo)
                               : hpdl_mpi_allreduce(x, n, elem<T>::dtype(), algo, MPI_COMM_WORLD);
                });
                if (wrong != 0)
                    fprintf(stderr, "    %s, %s, count %lld, offset %d: %lld wrong\n",
                            hpdl_mpi_dtype_name(elem<T>::dtype()), hpdl_allreduce_algo_name(algo),
                            (long long)k_counts[c], offset, wrong);
                HPDL_EXPECT(wrong == 0);
            }
    HPDL_CUDA_CHECK(cudaFree(d));
}

/* A context whose grid is limited to `blocks` (HPDL_MPI_IPC_BLOCKS, read
   at create), the variable restored after. */
static hpdl_status create_with_blocks(hpdl_mpi_ipc *ctx, size_t bytes, const char *blocks) {
    const char *old = getenv("HPDL_MPI_IPC_BLOCKS");
    char saved[32];
    hpdl_status s;
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    setenv("HPDL_MPI_IPC_BLOCKS", blocks, 1);
    s = hpdl_mpi_ipc_create(ctx, bytes, MPI_COMM_WORLD);
    if (old) setenv("HPDL_MPI_IPC_BLOCKS", saved, 1);
    else unsetenv("HPDL_MPI_IPC_BLOCKS");
    return s;
}

MPI_TEST(test_exact_sums_f32) { exact_sums<float>(NULL); }
MPI_TEST(test_exact_sums_f64) { exact_sums<double>(NULL); }
MPI_TEST(test_exact_sums_f16) { exact_sums<__half>(NULL); }
MPI_TEST(test_exact_sums_bf16) { exact_sums<__nv_bfloat16>(NULL); }

/* Two blocks: each block's part of the larger counts takes many one-shot
   steps (1024 packs each), the pipeline of pushes, sums and signals. */
MPI_TEST(test_exact_sums_in_many_steps) {
    hpdl_mpi_ipc ctx;
    NEED_IPC();
    HPDL_EXPECT(create_with_blocks(&ctx, (size_t)1 << 20, "2") == HPDL_OK);
    exact_sums<float>(&ctx);
    exact_sums<double>(&ctx);
    exact_sums<__half>(&ctx);
    exact_sums<__nv_bfloat16>(&ctx);
    hpdl_mpi_ipc_destroy(&ctx);
}

/* A context with a 4 KiB staging buffer: larger calls go in many pieces,
   each a kernel with its own sequence number and staging half. */
MPI_TEST(test_pieces_of_a_small_context) {
    hpdl_mpi_ipc ctx;
    float *d;
    int a;
    NEED_IPC();
    HPDL_EXPECT(hpdl_mpi_ipc_create(&ctx, 4096, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, (100003 + 1) * sizeof(float)));
    for (a = 0; a < HPDL_COUNT(k_algos); a++) {
        hpdl_allreduce_algo algo = k_algos[a];
        HPDL_EXPECT(reduce_and_count(d, 100003, a, [&ctx, algo](float *x, int64_t n) {
                        return hpdl_mpi_ipc_allreduce(&ctx, x, n, HPDL_MPI_F32, algo);
                    }) == 0);
    }
    HPDL_CUDA_CHECK(cudaFree(d));
    hpdl_mpi_ipc_destroy(&ctx);
}

/* Hundreds of calls queued with no host synchronisation between them, the
   size (so the grid), the algorithm and the stream changing from call to
   call: the flags and the two staging halves must keep every call apart.
   Through a context of `bytes` with a grid limit of `blocks`. */
static void back_to_back(size_t bytes, const char *blocks) {
    enum { CALLS = 400, SIZES = 4, STREAMS = 2 };
    static const int64_t counts[SIZES] = {5, 3001, 40000, 100003};
    hpdl_mpi_ipc ctx;
    float *buf[STREAMS][SIZES];
    cudaStream_t streams[STREAMS];
    unsigned long long wrong = 0, *d_wrong;
    long long mine, total = 0;
    int k, s, b, old_checks;
    NEED_IPC();
    HPDL_EXPECT(create_with_blocks(&ctx, bytes, blocks) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_wrong, sizeof *d_wrong));
    HPDL_CUDA_CHECK(cudaMemset(d_wrong, 0, sizeof *d_wrong));
    for (s = 0; s < STREAMS; s++) { /* each buffer used on one stream only: the test's own kernels stay ordered */
        HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        for (b = 0; b < SIZES; b++) HPDL_CUDA_CHECK(cudaMalloc((void **)&buf[s][b], counts[b] * sizeof(float)));
    }
    old_checks = hpdl_mpi_set_checks(0);
    for (k = 0; k < CALLS; k++) {
        cudaStream_t st;
        b = k % SIZES;
        s = k / 7 % STREAMS;
        st = streams[s];
        hpdl_mpi_set_stream(st);
        fill_kernel<<<grid_for(counts[b]), 256, 0, st>>>(buf[s][b], counts[b], hpdl_mpi_rank(), k);
        HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, buf[s][b], counts[b], HPDL_MPI_F32, k_algos[k % 3]) == HPDL_OK);
        count_wrong_kernel<<<grid_for(counts[b]), 256, 0, st>>>(buf[s][b], counts[b], hpdl_mpi_size(), k, d_wrong);
    }
    hpdl_mpi_set_checks(old_checks);
    hpdl_mpi_set_stream(0);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CUDA_CHECK(cudaMemcpy(&wrong, d_wrong, sizeof wrong, cudaMemcpyDeviceToHost));
    mine = (long long)wrong;
    MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    HPDL_EXPECT(total == 0);
    for (s = 0; s < STREAMS; s++) {
        for (b = 0; b < SIZES; b++) cudaFree(buf[s][b]);
        cudaStreamDestroy(streams[s]);
    }
    cudaFree(d_wrong);
    hpdl_mpi_ipc_destroy(&ctx);
}

/* Small pieces (64 KiB) on the full grid. */
MPI_TEST(test_back_to_back_calls) { back_to_back((size_t)64 << 10, "128"); }

/* One piece per call on three blocks: up to 9 one-shot steps a block, so a
   rank a call ahead pushes while its peer still sums the call before. */
MPI_TEST(test_back_to_back_calls_in_steps) { back_to_back((size_t)1 << 20, "3"); }

/* Random f32 data: every rank gets the same bits (sums in rank order), close
   to the f64 sum; one-shot and two-shot agree bit for bit. */
MPI_TEST(test_same_bits_on_every_rank) {
    enum { N = 50001 };
    float *in, *got[2], *rank0, *d;
    double *want;
    int size = hpdl_mpi_size(), r, a;
    int64_t i;
    NEED_IPC();
    in = (float *)hpdl_alloc(N, sizeof(float));
    want = (double *)hpdl_alloc(N, sizeof(double));
    rank0 = (float *)hpdl_alloc(N, sizeof(float));
    got[0] = (float *)hpdl_alloc(N, sizeof(float));
    got[1] = (float *)hpdl_alloc(N, sizeof(float));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, N * sizeof(float)));
    memset(want, 0, N * sizeof(double));
    for (r = 0; r < size; r++) { /* every rank draws every rank's input, to know the sum */
        hpdl_rng rng;
        hpdl_rng_seed(&rng, 1000 + (uint64_t)r);
        for (i = 0; i < N; i++) {
            float v = (float)(hpdl_rng_uniform(&rng) * 2.0 - 1.0);
            want[i] += v;
            if (r == hpdl_mpi_rank()) in[i] = v;
        }
    }
    for (a = 0; a < 2; a++) {
        HPDL_CUDA_CHECK(cudaMemcpy(d, in, N * sizeof(float), cudaMemcpyHostToDevice));
        HPDL_EXPECT(hpdl_mpi_allreduce_f32(d, N, k_algos[a], MPI_COMM_WORLD) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(got[a], d, N * sizeof(float), cudaMemcpyDeviceToHost));
    }
    memcpy(rank0, got[0], N * sizeof(float));
    MPI_Bcast(rank0, N, MPI_FLOAT, 0, MPI_COMM_WORLD);
    HPDL_EXPECT(memcmp(rank0, got[0], N * sizeof(float)) == 0);
    HPDL_EXPECT(memcmp(got[0], got[1], N * sizeof(float)) == 0);
    for (i = 0; i < N; i += 97) HPDL_EXPECT_NEAR(got[0][i], want[i], 1e-5);
    cudaFree(d);
    HPDL_FREE(in); HPDL_FREE(want); HPDL_FREE(rank0); HPDL_FREE(got[0]); HPDL_FREE(got[1]);
}

/* The one-shot's inboxes take an 8-byte word of all bits set as "nothing
   landed yet". Rank 0's data has such words (pairs of f32 with every bit
   set, a NaN) and single all-ones f32 too: the calls still end, those
   elements are NaN on every rank with the same bits, every other element is
   exact, and the next call (inboxes emptied again) is exact. */
MPI_TEST(test_all_ones_words_still_arrive) {
    enum { N = 4099, CALLS = 3 };
    const uint32_t all_ones = 0xFFFFFFFFu;
    float *in, *got, *rank0, *d;
    int k, bad = 0;
    int64_t i;
    NEED_IPC();
    in = (float *)hpdl_alloc(N, sizeof(float));
    got = (float *)hpdl_alloc(N, sizeof(float));
    rank0 = (float *)hpdl_alloc(N, sizeof(float));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, N * sizeof(float)));
    for (k = 0; k < CALLS; k++) {
        int with_ones = k < 2; /* the last call: plain data after two with all-ones words */
        for (i = 0; i < N; i++) {
            in[i] = (float)input_value(hpdl_mpi_rank(), i, k);
            if (with_ones && hpdl_mpi_rank() == 0 && (i % 13 < 2 || i % 29 == 5)) memcpy(&in[i], &all_ones, 4);
        }
        HPDL_CUDA_CHECK(cudaMemcpy(d, in, N * sizeof(float), cudaMemcpyHostToDevice));
        HPDL_EXPECT(hpdl_mpi_allreduce_f32(d, N, HPDL_ALLREDUCE_IPC_ONESHOT, MPI_COMM_WORLD) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(got, d, N * sizeof(float), cudaMemcpyDeviceToHost));
        memcpy(rank0, got, N * sizeof(float));
        MPI_Bcast(rank0, N, MPI_FLOAT, 0, MPI_COMM_WORLD);
        HPDL_EXPECT(memcmp(rank0, got, N * sizeof(float)) == 0);
        for (i = 0; i < N; i++) {
            int nan_wanted = with_ones && (i % 13 < 2 || i % 29 == 5);
            bad += nan_wanted ? !isnan(got[i]) : got[i] != (float)expected_sum(hpdl_mpi_size(), i, k);
        }
    }
    HPDL_EXPECT(bad == 0);
    cudaFree(d);
    HPDL_FREE(in); HPDL_FREE(got); HPDL_FREE(rank0);
}

/* A context of one rank (MPI_COMM_SELF) works on any GPU: the sum over one
   rank is the buffer itself. */
MPI_TEST(test_one_rank_context_is_identity) {
    hpdl_mpi_ipc ctx;
    float *d;
    int a;
    if (g_gpu < 0) HPDL_SKIP(HPDL_CUDA_NO_GPU);
    HPDL_EXPECT(hpdl_mpi_ipc_create(&ctx, 4096, MPI_COMM_SELF) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, (4097 + 1) * sizeof(float)));
    for (a = 0; a < HPDL_COUNT(k_algos); a++) {
        hpdl_allreduce_algo algo = k_algos[a];
        long long mine = 0;
        unsigned long long *d_wrong, wrong = 0;
        HPDL_CUDA_CHECK(cudaMalloc((void **)&d_wrong, sizeof *d_wrong));
        HPDL_CUDA_CHECK(cudaMemset(d_wrong, 0, sizeof *d_wrong));
        fill_kernel<<<grid_for(4097), 256>>>(d, 4097, 0, a);
        HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, d, 4097, HPDL_MPI_F32, algo) == HPDL_OK);
        count_wrong_kernel<<<grid_for(4097), 256>>>(d, 4097, 1, a, d_wrong);
        HPDL_CUDA_CHECK(cudaMemcpy(&wrong, d_wrong, sizeof wrong, cudaMemcpyDeviceToHost));
        mine = (long long)wrong;
        HPDL_EXPECT(mine == 0);
        cudaFree(d_wrong);
    }
    cudaFree(d);
    hpdl_mpi_ipc_destroy(&ctx);
}

/* Bad arguments give HPDL_ERR_INVALID on every rank; IPC on host memory is
   HPDL_ERR_UNSUPPORTED. */
MPI_TEST(test_bad_arguments) {
    hpdl_mpi_ipc ctx;
    float host[4] = {1, 2, 3, 4}, *d;
    HPDL_EXPECT(hpdl_mpi_ipc_create(&ctx, 8, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_create(NULL, 4096, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_create(&ctx, 4096, MPI_COMM_NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(NULL, host, 4, HPDL_MPI_F32, HPDL_ALLREDUCE_IPC_ONESHOT) == HPDL_ERR_INVALID);
    NEED_IPC();
    HPDL_EXPECT(hpdl_mpi_allreduce_f32(host, 4, HPDL_ALLREDUCE_IPC_ONESHOT, MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(host[0] == 1 && host[3] == 4);
    HPDL_EXPECT(hpdl_mpi_ipc_create(&ctx, 4096, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, 4 * sizeof(float)));
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, host, 4, HPDL_MPI_F32, HPDL_ALLREDUCE_IPC_ONESHOT) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, d, 4, HPDL_MPI_F32, HPDL_ALLREDUCE_NCCL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, d, -1, HPDL_MPI_F32, HPDL_ALLREDUCE_IPC_TWOSHOT) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, d, 4, (hpdl_mpi_dtype)9, HPDL_ALLREDUCE_AUTO) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_ipc_allreduce(&ctx, d, 0, HPDL_MPI_F32, HPDL_ALLREDUCE_AUTO) == HPDL_OK);
    cudaFree(d);
    hpdl_mpi_ipc_destroy(&ctx);
}

/* AUTO takes IPC up to its threshold for this many ranks and leaves it for
   NCCL above (stays with IPC in a build without NCCL), exactly both ways. */
MPI_TEST(test_auto_above_threshold) {
    int ranks;
    size_t limit;
    int64_t n;
    hpdl_allreduce_algo at = HPDL_ALLREDUCE_AUTO, above = HPDL_ALLREDUCE_AUTO;
    float *d;
    NEED_IPC();
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    limit = hpdl__mpi_ipc_auto_bytes(ranks);
    n = (int64_t)(limit / sizeof(float)) + 5;
    HPDL_EXPECT(ranks > 2 || limit == HPDL_MPI_IPC_AUTO_BYTES);
    HPDL_EXPECT(ranks <= 2 || limit == HPDL_MPI_IPC_AUTO_BYTES_MANY);
    HPDL_EXPECT(hpdl__mpi_resolve(&at, limit, HPDL_MPI_F32, 1, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_EXPECT(hpdl__mpi_resolve(&above, limit + 4, HPDL_MPI_F32, 1, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_EXPECT(at == hpdl__mpi_ipc_pick(limit, ranks));
#ifdef HPDL_MPI_HAVE_NCCL
    HPDL_EXPECT(above == HPDL_ALLREDUCE_NCCL);
#else
    HPDL_EXPECT(above == hpdl__mpi_ipc_pick(limit + 4, ranks));
#endif
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, (size_t)(n + 1) * sizeof(float)));
    HPDL_EXPECT(reduce_and_count(d, n, 3, [](float *x, int64_t count) {
                    return hpdl_mpi_allreduce_f32(x, count, HPDL_ALLREDUCE_AUTO, MPI_COMM_WORLD);
                }) == 0);
    cudaFree(d);
}

/* More ranks than GPUs (mpirun -np 3 on two GPUs, or CUDA_VISIBLE_DEVICES
   with one): NCCL is refused on every rank with HPDL_ERR_UNSUPPORTED before
   NCCL sees the ranks (NCCL itself fails on some of them and leaves the
   others waiting), IPC too, and AUTO reduces through MPI instead, exactly,
   below and above the size where it would take NCCL. */
MPI_TEST(test_ranks_sharing_a_gpu) {
    int64_t counts[2] = {1000, (int64_t)(HPDL_MPI_IPC_AUTO_BYTES / sizeof(float)) + 5};
    int shared = hpdl_test_gpus_shared(g_gpu), k;
    float *d;
    if (shared < 0) HPDL_SKIP("no GPU for some rank");
    if (!shared) HPDL_SKIP("every rank has a GPU of its own (run more ranks than GPUs)");
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d, (size_t)(counts[1] + 1) * sizeof(float)));
#ifdef HPDL_USE_NCCL
    HPDL_EXPECT(hpdl_mpi_allreduce_f32(d, 8, HPDL_ALLREDUCE_NCCL, MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
#endif
    HPDL_EXPECT(hpdl_mpi_allreduce_f32(d, 8, HPDL_ALLREDUCE_IPC_ONESHOT, MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
    for (k = 0; k < 2; k++)
        HPDL_EXPECT(reduce_and_count(d, counts[k], 5 + k, [](float *x, int64_t count) {
                        return hpdl_mpi_allreduce_f32(x, count, HPDL_ALLREDUCE_AUTO, MPI_COMM_WORLD);
                    }) == 0);
    cudaFree(d);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_bad_arguments),           HPDL_TEST(test_one_rank_context_is_identity),
        HPDL_TEST(test_exact_sums_f32),          HPDL_TEST(test_exact_sums_f64),
        HPDL_TEST(test_exact_sums_f16),          HPDL_TEST(test_exact_sums_bf16),
        HPDL_TEST(test_exact_sums_in_many_steps), HPDL_TEST(test_pieces_of_a_small_context),
        HPDL_TEST(test_back_to_back_calls),      HPDL_TEST(test_back_to_back_calls_in_steps),
        HPDL_TEST(test_same_bits_on_every_rank), HPDL_TEST(test_auto_above_threshold),
        HPDL_TEST(test_all_ones_words_still_arrive), HPDL_TEST(test_ranks_sharing_a_gpu),
    };
    hpdl_mpi_relaunch_per_gpu(argc, argv, "gpu_mpi_ipc");
    HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
    g_gpu = hpdl_mpi_select_gpu();
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
