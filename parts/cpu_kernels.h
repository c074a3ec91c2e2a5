/* CPU reference kernels (spliced into hpdl.h): vectors, GEMM, matrix power,
   activations, softmax cross-entropy, the MLP, and the IDX (MNIST) loader.

   Each family is a macro HPDL_DEFINE_<FAMILY>(SUFFIX, T, ACC_T, LOAD, STORE)
   that generates hpdl_<op>_<SUFFIX> for storage type T, computing in ACC_T.
   ACC_T must be one token (float, double, or a typedef) because the shared
   GEMM core is named after it (hpdl__gemm_blocked_float, ..._double). To add
   a type, instantiate every family for it, as HPDL_FOR_EACH_FLOAT_TYPE does. */

#include <limits.h>

/* Instantiates a family for the four standard types. */
#define HPDL_FOR_EACH_FLOAT_TYPE(DEFINE)                                      \
    DEFINE(f32, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)                 \
    DEFINE(f64, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)               \
    DEFINE(f16, hpdl_f16, float, HPDL_LOAD_F16, HPDL_STORE_F16)               \
    DEFINE(bf16, hpdl_bf16, float, HPDL_LOAD_BF16, HPDL_STORE_BF16)

typedef enum hpdl_transpose { HPDL_NO_TRANS = 0, HPDL_TRANS = 1 } hpdl_transpose;
typedef enum hpdl_activation { HPDL_ACT_SIGMOID = 0, HPDL_ACT_RELU = 1 } hpdl_activation;

/* ------------------------------------------------------------------------ */
/* Shared helpers (type-independent)                                         */
/* ------------------------------------------------------------------------ */

/* n >= 0, and the pointers are set unless the vector is empty. */
static inline int hpdl__vec_args_ok(int64_t n, const void *a, const void *b, const void *c) {
    return n >= 0 && (n == 0 || (a && b && c));
}

/* Every label is a class index in [0, classes). */
static inline int hpdl__labels_ok(int64_t n, const int32_t *labels, int classes) {
    int64_t i;
    if (!labels) return 0;
    for (i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes) return 0;
    return 1;
}

/* Offset of element (r, c) of op(X), X row-major with leading dimension ld. */
static inline size_t hpdl__op_offset(hpdl_transpose t, int ld, int r, int c) {
    return t == HPDL_TRANS ? (size_t)c * (size_t)ld + (size_t)r : (size_t)r * (size_t)ld + (size_t)c;
}

/* Copies a rows x cols block of elem-byte elements between row-major views. */
static inline void hpdl__copy_rows(void *dst, int ldd, const void *src, int lds, int rows, int cols, size_t elem) {
    int r;
    for (r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * (size_t)ldd * elem, (const char *)src + (size_t)r * (size_t)lds * elem,
               (size_t)cols * elem);
}

/* Whether two row-major n x n views share any byte. */
static inline int hpdl__square_views_overlap(const void *a, int lda, const void *b, int ldb, int n, size_t elem) {
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    uintptr_t a1 = a0 + ((size_t)(n - 1) * (size_t)lda + (size_t)n) * elem;
    uintptr_t b1 = b0 + ((size_t)(n - 1) * (size_t)ldb + (size_t)n) * elem;
    return n > 0 && a0 < b1 && b0 < a1;
}

/* Logistic function without overflow: exp only ever sees -|x|. */
static inline double hpdl__sigmoid(double x) {
    double e;
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    e = exp(x);
    return e / (1.0 + e);
}

/* ------------------------------------------------------------------------ */
/* Vectors                                                                   */
/* ------------------------------------------------------------------------ */

/* c = a + b and y += alpha*x; outputs may alias inputs element for element. */
#define HPDL_DEFINE_VEC(SUFFIX, T, ACC_T, LOAD, STORE)                         \
    HPDL_API hpdl_status hpdl_vec_add_##SUFFIX(int64_t n, const T *a, const T *b, T *c) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, a, b, c)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) c[i] = STORE((ACC_T)LOAD(a[i]) + (ACC_T)LOAD(b[i])); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_vec_axpy_##SUFFIX(int64_t n, ACC_T alpha, const T *x, T *y) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) y[i] = STORE((ACC_T)LOAD(y[i]) + alpha * (ACC_T)LOAD(x[i])); \
        return HPDL_OK;                                                        \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_VEC)

/* ------------------------------------------------------------------------ */
/* GEMM: C = alpha*op(A)*op(B) + beta*C, row-major, cache-blocked            */
/* ------------------------------------------------------------------------ */

/* Blocks of op(A) (MC x KC) and op(B) (KC x NC) are packed, converted to the
   accumulation type, into contiguous buffers; an MC x NC accumulator collects
   the whole K sum, so C (any storage type) is read and rounded once. Packed
   rows are padded with zeros to a multiple of HPDL__GEMM_LANES, so the inner
   loops have a fixed trip count and vectorise even at -O2. */
#define HPDL__GEMM_MC 64
#define HPDL__GEMM_KC 128
#define HPDL__GEMM_NC 256
#define HPDL__GEMM_LANES 16

static inline int hpdl__min_int(int a, int b) { return a < b ? a : b; }
static inline int hpdl__round_up(int x, int m) { return (x + m - 1) / m * m; }

/* A matrix stored rows x cols (op(X) of size r x c, transposed or not). */
static inline hpdl_status hpdl__check_op(const void *X, hpdl_transpose t, int r, int c, int ld) {
    if (t != HPDL_NO_TRANS && t != HPDL_TRANS) return HPDL_ERR_INVALID;
    return t == HPDL_TRANS ? hpdl__check_matrix(X, c, r, ld) : hpdl__check_matrix(X, r, c, ld);
}

static inline hpdl_status hpdl__gemm_check(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, const void *A,
                                           int lda, const void *B, int ldb, const void *C, int ldc) {
    if (M < 0 || N < 0 || K < 0) return HPDL_ERR_INVALID;
    if (hpdl__check_op(A, ta, M, K, lda) != HPDL_OK || hpdl__check_op(B, tb, K, N, ldb) != HPDL_OK)
        return HPDL_ERR_INVALID;
    return hpdl__check_matrix(C, M, N, ldc);
}

/* The compute core, one per accumulation type. pack copies op(X)[r0.., c0..]
   (rows x cols) into dst (row stride ldd, zero-padded); store writes
   C[r0.., c0..] = alpha*acc + beta*C (acc NULL: zero; beta 0: C not read). */
