/* bench/allreduce.cu - allreduce bandwidth in nccl-tests' layout.

   One rank per GPU. For sizes 4 B .. 1 GiB (factors of 4: -b, -e, -f
   change them), f32 sum, in place:
     hpdl_mpi     hpdl_mpi_allreduce_f32(..., HPDL_ALLREDUCE_MPI) on device buffers
                  (CUDA-aware MPI, else staged through pinned host chunks)
     hpdl_ring    the hand-written ring on device buffers (staged, GPU adds)
     hpdl_nccl    hpdl_mpi_allreduce_f32(..., HPDL_ALLREDUCE_NCCL)
     nccl_direct  ncclAllReduce called directly (anchor of hpdl_nccl and of
                  the IPC rows)
     mpi_host     MPI_Allreduce on host buffers (anchor of the staged paths)
     hpdl_ipc_oneshot, hpdl_ipc_twoshot, hpdl_auto
                  hpdl_mpi_allreduce_f32(..., HPDL_ALLREDUCE_IPC_ONESHOT /
                  _IPC_TWOSHOT / _AUTO): the NVLink allreduce through CUDA IPC
                  (GPUs of one node with peer access; else skipped)
   Every row also gives its busbw over nccl_direct's at the same size
   ("vs nccl"), and the largest size up to which each IPC row beats
   nccl_direct is printed (the crossover that HPDL_MPI_IPC_AUTO_BYTES is
   set from).
   Each variant is checked first (#wrong: elements differing from the exact
   sum of every rank's integer inputs, over all ranks), then timed as
   nccl-tests do: a barrier, back-to-back calls, one stream synchronisation,
   the slowest rank's host time, median of 5 repetitions. No L2 flush: the
   headline sizes (64 MiB, 1 GiB) are larger than L2. The host(us) column
   is the host's time to queue one call (before the synchronisation): near
   time(us), the host sets the pace.

   busbw = algbw * 2(p-1)/p (nccl-tests). Results: allreduce.csv (headline
   rows with their anchors) and allreduce_all.csv (every row) in
   $HPDL_RESULTS (default: the current folder), rank 0 writes.

   mpirun -np 2 build/bench/allreduce [-b 4] [-e 1G] [-f 4] [-n 0] [-w 1] [-c 1] [--ipc-only] [--no-check]

   Flags (nccl-tests' names; defaults in brackets):
       -b, --min-bytes SIZE   smallest size, bytes, K/M/G suffixes (1024s) [4]
       -e, --max-bytes SIZE   largest size [1G]
       -f, --factor F         size step factor [4]
       -n, --iters N          calls per timed repetition (0: about 2 GiB a repetition, 2 to 50) [0]
       -w, --warmup N         untimed calls before the repetitions [1]
       -c, --check 0|1        check every variant's sums first [1]
       --no-check             no cross-rank argument comparison while timing
       --ipc-only             nccl_direct and the IPC rows alone
       --output DIR           folder for the CSVs [$HPDL_RESULTS, else the current folder]
       --help, --version
   Started as a single process on a machine with several GPUs, it starts
   itself again under `mpirun -np <GPUs>`, so `make bench` measures them all.
   --no-check turns off the cross-rank argument comparison while timing;
   --ipc-only times nccl_direct and the IPC rows alone (to tune the IPC
   grid: HPDL_MPI_IPC_BLOCKS=32 ... in the environment). */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL
#endif
#endif
#include "hpdl_mpi.h"

/* nccl_direct runs first: every later row's "vs nccl" column needs it */
enum { V_NCCL_DIRECT, V_MPI, V_RING, V_NCCL, V_MPI_HOST, V_IPC_ONESHOT, V_IPC_TWOSHOT, V_AUTO, V_COUNT };
static const char *const variant_names[V_COUNT] = {"nccl_direct",      "hpdl_mpi",         "hpdl_ring",
                                                   "hpdl_nccl",        "mpi_host",         "hpdl_ipc_oneshot",
                                                   "hpdl_ipc_twoshot", "hpdl_auto"};

enum { MAX_SIZES = 32, REPS = 5 };

typedef struct bench {
    int rank, size;
    int ipc;      /* the IPC rows can run: one node, peer access */
    int ipc_only; /* --ipc-only: nccl_direct and the IPC rows alone */
    int iters;    /* -n: calls per repetition (0: by size) */
    int warmup;   /* -w: untimed calls first */
    float *dev, *host;
    unsigned long long *d_wrong;
    cudaStream_t stream;
#ifdef HPDL_MPI_HAVE_NCCL
    ncclComm_t nccl;
#endif
} bench;

