/* Tests of the optimisers (hpdl_sgd_momentum_<t>, hpdl_adamw_<t>) and the
   learning-rate schedules (hpdl_lr_at, hpdl_lr_parse, hpdl_lr_schedule_check).
   The expected values come from the update rules written out here again, in
   the form PyTorch's documentation gives them, independently of hpdl.h. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

#include <unistd.h> /* dup, dup2: counting the lines a refusal prints */

#define N 37 /* parameters per test: not a multiple of anything */
#define STEPS 5

static hpdl_rng rng;

static double uniform(double lo, double hi) { return lo + (hi - lo) * hpdl_rng_uniform(&rng); }

static void fill_uniform(double *x, int n, double lo, double hi) {
    int i;
    for (i = 0; i < n; i++) x[i] = uniform(lo, hi);
}

/* max over i of |got - want| / max(1, |want|) (NaN counts as worst) */
static double rel_err(const double *got, const double *want, int n) {
    double worst = 0;
    int i;
    for (i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        double e = fabs(got[i] - want[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static double rel_err_f32(const float *got, const double *want, int n) {
    double g[N];
    int i;
    for (i = 0; i < n; i++) g[i] = got[i];
    return rel_err(g, want, n);
}

/* ---- SGD ------------------------------------------------------------------ */

typedef struct sgd_case { double lr, momentum, weight_decay; int nesterov; } sgd_case;

/* torch.optim.SGD's documented rule (dampening 0): g = grad + wd*w;
   b = g on the first step, else momentum*b + g; then w -= lr*b, or with
   Nesterov w -= lr*(g + momentum*b). */
static void sgd_expected(const sgd_case *c, int first, double *w, const double *grad, double *buf) {
    int i;
    for (i = 0; i < N; i++) {
        double g = grad[i] + c->weight_decay * w[i];
        buf[i] = first ? g : c->momentum * buf[i] + g;
        w[i] -= c->lr * (c->nesterov ? g + c->momentum * buf[i] : buf[i]);
    }
}

/* STEPS steps of f64 and f32 SGD against the expected rule on the same data. */
static void check_sgd_case(const sgd_case *c) {
    double w64[N], v64[N], want[N], buf[N], grad[N];
    float w32[N], v32[N], g32[N];
    int i, t;
    fill_uniform(want, N, -1, 1);
    for (i = 0; i < N; i++) { /* all three start from the same float values */
        w32[i] = (float)want[i];
        want[i] = w64[i] = w32[i];
        v64[i] = 0;
        v32[i] = 0;
    }
    for (t = 0; t < STEPS; t++) {
        fill_uniform(grad, N, -2, 2);
        for (i = 0; i < N; i++) g32[i] = (float)grad[i], grad[i] = g32[i];
        HPDL_EXPECT(hpdl_sgd_momentum_f64(N, w64, grad, v64, c->lr, c->momentum, c->weight_decay, c->nesterov) ==
                    HPDL_OK);
        HPDL_EXPECT(hpdl_sgd_momentum_f32(N, w32, g32, v32, c->lr, c->momentum, c->weight_decay, c->nesterov) ==
                    HPDL_OK);
        sgd_expected(c, t == 0, want, grad, buf);
        HPDL_EXPECT(rel_err(w64, want, N) <= 1e-13);
        HPDL_EXPECT(rel_err(v64, buf, N) <= 1e-13);
        HPDL_EXPECT(rel_err_f32(w32, want, N) <= 1e-5);
        HPDL_EXPECT(rel_err_f32(v32, buf, N) <= 1e-5);
    }
}

static void test_sgd_momentum_matches_the_rule(void) {
    sgd_case c = {0.05, 0.9, 0.0, 0};
    check_sgd_case(&c);
}

static void test_sgd_nesterov_and_weight_decay(void) {
    sgd_case nesterov = {0.05, 0.9, 0.0, 1}, decay = {0.05, 0.9, 0.01, 0}, both = {0.1, 0.5, 0.02, 1};
    check_sgd_case(&nesterov);
    check_sgd_case(&decay);
    check_sgd_case(&both);
}

static void test_sgd_without_momentum_is_plain_sgd(void) {
    sgd_case c = {0.3, 0.0, 0.1, 0};
    check_sgd_case(&c);
}

/* Numbers worked out by hand: w = 2, grad = 1, lr = 0.1, momentum 0.9,
   weight decay 0.5. Step 1: g = 1 + 1 = 2, v = 2, w = 2 - 0.2 = 1.8.
   Step 2 (grad 1): g = 1 + 0.9 = 1.9, v = 1.8 + 1.9 = 3.7, w = 1.8 - 0.37 = 1.43.
   Nesterov, step 1: w = 2 - 0.1*(2 + 0.9*2) = 1.62. */
static void test_sgd_by_hand(void) {
    double w = 2, g = 1, v = 0;
    HPDL_EXPECT(hpdl_sgd_momentum_f64(1, &w, &g, &v, 0.1, 0.9, 0.5, 0) == HPDL_OK);
    HPDL_EXPECT_NEAR(w, 1.8, 1e-15);
    HPDL_EXPECT_NEAR(v, 2.0, 1e-15);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(1, &w, &g, &v, 0.1, 0.9, 0.5, 0) == HPDL_OK);
    HPDL_EXPECT_NEAR(w, 1.43, 1e-15);
    HPDL_EXPECT_NEAR(v, 3.7, 1e-15);
    w = 2;
    v = 0;
    HPDL_EXPECT(hpdl_sgd_momentum_f64(1, &w, &g, &v, 0.1, 0.9, 0.5, 1) == HPDL_OK);
    HPDL_EXPECT_NEAR(w, 1.62, 1e-15);
}

/* ---- AdamW ---------------------------------------------------------------- */

typedef struct adamw_case { double lr, beta1, beta2, eps, weight_decay; } adamw_case;

/* torch.optim.AdamW's documented rule at step t >= 1: w -= lr*wd*w;
   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). */
static void adamw_expected(const adamw_case *c, int t, double *w, const double *grad, double *m, double *v) {
    int i;
    for (i = 0; i < N; i++) {
        double m_hat, v_hat;
        w[i] -= c->lr * c->weight_decay * w[i];
        m[i] = c->beta1 * m[i] + (1 - c->beta1) * grad[i];
        v[i] = c->beta2 * v[i] + (1 - c->beta2) * grad[i] * grad[i];
        m_hat = m[i] / (1 - pow(c->beta1, t));
        v_hat = v[i] / (1 - pow(c->beta2, t));
        w[i] -= c->lr * m_hat / (sqrt(v_hat) + c->eps);
    }
}

static void check_adamw_case(const adamw_case *c) {
    double w64[N], m64[N], v64[N], want[N], m_want[N], v_want[N], grad[N];
    float w32[N], m32[N], v32[N], g32[N];
    int i, t;
    fill_uniform(want, N, -1, 1);
    for (i = 0; i < N; i++) {
        w32[i] = (float)want[i];
        want[i] = w64[i] = w32[i];
        m64[i] = v64[i] = m_want[i] = v_want[i] = 0;
        m32[i] = v32[i] = 0;
    }
    for (t = 1; t <= STEPS; t++) {
        fill_uniform(grad, N, -2, 2);
        for (i = 0; i < N; i++) g32[i] = (float)grad[i], grad[i] = g32[i];
        HPDL_EXPECT(hpdl_adamw_f64(N, w64, grad, m64, v64, t, c->lr, c->beta1, c->beta2, c->eps, c->weight_decay) ==
                    HPDL_OK);
        HPDL_EXPECT(hpdl_adamw_f32(N, w32, g32, m32, v32, t, c->lr, c->beta1, c->beta2, c->eps, c->weight_decay) ==
                    HPDL_OK);
        adamw_expected(c, t, want, grad, m_want, v_want);
        HPDL_EXPECT(rel_err(w64, want, N) <= 1e-13);
        HPDL_EXPECT(rel_err(m64, m_want, N) <= 1e-13);
        HPDL_EXPECT(rel_err(v64, v_want, N) <= 1e-13);
        HPDL_EXPECT(rel_err_f32(w32, want, N) <= 1e-5);
        HPDL_EXPECT(rel_err_f32(m32, m_want, N) <= 1e-5);
        HPDL_EXPECT(rel_err_f32(v32, v_want, N) <= 1e-5);
    }
}

static void test_adamw_matches_the_rule(void) {
    adamw_case defaults = {1e-3, 0.9, 0.999, 1e-8, 0.01}, no_decay = {0.01, 0.9, 0.999, 1e-8, 0.0};
    adamw_case zero_betas = {0.01, 0.0, 0.0, 1e-6, 0.1}, large_eps = {0.1, 0.8, 0.99, 0.5, 0.05};
    check_adamw_case(&defaults);
    check_adamw_case(&no_decay);
    check_adamw_case(&zero_betas);
    check_adamw_case(&large_eps);
}

/* By hand, step 1: w = 1, grad = 0.5, lr = 0.1, weight decay 0.01: decay
   gives 0.999; m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25, so the
   step is 0.1 * 0.5 / (0.5 + eps): about lr in the gradient's direction. */
static void test_adamw_by_hand(void) {
    double w = 1, g = 0.5, m = 0, v = 0;
    HPDL_EXPECT(hpdl_adamw_f64(1, &w, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.01) == HPDL_OK);
    HPDL_EXPECT_NEAR(m, 0.05, 1e-15);
    HPDL_EXPECT_NEAR(v, 0.00025, 1e-15);
    HPDL_EXPECT_NEAR(w, 0.999 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);
}

/* ---- refusals ------------------------------------------------------------- */

/* Every call here is refused, and nothing is written. */
static void test_optimisers_refuse_bad_arguments(void) {
    double w[4] = {1, 2, 3, 4}, g[4] = {1, -1, 2, -2}, a[4] = {5, 6, 7, 8}, b[4] = {9, 10, 11, 12};
    double w0[4], a0[4], b0[4], inf = HUGE_VAL, not_a_number = NAN;
    float wf[4] = {1, 2, 3, 4}, gf[4] = {1, 1, 1, 1}, af[4] = {0, 0, 0, 0}, wf0[4];
    memcpy(w0, w, sizeof w);
    memcpy(a0, a, sizeof a);
    memcpy(b0, b, sizeof b);
    memcpy(wf0, wf, sizeof wf);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(-1, w, g, a, 0.1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, NULL, g, a, 0.1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, NULL, a, 0.1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, NULL, 0.1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, -0.1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, not_a_number, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, inf, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, 0.1, -0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, 0.1, not_a_number, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, 0.1, 0.9, -1e-4, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, 0.1, 0.9, inf, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(4, w, g, a, 0.1, 0.0, 0, 1) == HPDL_ERR_INVALID); /* Nesterov, no momentum */
    HPDL_EXPECT(hpdl_sgd_momentum_f32(4, wf, gf, af, -1, 0.9, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(-1, w, g, a, b, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, NULL, g, a, b, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, NULL, a, b, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, NULL, b, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, NULL, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 0, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, -3, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, -1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, not_a_number, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 1.0, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, -0.1, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 1.0, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, not_a_number, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 0.999, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 0.999, -1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 0.999, inf, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 0.999, 1e-8, -0.01) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f64(4, w, g, a, b, 1, 1e-3, 0.9, 0.999, 1e-8, not_a_number) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_adamw_f32(4, wf, gf, af, af + 0, 0, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(w, w0, sizeof w) == 0 && memcmp(a, a0, sizeof a) == 0 && memcmp(b, b0, sizeof b) == 0);
    HPDL_EXPECT(memcmp(wf, wf0, sizeof wf) == 0);
}

/* n == 0 does nothing and succeeds, even with NULL arrays. */
static void test_optimisers_accept_empty(void) {
    HPDL_EXPECT(hpdl_sgd_momentum_f32(0, NULL, NULL, NULL, 0.1, 0.9, 0, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_sgd_momentum_f64(0, NULL, NULL, NULL, 0.1, 0.9, 0, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_adamw_f32(0, NULL, NULL, NULL, NULL, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_adamw_f64(0, NULL, NULL, NULL, NULL, 1, 1e-3, 0.9, 0.999, 1e-8, 0) == HPDL_OK);
}

/* From C++ the names without a suffix pick the type from the pointers. */
static void test_cxx_overloads(void) {
#ifdef __cplusplus
    float w1[3] = {1, 2, 3}, w2[3] = {1, 2, 3}, g[3] = {0.5f, -1, 2}, v1[3] = {0}, v2[3] = {0}, m1[3] = {0}, m2[3] = {0};
    double wd[3] = {1, 2, 3}, gd[3] = {0.5, -1, 2}, vd[3] = {0};
    HPDL_EXPECT(hpdl_sgd_momentum(3, w1, g, v1, 0.1, 0.9, 0.01, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_sgd_momentum_f32(3, w2, g, v2, 0.1, 0.9, 0.01, 1) == HPDL_OK);
    HPDL_EXPECT(memcmp(w1, w2, sizeof w1) == 0);
    HPDL_EXPECT(hpdl_adamw(3, w1, g, m1, v1, 1, 1e-3, 0.9, 0.999, 1e-8, 0.01) == HPDL_OK);
    HPDL_EXPECT(hpdl_adamw_f32(3, w2, g, m2, v2, 1, 1e-3, 0.9, 0.999, 1e-8, 0.01) == HPDL_OK);
    HPDL_EXPECT(memcmp(w1, w2, sizeof w1) == 0);
    HPDL_EXPECT(hpdl_sgd_momentum(3, wd, gd, vd, 0.1, 0.0, 0.0, 0) == HPDL_OK);
    HPDL_EXPECT_NEAR(wd[2], 3 - 0.2, 1e-15);
#endif
}

/* ---- learning-rate schedules ---------------------------------------------- */

static hpdl_lr_schedule schedule(hpdl_lr_kind kind, double base_lr, int64_t warmup, int64_t total) {
    hpdl_lr_schedule s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.base_lr = base_lr;
    s.warmup_steps = warmup;
    s.total_steps = total;
    s.step_size = 1;
    s.gamma = 1;
    return s;
}

static void test_lr_constant_and_warmup(void) {
    hpdl_lr_schedule s = schedule(HPDL_LR_CONSTANT, 0.4, 0, 0);
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_OK);
    HPDL_EXPECT(hpdl_lr_at(&s, 0) == 0.4);
    HPDL_EXPECT(hpdl_lr_at(&s, 1000000) == 0.4);
    s.warmup_steps = 4; /* 0.1, 0.2, 0.3, 0.4, then 0.4 */
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 0), 0.1, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 1), 0.2, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 2), 0.3, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 3), 0.4, 1e-15);
    HPDL_EXPECT(hpdl_lr_at(&s, 4) == 0.4);
    HPDL_EXPECT(hpdl_lr_at(&s, 99) == 0.4);
}

static void test_lr_step(void) {
    hpdl_lr_schedule s = schedule(HPDL_LR_STEP, 1.0, 0, 0);
    s.step_size = 30;
    s.gamma = 0.1;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_OK);
    HPDL_EXPECT(hpdl_lr_at(&s, 0) == 1.0);
    HPDL_EXPECT(hpdl_lr_at(&s, 29) == 1.0);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 30), 0.1, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 59), 0.1, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 60), 0.01, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 95), 0.001, 1e-15);
    s.warmup_steps = 10; /* the steps count from the end of warm-up */
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 0), 0.1, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 9), 1.0, 1e-15);
    HPDL_EXPECT(hpdl_lr_at(&s, 39) == 1.0);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 40), 0.1, 1e-15);
}

