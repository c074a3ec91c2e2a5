/* Tests of FP8 training in hpdl.h: delayed scaling (the scale formula, the
   rolling amax history) and the MLP's FP8 step (its wiring checked exactly
   on power-of-two scales, its gradients against the f32 step's, its loss
   falling on a small problem), and bad arguments. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

/* ---- delayed scaling ----------------------------------------------------------- */

static float scale_of(const hpdl_fp8_delayed *d) {
    float s = -1.0f;
    HPDL_EXPECT(hpdl_fp8_delayed_scale(d, &s) == HPDL_OK);
    return s;
}

/* scale = fp8_max / (max(history) * 2^margin), on values worked by hand. */
static void test_delayed_scale_formula(void) {
    hpdl_fp8_delayed d;
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 4, 0) == HPDL_OK);
    HPDL_EXPECT(scale_of(&d) == 1.0f);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 0.0f) == HPDL_OK && scale_of(&d) == 1.0f); /* zeros keep 1 */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 2.0f) == HPDL_OK && scale_of(&d) == 224.0f); /* 448 / 2 */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 8.0f) == HPDL_OK && scale_of(&d) == 56.0f);  /* 448 / 8 */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 1.0f) == HPDL_OK && scale_of(&d) == 56.0f);  /* [0 2 8 1] */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 1.0f) == HPDL_OK && scale_of(&d) == 56.0f);  /* [1 2 8 1]: 0 gone */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 1.0f) == HPDL_OK && scale_of(&d) == 56.0f);  /* [1 1 8 1]: 2 gone */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 0.5f) == HPDL_OK && scale_of(&d) == 448.0f); /* [1 1 0.5 1]: 8 gone */

    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E5M2, 2, 2) == HPDL_OK);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 7.0f) == HPDL_OK && scale_of(&d) == 2048.0f); /* 57344 / (7 * 4) */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 0.0f) == HPDL_OK && scale_of(&d) == 2048.0f); /* [7 0] */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 0.0f) == HPDL_OK && scale_of(&d) == 2048.0f); /* [0 0]: kept */
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 3.5f) == HPDL_OK && scale_of(&d) == 4096.0f);

    /* scales that f32 cannot hold are clamped into [FLT_MIN, FLT_MAX] */
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E5M2, 1, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 1e-38f) == HPDL_OK && scale_of(&d) == FLT_MAX);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 1, HPDL_FP8_MAX_MARGIN) == HPDL_OK);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, FLT_MAX) == HPDL_OK && scale_of(&d) == FLT_MIN);
}

static void test_delayed_bad_arguments(void) {
    hpdl_fp8_delayed d, before, zero;
    float s = 5.0f;
    memset(&zero, 0, sizeof zero);
    HPDL_EXPECT(hpdl_fp8_delayed_init(NULL, HPDL_FP8_E4M3, 4, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, (hpdl_fp8_format)7, 4, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, HPDL_FP8_MAX_HISTORY + 1, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 4, -1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 4, HPDL_FP8_MAX_MARGIN + 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_scale(&zero, &s) == HPDL_ERR_INVALID && s == 5.0f); /* never initialised */
    HPDL_EXPECT(hpdl_fp8_delayed_scale(NULL, &s) == HPDL_ERR_INVALID && s == 5.0f);
    HPDL_EXPECT(hpdl_fp8_delayed_init(&d, HPDL_FP8_E4M3, 4, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_fp8_delayed_scale(&d, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, 3.0f) == HPDL_OK);
    before = d;
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, -1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, NAN) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&d, INFINITY) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_record(NULL, 1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&zero, 1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&d, &before, sizeof d) == 0);
}

/* ---- the MLP's FP8 step --------------------------------------------------------- */

static void fill_normal(hpdl_rng *r, float *x, size_t n, double sd) {
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)(sd * hpdl_rng_normal(r));
}

/* x rounded to e4m3 or e5m2 at scale s, and back: the value an FP8 GEMM sees. */
static float through_e4m3(float x, float s) { return hpdl_e4m3_to_f32(hpdl_e4m3_from_f32(x * s)) / s; }
static float through_e5m2(float x, float s) { return hpdl_e5m2_to_f32(hpdl_e5m2_from_f32(x * s)) / s; }

