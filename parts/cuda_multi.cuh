/* cuda_multi: spliced into hpdl_cuda.cuh */
/* ======================================================================== */
/* Several GPUs: device sets, transfers, matrix powers, model parallelism    */
/* ======================================================================== */
/* Everything here drives several GPUs from one host thread: one stream per
   GPU, events for the hand-offs, peer-to-peer copies where the GPUs allow
   them and copies staged through pinned host memory where they do not.

   Logical devices. A device set names G logical devices; logical d runs on
   CUDA device d % (visible count) when virtual devices are allowed, so the
   multi-GPU logic (streams, events, transfers) runs and is tested on one GPU.
   CUDA_VISIBLE_DEVICES is honoured because the runtime applies it first.

   Functions that take a device set leave the caller's current device as
   they found it. */

#ifndef HPDL_CUDA_MAX_DEVICES
#define HPDL_CUDA_MAX_DEVICES 16
#endif

/* Counts of device-to-device moves, by the path they took. */
typedef struct hpdl_cuda_xfer_stats {
    long long transfers, bytes;
    long long local;  /* both logical devices on one GPU: a plain device copy */
    long long peer;   /* GPU to GPU directly (NVLink or PCIe peer access) */
    long long staged; /* through pinned host memory: no peer access */
} hpdl_cuda_xfer_stats;

typedef struct hpdl_cuda_devices {
    int count;                                /* logical devices */
    int visible;                              /* GPUs the runtime shows */
    int physical[HPDL_CUDA_MAX_DEVICES];      /* logical -> CUDA device */
    unsigned char peer[HPDL_CUDA_MAX_DEVICES][HPDL_CUDA_MAX_DEVICES]; /* a reads/writes b directly */
} hpdl_cuda_devices;

/* Number of visible GPUs (0 without a driver: never an error). */
HPDL_API int hpdl_cuda_device_count(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) { cudaGetLastError(); return 0; }
    return count;
}

/* Device memory in use (total - free, every process counted) on one GPU. */
HPDL_API hpdl_status hpdl_cuda_mem_in_use(int device, size_t *used, size_t *total) {
    size_t free_b = 0, total_b = 0;
    int current = 0;
    if (!used || !total || device < 0 || device >= hpdl_cuda_device_count()) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(device));
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    HPDL_CUDA_TRY(cudaSetDevice(current));
    *used = total_b - free_b;
    *total = total_b;
    return HPDL_OK;
}

/* Lists the visible GPUs (name, memory, peer access) as a small table. */
HPDL_API hpdl_status hpdl_cuda_devices_print(FILE *f) {
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    int n = hpdl_cuda_device_count(), a, b;
    if (!f) return HPDL_ERR_INVALID;
    fprintf(f, "GPUs visible: %d (CUDA_VISIBLE_DEVICES=%s)\n", n, visible ? visible : "unset");
    for (a = 0; a < n; a++) {
        hpdl_cuda_device_info info;
        size_t used = 0, total = 0;
        hpdl_status s = hpdl_cuda_device_query(a, &info);
        if (s == HPDL_OK) s = hpdl_cuda_mem_in_use(a, &used, &total);
        if (s != HPDL_OK) return s;
        fprintf(f, "  GPU %d: %s, sm_%d%d, %d SMs, %.1f GiB, %.2f GiB in use, peer access to:", a, info.name,
                info.cc_major, info.cc_minor, info.sm_count, total / 1073741824.0, used / 1073741824.0);
        for (b = 0; b < n; b++) {
            int can = 0;
            if (b != a && cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) fprintf(f, " %d", b);
        }
        fprintf(f, "\n");
    }
    return HPDL_OK;
}

/* Lets GPU a read and write GPU b's memory when the hardware allows it.
   Idempotent: enabling twice is fine. *enabled says whether it is on. */
HPDL_API hpdl_status hpdl_cuda_enable_peer(int a, int b, int *enabled) {
    int can = 0, current = 0;
    cudaError_t e;
    if (!enabled) return HPDL_ERR_INVALID;
    *enabled = 0;
    if (a == b) { *enabled = 1; return HPDL_OK; }
    HPDL_CUDA_TRY(cudaDeviceCanAccessPeer(&can, a, b));
    if (!can) return HPDL_OK;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(a));
    e = cudaDeviceEnablePeerAccess(b, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) { cudaGetLastError(); e = cudaSuccess; }
    HPDL_CUDA_TRY(cudaSetDevice(current));
    HPDL_CUDA_TRY(e);
    *enabled = 1;
    return HPDL_OK;
}

/* Sets up n logical devices and enables peer access between their GPUs.
   Without allow_virtual, asking for more GPUs than are visible is an error
   (with a message naming both numbers), not a silent fold onto fewer. */
HPDL_API hpdl_status hpdl__cuda_check_gpus(int n, int allow_virtual) {
    int visible = hpdl_cuda_device_count();
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (n < 1 || n > HPDL_CUDA_MAX_DEVICES) return HPDL_ERR_INVALID;
    if (visible > 0 && (n <= visible || allow_virtual)) return HPDL_OK;
    fprintf(stderr, "hpdl: %d GPU%s requested but %d visible (CUDA_VISIBLE_DEVICES=%s)\n", n, n > 1 ? "s" : "",
            visible, env ? env : "unset");
    return HPDL_ERR_INVALID;
}

HPDL_API hpdl_status hpdl_cuda_devices_open(hpdl_cuda_devices *set, int n, int allow_virtual) {
    int visible = hpdl_cuda_device_count(), a, b;
    hpdl_status s = hpdl__cuda_check_gpus(n, allow_virtual);
    if (!set) return HPDL_ERR_INVALID;
    if (s != HPDL_OK) return s;
    memset(set, 0, sizeof *set);
    set->count = n;
    set->visible = visible;
    for (a = 0; a < n; a++) set->physical[a] = a % visible;
    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++) {
            int on = 0;
            hpdl_status s = hpdl_cuda_enable_peer(set->physical[a], set->physical[b], &on);
            if (s != HPDL_OK) return s;
            set->peer[a][b] = (unsigned char)on;
        }
    return HPDL_OK;
}

/* Staged copy: device -> pinned host -> device, chunk by chunk, in order on
   one stream (so one staging buffer serves all chunks). */
HPDL_API hpdl_status hpdl__cuda_move_staged(void *dst, const void *src, size_t bytes, void *stage,
                                            size_t stage_bytes, cudaStream_t stream) {
    size_t done = 0;
    while (done < bytes) {
        size_t chunk = bytes - done < stage_bytes ? bytes - done : stage_bytes;
        HPDL_CUDA_TRY(cudaMemcpyAsync(stage, (const char *)src + done, chunk, cudaMemcpyDeviceToHost, stream));
        HPDL_CUDA_TRY(cudaMemcpyAsync((char *)dst + done, stage, chunk, cudaMemcpyHostToDevice, stream));
        done += chunk;
    }
    return HPDL_OK;
}

/* Copies `bytes` from logical device src_dev to dst_dev, ordered on `stream`
   (any of the two devices' streams): a device copy when both are one GPU, a
   peer copy when peer access is on, else staged through `stage` (pinned,
   stage_bytes) or, without one, through the driver's own staging. Counts the
   move in *stats when given. Transfers sharing a staging buffer must go on
   one stream. */
HPDL_API hpdl_status hpdl_cuda_move(const hpdl_cuda_devices *set, void *dst, int dst_dev, const void *src,
                                    int src_dev, size_t bytes, void *stage, size_t stage_bytes,
                                    cudaStream_t stream, hpdl_cuda_xfer_stats *stats) {
    int pa, pb;
    if (!set || dst_dev < 0 || dst_dev >= set->count || src_dev < 0 || src_dev >= set->count) return HPDL_ERR_INVALID;
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (stage && !stage_bytes) return HPDL_ERR_INVALID;
    if (!bytes) return HPDL_OK;
    pa = set->physical[src_dev];
    pb = set->physical[dst_dev];
    if (pa == pb) {
        HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        if (stats) stats->local++;
    } else if (set->peer[dst_dev][src_dev] || !stage) {
        HPDL_CUDA_TRY(cudaMemcpyPeerAsync(dst, pb, src, pa, bytes, stream));
        if (stats) { if (set->peer[dst_dev][src_dev]) stats->peer++; else stats->staged++; }
    } else {
        hpdl_status s = hpdl__cuda_move_staged(dst, src, bytes, stage, stage_bytes, stream);
        if (s != HPDL_OK) return s;
        if (stats) stats->staged++;
    }
    if (stats) { stats->transfers++; stats->bytes += (long long)bytes; }
    return HPDL_OK;
}

/* True when some pair of the set's GPUs has no peer access (staging needed). */
HPDL_API int hpdl__cuda_devices_need_staging(const hpdl_cuda_devices *set) {
    int a, b;
    for (a = 0; a < set->count; a++)
        for (b = 0; b < set->count; b++)
            if (set->physical[a] != set->physical[b] && !set->peer[a][b]) return 1;
    return 0;
}