static void test_lr_cosine(void) {
    const double pi = 3.14159265358979323846;
    hpdl_lr_schedule s = schedule(HPDL_LR_COSINE, 1.0, 0, 100);
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_OK);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 0), 1.0, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 25), (1 + cos(pi / 4)) / 2, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 50), 0.5, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 99), (1 + cos(pi * 0.99)) / 2, 1e-15);
    HPDL_EXPECT(hpdl_lr_at(&s, 100) == 0.0);
    HPDL_EXPECT(hpdl_lr_at(&s, 5000) == 0.0);
    /* warm-up 500 to 1.0, then down to min_lr 0.1 over 1000 steps */
    s = schedule(HPDL_LR_COSINE, 1.0, 500, 1500);
    s.min_lr = 0.1;
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 0), 1.0 / 500, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 249), 0.5, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 499), 1.0, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 500), 1.0, 1e-15);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 1000), 0.55, 1e-15);
    HPDL_EXPECT(hpdl_lr_at(&s, 1500) == 0.1);
    HPDL_EXPECT(hpdl_lr_at(&s, 1501) == 0.1);
}

static void test_lr_invalid_schedules(void) {
    hpdl_lr_schedule s;
    HPDL_EXPECT(hpdl_lr_schedule_check(NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(isnan(hpdl_lr_at(NULL, 0)));
    s = schedule(HPDL_LR_CONSTANT, 0.1, 0, 0);
    HPDL_EXPECT(isnan(hpdl_lr_at(&s, -1)));
    s.base_lr = -0.1;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID && isnan(hpdl_lr_at(&s, 0)));
    s.base_lr = NAN;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s.base_lr = HUGE_VAL;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s = schedule(HPDL_LR_CONSTANT, 0.1, -1, 0);
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s = schedule((hpdl_lr_kind)7, 0.1, 0, 0);
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID && isnan(hpdl_lr_at(&s, 3)));
    s = schedule(HPDL_LR_STEP, 0.1, 0, 0);
    s.step_size = 0;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s.step_size = 10;
    s.gamma = 1.5;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s.gamma = -0.5;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s = schedule(HPDL_LR_COSINE, 0.1, 100, 100); /* nothing left to decay over */
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID && isnan(hpdl_lr_at(&s, 0)));
    s = schedule(HPDL_LR_COSINE, 0.1, 0, 100);
    s.min_lr = 0.2;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
    s.min_lr = -0.01;
    HPDL_EXPECT(hpdl_lr_schedule_check(&s) == HPDL_ERR_INVALID);
}

