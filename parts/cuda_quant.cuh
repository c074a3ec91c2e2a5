/* cuda_quant: int8 GEMM (tensor cores and dp4a) with fused requantization,
   and quantized MLP inference (spliced into hpdl_cuda.cuh after
   parts/cuda_multi.cuh; uses the cp.async / ldmatrix helpers of
   parts/cuda_gemm.cuh and hpdl_quant_mlp of parts/cpu_quant_mlp.h).

   Every function computes exactly what its CPU twin in hpdl.h computes, bit
   for bit: hpdl_quant_gemm_i8, hpdl_quant_gemm_requant_i8,
   hpdl_quant_gemm_requant_i32, hpdl_quant_quantize_f32 and the integer-only
   hpdl_quant_mlp. Pointers to matrices are device pointers.

   LAYOUT. The CPU twins take A (M x K) and B (K x N) row-major. The int8
   tensor-core instruction (mma.sync m16n8k32 .row.col) wants both operands
   with K contiguous, i.e. B as N x K ("NT" layout: Bt[n * ldb + k] = B(k, n)),
   and ldmatrix cannot transpose 8-bit elements. So:
       hpdl_cuda_quant_gemm_nt_i8 / _requant_nt_i8 / _requant_nt_i32
           take Bt (N x K) directly: the fast path, for weights transposed once;
       hpdl_cuda_quant_gemm_i8 / _requant_i8
           take B (K x N) like the CPU and transpose it into a stream-ordered
           temporary (hpdl_cuda_quant_transpose_i8, N * K bytes) first.
   hpdl_cuda_quant_mlp keeps its weights transposed.

       hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, M, N, K, dA, K, za, dB, N, zb, dC, N, stream);

   ALGORITHMS (hpdl_quant_algo)
       mma   128x256x64 block tiles, 8 warps of 64x64, 4-stage cp.async
             pipeline into XOR-swizzled shared tiles, fragments by ldmatrix,
             mma.sync.m16n8k32.s32.s8.s8.s32 (sm_80+)
       dp4a  128x128x32 block tiles, 8x8 outputs per thread, __dp4a (any GPU;
             the fallback where the binary or GPU has no sm_80 path)
       auto  mma where it can run, else dp4a

   ZERO POINTS. The kernels multiply the raw int8 values and correct
       sum_k (a - za)(b - zb) = sum_k ab - zb sum_k a - za sum_k b + K za zb
   in the epilogue, with the row sums of A and column sums of B taken from
   the shared-memory tiles as they pass (dp4a with 0x01010101), only when
   the other operand's zero point is not 0. For K <= HPDL_QUANT_MAX_K every
   term fits, so the result is the CPU's exact int32 accumulator. */
#ifndef HPDL_CUDA_QUANT_CUH
#define HPDL_CUDA_QUANT_CUH

#ifndef HPDL_CPU_QUANT_MLP_H
#error "cuda_quant.cuh needs parts/cpu_quant_mlp.h (hpdl_quant_mlp) included before it"
#endif

typedef enum hpdl_quant_algo { HPDL_QUANT_AUTO = 0, HPDL_QUANT_MMA, HPDL_QUANT_DP4A } hpdl_quant_algo;

HPDL_API const char *hpdl_quant_algo_name(hpdl_quant_algo a) {
    switch (a) {
    case HPDL_QUANT_AUTO: return "auto";
    case HPDL_QUANT_MMA: return "mma";
    case HPDL_QUANT_DP4A: return "dp4a";
    }
    return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Fixed-point requantization, device twins of hpdl.h's                      */
/* ------------------------------------------------------------------------ */

/* hpdl_quant_sat_rounding_doubling_high_mul, same arithmetic (host and
   device, so tests can compare the two on the host as well). */
HPDL_HD static inline int32_t hpdl__q_srdhm(int32_t a, int32_t b) {
    int64_t ab = (int64_t)a * b, nudge = ab >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30);
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* hpdl_quant_rounding_divide_by_pot, same arithmetic. */
HPDL_HD static inline int32_t hpdl__q_rdbpot(int32_t x, int e) {
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1), remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >= 0 ? x >> e : ~(~x >> e)) + (remainder > threshold ? 1 : 0);
}

/* ------------------------------------------------------------------------ */
/* Kernel arguments and the epilogue                                         */
/* ------------------------------------------------------------------------ */

struct hpdl__qgemm_args {
    const int8_t *A, *B;          /* A: M x K (lda), B: N x K (ldb); K contiguous in both */
    void *C;                      /* M x N (ldc), int32_t or int8_t */
    int M, N, K, lda, ldb, ldc;
    int avec, bvec;               /* rows 16-byte aligned: cp.async / vector loads allowed */
    int32_t za, zb;
    const int32_t *bias;          /* N entries, or NULL */
    const int32_t *multiplier;    /* N entries, or NULL: no requantization (raw int32) */
    const int *shift;             /* N entries */
    int32_t zero_point, lo, hi;   /* output zero point and clamp range */
};

/* The CPU's accumulator for C(m, n) from the raw product sum, then the
   bias (in 64 bits, saturated to int32) and the requantization. */