/* Per-device streams and events that most multi-GPU helpers here need. */
typedef struct hpdl__cuda_lanes {
    hpdl_cuda_devices dev;
    cudaStream_t stream[HPDL_CUDA_MAX_DEVICES];
    cudaEvent_t ready[HPDL_CUDA_MAX_DEVICES]; /* hand-off point of each lane */
    cudaEvent_t fork;                          /* on device 0: where a run starts */
    void *stage[HPDL_CUDA_MAX_DEVICES];        /* pinned, for pulls into lane g */
    size_t stage_bytes;
    int current;                               /* caller's device, restored at the end */
} hpdl__cuda_lanes;

#define HPDL__STAGE_BYTES ((size_t)4 << 20)

HPDL_API void hpdl__cuda_lanes_destroy(hpdl__cuda_lanes *l) {
    int g;
    for (g = 0; g < l->dev.count; g++) {
        cudaSetDevice(l->dev.physical[g]);
        if (l->stream[g]) cudaStreamDestroy(l->stream[g]);
        if (l->ready[g]) cudaEventDestroy(l->ready[g]);
        hpdl_cuda_free_pinned(l->stage[g]);
        l->stream[g] = NULL; l->ready[g] = NULL; l->stage[g] = NULL;
    }
    if (l->fork) { cudaSetDevice(l->dev.physical[0]); cudaEventDestroy(l->fork); l->fork = NULL; }
    cudaSetDevice(l->current);
}

HPDL_API hpdl_status hpdl__cuda_lanes_create(hpdl__cuda_lanes *l, int n, int allow_virtual) {
    int g, staging;
    hpdl_status s;
    memset(l, 0, sizeof *l);
    if (cudaGetDevice(&l->current) != cudaSuccess) { cudaGetLastError(); l->current = 0; }
    s = hpdl_cuda_devices_open(&l->dev, n, allow_virtual);
    if (s != HPDL_OK) { l->dev.count = 0; return s; }
    staging = hpdl__cuda_devices_need_staging(&l->dev);
    l->stage_bytes = staging ? HPDL__STAGE_BYTES : 0;
    for (g = 0; g < n && s == HPDL_OK; g++) {
        if (cudaSetDevice(l->dev.physical[g]) != cudaSuccess ||
            cudaStreamCreateWithFlags(&l->stream[g], cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&l->ready[g], cudaEventDisableTiming) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK && staging) s = hpdl_cuda_alloc_pinned(&l->stage[g], l->stage_bytes);
    }
    if (s == HPDL_OK && (cudaSetDevice(l->dev.physical[0]) != cudaSuccess ||
                         cudaEventCreateWithFlags(&l->fork, cudaEventDisableTiming) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s != HPDL_OK) { cudaGetLastError(); hpdl__cuda_lanes_destroy(l); return s; }
    cudaSetDevice(l->current);
    return HPDL_OK;
}

/* Every lane starts after the work issued so far on `origin` (a stream of
   device 0; 0 means device 0's default stream). */
HPDL_API hpdl_status hpdl__cuda_lanes_fork(hpdl__cuda_lanes *l, cudaStream_t origin) {
    int g;
    if (cudaGetDevice(&l->current) != cudaSuccess) return HPDL_ERR_CUDA;
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[0]));
    HPDL_CUDA_TRY(cudaEventRecord(l->fork, origin));
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamWaitEvent(l->stream[g], l->fork, 0));
    return HPDL_OK;
}

/* Marks the work issued so far on lane g; lanes that wait_mark(g) wait for
   it (marking every lane first, then waiting, keeps the waits parallel). */
HPDL_API hpdl_status hpdl__cuda_lanes_mark(hpdl__cuda_lanes *l, int g) {
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[g]));
    HPDL_CUDA_TRY(cudaEventRecord(l->ready[g], l->stream[g]));
    return HPDL_OK;
}

HPDL_API hpdl_status hpdl__cuda_lanes_wait_mark(hpdl__cuda_lanes *l, int to, int from) {
    HPDL_CUDA_TRY(cudaStreamWaitEvent(l->stream[to], l->ready[from], 0));
    return HPDL_OK;
}

/* Lane `to` waits for the work issued so far on lane `from`. */
HPDL_API hpdl_status hpdl__cuda_lanes_wait(hpdl__cuda_lanes *l, int to, int from) {
    hpdl_status s = hpdl__cuda_lanes_mark(l, from);
    return s != HPDL_OK ? s : hpdl__cuda_lanes_wait_mark(l, to, from);
}

/* `origin` waits for every lane; the caller's device is restored. */
HPDL_API hpdl_status hpdl__cuda_lanes_join(hpdl__cuda_lanes *l, cudaStream_t origin) {
    int g;
    for (g = 0; g < l->dev.count; g++) {
        hpdl_status s = hpdl__cuda_lanes_mark(l, g);
        if (s != HPDL_OK) return s;
    }
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[0]));
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamWaitEvent(origin, l->ready[g], 0));
    HPDL_CUDA_TRY(cudaSetDevice(l->current));
    return HPDL_OK;
}

/* Lane g pulls bytes from lane src's memory, counted in *stats. */
HPDL_API hpdl_status hpdl__cuda_lanes_pull(hpdl__cuda_lanes *l, int g, void *dst, int src, const void *from,
                                           size_t bytes, hpdl_cuda_xfer_stats *stats) {
    return hpdl_cuda_move(&l->dev, dst, g, from, src, bytes, l->stage[g], l->stage_bytes, l->stream[g], stats);
}

HPDL_API hpdl_status hpdl__cuda_lanes_sync(hpdl__cuda_lanes *l) {
    int g;
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamSynchronize(l->stream[g]));
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Matrix power by repeated squaring (one GPU)                               */
/* ------------------------------------------------------------------------ */
/* A^p as a list of products over five named buffers: the input, three
   workspace matrices and the output. Squaring takes floor(log2 p) squarings
   and one product per further set bit of p, e.g. A^10 = A^8 * A^2: A^2, A^4,
   A^8 and one product, 4 GEMMs instead of the naive 9. Two matrices are
   alive at any time (the running product and the current square A^(2^i)),
   so three workspace buffers always leave one free for the next result. The
   last product writes the output directly. */
enum { HPDL__MP_INPUT = 0, HPDL__MP_WS = 1 /* 1, 2, 3 */, HPDL__MP_BUFFERS = 4 };

typedef struct hpdl__matpow_step { int dst, lhs, rhs; } hpdl__matpow_step;

typedef struct hpdl__matpow_plan {
    int power, naive, count; /* count: products; the last one writes the output */
    hpdl__matpow_step step[64];
} hpdl__matpow_plan;

HPDL_API int hpdl__matpow_free_slot(int a, int b) {
    int w;
    for (w = HPDL__MP_WS; w < HPDL__MP_WS + 3; w++)
        if (w != a && w != b) return w;
    return -1; /* unreachable: two live buffers leave one of three free */
}

HPDL_API void hpdl__matpow_plan_push(hpdl__matpow_plan *p, int dst, int lhs, int rhs) {
    p->step[p->count].dst = dst;
    p->step[p->count].lhs = lhs;
    p->step[p->count].rhs = rhs;
    p->count++;
}

/* power >= 0. Naive: p - 1 products A*A*...*A, ping-ponging two buffers. */
HPDL_API void hpdl__matpow_plan_init(hpdl__matpow_plan *p, int power, int naive) {
    int base = HPDL__MP_INPUT, res = -1, bit, top = 0;
    p->power = power;
    p->naive = naive;
    p->count = 0;
    if (naive) { p->count = power > 1 ? power - 1 : 0; return; }
    while (top < 30 && (power >> (top + 1))) top++;
    for (bit = 0; power > 1 && bit <= top; bit++) {
        if ((power >> bit) & 1) {
            if (res < 0) res = base;
            else { int d = hpdl__matpow_free_slot(res, base); hpdl__matpow_plan_push(p, d, res, base); res = d; }
        }
        if (bit < top) { int d = hpdl__matpow_free_slot(res, base); hpdl__matpow_plan_push(p, d, base, base); base = d; }
    }
}

HPDL_API hpdl__matpow_step hpdl__matpow_plan_step(const hpdl__matpow_plan *p, int i) {
    hpdl__matpow_step s;
    if (!p->naive) return p->step[i];
    s.lhs = i == 0 ? HPDL__MP_INPUT : HPDL__MP_WS + (i - 1) % 2;
    s.rhs = HPDL__MP_INPUT;
    s.dst = HPDL__MP_WS + i % 2;
    return s;
}

/* Workspace of hpdl_cuda_matpow_ws_*: three n x n matrices. */
HPDL_API size_t hpdl_cuda_matpow_workspace_bytes(int n, size_t elem_bytes) {
    return n > 0 ? 3 * (size_t)n * (size_t)n * elem_bytes : 0;
}

