/* GPU tests of the matrix power (one GPU), the sum of powers over several
   GPUs and one matrix's power by row blocks, against the CPU reference
   hpdl_matpow_f64. With one GPU the multi-GPU logic runs on "virtual"
   devices (logical d on GPU d % count); real two-GPU runs skip without two. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

/* Entries uniform in +-sqrt(3/n): spectral radius near 1, so powers stay O(1). */
static void random_matrix(hpdl_rng *r, int n, int ld, double *a) {
    double s = sqrt(3.0 / n);
    int i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < ld; j++) a[(size_t)i * ld + j] = j < n ? s * (2.0 * hpdl_rng_uniform(r) - 1.0) : 7.0;
}

/* ||got - want||_F / ||want||_F over an n x n view of ld `ld`. */
static double rel_error(int n, const double *got, int ldg, const double *want, int ldw) {
    double num = 0.0, den = 0.0;
    int i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double d = got[(size_t)i * ldg + j] - want[(size_t)i * ldw + j];
            num += d * d;
            den += want[(size_t)i * ldw + j] * want[(size_t)i * ldw + j];
        }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static void expect_rel(double rel, double tol, const char *what, int power) {
    if (!(rel <= tol)) fprintf(stderr, "    %s power %d: relative error %.3g > %.3g\n", what, power, rel, tol);
    HPDL_EXPECT(rel <= tol);
}

static double *dev_alloc_f64(size_t count) {
    void *p = NULL;
    HPDL_CUDA_CHECK(cudaMalloc(&p, count * sizeof(double)));
    return (double *)p;
}

/* The plan's product counts: floor(log2 p) squarings + (set bits - 1). */
static void test_matpow_plan_counts(void) {
    int p;
    for (p = 2; p <= 5000; p++) {
        hpdl__matpow_plan plan;
        int squarings = 0, products = 0, bits = 0, floor_log2 = 0, i;
        hpdl__matpow_plan_init(&plan, p, 0);
        for (i = 0; i < plan.count; i++) {
            if (plan.step[i].lhs == plan.step[i].rhs) squarings++; else products++;
            HPDL_EXPECT(plan.step[i].dst != plan.step[i].lhs && plan.step[i].dst != plan.step[i].rhs);
        }
        for (i = p; i; i >>= 1) bits += i & 1;
        while ((p >> (floor_log2 + 1)) > 0) floor_log2++;
        HPDL_EXPECT(squarings == floor_log2);
        HPDL_EXPECT(products == bits - 1);
    }
}

/* f64 squaring and naive, powers 0..17, odd size, padded views, poisoned
   output, padding left untouched. */
static void test_matpow_f64_powers(void) {
    const int n = 37, lda = 41, ldo = 40;
    hpdl_rng r;
    double *a = (double *)malloc(sizeof(double) * n * lda), *want = (double *)malloc(sizeof(double) * n * ldo);
    double *got = (double *)malloc(sizeof(double) * n * ldo), *d_a, *d_out;
    int p, naive;
    if (!hpdl_cuda_available()) { free(a); free(want); free(got); HPDL_SKIP("no GPU"); }
    hpdl_rng_seed(&r, 7);
    random_matrix(&r, n, lda, a);
    d_a = dev_alloc_f64((size_t)n * lda);
    d_out = dev_alloc_f64((size_t)n * ldo);
    HPDL_CUDA_CHECK(cudaMemcpy(d_a, a, sizeof(double) * n * lda, cudaMemcpyHostToDevice));
    for (naive = 0; naive <= 1; naive++)
        for (p = 0; p <= 17; p++) {
            int i;
            HPDL_CHECK(hpdl_matpow_f64(n, p, a, lda, want, ldo));
            HPDL_CHECK(hpdl_cuda_poison(d_out, sizeof(double) * n * ldo));
            if (naive) HPDL_EXPECT(hpdl_cuda_matpow_naive_f64(n, p, d_a, lda, d_out, ldo, HPDL_GEMM_CUBLAS, 0) == HPDL_OK);
            else HPDL_EXPECT(hpdl_cuda_matpow_f64(n, p, d_a, lda, d_out, ldo, HPDL_GEMM_CUBLAS, 0) == HPDL_OK);
            HPDL_CUDA_CHECK(cudaMemcpy(got, d_out, sizeof(double) * n * ldo, cudaMemcpyDeviceToHost));
            expect_rel(rel_error(n, got, ldo, want, ldo), 1e-12, naive ? "naive f64" : "squaring f64", p);
            for (i = 0; i < n; i++) HPDL_EXPECT(isnan(got[(size_t)i * ldo + n])); /* padding untouched */
        }
    cudaFree(d_a); cudaFree(d_out);
    free(a); free(want); free(got);
}

