/* Tests of the quantized MLP on the CPU (hpdl.h): a small
   ReLU network trained on separable synthetic data keeps its accuracy
   through int8 weights, int8 activations and integer-only inference; the
   int32 requantization against a double-precision reference; bad input. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

enum { FEATURES = 24, CLASSES = 6, HIDDEN = 48, N_TRAIN = 1200, N_TEST = 600, N_CALIB = 256 };

/* Gaussian clusters around random centres: separable, but not trivially. */
typedef struct problem {
    float X_train[N_TRAIN * FEATURES], X_test[N_TEST * FEATURES];
    int32_t y_train[N_TRAIN], y_test[N_TEST];
    hpdl_mlp_f32 model;
    double float_acc;
} problem;

static void make_points(hpdl_rng *r, const double *centres, int n, float *X, int32_t *y) {
    int i, j;
    for (i = 0; i < n; i++) {
        y[i] = (int32_t)hpdl_rng_below(r, CLASSES);
        for (j = 0; j < FEATURES; j++) X[i * FEATURES + j] = (float)(centres[y[i] * FEATURES + j] + 1.5 * hpdl_rng_normal(r));
    }
}

/* Trains a 24-48-6 ReLU MLP (a few seconds at most) and measures it. */
static problem *make_problem(hpdl_activation act) {
    static const int widths[3] = {FEATURES, HIDDEN, CLASSES};
    problem *p = (problem *)hpdl_alloc(1, sizeof *p);
    double centres[CLASSES * FEATURES];
    hpdl_mlp_work_f32 w;
    hpdl_mlp_f32 grad;
    hpdl_rng r;
    int i, epoch;
    if (!p) exit(EXIT_FAILURE);
    hpdl_rng_seed(&r, 7);
    for (i = 0; i < CLASSES * FEATURES; i++) centres[i] = hpdl_rng_normal(&r);
    make_points(&r, centres, N_TRAIN, p->X_train, p->y_train);
    make_points(&r, centres, N_TEST, p->X_test, p->y_test);
    HPDL_CHECK(hpdl_mlp_create_f32(&p->model, 3, widths, act, 8));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, act));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &p->model, 40));
    for (epoch = 0; epoch < 15; epoch++)
        for (i = 0; i < N_TRAIN; i += 40)
            HPDL_CHECK(hpdl_mlp_train_step_f32(&p->model, &w, &grad, 40, p->X_train + i * FEATURES, p->y_train + i, 0.05f,
                                               0.0f, NULL));
    HPDL_CHECK(hpdl_mlp_accuracy_f32(&p->model, &w, N_TEST, p->X_test, p->y_test, &p->float_acc));
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&grad);
    return p;
}

static void free_problem(problem *p) {
    hpdl_mlp_destroy_f32(&p->model);
    HPDL_FREE(p);
}

/* ---- accuracy through the three steps -------------------------------------------- */

static void check_modes(problem *p, double pct) {
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work w;
    int mode;
    HPDL_EXPECT(p->float_acc > 0.8); /* the model learned something worth keeping */
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, pct));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 100));
    for (mode = HPDL_QUANT_WEIGHTS; mode <= HPDL_QUANT_INTEGER; mode++) {
        double acc = -1;
        HPDL_EXPECT(hpdl_quant_mlp_accuracy(&q, (hpdl_quant_mode)mode, &w, N_TEST, p->X_test, p->y_test, &acc) == HPDL_OK);
        printf("    pct %g, %-30s %.4f (float %.4f)\n", pct, hpdl_quant_mode_name((hpdl_quant_mode)mode), acc, p->float_acc);
        HPDL_EXPECT(fabs(acc - p->float_acc) <= 0.02);
    }
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);
}

static void test_accuracy_kept(void) {
    problem *p = make_problem(HPDL_ACT_RELU);
    check_modes(p, 100.0);
    check_modes(p, 99.9);
    free_problem(p);
}