HPDL_API hpdl_status hpdl__matpow_check(int n, int power, const void *A, int lda, const void *out, int ldo,
                                        size_t elem_bytes) {
    if (n < 1 || power < 0 || hpdl__check_matrix(A, n, n, lda) != HPDL_OK ||
        hpdl__check_matrix(out, n, n, ldo) != HPDL_OK || hpdl__square_views_overlap(A, lda, out, ldo, n, elem_bytes))
        return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* Blocks for an elementwise grid-stride kernel over `count` items. */
HPDL_API int hpdl__cuda_grid(long long count) {
    long long blocks = (count + 255) / 256;
    return (int)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

/* f32 products on TF32 tensor cores: cuBLAS with CUBLAS_TF32_TENSOR_OP_MATH.
   Inputs are rounded to a 10-bit mantissa, so expect ~1e-3 relative error
   instead of f32's ~1e-6, at several times the f32 rate. Other types ignore
   it (cuBLAS's plain path). A value outside the GEMM part's algo list: the
   functions here that take an algo accept it. */
#define HPDL_GEMM_TF32 ((hpdl_gemm_algo)(HPDL_GEMM_CUBLAS + 100))

/* Turns TF32 on or off for the current device's cuBLAS handle. */
HPDL_API hpdl_status hpdl__cuda_tf32_math(int on) {
    cublasHandle_t h;
    hpdl_status s = hpdl__cublas_handle(&h);
    if (s != HPDL_OK) return s;
    return cublasSetMathMode(h, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS
               ? HPDL_OK : HPDL_ERR_CUDA;
}

/* Per type: matrix power (squaring and naive, with or without a caller's
   workspace), k matrices' powers summed over several GPUs, and one matrix's
   power split by row blocks over several GPUs. */
#define HPDL_DEFINE_CUDA_MATPOW(SUFFIX, T, ACC, LOAD, STORE)                     \
    __global__ void hpdl__cuda_eye_kernel_##SUFFIX(int n, T *out, int ldo) {    \
        long long i, total = (long long)n * n;                                  \
        for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;    \
             i += (long long)gridDim.x * blockDim.x)                            \
            out[(i / n) * ldo + i % n] = STORE(i / n == i % n ? 1.0f : 0.0f);   \
    }                                                                           \
    __global__ void hpdl__cuda_add_kernel_##SUFFIX(long long count, T *acc, const T *x) { \
        long long i;                                                            \
        for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;    \
             i += (long long)gridDim.x * blockDim.x)                            \
            acc[i] = STORE(LOAD(acc[i]) + LOAD(x[i]));                          \
    }                                                                           \
    /* hpdl_cuda_gemm_algo_<type>, plus HPDL_GEMM_TF32. */                  \
    HPDL_API hpdl_status hpdl__cuda_multi_gemm_##SUFFIX(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, \
                                                       int M, int N, int K, ACC alpha, const T *A, int lda, const T *B, \
                                                       int ldb, ACC beta, T *C, int ldc, cudaStream_t stream) { \
        hpdl_status s, off;                                                     \
        if (algo != HPDL_GEMM_TF32)                                             \
            return hpdl_cuda_gemm_algo_##SUFFIX(algo, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream); \
        s = hpdl__cuda_tf32_math(1);                                            \
        if (s == HPDL_OK)                                                       \
            s = hpdl_cuda_gemm_algo_##SUFFIX(HPDL_GEMM_CUBLAS, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream); \
        off = hpdl__cuda_tf32_math(0);                                          \
        return s != HPDL_OK ? s : off;                                          \
    }                                                                           \
    HPDL_API hpdl_status hpdl__cuda_matpow_run_##SUFFIX(const hpdl__matpow_plan *p, int n, const T *A, int lda, \
                                                        T *out, int ldo, hpdl_gemm_algo algo, T *ws, cudaStream_t stream) { \
        const T *in[HPDL__MP_BUFFERS];                                          \
        int i, w;                                                               \
        if (p->power == 0) {                                                    \
            hpdl__cuda_eye_kernel_##SUFFIX<<<hpdl__cuda_grid((long long)n * n), 256, 0, stream>>>(n, out, ldo); \
            HPDL_CUDA_TRY_LAUNCH();                                             \
            return HPDL_OK;                                                     \
        }                                                                       \
        if (p->power == 1) {                                                    \
            HPDL_CUDA_TRY(cudaMemcpy2DAsync(out, (size_t)ldo * sizeof(T), A, (size_t)lda * sizeof(T), \
                                            (size_t)n * sizeof(T), (size_t)n, cudaMemcpyDeviceToDevice, stream)); \
            return HPDL_OK;                                                     \
        }                                                                       \
        in[HPDL__MP_INPUT] = A;                                                 \
        for (w = 0; w < 3; w++) in[HPDL__MP_WS + w] = ws + (size_t)w * n * n;   \
        for (i = 0; i < p->count; i++) {                                        \
            hpdl__matpow_step s = hpdl__matpow_plan_step(p, i);                 \
            int last = i == p->count - 1;                                       \
            hpdl_status st = hpdl__cuda_multi_gemm_##SUFFIX(algo, HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, (ACC)1, \
                in[s.lhs], s.lhs == HPDL__MP_INPUT ? lda : n, in[s.rhs], s.rhs == HPDL__MP_INPUT ? lda : n, \
                (ACC)0, last ? out : (T *)in[s.dst], last ? ldo : n, stream);    \
            if (st != HPDL_OK) return st;                                       \
        }                                                                       \
        return HPDL_OK;                                                         \
    }                                                                           \
    HPDL_API hpdl_status hpdl__cuda_matpow_any_##SUFFIX(int naive, int n, int power, const T *A, int lda, T *out, \
                                                        int ldo, hpdl_gemm_algo algo, T *ws, int own_ws, cudaStream_t stream) { \
        hpdl__matpow_plan p;                                                    \
        hpdl_status s = hpdl__matpow_check(n, power, A, lda, out, ldo, sizeof(T)); \
        if (s != HPDL_OK) return s;                                             \
        if (!own_ws && !ws && power > 1) return HPDL_ERR_INVALID;               \
        hpdl__matpow_plan_init(&p, power, naive);                               \
        if (own_ws && power > 1 &&                                              \
            cudaMallocAsync((void **)&ws, hpdl_cuda_matpow_workspace_bytes(n, sizeof(T)), stream) != cudaSuccess) { \
            cudaGetLastError();                                                 \
            return HPDL_ERR_NOMEM;                                              \
        }                                                                       \
        s = hpdl__cuda_matpow_run_##SUFFIX(&p, n, A, lda, out, ldo, algo, ws, stream); \
        if (own_ws && power > 1) cudaFreeAsync(ws, stream);                     \
        return s;                                                               \
    }                                                                           \
    /* out = A^power (n x n, row-major) on the current device, ordered on     \
       stream; ws: hpdl_cuda_matpow_workspace_bytes(n, sizeof(T)) of device    \
       memory (unused for power <= 1). out must not overlap A. */             \
    HPDL_API hpdl_status hpdl_cuda_matpow_ws_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo, \
                                                     hpdl_gemm_algo algo, T *ws, cudaStream_t stream) { \
        return hpdl__cuda_matpow_any_##SUFFIX(0, n, power, A, lda, out, ldo, algo, ws, 0, stream); \
    }                                                                           \
    /* The same, with the workspace allocated and freed on the stream. */     \
    HPDL_API hpdl_status hpdl_cuda_matpow_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo, \
                                                  hpdl_gemm_algo algo, cudaStream_t stream) { \
        return hpdl__cuda_matpow_any_##SUFFIX(0, n, power, A, lda, out, ldo, algo, NULL, 1, stream); \
    }                                                                           \
    /* power - 1 products: the baseline the squaring is measured against. */  \
    HPDL_API hpdl_status hpdl_cuda_matpow_naive_ws_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo, \
                                                           hpdl_gemm_algo algo, T *ws, cudaStream_t stream) { \
        return hpdl__cuda_matpow_any_##SUFFIX(1, n, power, A, lda, out, ldo, algo, ws, 0, stream); \
    }                                                                           \
    HPDL_API hpdl_status hpdl_cuda_matpow_naive_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo, \
                                                        hpdl_gemm_algo algo, cudaStream_t stream) { \
        return hpdl__cuda_matpow_any_##SUFFIX(1, n, power, A, lda, out, ldo, algo, NULL, 1, stream); \
    }                                                                           \
    HPDL_API hpdl_status hpdl__cuda_add_##SUFFIX(long long count, T *acc, const T *x, cudaStream_t stream) { \
        hpdl__cuda_add_kernel_##SUFFIX<<<hpdl__cuda_grid(count), 256, 0, stream>>>(count, acc, x); \
        HPDL_CUDA_TRY_LAUNCH();                                                 \
        return HPDL_OK;                                                         \
    }                                                                           \
    HPDL__DEFINE_CUDA_POWSUM(SUFFIX, T)                                         \
    HPDL__DEFINE_CUDA_ROWPOW(SUFFIX, T, ACC)