#define HPDL__DEFINE_GEMM_CORE(ACC)                                            \
    typedef void (*hpdl__gemm_pack_##ACC)(const void *X, int ld, hpdl_transpose t, int r0, int c0, \
                                          int rows, int cols, ACC *dst, int ldd); \
    typedef void (*hpdl__gemm_store_##ACC)(void *C, int ldc, int r0, int c0, int rows, int cols, \
                                           const ACC *acc, int ldacc, ACC alpha, ACC beta); \
    static inline void hpdl__gemm_row4_##ACC(int ncp, ACC *HPDL_RESTRICT c, const ACC *HPDL_RESTRICT b, \
                                             size_t ldb, const ACC *a) {       \
        int j0, j;                                                             \
        for (j0 = 0; j0 < ncp; j0 += HPDL__GEMM_LANES)                         \
            for (j = j0; j < j0 + HPDL__GEMM_LANES; j++)                       \
                c[j] += a[0] * b[j] + a[1] * b[ldb + j] + a[2] * b[2 * ldb + j] + a[3] * b[3 * ldb + j]; \
    }                                                                          \
    static inline void hpdl__gemm_row1_##ACC(int ncp, ACC *HPDL_RESTRICT c, const ACC *HPDL_RESTRICT b, ACC a) { \
        int j0, j;                                                             \
        for (j0 = 0; j0 < ncp; j0 += HPDL__GEMM_LANES)                         \
            for (j = j0; j < j0 + HPDL__GEMM_LANES; j++) c[j] += a * b[j];     \
    }                                                                          \
    /* acc (mc x ncp) += Ap (mc x kc) * Bp (kc x ncp), four k at a time. */    \
    static inline void hpdl__gemm_tile_##ACC(int mc, int kc, int ncp, const ACC *Ap, const ACC *Bp, ACC *acc) { \
        int i, p;                                                              \
        for (i = 0; i < mc; i++) {                                             \
            const ACC *a = Ap + (size_t)i * (size_t)kc;                        \
            ACC *c = acc + (size_t)i * (size_t)ncp;                            \
            for (p = 0; p + 4 <= kc; p += 4) hpdl__gemm_row4_##ACC(ncp, c, Bp + (size_t)p * ncp, (size_t)ncp, a + p); \
            for (; p < kc; p++) hpdl__gemm_row1_##ACC(ncp, c, Bp + (size_t)p * ncp, a[p]); \
        }                                                                      \
    }                                                                          \
    /* Blocks over i (MC), j (NC) and k (KC); arguments already validated. */  \
    static inline hpdl_status hpdl__gemm_blocked_##ACC(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, \
            ACC alpha, const void *A, int lda, const void *B, int ldb, ACC beta, void *C, int ldc, \
            hpdl__gemm_pack_##ACC pack, hpdl__gemm_store_##ACC store) {        \
        int mcap = hpdl__min_int(M, HPDL__GEMM_MC), kcap = hpdl__min_int(K, HPDL__GEMM_KC); \
        int ncap = hpdl__round_up(hpdl__min_int(N, HPDL__GEMM_NC), HPDL__GEMM_LANES); \
        int i0, j0, p0;                                                        \
        ACC *Ap, *Bp, *acc;                                                    \
        if (M == 0 || N == 0) return HPDL_OK;                                  \
        if (K == 0 || alpha == 0) { /* BLAS: A and B are not read */          \
            store(C, ldc, 0, 0, M, N, NULL, 0, alpha, beta);                   \
            return HPDL_OK;                                                    \
        }                                                                      \
        Ap = (ACC *)hpdl_alloc((size_t)mcap * kcap + (size_t)kcap * ncap + (size_t)mcap * ncap, sizeof(ACC)); \
        if (!Ap) return HPDL_ERR_NOMEM;                                        \
        Bp = Ap + (size_t)mcap * kcap;                                         \
        acc = Bp + (size_t)kcap * ncap;                                        \
        for (i0 = 0; i0 < M; i0 += HPDL__GEMM_MC) {                            \
            int mc = hpdl__min_int(M - i0, HPDL__GEMM_MC);                     \
            for (j0 = 0; j0 < N; j0 += HPDL__GEMM_NC) {                        \
                int nc = hpdl__min_int(N - j0, HPDL__GEMM_NC), ncp = hpdl__round_up(nc, HPDL__GEMM_LANES); \
                memset(acc, 0, (size_t)mc * ncp * sizeof(ACC));                \
                for (p0 = 0; p0 < K; p0 += HPDL__GEMM_KC) {                    \
                    int kc = hpdl__min_int(K - p0, HPDL__GEMM_KC);             \
                    pack(A, lda, ta, i0, p0, mc, kc, Ap, kc);                  \
                    pack(B, ldb, tb, p0, j0, kc, nc, Bp, ncp);                 \
                    hpdl__gemm_tile_##ACC(mc, kc, ncp, Ap, Bp, acc);           \
                }                                                              \
                store(C, ldc, i0, j0, mc, nc, acc, ncp, alpha, beta);          \
            }                                                                  \
        }                                                                      \
        HPDL_FREE(Ap);                                                         \
        return HPDL_OK;                                                        \
    }

HPDL__DEFINE_GEMM_CORE(float)
HPDL__DEFINE_GEMM_CORE(double)

