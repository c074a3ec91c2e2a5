/* ------------------------------------------------------------------------ */
/* MLP training on the GPU (spliced into hpdl_cuda.cuh)                      */
/* ------------------------------------------------------------------------ */
/* hpdl_cuda_mlp_<s> mirrors the CPU hpdl_mlp_<s> (same widths, same row-major
   W[l] of widths[l] x widths[l+1], Y = X.W + b) with its parameters on the
   device. One training step is
       gather   A0 = batch rows of the data set (a device permutation picks them)
       forward  Z = A.W (GEMM), A' = act(Z + b) (one fused elementwise pass)
       loss     softmax + cross-entropy + its gradient, one kernel, loss summed
                on the device
       backward dW = A^T.D, dA = D.W^T (GEMMs), D = dA * act'(A) fused with
                the column sums that give db
       update   one SGD kernel over all parameters, L2 on the weights
   and is captured once per batch size in a CUDA graph, then replayed: the host
   launches one graph per step and synchronises once per epoch.

   Precisions: f32 and f64 (everything in that type), and f16, mixed precision
   in the style of PyTorch AMP:
     - autocast's role: the matrix products run on f16 copies of the weights
       and activations (hpdl_cuda_gemm_f16, f32 accumulation); bias, activation,
       softmax and loss are computed in f32 from the f16 values. The f16 weight
       copy is refreshed by the SGD kernel, not re-cast before each forward.
     - GradScaler's role: the loss gradient is multiplied by a scale S (start
       2^16) so small gradients survive f16; a check kernel looks for inf/NaN
       in the f16 gradients and raises a device flag; the SGD kernel unscales
       (x 1/S) into the f32 master weights, or skips the step when the flag is
       up; the SGD kernel's last block then halves S (overflow) or doubles it
       after 2000 clean steps. All on the device, so the graph stays replayable.

   Data: hpdl_cuda_dataset keeps images (f32) and labels on the device when
   they fit, else in pinned host memory, from which shuffled chunks are
   gathered on the host and copied on a second stream while the GPU trains on
   the previous chunk. Shuffling is a device permutation (a Feistel
   bijection of [0, n), keyed by seed and epoch): no image moves host->device
   per epoch in the resident case. */

#include <dlfcn.h>
#include <pthread.h>

#define HPDL_CUDA_MLP_GRAPHS 4        /* graphs cached per model (batch sizes) */
#define HPDL_CUDA_MLP_SCALE_INIT 65536.0f
#define HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL 2000

/* Device-side training state: hyper-parameters, accumulators, the data feed
   and the loss scaler. Graphs read it through one pointer, so values that
   change between steps (lr, feed cursor, scale) never force a re-capture. */
typedef struct hpdl__mlp_state {
    double lr, l2;
    double loss_sum;                 /* sum of per-sample losses since reset */
    unsigned long long correct;      /* argmax == label, since reset */
    double eval_loss_sum;
    unsigned long long eval_correct;
    /* feed: batch row i comes from src row perm[cursor + i] (cursor + i when perm is NULL) */
    const void *src;
    const int32_t *labels;
    const int32_t *perm;
    long long cursor;
    int src_f64;
    /* loss scaler (mixed precision only) */
    float loss_scale;
    int found_inf, good_steps;
    unsigned int blocks_done;        /* SGD blocks finished (last one updates S) */
    long long skipped_steps;
} hpdl__mlp_state;

/* What an epoch or an evaluation reports. */
typedef struct hpdl_cuda_mlp_stats {
    double loss;        /* mean cross-entropy over the samples seen */
    double accuracy;    /* training: running accuracy of the steps' forward passes */
    int64_t samples;
    double loss_scale;  /* mixed precision: current S (1 otherwise) */
    int64_t skipped_steps;
} hpdl_cuda_mlp_stats;

/* ======================================================================== */
/* Device helpers: load/store between storage and compute types             */
/* ======================================================================== */

template <typename T> struct hpdl__acc { typedef float type; };
template <> struct hpdl__acc<double> { typedef double type; };
template <typename T> struct hpdl__is_half { enum { value = 0 }; };
template <> struct hpdl__is_half<__half> { enum { value = 1 }; };

__device__ __forceinline__ float hpdl__ld(float x) { return x; }
__device__ __forceinline__ double hpdl__ld(double x) { return x; }
__device__ __forceinline__ float hpdl__ld(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T hpdl__st(double v) { return (T)v; }
template <> __device__ __forceinline__ float hpdl__st<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ __half hpdl__st<__half>(double v) { return __float2half_rn((float)v); }
__device__ __forceinline__ void hpdl__st_to(float *p, float v) { *p = v; }
__device__ __forceinline__ void hpdl__st_to(double *p, double v) { *p = v; }
__device__ __forceinline__ void hpdl__st_to(__half *p, float v) { *p = __float2half_rn(v); }

__device__ __forceinline__ int hpdl__finite(float v) { return isfinite(v); }
__device__ __forceinline__ int hpdl__finite(double v) { return isfinite(v); }
__device__ __forceinline__ int hpdl__finite(__half v) { return (__half_as_ushort(v) & 0x7c00u) != 0x7c00u; }

__device__ __forceinline__ float hpdl__exp(float v) { return expf(v); }
__device__ __forceinline__ double hpdl__exp(double v) { return exp(v); }
__device__ __forceinline__ float hpdl__log(float v) { return logf(v); }
__device__ __forceinline__ double hpdl__log(double v) { return log(v); }

/* act(v); NaN passes through ReLU (v < 0 is false for NaN), as in PyTorch,
   so the loss scaler still sees it. */
template <typename A> __device__ __forceinline__ A hpdl__act(A v, hpdl_activation act) {
    if (act == HPDL_ACT_RELU) return v < (A)0 ? (A)0 : v;
    return (A)1 / ((A)1 + hpdl__exp(-v));
}

/* act'(z) written with the activation's output a = act(z). */
template <typename A> __device__ __forceinline__ A hpdl__act_grad(A a, hpdl_activation act) {
    if (act == HPDL_ACT_RELU) return a > (A)0 ? (A)1 : (A)0;
    return a * ((A)1 - a);
}

/* ======================================================================== */
/* Shuffling: a keyed Feistel bijection of [0, n)                            */
/* ======================================================================== */

/* A permutation of [0, 2^(2*half_bits)) from 4 rounds of a mixing function,
   restricted to [0, n) by cycle walking (re-apply until the value is < n;
   the domain is < 4n, so under 4 applications on average). Host and device
   compute the same permutation, so a streamed data set shuffles like a
   resident one. */
HPDL_HD static inline uint32_t hpdl__feistel_round(uint32_t x, uint64_t key, int round) {
    uint64_t z = ((uint64_t)x << 8 | (uint64_t)round) + key * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z ^ (z >> 31));
}

HPDL_HD static inline int hpdl__feistel_half_bits(int64_t n) {
    int bits = 1;
    while (bits < 31 && ((int64_t)1 << (2 * bits)) < n) bits++;
    return bits;
}

HPDL_HD static inline int32_t hpdl__shuffle_index(int64_t i, int64_t n, uint64_t key) {
    int half = hpdl__feistel_half_bits(n), r;
    uint32_t mask = (1u << half) - 1u;
    uint64_t x = (uint64_t)i;
    do {
        uint32_t left = (uint32_t)(x >> half) & mask, right = (uint32_t)x & mask;
        for (r = 0; r < 4; r++) {
            uint32_t t = right;
            right = left ^ (hpdl__feistel_round(right, key, r) & mask);
            left = t;
        }
        x = ((uint64_t)left << half) | right;
    } while ((int64_t)x >= n);
    return (int32_t)x;
}

/* The key of one epoch's permutation. */
HPDL_HD static inline uint64_t hpdl__shuffle_key(uint64_t seed, int64_t epoch) {
    return seed * 0x2545f4914f6cdd1dull + (uint64_t)epoch + 1u;
}

__global__ void hpdl__shuffle_kernel(int64_t n, uint64_t key, int32_t *perm) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) perm[i] = hpdl__shuffle_index(i, n, key);
}

/* ======================================================================== */
/* Kernels                                                                   */
/* ======================================================================== */

/* Small state updates, one thread: hyper-parameters and accumulators at the
   start of an epoch, the feed before a run of steps. */