/* f32 and f16 against the f64 reference: 1e-4 and 2e-2 relative. */
static void test_matpow_f32_f16_powers(void) {
    const int n = 53;
    const size_t nn = (size_t)n * n;
    hpdl_rng r;
    double *a = (double *)malloc(sizeof(double) * nn), *want = (double *)malloc(sizeof(double) * nn);
    double *got = (double *)malloc(sizeof(double) * nn);
    float *af = (float *)malloc(sizeof(float) * nn), *of = (float *)malloc(sizeof(float) * nn);
    hpdl_f16 *ah = (hpdl_f16 *)malloc(sizeof(hpdl_f16) * nn), *oh = (hpdl_f16 *)malloc(sizeof(hpdl_f16) * nn);
    void *d_a, *d_out, *d_ah, *d_oh;
    size_t i;
    int p;
    if (!hpdl_cuda_available()) { free(a); free(want); free(got); free(af); free(of); free(ah); free(oh); HPDL_SKIP("no GPU"); }
    hpdl_rng_seed(&r, 11);
    random_matrix(&r, n, n, a);
    for (i = 0; i < nn; i++) { /* the reference starts from the rounded inputs */
        af[i] = (float)a[i];
        ah[i] = hpdl_f16_from_f32(af[i]);
    }
    HPDL_CUDA_CHECK(cudaMalloc(&d_a, nn * 4)); HPDL_CUDA_CHECK(cudaMalloc(&d_out, nn * 4));
    HPDL_CUDA_CHECK(cudaMalloc(&d_ah, nn * 2)); HPDL_CUDA_CHECK(cudaMalloc(&d_oh, nn * 2));
    HPDL_CUDA_CHECK(cudaMemcpy(d_a, af, nn * 4, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(d_ah, ah, nn * 2, cudaMemcpyHostToDevice));
    for (p = 0; p <= 17; p++) {
        for (i = 0; i < nn; i++) a[i] = af[i];
        HPDL_CHECK(hpdl_matpow_f64(n, p, a, n, want, n));
        HPDL_CHECK(hpdl_cuda_poison(d_out, nn * 4));
        HPDL_EXPECT(hpdl_cuda_matpow_f32(n, p, (const float *)d_a, n, (float *)d_out, n, HPDL_GEMM_CUBLAS, 0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(of, d_out, nn * 4, cudaMemcpyDeviceToHost));
        for (i = 0; i < nn; i++) got[i] = of[i];
        expect_rel(rel_error(n, got, n, want, n), 1e-4, "squaring f32", p);
        for (i = 0; i < nn; i++) a[i] = hpdl_f16_to_f32(ah[i]);
        HPDL_CHECK(hpdl_matpow_f64(n, p, a, n, want, n));
        HPDL_CHECK(hpdl_cuda_poison(d_oh, nn * 2));
        HPDL_EXPECT(hpdl_cuda_matpow_f16(n, p, (const hpdl_f16 *)d_ah, n, (hpdl_f16 *)d_oh, n, HPDL_GEMM_CUBLAS, 0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(oh, d_oh, nn * 2, cudaMemcpyDeviceToHost));
        for (i = 0; i < nn; i++) got[i] = hpdl_f16_to_f32(oh[i]);
        expect_rel(rel_error(n, got, n, want, n), 2e-2, "squaring f16", p);
    }
    cudaFree(d_a); cudaFree(d_out); cudaFree(d_ah); cudaFree(d_oh);
    free(a); free(want); free(got); free(af); free(of); free(ah); free(oh);
}

/* Bad arguments get HPDL_ERR_INVALID and leave the output as it was. */
static void test_matpow_bad_args(void) {
    const int n = 8;
    double *d_a, *d_out, host[64];
    int i, poisoned = 1;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    d_a = dev_alloc_f64(64);
    d_out = dev_alloc_f64(64);
    HPDL_CHECK(hpdl_cuda_poison(d_out, sizeof host));
    HPDL_EXPECT(hpdl_cuda_matpow_f64(n, -1, d_a, n, d_out, n, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_matpow_f64(0, 2, d_a, n, d_out, n, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_matpow_f64(n, 2, d_a, n - 1, d_out, n, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_matpow_f64(n, 2, NULL, n, d_out, n, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_matpow_f64(n, 2, d_a, n, d_a + 4, n, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_matpow_ws_f64(n, 2, d_a, n, d_out, n, HPDL_GEMM_CUBLAS, NULL, 0) == HPDL_ERR_INVALID);
    HPDL_CUDA_CHECK(cudaMemcpy(host, d_out, sizeof host, cudaMemcpyDeviceToHost));
    for (i = 0; i < 64; i++) poisoned &= isnan(host[i]);
    HPDL_EXPECT(poisoned);
    cudaFree(d_a); cudaFree(d_out);
}

/* k matrices' powers summed on n_gpus (virtual when more than exist). */
static void check_sum_of_powers(int k, int n, int power, int n_gpus, int allow_virtual) {
    hpdl_rng r;
    double **mats = (double **)malloc(sizeof(double *) * k), *want = (double *)calloc((size_t)n * n, sizeof(double));
    double *got = (double *)malloc(sizeof(double) * n * n), *pw = (double *)malloc(sizeof(double) * n * n);
    hpdl_cuda_powsum plan;
    int j, naive;
    size_t i;
    hpdl_rng_seed(&r, 100 + (uint64_t)k);
    for (j = 0; j < k; j++) {
        mats[j] = (double *)malloc(sizeof(double) * n * n);
        random_matrix(&r, n, n, mats[j]);
        HPDL_CHECK(hpdl_matpow_f64(n, power, mats[j], n, pw, n));
        for (i = 0; i < (size_t)n * n; i++) want[i] += pw[i];
    }
    HPDL_EXPECT(hpdl_cuda_powsum_create_f64(&plan, k, n, power, n_gpus, allow_virtual) == HPDL_OK);
    HPDL_EXPECT(plan.lanes.dev.count == (n_gpus < k ? n_gpus : k));
    HPDL_EXPECT(hpdl_cuda_powsum_upload_f64(&plan, (const double *const *)mats) == HPDL_OK);
    for (naive = 0; naive <= 1; naive++) {
        HPDL_CHECK(hpdl_cuda_poison(plan.acc[0], sizeof(double) * n * n));
        HPDL_EXPECT(hpdl_cuda_powsum_run_f64(&plan, naive, HPDL_GEMM_CUBLAS, plan.lanes.stream[0]) == HPDL_OK);
        HPDL_EXPECT(hpdl_cuda_powsum_download_f64(&plan, got) == HPDL_OK);
        expect_rel(rel_error(n, got, n, want, n), 1e-12, naive ? "naive sum of powers" : "sum of powers", power);
    }
    /* a tree of G partial sums: G - 1 moves per run */
    HPDL_EXPECT(plan.xfer.transfers == 2 * (long long)(plan.lanes.dev.count - 1));
    hpdl_cuda_powsum_destroy(&plan);
    for (j = 0; j < k; j++) free(mats[j]);
    free(mats); free(want); free(got); free(pw);
}

static void test_sum_of_powers_virtual(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    check_sum_of_powers(2, 33, 10, 1, 0);
    check_sum_of_powers(5, 29, 7, 3, 1);  /* 2 + 2 + 1 matrices, tree of 3 */
    check_sum_of_powers(7, 19, 17, 5, 1); /* tree of 5: rounds 1, 2, 4 */
    check_sum_of_powers(3, 21, 0, 2, 1);  /* identities */
}

static void test_sum_of_powers_two_gpus(void) {
    if (hpdl_cuda_device_count() < 2) HPDL_SKIP("needs 2 GPUs");
    check_sum_of_powers(2, 65, 10, 2, 0);
    check_sum_of_powers(4, 47, 13, 2, 0);
}

/* The simple host-to-host call, and more GPUs than exist. */
static void test_sum_of_powers_host_and_too_many_gpus(void) {
    const int n = 24;
    hpdl_rng r;
    float a[24 * 24], b[24 * 24], out[24 * 24], ref[24 * 24];
    const float *mats[2];
    double da[24 * 24], pa[24 * 24], pb[24 * 24];
    int i, untouched = 1, gpus = hpdl_cuda_device_count();
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 5);
    random_matrix(&r, n, n, da);
    for (i = 0; i < n * n; i++) a[i] = (float)da[i];
    random_matrix(&r, n, n, da);
    for (i = 0; i < n * n; i++) b[i] = (float)da[i];
    mats[0] = a; mats[1] = b;
    for (i = 0; i < n * n; i++) { da[i] = a[i]; }
    HPDL_CHECK(hpdl_matpow_f64(n, 10, da, n, pa, n));
    for (i = 0; i < n * n; i++) { da[i] = b[i]; }
    HPDL_CHECK(hpdl_matpow_f64(n, 10, da, n, pb, n));
    for (i = 0; i < n * n; i++) { ref[i] = (float)(pa[i] + pb[i]); out[i] = NAN; }
    HPDL_EXPECT(hpdl_cuda_sum_of_powers_f32(2, mats, n, 10, gpus >= 2 ? 2 : 1, out, HPDL_GEMM_CUBLAS) == HPDL_OK);
    for (i = 0; i < n * n; i++) HPDL_EXPECT_NEAR(out[i], ref[i], 1e-4);
    for (i = 0; i < n * n; i++) out[i] = NAN;
    HPDL_EXPECT(hpdl_cuda_sum_of_powers_f32(2, mats, n, 10, gpus + 1, out, HPDL_GEMM_CUBLAS) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sum_of_powers_f32(2, mats, n, -1, 1, out, HPDL_GEMM_CUBLAS) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sum_of_powers_f32(0, mats, n, 2, 1, out, HPDL_GEMM_CUBLAS) == HPDL_ERR_INVALID);
    for (i = 0; i < n * n; i++) untouched &= isnan(out[i]);
    HPDL_EXPECT(untouched);
}

/* One matrix by row blocks on G devices, powers 0..17; the moves are the
   broadcast (G-1), a gather per squaring but the last step (G(G-1)) and the
   result's blocks (G-1). */
static void check_rowpow(int n, int G, int allow_virtual) {
    const int lda = n + 3, ldo = n + 1;
    hpdl_rng r;
    double *a = (double *)malloc(sizeof(double) * n * lda), *want = (double *)malloc(sizeof(double) * n * ldo);
    double *got = (double *)malloc(sizeof(double) * n * ldo), *d_a, *d_out;
    hpdl_cuda_rowpow plan;
    int p;
    hpdl_rng_seed(&r, 21);
    random_matrix(&r, n, lda, a);
    d_a = dev_alloc_f64((size_t)n * lda);
    d_out = dev_alloc_f64((size_t)n * ldo);
    HPDL_CUDA_CHECK(cudaMemcpy(d_a, a, sizeof(double) * n * lda, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_rowpow_create_f64(&plan, n, G, allow_virtual) == HPDL_OK);
    for (p = 0; p <= 17; p++) {
        hpdl__matpow_plan mp;
        long long before = plan.xfer.transfers, want_moves = 0;
        int i, gathers = 0;
        hpdl__matpow_plan_init(&mp, p, 0);
        for (i = 0; i + 1 < mp.count; i++) gathers += mp.step[i].lhs == mp.step[i].rhs;
        if (p > 1) want_moves = 2 * (G - 1) + (long long)gathers * G * (G - 1);
        HPDL_CHECK(hpdl_matpow_f64(n, p, a, lda, want, ldo));
        HPDL_CHECK(hpdl_cuda_poison(d_out, sizeof(double) * n * ldo));
        HPDL_EXPECT(hpdl_cuda_rowpow_run_f64(&plan, p, d_a, lda, d_out, ldo, HPDL_GEMM_CUBLAS, 0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(got, d_out, sizeof(double) * n * ldo, cudaMemcpyDeviceToHost));
        expect_rel(rel_error(n, got, ldo, want, ldo), 1e-12, "row blocks", p);
        HPDL_EXPECT(plan.xfer.transfers - before == want_moves);
    }
    HPDL_EXPECT(hpdl_cuda_rowpow_run_f64(&plan, -2, d_a, lda, d_out, ldo, HPDL_GEMM_CUBLAS, 0) == HPDL_ERR_INVALID);
    hpdl_cuda_rowpow_destroy(&plan);
    cudaFree(d_a); cudaFree(d_out);
    free(a); free(want); free(got);
}

static void test_rowpow_virtual(void) {
    hpdl_cuda_rowpow plan;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    check_rowpow(45, 3, 1);
    check_rowpow(16, 1, 0);
    HPDL_EXPECT(hpdl_cuda_rowpow_create_f64(&plan, 45, hpdl_cuda_device_count() + 1, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_rowpow_create_f64(&plan, 2, 3, 1) == HPDL_ERR_INVALID); /* fewer rows than GPUs */
}

static void test_rowpow_two_gpus(void) {
    if (hpdl_cuda_device_count() < 2) HPDL_SKIP("needs 2 GPUs");
    check_rowpow(77, 2, 0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_matpow_plan_counts),
        HPDL_TEST(test_matpow_f64_powers),
        HPDL_TEST(test_matpow_f32_f16_powers),
        HPDL_TEST(test_matpow_bad_args),
        HPDL_TEST(test_sum_of_powers_virtual),
        HPDL_TEST(test_sum_of_powers_two_gpus),
        HPDL_TEST(test_sum_of_powers_host_and_too_many_gpus),
        HPDL_TEST(test_rowpow_virtual),
        HPDL_TEST(test_rowpow_two_gpus),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