/* The typed part of GEMM: packing (LOAD), storing (STORE), validation. */
#define HPDL_DEFINE_GEMM(SUFFIX, T, ACC_T, LOAD, STORE)                        \
    static inline void hpdl__gemm_pack_##SUFFIX(const void *X, int ld, hpdl_transpose t, int r0, int c0, \
                                                int rows, int cols, ACC_T *dst, int ldd) { \
        const T *x = (const T *)X;                                             \
        int r, c;                                                              \
        for (r = 0; r < rows; r++) {                                           \
            ACC_T *d = dst + (size_t)r * (size_t)ldd;                          \
            for (c = 0; c < cols; c++) d[c] = (ACC_T)LOAD(x[hpdl__op_offset(t, ld, r0 + r, c0 + c)]); \
            for (; c < ldd; c++) d[c] = 0;                                     \
        }                                                                      \
    }                                                                          \
    static inline void hpdl__gemm_store_##SUFFIX(void *C, int ldc, int r0, int c0, int rows, int cols, \
                                                 const ACC_T *acc, int ldacc, ACC_T alpha, ACC_T beta) { \
        int r, c;                                                              \
        for (r = 0; r < rows; r++) {                                           \
            T *y = (T *)C + (size_t)(r0 + r) * (size_t)ldc + c0;               \
            for (c = 0; c < cols; c++) {                                       \
                ACC_T v = acc ? alpha * acc[(size_t)r * ldacc + c] : (ACC_T)0; \
                if (beta != 0) v += beta * (ACC_T)LOAD(y[c]);                  \
                y[c] = STORE(v);                                               \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    HPDL_API hpdl_status hpdl_gemm_##SUFFIX(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, \
                                            ACC_T alpha, const T *A, int lda, const T *B, int ldb, \
                                            ACC_T beta, T *C, int ldc) {       \
        if (hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc) != HPDL_OK) return HPDL_ERR_INVALID; \
        return hpdl__gemm_blocked_##ACC_T(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, \
                                          hpdl__gemm_pack_##SUFFIX, hpdl__gemm_store_##SUFFIX); \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_GEMM)

/* ------------------------------------------------------------------------ */
/* Matrix power by repeated squaring                                         */
/* ------------------------------------------------------------------------ */

/* out = A^power (n x n). floor(log2 power) squarings plus one product per
   further set bit; intermediates are stored in T. out must not overlap A. */
#define HPDL_DEFINE_MATPOW(SUFFIX, T, ACC_T, LOAD, STORE)                      \
    static inline void hpdl__identity_##SUFFIX(int n, T *out, int ldo) {       \
        int r, c;                                                              \
        for (r = 0; r < n; r++)                                                \
            for (c = 0; c < n; c++) out[(size_t)r * ldo + c] = STORE(r == c ? 1 : 0); \
    }                                                                          \
    /* n x n matrices with ld n: c = a*b */                                    \
    static inline hpdl_status hpdl__square_mul_##SUFFIX(int n, const T *a, const T *b, T *c) { \
        return hpdl_gemm_##SUFFIX(HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, 1, a, n, b, n, 0, c, n); \
    }                                                                          \
    /* ws holds three n x n matrices; power >= 1. */                           \
    static inline hpdl_status hpdl__matpow_squaring_##SUFFIX(int n, int power, T *ws, T **result) { \
        T *base = ws, *res = ws + (size_t)n * n, *tmp = res + (size_t)n * n, *swap; \
        int have_res = 0;                                                      \
        hpdl_status st = HPDL_OK;                                              \
        for (;;) {                                                             \
            if (power & 1) {                                                   \
                if (have_res) st = hpdl__square_mul_##SUFFIX(n, res, base, tmp); \
                else memcpy(tmp, base, (size_t)n * n * sizeof(T));             \
                swap = res; res = tmp; tmp = swap;                             \
                have_res = 1;                                                  \
            }                                                                  \
            power >>= 1;                                                       \
            if (!power || st != HPDL_OK) break;                                \
            st = hpdl__square_mul_##SUFFIX(n, base, base, tmp);                \
            swap = base; base = tmp; tmp = swap;                               \
        }                                                                      \
        *result = res;                                                         \
        return st;                                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_matpow_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo) { \
        T *ws, *res;                                                           \
        hpdl_status st;                                                        \
        if (power < 0 || hpdl__check_matrix(A, n, n, lda) != HPDL_OK ||        \
            hpdl__check_matrix(out, n, n, ldo) != HPDL_OK ||                   \
            hpdl__square_views_overlap(A, lda, out, ldo, n, sizeof(T)))        \
            return HPDL_ERR_INVALID;                                           \
        if (n == 0) return HPDL_OK;                                            \
        if (power == 0) { hpdl__identity_##SUFFIX(n, out, ldo); return HPDL_OK; } \
        if (power == 1) { hpdl__copy_rows(out, ldo, A, lda, n, n, sizeof(T)); return HPDL_OK; } \
        ws = (T *)hpdl_alloc((size_t)3 * n * n, sizeof(T));                    \
        if (!ws) return HPDL_ERR_NOMEM;                                        \
        hpdl__copy_rows(ws, n, A, lda, n, n, sizeof(T));                       \
        st = hpdl__matpow_squaring_##SUFFIX(n, power, ws, &res);               \
        if (st == HPDL_OK) hpdl__copy_rows(out, ldo, res, n, n, n, sizeof(T)); \
        HPDL_FREE(ws);                                                         \
        return st;                                                             \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MATPOW)

/* ------------------------------------------------------------------------ */
/* Activations and their gradients (outputs may alias inputs)                */
/* ------------------------------------------------------------------------ */

/* relu: y = max(x, 0); relu_grad: dx = dy where y > 0, else 0.
   sigmoid: y = 1/(1+exp(-x)), finite for any x; sigmoid_grad: dx = dy*y*(1-y). */
#define HPDL_DEFINE_ACTIVATIONS(SUFFIX, T, ACC_T, LOAD, STORE)                 \
    HPDL_API hpdl_status hpdl_relu_##SUFFIX(int64_t n, const T *x, T *y) {     \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) {                                              \
            ACC_T v = (ACC_T)LOAD(x[i]);                                       \
            y[i] = STORE(v < 0 ? (ACC_T)0 : v);                                \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_relu_grad_##SUFFIX(int64_t n, const T *y, const T *dy, T *dx) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, y, dy, dx)) return HPDL_ERR_INVALID;         \
        for (i = 0; i < n; i++) dx[i] = STORE((ACC_T)LOAD(y[i]) > 0 ? (ACC_T)LOAD(dy[i]) : (ACC_T)0); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_sigmoid_##SUFFIX(int64_t n, const T *x, T *y) {  \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) y[i] = STORE(hpdl__sigmoid((double)LOAD(x[i]))); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_sigmoid_grad_##SUFFIX(int64_t n, const T *y, const T *dy, T *dx) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, y, dy, dx)) return HPDL_ERR_INVALID;         \
        for (i = 0; i < n; i++) {                                              \
            ACC_T s = (ACC_T)LOAD(y[i]);                                       \
            dx[i] = STORE((ACC_T)LOAD(dy[i]) * s * (1 - s));                   \
        }                                                                      \
        return HPDL_OK;                                                        \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_ACTIVATIONS)

/* ------------------------------------------------------------------------ */
/* Softmax + cross-entropy                                                   */
/* ------------------------------------------------------------------------ */

/* loss = mean over rows of -log softmax(logits)[label], by log-sum-exp after
   subtracting the row maximum (finite for any finite logits), in double.
   grad (optional; may equal logits when ldg == ld) = (softmax - onehot)/rows.
   Labels are all checked before anything is written. */