__global__ void hpdl__mlp_begin_kernel(hpdl__mlp_state *st, double lr, double l2, int reset_train, int reset_eval) {
    st->lr = lr;
    st->l2 = l2;
    if (reset_train) { st->loss_sum = 0.0; st->correct = 0; }
    if (reset_eval) { st->eval_loss_sum = 0.0; st->eval_correct = 0; }
}

__global__ void hpdl__mlp_feed_kernel(hpdl__mlp_state *st, const void *src, int src_f64, const int32_t *labels,
                                      const int32_t *perm, long long cursor) {
    st->src = src;
    st->src_f64 = src_f64;
    st->labels = labels;
    st->perm = perm;
    st->cursor = cursor;
}

__global__ void hpdl__mlp_scaler_init_kernel(hpdl__mlp_state *st, float scale) {
    st->loss_scale = scale;
    st->found_inf = 0;
    st->good_steps = 0;
    st->skipped_steps = 0;
}

/* A0[i, :] = src[row(i), :] converted to the compute type; labels too. One
   block per batch row. */
template <typename C>
__global__ void hpdl__mlp_gather_kernel(int batch, int cols, const hpdl__mlp_state *st, C *A0, int32_t *labels) {
    int i = blockIdx.x, j;
    long long pos = st->cursor + i;
    long long row = st->perm ? (long long)st->perm[pos] : pos;
    C *dst = A0 + (size_t)i * cols;
    if (i >= batch) return;
    if (threadIdx.x == 0) labels[i] = st->labels[row];
    if (st->src_f64) {
        const double *s = (const double *)st->src + (size_t)row * cols;
        for (j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = hpdl__st<C>(s[j]);
    } else {
        const float *s = (const float *)st->src + (size_t)row * cols;
        for (j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = hpdl__st<C>(s[j]);
    }
}

/* A = act(A + b), in place over rows x cols (A holds X.W from the GEMM). */
template <typename C, typename T>
__global__ void hpdl__mlp_bias_act_kernel(int rows, int cols, C *A, const T *bias, hpdl_activation act) {
    typedef typename hpdl__acc<T>::type Acc;
    size_t n = (size_t)rows * cols, i;
    for (i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        Acc v = (Acc)hpdl__ld(A[i]) + (Acc)bias[i % cols];
        hpdl__st_to(A + i, hpdl__act<Acc>(v, act));
    }
}

/* Warp reductions. */
template <typename A> __device__ __forceinline__ A hpdl__warp_sum(A v) {
    int o;
    for (o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Max and its first index over the warp (NaN never wins: idx stays -1). */
template <typename A> __device__ __forceinline__ void hpdl__warp_argmax(A *v, int *idx) {
    int o;
    for (o = 16; o > 0; o >>= 1) {
        A ov = __shfl_xor_sync(0xffffffffu, *v, o);
        int oi = __shfl_xor_sync(0xffffffffu, *idx, o);
        if (oi >= 0 && (*idx < 0 || ov > *v || (ov == *v && oi < *idx))) { *v = ov; *idx = oi; }
    }
}

/* Softmax + cross-entropy + gradient, one warp per row (warps stride over
   the rows), numerically stable:
       z = logits + bias (bias may be NULL), m = max z, s = sum exp(z - m)
       loss_row = log s + m - z[y]
       grad = (exp(z - m)/s - onehot(y)) * grad_scale * (*loss_scale)
   Per-row losses times loss_weight are summed per block and added to
   *loss_sum (atomics: one per block); rows whose argmax is the label are
   counted into *correct. grad, loss_sum, correct and loss_scale may each be
   NULL. A label outside [0, cols) makes that row's loss NaN.
   db (optional; one block only, cols <= HPDL__XENT_DB_MAX_COLS): the column
   sums of grad, i.e. the last layer's bias gradient, summed in a fixed order
   (per warp, then over the warps), which saves the small batches a launch. */
#define HPDL__XENT_DB_MAX_COLS 64
template <typename C, typename T, typename G>
__global__ void hpdl__mlp_xent_kernel(int rows, int cols, const C *logits, int ld, const T *bias,
                                      const int32_t *labels, G *grad, int ldg, double grad_scale,
                                      const float *loss_scale, double loss_weight, double *loss_sum,
                                      unsigned long long *correct, G *db) {
    typedef typename hpdl__acc<T>::type Acc;
    __shared__ double block_loss[32];
    __shared__ int block_hits[32];
    __shared__ Acc db_part[32][HPDL__XENT_DB_MAX_COLS];
    int lane = threadIdx.x & 31, wib = threadIdx.x >> 5, warps = (int)(blockDim.x >> 5), row;
    double warp_loss = 0.0;
    int warp_hits = 0;
    Acc db0 = 0, db1 = 0; /* this lane's columns: lane and lane + 32 */
    Acc gs = (Acc)grad_scale * (loss_scale ? (Acc)*loss_scale : (Acc)1);
    for (row = blockIdx.x * warps + wib; row < rows; row += gridDim.x * warps) {
        const C *z = logits + (size_t)row * ld;
        int y = labels[row], j, arg = -1;
        Acc m = -(Acc)INFINITY, s = 0;
        for (j = lane; j < cols; j += 32) {
            Acc v = (Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0);
            if (v > m || (arg < 0 && v == m)) { m = v; arg = j; }
        }
        hpdl__warp_argmax(&m, &arg);
        for (j = lane; j < cols; j += 32)
            s += hpdl__exp((Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0) - m);
        s = hpdl__warp_sum(s);
        if (y >= 0 && y < cols)
            warp_loss += (double)(hpdl__log(s) + m - ((Acc)hpdl__ld(z[y]) + (bias ? (Acc)bias[y] : (Acc)0)));
        else
            warp_loss = (double)NAN;
        warp_hits += arg == y;
        if (grad) {
            G *g = grad + (size_t)row * ldg;
            for (j = lane; j < cols; j += 32) {
                Acc p = hpdl__exp((Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0) - m) / s;
                Acc v = (p - (j == y ? (Acc)1 : (Acc)0)) * gs;
                hpdl__st_to(g + j, v);
                if (j == lane) db0 += v; else db1 += v;
            }
        }
    }
    if (lane == 0) { block_loss[wib] = warp_loss; block_hits[wib] = warp_hits; }
    if (db) {
        db_part[wib][lane] = db0;
        if (lane + 32 < HPDL__XENT_DB_MAX_COLS) db_part[wib][lane + 32] = db1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0.0;
        int w, hits = 0;
        for (w = 0; w < warps; w++) { sum += block_loss[w]; hits += block_hits[w]; }
        if (loss_sum) atomicAdd(loss_sum, sum * loss_weight);
        if (correct) atomicAdd(correct, (unsigned long long)hits);
    }
    if (db && (int)threadIdx.x < cols) {
        Acc sum = 0;
        int w;
        for (w = 0; w < warps; w++) sum += db_part[w][threadIdx.x];
        hpdl__st_to(db + threadIdx.x, sum);
    }
}

/* Column sums of D (rows x cols) into db, deterministically (no atomics):
   a block owns 32 columns, its 32 thread rows stride over the rows. When A
   is given, D is first multiplied in place by act'(A): the backward pass's
   activation derivative and bias gradient in one read of D. */
template <typename C>
__global__ void hpdl__mlp_delta_colsum_kernel(int rows, int cols, C *D, const C *A, hpdl_activation act, C *db) {
    typedef typename hpdl__acc<C>::type Acc;
    __shared__ Acc part[32][33];
    int tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * 32 + tx, r;
    Acc sum = 0;
    if (col < cols) {
        for (r = ty; r < rows; r += blockDim.y) {
            size_t k = (size_t)r * cols + col;
            Acc v = (Acc)hpdl__ld(D[k]);
            if (A) {
                v *= hpdl__act_grad<Acc>((Acc)hpdl__ld(A[k]), act);
                hpdl__st_to(D + k, v);
            }
            sum += v;
        }
    }
    part[ty][tx] = sum;
    __syncthreads();
    if (ty == 0 && col < cols) {
        for (r = 1; r < (int)blockDim.y; r++) sum += part[r][tx];
        hpdl__st_to(db + col, sum);
    }
}

/* Raises st->found_inf if any gradient is inf or NaN (GradScaler's check). */
template <typename C>
__global__ void hpdl__mlp_check_finite_kernel(int64_t n, const C *g, hpdl__mlp_state *st) {
    int64_t i;
    int bad = 0;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        bad |= !hpdl__finite(g[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0) st->found_inf = 1;
}

/* GradScaler's update (mixed precision), by one thread: halve S and count a
   skipped step on overflow; double S after HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL
   clean steps; clear the flag. */
__device__ inline void hpdl__mlp_scaler_update(hpdl__mlp_state *st) {
    if (st->found_inf) {
        st->loss_scale *= 0.5f;
        st->good_steps = 0;
        st->skipped_steps++;
    } else if (++st->good_steps >= HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL) {
        st->loss_scale *= 2.0f;
        st->good_steps = 0;
    }
    st->found_inf = 0;
}

/* SGD with L2 over all parameters: P = [weights (n_w) | biases];
       W -= lr (dW/S + l2 W),  b -= lr db/S
   S is the loss scale (mixed precision; else 1). With mixed precision a raised
   found_inf skips the step, the f16 weight copy cW is refreshed from the
   updated master, and the last block to finish (every block has read S by
   then) runs the scaler update. Block 0 also advances the feed cursor. */
template <typename T, typename C>
__global__ void hpdl__mlp_sgd_kernel(int64_t n_w, int64_t n, T *P, C *cW, const C *G, hpdl__mlp_state *st,
                                     int amp, int batch) {
    typedef typename hpdl__acc<T>::type Acc;
    int64_t i;
    Acc lr = (Acc)st->lr, l2 = (Acc)st->l2, inv = amp ? (Acc)1 / (Acc)st->loss_scale : (Acc)1;
    if (blockIdx.x == 0 && threadIdx.x == 0) st->cursor += batch;
    if (!(amp && st->found_inf))
        for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
            Acc g = (Acc)hpdl__ld(G[i]) * inv, p = (Acc)P[i];
            p -= i < n_w ? lr * (g + l2 * p) : lr * g;
            P[i] = (T)p;
            if (cW && i < n_w) hpdl__st_to(cW + i, p);
        }
    if (!amp) return;
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&st->blocks_done, 1u) == gridDim.x - 1) {
        hpdl__mlp_scaler_update(st);
        st->blocks_done = 0;
    }
}

/* Converts n values of T into C (the f16 weight copy after an upload). */
template <typename C, typename T>
__global__ void hpdl__mlp_convert_kernel(int64_t n, const T *src, C *dst) {
    int64_t i;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        hpdl__st_to(dst + i, (typename hpdl__acc<T>::type)src[i]);
}

/* ======================================================================== */
/* Host helpers                                                              */
/* ======================================================================== */

/* Grid for a grid-stride loop: enough blocks to fill the GPU, no more. */
HPDL_API int hpdl__grid_for(int64_t n, int threads) {
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 4096) blocks = 4096;
    return blocks < 1 ? 1 : (int)blocks;
}

/* GEMM by compute type: the f16 products accumulate in f32. */
HPDL_API hpdl_status hpdl__mlp_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                    const float *A, int lda, const float *B, int ldb, float *C, int ldc, cudaStream_t s) {
    return hpdl_cuda_gemm_algo_f32(algo, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, s);
}
HPDL_API hpdl_status hpdl__mlp_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                    const double *A, int lda, const double *B, int ldb, double *C, int ldc, cudaStream_t s) {
    return hpdl_cuda_gemm_algo_f64(algo, ta, tb, M, N, K, 1.0, A, lda, B, ldb, 0.0, C, ldc, s);
}
HPDL_API hpdl_status hpdl__mlp_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                    const __half *A, int lda, const __half *B, int ldb, __half *C, int ldc, cudaStream_t s) {
    return hpdl_cuda_gemm_algo_f16(algo, ta, tb, M, N, K, 1.0f, (const hpdl_f16 *)A, lda, (const hpdl_f16 *)B, ldb,
                                   0.0f, (hpdl_f16 *)C, ldc, s);
}

