/* Tests of the CPU reference kernels: vectors, GEMM, matrix power,
   activations, softmax cross-entropy. Every type is checked against a
   double-precision formula evaluated on the values as stored in that type. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_types.h"

static hpdl_rng rng;

static double uniform(double lo, double hi) { return lo + (hi - lo) * hpdl_rng_uniform(&rng); }

static void *xalloc(size_t count, size_t size) {
    void *p = hpdl_alloc(count, size);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

/* Typed helpers for tests: random fill, poison fill, and how far a typed
   array is from a double reference (in units of the HPDL_EXPECT_NEAR scale). */
#define DEFINE_TEST_HELPERS(S, T, ACC)                                         \
    static T *random_##S(size_t n, double lo, double hi) {                     \
        T *x = (T *)xalloc(n, sizeof(T));                                      \
        size_t i;                                                              \
        for (i = 0; i < n; i++) x[i] = TO_##S(uniform(lo, hi));                \
        return x;                                                              \
    }                                                                          \
    static void fill_##S(T *x, size_t n, double v) {                           \
        size_t i;                                                              \
        for (i = 0; i < n; i++) x[i] = TO_##S(v);                              \
    }                                                                          \
    /* max over i of |got - want| / max(1, |want|) */                          \
    static double rel_err_##S(const T *got, const double *want, size_t n) {    \
        double worst = 0;                                                      \
        size_t i;                                                              \
        for (i = 0; i < n; i++) {                                              \
            double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;              \
            double e = fabs(FROM_##S(got[i]) - want[i]) / scale;               \
            if (!(e <= worst)) worst = e; /* NaN counts as worst */            \
        }                                                                      \
        return worst;                                                          \
    }
FOR_EACH_TYPE(DEFINE_TEST_HELPERS)

/* ---- vectors ------------------------------------------------------------ */