/* Integer-only real logits (int32 * logit_scale) follow the float model's. */
static void test_integer_logits_follow_float(void) {
    problem *p = make_problem(HPDL_ACT_RELU);
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work w;
    hpdl_mlp_work_f32 fw;
    double diff = 0, mag = 0;
    int i;
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 100));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&fw, &p->model, 100));
    HPDL_CHECK(hpdl_mlp_forward_f32(&p->model, &fw, 100, p->X_test));
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, 100, p->X_test) == HPDL_OK);
    for (i = 0; i < 100 * CLASSES; i++) {
        HPDL_EXPECT(w.out[i] == (float)(w.logits[i] * q.logit_scale));
        diff += fabs(w.out[i] - fw.act[2][i]);
        mag += fabs(fw.act[2][i]);
    }
    HPDL_EXPECT(mag > 0 && diff / mag < 0.05);
    hpdl_mlp_work_destroy_f32(&fw);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);
    free_problem(p);
}

/* Weights round-trip within half a step of their channel's scale; biases at s_x * s_w. */
static void test_weights_and_biases(void) {
    problem *p = make_problem(HPDL_ACT_RELU);
    hpdl_quant_mlp q;
    int l, i, j, far = 0, wrong_bias = 0, nonzero_zp = 0;
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, 100.0));
    for (l = 0; l < q.n_layers; l++) {
        int n_in = q.widths[l], n_out = q.widths[l + 1];
        for (j = 0; j < n_out; j++) {
            double s = q.w_params[l][j].scale, sx = q.x_params[l].scale;
            nonzero_zp += q.w_params[l][j].zero_point != 0;
            for (i = 0; i < n_in; i++) {
                size_t k = (size_t)i * n_out + j;
                far += fabs(q.dequant.W[l][k] - p->model.W[l][k]) > 0.5 * s * (1 + 1e-6);
                far += q.dequant.W[l][k] != (float)(s * q.W[l][k]);
            }
            wrong_bias += q.bias32[l][j] != (int32_t)round(p->model.b[l][j] / (sx * (double)q.w_params[l][j].scale));
        }
    }
    HPDL_EXPECT(far == 0);
    HPDL_EXPECT(wrong_bias == 0);
    HPDL_EXPECT(nonzero_zp == 0); /* symmetric */
    HPDL_EXPECT(q.x_params[1].zero_point == HPDL_QUANT_QMIN); /* ReLU outputs: range [0, max] */
    hpdl_quant_mlp_free(&q);
    free_problem(p);
}

/* ---- int32 requantization ------------------------------------------------------------ */

/* Clamped to int8, hpdl_quant_gemm_requant_i32 is hpdl_quant_gemm_requant_i8;
   unclamped it is zero_point + (acc + bias) * M within one unit (double reference). */