/* Device type of a storage type: hpdl_f16 is __half on the GPU. */
template <typename T> struct hpdl__dev { typedef T type; };
template <> struct hpdl__dev<hpdl_f16> { typedef __half type; };

/* Element offsets rounded up to 64 elements keep every sub-buffer aligned to
   at least 128 bytes (vector loads in the GEMM kernels). */
HPDL_API int64_t hpdl__mlp_align(int64_t n) { return (n + 63) / 64 * 64; }

/* One cached graph: the training step for one batch size and GEMM algorithm. */
typedef struct hpdl__mlp_graph {
    int batch;
    hpdl_gemm_algo algo;
    cudaGraphExec_t exec;
} hpdl__mlp_graph;

/* ======================================================================== */
/* Data on the device                                                        */
/* ======================================================================== */

/* Images (n x features, f32) and labels for training or evaluation. Resident:
   both live in device memory. Streamed: both live in pinned host memory; an
   epoch gathers shuffled chunks into two pinned staging buffers and copies
   them on copy_stream while the GPU trains on the other one. */
typedef struct hpdl_cuda_dataset {
    int64_t n;
    int features, n_classes; /* n_classes: largest label + 1 */
    int resident;
    float *images;           /* device (resident) or pinned host (streamed) */
    int32_t *labels;         /* likewise */
    int32_t *perm;           /* device permutation of [0, n) for one epoch */
    int64_t epoch;           /* epochs shuffled so far: keys the next permutation */
    /* streamed only */
    int64_t chunk_rows;
    int32_t *host_perm;
    float *stage_host[2], *stage_dev[2];
    int32_t *stage_host_labels[2], *stage_dev_labels[2];
    cudaStream_t copy_stream;
    cudaEvent_t copied[2], consumed[2];
} hpdl_cuda_dataset;

/* Placement of a data set: HPDL_DATA_AUTO keeps it on the device when it
   takes under half of the free device memory. */
typedef enum hpdl_data_placement { HPDL_DATA_AUTO = -1, HPDL_DATA_STREAMED = 0, HPDL_DATA_RESIDENT = 1 } hpdl_data_placement;

HPDL_API void hpdl_cuda_dataset_destroy(hpdl_cuda_dataset *d) {
    int k;
    if (!d) return;
    if (d->resident) {
        hpdl_cuda_free(d->images);
        hpdl_cuda_free(d->labels);
    } else {
        hpdl_cuda_free_pinned(d->images);
        hpdl_cuda_free_pinned(d->labels);
        for (k = 0; k < 2; k++) {
            hpdl_cuda_free_pinned(d->stage_host[k]);
            hpdl_cuda_free_pinned(d->stage_host_labels[k]);
            hpdl_cuda_free(d->stage_dev[k]);
            hpdl_cuda_free(d->stage_dev_labels[k]);
            if (d->copied[k]) cudaEventDestroy(d->copied[k]);
            if (d->consumed[k]) cudaEventDestroy(d->consumed[k]);
        }
        if (d->copy_stream) cudaStreamDestroy(d->copy_stream);
        HPDL_FREE(d->host_perm);
    }
    hpdl_cuda_free(d->perm);
    memset(d, 0, sizeof *d);
}

HPDL_API hpdl_status hpdl__dataset_alloc_streamed(hpdl_cuda_dataset *d, size_t img_bytes, size_t lab_bytes) {
    size_t chunk_img = (size_t)d->chunk_rows * d->features * sizeof(float), chunk_lab = (size_t)d->chunk_rows * 4;
    int k;
    if (hpdl_cuda_alloc_pinned((void **)&d->images, img_bytes) || hpdl_cuda_alloc_pinned((void **)&d->labels, lab_bytes))
        return HPDL_ERR_NOMEM;
    d->host_perm = (int32_t *)hpdl_alloc((size_t)d->n, sizeof(int32_t));
    if (!d->host_perm) return HPDL_ERR_NOMEM;
    for (k = 0; k < 2; k++) {
        if (hpdl_cuda_alloc_pinned((void **)&d->stage_host[k], chunk_img) ||
            hpdl_cuda_alloc_pinned((void **)&d->stage_host_labels[k], chunk_lab) ||
            hpdl_cuda_alloc((void **)&d->stage_dev[k], chunk_img) ||
            hpdl_cuda_alloc((void **)&d->stage_dev_labels[k], chunk_lab))
            return HPDL_ERR_NOMEM;
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&d->copied[k], cudaEventDisableTiming));
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&d->consumed[k], cudaEventDisableTiming));
    }
    HPDL_CUDA_TRY(cudaStreamCreateWithFlags(&d->copy_stream, cudaStreamNonBlocking));
    return HPDL_OK;
}