/* ||a - b|| / ||b||, Frobenius. */
static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) { num += (double)(a[i] - b[i]) * (a[i] - b[i]); den += (double)b[i] * b[i]; }
    return sqrt(num / den);
}

/* One layer, scales primed to powers of two (8, 16, 4096) by recording the
   amaxes that give them: dequantizing is then exact, so the step's logits
   must equal deq(X)·deq(W) + b, and its dW deq(X)^T·deq(dZ), up to the
   order of f32 sums. This pins the transposes, the operand order and the
   scales of both GEMMs. */
static void test_step_wiring_exact(void) {
    enum { B = 7, IN = 5, OUT = 3 };
    int widths[2] = {IN, OUT}, i;
    int32_t labels[B] = {0, 2, 1, 1, 0, 2, 2};
    float X[B * IN], Xd[B * IN], Wd[IN * OUT], dZd[B * OUT], want[B * OUT], amax_x = 0;
    hpdl_mlp_f32 m, g;
    hpdl_mlp_work_f32 w;
    hpdl_mlp_fp8 s;
    hpdl_rng r;
    double loss = -1;
    hpdl_rng_seed(&r, 11);
    fill_normal(&r, X, B * IN, 1.0);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 2, widths, HPDL_ACT_RELU, 5) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&g, 2, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w, &m, B) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, B, 16, 0) == HPDL_OK);
    for (i = 0; i < OUT; i++) m.b[0][i] = 0.25f * (float)i;
    HPDL_EXPECT(hpdl_fp8_delayed_record(&s.input[0], 448.0f / 8) == HPDL_OK && s.input[0].scale == 8.0f);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&s.weight[0], 448.0f / 16) == HPDL_OK && s.weight[0].scale == 16.0f);
    HPDL_EXPECT(hpdl_fp8_delayed_record(&s.grad[0], 57344.0f / 4096) == HPDL_OK && s.grad[0].scale == 4096.0f);
    for (i = 0; i < B * IN; i++) { Xd[i] = through_e4m3(X[i], 8); amax_x = fabsf(X[i]) > amax_x ? fabsf(X[i]) : amax_x; }
    for (i = 0; i < IN * OUT; i++) Wd[i] = through_e4m3(m.W[0][i], 16);

    HPDL_EXPECT(hpdl_mlp_train_step_fp8_f32(&m, &w, &g, &s, B, X, labels, 0.0f, 0.0f, &loss) == HPDL_OK);
    HPDL_EXPECT(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, B, OUT, IN, 1, Xd, IN, Wd, OUT, 0, want, OUT) == HPDL_OK);
    for (i = 0; i < B * OUT; i++) HPDL_EXPECT_NEAR(w.act[1][i], want[i] + m.b[0][i % OUT], 1e-5);
    for (i = 0; i < B * OUT; i++) dZd[i] = through_e5m2(w.delta[1][i], 4096); /* the f32 dZ of the FP8 logits */
    HPDL_EXPECT(hpdl_gemm_f32(HPDL_TRANS, HPDL_NO_TRANS, IN, OUT, B, 1, Xd, IN, dZd, OUT, 0, want, OUT) == HPDL_OK);
    for (i = 0; i < IN * OUT; i++) HPDL_EXPECT_NEAR(g.W[0][i], want[i], 1e-6);
    HPDL_EXPECT(loss > 0);
    /* the step's amaxes joined the histories after the primed ones */
    HPDL_EXPECT(s.input[0].history[0] == 56.0f && s.input[0].history[1] == amax_x && s.input[0].next == 2);
    HPDL_EXPECT(s.input[0].scale == 448.0f / (amax_x > 56.0f ? amax_x : 56.0f));
    hpdl_mlp_fp8_destroy(&s);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m);
}

/* A 2-layer MLP: the FP8 step's loss and gradients against the f32 step's
   from the same weights, after one lr = 0 step has filled the histories
   (the first step of a run casts with scale 1: see notes/fp8.md).
   Tolerance: rounding to e4m3 (3 mantissa bits) moves a value by at most
   2^-4 of itself, to e5m2 (2 bits) by 2^-3, and a product of two casts by
   at most about the sum of its operands' bounds. The logits pass through
   two e4m3 operands per layer: 2 * 2^-4 = 2^-3, asked of the logits; the
   loss, a smooth function of them, gets 2^-4. dW0's path holds two e5m2
   casts (the logits' gradient, then the hidden layer's) besides three
   e4m3 ones and ReLU masks that the FP8 forward may flip: 2 * 2^-3 = 2^-2
   is asked of each gradient. Measured over eight seeds (2026-11-26): loss
   <= 0.016, logits <= 0.056, dW1 <= 0.07, dW0 0.08-0.21 (0.18 for the seed
   below; the errors are printed); a transposed or mis-scaled operand gives
   errors of order 1. */
