/* cuda_gemm: GEMM ladder and cuBLAS backend (spliced into hpdl_cuda.cuh).

   C (M x N, row-major, ldc >= N) = alpha * op(A) * op(B) + beta * C, device pointers.
   op(A) is M x K: A is M x K (lda >= K) when HPDL_NO_TRANS, K x M (lda >= M) when HPDL_TRANS;
   op(B) is K x N: B is K x N (ldb >= N) or N x K (ldb >= K). beta == 0 never reads C.

       hpdl_cuda_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);  best kernel
       hpdl_cuda_gemm_algo_f32(HPDL_GEMM_VEC4, ta, tb, ...);                               one rung

   The ladder (one kernel per rung, each adding one idea to the one before):
       naive      one thread per C element, threads of a warp walk down a column (strided)
       coalesced  threads of a warp walk along a row: loads of B and stores of C coalesce
       smem       32x32 tiles of A and B staged in shared memory
       reg1d      each thread computes 8 outputs of a column (1D register blocking)
       reg2d      each thread computes an 8x8 block (2D register blocking)
       vec4       16-byte global loads and 16-byte shared-memory reads
       warptile   warp-shaped thread tiles (conflict-free shared reads), double-buffered tiles
       mma        tensor cores: f16/bf16 mma.sync m16n8k16 + ldmatrix + 4-stage cp.async (128x128x32),
                  f64 DMMA (mma.sync m8n8k4; m16n8k4 on sm_90) + 3-stage cp.async (128x128x32)
       cublas     the library, for reference
   f16/bf16 accumulate in f32 on every rung. AUTO: f32 -> warptile, f64 and f16/bf16 -> mma
   (warptile when the binary or the GPU has no sm_80 tensor-core path). */

typedef enum hpdl_gemm_algo {
    HPDL_GEMM_AUTO = 0,
    HPDL_GEMM_NAIVE,
    HPDL_GEMM_COALESCED,
    HPDL_GEMM_SMEM,
    HPDL_GEMM_REG1D,
    HPDL_GEMM_REG2D,
    HPDL_GEMM_VEC4,
    HPDL_GEMM_WARPTILE,
    HPDL_GEMM_MMA,
    HPDL_GEMM_CUBLAS
} hpdl_gemm_algo;