/* ------------------------------------------------------------------------ */
/* Sum of powers A_1^p + ... + A_k^p over several GPUs                       */
/* ------------------------------------------------------------------------ */
/* The k matrices are split evenly over G GPUs (the layer placement math,
   matrices for layers). Each GPU computes its matrices' powers on its own
   stream and sums them; the G partial sums then meet on GPU 0 by a tree of
   pairwise moves (log2 G rounds), each a peer copy where peer access exists
   and staged through pinned host memory otherwise, then one add. For k = G =
   2 and n = 10000 in f32 that is one 400 MB copy (~1.5 ms over NVLink)
   against ~0.15 s of products. */
typedef struct hpdl_cuda_powsum {
    hpdl__cuda_lanes lanes;
    int k, n, power;
    size_t elem_bytes;
    int first[HPDL_CUDA_MAX_DEVICES + 1]; /* matrices [first[g], first[g+1]) on GPU g */
    void *mats[HPDL_CUDA_MAX_DEVICES];    /* GPU g: its matrices, n x n each, back to back */
    void *ws[HPDL_CUDA_MAX_DEVICES];      /* GPU g: power workspace; receives a partial sum */
    void *pow[HPDL_CUDA_MAX_DEVICES];     /* GPU g: one power before it is added (k_g > 1) */
    void *acc[HPDL_CUDA_MAX_DEVICES];     /* GPU g: partial sum; acc[0] holds the total */
    hpdl_cuda_xfer_stats xfer;            /* partial sums moved, over all runs */
} hpdl_cuda_powsum;

HPDL_API void hpdl_cuda_powsum_destroy(hpdl_cuda_powsum *p) {
    int g;
    if (!p) return;
    for (g = 0; g < p->lanes.dev.count; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        hpdl_cuda_free(p->mats[g]); hpdl_cuda_free(p->ws[g]);
        hpdl_cuda_free(p->pow[g]); hpdl_cuda_free(p->acc[g]);
        p->mats[g] = p->ws[g] = p->pow[g] = p->acc[g] = NULL;
    }
    hpdl__cuda_lanes_destroy(&p->lanes);
}

/* Plans k matrices of n x n to the power `power` on n_gpus GPUs (at most k of
   them are used). More GPUs than visible: HPDL_ERR_INVALID with a message,
   unless allow_virtual (several logical GPUs on one, for tests). */
HPDL_API hpdl_status hpdl__cuda_powsum_create(hpdl_cuda_powsum *p, int k, int n, int power, int n_gpus,
                                              int allow_virtual, size_t elem_bytes) {
    size_t mat;
    int g, used;
    hpdl_status s;
    if (!p || k < 1 || n < 1 || power < 0 || n_gpus < 1) return HPDL_ERR_INVALID;
    memset(p, 0, sizeof *p);
    used = n_gpus < k ? n_gpus : k;
    s = hpdl__cuda_check_gpus(n_gpus, allow_virtual);
    if (s == HPDL_OK) s = hpdl_place_even(k, used, p->first);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_create(&p->lanes, used, allow_virtual);
    if (s != HPDL_OK) return s;
    p->k = k; p->n = n; p->power = power; p->elem_bytes = elem_bytes;
    mat = (size_t)n * (size_t)n * elem_bytes;
    for (g = 0; g < used && s == HPDL_OK; g++) {
        int count = p->first[g + 1] - p->first[g];
        cudaSetDevice(p->lanes.dev.physical[g]);
        s = hpdl_cuda_alloc(&p->mats[g], (size_t)count * mat);
        if (s == HPDL_OK) s = hpdl_cuda_alloc(&p->ws[g], hpdl_cuda_matpow_workspace_bytes(n, elem_bytes));
        if (s == HPDL_OK && count > 1) s = hpdl_cuda_alloc(&p->pow[g], mat);
        if (s == HPDL_OK) s = hpdl_cuda_alloc(&p->acc[g], mat);
    }
    cudaSetDevice(p->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_powsum_destroy(p);
    return s;
}

/* Copies host matrix j (n x n, contiguous) to the GPU that owns it. */
HPDL_API hpdl_status hpdl__cuda_powsum_upload(hpdl_cuda_powsum *p, const void *const *host_mats) {
    size_t mat;
    int g, j;
    if (!p || !host_mats) return HPDL_ERR_INVALID;
    for (j = 0; j < p->k; j++) if (!host_mats[j]) return HPDL_ERR_INVALID;
    mat = (size_t)p->n * (size_t)p->n * p->elem_bytes;
    for (g = 0; g < p->lanes.dev.count; g++) {
        HPDL_CUDA_TRY(cudaSetDevice(p->lanes.dev.physical[g]));
        for (j = p->first[g]; j < p->first[g + 1]; j++)
            HPDL_CUDA_TRY(cudaMemcpyAsync((char *)p->mats[g] + (size_t)(j - p->first[g]) * mat, host_mats[j], mat,
                                          cudaMemcpyHostToDevice, p->lanes.stream[g]));
    }
    HPDL_CUDA_TRY(cudaSetDevice(p->lanes.current));
    return hpdl__cuda_lanes_sync(&p->lanes);
}

/* Waits for the last run and copies the sum (n x n) to the host. */
HPDL_API hpdl_status hpdl__cuda_powsum_download(hpdl_cuda_powsum *p, void *host_out) {
    hpdl_status s;
    if (!p || !host_out) return HPDL_ERR_INVALID;
    s = hpdl__cuda_lanes_sync(&p->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(host_out, p->acc[0], (size_t)p->n * (size_t)p->n * p->elem_bytes, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

#define HPDL__DEFINE_CUDA_POWSUM(SUFFIX, T)                                      \
    HPDL_API hpdl_status hpdl_cuda_powsum_create_##SUFFIX(hpdl_cuda_powsum *p, int k, int n, int power, int n_gpus, \
                                                         int allow_virtual) {   \
        return hpdl__cuda_powsum_create(p, k, n, power, n_gpus, allow_virtual, sizeof(T)); \
    }                                                                           \
    HPDL_API hpdl_status hpdl_cuda_powsum_upload_##SUFFIX(hpdl_cuda_powsum *p, const T *const *host_mats) { \
        if (!p || p->elem_bytes != sizeof(T)) return HPDL_ERR_INVALID;          \
        return hpdl__cuda_powsum_upload(p, (const void *const *)host_mats);     \
    }                                                                           \
    HPDL_API hpdl_status hpdl_cuda_powsum_download_##SUFFIX(hpdl_cuda_powsum *p, T *host_out) { \
        if (!p || p->elem_bytes != sizeof(T)) return HPDL_ERR_INVALID;          \
        return hpdl__cuda_powsum_download(p, host_out);                          \
    }                                                                           \
    /* GPU g: its matrices' powers summed into acc[g] (on the current device). */ \
    HPDL_API hpdl_status hpdl__cuda_powsum_local_##SUFFIX(hpdl_cuda_powsum *p, int g, int naive, hpdl_gemm_algo algo) { \
        size_t mat = (size_t)p->n * (size_t)p->n;                                \
        int j;                                                                  \
        for (j = p->first[g]; j < p->first[g + 1]; j++) {                       \
            int into_acc = j == p->first[g];                                    \
            T *dst = (T *)(into_acc ? p->acc[g] : p->pow[g]);                   \
            hpdl_status s = hpdl__cuda_matpow_any_##SUFFIX(naive, p->n, p->power, (const T *)p->mats[g] + (size_t)(j - p->first[g]) * mat, \
                                                          p->n, dst, p->n, algo, (T *)p->ws[g], 0, p->lanes.stream[g]); \
            if (s == HPDL_OK && !into_acc) s = hpdl__cuda_add_##SUFFIX((long long)mat, (T *)p->acc[g], dst, p->lanes.stream[g]); \
            if (s != HPDL_OK) return s;                                         \
        }                                                                       \
        return HPDL_OK;                                                         \
    }                                                                           \
    /* One round of the tree: GPU g takes GPU g+step's partial sum. */        \
    HPDL_API hpdl_status hpdl__cuda_powsum_combine_##SUFFIX(hpdl_cuda_powsum *p, int g, int src) { \
        size_t mat = (size_t)p->n * (size_t)p->n;                                \
        hpdl_status s = hpdl__cuda_lanes_wait(&p->lanes, g, src);               \
        if (s == HPDL_OK) s = hpdl__cuda_lanes_pull(&p->lanes, g, p->ws[g], src, p->acc[src], mat * sizeof(T), &p->xfer); \
        if (s == HPDL_OK && cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA; \
        if (s == HPDL_OK) s = hpdl__cuda_add_##SUFFIX((long long)mat, (T *)p->acc[g], (const T *)p->ws[g], p->lanes.stream[g]); \
        return s;                                                               \
    }                                                                           \
    /* Computes the sum into GPU 0's buffer, ordered after and before `origin`  \
       (a stream of GPU 0); naive: p - 1 products per power instead of        \
       squaring. */                                                           \
    HPDL_API hpdl_status hpdl_cuda_powsum_run_##SUFFIX(hpdl_cuda_powsum *p, int naive, hpdl_gemm_algo algo, cudaStream_t origin) { \
        int g, step, G;                                                          \
        hpdl_status s;                                                          \
        if (!p || p->elem_bytes != sizeof(T) || !p->lanes.dev.count) return HPDL_ERR_INVALID; \
        G = p->lanes.dev.count;                                                 \
        s = hpdl__cuda_lanes_fork(&p->lanes, origin);                           \
        for (g = 0; g < G && s == HPDL_OK; g++) {                               \
            if (cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA; \
            s = hpdl__cuda_powsum_local_##SUFFIX(p, g, naive, algo);            \
        }                                                                       \
        for (step = 1; step < G && s == HPDL_OK; step *= 2)                     \
            for (g = 0; g + step < G && s == HPDL_OK; g += 2 * step)            \
                s = hpdl__cuda_powsum_combine_##SUFFIX(p, g, g + step);         \
        if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&p->lanes, origin);         \
        cudaSetDevice(p->lanes.current);                                        \
        return s;                                                               \
    }                                                                           \
    /* host_out = sum_j host_mats[j]^power, the k matrices spread over n_gpus  \
       GPUs; everything allocated and freed here. */                          \
    HPDL_API hpdl_status hpdl_cuda_sum_of_powers_##SUFFIX(int k, const T *const *host_mats, int n, int power, int n_gpus, \
                                                         T *host_out, hpdl_gemm_algo algo) { \
        hpdl_cuda_powsum p;                                                     \
        hpdl_status s;                                                          \
        int j;                                                                  \
        if (!host_mats || !host_out || k < 1) return HPDL_ERR_INVALID;          \
        for (j = 0; j < k; j++) if (!host_mats[j]) return HPDL_ERR_INVALID;     \
        s = hpdl_cuda_powsum_create_##SUFFIX(&p, k, n, power, n_gpus, 0);       \
        if (s != HPDL_OK) return s;                                             \
        s = hpdl_cuda_powsum_upload_##SUFFIX(&p, host_mats);                    \
        if (s == HPDL_OK) s = hpdl_cuda_powsum_run_##SUFFIX(&p, 0, algo, p.lanes.stream[0]); \
        if (s == HPDL_OK) s = hpdl_cuda_powsum_download_##SUFFIX(&p, host_out); \
        hpdl_cuda_powsum_destroy(&p);                                           \
        return s;                                                               \
    }