/* Copies n_images images of `features` floats and n_labels labels (host
   memory) into a device data set. chunk_rows: rows per streamed chunk (0: a
   default); placement: HPDL_DATA_AUTO / _RESIDENT / _STREAMED. Mismatched
   counts, labels < 0 and non-positive sizes are HPDL_ERR_INVALID. */
HPDL_API hpdl_status hpdl_cuda_dataset_upload(hpdl_cuda_dataset *d, int64_t n_images, int features,
                                              const float *images, int64_t n_labels, const int32_t *labels,
                                              hpdl_data_placement placement, int64_t chunk_rows) {
    size_t img_bytes, lab_bytes, free_b = 0, total_b = 0;
    int64_t i;
    int max_label = -1;
    hpdl_status s;
    if (!d || !images || !labels || n_images <= 0 || features <= 0 || n_images != n_labels ||
        n_images > INT32_MAX || chunk_rows < 0)
        return HPDL_ERR_INVALID;
    for (i = 0; i < n_labels; i++) {
        if (labels[i] < 0) return HPDL_ERR_INVALID;
        if (labels[i] > max_label) max_label = labels[i];
    }
    memset(d, 0, sizeof *d);
    d->n = n_images;
    d->features = features;
    d->n_classes = max_label + 1;
    img_bytes = (size_t)n_images * features * sizeof(float);
    lab_bytes = (size_t)n_images * sizeof(int32_t);
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    d->resident = placement == HPDL_DATA_AUTO ? img_bytes + lab_bytes < free_b / 2 : placement == HPDL_DATA_RESIDENT;
    d->chunk_rows = chunk_rows ? chunk_rows : 8192;
    if (d->chunk_rows > n_images) d->chunk_rows = n_images;
    if (hpdl_cuda_alloc((void **)&d->perm, lab_bytes)) s = HPDL_ERR_NOMEM;
    else if (d->resident)
        s = hpdl_cuda_alloc((void **)&d->images, img_bytes) || hpdl_cuda_alloc((void **)&d->labels, lab_bytes)
                ? HPDL_ERR_NOMEM : HPDL_OK;
    else
        s = hpdl__dataset_alloc_streamed(d, img_bytes, lab_bytes);
    if (s != HPDL_OK) { hpdl_cuda_dataset_destroy(d); return s; }
    HPDL_NVTX_PUSH("dataset upload");
    if (d->resident) {
        if (cudaMemcpy(d->images, images, img_bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(d->labels, labels, lab_bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            s = HPDL_ERR_CUDA;
    } else {
        memcpy(d->images, images, img_bytes);
        memcpy(d->labels, labels, lab_bytes);
    }
    HPDL_NVTX_POP();
    if (s != HPDL_OK) hpdl_cuda_dataset_destroy(d);
    return s;
}

/* The same from a loaded hpdl_dataset (features = rows x cols). */
HPDL_API hpdl_status hpdl_cuda_dataset_create(hpdl_cuda_dataset *d, const hpdl_dataset *src,
                                              hpdl_data_placement placement) {
    if (!src) return HPDL_ERR_INVALID;
    return hpdl_cuda_dataset_upload(d, src->n, src->rows * src->cols, src->images, src->n, src->labels, placement, 0);
}

/* Draws the next epoch's permutation into d->perm (device), and into
   d->host_perm for a streamed set. */
HPDL_API hpdl_status hpdl_cuda_dataset_shuffle(hpdl_cuda_dataset *d, uint64_t seed, cudaStream_t stream) {
    uint64_t key;
    int64_t i;
    if (!d || !d->perm) return HPDL_ERR_INVALID;
    key = hpdl__shuffle_key(seed, d->epoch++);
    HPDL_NVTX_PUSH("shuffle");
    hpdl__shuffle_kernel<<<(unsigned)((d->n + 255) / 256), 256, 0, stream>>>(d->n, key, d->perm);
    if (!d->resident)
        for (i = 0; i < d->n; i++) d->host_perm[i] = hpdl__shuffle_index(i, d->n, key);
    HPDL_NVTX_POP();
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Streamed set: puts rows [r0, r1) of the epoch (shuffled order when
   shuffled, else file order) in staging buffer k on copy_stream, after the
   compute stream has finished with that buffer; the compute stream then
   waits for the copy. */
HPDL_API hpdl_status hpdl__dataset_stage(hpdl_cuda_dataset *d, int k, int64_t r0, int64_t r1, int shuffled,
                                         cudaStream_t compute) {
    int64_t i, rows = r1 - r0;
    size_t row_bytes = (size_t)d->features * sizeof(float);
    HPDL_NVTX_PUSH("data copy");
    HPDL_CUDA_TRY(cudaEventSynchronize(d->copied[k])); /* the previous copy out of this pinned buffer */
    for (i = 0; i < rows; i++) {
        int64_t src = shuffled ? d->host_perm[r0 + i] : r0 + i;
        memcpy(d->stage_host[k] + i * d->features, d->images + src * d->features, row_bytes);
        d->stage_host_labels[k][i] = d->labels[src];
    }
    HPDL_CUDA_TRY(cudaStreamWaitEvent(d->copy_stream, d->consumed[k], 0));
    HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev[k], d->stage_host[k], (size_t)rows * row_bytes,
                                  cudaMemcpyHostToDevice, d->copy_stream));
    HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev_labels[k], d->stage_host_labels[k], (size_t)rows * 4,
                                  cudaMemcpyHostToDevice, d->copy_stream));
    HPDL_CUDA_TRY(cudaEventRecord(d->copied[k], d->copy_stream));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(compute, d->copied[k], 0));
    HPDL_NVTX_POP();
    return HPDL_OK;
}

/* ======================================================================== */
/* NVML utilisation sampler (libnvidia-ml loaded at run time)                */
/* ======================================================================== */

/* NVML's own header is not needed: the few entry points are declared here and
   looked up with dlsym, so programs build without the NVML development files
   and run (reporting HPDL_ERR_UNSUPPORTED) without the driver library. */
typedef struct hpdl__nvml_utilization { unsigned int gpu, memory; } hpdl__nvml_utilization;
typedef struct hpdl__nvml_memory { unsigned long long total, free, used; } hpdl__nvml_memory;
typedef int (*hpdl__nvml_init_fn)(void);
typedef int (*hpdl__nvml_handle_fn)(const char *pci_bus_id, void **device);
typedef int (*hpdl__nvml_util_fn)(void *device, hpdl__nvml_utilization *u);
typedef int (*hpdl__nvml_mem_fn)(void *device, hpdl__nvml_memory *m);

typedef struct hpdl_nvml_sampler {
    void *lib, *device;
    hpdl__nvml_init_fn shutdown;
    hpdl__nvml_util_fn get_util;
    hpdl__nvml_mem_fn get_mem;
    FILE *csv;               /* time series: t_s,gpu_util_pct,mem_util_pct,mem_used_mib */
    int period_ms;
    volatile int stop;
    pthread_t thread;
    double t0, gpu_sum, mem_sum;
    int64_t samples;
} hpdl_nvml_sampler;