HPDL_API const char *hpdl_gemm_algo_name(hpdl_gemm_algo a) {
    switch (a) {
    case HPDL_GEMM_AUTO: return "auto";
    case HPDL_GEMM_NAIVE: return "naive";
    case HPDL_GEMM_COALESCED: return "coalesced";
    case HPDL_GEMM_SMEM: return "smem";
    case HPDL_GEMM_REG1D: return "reg1d";
    case HPDL_GEMM_REG2D: return "reg2d";
    case HPDL_GEMM_VEC4: return "vec4";
    case HPDL_GEMM_WARPTILE: return "warptile";
    case HPDL_GEMM_MMA: return "mma";
    case HPDL_GEMM_CUBLAS: return "cublas";
    }
    return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Kernel arguments and element access                                       */
/* ------------------------------------------------------------------------ */

/* One input operand as stored. kcontig: the K index runs along the stored
   rows (A not transposed, B transposed), so element (o, k) of the operand,
   o being its M or N index, sits at p[o*ld + k]; otherwise at p[k*ld + o].
   vec: p and ld allow the rung's vector loads (16 bytes; 4 elements for the
   SIMT rungs). */
template <typename T> struct hpdl__gemm_operand {
    const T *p;
    int ld, kcontig, vec;
};

template <typename T, typename ACC> struct hpdl__gemm_args {
    hpdl__gemm_operand<T> a, b; /* a: outer dimension M, b: outer dimension N */
    T *C;
    int M, N, K, ldc, cvec; /* cvec: C and ldc allow 4-element vector stores */
    ACC alpha, beta;
};

static __device__ __forceinline__ float hpdl__gemm_acc(float x) { return x; }
static __device__ __forceinline__ double hpdl__gemm_acc(double x) { return x; }
static __device__ __forceinline__ float hpdl__gemm_acc(__half x) { return __half2float(x); }
static __device__ __forceinline__ float hpdl__gemm_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

static __device__ __forceinline__ void hpdl__gemm_put(float *p, float v) { *p = v; }
static __device__ __forceinline__ void hpdl__gemm_put(double *p, double v) { *p = v; }
static __device__ __forceinline__ void hpdl__gemm_put(__half *p, float v) { *p = __float2half_rn(v); }
static __device__ __forceinline__ void hpdl__gemm_put(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* Element (o, k) of an operand whose outer size is O, or 0 outside it. */
template <typename ACC, typename T>
static __device__ __forceinline__ ACC hpdl__gemm_elem(const hpdl__gemm_operand<T> &x, int o, int k, int O, int K) {
    if (o >= O || k >= K) return (ACC)0;
    return (ACC)hpdl__gemm_acc(x.kcontig ? x.p[(size_t)o * x.ld + k] : x.p[(size_t)k * x.ld + o]);
}

/* C(m, n) = alpha * acc + beta * C(m, n), skipped outside C; beta == 0 does not read C. */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_out(const hpdl__gemm_args<T, ACC> &g, int m, int n, ACC acc) {
    if (m < g.M && n < g.N) {
        T *p = g.C + (size_t)m * g.ldc + n;
        ACC v = g.alpha * acc;
        if (g.beta != (ACC)0) v += g.beta * (ACC)hpdl__gemm_acc(*p);
        hpdl__gemm_put(p, v);
    }
}

/* Four consecutive elements in one load: 16 bytes for f32, 8 for f16/bf16,
   two 16-byte loads for f64. p must be aligned to 4 elements. */
static __device__ __forceinline__ void hpdl__gemm_vload4(const float *p, float v[4]) {
    float4 t = *(const float4 *)p;
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const double *p, double v[4]) {
    double2 t0 = ((const double2 *)p)[0], t1 = ((const double2 *)p)[1];
    v[0] = t0.x; v[1] = t0.y; v[2] = t1.x; v[3] = t1.y;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const __half *p, float v[4]) {
    uint2 t = *(const uint2 *)p;
    __half2 h[2];
    memcpy(h, &t, sizeof t);
    float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
    v[0] = f0.x; v[1] = f0.y; v[2] = f1.x; v[3] = f1.y;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const __nv_bfloat16 *p, float v[4]) {
    uint2 t = *(const uint2 *)p;
    __nv_bfloat162 h[2];
    memcpy(h, &t, sizeof t);
    float2 f0 = __bfloat1622float2(h[0]), f1 = __bfloat1622float2(h[1]);
    v[0] = f0.x; v[1] = f0.y; v[2] = f1.x; v[3] = f1.y;
}

static __device__ __forceinline__ void hpdl__gemm_vstore4(float *p, const float v[4]) {
    *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(double *p, const double v[4]) {
    ((double2 *)p)[0] = make_double2(v[0], v[1]);
    ((double2 *)p)[1] = make_double2(v[2], v[3]);
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(__half *p, const float v[4]) {
    __half2 h[2] = {__floats2half2_rn(v[0], v[1]), __floats2half2_rn(v[2], v[3])};
    uint2 t;
    memcpy(&t, h, sizeof t);
    *(uint2 *)p = t;
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(__nv_bfloat16 *p, const float v[4]) {
    __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v[0], v[1]), __floats2bfloat162_rn(v[2], v[3])};
    uint2 t;
    memcpy(&t, h, sizeof t);
    *(uint2 *)p = t;
}

/* Stored elements X(r, c..c+3) of a rows x cols matrix, zeros outside: one
   vector load when the chunk is inside and vec allows it, else one by one.
   FAST: the caller knows the chunk is inside and aligned (no checks). */
template <bool FAST, typename ACC, typename T>
static __device__ __forceinline__ void hpdl__gemm_load4(const T *X, int ld, int r, int c, int rows, int cols,
                                                        int vec, ACC v[4]) {
    const T *p = X + (size_t)r * ld + c;
    int j;
    if (FAST || (vec && r < rows && c + 3 < cols)) {
        hpdl__gemm_vload4(p, v);
    } else {
#pragma unroll
        for (j = 0; j < 4; j++) v[j] = (r < rows && c + j < cols) ? (ACC)hpdl__gemm_acc(p[j]) : (ACC)0;
    }
}

/* C(m, n..n+3) = alpha * v + beta * C, one vector access when all four are inside and aligned. */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_out4(const hpdl__gemm_args<T, ACC> &g, int m, int n, const ACC v[4]) {
    int j;
    if (g.cvec && m < g.M && n + 3 < g.N) {
        T *p = g.C + (size_t)m * g.ldc + n;
        ACC r[4], c[4] = {0, 0, 0, 0};
        if (g.beta != (ACC)0) hpdl__gemm_vload4(p, c);
#pragma unroll
        for (j = 0; j < 4; j++) r[j] = g.alpha * v[j] + g.beta * c[j];
        hpdl__gemm_vstore4(p, r);
        return;
    }
#pragma unroll
    for (j = 0; j < 4; j++) hpdl__gemm_out(g, m, n + j, v[j]);
}

/* Shared-memory vectors of four accumulator values (16-byte aligned). */
static __device__ __forceinline__ void hpdl__gemm_sload4(const float *p, float v[4]) { hpdl__gemm_vload4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sload4(const double *p, double v[4]) { hpdl__gemm_vload4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sstore4(float *p, const float v[4]) { hpdl__gemm_vstore4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sstore4(double *p, const double v[4]) { hpdl__gemm_vstore4(p, v); }

/* Grouped tile order: blocks that run together share rows of A and columns
   of B in L2 (GROUP tile rows at a time, Triton's "grouped ordering"). */
static __device__ __forceinline__ void hpdl__gemm_tile_order(int *tile_m, int *tile_n) {
    const int GROUP = 8;
    int tiles_n = (int)gridDim.x, tiles_m = (int)gridDim.y;
    int pid = (int)(blockIdx.y * gridDim.x + blockIdx.x);
    int per_group = GROUP * tiles_n, first = pid / per_group * GROUP;
    int rows = tiles_m - first < GROUP ? tiles_m - first : GROUP;
    *tile_m = first + (pid % per_group) % rows;
    *tile_n = (pid % per_group) / rows;
}

/* ------------------------------------------------------------------------ */
/* SIMT rungs (every type; f16/bf16 convert to f32 on load)                  */
/* ------------------------------------------------------------------------ */

/* naive: one thread per C element; threadIdx.x runs down a column of C, so
   a warp's loads of A and stores of C are strided (uncoalesced). */
template <typename T, typename ACC> __global__ void hpdl__gemm_naive(hpdl__gemm_args<T, ACC> g) {
    int m = (int)(blockIdx.x * blockDim.x + threadIdx.x), n = (int)(blockIdx.y * blockDim.y + threadIdx.y), k;
    ACC acc = 0;
    if (m >= g.M || n >= g.N) return;
    for (k = 0; k < g.K; k++)
        acc += hpdl__gemm_elem<ACC>(g.a, m, k, g.M, g.K) * hpdl__gemm_elem<ACC>(g.b, n, k, g.N, g.K);
    hpdl__gemm_out(g, m, n, acc);
}

/* coalesced: threadIdx.x runs along a row of C, so a warp reads one B row
   segment and writes one C row segment (coalesced) and shares one A value. */
template <typename T, typename ACC> __global__ void hpdl__gemm_coalesced(hpdl__gemm_args<T, ACC> g) {
    int n = (int)(blockIdx.x * blockDim.x + threadIdx.x), m = (int)(blockIdx.y * blockDim.y + threadIdx.y), k;
    ACC acc = 0;
    if (m >= g.M || n >= g.N) return;
    for (k = 0; k < g.K; k++)
        acc += hpdl__gemm_elem<ACC>(g.a, m, k, g.M, g.K) * hpdl__gemm_elem<ACC>(g.b, n, k, g.N, g.K);
    hpdl__gemm_out(g, m, n, acc);
}

/* Loads one 32x32 tile of an operand into S[o][k]: the thread index that
   varies fastest walks the stored row, so the global loads coalesce for
   either layout (the +1 column of S keeps the transposed stores conflict-free). */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_tile32(ACC (*S)[33], const hpdl__gemm_operand<T> &x, int o0, int k0,
                                                         int O, int K) {
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    if (x.kcontig) S[ty][tx] = hpdl__gemm_elem<ACC>(x, o0 + ty, k0 + tx, O, K);
    else S[tx][ty] = hpdl__gemm_elem<ACC>(x, o0 + tx, k0 + ty, O, K);
}

/* smem: 32x32 tiles of A and B staged in shared memory, so each loaded
   element serves 32 outputs instead of one. */
template <typename T, typename ACC> __global__ void __launch_bounds__(1024) hpdl__gemm_smem(hpdl__gemm_args<T, ACC> g) {
    __shared__ ACC As[32][33], Bs[32][33]; /* As[m][k], Bs[n][k] */
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y, k0, k;
    int m0 = (int)blockIdx.y * 32, n0 = (int)blockIdx.x * 32;
    ACC acc = 0;
    for (k0 = 0; k0 < g.K; k0 += 32) {
        hpdl__gemm_tile32(As, g.a, m0, k0, g.M, g.K);
        hpdl__gemm_tile32(Bs, g.b, n0, k0, g.N, g.K);
        __syncthreads();
#pragma unroll 8
        for (k = 0; k < 32; k++) acc += As[ty][k] * Bs[tx][k];
        __syncthreads();
    }
    hpdl__gemm_out(g, m0 + ty, n0 + tx, acc);
}

/* Element i of this thread's share of an O_TILE x K_TILE operand tile, put
   into S[k][o] (row length LDS): coalesced global reads for either layout. */
template <int O_TILE, int K_TILE, int THREADS, int LDS, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_tile_scalar(ACC *S, const hpdl__gemm_operand<T> &x, int o0, int k0,
                                                              int O, int K, int i) {
    int idx = (int)threadIdx.x + i * THREADS;
    int o = x.kcontig ? idx / K_TILE : idx % O_TILE, k = x.kcontig ? idx % K_TILE : idx / O_TILE;
    S[k * LDS + o] = hpdl__gemm_elem<ACC>(x, o0 + o, k0 + k, O, K);
}

/* reg1d: 64x64 tiles, each thread computes 8 outputs down a column, so one
   B value from shared memory is reused 8 times from a register. */
template <typename T, typename ACC> __global__ void __launch_bounds__(512) hpdl__gemm_reg1d(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 64, BN = 64, BK = 8, TM = 8, LDS = 68 };
    __shared__ ACC As[BK * LDS], Bs[BK * LDS]; /* [k][m], [k][n] */
    int tid = (int)threadIdx.x, col = tid % BN, row = tid / BN * TM, k0, k, r;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[TM];
#pragma unroll
    for (r = 0; r < TM; r++) acc[r] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
        hpdl__gemm_tile_scalar<BM, BK, 512, LDS>(As, g.a, m0, k0, g.M, g.K, 0);
        hpdl__gemm_tile_scalar<BN, BK, 512, LDS>(Bs, g.b, n0, k0, g.N, g.K, 0);
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
            ACC b = Bs[k * LDS + col];
#pragma unroll
            for (r = 0; r < TM; r++) acc[r] += As[k * LDS + row + r] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (r = 0; r < TM; r++) hpdl__gemm_out(g, m0 + row + r, n0 + col, acc[r]);
}

/* reg2d: 128x128 tiles, each thread computes an 8x8 block from 8 A and 8 B
   values in registers: 64 multiply-adds per 16 shared-memory reads. */
template <typename T, typename ACC> __global__ void __launch_bounds__(256) hpdl__gemm_reg2d(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, LDS = 132 };
    __shared__ ACC As[BK * LDS], Bs[BK * LDS];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, k0, k, i, j;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[TM][TN], a[TM], b[TN];
#pragma unroll
    for (i = 0; i < TM; i++)
#pragma unroll
        for (j = 0; j < TN; j++) acc[i][j] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
#pragma unroll
        for (i = 0; i < 4; i++) {
            hpdl__gemm_tile_scalar<BM, BK, 256, LDS>(As, g.a, m0, k0, g.M, g.K, i);
            hpdl__gemm_tile_scalar<BN, BK, 256, LDS>(Bs, g.b, n0, k0, g.N, g.K, i);
        }
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
#pragma unroll
            for (i = 0; i < TM; i++) a[i] = As[k * LDS + ty * TM + i];
#pragma unroll
            for (j = 0; j < TN; j++) b[j] = Bs[k * LDS + tx * TN + j];
#pragma unroll
            for (i = 0; i < TM; i++)
#pragma unroll
                for (j = 0; j < TN; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (i = 0; i < TM; i++)
#pragma unroll
        for (j = 0; j < TN; j++) hpdl__gemm_out(g, m0 + ty * TM + i, n0 + tx * TN + j, acc[i][j]);
}

/* Chunk i (4 elements) of this thread's share of a 128 (outer) x BK operand
   tile, read with one vector load along the stored row (256 threads). */
template <int BK, bool FAST, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_fetch128(const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int K,
                                                           int i, ACC v[4]) {
    int c = (int)threadIdx.x + i * 256;
    if (x.kcontig) hpdl__gemm_load4<FAST>(x.p, x.ld, o0 + c / (BK / 4), k0 + c % (BK / 4) * 4, O, K, x.vec, v);
    else hpdl__gemm_load4<FAST>(x.p, x.ld, k0 + c / 32, o0 + c % 32 * 4, K, O, x.vec, v);
}

/* Puts chunk i from hpdl__gemm_fetch128 into S[k][o] (row length 132). */
template <int BK, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_stash128(ACC *S, int kcontig, int i, const ACC v[4]) {
    int c = (int)threadIdx.x + i * 256, j;
    if (kcontig) {
#pragma unroll
        for (j = 0; j < 4; j++) S[(c % (BK / 4) * 4 + j) * 132 + c / (BK / 4)] = v[j];
    } else {
        hpdl__gemm_sstore4(S + c / 32 * 132 + c % 32 * 4, v);
    }
}

/* vec4: reg2d with 16-byte global loads (4-element fallback when ld or
   alignment forbid them) and 16-byte shared-memory reads of the fragments. */
template <typename T, typename ACC> __global__ void __launch_bounds__(256) hpdl__gemm_vec4(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 128, BN = 128, BK = 8, LDS = 132 };
    __shared__ __align__(16) ACC As[BK * LDS];
    __shared__ __align__(16) ACC Bs[BK * LDS];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, k0, k, i, j;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[8][8], a[8], b[8], v[4];
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
        hpdl__gemm_fetch128<BK, false>(g.a, m0, k0, g.M, g.K, 0, v);
        hpdl__gemm_stash128<BK>(As, g.a.kcontig, 0, v);
        hpdl__gemm_fetch128<BK, false>(g.b, n0, k0, g.N, g.K, 0, v);
        hpdl__gemm_stash128<BK>(Bs, g.b.kcontig, 0, v);
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
            hpdl__gemm_sload4(As + k * LDS + ty * 8, a);
            hpdl__gemm_sload4(As + k * LDS + ty * 8 + 4, a + 4);
            hpdl__gemm_sload4(Bs + k * LDS + tx * 8, b);
            hpdl__gemm_sload4(Bs + k * LDS + tx * 8 + 4, b + 4);
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (i = 0; i < 8; i++) {
        hpdl__gemm_out4(g, m0 + ty * 8 + i, n0 + tx * 8, acc[i]);
        hpdl__gemm_out4(g, m0 + ty * 8 + i, n0 + tx * 8 + 4, acc[i] + 4);
    }
}

/* warptile: 8 warps as 4x2 warp tiles of 32x64; a thread's 8x8 outputs are
   four 4x4 blocks 16 rows / 32 columns apart, so a warp's 16-byte shared reads
   hit distinct banks; the next K tile is fetched into registers while the
   current one is multiplied, into the other of two shared buffers (one
   barrier per tile). BK: K depth of a tile; MINB: blocks per SM to fit;
   FAST: every tile is inside the matrices and aligned (no bounds checks). */
template <typename T, typename ACC, int BK, int MINB, bool FAST>
__global__ void __launch_bounds__(256, MINB) hpdl__gemm_warptile(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 128, BN = 128, LDS = 132, CH = BK / 8 /* chunks per thread and operand */ };
    __shared__ __align__(16) ACC As[2][BK * LDS];
    __shared__ __align__(16) ACC Bs[2][BK * LDS];
    int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, tm, tn, k0, k, i, j, c, buf = 0;
    int row = warp / 2 * 32 + lane / 8 * 4, col = warp % 2 * 64 + lane % 8 * 4; /* first 4x4 block */
    ACC acc[8][8], a[8], b[8], va[CH][4], vb[CH][4];
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j] = 0;
#pragma unroll
    for (c = 0; c < CH; c++) {
        hpdl__gemm_fetch128<BK, FAST>(g.a, tm, 0, g.M, g.K, c, va[c]);
        hpdl__gemm_fetch128<BK, FAST>(g.b, tn, 0, g.N, g.K, c, vb[c]);
        hpdl__gemm_stash128<BK>(As[0], g.a.kcontig, c, va[c]);
        hpdl__gemm_stash128<BK>(Bs[0], g.b.kcontig, c, vb[c]);
    }
    __syncthreads();
    for (k0 = 0; k0 < g.K; k0 += BK) {
        int more = k0 + BK < g.K;
        if (more) {
#pragma unroll
            for (c = 0; c < CH; c++) {
                hpdl__gemm_fetch128<BK, FAST>(g.a, tm, k0 + BK, g.M, g.K, c, va[c]);
                hpdl__gemm_fetch128<BK, FAST>(g.b, tn, k0 + BK, g.N, g.K, c, vb[c]);
            }
        }
#pragma unroll
        for (k = 0; k < BK; k++) {
            hpdl__gemm_sload4(As[buf] + k * LDS + row, a);
            hpdl__gemm_sload4(As[buf] + k * LDS + row + 16, a + 4);
            hpdl__gemm_sload4(Bs[buf] + k * LDS + col, b);
            hpdl__gemm_sload4(Bs[buf] + k * LDS + col + 32, b + 4);
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
        }
        if (more) {
#pragma unroll
            for (c = 0; c < CH; c++) {
                hpdl__gemm_stash128<BK>(As[buf ^ 1], g.a.kcontig, c, va[c]);
                hpdl__gemm_stash128<BK>(Bs[buf ^ 1], g.b.kcontig, c, vb[c]);
            }
        }
        __syncthreads();
        buf ^= 1;
    }
#pragma unroll
    for (i = 0; i < 8; i++) {
        int m = tm + row + (i < 4 ? i : 12 + i); /* rows row..row+3, row+16..row+19 */
        hpdl__gemm_out4(g, m, tn + col, acc[i]);
        hpdl__gemm_out4(g, m, tn + col + 32, acc[i] + 4);
    }
}

/* ------------------------------------------------------------------------ */
/* Tensor-core rungs (sm_80+): cp.async pipeline, ldmatrix, mma.sync          */
/* ------------------------------------------------------------------------ */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HPDL__GEMM_SM80 1
#endif

static __device__ __forceinline__ unsigned hpdl__smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void hpdl__cp_async16(void *dst, const void *src) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(hpdl__smem_u32(dst)), "l"(src) : "memory");
#else
    (void)dst; (void)src;
#endif
}

