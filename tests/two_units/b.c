/* Second translation unit (with main): includes hpdl.h first, runs the same
   GEMM and softmax as a.c with its own copies of the functions, and checks
   that both units agree exactly and match a naive product, and that both
   units' timers read the wall clock. Built as C99 and as C++. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

hpdl_status unit_a_gemm_softmax(int M, int N, int K, const float *A, const float *B, float *C,
                                const int32_t *labels, double *loss);
double unit_a_time_now(void);

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

/* A child process sleeps while this one waits: no CPU time passes here, so a
   timer that read processor time instead of the wall clock would see ~0 s. */
static void both_timers_read_the_wall_clock(void) {
    double a0 = unit_a_time_now(), b0 = hpdl_time_now(), a1, b1;
    if (system("sleep 0.3") != 0) HPDL_SKIP("no shell to run sleep 0.3");
    a1 = unit_a_time_now();
    b1 = hpdl_time_now();
    HPDL_EXPECT(a1 - a0 >= 0.25 && a1 - a0 < 10.0);
    HPDL_EXPECT(b1 - b0 >= 0.25 && b1 - b0 < 10.0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {HPDL_TEST(both_units_agree), HPDL_TEST(both_timers_read_the_wall_clock)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
