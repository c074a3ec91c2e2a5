/* Second translation unit (with main): includes hpdl.h too, runs the same
   GEMM and softmax as a.c with its own copies of the functions, and checks
   that both units agree exactly and match a naive product. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

hpdl_status unit_a_gemm_softmax(int M, int N, int K, const float *A, const float *B, float *C,
                                const int32_t *labels, double *loss);

static void both_units_agree(void) {
    enum { M = 9, N = 7, K = 5 };
    float A[M * K], B[K * N], Ca[M * N], Cb[M * N];
    int32_t labels[M];
    double loss_a = -1, loss_b = -2;
    hpdl_rng r;
    int i, j, k;
    hpdl_rng_seed(&r, 11);
    for (i = 0; i < M * K; i++) A[i] = (float)hpdl_rng_uniform(&r) - 0.5f;
    for (i = 0; i < K * N; i++) B[i] = (float)hpdl_rng_uniform(&r) - 0.5f;
    for (i = 0; i < M; i++) labels[i] = (int32_t)hpdl_rng_below(&r, N);
    HPDL_EXPECT(unit_a_gemm_softmax(M, N, K, A, B, Ca, labels, &loss_a) == HPDL_OK);
    HPDL_EXPECT(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, Cb, N) == HPDL_OK);
    HPDL_EXPECT(hpdl_softmax_xent_f32(M, N, Cb, N, labels, NULL, 0, &loss_b) == HPDL_OK);
    HPDL_EXPECT(memcmp(Ca, Cb, sizeof Ca) == 0);
    HPDL_EXPECT(loss_a == loss_b && loss_a > 0);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) s += (double)A[i * K + k] * B[k * N + j];
            HPDL_EXPECT_NEAR(Ca[i * N + j], s, 1e-5);
        }
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {HPDL_TEST(both_units_agree)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