static __device__ __forceinline__ void hpdl__cp_async_commit(void) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* Waits until at most N committed groups of this thread are still in flight. */
template <int N> static __device__ __forceinline__ void hpdl__cp_async_wait(void) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* Four 8x8 matrices of 16-bit values; lane l gives the address of row l%8 of matrix l/8. */
template <bool TRANS> static __device__ __forceinline__ void hpdl__ldmatrix_x4(unsigned r[4], const void *p) {
#ifdef HPDL__GEMM_SM80
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hpdl__smem_u32(p)) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hpdl__smem_u32(p)) : "memory");
#else
    (void)p;
    r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

/* d += a (16x16, row) * b (16x8, col), f32 accumulation. */
static __device__ __forceinline__ void hpdl__mma16816(__half, float d[4], const unsigned a[4], const unsigned b[2]) {
#ifdef HPDL__GEMM_SM80
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d; (void)a; (void)b;
#endif
}
static __device__ __forceinline__ void hpdl__mma16816(__nv_bfloat16, float d[4], const unsigned a[4], const unsigned b[2]) {
#ifdef HPDL__GEMM_SM80
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d; (void)a; (void)b;
#endif
}

/* f64 tensor cores: d0 (rows 0-7) += a0 * b and d1 (rows 8-15) += a1 * b,
   one m16n8k4 instruction on sm_90, two m8n8k4 on sm_80. */