#define HPDL_DEFINE_SOFTMAX_XENT(SUFFIX, T, ACC_T, LOAD, STORE)                \
    /* One row: returns -log p[label]; writes grad row g (if any) scaled. */   \
    static inline double hpdl__xent_row_##SUFFIX(int cols, const T *x, int label, T *g, double scale) { \
        double mx = (double)LOAD(x[0]), sum = 0.0, xl = (double)LOAD(x[label]); \
        int j;                                                                 \
        for (j = 1; j < cols; j++) mx = (double)LOAD(x[j]) > mx ? (double)LOAD(x[j]) : mx; \
        for (j = 0; j < cols; j++) sum += exp((double)LOAD(x[j]) - mx);        \
        for (j = 0; g && j < cols; j++)                                        \
            g[j] = STORE(scale * (exp((double)LOAD(x[j]) - mx) / sum - (j == label ? 1.0 : 0.0))); \
        return mx + log(sum) - xl;                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_softmax_xent_##SUFFIX(int rows, int cols, const T *logits, int ld, \
                                                    const int32_t *labels, T *grad, int ldg, double *loss) { \
        double total = 0.0;                                                    \
        int r;                                                                 \
        if (rows < 1 || cols < 1 || !loss || hpdl__check_matrix(logits, rows, cols, ld) != HPDL_OK || \
            (grad && hpdl__check_matrix(grad, rows, cols, ldg) != HPDL_OK) || \
            !hpdl__labels_ok(rows, labels, cols))                              \
            return HPDL_ERR_INVALID;                                           \
        for (r = 0; r < rows; r++)                                             \
            total += hpdl__xent_row_##SUFFIX(cols, logits + (size_t)r * ld, labels[r], \
                                             grad ? grad + (size_t)r * ldg : NULL, 1.0 / rows); \
        *loss = total / rows;                                                  \
        return HPDL_OK;                                                        \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_SOFTMAX_XENT)

/* ------------------------------------------------------------------------ */
/* MLP: hidden layers act(X·W + b), softmax cross-entropy output, SGD        */
/* ------------------------------------------------------------------------ */

#define HPDL_MLP_MAX_LAYERS 16

/* 2..HPDL_MLP_MAX_LAYERS+1 widths, each at least 1. */
static inline int hpdl__mlp_widths_ok(int n_widths, const int *widths) {
    int i;
    if (!widths || n_widths < 2 || n_widths > HPDL_MLP_MAX_LAYERS + 1) return 0;
    for (i = 0; i < n_widths; i++)
        if (widths[i] < 1) return 0;
    return 1;
}

static inline int hpdl__activation_ok(hpdl_activation act) {
    return act == HPDL_ACT_SIGMOID || act == HPDL_ACT_RELU;
}

static inline int hpdl__same_widths(int n_layers, const int *a, int n_layers_b, const int *b) {
    return n_layers == n_layers_b && memcmp(a, b, (size_t)(n_layers + 1) * sizeof *a) == 0;
}

/* Learning rate and L2 strength: finite and not negative. */
static inline int hpdl__hyper_ok(double lr, double l2) {
    return lr >= 0 && l2 >= 0 && lr <= DBL_MAX && l2 <= DBL_MAX;
}

/* Model: weights, biases, create (seeded), copy, SGD update. */
#define HPDL_DEFINE_MLP_MODEL(SUFFIX, T, ACC_T, LOAD, STORE)                   \
    typedef struct hpdl_mlp_##SUFFIX {                                         \
        int n_layers;                             /* weight layers = widths - 1 */ \
        int widths[HPDL_MLP_MAX_LAYERS + 1];                                   \
        hpdl_activation act;                      /* hidden layers; output: softmax */ \
        T *W[HPDL_MLP_MAX_LAYERS];                /* widths[l] x widths[l+1]: Y = X·W + b */ \
        T *b[HPDL_MLP_MAX_LAYERS];                /* widths[l+1] */            \
    } hpdl_mlp_##SUFFIX;                                                       \
    HPDL_API void hpdl_mlp_destroy_##SUFFIX(hpdl_mlp_##SUFFIX *m) {            \
        int l;                                                                 \
        if (!m) return;                                                        \
        for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) { HPDL_FREE(m->W[l]); HPDL_FREE(m->b[l]); } \
        memset(m, 0, sizeof *m);                                               \
    }                                                                          \
    /* A usable model: sane widths and activation, every array allocated. */   \
    static inline int hpdl__mlp_ok_##SUFFIX(const hpdl_mlp_##SUFFIX *m) {      \
        int l;                                                                 \
        if (!m || !hpdl__mlp_widths_ok(m->n_layers + 1, m->widths) || !hpdl__activation_ok(m->act)) return 0; \
        for (l = 0; l < m->n_layers; l++)                                      \
            if (!m->W[l] || !m->b[l]) return 0;                                \
        return 1;                                                              \
    }                                                                          \
    /* Zero-filled model of the given (already validated) shape into *m. */    \
    static inline hpdl_status hpdl__mlp_alloc_##SUFFIX(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                                       hpdl_activation act) { \
        int l;                                                                 \
        memset(m, 0, sizeof *m);                                               \
        m->n_layers = n_widths - 1;                                            \
        m->act = act;                                                          \
        memcpy(m->widths, widths, (size_t)n_widths * sizeof *widths);          \
        for (l = 0; l < m->n_layers; l++) {                                    \
            size_t nw = (size_t)widths[l] * (size_t)widths[l + 1];             \
            m->W[l] = (T *)hpdl_alloc(nw, sizeof(T));                          \
            m->b[l] = (T *)hpdl_alloc((size_t)widths[l + 1], sizeof(T));       \
            if (!m->W[l] || !m->b[l]) { hpdl_mlp_destroy_##SUFFIX(m); return HPDL_ERR_NOMEM; } \
            memset(m->W[l], 0, nw * sizeof(T)); /* all-zero bits: +0 in every type */ \
            memset(m->b[l], 0, (size_t)widths[l + 1] * sizeof(T));             \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_create_zero_##SUFFIX(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                                       hpdl_activation act) { \
        hpdl_mlp_##SUFFIX made;                                                \
        hpdl_status st;                                                        \
        if (!m || !hpdl__mlp_widths_ok(n_widths, widths) || !hpdl__activation_ok(act)) return HPDL_ERR_INVALID; \
        st = hpdl__mlp_alloc_##SUFFIX(&made, n_widths, widths, act);           \
        if (st == HPDL_OK) *m = made;                                          \
        return st;                                                             \
    }                                                                          \
    /* He (ReLU: sqrt(2/in)) or Xavier-like (sigmoid: sqrt(1/in)) normal weights, \
       drawn from one generator, layer by layer in row-major order; b = 0. */  \
    HPDL_API hpdl_status hpdl_mlp_create_##SUFFIX(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                                  hpdl_activation act, uint64_t seed) { \
        hpdl_status st = hpdl_mlp_create_zero_##SUFFIX(m, n_widths, widths, act); \
        hpdl_rng rng;                                                          \
        int l;                                                                 \
        size_t i;                                                              \
        if (st != HPDL_OK) return st;                                          \
        hpdl_rng_seed(&rng, seed);                                             \
        for (l = 0; l < m->n_layers; l++) {                                    \
            double scale = sqrt((act == HPDL_ACT_RELU ? 2.0 : 1.0) / widths[l]); \
            for (i = 0; i < (size_t)widths[l] * (size_t)widths[l + 1]; i++)    \
                m->W[l][i] = STORE(scale * hpdl_rng_normal(&rng));             \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_copy_##SUFFIX(hpdl_mlp_##SUFFIX *dst, const hpdl_mlp_##SUFFIX *src) { \
        int l;                                                                 \
        if (!hpdl__mlp_ok_##SUFFIX(dst) || !hpdl__mlp_ok_##SUFFIX(src) ||      \
            !hpdl__same_widths(dst->n_layers, dst->widths, src->n_layers, src->widths)) \
            return HPDL_ERR_INVALID;                                           \
        dst->act = src->act;                                                   \
        for (l = 0; l < src->n_layers; l++) {                                  \
            memcpy(dst->W[l], src->W[l], (size_t)src->widths[l] * src->widths[l + 1] * sizeof(T)); \
            memcpy(dst->b[l], src->b[l], (size_t)src->widths[l + 1] * sizeof(T)); \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    /* w -= lr*(g + l2*w) over n elements */                                   \
    static inline void hpdl__sgd_update_##SUFFIX(size_t n, T *w, const T *g, ACC_T lr, ACC_T l2) { \
        size_t i;                                                              \
        for (i = 0; i < n; i++) {                                              \
            ACC_T v = (ACC_T)LOAD(w[i]);                                       \
            w[i] = STORE(v - lr * ((ACC_T)LOAD(g[i]) + l2 * v));               \
        }                                                                      \
    }                                                                          \
    /* W -= lr*(dW + l2*W); b -= lr*db (biases are not regularised). */        \
    HPDL_API hpdl_status hpdl_mlp_sgd_##SUFFIX(hpdl_mlp_##SUFFIX *m, const hpdl_mlp_##SUFFIX *grad, ACC_T lr, \
                                               ACC_T l2) {                     \
        int l;                                                                 \
        if (!hpdl__mlp_ok_##SUFFIX(m) || !hpdl__mlp_ok_##SUFFIX(grad) || !hpdl__hyper_ok(lr, l2) || \
            !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths)) \
            return HPDL_ERR_INVALID;                                           \
        for (l = 0; l < m->n_layers; l++) {                                    \
            hpdl__sgd_update_##SUFFIX((size_t)m->widths[l] * m->widths[l + 1], m->W[l], grad->W[l], lr, l2); \
            hpdl__sgd_update_##SUFFIX((size_t)m->widths[l + 1], m->b[l], grad->b[l], lr, 0); \
        }                                                                      \
        return HPDL_OK;                                                        \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MLP_MODEL)