HPDL_API void *hpdl__nvml_thread(void *arg) {
    hpdl_nvml_sampler *s = (hpdl_nvml_sampler *)arg;
    struct timespec nap;
    nap.tv_sec = s->period_ms / 1000;
    nap.tv_nsec = (long)(s->period_ms % 1000) * 1000000L;
    while (!s->stop) {
        hpdl__nvml_utilization u;
        hpdl__nvml_memory m;
        if (s->get_util(s->device, &u) == 0) {
            memset(&m, 0, sizeof m);
            if (s->get_mem) s->get_mem(s->device, &m);
            s->gpu_sum += u.gpu;
            s->mem_sum += u.memory;
            s->samples++;
            if (s->csv) fprintf(s->csv, "%.3f,%u,%u,%.1f\n", hpdl_time_now() - s->t0, u.gpu, u.memory, m.used / 1048576.0);
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

/* Starts sampling GPU and memory-controller utilisation of CUDA device
   `device` every period_ms into csv_path (NULL: averages only). Returns
   HPDL_ERR_UNSUPPORTED when libnvidia-ml.so.1 or the device is not found. */
HPDL_API hpdl_status hpdl_nvml_sampler_start(hpdl_nvml_sampler *s, int device, int period_ms, const char *csv_path) {
    char bus[64];
    hpdl__nvml_init_fn init;
    hpdl__nvml_handle_fn by_bus;
    if (!s || period_ms <= 0) return HPDL_ERR_INVALID;
    memset(s, 0, sizeof *s);
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device) != cudaSuccess) { cudaGetLastError(); return HPDL_ERR_INVALID; }
    s->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) return HPDL_ERR_UNSUPPORTED;
    init = (hpdl__nvml_init_fn)dlsym(s->lib, "nvmlInit_v2");
    s->shutdown = (hpdl__nvml_init_fn)dlsym(s->lib, "nvmlShutdown");
    by_bus = (hpdl__nvml_handle_fn)dlsym(s->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    s->get_util = (hpdl__nvml_util_fn)dlsym(s->lib, "nvmlDeviceGetUtilizationRates");
    s->get_mem = (hpdl__nvml_mem_fn)dlsym(s->lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !s->shutdown || !by_bus || !s->get_util || init() != 0) { dlclose(s->lib); s->lib = NULL; return HPDL_ERR_UNSUPPORTED; }
    if (by_bus(bus, &s->device) != 0) { s->shutdown(); dlclose(s->lib); s->lib = NULL; return HPDL_ERR_UNSUPPORTED; }
    if (csv_path) {
        s->csv = fopen(csv_path, "w");
        if (!s->csv) { s->shutdown(); dlclose(s->lib); s->lib = NULL; return HPDL_ERR_IO; }
        fprintf(s->csv, "t_s,gpu_util_pct,mem_util_pct,mem_used_mib\n");
    }
    s->period_ms = period_ms;
    s->t0 = hpdl_time_now();
    if (pthread_create(&s->thread, NULL, hpdl__nvml_thread, s) != 0) {
        if (s->csv) fclose(s->csv);
        s->shutdown(); dlclose(s->lib); s->lib = NULL;
        return HPDL_ERR_UNSUPPORTED;
    }
    return HPDL_OK;
}

/* Stops the sampler; writes the mean utilisations (percent) when asked. */
HPDL_API void hpdl_nvml_sampler_stop(hpdl_nvml_sampler *s, double *mean_gpu, double *mean_mem, int64_t *samples) {
    if (!s || !s->lib) return;
    s->stop = 1;
    pthread_join(s->thread, NULL);
    if (mean_gpu) *mean_gpu = s->samples ? s->gpu_sum / (double)s->samples : 0.0;
    if (mean_mem) *mean_mem = s->samples ? s->mem_sum / (double)s->samples : 0.0;
    if (samples) *samples = s->samples;
    if (s->csv) fclose(s->csv);
    s->shutdown();
    dlclose(s->lib);
    memset(s, 0, sizeof *s);
}

/* ======================================================================== */
/* The GPU MLP                                                               */
/* ======================================================================== */

/* Fields shared by every precision; T is the master (parameter) type, CT the
   type of the matrix products' operands (T itself, or hpdl_f16). */
#define HPDL__CUDA_MLP_FIELDS(T, CT)                                                          \
    int n_layers, widths[HPDL_MLP_MAX_LAYERS + 1];                                            \
    hpdl_activation act;                                                                      \
    int max_batch;                                                                            \
    int amp;          /* 1: 16-bit products, f32 master weights, loss scaling */             \
    int use_graphs;   /* 1 (default): capture each batch size's step once, replay it */      \
    hpdl_gemm_algo algo; /* GEMM rung for every product (default: see create) */             \
    cudaStream_t stream;                                                                      \
    int64_t n_weights, n_params;  /* params = [W0..W(L-1) | b0..b(L-1)], padded */           \
    T *params, *W[HPDL_MLP_MAX_LAYERS], *b[HPDL_MLP_MAX_LAYERS];                              \
    CT *cparams, *cW[HPDL_MLP_MAX_LAYERS];  /* product copy of W (aliases W unless amp) */   \
    CT *grads, *dW[HPDL_MLP_MAX_LAYERS], *db[HPDL_MLP_MAX_LAYERS];                            \
    CT *acts;         /* A[0] input batch, A[l] hidden outputs, A[L] logits before bias */   \
    CT *A[HPDL_MLP_MAX_LAYERS + 1], *D[HPDL_MLP_MAX_LAYERS]; /* D[l]: dLoss/dZ of layer l */ \
    int32_t *batch_labels;                                                                    \
    hpdl__mlp_state *state;                                                                   \
    hpdl__mlp_graph graphs[HPDL_CUDA_MLP_GRAPHS];                                             \
    int next_graph

/* Lays out parameters, gradients and activations; offsets in elements. */
template <typename M>
static inline void hpdl__cmlp_layout(M *g, int64_t *off_w, int64_t *off_b, int64_t *off_a, int64_t *off_d,
                                     int64_t *n_acts) {
    int l, L = g->n_layers;
    int64_t o = 0;
    for (l = 0; l < L; l++) { off_w[l] = o; o += hpdl__mlp_align((int64_t)g->widths[l] * g->widths[l + 1]); }
    g->n_weights = o;
    for (l = 0; l < L; l++) { off_b[l] = o; o += hpdl__mlp_align(g->widths[l + 1]); }
    g->n_params = o;
    o = 0;
    for (l = 0; l <= L; l++) { off_a[l] = o; o += hpdl__mlp_align((int64_t)g->max_batch * g->widths[l]); }
    for (l = 0; l < L; l++) { off_d[l] = o; o += hpdl__mlp_align((int64_t)g->max_batch * g->widths[l + 1]); }
    *n_acts = o;
}

template <typename M> static inline void hpdl__cmlp_destroy(M *g) {
    int k;
    if (!g) return;
    for (k = 0; k < HPDL_CUDA_MLP_GRAPHS; k++)
        if (g->graphs[k].exec) cudaGraphExecDestroy(g->graphs[k].exec);
    hpdl_cuda_free(g->params);
    if (g->amp) hpdl_cuda_free(g->cparams);
    hpdl_cuda_free(g->grads);
    hpdl_cuda_free(g->acts);
    hpdl_cuda_free(g->batch_labels);
    hpdl_cuda_free(g->state);
    if (g->stream) cudaStreamDestroy(g->stream);
    memset(g, 0, sizeof *g);
}

/* Allocates everything (zeroed: padding stays finite for the inf check). */
template <typename T, typename CT, typename M> static inline hpdl_status hpdl__cmlp_alloc(M *g) {
    int64_t off_w[HPDL_MLP_MAX_LAYERS], off_b[HPDL_MLP_MAX_LAYERS], off_a[HPDL_MLP_MAX_LAYERS + 1],
        off_d[HPDL_MLP_MAX_LAYERS], n_acts;
    int l;
    hpdl__cmlp_layout(g, off_w, off_b, off_a, off_d, &n_acts);
    if (hpdl_cuda_alloc((void **)&g->params, (size_t)g->n_params * sizeof(T)) ||
        (g->amp && hpdl_cuda_alloc((void **)&g->cparams, (size_t)g->n_weights * sizeof(CT))) ||
        hpdl_cuda_alloc((void **)&g->grads, (size_t)g->n_params * sizeof(CT)) ||
        hpdl_cuda_alloc((void **)&g->acts, (size_t)n_acts * sizeof(CT)) ||
        hpdl_cuda_alloc((void **)&g->batch_labels, (size_t)g->max_batch * sizeof(int32_t)) ||
        hpdl_cuda_alloc((void **)&g->state, sizeof(hpdl__mlp_state)))
        return HPDL_ERR_NOMEM;
    if (!g->amp) g->cparams = (CT *)(void *)g->params;
    HPDL_CUDA_TRY(cudaMemset(g->params, 0, (size_t)g->n_params * sizeof(T)));
    HPDL_CUDA_TRY(cudaMemset(g->grads, 0, (size_t)g->n_params * sizeof(CT)));
    HPDL_CUDA_TRY(cudaMemset(g->state, 0, sizeof(hpdl__mlp_state)));
    for (l = 0; l < g->n_layers; l++) {
        g->W[l] = g->params + off_w[l];
        g->b[l] = g->params + off_b[l];
        g->cW[l] = g->cparams + off_w[l];
        g->dW[l] = g->grads + off_w[l];
        g->db[l] = g->grads + off_b[l];
        g->D[l] = g->acts + off_d[l];
    }
    for (l = 0; l <= g->n_layers; l++) g->A[l] = g->acts + off_a[l];
    HPDL_CUDA_TRY(cudaStreamCreate(&g->stream)); /* blocking: ordered after legacy-stream work */
    hpdl__mlp_scaler_init_kernel<<<1, 1, 0, g->stream>>>(g->state, g->amp ? HPDL_CUDA_MLP_SCALE_INIT : 1.0f);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename M, typename CPU> static inline int hpdl__cmlp_same_shape(const M *g, const CPU *m) {
    int l;
    if (g->n_layers != m->n_layers || g->act != m->act) return 0;
    for (l = 0; l <= g->n_layers; l++)
        if (g->widths[l] != m->widths[l]) return 0;
    for (l = 0; l < g->n_layers; l++)
        if (!m->W[l] || !m->b[l]) return 0;
    return 1;
}

/* Copies the CPU model's weights to the device (and into the f16 copy). */
template <typename T, typename C, typename M, typename CPU> static inline hpdl_status hpdl__cmlp_upload(M *g, const CPU *m) {
    int l;
    if (!g || !m || !g->params || !hpdl__cmlp_same_shape(g, m)) return HPDL_ERR_INVALID;
    for (l = 0; l < g->n_layers; l++) {
        HPDL_CUDA_TRY(cudaMemcpyAsync(g->W[l], m->W[l], sizeof(T) * g->widths[l] * g->widths[l + 1],
                                      cudaMemcpyHostToDevice, g->stream));
        HPDL_CUDA_TRY(cudaMemcpyAsync(g->b[l], m->b[l], sizeof(T) * g->widths[l + 1], cudaMemcpyHostToDevice, g->stream));
    }
    if (g->amp) {
        hpdl__mlp_convert_kernel<C, T><<<hpdl__grid_for(g->n_weights, 256), 256, 0, g->stream>>>(
            g->n_weights, g->params, (C *)(void *)g->cparams);
        HPDL_CUDA_TRY_LAUNCH();
    }
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    return HPDL_OK;
}

/* Copies the (master) weights back into a CPU model of the same shape. */
template <typename T, typename M, typename CPU> static inline hpdl_status hpdl__cmlp_download(const M *g, CPU *m) {
    int l;
    if (!g || !m || !g->params || !hpdl__cmlp_same_shape(g, m)) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    for (l = 0; l < g->n_layers; l++) {
        HPDL_CUDA_TRY(cudaMemcpy(m->W[l], g->W[l], sizeof(T) * g->widths[l] * g->widths[l + 1], cudaMemcpyDeviceToHost));
        HPDL_CUDA_TRY(cudaMemcpy(m->b[l], g->b[l], sizeof(T) * g->widths[l + 1], cudaMemcpyDeviceToHost));
    }
    return HPDL_OK;
}

/* A GPU model with the CPU model's shape and weights; room for batches of up
   to max_batch rows. */
template <typename T, typename C, typename CT, typename M, typename CPU>
static inline hpdl_status hpdl__cmlp_create(M *g, const CPU *m, int max_batch) {
    hpdl_status s;
    int l;
    if (!g || !m || max_batch <= 0 || !hpdl__mlp_widths_ok(m->n_layers + 1, m->widths) || !hpdl__activation_ok(m->act))
        return HPDL_ERR_INVALID;
    for (l = 0; l < m->n_layers; l++)
        if (!m->W[l] || !m->b[l]) return HPDL_ERR_INVALID;
    memset(g, 0, sizeof *g);
    g->n_layers = m->n_layers;
    for (l = 0; l <= m->n_layers; l++) g->widths[l] = m->widths[l];
    g->act = m->act;
    g->max_batch = max_batch;
    g->amp = hpdl__is_half<C>::value;
    g->use_graphs = 1;
    /* The products here are small or skinny (a batch of 32 against 784x512):
       on an H100, cuBLAS ran the f32 and f16 epochs 2-4x faster than the
       ladder's AUTO rung (bench/mlp), so it is the default there; f64 keeps
       AUTO (tensor-core DMMA). Any rung can be set in g->algo. */
    g->algo = sizeof(T) == sizeof(double) ? HPDL_GEMM_AUTO : HPDL_GEMM_CUBLAS;
    s = hpdl__cmlp_alloc<T, CT>(g);
    if (s == HPDL_OK) s = hpdl__cmlp_upload<T, C>(g, m);
    if (s != HPDL_OK) hpdl__cmlp_destroy(g);
    return s;
}

/* Forward from A[0] (batch rows): hidden layers get bias + activation in one
   pass after their GEMM; the last layer's bias is left to the loss kernel. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_forward(M *g, int batch) {
    int l, L = g->n_layers;
    hpdl_status s;
    for (l = 0; l < L; l++) {
        int k = g->widths[l], n = g->widths[l + 1];
        s = hpdl__mlp_gemm(g->algo, HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n, k, (const C *)g->A[l], k,
                           (const C *)g->cW[l], n, (C *)g->A[l + 1], n, g->stream);
        if (s != HPDL_OK) return s;
        if (l < L - 1) {
            hpdl__mlp_bias_act_kernel<<<hpdl__grid_for((int64_t)batch * n, 256), 256, 0, g->stream>>>(
                batch, n, (C *)g->A[l + 1], g->b[l], g->act);
            HPDL_CUDA_TRY_LAUNCH();
        }
    }
    return HPDL_OK;
}

/* Small batches get the last layer's bias gradient from the loss kernel
   itself (one block); larger ones from the column-sum kernel. */
HPDL_API int hpdl__mlp_xent_fuses_db(int batch, int classes) {
    return batch <= 1024 && classes <= HPDL__XENT_DB_MAX_COLS;
}

/* Loss kernel over the logits A[L] + b[L-1]: gradient into D[L-1] (scaled
   by 1/batch, and by S under mixed precision) when train, else only the
   evaluation sums. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_loss(M *g, int batch, int train) {
    int L = g->n_layers, classes = g->widths[L], fuse = train && hpdl__mlp_xent_fuses_db(batch, classes);
    hpdl__mlp_state *st = g->state;
    int blocks = fuse ? 1 : (batch + 7) / 8, threads = fuse ? 32 * (batch < 32 ? batch : 32) : 256;
    hpdl__mlp_xent_kernel<<<blocks, threads, 0, g->stream>>>(
        batch, classes, (const C *)g->A[L], classes, g->b[L - 1], g->batch_labels, train ? (C *)g->D[L - 1] : (C *)NULL,
        classes, 1.0 / batch, g->amp ? &st->loss_scale : (const float *)NULL, 1.0,
        train ? &st->loss_sum : &st->eval_loss_sum, train ? &st->correct : &st->eval_correct,
        fuse ? (C *)g->db[L - 1] : (C *)NULL);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Backward: dW = A^T D and dA = D W^T per layer, then D = dA * act'(A) fused
   with the column sums that give db. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_backward(M *g, int batch) {
    int l, L = g->n_layers;
    dim3 threads(32, 32);
    hpdl_status s;
    if (!hpdl__mlp_xent_fuses_db(batch, g->widths[L])) {
        hpdl__mlp_delta_colsum_kernel<<<(g->widths[L] + 31) / 32, threads, 0, g->stream>>>(
            batch, g->widths[L], (C *)g->D[L - 1], (const C *)NULL, g->act, (C *)g->db[L - 1]);
        HPDL_CUDA_TRY_LAUNCH();
    }
    for (l = L - 1; l >= 0; l--) {
        int k = g->widths[l], n = g->widths[l + 1];
        s = hpdl__mlp_gemm(g->algo, HPDL_TRANS, HPDL_NO_TRANS, k, n, batch, (const C *)g->A[l], k, (const C *)g->D[l], n,
                           (C *)g->dW[l], n, g->stream);
        if (s != HPDL_OK) return s;
        if (l == 0) break;
        s = hpdl__mlp_gemm(g->algo, HPDL_NO_TRANS, HPDL_TRANS, batch, k, n, (const C *)g->D[l], n, (const C *)g->cW[l], n,
                           (C *)g->D[l - 1], k, g->stream);
        if (s != HPDL_OK) return s;
        hpdl__mlp_delta_colsum_kernel<<<(k + 31) / 32, threads, 0, g->stream>>>(
            batch, k, (C *)g->D[l - 1], (const C *)g->A[l], g->act, (C *)g->db[l - 1]);
        HPDL_CUDA_TRY_LAUNCH();
    }
    return HPDL_OK;
}

/* SGD over all parameters; under mixed precision the inf check before it
   (the scale update runs at the end of the SGD kernel): GradScaler. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_update(M *g, int batch) {
    int threads = 256;
    if (g->amp) {
        hpdl__mlp_check_finite_kernel<<<hpdl__grid_for(g->n_params, threads), threads, 0, g->stream>>>(
            g->n_params, (const C *)g->grads, g->state);
        HPDL_CUDA_TRY_LAUNCH();
    }
    hpdl__mlp_sgd_kernel<<<hpdl__grid_for(g->n_params, threads), threads, 0, g->stream>>>(
        g->n_weights, g->n_params, g->params, g->amp ? (C *)g->cparams : (C *)NULL, (const C *)g->grads, g->state,
        g->amp, batch);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Batch rows from the feed into A[0] and batch_labels. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_gather(M *g, int batch) {
    hpdl__mlp_gather_kernel<<<batch, 256, 0, g->stream>>>(batch, g->widths[0], g->state, (C *)g->A[0], g->batch_labels);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* One whole training step, issued on g->stream (run, or recorded into a graph). */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_step(M *g, int batch) {
    hpdl_status s;
    HPDL_NVTX_PUSH("data copy (gather)");
    s = hpdl__cmlp_gather<C>(g, batch);
    HPDL_NVTX_POP();
    HPDL_NVTX_PUSH("forward");
    if (s == HPDL_OK) s = hpdl__cmlp_forward<C>(g, batch);
    if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, batch, 1);
    HPDL_NVTX_POP();
    HPDL_NVTX_PUSH("backward");
    if (s == HPDL_OK) s = hpdl__cmlp_backward<C>(g, batch);
    HPDL_NVTX_POP();
    HPDL_NVTX_PUSH("update");
    if (s == HPDL_OK) s = hpdl__cmlp_update<C>(g, batch);
    HPDL_NVTX_POP();
    return s;
}

/* Records the step for this batch size into a graph (evicting the oldest
   when all slots are taken). A capture that fails turns graphs off for this
   model: steps then run eagerly, which is slower but correct. */
template <typename C, typename M> static inline void hpdl__cmlp_capture(M *g, int batch) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    hpdl__mlp_graph *slot = &g->graphs[g->next_graph];
    hpdl_status s;
    if (cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
        return;
    }
    s = hpdl__cmlp_step<C>(g, batch);
    if (cudaStreamEndCapture(g->stream, &graph) != cudaSuccess || s != HPDL_OK ||
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
    } else {
        if (slot->exec) cudaGraphExecDestroy(slot->exec);
        slot->exec = exec;
        slot->batch = batch;
        slot->algo = g->algo;
        g->next_graph = (g->next_graph + 1) % HPDL_CUDA_MLP_GRAPHS;
    }
    if (graph) cudaGraphDestroy(graph);
}