static __device__ __forceinline__ void hpdl__dmma_pair(double d0[2], double d1[2], double a0, double a1, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
        : "d"(a0), "d"(a1), "d"(b));
#elif defined(HPDL__GEMM_SM80)
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d0[0]), "+d"(d0[1]) : "d"(a0), "d"(b));
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d1[0]), "+d"(d1[1]) : "d"(a1), "d"(b));
#else
    (void)d0; (void)d1; (void)a0; (void)a1; (void)b;
#endif
}

/* f64 on sm_90: d (16x8) += a (16x8, a0..a3 = rows g/g+8 at k t, then at k t+4)
   * b (8x8, b0/b1 = k t / t+4), one m16n8k8 (two m16n8k4 elsewhere). */
static __device__ __forceinline__ void hpdl__dmma_pair_k8(double d0[2], double d1[2], const double a[4], const double b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
    hpdl__dmma_pair(d0, d1, a[0], a[1], b[0]);
    hpdl__dmma_pair(d0, d1, a[2], a[3], b[1]);
#endif
}

/* Shared layouts of a tile of COLS elements per row (element offsets).
   hpdl__gemm_swizzle (16-bit elements): 16-byte chunks XOR-permuted by row so
   that the 8 row addresses of an ldmatrix phase fall in 8 different bank groups.
   hpdl__gemm_pad4: rows padded by 4 elements (f64 fragments read conflict-free). */
template <int COLS> struct hpdl__gemm_swizzle {
    static __device__ __forceinline__ int at(int r, int c) {
        int x = COLS >= 64 ? (r & 7) : ((r >> 1) & 3);
        return r * COLS + (((c >> 3) ^ x) << 3) + (c & 7);
    }
};
template <int COLS> struct hpdl__gemm_pad4 {
    static __device__ __forceinline__ int at(int r, int c) { return r * (COLS + 4) + c; }
};

template <int BYTES> struct hpdl__gemm_bits;
template <> struct hpdl__gemm_bits<2> { typedef unsigned short type; };
template <> struct hpdl__gemm_bits<8> { typedef unsigned long long type; };