/* Training: workspace, forward, backward, train step, accuracy.
   act[l] (l >= 1) holds layer l's output for the batch, act[n_layers] the
   logits; act[0] stays NULL (the input X is read in place). delta[l] holds
   d(loss)/d(pre-activation of layer l), same shapes. */
#define HPDL_DEFINE_MLP_TRAIN(SUFFIX, T, ACC_T, LOAD, STORE)                   \
    typedef struct hpdl_mlp_work_##SUFFIX {                                    \
        int max_batch;                                                         \
        T *act[HPDL_MLP_MAX_LAYERS + 1];                                       \
        T *delta[HPDL_MLP_MAX_LAYERS + 1];                                     \
        int n_layers;                             /* shape it was made for */  \
        int widths[HPDL_MLP_MAX_LAYERS + 1];                                   \
    } hpdl_mlp_work_##SUFFIX;                                                  \
    HPDL_API void hpdl_mlp_work_destroy_##SUFFIX(hpdl_mlp_work_##SUFFIX *w) {  \
        int l;                                                                 \
        if (!w) return;                                                        \
        for (l = 0; l <= HPDL_MLP_MAX_LAYERS; l++) { HPDL_FREE(w->act[l]); HPDL_FREE(w->delta[l]); } \
        memset(w, 0, sizeof *w);                                               \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_work_create_##SUFFIX(hpdl_mlp_work_##SUFFIX *w, const hpdl_mlp_##SUFFIX *m, \
                                                       int max_batch) {       \
        hpdl_mlp_work_##SUFFIX made;                                           \
        int l;                                                                 \
        if (!w || !hpdl__mlp_ok_##SUFFIX(m) || max_batch < 1) return HPDL_ERR_INVALID; \
        memset(&made, 0, sizeof made);                                         \
        made.max_batch = max_batch;                                            \
        made.n_layers = m->n_layers;                                           \
        memcpy(made.widths, m->widths, sizeof made.widths);                    \
        for (l = 1; l <= m->n_layers; l++) {                                   \
            made.act[l] = (T *)hpdl_alloc((size_t)max_batch * m->widths[l], sizeof(T)); \
            made.delta[l] = (T *)hpdl_alloc((size_t)max_batch * m->widths[l], sizeof(T)); \
            if (!made.act[l] || !made.delta[l]) { hpdl_mlp_work_destroy_##SUFFIX(&made); return HPDL_ERR_NOMEM; } \
        }                                                                      \
        *w = made;                                                             \
        return HPDL_OK;                                                        \
    }                                                                          \
    /* Model, workspace made for it, batch in [1, max_batch], input given. */  \
    static inline int hpdl__mlp_run_ok_##SUFFIX(const hpdl_mlp_##SUFFIX *m, const hpdl_mlp_work_##SUFFIX *w, \
                                                int batch, const T *X) {       \
        int l;                                                                 \
        if (!hpdl__mlp_ok_##SUFFIX(m) || !w || !X || batch < 1 || batch > w->max_batch || \
            !hpdl__same_widths(m->n_layers, m->widths, w->n_layers, w->widths)) \
            return 0;                                                          \
        for (l = 1; l <= m->n_layers; l++)                                     \
            if (!w->act[l] || !w->delta[l]) return 0;                          \
        return 1;                                                              \
    }                                                                          \
    /* out = in·W + b, then the activation when hidden. */                     \
    static inline hpdl_status hpdl__mlp_layer_##SUFFIX(const hpdl_mlp_##SUFFIX *m, int l, int batch, const T *in, \
                                                       T *out) {              \
        int n_in = m->widths[l], n_out = m->widths[l + 1], r;                  \
        int64_t n = (int64_t)batch * n_out;                                    \
        hpdl_status st = hpdl_gemm_##SUFFIX(HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n_out, n_in, 1, in, n_in, \
                                            m->W[l], n_out, 0, out, n_out);    \
        for (r = 0; st == HPDL_OK && r < batch; r++)                           \
            hpdl_vec_add_##SUFFIX(n_out, out + (size_t)r * n_out, m->b[l], out + (size_t)r * n_out); \
        if (st != HPDL_OK || l == m->n_layers - 1) return st;                  \
        return m->act == HPDL_ACT_RELU ? hpdl_relu_##SUFFIX(n, out, out) : hpdl_sigmoid_##SUFFIX(n, out, out); \
    }                                                                          \
    /* Logits of the batch into w->act[n_layers] (batch x widths[n_layers]). */ \
    HPDL_API hpdl_status hpdl_mlp_forward_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                   int batch, const T *X) {    \
        hpdl_status st = HPDL_OK;                                              \
        int l;                                                                 \
        if (!hpdl__mlp_run_ok_##SUFFIX(m, w, batch, X)) return HPDL_ERR_INVALID; \
        for (l = 0; st == HPDL_OK && l < m->n_layers; l++)                     \
            st = hpdl__mlp_layer_##SUFFIX(m, l, batch, l ? w->act[l] : X, w->act[l + 1]); \
        return st;                                                             \
    }                                                                          \
    /* db[c] = sum over rows of d[r][c] */                                     \
    static inline void hpdl__column_sums_##SUFFIX(int rows, int cols, const T *d, T *db) { \
        int r, c;                                                              \
        for (c = 0; c < cols; c++) {                                           \
            ACC_T s = 0;                                                       \
            for (r = 0; r < rows; r++) s += (ACC_T)LOAD(d[(size_t)r * cols + c]); \
            db[c] = STORE(s);                                                  \
        }                                                                      \
    }                                                                          \
    /* Layer l's gradients from delta[l+1]; then delta[l] when l is hidden. */ \
    static inline hpdl_status hpdl__mlp_layer_back_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                            int l, int batch, const T *in, hpdl_mlp_##SUFFIX *grad) { \
        int n_in = m->widths[l], n_out = m->widths[l + 1];                     \
        int64_t n = (int64_t)batch * n_in;                                     \
        hpdl_status st = hpdl_gemm_##SUFFIX(HPDL_TRANS, HPDL_NO_TRANS, n_in, n_out, batch, 1, in, n_in, \
                                            w->delta[l + 1], n_out, 0, grad->W[l], n_out); \
        hpdl__column_sums_##SUFFIX(batch, n_out, w->delta[l + 1], grad->b[l]); \
        if (st != HPDL_OK || l == 0) return st;                                \
        st = hpdl_gemm_##SUFFIX(HPDL_NO_TRANS, HPDL_TRANS, batch, n_in, n_out, 1, w->delta[l + 1], n_out, \
                                m->W[l], n_out, 0, w->delta[l], n_in);         \
        if (st != HPDL_OK) return st;                                          \
        return m->act == HPDL_ACT_RELU ? hpdl_relu_grad_##SUFFIX(n, w->act[l], w->delta[l], w->delta[l]) \
                                       : hpdl_sigmoid_grad_##SUFFIX(n, w->act[l], w->delta[l], w->delta[l]); \
    }                                                                          \
    /* grad = d(mean cross-entropy)/d(parameters), no L2; loss may be NULL. */ \
    HPDL_API hpdl_status hpdl_mlp_backward_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                    int batch, const T *X, const int32_t *labels, \
                                                    hpdl_mlp_##SUFFIX *grad, double *loss) { \
        int L, l;                                                              \
        double batch_loss;                                                     \
        hpdl_status st;                                                        \
        if (!hpdl__mlp_run_ok_##SUFFIX(m, w, batch, X) || !hpdl__mlp_ok_##SUFFIX(grad) || \
            !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths) || \
            !hpdl__labels_ok(batch, labels, m->widths[m->n_layers]))           \
            return HPDL_ERR_INVALID;                                           \
        L = m->n_layers;                                                       \
        st = hpdl_mlp_forward_##SUFFIX(m, w, batch, X);                        \
        if (st == HPDL_OK)                                                     \
            st = hpdl_softmax_xent_##SUFFIX(batch, m->widths[L], w->act[L], m->widths[L], labels, w->delta[L], \
                                            m->widths[L], &batch_loss);        \
        for (l = L - 1; st == HPDL_OK && l >= 0; l--)                          \
            st = hpdl__mlp_layer_back_##SUFFIX(m, w, l, batch, l ? w->act[l] : X, grad); \
        if (st == HPDL_OK && loss) *loss = batch_loss;                         \
        return st;                                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_train_step_##SUFFIX(hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                      hpdl_mlp_##SUFFIX *grad, int batch, const T *X, \
                                                      const int32_t *labels, ACC_T lr, ACC_T l2, double *loss) { \
        hpdl_status st;                                                        \
        if (!hpdl__hyper_ok(lr, l2)) return HPDL_ERR_INVALID;                  \
        st = hpdl_mlp_backward_##SUFFIX(m, w, batch, X, labels, grad, loss);   \
        return st == HPDL_OK ? hpdl_mlp_sgd_##SUFFIX(m, grad, lr, l2) : st;    \
    }                                                                          \
    /* How many rows' largest logit (first on ties) is at their label. */     \
    static inline int64_t hpdl__argmax_hits_##SUFFIX(int rows, int cols, const T *logits, const int32_t *labels) { \
        int64_t hits = 0;                                                      \
        int r, c, best;                                                        \
        for (r = 0; r < rows; r++) {                                           \
            const T *x = logits + (size_t)r * cols;                            \
            for (c = 1, best = 0; c < cols; c++) best = LOAD(x[c]) > LOAD(x[best]) ? c : best; \
            hits += best == labels[r];                                         \
        }                                                                      \
        return hits;                                                           \
    }                                                                          \
    /* Fraction of the n rows of X classified as their label, in chunks of w->max_batch. */ \
    HPDL_API hpdl_status hpdl_mlp_accuracy_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                    int64_t n, const T *X, const int32_t *labels, \
                                                    double *accuracy) {        \
        int64_t i0, hits = 0;                                                  \
        hpdl_status st = HPDL_OK;                                              \
        if (n < 1 || !accuracy || !hpdl__mlp_run_ok_##SUFFIX(m, w, 1, X) ||    \
            !hpdl__labels_ok(n, labels, m->widths[m->n_layers]))               \
            return HPDL_ERR_INVALID;                                           \
        for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w->max_batch) {            \
            int batch = (int)(n - i0 < w->max_batch ? n - i0 : w->max_batch);  \
            st = hpdl_mlp_forward_##SUFFIX(m, w, batch, X + (size_t)i0 * m->widths[0]); \
            if (st == HPDL_OK)                                                 \
                hits += hpdl__argmax_hits_##SUFFIX(batch, m->widths[m->n_layers], w->act[m->n_layers], labels + i0); \
        }                                                                      \
        if (st == HPDL_OK) *accuracy = (double)hits / (double)n;               \
        return st;                                                             \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MLP_TRAIN)