static void test_requant_i32(void) {
    enum { M = 13, N = 9, K = 37 };
    int8_t A[M * K], B[K * N], C8[M * N];
    int32_t C[M * N], m0[N], bias[N], acc[M * N];
    int shift[N], i, j, relu, bad = 0, big = 0;
    hpdl_quant_output o;
    hpdl_rng r;
    hpdl_rng_seed(&r, 3);
    for (i = 0; i < M * K; i++) A[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
    for (i = 0; i < K * N; i++) B[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
    for (j = 0; j < N; j++) {
        HPDL_CHECK(hpdl_quant_multiplier(0.002 + 0.2 * hpdl_rng_uniform(&r), &m0[j], &shift[j]));
        bias[j] = (int32_t)hpdl_rng_below(&r, 20001) - 10000;
    }
    HPDL_CHECK(hpdl_quant_gemm_i8(M, N, K, A, K, 5, B, N, -3, acc, N));
    o.bias = bias; o.multiplier = m0; o.shift = shift; o.per_channel = 1; o.zero_point = 7;
    for (relu = 0; relu < 2; relu++) {
        o.relu = relu;
        HPDL_CHECK(hpdl_quant_gemm_requant_i32(M, N, K, A, K, 5, B, N, -3, &o, C, N));
        HPDL_CHECK(hpdl_quant_gemm_requant_i8(M, N, K, A, K, 5, B, N, -3, &o, C8, N));
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                double real = ldexp((double)m0[j], -31 - shift[j]), want = 7 + (acc[i * N + j] + (double)bias[j]) * real;
                int32_t got = C[i * N + j];
                if (relu && want < 7) want = 7;
                bad += fabs(got - want) > 1.0;
                bad += (got < -128 ? -128 : got > 127 ? 127 : got) != C8[i * N + j];
                big += got > 127 || got < -128;
            }
    }
    HPDL_EXPECT(bad == 0);
    HPDL_EXPECT(big > 0); /* the int32 path really goes beyond int8 */
}

/* ---- bad input ------------------------------------------------------------------------ */

static void test_bad_args(void) {
    problem *p = make_problem(HPDL_ACT_RELU);
    hpdl_quant_mlp q, untouched;
    hpdl_quant_mlp_work w;
    float zeros[4 * FEATURES], X[2 * FEATURES];
    int32_t C[4] = {-1, -1, -1, -1}, m0 = 5, labels[2] = {0, CLASSES};
    int shift = 0;
    int8_t A[4] = {1, 2, 3, 4};
    hpdl_quant_output o;
    double acc = -1;
    memset(zeros, 0, sizeof zeros);
    memset(&untouched, 0x5a, sizeof untouched);
    q = untouched;
    HPDL_EXPECT(hpdl_quant_mlp_build(NULL, &p->model, N_CALIB, p->X_train, 100.0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, NULL, N_CALIB, p->X_train, 100.0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, &p->model, 0, p->X_train, 100.0) == HPDL_ERR_INVALID); /* empty calibration */
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, NULL, 100.0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, 30.0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, &p->model, 4, zeros, 100.0) == HPDL_ERR_INVALID); /* zero range */
    memcpy(X, p->X_train, sizeof X);
    X[FEATURES + 5] = (float)NAN; /* row 1 */
    HPDL_EXPECT(hpdl_quant_mlp_build(&q, &p->model, 2, X, 100.0) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(memcmp(&q, &untouched, sizeof q) == 0);

    HPDL_CHECK(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 2));
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, 3, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, (hpdl_quant_mode)0, &w, 1, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, (hpdl_quant_mode)4, &w, 1, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, HPDL_QUANT_ACTIVATIONS, &w, 1, X) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, 2, X) == HPDL_ERR_NUMERIC); /* NaN in row 1 */
    HPDL_EXPECT(hpdl_quant_mlp_accuracy(&q, HPDL_QUANT_WEIGHTS, &w, 2, p->X_test, labels, &acc) == HPDL_ERR_INVALID);
    HPDL_EXPECT(acc == -1);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);

    o.bias = NULL; o.multiplier = &m0; o.shift = &shift; o.per_channel = 0; o.zero_point = 0; o.relu = 0;
    HPDL_EXPECT(hpdl_quant_gemm_requant_i32(2, 2, 2, A, 2, 0, A, 2, 0, &o, C, 2) == HPDL_ERR_INVALID); /* M0 < 2^30 */
    m0 = 1 << 30;
    HPDL_EXPECT(hpdl_quant_gemm_requant_i32(2, 2, 2, A, 2, 200, A, 2, 0, &o, C, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_gemm_requant_i32(2, 2, 2, A, 2, 0, A, 2, 0, NULL, C, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_gemm_requant_i32(2, 2, 2, A, 1, 0, A, 2, 0, &o, C, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(C[0] == -1 && C[1] == -1 && C[2] == -1 && C[3] == -1);
    free_problem(p);
}

/* A sigmoid network runs the simulated steps but not integer-only inference. */
static void test_sigmoid_model(void) {
    problem *p = make_problem(HPDL_ACT_SIGMOID);
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work w;
    double acc = -1;
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &p->model, N_CALIB, p->X_train, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 100));
    HPDL_EXPECT(hpdl_quant_mlp_accuracy(&q, HPDL_QUANT_ACTIVATIONS, &w, N_TEST, p->X_test, p->y_test, &acc) == HPDL_OK);
    HPDL_EXPECT(fabs(acc - p->float_acc) <= 0.03);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, 10, p->X_test) == HPDL_ERR_UNSUPPORTED);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);
    free_problem(p);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {HPDL_TEST(test_accuracy_kept),       HPDL_TEST(test_integer_logits_follow_float),
                                      HPDL_TEST(test_weights_and_biases),  HPDL_TEST(test_requant_i32),
                                      HPDL_TEST(test_bad_args),            HPDL_TEST(test_sigmoid_model)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