/* Copies the ROWS x COLS block at (r0, c0) of the stored rows x cols matrix
   X into shared memory at LAYOUT::at: cp.async 16 bytes where the chunk lies
   inside X and vec allows it, element by element (zeros outside) where not.
   THREADS threads share the work. FAST: the whole block is inside and aligned. */
template <typename T, int ROWS, int COLS, int THREADS, typename LAYOUT, bool FAST>
static __device__ __forceinline__ void hpdl__gemm_tile_async(T *s, const T *X, int ld, int r0, int c0, int rows, int cols,
                                                             int vec) {
    typedef typename hpdl__gemm_bits<sizeof(T)>::type bits;
    enum { E = 16 / sizeof(T), CPR = COLS / E, PER_THREAD = ROWS * CPR / THREADS };
    static_assert(ROWS * CPR % THREADS == 0, "tile chunks must divide among the threads");
    int i, j;
#pragma unroll
    for (i = 0; i < PER_THREAD; i++) {
        int chunk = (int)threadIdx.x + i * THREADS, r = chunk / CPR, c = chunk % CPR * E;
        int gr = r0 + r, gc = c0 + c;
        T *dst = s + LAYOUT::at(r, c);
        const T *src = X + (ptrdiff_t)gr * ld + gc;
        if (FAST || (vec && gr < rows && gc + E <= cols)) {
            hpdl__cp_async16(dst, src);
        } else {
            bits v[E];
            uint4 u;
#pragma unroll
            for (j = 0; j < E; j++) v[j] = (gr < rows && gc + j < cols) ? ((const bits *)src)[j] : (bits)0;
            memcpy(&u, v, sizeof u);
            *(uint4 *)dst = u;
        }
    }
}

/* Block tile BM x BN x BK, STAGES deep in shared memory, warps of WM x WN:
   the shape of a tensor-core kernel (threads = 32 * BM/WM * BN/WN). */
template <int BM_, int BN_, int BK_, int STAGES_, int WM_, int WN_, int DK_ = 4> struct hpdl__tc_shape {
    enum { BM = BM_, BN = BN_, BK = BK_, S = STAGES_, WM = WM_, WN = WN_, DK = DK_ /* f64 mma K on sm_90: 4 or 8 */ };
    enum { WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * (BN / WN) };
};
typedef hpdl__tc_shape<128, 128, 32, 4, 64, 64> hpdl__mma_shape; /* f16/bf16 default: 4 warps, 2 blocks per SM */
typedef hpdl__tc_shape<128, 128, 32, 3, 64, 32> hpdl__dmma_shape; /* f64 default */

/* One K tile of an operand (OT = its M or N tile, BK deep) into a stage: a
   kcontig operand is stored OT x BK, the other BK x OT, as in global memory. */
template <typename T, int OT, int BK, int THREADS, template <int> class LAYOUT, bool KCONTIG, bool FAST>
static __device__ __forceinline__ void hpdl__gemm_stage(T *s, const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int K) {
    if (KCONTIG) hpdl__gemm_tile_async<T, OT, BK, THREADS, LAYOUT<BK>, FAST>(s, x.p, x.ld, o0, k0, O, K, x.vec);
    else hpdl__gemm_tile_async<T, BK, OT, THREADS, LAYOUT<OT>, FAST>(s, x.p, x.ld, k0, o0, K, O, x.vec);
}

/* Fragments of one 16-deep K step for a warp: A (WM/16 tiles of 16x16) and B
   (WN/8 tiles of 16x8) by ldmatrix, .trans where the operand is stored the
   other way round ([k][m] for A, [k][n] for B). */
template <typename SH, bool AK, bool BKC, typename T>
static __device__ __forceinline__ void hpdl__mma_frags(const T *ta, const T *tb, int wm, int wn, int ks, int lane,
                                                       unsigned af[][4], unsigned bf[][2]) {
    int i, j;
#pragma unroll
    for (i = 0; i < SH::WM / 16; i++) {
        if (AK) /* lanes 0-15 give rows at k, lanes 16-31 the same rows at k+8 */
            hpdl__ldmatrix_x4<false>(af[i], ta + hpdl__gemm_swizzle<SH::BK>::at(wm + i * 16 + lane % 16, ks + lane / 16 * 8));
        else
            hpdl__ldmatrix_x4<true>(af[i], ta + hpdl__gemm_swizzle<SH::BM>::at(ks + lane % 8 + lane / 16 * 8,
                                                                               wm + i * 16 + lane / 8 % 2 * 8));
    }
#pragma unroll
    for (j = 0; j < SH::WN / 16; j++) { /* two n8 fragments per ldmatrix.x4 */
        unsigned r[4];
        if (BKC)
            hpdl__ldmatrix_x4<false>(r, tb + hpdl__gemm_swizzle<SH::BK>::at(wn + j * 16 + lane % 8 + lane / 16 * 8,
                                                                           ks + lane / 8 % 2 * 8));
        else
            hpdl__ldmatrix_x4<true>(r, tb + hpdl__gemm_swizzle<SH::BN>::at(ks + lane % 8 + lane / 8 % 2 * 8,
                                                                          wn + j * 16 + lane / 16 * 8));
        bf[2 * j][0] = r[0];
        bf[2 * j][1] = r[1];
        bf[2 * j + 1][0] = r[2];
        bf[2 * j + 1][1] = r[3];
    }
}

/* mma (f16/bf16): block tiles in a multi-stage cp.async pipeline, fragments
   by ldmatrix (those of the next 16-deep step loaded while the current one
   multiplies), mma.sync m16n8k16 with f32 accumulators in registers. */