/* Runs one step: replays this batch size's graph; the first time, runs the
   step eagerly (which also warms up lazily initialised GEMM back ends) and
   captures the graph for the next steps. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_run_step(M *g, int batch) {
    int k;
    hpdl_status s;
    if (g->use_graphs)
        for (k = 0; k < HPDL_CUDA_MLP_GRAPHS; k++)
            if (g->graphs[k].exec && g->graphs[k].batch == batch && g->graphs[k].algo == g->algo) {
                HPDL_NVTX_PUSH("train step (graph)");
                HPDL_CUDA_TRY(cudaGraphLaunch(g->graphs[k].exec, g->stream));
                HPDL_NVTX_POP();
                return HPDL_OK;
            }
    s = hpdl__cmlp_step<C>(g, batch);
    if (s == HPDL_OK && g->use_graphs) hpdl__cmlp_capture<C>(g, batch);
    return s;
}

HPDL_API hpdl_status hpdl__mlp_set_feed(hpdl__mlp_state *st, const void *src, int src_f64, const int32_t *labels,
                                        const int32_t *perm, long long cursor, cudaStream_t stream) {
    hpdl__mlp_feed_kernel<<<1, 1, 0, stream>>>(st, src, src_f64, labels, perm, cursor);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

HPDL_API hpdl_status hpdl__mlp_begin(hpdl__mlp_state *st, double lr, double l2, int reset_train, int reset_eval,
                                     cudaStream_t stream) {
    hpdl__mlp_begin_kernel<<<1, 1, 0, stream>>>(st, lr, l2, reset_train, reset_eval);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Waits for the stream and reads the state back (the one host sync). */