/* Rank r's input element i: a small integer, so every sum is exact in f32. */
__host__ __device__ static inline float input_value(int rank, int64_t i) {
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    return (float)((h >> 33) % 17);
}

__host__ __device__ static inline float expected_sum(int size, int64_t i) {
    float s = 0.0f;
    int r;
    for (r = 0; r < size; r++) s += input_value(r, i);
    return s;
}

static __global__ void fill_kernel(float *x, int64_t n, int rank) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x) x[i] = input_value(rank, i);
}

static __global__ void count_wrong_kernel(const float *x, int64_t n, int size, unsigned long long *wrong) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long mine = 0;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x) mine += x[i] != expected_sum(size, i);
    if (mine) atomicAdd(wrong, mine);
}

static int available(const bench *b, int v) {
    int ipc_row = v == V_IPC_ONESHOT || v == V_IPC_TWOSHOT || v == V_AUTO;
    if ((v == V_IPC_ONESHOT || v == V_IPC_TWOSHOT) && !b->ipc) return 0;
    if (b->ipc_only && !ipc_row && v != V_NCCL_DIRECT) return 0;
#ifdef HPDL_MPI_HAVE_NCCL
    return 1;
#else
    return v != V_NCCL && v != V_NCCL_DIRECT;
#endif
}

/* 1 when the ranks can share GPU memory through CUDA IPC (collective; says
   why not on rank 0's stderr). */
static int ipc_possible(int size) {
    hpdl_mpi_ipc c;
    if (size < 2 || hpdl_mpi_ipc_create(&c, 4096, MPI_COMM_WORLD) != HPDL_OK) return 0;
    hpdl_mpi_ipc_destroy(&c);
    return 1;
}

static void run_op(bench *b, int v, int64_t count) {
    switch (v) {
    case V_MPI: HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_MPI, MPI_COMM_WORLD)); break;
    case V_RING: HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD)); break;
    case V_NCCL: HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_NCCL, MPI_COMM_WORLD)); break;
    case V_IPC_ONESHOT:
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_IPC_ONESHOT, MPI_COMM_WORLD));
        break;
    case V_IPC_TWOSHOT:
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_IPC_TWOSHOT, MPI_COMM_WORLD));
        break;
    case V_AUTO: HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(b->dev, count, HPDL_ALLREDUCE_AUTO, MPI_COMM_WORLD)); break;
#ifdef HPDL_MPI_HAVE_NCCL
    case V_NCCL_DIRECT:
        HPDL_NCCL_CHECK(ncclAllReduce(b->dev, b->dev, (size_t)count, ncclFloat32, ncclSum, b->nccl, b->stream));
        break;
#endif
    case V_MPI_HOST:
        HPDL_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, b->host, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        break;
    }
}