static __device__ __forceinline__ int32_t hpdl__qgemm_finish(const hpdl__qgemm_args &g, int n, int32_t dot, int32_t rsum,
                                                             int32_t csum) {
    int64_t acc = (int64_t)dot - (int64_t)g.zb * rsum - (int64_t)g.za * csum + (int64_t)g.K * g.za * g.zb, v;
    if (g.bias) acc += g.bias[n];
    acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
    if (!g.multiplier) return (int32_t)acc;
    v = (int64_t)hpdl__q_rdbpot(hpdl__q_srdhm((int32_t)acc, g.multiplier[n]), g.shift[n]) + g.zero_point;
    return (int32_t)(v < g.lo ? g.lo : v > g.hi ? g.hi : v);
}

static __device__ __forceinline__ void hpdl__qgemm_put(int8_t *p, int32_t v) { *p = (int8_t)v; }
static __device__ __forceinline__ void hpdl__qgemm_put(int32_t *p, int32_t v) { *p = v; }

template <typename TC>
static __device__ __forceinline__ void hpdl__qgemm_out(const hpdl__qgemm_args &g, int m, int n, int32_t dot,
                                                       int32_t rsum, int32_t csum) {
    if (m < g.M && n < g.N) hpdl__qgemm_put((TC *)g.C + (size_t)m * g.ldc + n, hpdl__qgemm_finish(g, n, dot, rsum, csum));
}

static __device__ __forceinline__ void hpdl__qgemm_put2(int8_t *p, int32_t a, int32_t b) {
    *(char2 *)p = make_char2((signed char)a, (signed char)b);
}
static __device__ __forceinline__ void hpdl__qgemm_put2(int32_t *p, int32_t a, int32_t b) { *(int2 *)p = make_int2(a, b); }

/* C(m, n) and C(m, n+1): one paired store when both are inside and aligned. */
template <typename TC>
static __device__ __forceinline__ void hpdl__qgemm_out2(const hpdl__qgemm_args &g, int m, int n, int32_t d0, int32_t d1,
                                                        int32_t rsum, int32_t cs0, int32_t cs1) {
    TC *p = (TC *)g.C + (size_t)m * g.ldc + n;
    if (m < g.M && n + 1 < g.N && (uintptr_t)p % (2 * sizeof(TC)) == 0) {
        hpdl__qgemm_put2(p, hpdl__qgemm_finish(g, n, d0, rsum, cs0), hpdl__qgemm_finish(g, n + 1, d1, rsum, cs1));
        return;
    }
    hpdl__qgemm_out<TC>(g, m, n, d0, rsum, cs0);
    hpdl__qgemm_out<TC>(g, m, n + 1, d1, rsum, cs1);
}

/* Sum of the four int8 lanes of each word of u, added to acc. */
static __device__ __forceinline__ int32_t hpdl__qsum16(int4 u, int32_t acc) {
    const int ones = 0x01010101;
    return __dp4a(u.w, ones, __dp4a(u.z, ones, __dp4a(u.y, ones, __dp4a(u.x, ones, acc))));
}

/* Sums of a row split over `lanes` adjacent lanes (1 or 2), in every lane. */
static __device__ __forceinline__ int32_t hpdl__qrow_total(int32_t part, int lanes) {
    return lanes == 2 ? part + __shfl_xor_sync(0xffffffffu, part, 1) : part;
}

/* ------------------------------------------------------------------------ */
/* Tensor-core kernel (sm_80+)                                               */
/* ------------------------------------------------------------------------ */

enum { HPDL__QMMA_BM = 128, HPDL__QMMA_BN = 256, HPDL__QMMA_BK = 64, HPDL__QMMA_STAGES = 4 };

/* The tile shape as hpdl__gemm_launch_tc (parts/cuda_gemm.cuh) takes it. */
struct hpdl__qmma_shape {
    enum { BM = HPDL__QMMA_BM, BN = HPDL__QMMA_BN, THREADS = 256 };
};

/* Byte offset of 16-byte chunk c (0..3) of row r in a tile of 64-byte rows:
   chunks XOR-permuted by (r/2)%4 so that the 8 rows of an ldmatrix phase
   fall in 8 different 16-byte bank groups. */