HPDL_API hpdl_status hpdl__mlp_read_state(const hpdl__mlp_state *st, hpdl__mlp_state *host, cudaStream_t stream) {
    HPDL_CUDA_TRY(cudaMemcpyAsync(host, st, sizeof *host, cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    return HPDL_OK;
}

/* One step on device arrays X (batch x widths[0], type T) and labels. loss
   (optional) receives the batch's mean loss, which costs a host sync. */
template <typename T, typename C, typename M>
static inline hpdl_status hpdl__cmlp_train_step(M *g, int batch, const T *X, const int32_t *labels, double lr,
                                                double l2, double *loss) {
    hpdl__mlp_state h;
    hpdl_status s;
    if (!g || !g->params || !X || !labels || batch <= 0 || batch > g->max_batch || !hpdl__hyper_ok(lr, l2))
        return HPDL_ERR_INVALID;
    s = hpdl__mlp_begin(g->state, lr, l2, 1, 0, g->stream);
    if (s == HPDL_OK) s = hpdl__mlp_set_feed(g->state, X, sizeof(T) == 8, labels, NULL, 0, g->stream);
    if (s == HPDL_OK) s = hpdl__cmlp_run_step<C>(g, batch);
    if (s == HPDL_OK && loss) {
        s = hpdl__mlp_read_state(g->state, &h, g->stream);
        if (s == HPDL_OK) *loss = h.loss_sum / batch;
    }
    return s;
}

/* Fills stats from the device state for n samples. */
template <typename M>
static inline hpdl_status hpdl__cmlp_stats(const M *g, int64_t n, int eval, hpdl_cuda_mlp_stats *out) {
    hpdl__mlp_state h;
    hpdl_status s = hpdl__mlp_read_state(g->state, &h, g->stream);
    if (s != HPDL_OK) return s;
    out->samples = n;
    out->loss = (eval ? h.eval_loss_sum : h.loss_sum) / (double)n;
    out->accuracy = (double)(eval ? h.eval_correct : h.correct) / (double)n;
    out->loss_scale = h.loss_scale;
    out->skipped_steps = h.skipped_steps;
    return HPDL_OK;
}

HPDL_API int hpdl__mlp_data_fits(const hpdl_cuda_dataset *d, int in_width, int classes) {
    return d && d->perm && d->n > 0 && d->features == in_width && d->n_classes <= classes;
}

/* One epoch over a data set in a fresh shuffled order: graph replays, one
   sync at the end when out is given (loss, running accuracy). */
template <typename C, typename M>
static inline hpdl_status hpdl__cmlp_train_epoch(M *g, hpdl_cuda_dataset *d, int batch, double lr, double l2,
                                                 uint64_t seed, hpdl_cuda_mlp_stats *out) {
    int64_t chunk, r0, step;
    int k = 0;
    hpdl_status s;
    if (!g || !g->params || !hpdl__mlp_data_fits(d, g->widths[0], g->widths[g->n_layers]) || batch <= 0 ||
        batch > g->max_batch || !hpdl__hyper_ok(lr, l2) || (!d->resident && batch > d->chunk_rows))
        return HPDL_ERR_INVALID;
    chunk = d->resident ? d->n : d->chunk_rows / batch * batch;
    s = hpdl__mlp_begin(g->state, lr, l2, 1, 0, g->stream);
    if (s == HPDL_OK) s = hpdl_cuda_dataset_shuffle(d, seed, g->stream);
    for (r0 = 0; s == HPDL_OK && r0 < d->n; r0 += chunk, k ^= 1) {
        int64_t r1 = r0 + chunk < d->n ? r0 + chunk : d->n;
        if (d->resident) {
            s = hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, d->perm, 0, g->stream);
        } else {
            s = hpdl__dataset_stage(d, k, r0, r1, 1, g->stream);
            if (s == HPDL_OK) s = hpdl__mlp_set_feed(g->state, d->stage_dev[k], 0, d->stage_dev_labels[k], NULL, 0, g->stream);
        }
        for (step = r0; s == HPDL_OK && step < r1; step += batch)
            s = hpdl__cmlp_run_step<C>(g, (int)(r1 - step < batch ? r1 - step : batch));
        if (s == HPDL_OK && !d->resident) HPDL_CUDA_TRY(cudaEventRecord(d->consumed[k], g->stream));
    }
    if (s == HPDL_OK && out) s = hpdl__cmlp_stats(g, d->n, 0, out);
    return s;
}

/* Loss and accuracy over rows [0, n) of a source (no training). The source is
   device arrays (X, labels) or a data set (d). */
template <typename T, typename C, typename M>
static inline hpdl_status hpdl__cmlp_eval(M *g, int64_t n, const T *X, const int32_t *labels, hpdl_cuda_dataset *d,
                                          hpdl_cuda_mlp_stats *out) {
    int64_t r0, rows_max = g->max_batch;
    hpdl_status s = hpdl__mlp_begin(g->state, 0.0, 0.0, 0, 1, g->stream);
    if (d && !d->resident && d->chunk_rows < rows_max) rows_max = d->chunk_rows;
    HPDL_NVTX_PUSH("evaluate");
    for (r0 = 0; s == HPDL_OK && r0 < n; r0 += rows_max) {
        int rows = (int)(n - r0 < rows_max ? n - r0 : rows_max);
        if (!d) {
            s = hpdl__mlp_set_feed(g->state, X, sizeof(T) == 8, labels, NULL, r0, g->stream);
        } else if (d->resident) {
            s = hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, NULL, r0, g->stream);
        } else {
            HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev[0], d->images + r0 * d->features,
                                          (size_t)rows * d->features * sizeof(float), cudaMemcpyHostToDevice, g->stream));
            HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev_labels[0], d->labels + r0, (size_t)rows * 4,
                                          cudaMemcpyHostToDevice, g->stream));
            s = hpdl__mlp_set_feed(g->state, d->stage_dev[0], 0, d->stage_dev_labels[0], NULL, 0, g->stream);
        }
        if (s == HPDL_OK) s = hpdl__cmlp_gather<C>(g, rows);
        if (s == HPDL_OK) s = hpdl__cmlp_forward<C>(g, rows);
        if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, rows, 0);
    }
    HPDL_NVTX_POP();
    if (s == HPDL_OK) s = hpdl__cmlp_stats(g, n, 1, out);
    return s;
}