static void test_lr_parse_accepts(void) {
    hpdl_lr_schedule s;
    HPDL_EXPECT(hpdl_lr_parse("constant", 0.1, 1000, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_CONSTANT && s.base_lr == 0.1 && s.warmup_steps == 0);
    HPDL_EXPECT(hpdl_lr_parse("step:30:0.1", 0.5, 1000, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_STEP && s.step_size == 30 && s.gamma == 0.1 && s.base_lr == 0.5);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 30), 0.05, 1e-15);
    HPDL_EXPECT(hpdl_lr_parse("cosine", 0.1, 1000, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_COSINE && s.total_steps == 1000 && s.warmup_steps == 0 && s.min_lr == 0);
    HPDL_EXPECT(hpdl_lr_parse("cosine:warmup=500", 0.1, 1000, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_COSINE && s.warmup_steps == 500 && s.total_steps == 1000);
    HPDL_EXPECT_NEAR(hpdl_lr_at(&s, 499), 0.1, 1e-15);
    HPDL_EXPECT(hpdl_lr_parse("step:1:1:warmup=3", 0.1, 0, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_STEP && s.step_size == 1 && s.gamma == 1 && s.warmup_steps == 3);
    HPDL_EXPECT(hpdl_lr_parse("constant:warmup=0", 0.1, 0, &s) == HPDL_OK);
    HPDL_EXPECT(s.kind == HPDL_LR_CONSTANT && s.warmup_steps == 0);
}

/* Runs hpdl_lr_parse with stderr sent to a file; returns the lines printed. */
static int parse_counting_lines(const char *text, double base_lr, int64_t total, hpdl_lr_schedule *out,
                                hpdl_status *st) {
    FILE *tmp = tmpfile();
    int saved, c, lines = 0;
    if (!tmp) return -1;
    fflush(stderr);
    saved = dup(2);
    dup2(fileno(tmp), 2);
    *st = hpdl_lr_parse(text, base_lr, total, out);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    while ((c = fgetc(tmp)) != EOF) lines += c == '\n';
    fclose(tmp);
    return lines;
}

static void test_lr_parse_refuses(void) {
    static const char *bad[] = {"", "Constant", "const", "constant:", "constant ", " constant", "linear", "step",
                                "step:30", "step:0:0.1", "step:-1:0.1", "step:30:1.5", "step:30:-0.1",
                                "step:30:0.1x", "step:30x:0.1", "step:30:nan", "step::0.1", "step:30:0.1:",
                                "step:30:0.1:warmup=", "cosine:warmup=abc", "cosine:warmup=-1",
                                "cosine:warmup=1000", "cosine:warmup=5:warmup=5", "cosine:warm=5", "cosine:5",
                                "cosine:warmup=500:extra", "step:30:0.1:warmup=1:x:y:z"};
    char long_text[300];
    hpdl_lr_schedule s, before;
    hpdl_status st;
    int i;
    memset(&before, 0x5a, sizeof before);
    for (i = 0; i < HPDL_COUNT(bad); i++) {
        s = before;
        HPDL_EXPECT(parse_counting_lines(bad[i], 0.1, 1000, &s, &st) == 1);
        HPDL_EXPECT(st == HPDL_ERR_INVALID);
        HPDL_EXPECT(memcmp(&s, &before, sizeof s) == 0);
        if (st != HPDL_ERR_INVALID) fprintf(stderr, "    accepted '%s'\n", bad[i]);
    }
    memset(long_text, 'c', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    HPDL_EXPECT(parse_counting_lines(long_text, 0.1, 1000, &s, &st) == 1 && st == HPDL_ERR_INVALID);
    HPDL_EXPECT(parse_counting_lines(NULL, 0.1, 1000, &s, &st) == 1 && st == HPDL_ERR_INVALID);
    HPDL_EXPECT(parse_counting_lines("constant", 0.1, 1000, NULL, &st) == 1 && st == HPDL_ERR_INVALID);
    /* well-formed, but the schedule does not fit its base lr or step count */
    HPDL_EXPECT(parse_counting_lines("constant", -0.1, 1000, &s, &st) == 1 && st == HPDL_ERR_INVALID);
    HPDL_EXPECT(parse_counting_lines("cosine", 0.1, 0, &s, &st) == 1 && st == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&s, &before, sizeof s) == 0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_sgd_momentum_matches_the_rule),
        HPDL_TEST(test_sgd_nesterov_and_weight_decay),
        HPDL_TEST(test_sgd_without_momentum_is_plain_sgd),
        HPDL_TEST(test_sgd_by_hand),
        HPDL_TEST(test_adamw_matches_the_rule),
        HPDL_TEST(test_adamw_by_hand),
        HPDL_TEST(test_optimisers_refuse_bad_arguments),
        HPDL_TEST(test_optimisers_accept_empty),
        HPDL_TEST(test_cxx_overloads),
        HPDL_TEST(test_lr_constant_and_warmup),
        HPDL_TEST(test_lr_step),
        HPDL_TEST(test_lr_cosine),
        HPDL_TEST(test_lr_invalid_schedules),
        HPDL_TEST(test_lr_parse_accepts),
        HPDL_TEST(test_lr_parse_refuses),
    };
    hpdl_rng_seed(&rng, 20261126);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