static void test_step_close_to_f32(void) {
    enum { B = 32, IN = 20, H = 16, OUT = 4 };
    int widths[3] = {IN, H, OUT}, i, l;
    int32_t labels[B];
    float X[B * IN], logits32[B * OUT];
    hpdl_mlp_f32 m8, m32, g8, g32;
    hpdl_mlp_work_f32 w8, w32;
    hpdl_mlp_fp8 s;
    hpdl_rng r;
    double loss8 = 0, loss32 = 0, e;
    hpdl_rng_seed(&r, 3);
    fill_normal(&r, X, B * IN, 1.0);
    for (i = 0; i < B; i++) labels[i] = (int32_t)hpdl_rng_below(&r, OUT);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m32, 3, widths, HPDL_ACT_RELU, 9) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m8, 3, widths, HPDL_ACT_RELU, 9) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&g8, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&g32, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w8, &m8, B) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w32, &m32, B) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m8, B, 16, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_train_step_fp8_f32(&m8, &w8, &g8, &s, B, X, labels, 0.0f, 0.0f, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_train_step_fp8_f32(&m8, &w8, &g8, &s, B, X, labels, 0.0f, 0.0f, &loss8) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_backward_f32(&m32, &w32, B, X, labels, &g32, &loss32) == HPDL_OK);
    memcpy(logits32, w32.act[2], sizeof logits32);
    e = fabs(loss8 - loss32) / loss32;
    printf("    loss %.5f (f32 %.5f), relative %.2e\n", loss8, loss32, e);
    HPDL_EXPECT(e > 0 && e <= 0.0625);
    e = rel_err(w8.act[2], logits32, B * OUT);
    printf("    logits relative error %.2e\n", e);
    HPDL_EXPECT(e > 0 && e <= 0.125);
    for (l = 0; l < 2; l++) {
        e = rel_err(g8.W[l], g32.W[l], (size_t)widths[l] * widths[l + 1]);
        printf("    dW%d relative error %.2e\n", l, e);
        HPDL_EXPECT(e > 0 && e <= 0.25);
        e = rel_err(g8.b[l], g32.b[l], (size_t)widths[l + 1]);
        printf("    db%d relative error %.2e\n", l, e);
        HPDL_EXPECT(e <= 0.25);
    }
    hpdl_mlp_fp8_destroy(&s);
    hpdl_mlp_work_destroy_f32(&w8);
    hpdl_mlp_work_destroy_f32(&w32);
    hpdl_mlp_destroy_f32(&g8);
    hpdl_mlp_destroy_f32(&g32);
    hpdl_mlp_destroy_f32(&m8);
    hpdl_mlp_destroy_f32(&m32);
}

/* Four Gaussian blobs in 8 dimensions: FP8 training brings the loss down
   as f32 training does, to within a few percent of accuracy. */
static void test_loss_decreases(void) {
    enum { N = 256, D = 8, C = 4, B = 32, STEPS = 120 };
    int widths[3] = {D, 16, C}, i, j, step;
    int32_t labels[N];
    float X[N * D], centre[C * D];
    hpdl_mlp_f32 m, g;
    hpdl_mlp_work_f32 w;
    hpdl_mlp_fp8 s;
    hpdl_rng r;
    double loss, first = 0, last = 0, acc = 0;
    hpdl_rng_seed(&r, 21);
    fill_normal(&r, centre, C * D, 1.5);
    for (i = 0; i < N; i++) {
        labels[i] = i % C;
        for (j = 0; j < D; j++) X[i * D + j] = centre[labels[i] * D + j] + (float)(0.7 * hpdl_rng_normal(&r));
    }
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 2) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&g, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w, &m, N) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, B, 16, 0) == HPDL_OK);
    for (step = 0; step < STEPS; step++) {
        int i0 = (step * B) % N;
        HPDL_EXPECT(hpdl_mlp_train_step_fp8_f32(&m, &w, &g, &s, B, X + i0 * D, labels + i0, 0.1f, 0.0f, &loss) ==
                    HPDL_OK);
        if (step < N / B) first += loss / (N / B); /* the first pass over the data */
        if (step >= STEPS - N / B) last += loss / (N / B);
    }
    HPDL_EXPECT(hpdl_mlp_accuracy_f32(&m, &w, N, X, labels, &acc) == HPDL_OK);
    printf("    mean loss %.4f over the first epoch, %.4f over the last; accuracy %.3f\n", first, last, acc);
    HPDL_EXPECT(last < 0.5 * first);
    HPDL_EXPECT(acc >= 0.9);
    hpdl_mlp_fp8_destroy(&s);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m);
}