static __device__ __forceinline__ int hpdl__qswz(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

/* Rows r0.. (ROWS of them) and bytes k0..k0+63 of the stored matrix X
   (rows x K, K contiguous) into a swizzled stage: cp.async 16 bytes where
   the chunk lies inside X and vec allows it, byte by byte (zeros outside)
   where not. */
template <int ROWS>
static __device__ __forceinline__ void hpdl__qgemm_stage(int8_t *s, const int8_t *X, int ld, int r0, int k0, int rows,
                                                         int K, int vec) {
    int i, j;
#pragma unroll
    for (i = 0; i < ROWS * 4 / 256; i++) {
        int chunk = (int)threadIdx.x + i * 256, r = chunk >> 2, c = chunk & 3, gr = r0 + r, gk = k0 + c * 16;
        int8_t *dst = s + hpdl__qswz(r, c);
        const int8_t *src = X + (ptrdiff_t)gr * ld + gk;
        if (vec && gr < rows && gk + 16 <= K) {
            hpdl__cp_async16(dst, src);
        } else {
            int8_t v[16];
            int4 u;
#pragma unroll
            for (j = 0; j < 16; j++) v[j] = (gr < rows && gk + j < K) ? src[j] : (int8_t)0;
            memcpy(&u, v, sizeof u);
            *(int4 *)dst = u;
        }
    }
}

/* This thread's share of the row sums of a landed ROWS x 64-byte stage: row
   threadIdx.x * ROWS / 256, chunks split over 256 / ROWS adjacent lanes. */
template <int ROWS> static __device__ __forceinline__ int32_t hpdl__qgemm_stage_sum(const int8_t *s, int32_t acc) {
    enum { CPT = ROWS * 4 / 256 }; /* chunks per thread */
    int t = (int)threadIdx.x, r = t * CPT / 4, c0 = t * CPT % 4, q;
#pragma unroll
    for (q = 0; q < CPT; q++) acc = hpdl__qsum16(*(const int4 *)(s + hpdl__qswz(r, c0 + q)), acc);
    return acc;
}

/* d += a (16x32 s8, row) * b (32x8 s8, col), s32 accumulation. */
static __device__ __forceinline__ void hpdl__mma_s8(int32_t d[4], const unsigned a[4], const unsigned b[2]) {
#ifdef HPDL__GEMM_SM80
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d; (void)a; (void)b;
#endif
}

/* One 64-byte K tile for a warp's 64x64 outputs: two k32 steps, each 4 A
   fragments (ldmatrix.x4: rows 0-15 x bytes 0-15 and 16-31) and 8 B
   fragments (two per ldmatrix.x4), then 4x8 mma. */
static __device__ __forceinline__ void hpdl__qgemm_mma_tile(const int8_t *ta, const int8_t *tb, int wm, int wn,
                                                            int32_t acc[4][8][4]) {
    int lane = (int)threadIdx.x % 32, ks, i, j;
    unsigned af[4][4], bf[8][2];
#pragma unroll
    for (ks = 0; ks < 4; ks += 2) { /* chunk index of the k32 step */
#pragma unroll
        for (i = 0; i < 4; i++) hpdl__ldmatrix_x4<false>(af[i], ta + hpdl__qswz(wm + i * 16 + lane % 16, ks + lane / 16));
#pragma unroll
        for (j = 0; j < 4; j++) {
            unsigned r[4];
            hpdl__ldmatrix_x4<false>(r, tb + hpdl__qswz(wn + j * 16 + lane % 8 + lane / 16 * 8, ks + lane / 8 % 2));
            bf[2 * j][0] = r[0];
            bf[2 * j][1] = r[1];
            bf[2 * j + 1][0] = r[2];
            bf[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (i = 0; i < 4; i++)
#pragma unroll
            for (j = 0; j < 8; j++) hpdl__mma_s8(acc[i][j], af[i], bf[j]);
    }
}

/* Writes the row sums (rsum over this block's A rows, csum over its B rows)
   to shared memory; zeros when that zero-point term is not needed. */
static __device__ __forceinline__ void hpdl__qgemm_mma_sums(int32_t *rs, int32_t *cs, int32_t rsum, int32_t csum) {
    int t = (int)threadIdx.x;
    rsum = hpdl__qrow_total(rsum, 256 / HPDL__QMMA_BM);
    if (t % (256 / HPDL__QMMA_BM) == 0) rs[t / (256 / HPDL__QMMA_BM)] = rsum;
    cs[t] = csum; /* HPDL__QMMA_BN == 256: one row per thread */
}

template <typename TC> __global__ void __launch_bounds__(256, 1) hpdl__qgemm_mma(hpdl__qgemm_args g) {
#ifdef HPDL__GEMM_SM80
    enum { BM = HPDL__QMMA_BM, BN = HPDL__QMMA_BN, BK = HPDL__QMMA_BK, S = HPDL__QMMA_STAGES };
    extern __shared__ int4 hpdl__qgemm_smem[];
    int8_t *sa = (int8_t *)hpdl__qgemm_smem, *sb = sa + S * BM * BK;
    int32_t *rs = (int32_t *)(sb + S * BN * BK), *cs = rs + BM, rsum = 0, csum = 0;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32, wm = warp / 4 * 64, wn = warp % 4 * 64;
    int tm, tn, kt, i, j, KT = (g.K + BK - 1) / BK;
    int32_t acc[4][8][4];
    static_assert(BN == 256 && BM * 2 == BN, "hpdl__qgemm_mma_sums assumes these tile sizes");
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < 4; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
    for (kt = 0; kt < S - 1; kt++) {
        if (kt < KT) {
            hpdl__qgemm_stage<BM>(sa + kt * BM * BK, g.A, g.lda, tm, kt * BK, g.M, g.K, g.avec);
            hpdl__qgemm_stage<BN>(sb + kt * BN * BK, g.B, g.ldb, tn, kt * BK, g.N, g.K, g.bvec);
        }
        hpdl__cp_async_commit();
    }
    for (kt = 0; kt < KT; kt++) {
        const int8_t *ta = sa + kt % S * BM * BK, *tb = sb + kt % S * BN * BK;
        int next = kt + S - 1;
        hpdl__cp_async_wait<S - 2>(); /* tile kt has landed (for this thread) ... */
        __syncthreads();              /* ... for all threads, and stage (kt-1)%S is free */
        if (next < KT) {
            hpdl__qgemm_stage<BM>(sa + next % S * BM * BK, g.A, g.lda, tm, next * BK, g.M, g.K, g.avec);
            hpdl__qgemm_stage<BN>(sb + next % S * BN * BK, g.B, g.ldb, tn, next * BK, g.N, g.K, g.bvec);
        }
        hpdl__cp_async_commit();
        if (g.zb) rsum = hpdl__qgemm_stage_sum<BM>(ta, rsum);
        if (g.za) csum = hpdl__qgemm_stage_sum<BN>(tb, csum);
        hpdl__qgemm_mma_tile(ta, tb, wm, wn, acc);
    }
    hpdl__cp_async_wait<0>();
    hpdl__qgemm_mma_sums(rs, cs, rsum, csum);
    __syncthreads();
#pragma unroll
    for (i = 0; i < 4; i++)
#pragma unroll
        for (j = 0; j < 8; j++) { /* c0, c1: row lane/4, columns 2(lane%4), +1; c2, c3: 8 rows down */
            int m = wm + i * 16 + lane / 4, n = wn + j * 8 + lane % 4 * 2;
            hpdl__qgemm_out2<TC>(g, tm + m, tn + n, acc[i][j][0], acc[i][j][1], rs[m], cs[n], cs[n + 1]);
            hpdl__qgemm_out2<TC>(g, tm + m + 8, tn + n, acc[i][j][2], acc[i][j][3], rs[m + 8], cs[n], cs[n + 1]);
        }
#else
    (void)g; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* ------------------------------------------------------------------------ */
/* dp4a kernel (any GPU)                                                     */
/* ------------------------------------------------------------------------ */

enum { HPDL__QDP4A_BM = 128, HPDL__QDP4A_BN = 128, HPDL__QDP4A_BK = 32 };

/* Bytes k..k+15 of row r of X (rows x K), zeros outside: one 16-byte load
   when inside and vec allows it, else byte by byte. */
static __device__ __forceinline__ int4 hpdl__qload16(const int8_t *X, int ld, int r, int k, int rows, int K, int vec) {
    const int8_t *p = X + (ptrdiff_t)r * ld + k;
    int8_t v[16];
    int4 u;
    int j;
    if (vec && r < rows && k + 16 <= K) return *(const int4 *)p;
#pragma unroll
    for (j = 0; j < 16; j++) v[j] = (r < rows && k + j < K) ? p[j] : (int8_t)0;
    memcpy(&u, v, sizeof u);
    return u;
}

/* Stores a thread's 16 bytes (4 words of K) into S[kword][row] (row length LDS). */
static __device__ __forceinline__ void hpdl__qdp4a_stash(int32_t *S, int lds, int row, int half, int4 u) {
    S[(half * 4 + 0) * lds + row] = u.x;
    S[(half * 4 + 1) * lds + row] = u.y;
    S[(half * 4 + 2) * lds + row] = u.z;
    S[(half * 4 + 3) * lds + row] = u.w;
}

/* 128x128x32 tiles; thread (tx, ty) computes rows ty + 16i and columns
   tx + 16j (i, j < 8), so a warp's shared reads are broadcasts (A) and 16
   consecutive words (B); the next tile is loaded into registers while the
   current one is multiplied. Each thread loads 16 bytes of one A row and one
   B row per tile, and sums them for the zero-point terms. */
template <typename TC> __global__ void __launch_bounds__(256) hpdl__qgemm_dp4a(hpdl__qgemm_args g) {
    enum { BM = HPDL__QDP4A_BM, BN = HPDL__QDP4A_BN, BK = HPDL__QDP4A_BK, KW = BK / 4, LDS = BM + 4 };
    __shared__ int32_t As[KW * LDS], Bs[KW * LDS], rs[BM], cs[BN];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, row = tid / 2, half = tid % 2, tm, tn, k0, kw, i, j;
    int32_t acc[8][8], a[8], b[8], rsum = 0, csum = 0;
    int4 wa, wb;
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j] = 0;
    wa = hpdl__qload16(g.A, g.lda, tm + row, half * 16, g.M, g.K, g.avec);
    wb = hpdl__qload16(g.B, g.ldb, tn + row, half * 16, g.N, g.K, g.bvec);
    for (k0 = 0; k0 < g.K; k0 += BK) {
        if (g.zb) rsum = hpdl__qsum16(wa, rsum);
        if (g.za) csum = hpdl__qsum16(wb, csum);
        hpdl__qdp4a_stash(As, LDS, row, half, wa);
        hpdl__qdp4a_stash(Bs, LDS, row, half, wb);
        __syncthreads();
        if (k0 + BK < g.K) {
            wa = hpdl__qload16(g.A, g.lda, tm + row, k0 + BK + half * 16, g.M, g.K, g.avec);
            wb = hpdl__qload16(g.B, g.ldb, tn + row, k0 + BK + half * 16, g.N, g.K, g.bvec);
        }
#pragma unroll
        for (kw = 0; kw < KW; kw++) {
#pragma unroll
            for (i = 0; i < 8; i++) a[i] = As[kw * LDS + ty + 16 * i];
#pragma unroll
            for (j = 0; j < 8; j++) b[j] = Bs[kw * LDS + tx + 16 * j];
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < 8; j++) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    rsum = hpdl__qrow_total(rsum, 2);
    csum = hpdl__qrow_total(csum, 2);
    if (!half) { rs[row] = rsum; cs[row] = csum; }
    __syncthreads();
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++)
            hpdl__qgemm_out<TC>(g, tm + ty + 16 * i, tn + tx + 16 * j, acc[i][j], rs[ty + 16 * i], cs[tx + 16 * j]);
}

/* ------------------------------------------------------------------------ */
/* Layout transformation and quantization kernels                            */
/* ------------------------------------------------------------------------ */

/* Y (cols x rows) = X^T through 32x32 shared tiles (both sides coalesced). */
__global__ void hpdl__qtranspose(int rows, int cols, const int8_t *X, int ldx, int8_t *Y, int ldy) {
    __shared__ int8_t t[32][33];
    int c0 = (int)blockIdx.x * 32, r0 = (int)blockIdx.y * 32, tx = (int)threadIdx.x, i;
    for (i = (int)threadIdx.y; i < 32; i += 8)
        if (r0 + i < rows && c0 + tx < cols) t[i][tx] = X[(size_t)(r0 + i) * ldx + c0 + tx];
    __syncthreads();
    for (i = (int)threadIdx.y; i < 32; i += 8)
        if (c0 + i < cols && r0 + tx < rows) Y[(size_t)(c0 + i) * ldy + r0 + tx] = t[tx][i];
}

/* hpdl.h's quantize, element for element: clamp(round(x / scale) + zero
   point) in double (IEEE division and round-half-away, as on the CPU).
   NaN is not checked here: it becomes the zero point. */
__global__ void hpdl__qquantize(int rows, int cols, const float *X, int ldx, hpdl_quant_params p, int8_t *Q, int ldq) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = (int64_t)rows * cols;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, c = i % cols;
        float x = X[r * ldx + c];
        double q = x != x ? (double)p.zero_point : round((double)x / p.scale) + p.zero_point;
        Q[r * ldq + c] = (int8_t)(q < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : q > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : q);
    }
}

/* Rows whose largest logit (first on ties) is at their label, added to *hits. */
__global__ void hpdl__qargmax_hits(int rows, int cols, const int32_t *logits, const int32_t *labels,
                                   unsigned long long *hits) {
    int r = (int)(blockIdx.x * blockDim.x + threadIdx.x), c, best = 0;
    if (r >= rows) return;
    for (c = 1; c < cols; c++) best = logits[(size_t)r * cols + c] > logits[(size_t)r * cols + best] ? c : best;
    if (best == labels[r]) atomicAdd(hits, 1ull);
}

HPDL_API hpdl_status hpdl_cuda_quant_transpose_i8(int rows, int cols, const int8_t *X, int ldx, int8_t *Y, int ldy,
                                                  cudaStream_t stream) {
    if (hpdl__check_matrix(X, rows, cols, ldx) != HPDL_OK || hpdl__check_matrix(Y, cols, rows, ldy) != HPDL_OK ||
        (rows + 31) / 32 > 65535)
        return HPDL_ERR_INVALID;
    if (rows == 0 || cols == 0) return HPDL_OK;
    hpdl__qtranspose<<<dim3((unsigned)(cols + 31) / 32, (unsigned)(rows + 31) / 32), dim3(32, 8), 0, stream>>>(
        rows, cols, X, ldx, Y, ldy);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Q (rows x cols, int8) = quantize(X) with p, like hpdl_quant_quantize_f32
   row by row (NaN: see hpdl__qquantize). */
HPDL_API hpdl_status hpdl_cuda_quant_quantize_f32(int rows, int cols, const float *X, int ldx, hpdl_quant_params p,
                                                  int8_t *Q, int ldq, cudaStream_t stream) {
    int64_t n = (int64_t)rows * cols;
    if (hpdl__check_matrix(X, rows, cols, ldx) != HPDL_OK || hpdl__check_matrix(Q, rows, cols, ldq) != HPDL_OK ||
        !hpdl__quant_params_valid(p))
        return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    hpdl__qquantize<<<(unsigned)(n < 65536 * 256 ? (n + 255) / 256 : 65536), 256, 0, stream>>>(rows, cols, X, ldx, p, Q, ldq);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Requantization parameters on the device                                   */
/* ------------------------------------------------------------------------ */

/* hpdl_quant_output with its arrays on the device, N entries each (a
   per-tensor multiplier is repeated), validated once when made. */
typedef struct hpdl_cuda_quant_output {
    int n;
    int32_t *bias;       /* n, or NULL */
    int32_t *multiplier; /* n */
    int *shift;          /* n */
    int32_t zero_point;
    int relu;
} hpdl_cuda_quant_output;

HPDL_API void hpdl_cuda_quant_output_destroy(hpdl_cuda_quant_output *d) {
    if (!d) return;
    hpdl_cuda_free(d->bias);
    hpdl_cuda_free(d->multiplier);
    hpdl_cuda_free(d->shift);
    memset(d, 0, sizeof *d);
}

/* Copies host parameters *o for n output channels to the device (checked
   like the CPU's hpdl_quant_gemm_requant_i8 checks them). */
HPDL_API hpdl_status hpdl_cuda_quant_output_create(hpdl_cuda_quant_output *d, const hpdl_quant_output *o, int n) {
    hpdl_cuda_quant_output made;
    int32_t *m0;
    int *sh, j;
    hpdl_status s = HPDL_OK;
    if (!d || n < 1 || !hpdl__quant_output_valid(o, n)) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n = n;
    made.zero_point = o->zero_point;
    made.relu = o->relu;
    m0 = (int32_t *)hpdl_alloc((size_t)n, sizeof *m0);
    sh = (int *)hpdl_alloc((size_t)n, sizeof *sh);
    if (!m0 || !sh) s = HPDL_ERR_NOMEM;
    for (j = 0; s == HPDL_OK && j < n; j++) {
        m0[j] = o->multiplier[o->per_channel ? j : 0];
        sh[j] = o->shift[o->per_channel ? j : 0];
    }
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.multiplier, (size_t)n * sizeof *m0);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.shift, (size_t)n * sizeof *sh);
    if (s == HPDL_OK && o->bias) s = hpdl_cuda_alloc((void **)&made.bias, (size_t)n * sizeof *made.bias);
    if (s == HPDL_OK && (cudaMemcpy(made.multiplier, m0, (size_t)n * sizeof *m0, cudaMemcpyHostToDevice) != cudaSuccess ||
                         cudaMemcpy(made.shift, sh, (size_t)n * sizeof *sh, cudaMemcpyHostToDevice) != cudaSuccess ||
                         (o->bias && cudaMemcpy(made.bias, o->bias, (size_t)n * sizeof *made.bias,
                                                cudaMemcpyHostToDevice) != cudaSuccess)))
        s = HPDL_ERR_CUDA;
    HPDL_FREE(m0);
    HPDL_FREE(sh);
    if (s != HPDL_OK) { hpdl_cuda_quant_output_destroy(&made); return s; }
    *d = made;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* GEMM launchers                                                            */
/* ------------------------------------------------------------------------ */

/* What the epilogue writes. */
typedef enum hpdl__qgemm_out_kind { HPDL__QOUT_I32, HPDL__QOUT_REQUANT_I8, HPDL__QOUT_REQUANT_I32 } hpdl__qgemm_out_kind;

static inline int hpdl__qgemm_rows16(const void *p, int ld) { return (uintptr_t)p % 16 == 0 && ld % 16 == 0; }

static inline hpdl__qgemm_args hpdl__qgemm_make_args(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                                     const int8_t *Bt, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                                     hpdl__qgemm_out_kind kind, void *C, int ldc) {
    hpdl__qgemm_args g;
    int relu = kind != HPDL__QOUT_I32 && o->relu;
    g.A = A; g.B = Bt; g.C = C;
    g.M = M; g.N = N; g.K = K; g.lda = lda; g.ldb = ldb; g.ldc = ldc;
    g.avec = hpdl__qgemm_rows16(A, lda);
    g.bvec = hpdl__qgemm_rows16(Bt, ldb);
    g.za = za; g.zb = zb;
    g.bias = kind != HPDL__QOUT_I32 ? o->bias : NULL;
    g.multiplier = kind != HPDL__QOUT_I32 ? o->multiplier : NULL;
    g.shift = kind != HPDL__QOUT_I32 ? o->shift : NULL;
    g.zero_point = kind != HPDL__QOUT_I32 ? o->zero_point : 0;
    g.lo = relu ? g.zero_point : kind == HPDL__QOUT_REQUANT_I8 ? HPDL_QUANT_QMIN : INT32_MIN;
    g.hi = kind == HPDL__QOUT_REQUANT_I8 ? HPDL_QUANT_QMAX : INT32_MAX;
    return g;
}

/* Runs the kernel of `algo` (AUTO: mma where this binary and GPU can, else dp4a). */
template <typename TC>
static inline hpdl_status hpdl__qgemm_launch(hpdl_quant_algo algo, const hpdl__qgemm_args &g, cudaStream_t stream) {
    dim3 grid;
    hpdl_status s;
    if (algo != HPDL_QUANT_DP4A) {
        const size_t smem = (size_t)HPDL__QMMA_STAGES * (HPDL__QMMA_BM + HPDL__QMMA_BN) * HPDL__QMMA_BK +
                            (HPDL__QMMA_BM + HPDL__QMMA_BN) * sizeof(int32_t);
        s = hpdl__gemm_launch_tc<hpdl__qmma_shape>(hpdl__qgemm_mma<TC>, g, smem, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_QUANT_MMA) return s;
    }
    if ((s = hpdl__gemm_grid(g.N, HPDL__QDP4A_BN, g.M, HPDL__QDP4A_BM, &grid)) != HPDL_OK) return s;
    hpdl__qgemm_dp4a<TC><<<grid, 256, 0, stream>>>(g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The shared checks: shapes like the CPU twin (B stored K x N when b_kxn,
   else N x K), zero points, the device output parameters for N channels. */
static inline int hpdl__qgemm_valid(hpdl_quant_algo algo, int b_kxn, int M, int N, int K, const int8_t *A, int lda,
                                    int32_t za, const int8_t *B, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                    hpdl__qgemm_out_kind kind, const void *C, int ldc) {
    if ((int)algo < (int)HPDL_QUANT_AUTO || (int)algo > (int)HPDL_QUANT_DP4A) return 0;
    if (kind != HPDL__QOUT_I32 && (!o || o->n != N || !o->multiplier || !o->shift)) return 0;
    if (b_kxn) return hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc);
    return K <= HPDL_QUANT_MAX_K && za >= HPDL_QUANT_QMIN && za <= HPDL_QUANT_QMAX && zb >= HPDL_QUANT_QMIN &&
           zb <= HPDL_QUANT_QMAX && hpdl__check_matrix(A, M, K, lda) == HPDL_OK &&
           hpdl__check_matrix(B, N, K, ldb) == HPDL_OK && hpdl__check_matrix(C, M, N, ldc) == HPDL_OK;
}

static inline hpdl_status hpdl__qgemm_run(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                          const int8_t *Bt, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                          hpdl__qgemm_out_kind kind, void *C, int ldc, cudaStream_t stream) {
    hpdl__qgemm_args g = hpdl__qgemm_make_args(M, N, K, A, lda, za, Bt, ldb, zb, o, kind, C, ldc);
    return kind == HPDL__QOUT_REQUANT_I8 ? hpdl__qgemm_launch<int8_t>(algo, g, stream)
                                         : hpdl__qgemm_launch<int32_t>(algo, g, stream);
}

/* Validates, transposes B into a temporary when it is K x N, runs. */
static inline hpdl_status hpdl__qgemm(hpdl_quant_algo algo, int b_kxn, int M, int N, int K, const int8_t *A, int lda,
                                      int32_t za, const int8_t *B, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                      hpdl__qgemm_out_kind kind, void *C, int ldc, cudaStream_t stream) {
    int8_t *bt = NULL;
    int ldt = (K + 15) / 16 * 16;
    hpdl_status s;
    if (!hpdl__qgemm_valid(algo, b_kxn, M, N, K, A, lda, za, B, ldb, zb, o, kind, C, ldc)) return HPDL_ERR_INVALID;
    if (M == 0 || N == 0) return HPDL_OK;
    if (!b_kxn || K == 0) return hpdl__qgemm_run(algo, M, N, K, A, lda, za, B, ldb, zb, o, kind, C, ldc, stream);
    if (cudaMallocAsync((void **)&bt, (size_t)N * ldt, stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    s = hpdl_cuda_quant_transpose_i8(K, N, B, ldb, bt, ldt, stream);
    if (s == HPDL_OK) s = hpdl__qgemm_run(algo, M, N, K, A, lda, za, bt, ldt, zb, o, kind, C, ldc, stream);
    if (cudaFreeAsync(bt, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* C (int32) = (A - za)(B - zb): hpdl_quant_gemm_i8's arguments, B K x N. */
HPDL_API hpdl_status hpdl_cuda_quant_gemm_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                             int32_t za, const int8_t *B, int ldb, int32_t zb, int32_t *C, int ldc,
                                             cudaStream_t stream) {
    return hpdl__qgemm(algo, 1, M, N, K, A, lda, za, B, ldb, zb, NULL, HPDL__QOUT_I32, C, ldc, stream);
}

/* The same with B given transposed: Bt is N x K (ldb >= K). */
HPDL_API hpdl_status hpdl_cuda_quant_gemm_nt_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                                int32_t za, const int8_t *Bt, int ldb, int32_t zb, int32_t *C, int ldc,
                                                cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, NULL, HPDL__QOUT_I32, C, ldc, stream);
}

/* C (int8) = requantize((A - za)(B - zb) + bias): hpdl_quant_gemm_requant_i8, B K x N. */
HPDL_API hpdl_status hpdl_cuda_quant_gemm_requant_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                                     int32_t za, const int8_t *B, int ldb, int32_t zb,
                                                     const hpdl_cuda_quant_output *o, int8_t *C, int ldc,
                                                     cudaStream_t stream) {
    return hpdl__qgemm(algo, 1, M, N, K, A, lda, za, B, ldb, zb, o, HPDL__QOUT_REQUANT_I8, C, ldc, stream);
}

HPDL_API hpdl_status hpdl_cuda_quant_gemm_requant_nt_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A,
                                                        int lda, int32_t za, const int8_t *Bt, int ldb, int32_t zb,
                                                        const hpdl_cuda_quant_output *o, int8_t *C, int ldc,
                                                        cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, o, HPDL__QOUT_REQUANT_I8, C, ldc, stream);
}

/* C (int32) as hpdl_quant_gemm_requant_i32 (logits at a chosen scale), Bt N x K. */
HPDL_API hpdl_status hpdl_cuda_quant_gemm_requant_nt_i32(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A,
                                                         int lda, int32_t za, const int8_t *Bt, int ldb, int32_t zb,
                                                         const hpdl_cuda_quant_output *o, int32_t *C, int ldc,
                                                         cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, o, HPDL__QOUT_REQUANT_I32, C, ldc, stream);
}

/* ------------------------------------------------------------------------ */
/* Quantized MLP inference (integer-only, as hpdl_quant_mlp HPDL_QUANT_INTEGER) */
/* ------------------------------------------------------------------------ */

typedef struct hpdl_cuda_quant_mlp {
    int n_layers, max_batch;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    int ld[HPDL_MLP_MAX_LAYERS];                 /* row length of layer l's int8 input (16-byte rows) */
    hpdl_quant_algo algo;
    int8_t *Wt[HPDL_MLP_MAX_LAYERS];             /* widths[l+1] x ld[l]: the int8 weights, transposed */
    hpdl_cuda_quant_output out[HPDL_MLP_MAX_LAYERS];
    hpdl_quant_params x_params[HPDL_MLP_MAX_LAYERS];
    int8_t *act[2];                              /* int8 layer inputs, ping-pong */
    int32_t *logits;                             /* max_batch x classes, after a forward */
    unsigned long long *hits;
    double logit_scale;
} hpdl_cuda_quant_mlp;

HPDL_API void hpdl_cuda_quant_mlp_destroy(hpdl_cuda_quant_mlp *g) {
    int l;
    if (!g) return;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) {
        hpdl_cuda_free(g->Wt[l]);
        hpdl_cuda_quant_output_destroy(&g->out[l]);
    }
    hpdl_cuda_free(g->act[0]);
    hpdl_cuda_free(g->act[1]);
    hpdl_cuda_free(g->logits);
    hpdl_cuda_free(g->hits);
    memset(g, 0, sizeof *g);
}