/* Generates hpdl_cuda_mlp_<SUFFIX>: master type T, product storage type CT
   (device type DC), CPU twin hpdl_mlp_<CPU>. */
#define HPDL_DEFINE_CUDA_MLP(SUFFIX, T, CT, DC, CPU)                                                              \
    typedef struct hpdl_cuda_mlp_##SUFFIX { HPDL__CUDA_MLP_FIELDS(T, CT); } hpdl_cuda_mlp_##SUFFIX;               \
    HPDL_API hpdl_status hpdl_cuda_mlp_create_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, const hpdl_mlp_##CPU *m,         \
                                                       int max_batch) {                                           \
        return hpdl__cmlp_create<T, DC, CT>(g, m, max_batch);                                                     \
    }                                                                                                             \
    HPDL_API void hpdl_cuda_mlp_destroy_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g) { hpdl__cmlp_destroy(g); }            \
    HPDL_API hpdl_status hpdl_cuda_mlp_upload_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, const hpdl_mlp_##CPU *m) {      \
        return hpdl__cmlp_upload<T, DC>(g, m);                                                                    \
    }                                                                                                             \
    HPDL_API hpdl_status hpdl_cuda_mlp_download_##SUFFIX(const hpdl_cuda_mlp_##SUFFIX *g, hpdl_mlp_##CPU *m) {    \
        return hpdl__cmlp_download<T>(g, m);                                                                      \
    }                                                                                                             \
    HPDL_API hpdl_status hpdl_cuda_mlp_train_step_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, int batch, const T *X,      \
                                                           const int32_t *labels, double lr, double l2,           \
                                                           double *loss) {                                        \
        return hpdl__cmlp_train_step<T, DC>(g, batch, X, labels, lr, l2, loss);                                   \
    }                                                                                                             \
    HPDL_API hpdl_status hpdl_cuda_mlp_train_epoch_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, hpdl_cuda_dataset *d,      \
                                                            int batch, double lr, double l2, uint64_t seed,       \
                                                            hpdl_cuda_mlp_stats *out) {                           \
        return hpdl__cmlp_train_epoch<DC>(g, d, batch, lr, l2, seed, out);                                        \
    }                                                                                                             \
    HPDL_API hpdl_status hpdl_cuda_mlp_evaluate_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, hpdl_cuda_dataset *d,         \
                                                         hpdl_cuda_mlp_stats *out) {                              \
        if (!g || !g->params || !out || !hpdl__mlp_data_fits(d, g->widths[0], g->widths[g->n_layers]))           \
            return HPDL_ERR_INVALID;                                                                              \
        return hpdl__cmlp_eval<T, DC>(g, d->n, (const T *)NULL, (const int32_t *)NULL, d, out);                   \
    }                                                                                                             \
    HPDL_API hpdl_status hpdl_cuda_mlp_accuracy_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, int64_t n, const T *X,        \
                                                         const int32_t *labels, double *acc) {                    \
        hpdl_cuda_mlp_stats st;                                                                                   \
        hpdl_status s;                                                                                            \
        if (!g || !g->params || n <= 0 || !X || !labels || !acc) return HPDL_ERR_INVALID;                        \
        s = hpdl__cmlp_eval<T, DC>(g, n, X, labels, (hpdl_cuda_dataset *)NULL, &st);                              \
        if (s == HPDL_OK) *acc = st.accuracy;                                                                     \
        return s;                                                                                                 \
    }                                                                                                             \
    /* The loss scaler's state (1 and 0 unless mixed precision); syncs. */                                        \
    HPDL_API hpdl_status hpdl_cuda_mlp_scaler_##SUFFIX(hpdl_cuda_mlp_##SUFFIX *g, double *scale,                  \
                                                       int64_t *skipped_steps) {                                  \
        hpdl__mlp_state h;                                                                                        \
        hpdl_status s;                                                                                            \
        if (!g || !g->state) return HPDL_ERR_INVALID;                                                             \
        s = hpdl__mlp_read_state(g->state, &h, g->stream);                                                        \
        if (s == HPDL_OK && scale) *scale = h.loss_scale;                                                         \
        if (s == HPDL_OK && skipped_steps) *skipped_steps = h.skipped_steps;                                      \
        return s;                                                                                                 \
    }

HPDL_DEFINE_CUDA_MLP(f32, float, float, float, f32)
HPDL_DEFINE_CUDA_MLP(f64, double, double, double, f64)
HPDL_DEFINE_CUDA_MLP(f16, float, hpdl_f16, __half, f32)

/* Softmax + cross-entropy + gradient on the device, the twin of
   hpdl_softmax_xent_<s>: grad = (softmax(logits) - onehot)/rows, *d_loss (a
   device double) = mean loss. One kernel, no host sync. */
#define HPDL_DEFINE_CUDA_SOFTMAX_XENT(SUFFIX, T)                                                                   \
    HPDL_API hpdl_status hpdl_cuda_softmax_xent_##SUFFIX(int rows, int cols, const T *logits, int ld,             \
                                                         const int32_t *labels, T *grad, int ldg, double *d_loss, \
                                                         cudaStream_t stream) {                                   \
        if (rows <= 0 || cols <= 0 || ld < cols || ldg < cols || !logits || !labels || !grad || !d_loss)          \
            return HPDL_ERR_INVALID;                                                                              \
        HPDL_CUDA_TRY(cudaMemsetAsync(d_loss, 0, sizeof(double), stream));                                        \
        hpdl__mlp_xent_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, logits, ld, (const T *)NULL, labels, \
                                                                  grad, ldg, 1.0 / rows, (const float *)NULL,     \
                                                                  1.0 / rows, d_loss,                             \
                                                                  (unsigned long long *)NULL, (T *)NULL);         \
        HPDL_CUDA_TRY_LAUNCH();                                                                                   \
        return HPDL_OK;                                                                                           \
    }

HPDL_DEFINE_CUDA_SOFTMAX_XENT(f32, float)
HPDL_DEFINE_CUDA_SOFTMAX_XENT(f64, double)