/* ------------------------------------------------------------------------ */
/* One matrix's power over several GPUs, by row blocks                       */
/* ------------------------------------------------------------------------ */
/* GPU g computes rows [r_g, r_g+1) of every product: (X Y)[rows] = X[rows] Y
   needs X's row block but all of Y. The running product is only ever a left
   factor, so its row blocks never move; each square A^(2^i) is a right
   factor next, so after every squaring each GPU gathers the other G-1 row
   blocks: (G-1)/G n^2 elements into each GPU, (G-1) n^2 in all, per
   squaring, plus broadcasting A first and gathering the result on GPU 0 at
   the end. With n = 10000, f32 and G = 2: 200 MB into each GPU per squaring
   (~0.6 ms over NVLink) beside ~20 ms of products each; a step also cannot
   start until every block of its right factor has arrived, so the slowest
   GPU sets the pace. */
typedef struct hpdl_cuda_rowpow {
    hpdl__cuda_lanes lanes;
    int n;
    size_t elem_bytes;
    int rows[HPDL_CUDA_MAX_DEVICES + 1]; /* GPU g computes rows [rows[g], rows[g+1]) */
    void *buf[HPDL_CUDA_MAX_DEVICES];    /* GPU g: input copy + 3 workspace matrices */
    hpdl_cuda_xfer_stats xfer;           /* broadcast, gathers, result: all runs */
} hpdl_cuda_rowpow;

HPDL_API void hpdl_cuda_rowpow_destroy(hpdl_cuda_rowpow *p) {
    int g;
    if (!p) return;
    for (g = 0; g < p->lanes.dev.count; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        hpdl_cuda_free(p->buf[g]);
        p->buf[g] = NULL;
    }
    hpdl__cuda_lanes_destroy(&p->lanes);
}

/* allow_virtual: several logical GPUs may share one (for tests). */
HPDL_API hpdl_status hpdl__cuda_rowpow_create(hpdl_cuda_rowpow *p, int n, int n_gpus, int allow_virtual,
                                              size_t elem_bytes) {
    size_t mat;
    int g;
    hpdl_status s;
    if (!p || n < 1 || n_gpus < 1 || n_gpus > n) return HPDL_ERR_INVALID;
    memset(p, 0, sizeof *p);
    s = hpdl_place_even(n, n_gpus, p->rows);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_create(&p->lanes, n_gpus, allow_virtual);
    if (s != HPDL_OK) return s;
    p->n = n;
    p->elem_bytes = elem_bytes;
    mat = (size_t)n * (size_t)n * elem_bytes;
    for (g = 0; g < n_gpus && s == HPDL_OK; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        s = hpdl_cuda_alloc(&p->buf[g], HPDL__MP_BUFFERS * mat);
    }
    cudaSetDevice(p->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_rowpow_destroy(p);
    return s;
}

/* After a squaring into slot w: every GPU pulls the others' row blocks. */
HPDL_API hpdl_status hpdl__cuda_rowpow_gather(hpdl_cuda_rowpow *p, int w) {
    size_t row = (size_t)p->n * p->elem_bytes, slot = row * (size_t)p->n, at;
    int G = p->lanes.dev.count, g, h;
    hpdl_status s = HPDL_OK;
    for (g = 0; g < G && s == HPDL_OK; g++) s = hpdl__cuda_lanes_mark(&p->lanes, g);
    for (h = 0; h < G && s == HPDL_OK; h++)
        for (g = 0; g < G && s == HPDL_OK; g++) {
            if (g == h) continue;
            at = (size_t)w * slot + (size_t)p->rows[g] * row;
            s = hpdl__cuda_lanes_wait_mark(&p->lanes, h, g);
            if (s == HPDL_OK)
                s = hpdl__cuda_lanes_pull(&p->lanes, h, (char *)p->buf[h] + at, g, (const char *)p->buf[g] + at,
                                          (size_t)(p->rows[g + 1] - p->rows[g]) * row, &p->xfer);
        }
    return s;
}

/* GPU 0 collects the result's row blocks (slot w) from the others. */
HPDL_API hpdl_status hpdl__cuda_rowpow_collect(hpdl_cuda_rowpow *p, int w) {
    size_t row = (size_t)p->n * p->elem_bytes, at;
    int g;
    hpdl_status s = HPDL_OK;
    for (g = 1; g < p->lanes.dev.count && s == HPDL_OK; g++) {
        at = (size_t)w * row * (size_t)p->n + (size_t)p->rows[g] * row;
        s = hpdl__cuda_lanes_wait(&p->lanes, 0, g);
        if (s == HPDL_OK)
            s = hpdl__cuda_lanes_pull(&p->lanes, 0, (char *)p->buf[0] + at, g, (const char *)p->buf[g] + at,
                                      (size_t)(p->rows[g + 1] - p->rows[g]) * row, &p->xfer);
    }
    return s;
}

/* GPU 0 broadcasts its copy of the input (slot 0) to the others. */
HPDL_API hpdl_status hpdl__cuda_rowpow_broadcast(hpdl_cuda_rowpow *p) {
    size_t mat = (size_t)p->n * (size_t)p->n * p->elem_bytes;
    int g;
    hpdl_status s = hpdl__cuda_lanes_mark(&p->lanes, 0);
    for (g = 1; g < p->lanes.dev.count && s == HPDL_OK; g++) {
        s = hpdl__cuda_lanes_wait_mark(&p->lanes, g, 0);
        if (s == HPDL_OK) s = hpdl__cuda_lanes_pull(&p->lanes, g, p->buf[g], 0, p->buf[0], mat, &p->xfer);
    }
    return s;
}

#define HPDL__DEFINE_CUDA_ROWPOW(SUFFIX, T, ACC)                                 \
    HPDL_API hpdl_status hpdl_cuda_rowpow_create_##SUFFIX(hpdl_cuda_rowpow *p, int n, int n_gpus, int allow_virtual) { \
        return hpdl__cuda_rowpow_create(p, n, n_gpus, allow_virtual, sizeof(T)); \
    }                                                                           \
    /* Step i of the squaring plan on every GPU, for its own rows. */         \
    HPDL_API hpdl_status hpdl__cuda_rowpow_step_##SUFFIX(hpdl_cuda_rowpow *p, hpdl__matpow_step st, hpdl_gemm_algo algo) { \
        size_t slot = (size_t)p->n * (size_t)p->n;                               \
        int g;                                                                  \
        for (g = 0; g < p->lanes.dev.count; g++) {                              \
            T *b = (T *)p->buf[g];                                              \
            size_t off = (size_t)p->rows[g] * (size_t)p->n;                      \
            hpdl_status s;                                                      \
            if (cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA; \
            s = hpdl__cuda_multi_gemm_##SUFFIX(algo, HPDL_NO_TRANS, HPDL_NO_TRANS, p->rows[g + 1] - p->rows[g], p->n, p->n, \
                                              (ACC)1, b + st.lhs * slot + off, p->n, b + st.rhs * slot, p->n, (ACC)0, \
                                              b + st.dst * slot + off, p->n, p->lanes.stream[g]); \
            if (s != HPDL_OK) return s;                                         \
        }                                                                       \
        return HPDL_OK;                                                         \
    }                                                                           \
    /* out = A^power with A and out on GPU 0 (n x n), every GPU computing a    \
       row block of each product; ordered after and before `origin`. */       \
    HPDL_API hpdl_status hpdl_cuda_rowpow_run_##SUFFIX(hpdl_cuda_rowpow *p, int power, const T *A, int lda, T *out, \
                                                      int ldo, hpdl_gemm_algo algo, cudaStream_t origin) { \
        hpdl__matpow_plan plan;                                                 \
        size_t row = (size_t)p->n * sizeof(T);                                  \
        int i, result = HPDL__MP_INPUT;                                         \
        hpdl_status s;                                                          \
        if (!p || p->elem_bytes != sizeof(T) || !p->lanes.dev.count) return HPDL_ERR_INVALID; \
        s = hpdl__matpow_check(p->n, power, A, lda, out, ldo, sizeof(T));       \
        if (s != HPDL_OK) return s;                                             \
        hpdl__matpow_plan_init(&plan, power, 0);                                \
        s = hpdl__cuda_lanes_fork(&p->lanes, origin);                           \
        if (s == HPDL_OK && power <= 1)                                         \
            s = hpdl__cuda_matpow_any_##SUFFIX(0, p->n, power, A, lda, out, ldo, algo, NULL, 0, p->lanes.stream[0]); \
        if (s == HPDL_OK && power > 1 &&                                        \
            cudaMemcpy2DAsync(p->buf[0], row, A, (size_t)lda * sizeof(T), row, (size_t)p->n, \
                              cudaMemcpyDeviceToDevice, p->lanes.stream[0]) != cudaSuccess) s = HPDL_ERR_CUDA; \
        if (s == HPDL_OK && power > 1) s = hpdl__cuda_rowpow_broadcast(p);      \
        for (i = 0; i < plan.count && s == HPDL_OK; i++) {                      \
            hpdl__matpow_step st = hpdl__matpow_plan_step(&plan, i);            \
            s = hpdl__cuda_rowpow_step_##SUFFIX(p, st, algo);                   \
            if (s == HPDL_OK && st.lhs == st.rhs && i < plan.count - 1) s = hpdl__cuda_rowpow_gather(p, st.dst); \
            result = st.dst;                                                    \
        }                                                                       \
        if (s == HPDL_OK && power > 1) s = hpdl__cuda_rowpow_collect(p, result); \
        if (s == HPDL_OK && power > 1 && (cudaSetDevice(p->lanes.dev.physical[0]) != cudaSuccess || \
            cudaMemcpy2DAsync(out, (size_t)ldo * sizeof(T), (const T *)p->buf[0] + (size_t)result * p->n * p->n, row, row, \
                              (size_t)p->n, cudaMemcpyDeviceToDevice, p->lanes.stream[0]) != cudaSuccess)) s = HPDL_ERR_CUDA; \
        if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&p->lanes, origin);         \
        cudaSetDevice(p->lanes.current);                                        \
        return s;                                                               \
    }