/* ------------------------------------------------------------------------ */
/* IDX data sets (MNIST, Fashion-MNIST)                                      */
/* ------------------------------------------------------------------------ */

/* IDX: big-endian magic (2051 images: n, rows, cols; 2049 labels: n), then
   one unsigned byte per pixel or label. */
#define HPDL_IDX_IMAGES_MAGIC 2051u
#define HPDL_IDX_LABELS_MAGIC 2049u

typedef struct hpdl_dataset {
    int64_t n;
    int rows, cols;
    float *images;   /* n x rows*cols, scaled to [0, 1] */
    int32_t *labels; /* n */
} hpdl_dataset;

HPDL_API void hpdl_dataset_free(hpdl_dataset *d) {
    if (!d) return;
    HPDL_FREE(d->images);
    HPDL_FREE(d->labels);
    memset(d, 0, sizeof *d);
}

static inline uint32_t hpdl__be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Opens an IDX file and checks its header and size: magic, n_dims non-zero
   dimensions into dims, and exactly header + product(dims) bytes. Each
   failure is printed with the file, what was expected and what was found.
   On success *f is positioned at the first data byte. */
static inline hpdl_status hpdl__idx_open(const char *path, const char *what, uint32_t magic, int n_dims,
                                         uint32_t *dims, FILE **f) {
    unsigned char header[16];
    size_t header_len = 4 * (size_t)(n_dims + 1), got;
    uint64_t expected = header_len, items = 1;
    long found;
    int i;
    *f = fopen(path, "rb");
    if (!*f) {
        fprintf(stderr, "hpdl: %s: cannot open %s file: %s\n", path, what, strerror(errno));
        return HPDL_ERR_IO;
    }
    got = fread(header, 1, header_len, *f);
    if (got >= 4 && hpdl__be32(header) != magic) { /* the wrong kind of file says so first */
        fprintf(stderr, "hpdl: %s: bad magic: expected %u (%s), found %u\n", path, (unsigned)magic, what,
                (unsigned)hpdl__be32(header));
        goto format_error;
    }
    if (got < header_len) {
        fprintf(stderr, "hpdl: %s: truncated header: expected %u bytes, found %u\n", path, (unsigned)header_len,
                (unsigned)got);
        goto format_error;
    }
    for (i = 0; i < n_dims; i++) {
        dims[i] = hpdl__be32(header + 4 * (i + 1));
        if (dims[i] == 0 || dims[i] > (uint32_t)INT32_MAX || (i > 0 && dims[i] > 65535u)) {
            fprintf(stderr, "hpdl: %s: bad dimension %d: expected 1..%u, found %u\n", path, i,
                    i > 0 ? 65535u : (unsigned)INT32_MAX, (unsigned)dims[i]);
            goto format_error;
        }
        items *= dims[i];
    }
    expected += items;
    if (fseek(*f, 0, SEEK_END) != 0 || (found = ftell(*f)) < 0 || fseek(*f, (long)header_len, SEEK_SET) != 0) {
        fprintf(stderr, "hpdl: %s: cannot seek: %s\n", path, strerror(errno));
        fclose(*f);
        return HPDL_ERR_IO;
    }
    if ((uint64_t)found != expected) {
        fprintf(stderr, "hpdl: %s: %s: expected %llu bytes, found %llu\n", path,
                (uint64_t)found < expected ? "truncated" : "trailing data", (unsigned long long)expected,
                (unsigned long long)found);
        goto format_error;
    }
    return HPDL_OK;
format_error:
    fclose(*f);
    return HPDL_ERR_FORMAT;
}