#define DEFINE_VEC_TEST(S, T, ACC)                                             \
    static void vec_##S(void) {                                                \
        const int64_t n = 1001;                                                \
        T *a = random_##S(n, -2, 2), *b = random_##S(n, -2, 2), *c = random_##S(n, 5, 6); \
        T *keep = (T *)xalloc(n, sizeof(T));                                   \
        double *want = (double *)xalloc(n, sizeof(double));                    \
        int64_t i;                                                             \
        for (i = 0; i < n; i++) want[i] = FROM_##S(a[i]) + FROM_##S(b[i]);     \
        HPDL_EXPECT(hpdl_vec_add_##S(n, a, b, c) == HPDL_OK);                  \
        HPDL_EXPECT(rel_err_##S(c, want, n) <= TOL_##S);                       \
        for (i = 0; i < n; i++) want[i] = FROM_##S(b[i]) + -0.75 * FROM_##S(a[i]); \
        HPDL_EXPECT(hpdl_vec_axpy_##S(n, (ACC)-0.75, a, b) == HPDL_OK);        \
        HPDL_EXPECT(rel_err_##S(b, want, n) <= TOL_##S);                       \
        for (i = 0; i < n; i++) want[i] = 2 * FROM_##S(a[i]);                  \
        HPDL_EXPECT(hpdl_vec_add_##S(n, a, a, a) == HPDL_OK); /* in place */   \
        HPDL_EXPECT(rel_err_##S(a, want, n) <= TOL_##S);                       \
        memcpy(keep, c, n * sizeof(T));                                        \
        HPDL_EXPECT(hpdl_vec_add_##S(-1, a, b, c) == HPDL_ERR_INVALID);        \
        HPDL_EXPECT(hpdl_vec_add_##S(n, NULL, b, c) == HPDL_ERR_INVALID);      \
        HPDL_EXPECT(hpdl_vec_add_##S(n, a, b, NULL) == HPDL_ERR_INVALID);      \
        HPDL_EXPECT(hpdl_vec_axpy_##S(-5, 1, a, c) == HPDL_ERR_INVALID);       \
        HPDL_EXPECT(hpdl_vec_axpy_##S(n, 1, NULL, c) == HPDL_ERR_INVALID);     \
        HPDL_EXPECT(memcmp(keep, c, n * sizeof(T)) == 0);                      \
        HPDL_EXPECT(hpdl_vec_add_##S(0, NULL, NULL, NULL) == HPDL_OK);         \
        free(a); free(b); free(c); free(keep); free(want);                     \
    }
FOR_EACH_TYPE(DEFINE_VEC_TEST)

/* ---- GEMM --------------------------------------------------------------- */

typedef struct gemm_case { int M, N, K, pad; double alpha, beta; } gemm_case;

/* Element (r, c) of op(X) for a row-major X with leading dimension ld. */
static size_t op_at(hpdl_transpose t, int ld, int r, int c) {
    return t == HPDL_TRANS ? (size_t)c * ld + r : (size_t)r * ld + c;
}

/* Runs one GEMM on random data against a naive f64 triple loop over the stored
   values. C's padding columns (ldc > N) must stay untouched; with beta = 0
   C starts as NaN, which must not leak into the result. */
#define DEFINE_GEMM_TEST(S, T, ACC)                                            \
    static void gemm_case_##S(hpdl_transpose ta, hpdl_transpose tb, gemm_case g) { \
        int lda = (ta ? g.M : g.K) + g.pad, ldb = (tb ? g.K : g.N) + g.pad, ldc = g.N + g.pad; \
        size_t na = (size_t)(ta ? g.K : g.M) * lda, nb = (size_t)(tb ? g.N : g.K) * ldb; \
        size_t nc = (size_t)g.M * ldc;                                         \
        T *A = random_##S(na + 1, -1, 1), *B = random_##S(nb + 1, -1, 1), *C = random_##S(nc, -1, 1); \
        double *want = (double *)xalloc(nc, sizeof(double));                   \
        int i, j, p;                                                           \
        if (g.beta == 0) fill_##S(C, nc, NAN);                                 \
        for (i = 0; i < g.M; i++)                                              \
            for (j = 0; j < ldc; j++) {                                        \
                double s = 0;                                                  \
                if (j >= g.N) { C[(size_t)i * ldc + j] = TO_##S(7.0); want[(size_t)i * ldc + j] = 7.0; continue; } \
                for (p = 0; p < g.K; p++)                                      \
                    s += FROM_##S(A[op_at(ta, lda, i, p)]) * FROM_##S(B[op_at(tb, ldb, p, j)]); \
                want[(size_t)i * ldc + j] = g.alpha * s + (g.beta == 0 ? 0 : g.beta * FROM_##S(C[(size_t)i * ldc + j])); \
            }                                                                  \
        HPDL_EXPECT(hpdl_gemm_##S(ta, tb, g.M, g.N, g.K, (ACC)g.alpha, A, lda, B, ldb, (ACC)g.beta, C, ldc) == HPDL_OK); \
        if (rel_err_##S(C, want, nc) > TOL_##S)                                \
            fprintf(stderr, "    gemm_%s ta=%d tb=%d %dx%dx%d pad %d alpha %g beta %g: error %g\n", \
                    #S, ta, tb, g.M, g.N, g.K, g.pad, g.alpha, g.beta, rel_err_##S(C, want, nc)); \
        HPDL_EXPECT(rel_err_##S(C, want, nc) <= TOL_##S);                      \
        free(A); free(B); free(C); free(want);                                 \
    }                                                                          \
    static void gemm_##S(void) {                                               \
        /* 65x19x300 spans several K blocks, 129x257x63 several M and N blocks. */ \
        static const gemm_case cases[] = {{1, 1, 1, 0, 1, 0},       {17, 33, 5, 0, 1, 0}, \
                                          {17, 33, 5, 3, 0.75, -0.5}, {129, 257, 63, 0, 1, 0}, \
                                          {129, 257, 63, 5, -1.25, 1}, {65, 19, 300, 2, 0.5, 0}, \
                                          {9, 7, 0, 1, 2, 0.5},     {9, 7, 0, 1, 2, 0}}; \
        int c, ta, tb;                                                         \
        for (c = 0; c < HPDL_COUNT(cases); c++)                                \
            for (ta = 0; ta < 2; ta++)                                         \
                for (tb = 0; tb < 2; tb++) gemm_case_##S((hpdl_transpose)ta, (hpdl_transpose)tb, cases[c]); \
    }
FOR_EACH_TYPE(DEFINE_GEMM_TEST)

/* K = 0 with no A or B at all: C = beta*C (beta 0: zeros, NaN not read). */
static void gemm_k0_null(void) {
    double C[6] = {1, 2, 3, 4, 5, 6}, D[6];
    int i;
    HPDL_EXPECT(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_TRANS, 2, 3, 0, 1.0, NULL, 1, NULL, 1, -2.0, C, 3) == HPDL_OK);
    for (i = 0; i < 6; i++) HPDL_EXPECT(C[i] == -2.0 * (i + 1));
    for (i = 0; i < 6; i++) D[i] = NAN;
    HPDL_EXPECT(hpdl_gemm_f64(HPDL_TRANS, HPDL_NO_TRANS, 2, 3, 0, 1.0, NULL, 2, NULL, 3, 0.0, D, 3) == HPDL_OK);
    for (i = 0; i < 6; i++) HPDL_EXPECT(D[i] == 0.0);
}

/* Each bad argument gets HPDL_ERR_INVALID and leaves C as it was. */
static void gemm_bad_args(void) {
    enum { M = 5, N = 4, K = 3 };
    float *A = random_f32(M * K, -1, 1), *B = random_f32(K * N, -1, 1), *C = random_f32(M * N, -1, 1);
    float keep[M * N];
    const hpdl_transpose no = HPDL_NO_TRANS, tr = HPDL_TRANS;
    memcpy(keep, C, sizeof keep);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, -1, N, K, 1, A, K, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, -1, K, 1, A, K, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, -1, 1, A, K, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, A, K - 1, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(tr, no, M, N, K, 1, A, M - 1, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, A, K, B, N - 1, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, tr, M, N, K, 1, A, K, B, K - 1, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, A, K, B, N, 0, C, N - 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, NULL, K, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, A, K, NULL, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, M, N, K, 1, A, K, B, N, 0, NULL, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_gemm_f32((hpdl_transpose)2, no, M, N, K, 1, A, K, B, N, 0, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(keep, C, sizeof keep) == 0);
    HPDL_EXPECT(hpdl_gemm_f32(no, no, 0, N, K, 1, A, K, B, N, 0, C, N) == HPDL_OK); /* empty: nothing to do */
    HPDL_EXPECT(memcmp(keep, C, sizeof keep) == 0);
    free(A); free(B); free(C);
}

/* ---- matrix power ----------------------------------------------------- */

/* want = A^p by p-1 naive products; entries ~ U(-1,1)*sqrt(3/n), so the
   spectral radius is near 1 and powers stay of order one. */
#define DEFINE_MATPOW_TEST(S, T, ACC)                                          \
    static void matpow_powers_##S(int max_power, double tol) {                 \
        enum { n = 6, lda = n + 3, ldo = n + 2 };                              \
        T *A = random_##S(n * lda, -sqrt(3.0 / n), sqrt(3.0 / n));             \
        T *out = (T *)xalloc(n * ldo, sizeof(T));                              \
        double cur[n * n], next[n * n], want[n * ldo];                         \
        int p, i, j, k;                                                        \
        for (i = 0; i < n * n; i++) cur[i] = (i / n == i % n); /* A^0 */       \
        for (p = 0; p <= max_power; p++) {                                     \
            fill_##S(out, n * ldo, NAN);                                       \
            for (i = 0; i < n * ldo; i++) want[i] = (i % ldo < n) ? cur[i / ldo * n + i % ldo] : NAN; \
            HPDL_EXPECT(hpdl_matpow_##S(n, p, A, lda, out, ldo) == HPDL_OK);   \
            for (i = 0; i < n; i++) {                                          \
                for (j = 0; j < n; j++) HPDL_EXPECT_NEAR(FROM_##S(out[i * ldo + j]), want[i * ldo + j], tol); \
                for (j = n; j < ldo; j++) HPDL_EXPECT(FROM_##S(out[i * ldo + j]) != FROM_##S(out[i * ldo + j])); \
            }                                                                  \
            for (i = 0; i < n; i++)                                            \
                for (j = 0; j < n; j++) {                                      \
                    double s = 0;                                              \
                    for (k = 0; k < n; k++) s += cur[i * n + k] * FROM_##S(A[k * lda + j]); \
                    next[i * n + j] = s;                                       \
                }                                                              \
            memcpy(cur, next, sizeof cur);                                     \
        }                                                                      \
        free(A); free(out);                                                    \
    }
FOR_EACH_TYPE(DEFINE_MATPOW_TEST)

static void matpow_f64(void) { matpow_powers_f64(17, 1e-12); }

/* The other instantiations: fewer powers, since rounding grows with each product. */
static void matpow_other_types(void) {
    matpow_powers_f32(8, 1e-5);
    matpow_powers_f16(4, 2e-2);
    matpow_powers_bf16(4, 5e-2);
}

static void matpow_bad_args(void) {
    double A[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out[9], keep[9];
    int i;
    for (i = 0; i < 9; i++) out[i] = uniform(-1, 1);
    memcpy(keep, out, sizeof keep);
    HPDL_EXPECT(hpdl_matpow_f64(3, -1, A, 3, out, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_matpow_f64(-3, 2, A, 3, out, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_matpow_f64(3, 2, A, 2, out, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_matpow_f64(3, 2, A, 3, out, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_matpow_f64(3, 2, NULL, 3, out, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_matpow_f64(3, 2, A, 3, NULL, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(keep, out, sizeof keep) == 0);
    HPDL_EXPECT(hpdl_matpow_f64(3, 2, A, 3, A, 3) == HPDL_ERR_INVALID);     /* out == A */
    HPDL_EXPECT(hpdl_matpow_f64(2, 2, A, 3, A + 4, 3) == HPDL_ERR_INVALID); /* overlap */
    for (i = 0; i < 9; i++) HPDL_EXPECT(A[i] == i + 1);
}

/* ---- activations -------------------------------------------------------- */

#define DEFINE_ACT_TEST(S, T, ACC)                                             \
    static void activations_##S(void) {                                        \
        const int64_t n = 777;                                                 \
        T *x = random_##S(n, -6, 6), *dy = random_##S(n, -2, 2), *y = random_##S(n, 1, 2); \
        T *dx = random_##S(n, 1, 2), keep[4];                                  \
        double *want = (double *)xalloc(n, sizeof(double));                    \
        int64_t i;                                                             \
        x[0] = TO_##S(1000.0); x[1] = TO_##S(-1000.0); x[2] = TO_##S(0.0);     \
        HPDL_EXPECT(hpdl_relu_##S(n, x, y) == HPDL_OK);                        \
        for (i = 0; i < n; i++) want[i] = FROM_##S(x[i]) > 0 ? FROM_##S(x[i]) : 0; \
        HPDL_EXPECT(rel_err_##S(y, want, n) == 0);                             \
        HPDL_EXPECT(hpdl_relu_grad_##S(n, y, dy, dx) == HPDL_OK);              \
        for (i = 0; i < n; i++) want[i] = FROM_##S(x[i]) > 0 ? FROM_##S(dy[i]) : 0; \
        HPDL_EXPECT(rel_err_##S(dx, want, n) == 0);                            \
        HPDL_EXPECT(hpdl_sigmoid_##S(n, x, y) == HPDL_OK);                     \
        for (i = 0; i < n; i++) want[i] = 1 / (1 + exp(-FROM_##S(x[i])));      \
        HPDL_EXPECT(rel_err_##S(y, want, n) <= TOL_##S);                       \
        HPDL_EXPECT(FROM_##S(y[0]) == 1.0 && FROM_##S(y[1]) == 0.0 && FROM_##S(y[2]) == 0.5); \
        HPDL_EXPECT(hpdl_sigmoid_grad_##S(n, y, dy, dx) == HPDL_OK);           \
        for (i = 0; i < n; i++) want[i] = FROM_##S(dy[i]) * FROM_##S(y[i]) * (1 - FROM_##S(y[i])); \
        HPDL_EXPECT(rel_err_##S(dx, want, n) <= TOL_##S);                      \
        memcpy(keep, dx, sizeof keep);                                         \
        HPDL_EXPECT(hpdl_relu_##S(-1, x, dx) == HPDL_ERR_INVALID);             \
        HPDL_EXPECT(hpdl_sigmoid_##S(4, NULL, dx) == HPDL_ERR_INVALID);        \
        HPDL_EXPECT(hpdl_relu_grad_##S(4, y, NULL, dx) == HPDL_ERR_INVALID);   \
        HPDL_EXPECT(hpdl_sigmoid_grad_##S(-2, y, dy, dx) == HPDL_ERR_INVALID); \
        HPDL_EXPECT(memcmp(keep, dx, sizeof keep) == 0);                       \
        free(x); free(dy); free(y); free(dx); free(want);                      \
    }
FOR_EACH_TYPE(DEFINE_ACT_TEST)

/* ---- softmax cross-entropy ---------------------------------------------- */

/* Reference: loss and (softmax - onehot)/rows, in double, on stored values. */
static double xent_reference(int rows, int cols, const double *x, const int32_t *labels, double *grad) {
    double total = 0;
    int r, j;
    for (r = 0; r < rows; r++) {
        const double *row = x + r * cols;
        double mx = row[0], sum = 0;
        for (j = 1; j < cols; j++) mx = row[j] > mx ? row[j] : mx;
        for (j = 0; j < cols; j++) sum += exp(row[j] - mx);
        for (j = 0; j < cols; j++) grad[r * cols + j] = (exp(row[j] - mx) / sum - (j == labels[r])) / rows;
        total += log(sum) + mx - row[labels[r]];
    }
    return total / rows;
}

/* scale = 1: ordinary logits; scale = 1000: logits of +-1000 (exp overflows
   without the max subtraction). Loss and gradient against xent_reference,
   gradient rows summing to zero, padding (ld > cols) untouched. */
#define DEFINE_XENT_TEST(S, T, ACC)                                            \
    static void softmax_xent_case_##S(double scale) {                          \
        enum { rows = 13, cols = 10, ld = 12, ldg = 11 };                      \
        T *x = (T *)xalloc(rows * ld, sizeof(T)), *g = random_##S(rows * ldg, 3, 4); \
        double xd[rows * cols], want[rows * cols], got_g[rows * cols], loss = NAN, want_loss, sum; \
        int32_t labels[rows];                                                  \
        int r, j;                                                              \
        for (r = 0; r < rows; r++) {                                           \
            labels[r] = (int32_t)hpdl_rng_below(&rng, cols);                   \
            for (j = 0; j < ld; j++) x[r * ld + j] = TO_##S(scale * ((hpdl_rng_u64(&rng) & 1) ? 1 : -1) * uniform(0.5, 3)); \
            for (j = 0; j < cols; j++) xd[r * cols + j] = FROM_##S(x[r * ld + j]); \
        }                                                                      \
        want_loss = xent_reference(rows, cols, xd, labels, want);              \
        HPDL_EXPECT(hpdl_softmax_xent_##S(rows, cols, x, ld, labels, g, ldg, &loss) == HPDL_OK); \
        HPDL_EXPECT(isfinite(loss));                                           \
        HPDL_EXPECT_NEAR(loss, want_loss, TOL_##S);                            \
        for (r = 0; r < rows; r++) {                                           \
            for (j = 0, sum = 0; j < cols; j++) sum += (got_g[r * cols + j] = FROM_##S(g[r * ldg + j])); \
            HPDL_EXPECT_NEAR(sum, 0.0, TOL_##S);                               \
            HPDL_EXPECT(FROM_##S(g[r * ldg + cols]) >= 3);                     \
        }                                                                      \
        for (j = 0; j < rows * cols; j++) HPDL_EXPECT_NEAR(got_g[j], want[j], TOL_##S); \
        loss = NAN;                                                            \
        HPDL_EXPECT(hpdl_softmax_xent_##S(rows, cols, x, ld, labels, NULL, 0, &loss) == HPDL_OK); \
        HPDL_EXPECT_NEAR(loss, want_loss, TOL_##S);                            \
        free(x); free(g);                                                      \
    }                                                                          \
    static void softmax_xent_##S(void) {                                       \
        softmax_xent_case_##S(1);                                              \
        softmax_xent_case_##S(1000);                                           \
    }
FOR_EACH_TYPE(DEFINE_XENT_TEST)

/* A label outside [0, cols) in any row: error, neither grad nor loss written. */
static void softmax_xent_bad_label(void) {
    float x[3 * 4], g[3 * 4], keep[3 * 4];
    int32_t labels[3] = {1, 3, 0};
    double loss = -7;
    int i;
    for (i = 0; i < 12; i++) { x[i] = (float)uniform(-1, 1); g[i] = (float)uniform(5, 6); }
    memcpy(keep, g, sizeof keep);
    labels[2] = 4;
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, labels, g, 4, &loss) == HPDL_ERR_INVALID);
    labels[2] = -1;
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, labels, g, 4, &loss) == HPDL_ERR_INVALID);
    labels[2] = 0;
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, NULL, g, 4, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 3, labels, g, 4, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, labels, g, 3, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_softmax_xent_f32(0, 4, x, 4, labels, g, 4, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, labels, g, 4, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(keep, g, sizeof keep) == 0);
    HPDL_EXPECT(loss == -7);
    HPDL_EXPECT(hpdl_softmax_xent_f32(3, 4, x, 4, labels, g, 4, &loss) == HPDL_OK); /* fixed: works */
    HPDL_EXPECT(loss > 0 && memcmp(keep, g, sizeof keep) != 0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(vec_f32), HPDL_TEST(vec_f64), HPDL_TEST(vec_f16), HPDL_TEST(vec_bf16),
        HPDL_TEST(gemm_f32), HPDL_TEST(gemm_f64), HPDL_TEST(gemm_f16), HPDL_TEST(gemm_bf16),
        HPDL_TEST(gemm_k0_null), HPDL_TEST(gemm_bad_args),
        HPDL_TEST(matpow_f64), HPDL_TEST(matpow_other_types), HPDL_TEST(matpow_bad_args),
        HPDL_TEST(activations_f32), HPDL_TEST(activations_f64), HPDL_TEST(activations_f16),
        HPDL_TEST(activations_bf16),
        HPDL_TEST(softmax_xent_f32), HPDL_TEST(softmax_xent_f64), HPDL_TEST(softmax_xent_f16),
        HPDL_TEST(softmax_xent_bf16), HPDL_TEST(softmax_xent_bad_label),
    };
    hpdl_rng_seed(&rng, 20261122);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