/* hpdl_f16/bf16 have the bits of __half/__nv_bfloat16; the elementwise
   kernels use the same host+device load/store adapters as the CPU code. */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_CUDA_MATPOW)

/* ------------------------------------------------------------------------ */
/* Model parallelism: a deep stack of linear layers over several GPUs        */
/* ------------------------------------------------------------------------ */
/* The course's "LargeLinearModel": depth layers h_{l+1} = relu(h_l W_l) of
   dim x dim (no ReLU after the last), loss = 1/(2 batch) sum ||h_depth -
   target||^2, plain SGD, f32. Device g owns the contiguous layers
   [first[g], first[g+1]) (hpdl_place_even / _balanced / _from_map).

   One step with m micro-batches (GPipe): the batch's rows are split into m
   slices; each device has its own stream, and events hand each slice's
   activations forward and its gradients backward (the receiver pulls: a
   peer copy, or staged through pinned host memory). All forwards, then all
   backwards (input gradients only), then each device computes its weight
   gradients for the whole batch in one product per layer and applies the
   update W -= lr h^T dz in the same call (beta = 1). m = 1 is naive model
   parallelism: one device busy at a time. With G devices and equal stages
   the forward/backward phases leave a bubble (G-1)/(m+G-1) of each
   device's time idle. Deferring the weight gradients is exact (it is the
   sum over micro-batches that GPipe accumulates, as one product over the
   whole batch) and keeps those products large. */

__global__ void hpdl__cuda_relu_kernel(long long n, float *x) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* dz = dh where the layer's output was positive (relu'), else 0. */
__global__ void hpdl__cuda_relu_backward_kernel(long long n, const float *dh, const float *out, float *dz) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dz[i] = out[i] > 0.0f ? dh[i] : 0.0f;
}

/* dz = (y - t) * scale and *loss += scale/2 * sum (y - t)^2 (block sums, one
   atomic add per block). Launched with 256 threads. */
__global__ void hpdl__cuda_mse_kernel(long long n, const float *y, const float *t, float *dz, float scale, float *loss) {
    __shared__ float part[256];
    float sum = 0.0f;
    long long i;
    int k;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float d = y[i] - t[i];
        dz[i] = d * scale;
        sum += d * d;
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, 0.5f * scale * part[0]);
}

/* x[i] = uniform in [-a, a) from a hash of (seed, first + i): the same
   values whatever device or buffer holds element first + i. */
__global__ void hpdl__cuda_fill_uniform_kernel(long long n, float *x, unsigned long long seed, long long first, float a) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long z = seed + 0x9e3779b97f4a7c15ull * (unsigned long long)(first + i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64 finaliser */
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = a * (2.0f * (float)(z >> 40) * (1.0f / 16777216.0f) - 1.0f);
    }
}

typedef struct hpdl_cuda_deep_linear {
    hpdl__cuda_lanes lanes;                 /* one stream per logical device */
    int depth, dim, batch;
    int first[HPDL_CUDA_MAX_DEVICES + 1];   /* device g owns layers [first[g], first[g+1]) */
    hpdl_gemm_algo algo;                    /* HPDL_GEMM_CUBLAS unless changed */
    float *w[HPDL_CUDA_MAX_DEVICES];        /* g: its layers' weights, dim x dim each */
    float *h[HPDL_CUDA_MAX_DEVICES];        /* g: its input and its layers' outputs, batch x dim each */
    float *dz[HPDL_CUDA_MAX_DEVICES];       /* g: loss gradient w.r.t. its layers' pre-activations */
    float *dh_in[HPDL_CUDA_MAX_DEVICES];    /* g: gradient arriving from device g + 1 */
    float *dh[HPDL_CUDA_MAX_DEVICES];       /* g: gradient going down its layers, then to g - 1 */
    float *target, *loss;                   /* on the last device */
    size_t bytes[HPDL_CUDA_MAX_DEVICES];    /* device memory the model holds, per device */
    hpdl_cuda_xfer_stats fwd, bwd;          /* moves of the last step, each way */
    cudaEvent_t *marks[HPDL_CUDA_MAX_DEVICES]; /* while profiling: busy intervals' ends */
    int n_marks[HPDL_CUDA_MAX_DEVICES];
} hpdl_cuda_deep_linear;