/* Fills the inputs, runs once, and counts wrong elements over all ranks. */
static long long validate(bench *b, int v, int64_t count) {
    unsigned long long wrong = 0;
    int64_t mine, total = 0;
    int64_t i;
    unsigned grid = (unsigned)(count / 256 + 1 < 4096 ? count / 256 + 1 : 4096);
    if (v == V_MPI_HOST) {
        for (i = 0; i < count; i++) b->host[i] = input_value(b->rank, i);
        run_op(b, v, count);
        for (i = 0; i < count; i++) wrong += b->host[i] != expected_sum(b->size, i);
    } else {
        fill_kernel<<<grid, 256, 0, b->stream>>>(b->dev, count, b->rank);
        HPDL_CUDA_CHECK(cudaMemsetAsync(b->d_wrong, 0, sizeof *b->d_wrong, b->stream));
        run_op(b, v, count);
        count_wrong_kernel<<<grid, 256, 0, b->stream>>>(b->dev, count, b->size, b->d_wrong);
        HPDL_CUDA_CHECK(cudaMemcpyAsync(&wrong, b->d_wrong, sizeof wrong, cudaMemcpyDeviceToHost, b->stream));
        HPDL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    }
    mine = (int64_t)wrong;
    HPDL_MPI_CHECK(MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    return (long long)total;
}

/* Median over REPS of the slowest rank's time per call, in seconds; *host:
   the same for the host's time to queue the calls (time per call near it:
   the host, not the GPU, sets the pace). */
static double time_op(bench *b, int v, int64_t count, int iters, double *host) {
    double t[REPS], queued[REPS];
    hpdl_stats st;
    int rep, i;
    memset(&st, 0, sizeof st);
    for (i = 0; i < b->warmup; i++) run_op(b, v, count);
    HPDL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
    for (rep = 0; rep < REPS; rep++) {
        double t0, mine[2], slowest[2];
        HPDL_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (i = 0; i < iters; i++) run_op(b, v, count);
        mine[1] = (MPI_Wtime() - t0) / iters;
        HPDL_CUDA_CHECK(cudaStreamSynchronize(b->stream));
        mine[0] = (MPI_Wtime() - t0) / iters;
        HPDL_MPI_CHECK(MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        t[rep] = slowest[0];
        queued[rep] = slowest[1];
    }
    HPDL_MPI_CHECK_STATUS(hpdl_stats_compute(queued, REPS, &st));
    *host = st.median;
    HPDL_MPI_CHECK_STATUS(hpdl_stats_compute(t, REPS, &st));
    return st.median;
}

static FILE *open_detail_csv(void) {
    return hpdl_csv_open_with_header(".", "allreduce_all",
                                     "variant,bytes,count,type,ranks,time_us,algbw_gbs,busbw_gbs,wrong,vs_nccl,host_us");
}

/* The measured sizes and each variant's bus bandwidth at them. */
typedef struct results {
    int64_t bytes[MAX_SIZES];
    int nsizes;
    double busbw[V_COUNT][MAX_SIZES];
} results;

static int size_index(const results *r, int64_t bytes) {
    int k;
    for (k = 0; k < r->nsizes; k++)
        if (r->bytes[k] == bytes) return k;
    return -1;
}

/* busbw of v over nccl_direct's at size k; 0 when either is missing. */
static double vs_nccl(const bench *b, const results *r, int v, int k) {
    if (!available(b, v) || !available(b, V_NCCL_DIRECT) || r->busbw[V_NCCL_DIRECT][k] <= 0.0) return 0.0;
    return r->busbw[v][k] / r->busbw[V_NCCL_DIRECT][k];
}

/* Headline: value vs anchor at one size, when both were measured. */
static void headline(FILE *f, const bench *b, const results *r, int64_t bytes, const char *label, int v, int anchor) {
    char metric[128], anchor_name[128];
    int k = size_index(r, bytes);
    if (!f || k < 0 || !available(b, v) || !available(b, anchor)) return;
    snprintf(metric, sizeof metric, "%s_busbw_%s", variant_names[v], label);
    snprintf(anchor_name, sizeof anchor_name, "%s_busbw_%s", variant_names[anchor], label);
    hpdl_csv_row(f, metric, r->busbw[v][k], "GB/s", anchor_name, r->busbw[anchor][k], 1);
}

/* The largest size up to which v beats nccl_direct at every size (the
   threshold for AUTO), or 0. */
static int64_t crossover(const bench *b, const results *r, int v) {
    int64_t last = 0;
    int k;
    for (k = 0; k < r->nsizes && vs_nccl(b, r, v, k) > 1.0; k++) last = r->bytes[k];
    return last;
}

/* The command line's settings, parsed before MPI starts (and before the
   relaunch under mpirun, so --help runs once). */
typedef struct settings {
    int64_t min_bytes, max_bytes;
    int factor, iters, warmup, check, arg_checks, ipc_only;
} settings;

/* A size like 4, 64K, 128M or 1G (1024s) into *out; exits 2 with a message
   that names the flag when it is not one in [1, 2^40]. */
static void parse_bytes(const char *flag, const char *text, int64_t *out) {
    char digits[32];
    size_t n = strlen(text);
    int shift = 0;
    int64_t v;
    if (n > 0 && n < sizeof digits) {
        char last = text[n - 1];
        shift = last == 'K' || last == 'k' ? 10 : last == 'M' || last == 'm' ? 20 : last == 'G' || last == 'g' ? 30 : 0;
    }
    snprintf(digits, sizeof digits, "%.*s", (int)(shift ? n - 1 : n), text);
    if (n >= sizeof digits || hpdl_arg_i64(flag, digits, 1, (int64_t)1 << 40 >> shift, &v) != HPDL_OK) {
        fprintf(stderr, "allreduce: %s takes a size in bytes like 4, 64K, 128M or 1G, at most 1024G\n", flag);
        exit(2);
    }
    *out = v << shift;
}

static settings parse_args(int argc, char **argv) {
    settings s;
    const char *min_text = "4", *max_text = "1G", *output = NULL;
    int no_arg_checks = 0;
    hpdl_cli_option o[9];
    memset(&s, 0, sizeof s);
    s.factor = 4;
    s.warmup = 1;
    s.check = 1;
    o[0] = hpdl_cli_string("min-bytes", 'b', &min_text, "SIZE", "smallest size in bytes, K/M/G suffixes (1024s)");
    o[1] = hpdl_cli_string("max-bytes", 'e', &max_text, "SIZE", "largest size in bytes");
    o[2] = hpdl_cli_int("factor", 'f', &s.factor, 2, 1 << 20, "size step factor");
    o[3] = hpdl_cli_int("iters", 'n', &s.iters, 0, 1 << 20, "calls per timed repetition (0: about 2 GiB, 2 to 50)");
    o[4] = hpdl_cli_int("warmup", 'w', &s.warmup, 0, 1 << 20, "untimed calls before the repetitions");
    o[5] = hpdl_cli_int("check", 'c', &s.check, 0, 1, "check every variant's sums first (1) or not (0)");
    o[6] = hpdl_cli_flag("no-check", 0, &no_arg_checks, "no cross-rank argument comparison while timing");
    o[7] = hpdl_cli_flag("ipc-only", 0, &s.ipc_only, "nccl_direct and the IPC rows alone");
    o[8] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "allreduce", "Allreduce bandwidth of hpdl's algorithms against NCCL and MPI.", o, 9);
    parse_bytes("--min-bytes", min_text, &s.min_bytes);
    parse_bytes("--max-bytes", max_text, &s.max_bytes);
    if (s.min_bytes < 4 || s.min_bytes > s.max_bytes) {
        fprintf(stderr, "allreduce: sizes from --min-bytes %s to --max-bytes %s: one f32 at least, min <= max\n",
                min_text, max_text);
        exit(2);
    }
    s.arg_checks = !no_arg_checks;
    hpdl_csv_set_dir(output);
    return s;
}

int main(int argc, char **argv) {
    bench b;
    results res;
    settings s = parse_args(argc, argv);
    int64_t max_bytes = s.max_bytes, bytes;
    long long wrong_total = 0;
    int v, k, device, checks = s.arg_checks;
    cudaDeviceProp prop;
    FILE *detail = NULL;
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off (shared hosts) */
    hpdl_mpi_relaunch_per_gpu(argc, argv, "allreduce");
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_init(&argc, &argv));
    memset(&b, 0, sizeof b);
    memset(&res, 0, sizeof res);
    b.ipc_only = s.ipc_only;
    b.iters = s.iters;
    b.warmup = s.warmup;
    b.rank = hpdl_mpi_rank();
    b.size = hpdl_mpi_size();
    device = hpdl_mpi_select_gpu();
    if (device < 0) {
        if (b.rank == 0) printf("allreduce: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n");
        hpdl_mpi_finalize();
        return 1;
    }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, device)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    hpdl_mpi_set_stream(b.stream);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&b.dev, (size_t)max_bytes));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&b.d_wrong, sizeof *b.d_wrong));
    b.host = (float *)hpdl_alloc((size_t)max_bytes, 1);
    if (!b.host) { fprintf(stderr, "allreduce: no memory for the host buffer\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
#ifdef HPDL_MPI_HAVE_NCCL
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_nccl_comm(MPI_COMM_WORLD, &b.nccl));
#endif
    b.ipc = ipc_possible(b.size);
    for (bytes = s.min_bytes; bytes <= max_bytes && res.nsizes < MAX_SIZES; bytes *= s.factor)
        res.bytes[res.nsizes++] = bytes;
    if (b.rank == 0) {
        int nccl_version = 0;
#ifdef HPDL_MPI_HAVE_NCCL
        ncclGetVersion(&nccl_version);
#endif
        printf("# hpdl allreduce: %d ranks, %s (rank 0: GPU %d), f32 sum in place\n", b.size, prop.name, device);
        printf("# NCCL %d%s, CUDA-aware MPI %s, staging chunk %zu B, argument checks %s while timing\n",
               nccl_version, nccl_version ? "" : " (not built: NCCL rows skipped)",
               hpdl_mpi_cuda_aware() ? "yes" : "no", hpdl__mpi_settings_get()->chunk_bytes, checks ? "on" : "off");
        printf("# IPC rows %s; AUTO takes IPC up to %zu B on %d ranks, IPC grid limit %d blocks\n",
               b.ipc ? "run" : "skipped (needs 2+ GPUs of one node with peer access)",
               hpdl__mpi_ipc_auto_bytes(b.size), b.size,
               getenv("HPDL_MPI_IPC_BLOCKS") ? atoi(getenv("HPDL_MPI_IPC_BLOCKS")) : HPDL_MPI_IPC_BLOCKS);
        if (b.size == 1) printf("# one rank: nothing moves and busbw is 0; run with mpirun -np 2 or more\n");
        detail = b.size > 1 ? open_detail_csv() : NULL;
    }
    for (v = 0; v < V_COUNT; v++) {
        if (!available(&b, v)) continue;
        if (b.rank == 0)
            printf("#\n# %s\n# %12s %12s %6s %11s %12s %12s %8s %8s %9s\n", variant_names[v], "size(B)", "count", "type",
                   "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "vs nccl", "host(us)");
        for (k = 0; k < res.nsizes; k++) {
            int64_t count = res.bytes[k] / 4;
            bytes = res.bytes[k];
            /* about 2 GiB per repetition, between 2 and 50 calls */
            int iters = (int)(((int64_t)2 << 30) / bytes > 50 ? 50 : ((int64_t)2 << 30) / bytes);
            long long wrong = s.check ? validate(&b, v, count) : -1; /* -1: not checked */
            double sec, algbw, host;
            if (iters < 2) iters = 2;
            if (b.iters > 0) iters = b.iters;
            hpdl_mpi_set_checks(checks);
            sec = time_op(&b, v, count, iters, &host);
            hpdl_mpi_set_checks(1);
            algbw = hpdl_mpi_algbw((double)bytes, sec) / 1e9;
            res.busbw[v][k] = hpdl_mpi_busbw((double)bytes, sec, b.size) / 1e9;
            if (wrong > 0) wrong_total += wrong;
            if (b.rank == 0) {
                double ratio = vs_nccl(&b, &res, v, k);
                printf("  %12lld %12lld %6s %11.2f %12.3f %12.3f %8lld %8.2f %9.2f\n", (long long)bytes,
                       (long long)count, "float", sec * 1e6, algbw, res.busbw[v][k], wrong, ratio, host * 1e6);
                if (detail)
                    fprintf(detail, "%s,%lld,%lld,float,%d,%.3f,%.4f,%.4f,%lld,%.4f,%.3f\n", variant_names[v],
                            (long long)bytes, (long long)count, b.size, sec * 1e6, algbw, res.busbw[v][k], wrong, ratio,
                            host * 1e6);
                fflush(stdout);
            }
        }
    }
    if (b.rank == 0) {
        FILE *f = b.size > 1 ? hpdl_csv_open(".", "allreduce") : NULL;
        static const int64_t ipc_sizes[3] = {(int64_t)1 << 20, (int64_t)4 << 20, (int64_t)8 << 20};
        static const char *const ipc_labels[3] = {"1MiB", "4MiB", "8MiB"};
        headline(f, &b, &res, (int64_t)64 << 20, "64MiB", V_NCCL, V_NCCL_DIRECT);
        headline(f, &b, &res, (int64_t)1 << 30, "1GiB", V_NCCL, V_NCCL_DIRECT);
        headline(f, &b, &res, (int64_t)64 << 20, "64MiB", V_MPI, V_MPI_HOST);
        headline(f, &b, &res, (int64_t)64 << 20, "64MiB", V_RING, V_MPI_HOST);
        headline(f, &b, &res, (int64_t)1 << 30, "1GiB", V_MPI, V_MPI_HOST);
        headline(f, &b, &res, (int64_t)1 << 30, "1GiB", V_RING, V_MPI_HOST);
        for (k = 0; k < 3; k++)
            for (v = V_IPC_ONESHOT; v <= V_AUTO; v++)
                headline(f, &b, &res, ipc_sizes[k], ipc_labels[k], v, V_NCCL_DIRECT);
        if (f) fclose(f);
        for (v = V_IPC_ONESHOT; v <= V_AUTO; v++)
            if (available(&b, v) && available(&b, V_NCCL_DIRECT))
                printf("# crossover: %s beats nccl_direct at every size up to %lld B\n", variant_names[v],
                       (long long)crossover(&b, &res, v));
        if (detail) fclose(detail);
        printf("# out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    }
    free(b.host);
    cudaFree(b.dev);
    cudaFree(b.d_wrong);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_finalize());
    cudaStreamDestroy(b.stream);
    return wrong_total ? 1 : 0;
}