/* Reads n bytes from f into dst: pixels scaled to [0, 1] (divided by 255) or
   labels as integers (into the int32 array when dst_labels is set). */
static inline hpdl_status hpdl__idx_read(FILE *f, const char *path, uint64_t n, float *dst_pixels,
                                         int32_t *dst_labels) {
    unsigned char buf[16384];
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof buf ? (size_t)(n - done) : sizeof buf, got = fread(buf, 1, want, f), i;
        for (i = 0; i < got; i++) {
            if (dst_pixels) dst_pixels[done + i] = (float)buf[i] / 255.0f;
            else dst_labels[done + i] = buf[i];
        }
        done += got;
        if (got < want) {
            fprintf(stderr, "hpdl: %s: read failed: expected %llu bytes, found %llu: %s\n", path,
                    (unsigned long long)n, (unsigned long long)done, ferror(f) ? strerror(errno) : "end of file");
            return HPDL_ERR_IO;
        }
    }
    return HPDL_OK;
}

/* Reads the two open files (headers checked) into a new data set. */
static inline hpdl_status hpdl__idx_read_both(FILE *fi, const char *images_path, FILE *fl, const char *labels_path,
                                              const uint32_t *dims, hpdl_dataset *d) {
    uint64_t pixels = (uint64_t)dims[0] * dims[1] * dims[2];
    hpdl_status st;
    memset(d, 0, sizeof *d);
    d->n = dims[0];
    d->rows = (int)dims[1];
    d->cols = (int)dims[2];
    d->images = (float *)hpdl_alloc((size_t)pixels, sizeof(float));
    d->labels = (int32_t *)hpdl_alloc((size_t)d->n, sizeof(int32_t));
    if (!d->images || !d->labels) {
        fprintf(stderr, "hpdl: %s: out of memory for %llu pixels\n", images_path, (unsigned long long)pixels);
        st = HPDL_ERR_NOMEM;
    } else {
        st = hpdl__idx_read(fi, images_path, pixels, d->images, NULL);
        if (st == HPDL_OK) st = hpdl__idx_read(fl, labels_path, (uint64_t)d->n, NULL, d->labels);
    }
    if (st != HPDL_OK) hpdl_dataset_free(d);
    return st;
}