/* A contiguous placement: first[0] = 0 < first[1] < ... < first[G] = layers. */
HPDL_API hpdl_status hpdl__placement_check(int n_layers, int n_devices, const int *first) {
    int d;
    if (!first || n_devices < 1 || n_devices > HPDL_CUDA_MAX_DEVICES) return HPDL_ERR_INVALID;
    if (first[0] != 0 || first[n_devices] != n_layers) return HPDL_ERR_INVALID;
    for (d = 0; d < n_devices; d++) if (first[d + 1] <= first[d]) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

HPDL_API int hpdl__dl_layers(const hpdl_cuda_deep_linear *m, int g) { return m->first[g + 1] - m->first[g]; }

HPDL_API float *hpdl__dl_act(const hpdl_cuda_deep_linear *m, int g, int s) {
    return m->h[g] + (size_t)s * m->batch * m->dim;
}

HPDL_API float *hpdl__dl_dz(const hpdl_cuda_deep_linear *m, int g, int s) {
    return m->dz[g] + (size_t)s * m->batch * m->dim;
}

HPDL_API float *hpdl__dl_w(const hpdl_cuda_deep_linear *m, int g, int s) {
    return m->w[g] + (size_t)s * m->dim * m->dim;
}

HPDL_API void hpdl_cuda_deep_linear_destroy(hpdl_cuda_deep_linear *m) {
    int g;
    if (!m) return;
    for (g = 0; g < m->lanes.dev.count; g++) {
        cudaSetDevice(m->lanes.dev.physical[g]);
        hpdl_cuda_free(m->w[g]); hpdl_cuda_free(m->h[g]); hpdl_cuda_free(m->dz[g]);
        hpdl_cuda_free(m->dh_in[g]); hpdl_cuda_free(m->dh[g]);
        m->w[g] = m->h[g] = m->dz[g] = m->dh_in[g] = m->dh[g] = NULL;
    }
    if (m->lanes.dev.count) {
        cudaSetDevice(m->lanes.dev.physical[m->lanes.dev.count - 1]);
        hpdl_cuda_free(m->target); hpdl_cuda_free(m->loss);
    }
    m->target = m->loss = NULL;
    hpdl__cuda_lanes_destroy(&m->lanes);
}

/* Allocates device g's share (current device set by the caller). */
HPDL_API hpdl_status hpdl__dl_alloc(hpdl_cuda_deep_linear *m, int g) {
    size_t act = (size_t)m->batch * m->dim * sizeof(float), L = (size_t)hpdl__dl_layers(m, g);
    hpdl_status s = hpdl_cuda_alloc((void **)&m->w[g], L * m->dim * m->dim * sizeof(float));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&m->h[g], (L + 1) * act);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&m->dz[g], L * act);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&m->dh_in[g], act);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&m->dh[g], act);
    m->bytes[g] = L * m->dim * m->dim * sizeof(float) + (2 * L + 3) * act;
    if (s == HPDL_OK && g == m->lanes.dev.count - 1) {
        s = hpdl_cuda_alloc((void **)&m->target, act);
        if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&m->loss, sizeof(float));
        m->bytes[g] += act;
    }
    return s;
}

/* A model of `depth` layers of dim x dim for batches of `batch` rows, placed
   on n_devices logical devices by `first` (n_devices + 1 entries, e.g. from
   hpdl_place_even). allow_virtual maps more devices than GPUs onto the GPUs
   (d % count) so the same code runs on one GPU. Weights are not yet set. */
HPDL_API hpdl_status hpdl_cuda_deep_linear_create(hpdl_cuda_deep_linear *m, int depth, int dim, int batch,
                                                  const int *first, int n_devices, int allow_virtual) {
    hpdl_status s;
    int g;
    if (!m || depth < 1 || dim < 1 || batch < 1) return HPDL_ERR_INVALID;
    s = hpdl__placement_check(depth, n_devices, first);
    if (s != HPDL_OK) return s;
    memset(m, 0, sizeof *m);
    s = hpdl__cuda_lanes_create(&m->lanes, n_devices, allow_virtual);
    if (s != HPDL_OK) return s;
    m->depth = depth; m->dim = dim; m->batch = batch;
    m->algo = HPDL_GEMM_CUBLAS;
    memcpy(m->first, first, (size_t)(n_devices + 1) * sizeof *first);
    for (g = 0; g < n_devices && s == HPDL_OK; g++) {
        if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK) s = hpdl__dl_alloc(m, g);
    }
    cudaSetDevice(m->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_deep_linear_destroy(m);
    return s;
}