/* Layer l's weights: uploaded K x N as built, transposed on the device to N x ld. */
static inline hpdl_status hpdl__cuda_quant_mlp_weights(hpdl_cuda_quant_mlp *g, const hpdl_quant_mlp *q, int l) {
    int K = q->widths[l], N = q->widths[l + 1];
    int8_t *w = NULL;
    hpdl_status s = hpdl_cuda_alloc((void **)&w, (size_t)K * N);
    hpdl_quant_output o = hpdl_quant_mlp_layer_output(q, l);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&g->Wt[l], (size_t)N * g->ld[l]);
    if (s == HPDL_OK && cudaMemcpy(w, q->W[l], (size_t)K * N, cudaMemcpyHostToDevice) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl_cuda_quant_transpose_i8(K, N, w, N, g->Wt[l], g->ld[l], 0);
    if (s == HPDL_OK && cudaDeviceSynchronize() != cudaSuccess) s = HPDL_ERR_CUDA;
    hpdl_cuda_free(w);
    return s == HPDL_OK ? hpdl_cuda_quant_output_create(&g->out[l], &o, N) : s;
}

/* Uploads an integer-only model (q built from a ReLU MLP) for batches of up
   to max_batch rows. */
HPDL_API hpdl_status hpdl_cuda_quant_mlp_create(hpdl_cuda_quant_mlp *g, const hpdl_quant_mlp *q, int max_batch,
                                                hpdl_quant_algo algo) {
    hpdl_cuda_quant_mlp made;
    size_t big = 0;
    int l, L;
    hpdl_status s = HPDL_OK;
    if (!g || !q || q->n_layers < 1 || !q->W[0] || max_batch < 1 || (int)algo < (int)HPDL_QUANT_AUTO ||
        (int)algo > (int)HPDL_QUANT_DP4A)
        return HPDL_ERR_INVALID;
    if (!q->integer) return HPDL_ERR_UNSUPPORTED;
    L = q->n_layers;
    memset(&made, 0, sizeof made);
    made.n_layers = L;
    made.max_batch = max_batch;
    made.algo = algo;
    made.logit_scale = q->logit_scale;
    memcpy(made.widths, q->widths, sizeof made.widths);
    memcpy(made.x_params, q->x_params, sizeof made.x_params);
    for (l = 0; l < L; l++) {
        made.ld[l] = (q->widths[l] + 15) / 16 * 16;
        big = (size_t)max_batch * made.ld[l] > big ? (size_t)max_batch * made.ld[l] : big;
    }
    for (l = 0; s == HPDL_OK && l < L; l++) s = hpdl__cuda_quant_mlp_weights(&made, q, l);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.act[0], big);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.act[1], big);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.logits, (size_t)max_batch * q->widths[L] * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.hits, sizeof *made.hits);
    if (s != HPDL_OK) { hpdl_cuda_quant_mlp_destroy(&made); return s; }
    *g = made;
    return HPDL_OK;
}