template <typename T, bool AK, bool BKC, typename SH, bool FAST>
__global__ void __launch_bounds__(SH::THREADS, SH::THREADS <= 128 ? 2 : 1) hpdl__gemm_mma(hpdl__gemm_args<T, float> g) {
#ifdef HPDL__GEMM_SM80
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK, S = SH::S, MI = SH::WM / 16, NJ = SH::WN / 8, TH = SH::THREADS };
    extern __shared__ uint4 hpdl__gemm_smem[];
    T *sa = (T *)hpdl__gemm_smem, *sb = sa + S * BM * BK;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    int tm, tn, kt, ks, i, j, KT = (g.K + BK - 1) / BK;
    float acc[MI][NJ][4];
    unsigned af[2][MI][4], bf[2][NJ][2];
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (kt = 0; kt < S - 1; kt++) {
        if (kt < KT) {
            hpdl__gemm_stage<T, BM, BK, TH, hpdl__gemm_swizzle, AK, FAST>(sa + kt * BM * BK, g.a, tm, kt * BK, g.M, g.K);
            hpdl__gemm_stage<T, BN, BK, TH, hpdl__gemm_swizzle, BKC, FAST>(sb + kt * BN * BK, g.b, tn, kt * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
    }
    for (kt = 0; kt < KT; kt++) {
        const T *ta = sa + kt % S * BM * BK, *tb = sb + kt % S * BN * BK;
        int next = kt + S - 1;
        hpdl__cp_async_wait<S - 2>(); /* tile kt has landed (for this thread) ... */
        __syncthreads();              /* ... for all threads, and stage (kt-1)%S is free */
        if (next < KT) {
            hpdl__gemm_stage<T, BM, BK, TH, hpdl__gemm_swizzle, AK, FAST>(sa + next % S * BM * BK, g.a, tm, next * BK, g.M, g.K);
            hpdl__gemm_stage<T, BN, BK, TH, hpdl__gemm_swizzle, BKC, FAST>(sb + next % S * BN * BK, g.b, tn, next * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
        hpdl__mma_frags<SH, AK, BKC>(ta, tb, wm, wn, 0, lane, af[0], bf[0]);
#pragma unroll
        for (ks = 0; ks < BK / 16; ks++) {
            if (ks + 1 < BK / 16) hpdl__mma_frags<SH, AK, BKC>(ta, tb, wm, wn, (ks + 1) * 16, lane, af[(ks + 1) % 2], bf[(ks + 1) % 2]);
#pragma unroll
            for (i = 0; i < MI; i++)
#pragma unroll
                for (j = 0; j < NJ; j++) hpdl__mma16816(T(), acc[i][j], af[ks % 2][i], bf[ks % 2][j]);
        }
    }
    hpdl__cp_async_wait<0>();
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) {
            int m = tm + wm + i * 16 + lane / 4, n = tn + wn + j * 8 + lane % 4 * 2;
            hpdl__gemm_out(g, m, n, acc[i][j][0]);
            hpdl__gemm_out(g, m, n + 1, acc[i][j][1]);
            hpdl__gemm_out(g, m + 8, n, acc[i][j][2]);
            hpdl__gemm_out(g, m + 8, n + 1, acc[i][j][3]);
        }
#else
    (void)g; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* mma (f64, DMMA): block tiles in a multi-stage cp.async pipeline, f64
   tensor-core mma.sync with operands read from padded shared rows; a warp
   owns WM x WN (fragments of 8x8). */
template <bool AK, bool BKC, typename SH, bool FAST>
__global__ void __launch_bounds__(SH::THREADS, SH::THREADS <= 128 ? 2 : 1) hpdl__gemm_dmma(hpdl__gemm_args<double, double> g) {
#ifdef HPDL__GEMM_SM80
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK, S = SH::S, MI = SH::WM / 8, NJ = SH::WN / 8, TH = SH::THREADS };
    enum { A_STAGE = AK ? BM * (BK + 4) : BK * (BM + 4), B_STAGE = BKC ? BN * (BK + 4) : BK * (BN + 4) };
    extern __shared__ uint4 hpdl__gemm_smem[];
    double *sa = (double *)hpdl__gemm_smem, *sb = sa + S * A_STAGE;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    int tm, tn, kt, kk, i, j, KT = (g.K + BK - 1) / BK;
    double acc[MI][NJ][2], a[SH::DK / 4][MI], b[SH::DK / 4][NJ];
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = 0.0;
    for (kt = 0; kt < S - 1; kt++) {
        if (kt < KT) {
            hpdl__gemm_stage<double, BM, BK, TH, hpdl__gemm_pad4, AK, FAST>(sa + kt * A_STAGE, g.a, tm, kt * BK, g.M, g.K);
            hpdl__gemm_stage<double, BN, BK, TH, hpdl__gemm_pad4, BKC, FAST>(sb + kt * B_STAGE, g.b, tn, kt * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
    }
    for (kt = 0; kt < KT; kt++) {
        const double *ta = sa + kt % S * A_STAGE, *tb = sb + kt % S * B_STAGE;
        int next = kt + S - 1;
        hpdl__cp_async_wait<S - 2>();
        __syncthreads();
        if (next < KT) {
            hpdl__gemm_stage<double, BM, BK, TH, hpdl__gemm_pad4, AK, FAST>(sa + next % S * A_STAGE, g.a, tm, next * BK, g.M, g.K);
            hpdl__gemm_stage<double, BN, BK, TH, hpdl__gemm_pad4, BKC, FAST>(sb + next % S * B_STAGE, g.b, tn, next * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
#pragma unroll
        for (kk = 0; kk < BK; kk += SH::DK) {
            int h; /* fragments: row (or column) lane/4, k lane%4 (+4 for the second half of a k8 step) */
#pragma unroll
            for (h = 0; h < SH::DK / 4; h++) {
                int k = kk + h * 4 + lane % 4;
#pragma unroll
                for (i = 0; i < MI; i++) {
                    int m = wm + i * 8 + lane / 4;
                    a[h][i] = AK ? ta[m * (BK + 4) + k] : ta[k * (BM + 4) + m];
                }
#pragma unroll
                for (j = 0; j < NJ; j++) {
                    int n = wn + j * 8 + lane / 4;
                    b[h][j] = BKC ? tb[n * (BK + 4) + k] : tb[k * (BN + 4) + n];
                }
            }
#pragma unroll
            for (i = 0; i < MI; i += 2)
#pragma unroll
                for (j = 0; j < NJ; j++) {
                    if (SH::DK == 8) {
                        const double af[4] = {a[0][i], a[0][i + 1], a[SH::DK / 8][i], a[SH::DK / 8][i + 1]};
                        const double bf[2] = {b[0][j], b[SH::DK / 8][j]};
                        hpdl__dmma_pair_k8(acc[i][j], acc[i + 1][j], af, bf);
                    } else {
                        hpdl__dmma_pair(acc[i][j], acc[i + 1][j], a[0][i], a[0][i + 1], b[0][j]);
                    }
                }
        }
    }
    hpdl__cp_async_wait<0>();
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) {
            int m = tm + wm + i * 8 + lane / 4, n = tn + wn + j * 8 + lane % 4 * 2;
            hpdl__gemm_out(g, m, n, acc[i][j][0]);
            hpdl__gemm_out(g, m, n + 1, acc[i][j][1]);
        }
#else
    (void)g;
#endif
}

/* ------------------------------------------------------------------------ */
/* Host side: cuBLAS, launchers, public functions                            */
/* ------------------------------------------------------------------------ */

/* p and ld allow vector accesses of `elems` elements of `size` bytes. */
HPDL_API int hpdl__gemm_aligned(const void *p, int ld, int elems, size_t size) {
    return (uintptr_t)p % (elems * size) == 0 && ld % elems == 0;
}

/* Kernel arguments; vec_elems: the width of the rung's vector loads. */
template <typename T, typename ACC>
static inline hpdl__gemm_args<T, ACC> hpdl__gemm_make_args(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                                          ACC alpha, const T *A, int lda, const T *B, int ldb, ACC beta,
                                                          T *C, int ldc, int vec_elems) {
    hpdl__gemm_args<T, ACC> g;
    g.a.p = A; g.a.ld = lda; g.a.kcontig = ta == HPDL_NO_TRANS;
    g.a.vec = hpdl__gemm_aligned(A, lda, vec_elems, sizeof(T));
    g.b.p = B; g.b.ld = ldb; g.b.kcontig = tb == HPDL_TRANS;
    g.b.vec = hpdl__gemm_aligned(B, ldb, vec_elems, sizeof(T));
    g.C = C; g.ldc = ldc; g.cvec = hpdl__gemm_aligned(C, ldc, 4, sizeof(T));
    g.M = M; g.N = N; g.K = K;
    g.alpha = alpha; g.beta = beta;
    return g;
}

/* One cuBLAS handle per device, made on first use and kept for the life of
   the program (not thread-safe on that first use). */
HPDL_API hpdl_status hpdl__cublas_handle(cublasHandle_t *out) {
    static cublasHandle_t handles[64];
    int device = 0;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    if (device < 0 || device >= 64) return HPDL_ERR_UNSUPPORTED;
    if (!handles[device]) {
        if (cublasCreate(&handles[device]) != CUBLAS_STATUS_SUCCESS) { handles[device] = NULL; return HPDL_ERR_CUDA; }
        /* default math: no TF32 for f32 (unless NVIDIA_TF32_OVERRIDE asks) */
        cublasSetMathMode(handles[device], CUBLAS_DEFAULT_MATH);
    }
    *out = handles[device];
    return HPDL_OK;
}

static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                                               const float *beta, float *C, int ldc) {
    return cublasSgemm(h, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const double *alpha, const double *A, int lda, const double *B,
                                               int ldb, const double *beta, double *C, int ldc) {
    return cublasDgemm(h, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm_ex(cublasHandle_t h, cudaDataType_t type, cublasOperation_t oa,
                                                  cublasOperation_t ob, int m, int n, int k, const float *alpha,
                                                  const void *A, int lda, const void *B, int ldb, const float *beta,
                                                  void *C, int ldc) {
    return cublasGemmEx(h, oa, ob, m, n, k, alpha, A, type, lda, B, type, ldb, beta, C, type, ldc, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const __half *A, int lda, const __half *B,
                                               int ldb, const float *beta, __half *C, int ldc) {
    return hpdl__cublas_gemm_ex(h, CUDA_R_16F, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const __nv_bfloat16 *A, int lda,
                                               const __nv_bfloat16 *B, int ldb, const float *beta, __nv_bfloat16 *C,
                                               int ldc) {
    return hpdl__cublas_gemm_ex(h, CUDA_R_16BF, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* cuBLAS is column-major: row-major C is column-major C^T = op(B)^T op(A)^T,
   so B goes first, with the same transpose flags, and M and N swap. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_cublas(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, ACC alpha,
                                            const T *A, int lda, const T *B, int ldb, ACC beta, T *C, int ldc,
                                            cudaStream_t stream) {
    cublasHandle_t h;
    cublasStatus_t st;
    hpdl_status s = hpdl__cublas_handle(&h);
    if (s != HPDL_OK) return s;
    if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return HPDL_ERR_CUDA;
    st = hpdl__cublas_gemm(h, tb == HPDL_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N, ta == HPDL_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N,
                           N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH) return HPDL_ERR_UNSUPPORTED;
    return st == CUBLAS_STATUS_SUCCESS ? HPDL_OK : HPDL_ERR_CUDA;
}

/* Grid of ceil(cols/bx) x ceil(rows/by) blocks; refuses more rows of blocks than CUDA allows. */
HPDL_API hpdl_status hpdl__gemm_grid(int cols, int bx, int rows, int by, dim3 *grid) {
    unsigned gx = (unsigned)((cols + bx - 1) / bx), gy = (unsigned)((rows + by - 1) / by);
    if (gy > 65535u) return HPDL_ERR_UNSUPPORTED;
    *grid = dim3(gx, gy, 1);
    return HPDL_OK;
}

/* Every block tile inside the matrices and every load aligned: the kernels
   can skip all bounds checks (the kernels' FAST variant). */
template <typename ARGS> static inline int hpdl__gemm_interior(const ARGS &g, int bm, int bn, int bk) {
    return g.a.vec && g.b.vec && g.M % bm == 0 && g.N % bn == 0 && g.K % bk == 0;
}

/* K depth of the warptile rung's tiles. */
#define HPDL__WARPTILE_BK 8

/* The SIMT rungs, for every type. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_simt(hpdl_gemm_algo algo, const hpdl__gemm_args<T, ACC> &g,
                                                 cudaStream_t stream) {
    dim3 grid;
    hpdl_status s;
    switch (algo) {
    case HPDL_GEMM_NAIVE: /* x runs over rows of C */
        if ((s = hpdl__gemm_grid(g.M, 32, g.N, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_naive<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_COALESCED:
        if ((s = hpdl__gemm_grid(g.N, 32, g.M, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_coalesced<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_SMEM:
        if ((s = hpdl__gemm_grid(g.N, 32, g.M, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_smem<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_REG1D:
        if ((s = hpdl__gemm_grid(g.N, 64, g.M, 64, &grid)) != HPDL_OK) return s;
        hpdl__gemm_reg1d<<<grid, 512, 0, stream>>>(g);
        break;
    case HPDL_GEMM_REG2D:
        if ((s = hpdl__gemm_grid(g.N, 128, g.M, 128, &grid)) != HPDL_OK) return s;
        hpdl__gemm_reg2d<<<grid, 256, 0, stream>>>(g);
        break;
    case HPDL_GEMM_VEC4:
        if ((s = hpdl__gemm_grid(g.N, 128, g.M, 128, &grid)) != HPDL_OK) return s;
        hpdl__gemm_vec4<<<grid, 256, 0, stream>>>(g);
        break;
    case HPDL_GEMM_WARPTILE:
        if ((s = hpdl__gemm_grid(g.N, 128, g.M, 128, &grid)) != HPDL_OK) return s;
        if (hpdl__gemm_interior(g, 128, 128, HPDL__WARPTILE_BK))
            hpdl__gemm_warptile<T, ACC, HPDL__WARPTILE_BK, sizeof(ACC) == 4 ? 2 : 1, true><<<grid, 256, 0, stream>>>(g);
        else
            hpdl__gemm_warptile<T, ACC, HPDL__WARPTILE_BK, sizeof(ACC) == 4 ? 2 : 1, false><<<grid, 256, 0, stream>>>(g);
        break;
    default: return HPDL_ERR_UNSUPPORTED;
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Launches a tensor-core kernel with `smem` bytes of dynamic shared memory,
   or says HPDL_ERR_UNSUPPORTED when this binary has no sm_80+ code for it
   (its body would be empty) or the GPU cannot give that much shared memory. */
template <typename SH, typename ARGS>
static inline hpdl_status hpdl__gemm_launch_tc(void (*kernel)(ARGS), const ARGS &g, size_t smem, cudaStream_t stream) {
    cudaFuncAttributes fa;
    dim3 grid;
    hpdl_status s;
    if (cudaFuncGetAttributes(&fa, (const void *)kernel) != cudaSuccess || fa.ptxVersion < 80 ||
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_UNSUPPORTED;
    }
    if ((s = hpdl__gemm_grid(g.N, SH::BN, g.M, SH::BM, &grid)) != HPDL_OK) return s;
    kernel<<<grid, SH::THREADS, smem, stream>>>(g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The tensor-core rung: transposes are template arguments (they change which
   ldmatrix form and shared layout each operand uses). */
template <typename T, typename SH, bool FAST>
static inline void (*hpdl__gemm_mma_kernel(int ak, int bk))(hpdl__gemm_args<T, float>) {
    return ak ? (bk ? hpdl__gemm_mma<T, true, true, SH, FAST> : hpdl__gemm_mma<T, true, false, SH, FAST>)
              : (bk ? hpdl__gemm_mma<T, false, true, SH, FAST> : hpdl__gemm_mma<T, false, false, SH, FAST>);
}

template <typename SH, typename T>
static inline hpdl_status hpdl__gemm_launch_mma_shape(const hpdl__gemm_args<T, float> &g, cudaStream_t stream) {
    const size_t smem = (size_t)SH::S * (SH::BM + SH::BN) * SH::BK * sizeof(T);
    if (hpdl__gemm_interior(g, SH::BM, SH::BN, SH::BK))
        return hpdl__gemm_launch_tc<SH>(hpdl__gemm_mma_kernel<T, SH, true>(g.a.kcontig, g.b.kcontig), g, smem, stream);
    return hpdl__gemm_launch_tc<SH>(hpdl__gemm_mma_kernel<T, SH, false>(g.a.kcontig, g.b.kcontig), g, smem, stream);
}

template <typename SH, bool FAST>
static inline void (*hpdl__gemm_dmma_kernel(int ak, int bk))(hpdl__gemm_args<double, double>) {
    return ak ? (bk ? hpdl__gemm_dmma<true, true, SH, FAST> : hpdl__gemm_dmma<true, false, SH, FAST>)
              : (bk ? hpdl__gemm_dmma<false, true, SH, FAST> : hpdl__gemm_dmma<false, false, SH, FAST>);
}

template <typename SH>
static inline hpdl_status hpdl__gemm_launch_dmma_shape(const hpdl__gemm_args<double, double> &g, cudaStream_t stream) {
    const size_t a_stage = g.a.kcontig ? SH::BM * (SH::BK + 4) : SH::BK * (SH::BM + 4);
    const size_t b_stage = g.b.kcontig ? SH::BN * (SH::BK + 4) : SH::BK * (SH::BN + 4);
    const size_t smem = (size_t)SH::S * (a_stage + b_stage) * sizeof(double);
    if (hpdl__gemm_interior(g, SH::BM, SH::BN, SH::BK))
        return hpdl__gemm_launch_tc<SH>(hpdl__gemm_dmma_kernel<SH, true>(g.a.kcontig, g.b.kcontig), g, smem, stream);
    return hpdl__gemm_launch_tc<SH>(hpdl__gemm_dmma_kernel<SH, false>(g.a.kcontig, g.b.kcontig), g, smem, stream);
}

template <typename T>
static inline hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<T, float> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_mma_shape<hpdl__mma_shape>(g, stream);
}

static inline hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<double, double> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_dmma_shape<hpdl__dmma_shape>(g, stream);
}

static inline hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<float, float> &g, cudaStream_t stream) {
    (void)g; (void)stream;
    return HPDL_ERR_UNSUPPORTED; /* f32 has no mma.sync rung (that would be TF32) */
}

/* Validates, then runs one rung (AUTO: the tensor-core rung where the type
   has one and this binary and GPU can run it, else warptile). */
template <typename T, typename ACC>
static inline hpdl_status hpdl__cuda_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                          ACC alpha, const T *A, int lda, const T *B, int ldb, ACC beta, T *C, int ldc,
                                          cudaStream_t stream) {
    hpdl_status s = hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc); /* hpdl.h's CPU GEMM check */
    int tensor = algo == HPDL_GEMM_MMA || (algo == HPDL_GEMM_AUTO && sizeof(T) != sizeof(float));
    if (s != HPDL_OK || (int)algo < (int)HPDL_GEMM_AUTO || (int)algo > (int)HPDL_GEMM_CUBLAS) return HPDL_ERR_INVALID;
    if (algo == HPDL_GEMM_MMA && sizeof(T) == sizeof(float)) return HPDL_ERR_UNSUPPORTED;
    if (M == 0 || N == 0) return HPDL_OK;
    if (algo == HPDL_GEMM_CUBLAS) return hpdl__gemm_cublas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    if (tensor) {
        s = hpdl__gemm_launch_mma(hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                                       (int)(16 / sizeof(T))), stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_GEMM_MMA) return s;
    }
    return hpdl__gemm_launch_simt(algo == HPDL_GEMM_AUTO ? HPDL_GEMM_WARPTILE : algo,
                                  hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 4), stream);
}

/* Public launchers for one type. T: the hpdl storage type; DEV_T: the CUDA
   type with the same bits; ACC_T: the type of alpha, beta and accumulation. */
#define HPDL_DEFINE_CUDA_GEMM(SUFFIX, T, DEV_T, ACC_T)                                                               \
    HPDL_API hpdl_status hpdl_cuda_gemm_algo_##SUFFIX(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb,       \
                                                      int M, int N, int K, ACC_T alpha, const T *A, int lda,          \
                                                      const T *B, int ldb, ACC_T beta, T *C, int ldc,                 \
                                                      cudaStream_t stream) {                                          \
        return hpdl__cuda_gemm<DEV_T, ACC_T>(algo, ta, tb, M, N, K, alpha, (const DEV_T *)A, lda, (const DEV_T *)B,  \
                                             ldb, beta, (DEV_T *)C, ldc, stream);                                     \
    }                                                                                                                 \
    HPDL_API hpdl_status hpdl_cuda_gemm_##SUFFIX(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,            \
                                                 ACC_T alpha, const T *A, int lda, const T *B, int ldb, ACC_T beta,   \
                                                 T *C, int ldc, cudaStream_t stream) {                                \
        return hpdl_cuda_gemm_algo_##SUFFIX(HPDL_GEMM_AUTO, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,     \
                                            stream);                                                                  \
    }

HPDL_DEFINE_CUDA_GEMM(f32, float, float, float)
HPDL_DEFINE_CUDA_GEMM(f64, double, double, double)
HPDL_DEFINE_CUDA_GEMM(f16, hpdl_f16, __half, float)
HPDL_DEFINE_CUDA_GEMM(bf16, hpdl_bf16, __nv_bfloat16, float)