/* Loads an images file and its labels file; *out is written only on success. */
HPDL_API hpdl_status hpdl_idx_load(const char *images_path, const char *labels_path, hpdl_dataset *out) {
    uint32_t dims[3], label_dims[1];
    FILE *fi, *fl;
    hpdl_dataset d;
    hpdl_status st;
    if (!images_path || !labels_path || !out) return HPDL_ERR_INVALID;
    st = hpdl__idx_open(images_path, "images", HPDL_IDX_IMAGES_MAGIC, 3, dims, &fi);
    if (st != HPDL_OK) return st;
    st = hpdl__idx_open(labels_path, "labels", HPDL_IDX_LABELS_MAGIC, 1, label_dims, &fl);
    if (st != HPDL_OK) { fclose(fi); return st; }
    if (dims[0] != label_dims[0]) {
        fprintf(stderr, "hpdl: count mismatch: %s has %u images, %s has %u labels\n", images_path,
                (unsigned)dims[0], labels_path, (unsigned)label_dims[0]);
        st = HPDL_ERR_FORMAT;
    } else {
        st = hpdl__idx_read_both(fi, images_path, fl, labels_path, dims, &d);
    }
    fclose(fi);
    fclose(fl);
    if (st == HPDL_OK) *out = d;
    return st;
}

static inline int hpdl__file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Finds dir/<stem>-<kind>-ubyte, or the dir/<stem>.<kind>-ubyte spelling.
   If only a .gz is there, says to run `make data`; if nothing is, returns
   the first spelling so the loader reports the missing file. */
static inline hpdl_status hpdl__idx_find(const char *dir, const char *stem, const char *kind, char *path,
                                         size_t size) {
    static const char seps[2] = {'-', '.'};
    int i;
    for (i = 0; i < 2; i++) {
        if ((size_t)snprintf(path, size, "%s/%s%c%s-ubyte", dir, stem, seps[i], kind) >= size) {
            fprintf(stderr, "hpdl: %s: folder name too long\n", dir);
            return HPDL_ERR_INVALID;
        }
        if (hpdl__file_exists(path)) return HPDL_OK;
    }
    for (i = 0; i < 2; i++) {
        snprintf(path, size, "%s/%s%c%s-ubyte.gz", dir, stem, seps[i], kind);
        if (hpdl__file_exists(path)) {
            fprintf(stderr, "hpdl: %s is compressed: run `make data` (scripts/data.sh decompresses it)\n", path);
            return HPDL_ERR_IO;
        }
    }
    snprintf(path, size, "%s/%s-%s-ubyte", dir, stem, kind);
    return HPDL_OK;
}

/* Loads train (train != 0: train-*) or test (t10k-*) images and labels of dir. */
HPDL_API hpdl_status hpdl_idx_load_dir(const char *dir, int train, hpdl_dataset *out) {
    char images[4096], labels[4096];
    char stem_images[32], stem_labels[32];
    hpdl_status st;
    if (!dir || !out) return HPDL_ERR_INVALID;
    snprintf(stem_images, sizeof stem_images, "%s-images", train ? "train" : "t10k");
    snprintf(stem_labels, sizeof stem_labels, "%s-labels", train ? "train" : "t10k");
    st = hpdl__idx_find(dir, stem_images, "idx3", images, sizeof images);
    if (st == HPDL_OK) st = hpdl__idx_find(dir, stem_labels, "idx1", labels, sizeof labels);
    return st == HPDL_OK ? hpdl_idx_load(images, labels, out) : st;
}

static inline int hpdl__dataset_ok(const hpdl_dataset *d) {
    return d && d->n > 0 && d->rows > 0 && d->cols > 0 && d->images && d->labels;
}

/* Puts row perm[i] at row i for every i, following the permutation's cycles
   with one spare row; perm is consumed (entries set to -1 once placed). */
static inline void hpdl__apply_permutation(hpdl_dataset *d, int32_t *perm, float *spare) {
    size_t dim = (size_t)d->rows * (size_t)d->cols;
    int64_t start;
    for (start = 0; start < d->n; start++) {
        int64_t i = start;
        int32_t spare_label = d->labels[start];
        if (perm[start] < 0) continue;
        memcpy(spare, d->images + (size_t)start * dim, dim * sizeof *spare);
        for (;;) {
            int64_t from = perm[i];
            perm[i] = -1;
            if (from == start) break;
            memcpy(d->images + (size_t)i * dim, d->images + (size_t)from * dim, dim * sizeof *spare);
            d->labels[i] = d->labels[from];
            i = from;
        }
        memcpy(d->images + (size_t)i * dim, spare, dim * sizeof *spare);
        d->labels[i] = spare_label;
    }
}

/* Shuffles the examples (images and labels together) by a permutation drawn
   with hpdl_rng_shuffle_index from seed: same seed, same order. */
HPDL_API hpdl_status hpdl_dataset_shuffle(hpdl_dataset *d, uint64_t seed) {
    int32_t *perm;
    float *spare;
    hpdl_rng rng;
    int64_t i;
    if (!hpdl__dataset_ok(d) || d->n > INT32_MAX) return HPDL_ERR_INVALID;
    perm = (int32_t *)hpdl_alloc((size_t)d->n, sizeof *perm);
    spare = (float *)hpdl_alloc((size_t)d->rows * (size_t)d->cols, sizeof *spare);
    if (!perm || !spare) { HPDL_FREE(perm); HPDL_FREE(spare); return HPDL_ERR_NOMEM; }
    for (i = 0; i < d->n; i++) perm[i] = (int32_t)i;
    hpdl_rng_seed(&rng, seed);
    hpdl_rng_shuffle_index(&rng, perm, d->n);
    hpdl__apply_permutation(d, perm, spare);
    HPDL_FREE(perm);
    HPDL_FREE(spare);
    return HPDL_OK;
}

/* x = (x - mean) / std for every pixel; std must be positive and finite. */
HPDL_API hpdl_status hpdl_dataset_normalize(hpdl_dataset *d, float mean, float std) {
    size_t i, n;
    if (!hpdl__dataset_ok(d) || !(std > 0) || std > FLT_MAX || !(mean >= -FLT_MAX && mean <= FLT_MAX))
        return HPDL_ERR_INVALID;
    n = (size_t)d->n * (size_t)d->rows * (size_t)d->cols;
    for (i = 0; i < n; i++) d->images[i] = (d->images[i] - mean) / std;
    return HPDL_OK;
}