/* int32 logits of a batch (X: batch x widths[0] floats on the device) into
   g->logits (batch x classes), the same as the CPU's w->logits. */
HPDL_API hpdl_status hpdl_cuda_quant_mlp_forward(hpdl_cuda_quant_mlp *g, int batch, const float *X, cudaStream_t stream) {
    int l, L;
    hpdl_status s;
    if (!g || !g->logits || !X || batch < 1 || batch > g->max_batch) return HPDL_ERR_INVALID;
    L = g->n_layers;
    s = hpdl_cuda_quant_quantize_f32(batch, g->widths[0], X, g->widths[0], g->x_params[0], g->act[0], g->ld[0], stream);
    for (l = 0; s == HPDL_OK && l < L; l++) {
        int n_in = g->widths[l], n_out = g->widths[l + 1];
        const int8_t *in = g->act[l % 2];
        if (l < L - 1)
            s = hpdl_cuda_quant_gemm_requant_nt_i8(g->algo, batch, n_out, n_in, in, g->ld[l], g->x_params[l].zero_point,
                                                   g->Wt[l], g->ld[l], 0, &g->out[l], g->act[(l + 1) % 2], g->ld[l + 1],
                                                   stream);
        else
            s = hpdl_cuda_quant_gemm_requant_nt_i32(g->algo, batch, n_out, n_in, in, g->ld[l], g->x_params[l].zero_point,
                                                    g->Wt[l], g->ld[l], 0, &g->out[l], g->logits, n_out, stream);
    }
    return s;
}