HPDL_API hpdl_status hpdl__cuda_fill_uniform(float *x, long long n, unsigned long long seed, long long first, float a,
                                             cudaStream_t stream) {
    hpdl__cuda_fill_uniform_kernel<<<hpdl__cuda_grid(n), 256, 0, stream>>>(n, x, seed, first, a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Weights uniform in +-sqrt(6/dim) (He: activations keep their scale
   through the ReLUs); layer l's values depend on (seed, l) only, so every
   placement starts from the same model. */
HPDL_API hpdl_status hpdl_cuda_deep_linear_init(hpdl_cuda_deep_linear *m, unsigned long long seed) {
    long long per = 0;
    int g;
    hpdl_status s = HPDL_OK;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    per = (long long)m->dim * m->dim;
    for (g = 0; g < m->lanes.dev.count && s == HPDL_OK; g++) {
        HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[g]));
        s = hpdl__cuda_fill_uniform(m->w[g], hpdl__dl_layers(m, g) * per, seed, m->first[g] * per,
                                    sqrtf(6.0f / (float)m->dim), m->lanes.stream[g]);
    }
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Input rows (device 0) and targets (last device), uniform in [-1, 1). */
HPDL_API hpdl_status hpdl_cuda_deep_linear_random_batch(hpdl_cuda_deep_linear *m, unsigned long long seed) {
    long long n;
    int last;
    hpdl_status s;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    n = (long long)m->batch * m->dim;
    last = m->lanes.dev.count - 1;
    HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[0]));
    s = hpdl__cuda_fill_uniform(m->h[0], n, seed, 0, 1.0f, m->lanes.stream[0]);
    if (s == HPDL_OK && cudaSetDevice(m->lanes.dev.physical[last]) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_fill_uniform(m->target, n, seed, n, 1.0f, m->lanes.stream[last]);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Copies layer l's weights (dim x dim) to the host. */
HPDL_API hpdl_status hpdl_cuda_deep_linear_get_weights(hpdl_cuda_deep_linear *m, int layer, float *host) {
    int g = 0;
    hpdl_status s;
    if (!m || !host || layer < 0 || layer >= m->depth) return HPDL_ERR_INVALID;
    while (layer >= m->first[g + 1]) g++;
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(host, hpdl__dl_w(m, g, layer - m->first[g]), (size_t)m->dim * m->dim * sizeof(float),
                             cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Copies the input rows (batch x dim) or the targets to the host. */
HPDL_API hpdl_status hpdl_cuda_deep_linear_get_batch(hpdl_cuda_deep_linear *m, float *host_x, float *host_target) {
    size_t bytes;
    hpdl_status s;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    bytes = (size_t)m->batch * m->dim * sizeof(float);
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    if (host_x) HPDL_CUDA_TRY(cudaMemcpy(host_x, m->h[0], bytes, cudaMemcpyDeviceToHost));
    if (host_target) HPDL_CUDA_TRY(cudaMemcpy(host_target, m->target, bytes, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Loss of the last step (waits for it). */
HPDL_API hpdl_status hpdl_cuda_deep_linear_loss(hpdl_cuda_deep_linear *m, float *loss) {
    hpdl_status s;
    if (!m || !loss || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(loss, m->loss, sizeof *loss, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Prints the layer -> GPU map and the memory each device holds. */
HPDL_API void hpdl_cuda_deep_linear_print_map(const hpdl_cuda_deep_linear *m, FILE *f) {
    int g;
    for (g = 0; g < m->lanes.dev.count; g++)
        fprintf(f, "  device %d (GPU %d): layers %d..%d, %.1f MiB\n", g, m->lanes.dev.physical[g], m->first[g],
                m->first[g + 1] - 1, m->bytes[g] / 1048576.0);
}

/* While profiling, records the start or the end of a busy interval. */
HPDL_API void hpdl__dl_mark(hpdl_cuda_deep_linear *m, int g) {
    if (m->marks[g]) cudaEventRecord(m->marks[g][m->n_marks[g]++], m->lanes.stream[g]);
}

HPDL_API hpdl_status hpdl__dl_gemm(hpdl_cuda_deep_linear *m, int g, hpdl_transpose ta, hpdl_transpose tb, int M, int K,
                                   float alpha, const float *A, const float *B, float beta, float *C) {
    return hpdl__cuda_multi_gemm_f32(m->algo, ta, tb, M, m->dim, K, alpha, A, m->dim, B, m->dim, beta, C, m->dim,
                                   m->lanes.stream[g]);
}

/* Forward of micro-batch rows [row, row + rows) through device g's layers. */
HPDL_API hpdl_status hpdl__dl_forward(hpdl_cuda_deep_linear *m, int g, int row, int rows) {
    size_t off = (size_t)row * m->dim, bytes = (size_t)rows * m->dim * sizeof(float);
    long long count = (long long)rows * m->dim;
    int s, last = m->lanes.dev.count - 1;
    hpdl_status st = HPDL_OK;
    if (g > 0) st = hpdl__cuda_lanes_pull(&m->lanes, g, hpdl__dl_act(m, g, 0) + off, g - 1,
                                          hpdl__dl_act(m, g - 1, hpdl__dl_layers(m, g - 1)) + off, bytes, &m->fwd);
    hpdl__dl_mark(m, g);
    for (s = 0; s < hpdl__dl_layers(m, g) && st == HPDL_OK; s++) {
        float *out = hpdl__dl_act(m, g, s + 1) + off;
        st = hpdl__dl_gemm(m, g, HPDL_NO_TRANS, HPDL_NO_TRANS, rows, m->dim, 1.0f, hpdl__dl_act(m, g, s) + off,
                           hpdl__dl_w(m, g, s), 0.0f, out);
        if (st == HPDL_OK && m->first[g] + s < m->depth - 1) {
            hpdl__cuda_relu_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(count, out);
            if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
        }
    }
    if (st == HPDL_OK && g == last) { /* the loss gradient is the last layer's dz */
        hpdl__cuda_mse_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(
            count, hpdl__dl_act(m, g, hpdl__dl_layers(m, g)) + off, m->target + off,
            hpdl__dl_dz(m, g, hpdl__dl_layers(m, g) - 1) + off, 1.0f / (float)m->batch, m->loss);
        if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
    }
    hpdl__dl_mark(m, g);
    return st;
}

/* Backward (input gradients) of micro-batch rows [row, row + rows) through
   device g's layers, top to bottom. */
HPDL_API hpdl_status hpdl__dl_backward(hpdl_cuda_deep_linear *m, int g, int row, int rows) {
    size_t off = (size_t)row * m->dim, bytes = (size_t)rows * m->dim * sizeof(float);
    long long count = (long long)rows * m->dim;
    const float *grad = m->dh_in[g] + off;
    int s;
    hpdl_status st = HPDL_OK;
    if (g < m->lanes.dev.count - 1)
        st = hpdl__cuda_lanes_pull(&m->lanes, g, m->dh_in[g] + off, g + 1, m->dh[g + 1] + off, bytes, &m->bwd);
    hpdl__dl_mark(m, g);
    for (s = hpdl__dl_layers(m, g) - 1; s >= 0 && st == HPDL_OK; s--) {
        int layer = m->first[g] + s;
        float *dz = hpdl__dl_dz(m, g, s) + off;
        if (layer < m->depth - 1) {
            hpdl__cuda_relu_backward_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(
                count, grad, hpdl__dl_act(m, g, s + 1) + off, dz);
            if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
        }
        if (st == HPDL_OK && layer > 0) { /* the model's input needs no gradient */
            st = hpdl__dl_gemm(m, g, HPDL_NO_TRANS, HPDL_TRANS, rows, m->dim, 1.0f, dz, hpdl__dl_w(m, g, s), 0.0f,
                               m->dh[g] + off);
            grad = m->dh[g] + off;
        }
    }
    hpdl__dl_mark(m, g);
    return st;
}

/* W_l -= lr h_l^T dz_l over the whole batch, for device g's layers. */
HPDL_API hpdl_status hpdl__dl_update(hpdl_cuda_deep_linear *m, int g, float lr) {
    int s;
    hpdl_status st = HPDL_OK;
    hpdl__dl_mark(m, g);
    for (s = 0; s < hpdl__dl_layers(m, g) && st == HPDL_OK; s++)
        st = hpdl__dl_gemm(m, g, HPDL_TRANS, HPDL_NO_TRANS, m->dim, m->batch, -lr, hpdl__dl_act(m, g, s),
                           hpdl__dl_dz(m, g, s), 1.0f, hpdl__dl_w(m, g, s));
    hpdl__dl_mark(m, g);
    return st;
}

/* The forward phase: micro-batch by micro-batch, device by device. */
HPDL_API hpdl_status hpdl__dl_forward_all(hpdl_cuda_deep_linear *m, int micro) {
    int i, g, G = m->lanes.dev.count, rows = m->batch / micro;
    hpdl_status s = HPDL_OK;
    for (i = 0; i < micro; i++)
        for (g = 0; g < G && s == HPDL_OK; g++) {
            if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
            if (g > 0) s = hpdl__cuda_lanes_wait_mark(&m->lanes, g, g - 1);
            if (s == HPDL_OK) s = hpdl__dl_forward(m, g, i * rows, rows);
            if (s == HPDL_OK && g < G - 1) s = hpdl__cuda_lanes_mark(&m->lanes, g);
        }
    return s;
}

HPDL_API hpdl_status hpdl__dl_backward_all(hpdl_cuda_deep_linear *m, int micro) {
    int i, g, G = m->lanes.dev.count, rows = m->batch / micro;
    hpdl_status s = HPDL_OK;
    for (i = 0; i < micro; i++)
        for (g = G - 1; g >= 0 && s == HPDL_OK; g--) {
            if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
            if (g < G - 1) s = hpdl__cuda_lanes_wait_mark(&m->lanes, g, g + 1);
            if (s == HPDL_OK) s = hpdl__dl_backward(m, g, i * rows, rows);
            if (s == HPDL_OK && g > 0) s = hpdl__cuda_lanes_mark(&m->lanes, g);
        }
    return s;
}

/* One SGD step on the current batch with `micro` micro-batches (1: naive
   model parallelism; batch % micro == 0), ordered after and before `origin`
   (a stream of device 0). The moves it made are in m->fwd and m->bwd. */
HPDL_API hpdl_status hpdl_cuda_deep_linear_step(hpdl_cuda_deep_linear *m, int micro, float lr, cudaStream_t origin) {
    int g, last;
    hpdl_status s;
    if (!m || !m->lanes.dev.count || micro < 1 || micro > m->batch || m->batch % micro) return HPDL_ERR_INVALID;
    last = m->lanes.dev.count - 1;
    memset(&m->fwd, 0, sizeof m->fwd);
    memset(&m->bwd, 0, sizeof m->bwd);
    s = hpdl__cuda_lanes_fork(&m->lanes, origin);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[last]) != cudaSuccess ||
                         cudaMemsetAsync(m->loss, 0, sizeof(float), m->lanes.stream[last]) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__dl_forward_all(m, micro);
    if (s == HPDL_OK) s = hpdl__dl_backward_all(m, micro);
    for (g = 0; g < m->lanes.dev.count && s == HPDL_OK; g++) {
        if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK) s = hpdl__dl_update(m, g, lr);
    }
    if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&m->lanes, origin);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Timing events for one profiled step: (2 micro + 1) busy intervals a device. */
HPDL_API void hpdl__dl_marks_free(hpdl_cuda_deep_linear *m, int per) {
    int g, k;
    for (g = 0; g < m->lanes.dev.count; g++) {
        if (!m->marks[g]) continue;
        cudaSetDevice(m->lanes.dev.physical[g]);
        for (k = 0; k < per; k++) if (m->marks[g][k]) cudaEventDestroy(m->marks[g][k]);
        HPDL_FREE(m->marks[g]);
        m->marks[g] = NULL;
    }
    cudaSetDevice(m->lanes.current);
}

HPDL_API hpdl_status hpdl__dl_marks_alloc(hpdl_cuda_deep_linear *m, int per) {
    int g, k;
    for (g = 0; g < m->lanes.dev.count; g++) {
        m->n_marks[g] = 0;
        m->marks[g] = (cudaEvent_t *)hpdl_alloc((size_t)per, sizeof(cudaEvent_t));
        if (!m->marks[g]) return HPDL_ERR_NOMEM;
        memset(m->marks[g], 0, (size_t)per * sizeof(cudaEvent_t));
        HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[g]));
        for (k = 0; k < per; k++) HPDL_CUDA_TRY(cudaEventCreate(&m->marks[g][k]));
    }
    return HPDL_OK;
}

/* Sum of device g's recorded busy intervals, in ms. */
HPDL_API double hpdl__dl_busy_ms(const hpdl_cuda_deep_linear *m, int g) {
    double total = 0.0;
    int k;
    for (k = 0; k + 1 < m->n_marks[g]; k += 2) {
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, m->marks[g][k], m->marks[g][k + 1]);
        total += ms;
    }
    return total;
}

/* One step with each device's busy time measured by events around its
   forwards, backwards and update (transfers and waits count as idle):
   *step_ms, and busy_ms[g] per device. Idle fraction of device g =
   1 - busy_ms[g] / *step_ms, to set beside the bubble (G-1)/(m+G-1). */
HPDL_API hpdl_status hpdl_cuda_deep_linear_profile(hpdl_cuda_deep_linear *m, int micro, float lr, double *step_ms,
                                                   double *busy_ms) {
    int g, per;
    cudaEvent_t start = NULL, stop = NULL;
    float ms = 0.0f;
    hpdl_status s;
    if (!m || !step_ms || !busy_ms || micro < 1) return HPDL_ERR_INVALID;
    per = 2 * (2 * micro + 1);
    s = hpdl__dl_marks_alloc(m, per);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[0]) != cudaSuccess || cudaEventCreate(&start) != cudaSuccess ||
                         cudaEventCreate(&stop) != cudaSuccess ||
                         cudaEventRecord(start, m->lanes.stream[0]) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl_cuda_deep_linear_step(m, micro, lr, m->lanes.stream[0]);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[0]) != cudaSuccess ||
                         cudaEventRecord(stop, m->lanes.stream[0]) != cudaSuccess ||
                         cudaEventSynchronize(stop) != cudaSuccess ||
                         cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s == HPDL_OK) {
        *step_ms = ms;
        for (g = 0; g < m->lanes.dev.count; g++) busy_ms[g] = hpdl__dl_busy_ms(m, g);
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    hpdl__dl_marks_free(m, per);
    return s;
}