static void test_step_bad_arguments(void) {
    int widths[3] = {6, 5, 3}, other[3] = {6, 4, 3}, i;
    int32_t labels[4] = {0, 1, 2, 1}, bad_labels[4] = {0, 1, 3, 1};
    float X[4 * 6];
    hpdl_mlp_f32 m, g, m2, before;
    hpdl_mlp_work_f32 w;
    hpdl_mlp_fp8 s, s_other, zero;
    hpdl_fp8_delayed input_before;
    double loss = 7;
    memset(&zero, 0, sizeof zero);
    for (i = 0; i < 4 * 6; i++) X[i] = (float)(i % 5) - 2.0f;
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f32(&before, 3, widths, HPDL_ACT_RELU, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&g, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m2, 3, other, HPDL_ACT_RELU, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w, &m, 4) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_fp8_create(NULL, &m, 4, 16, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, NULL, 4, 16, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, 0, 16, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, 4, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, 4, 16, -1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s, &m, 3, 16, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_fp8_create(&s_other, &m2, 4, 16, 0) == HPDL_OK);
    input_before = s.input[0];
#define STEP(S, BATCH, XX, LAB, LR) hpdl_mlp_train_step_fp8_f32(&m, &w, &g, S, BATCH, XX, LAB, LR, 0.0f, &loss)
    HPDL_EXPECT(STEP(NULL, 3, X, labels, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&zero, 3, X, labels, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&s_other, 3, X, labels, 0.1f) == HPDL_ERR_INVALID); /* made for another shape */
    HPDL_EXPECT(STEP(&s, 4, X, labels, 0.1f) == HPDL_ERR_INVALID);       /* beyond the state's max_batch */
    HPDL_EXPECT(STEP(&s, 0, X, labels, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&s, 3, NULL, labels, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&s, 3, X, NULL, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&s, 3, X, bad_labels, 0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(STEP(&s, 3, X, labels, -0.1f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_train_step_fp8_f32(&m, &w, &m2, &s, 3, X, labels, 0.1f, 0.0f, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(loss == 7 && memcmp(&s.input[0], &input_before, sizeof input_before) == 0);
    for (i = 0; i < 6 * 5; i++) HPDL_EXPECT(m.W[0][i] == before.W[0][i]);
    /* a NaN in the input: HPDL_ERR_NUMERIC, model and histories unchanged */
    X[4] = NAN;
    HPDL_EXPECT(STEP(&s, 3, X, labels, 0.1f) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(memcmp(&s.input[0], &input_before, sizeof input_before) == 0);
    for (i = 0; i < 6 * 5; i++) HPDL_EXPECT(m.W[0][i] == before.W[0][i]);
    X[4] = 1.0f;
    HPDL_EXPECT(STEP(&s, 3, X, labels, 0.1f) == HPDL_OK && s.input[0].next == 1);
#undef STEP
    hpdl_mlp_fp8_destroy(&s);
    hpdl_mlp_fp8_destroy(&s_other);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m2);
    hpdl_mlp_destroy_f32(&before);
    hpdl_mlp_destroy_f32(&m);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_delayed_scale_formula),
        HPDL_TEST(test_delayed_bad_arguments),
        HPDL_TEST(test_step_wiring_exact),
        HPDL_TEST(test_step_close_to_f32),
        HPDL_TEST(test_loss_decreases),
        HPDL_TEST(test_step_bad_arguments),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