/* Test accuracy over n rows of X (device floats) and labels (device int32,
   each in [0, classes): not checked here); waits for the stream. */
HPDL_API hpdl_status hpdl_cuda_quant_mlp_accuracy(hpdl_cuda_quant_mlp *g, int64_t n, const float *X, const int32_t *labels,
                                                  double *accuracy, cudaStream_t stream) {
    unsigned long long hits = 0;
    int64_t i0;
    hpdl_status s = HPDL_OK;
    int classes;
    if (!g || !g->hits || !X || !labels || !accuracy || n < 1) return HPDL_ERR_INVALID;
    classes = g->widths[g->n_layers];
    HPDL_CUDA_TRY(cudaMemsetAsync(g->hits, 0, sizeof *g->hits, stream));
    for (i0 = 0; s == HPDL_OK && i0 < n; i0 += g->max_batch) {
        int batch = (int)(n - i0 < g->max_batch ? n - i0 : g->max_batch);
        s = hpdl_cuda_quant_mlp_forward(g, batch, X + (size_t)i0 * g->widths[0], stream);
        if (s == HPDL_OK) {
            hpdl__qargmax_hits<<<(unsigned)(batch + 255) / 256, 256, 0, stream>>>(batch, classes, g->logits, labels + i0,
                                                                                g->hits);
            HPDL_CUDA_TRY_LAUNCH();
        }
    }
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpyAsync(&hits, g->hits, sizeof hits, cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    *accuracy = (double)hits / (double)n;
    return HPDL_OK;
}

#endif /* HPDL_CUDA_QUANT_CUH */
