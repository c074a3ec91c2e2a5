/* Tests of the CPU MLP: forward against a naive loop, backward against
   central finite differences (with L2 through the SGD step), seeded creation,
   training, accuracy and argument checking. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

static hpdl_rng rng;

static double uniform(double lo, double hi) { return lo + (hi - lo) * hpdl_rng_uniform(&rng); }

static void random_labels(int32_t *labels, int n, int classes) {
    int i;
    for (i = 0; i < n; i++) labels[i] = (int32_t)hpdl_rng_below(&rng, (uint64_t)classes);
}

/* ---- f64 model on a small batch: 7-5-4-3 -------------------------------- */

enum { BATCH = 6, N_WIDTHS = 4 };
static const int small_widths[N_WIDTHS] = {7, 5, 4, 3};

/* Model with random weights and (non-zero) biases, random inputs and labels. */
static void make_small_problem(hpdl_mlp_f64 *m, hpdl_activation act, double *X, int32_t *labels) {
    int l, i;
    HPDL_CHECK(hpdl_mlp_create_f64(m, N_WIDTHS, small_widths, act, 42));
    for (l = 0; l < m->n_layers; l++)
        for (i = 0; i < m->widths[l + 1]; i++) m->b[l][i] = uniform(-0.5, 0.5);
    for (i = 0; i < BATCH * small_widths[0]; i++) X[i] = uniform(-1, 1);
    random_labels(labels, BATCH, small_widths[N_WIDTHS - 1]);
}

/* Mean cross-entropy plus l2/2 * sum of squared weights (the objective whose
   gradient SGD with L2 follows). */
static double objective(const hpdl_mlp_f64 *m, hpdl_mlp_work_f64 *w, const double *X, const int32_t *labels,
                        double l2) {
    double loss = 0, sq = 0;
    int l, i, L = m->n_layers;
    HPDL_CHECK(hpdl_mlp_forward_f64(m, w, BATCH, X));
    HPDL_CHECK(hpdl_softmax_xent_f64(BATCH, m->widths[L], w->act[L], m->widths[L], labels, NULL, 0, &loss));
    for (l = 0; l < L; l++)
        for (i = 0; i < m->widths[l] * m->widths[l + 1]; i++) sq += m->W[l][i] * m->W[l][i];
    return loss + 0.5 * l2 * sq;
}

/* Forward against a naive loop: hidden act(x·W + b), logits x·W + b. */
static void forward_naive_case(hpdl_activation act) {
    hpdl_mlp_f64 m;
    hpdl_mlp_work_f64 w;
    double X[BATCH * 7], cur[BATCH * 7], next[BATCH * 7];
    int32_t labels[BATCH];
    int l, r, i, j;
    make_small_problem(&m, act, X, labels);
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, BATCH));
    HPDL_EXPECT(hpdl_mlp_forward_f64(&m, &w, BATCH, X) == HPDL_OK);
    memcpy(cur, X, sizeof X);
    for (l = 0; l < m.n_layers; l++) {
        int n_in = m.widths[l], n_out = m.widths[l + 1];
        for (r = 0; r < BATCH; r++)
            for (j = 0; j < n_out; j++) {
                double z = m.b[l][j];
                for (i = 0; i < n_in; i++) z += cur[r * n_in + i] * m.W[l][i * n_out + j];
                if (l < m.n_layers - 1) z = act == HPDL_ACT_RELU ? (z > 0 ? z : 0) : 1 / (1 + exp(-z));
                next[r * n_out + j] = z;
            }
        memcpy(cur, next, sizeof next);
    }
    for (i = 0; i < BATCH * 3; i++) HPDL_EXPECT_NEAR(w.act[m.n_layers][i], cur[i], 1e-12);
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&m);
}

static void forward_matches_naive(void) {
    forward_naive_case(HPDL_ACT_RELU);
    forward_naive_case(HPDL_ACT_SIGMOID);
}

/* Checks d(objective)/d(p), by central differences, against want's entry
   for every parameter p of m. */
static void check_against_fd(hpdl_mlp_f64 *m, hpdl_mlp_work_f64 *w, const double *X, const int32_t *labels,
                             double l2, const hpdl_mlp_f64 *want) {
    const double h = 1e-6;
    int l, i, k;
    for (l = 0; l < m->n_layers; l++)
        for (k = 0; k < 2; k++) {
            double *p = k ? m->b[l] : m->W[l];
            const double *g = k ? want->b[l] : want->W[l];
            int n = k ? m->widths[l + 1] : m->widths[l] * m->widths[l + 1];
            for (i = 0; i < n; i++) {
                double keep = p[i], up, down;
                p[i] = keep + h; up = objective(m, w, X, labels, l2);
                p[i] = keep - h; down = objective(m, w, X, labels, l2);
                p[i] = keep;
                HPDL_EXPECT_NEAR(g[i], (up - down) / (2 * h), 1e-7);
            }
        }
}

/* backward's gradient against finite differences of the mean cross-entropy,
   and its loss against the objective. */
static void gradient_case(hpdl_activation act) {
    hpdl_mlp_f64 m, grad;
    hpdl_mlp_work_f64 w;
    double X[BATCH * 7], loss = NAN;
    int32_t labels[BATCH];
    make_small_problem(&m, act, X, labels);
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&grad, N_WIDTHS, small_widths, act));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, BATCH));
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, labels, &grad, &loss) == HPDL_OK);
    HPDL_EXPECT_NEAR(loss, objective(&m, &w, X, labels, 0), 1e-12);
    check_against_fd(&m, &w, X, labels, 0, &grad);
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_destroy_f64(&m);
}

static void gradients_relu(void) { gradient_case(HPDL_ACT_RELU); }
static void gradients_sigmoid(void) { gradient_case(HPDL_ACT_SIGMOID); }

/* ||x|| over n values. */
static double norm2(const double *x, int n) {
    double sum = 0;
    int i;
    for (i = 0; i < n; i++) sum += x[i] * x[i];
    return sqrt(sum);
}

/* One LARS step: each weight matrix moves by lr * eta ||W|| / (||G|| + l2
   ||W||) times (G + l2 W), biases by lr * g; a bad eta or a step that would
   overflow is refused with the model untouched. */
static void lars_step(void) {
    const double lr = 0.5, l2 = 0.1, eta = 0.02;
    hpdl_mlp_f64 m, before, grad;
    hpdl_mlp_work_f64 w;
    double X[BATCH * 7], loss;
    int32_t labels[BATCH];
    int l, i;
    make_small_problem(&m, HPDL_ACT_RELU, X, labels);
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&before, N_WIDTHS, small_widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&grad, N_WIDTHS, small_widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, BATCH));
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, labels, &grad, &loss) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_copy_f64(&before, &m) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_lars_f64(&m, &grad, lr, l2, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_lars_f64(&m, &grad, lr, l2, INFINITY) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_lars_f64(&m, &grad, 1e308, l2, 1e308) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(memcmp(m.W[0], before.W[0], sizeof(double) * m.widths[0] * m.widths[1]) == 0); /* untouched */
    HPDL_EXPECT(hpdl_mlp_lars_f64(&m, &grad, lr, l2, eta) == HPDL_OK);
    for (l = 0; l < m.n_layers; l++) {
        int n = m.widths[l] * m.widths[l + 1];
        double nw = norm2(before.W[l], n), trust = eta * nw / (norm2(grad.W[l], n) + l2 * nw);
        for (i = 0; i < n; i++)
            HPDL_EXPECT_NEAR(m.W[l][i], before.W[l][i] - lr * trust * (grad.W[l][i] + l2 * before.W[l][i]), 1e-15);
        for (i = 0; i < m.widths[l + 1]; i++) HPDL_EXPECT_NEAR(m.b[l][i], before.b[l][i] - lr * grad.b[l][i], 1e-15);
    }
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_destroy_f64(&before);
    hpdl_mlp_destroy_f64(&m);
}

/* One SGD step with L2: W_new = W - lr*(dW + l2*W) exactly, b_new = b - lr*db,
   and (old - new)/lr is the finite-difference gradient of CE + l2/2*|W|^2
   (for biases: of CE alone). */
static void sgd_step_with_l2(void) {
    const double lr = 0.25, l2 = 0.3;
    hpdl_mlp_f64 m, before, grad, step;
    hpdl_mlp_work_f64 w;
    double X[BATCH * 7], loss;
    int32_t labels[BATCH];
    int l, i;
    make_small_problem(&m, HPDL_ACT_SIGMOID, X, labels);
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&before, N_WIDTHS, small_widths, HPDL_ACT_SIGMOID));
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&grad, N_WIDTHS, small_widths, HPDL_ACT_SIGMOID));
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&step, N_WIDTHS, small_widths, HPDL_ACT_SIGMOID));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, BATCH));
    HPDL_EXPECT(hpdl_mlp_copy_f64(&before, &m) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_train_step_f64(&m, &w, &grad, BATCH, X, labels, lr, l2, &loss) == HPDL_OK);
    for (l = 0; l < m.n_layers; l++) {
        for (i = 0; i < m.widths[l] * m.widths[l + 1]; i++) {
            HPDL_EXPECT_NEAR(m.W[l][i], before.W[l][i] - lr * (grad.W[l][i] + l2 * before.W[l][i]), 1e-15);
            step.W[l][i] = (before.W[l][i] - m.W[l][i]) / lr;
        }
        for (i = 0; i < m.widths[l + 1]; i++) {
            HPDL_EXPECT_NEAR(m.b[l][i], before.b[l][i] - lr * grad.b[l][i], 1e-15);
            step.b[l][i] = (before.b[l][i] - m.b[l][i]) / lr;
        }
    }
    check_against_fd(&before, &w, X, labels, l2, &step);
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&step);
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_destroy_f64(&before);
    hpdl_mlp_destroy_f64(&m);
}

/* Same seed: same weights, which are N(0,1)*sqrt(2/in) (ReLU) drawn from one
   generator layer by layer in row-major order; biases zero. Other seed: other weights. */
static void create_reproducible(void) {
    static const int widths[4] = {784, 30, 20, 10};
    hpdl_mlp_f32 a, b, c;
    hpdl_mlp_f64 s;
    hpdl_rng r;
    int l, i, same_as_c = 1;
    HPDL_CHECK(hpdl_mlp_create_f32(&a, 4, widths, HPDL_ACT_RELU, 7));
    HPDL_CHECK(hpdl_mlp_create_f32(&b, 4, widths, HPDL_ACT_RELU, 7));
    HPDL_CHECK(hpdl_mlp_create_f32(&c, 4, widths, HPDL_ACT_RELU, 8));
    HPDL_CHECK(hpdl_mlp_create_f64(&s, 3, widths, HPDL_ACT_SIGMOID, 9));
    hpdl_rng_seed(&r, 7);
    HPDL_EXPECT(a.n_layers == 3 && a.widths[3] == 10 && a.act == HPDL_ACT_RELU);
    for (l = 0; l < 3; l++) {
        int n = widths[l] * widths[l + 1];
        HPDL_EXPECT(memcmp(a.W[l], b.W[l], n * sizeof(float)) == 0);
        same_as_c = same_as_c && memcmp(a.W[l], c.W[l], n * sizeof(float)) == 0;
        for (i = 0; i < n; i++) HPDL_EXPECT(a.W[l][i] == (float)(sqrt(2.0 / widths[l]) * hpdl_rng_normal(&r)));
        for (i = 0; i < widths[l + 1]; i++) HPDL_EXPECT(a.b[l][i] == 0.0f);
    }
    HPDL_EXPECT(!same_as_c);
    hpdl_rng_seed(&r, 9);
    for (l = 0; l < 2; l++)
        for (i = 0; i < widths[l] * widths[l + 1]; i++)
            HPDL_EXPECT(s.W[l][i] == sqrt(1.0 / widths[l]) * hpdl_rng_normal(&r));
    hpdl_mlp_destroy_f32(&a);
    hpdl_mlp_destroy_f32(&b);
    hpdl_mlp_destroy_f32(&c);
    hpdl_mlp_destroy_f64(&s);
    HPDL_EXPECT(a.W[0] == NULL && a.n_layers == 0); /* destroy leaves an empty model */
}

/* ---- training on three Gaussian blobs, every type ------------------------ */

enum { DIM = 8, CLASSES = 3, N_TRAIN = 240 };

/* Points around three well separated centres; label = centre. */
static void make_blobs(double *X, int32_t *labels) {
    double centres[CLASSES][DIM];
    int c, i, j;
    for (c = 0; c < CLASSES; c++)
        for (j = 0; j < DIM; j++) centres[c][j] = uniform(-2, 2);
    for (i = 0; i < N_TRAIN; i++) {
        labels[i] = i % CLASSES;
        for (j = 0; j < DIM; j++) X[i * DIM + j] = centres[labels[i]][j] + uniform(-0.5, 0.5);
    }
}

/* 8-16-3, 150 steps of SGD on batches of 24: the loss falls to under a third
   and training accuracy (in chunks of 24 over 240 rows) exceeds 95%. */
#define DEFINE_TRAIN_TEST(S, T, TO)                                            \
    static void train_##S(hpdl_activation act, double lr) {                    \
        static const int widths[3] = {DIM, 16, CLASSES};                       \
        static double Xd[N_TRAIN * DIM];                                       \
        static T X[N_TRAIN * DIM];                                             \
        int32_t labels[N_TRAIN];                                               \
        hpdl_mlp_##S m, grad;                                                  \
        hpdl_mlp_work_##S w;                                                   \
        double first = 0, last = 0, acc = -1;                                  \
        int step, i;                                                           \
        make_blobs(Xd, labels);                                                \
        for (i = 0; i < N_TRAIN * DIM; i++) X[i] = TO(Xd[i]);                  \
        HPDL_CHECK(hpdl_mlp_create_##S(&m, 3, widths, act, 1));                \
        HPDL_CHECK(hpdl_mlp_create_zero_##S(&grad, 3, widths, act));           \
        HPDL_CHECK(hpdl_mlp_work_create_##S(&w, &m, 24));                      \
        for (step = 0; step < 150; step++) {                                   \
            int b0 = (step % 10) * 24;                                         \
            double loss = NAN;                                                 \
            HPDL_EXPECT(hpdl_mlp_train_step_##S(&m, &w, &grad, 24, X + b0 * DIM, labels + b0, \
                                                 (float)lr, 1e-4f, &loss) == HPDL_OK); \
            if (step < 10) first += loss / 10;                                 \
            if (step >= 140) last += loss / 10;                                \
        }                                                                      \
        HPDL_EXPECT(isfinite(first) && last < first / 3);                      \
        HPDL_EXPECT(hpdl_mlp_accuracy_##S(&m, &w, N_TRAIN, X, labels, &acc) == HPDL_OK); \
        HPDL_EXPECT(acc > 0.95);                                               \
        hpdl_mlp_work_destroy_##S(&w);                                         \
        hpdl_mlp_destroy_##S(&grad);                                           \
        hpdl_mlp_destroy_##S(&m);                                              \
    }
#define TO_F32(v) ((float)(v))
#define TO_F64(v) ((double)(v))
#define TO_F16(v) hpdl_f16_from_f32((float)(v))
#define TO_BF16(v) hpdl_bf16_from_f32((float)(v))
DEFINE_TRAIN_TEST(f32, float, TO_F32)
DEFINE_TRAIN_TEST(f64, double, TO_F64)
DEFINE_TRAIN_TEST(f16, hpdl_f16, TO_F16)
DEFINE_TRAIN_TEST(bf16, hpdl_bf16, TO_BF16)

static void training_decreases_loss(void) {
    train_f32(HPDL_ACT_RELU, 0.1);
    train_f64(HPDL_ACT_SIGMOID, 0.5);
    train_f16(HPDL_ACT_RELU, 0.1);
    train_bf16(HPDL_ACT_RELU, 0.1);
}

/* Accuracy over 25 rows in chunks of 7 against a per-row argmax of forward,
   with labels chosen so that exactly the 13 even rows are right. */
static void accuracy_counts(void) {
    static const int widths[3] = {5, 6, 4};
    enum { N = 25 };
    hpdl_mlp_f64 m;
    hpdl_mlp_work_f64 w, one;
    double X[N * 5], acc = -1;
    int32_t labels[N];
    int i, c, best;
    HPDL_CHECK(hpdl_mlp_create_f64(&m, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, 7));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&one, &m, 1));
    for (i = 0; i < N * 5; i++) X[i] = uniform(-1, 1);
    for (i = 0; i < N; i++) {
        HPDL_CHECK(hpdl_mlp_forward_f64(&m, &one, 1, X + i * 5));
        for (c = 1, best = 0; c < 4; c++) best = one.act[2][c] > one.act[2][best] ? c : best;
        labels[i] = i % 2 == 0 ? best : (best + 1 + (int)hpdl_rng_below(&rng, 3)) % 4;
    }
    HPDL_EXPECT(hpdl_mlp_accuracy_f64(&m, &w, N, X, labels, &acc) == HPDL_OK);
    HPDL_EXPECT(acc == 13.0 / N);
    hpdl_mlp_work_destroy_f64(&one);
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&m);
}

/* ---- bad arguments ------------------------------------------------------ */

static void create_bad_args(void) {
    int widths[HPDL_MLP_MAX_LAYERS + 2], i;
    hpdl_mlp_f32 m, keep;
    for (i = 0; i < HPDL_MLP_MAX_LAYERS + 2; i++) widths[i] = 3;
    memset(&m, 0x5a, sizeof m);
    memcpy(&keep, &m, sizeof m);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, HPDL_MLP_MAX_LAYERS + 2, widths, HPDL_ACT_RELU, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 1, widths, HPDL_ACT_RELU, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, NULL, HPDL_ACT_RELU, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_create_f32(NULL, 3, widths, HPDL_ACT_RELU, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, widths, (hpdl_activation)5, 1) == HPDL_ERR_INVALID);
    widths[1] = 0;
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&m, 3, widths, HPDL_ACT_RELU) == HPDL_ERR_INVALID);
    widths[1] = -2;
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&m, 3, widths, HPDL_ACT_SIGMOID) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&m, &keep, sizeof m) == 0);
    widths[1] = 3; /* the largest allowed depth works */
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, HPDL_MLP_MAX_LAYERS + 1, widths, HPDL_ACT_RELU, 1) == HPDL_OK);
    HPDL_EXPECT(m.n_layers == HPDL_MLP_MAX_LAYERS);
    hpdl_mlp_destroy_f32(&m);
}

/* Training calls with a bad batch, input, label, shape or hyper-parameter:
   HPDL_ERR_INVALID, and the gradient, loss and model stay as they were. */
static void training_bad_args(void) {
    static const int other[3] = {7, 5, 3};
    hpdl_mlp_f64 m, grad, wrong, model_keep;
    hpdl_mlp_work_f64 w, w_wrong;
    double X[BATCH * 7], loss = -3, acc = -3;
    int32_t labels[BATCH];
    make_small_problem(&m, HPDL_ACT_RELU, X, labels);
    HPDL_CHECK(hpdl_mlp_create_f64(&grad, N_WIDTHS, small_widths, HPDL_ACT_RELU, 5)); /* non-zero sentinel */
    HPDL_CHECK(hpdl_mlp_create_f64(&model_keep, N_WIDTHS, small_widths, HPDL_ACT_RELU, 0));
    HPDL_CHECK(hpdl_mlp_copy_f64(&model_keep, &m));
    HPDL_CHECK(hpdl_mlp_create_zero_f64(&wrong, 3, other, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w, &m, BATCH));
    HPDL_CHECK(hpdl_mlp_work_create_f64(&w_wrong, &wrong, BATCH));
    HPDL_EXPECT(hpdl_mlp_work_create_f64(&w, &m, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_work_create_f64(&w, NULL, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_forward_f64(&m, &w, 0, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_forward_f64(&m, &w, BATCH + 1, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_forward_f64(&m, &w, BATCH, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_forward_f64(&m, &w_wrong, BATCH, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, 0, X, labels, &grad, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, NULL, &grad, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, labels, &wrong, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, labels, NULL, &loss) == HPDL_ERR_INVALID);
    labels[2] = 3;
    HPDL_EXPECT(hpdl_mlp_backward_f64(&m, &w, BATCH, X, labels, &grad, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_accuracy_f64(&m, &w, BATCH, X, labels, &acc) == HPDL_ERR_INVALID);
    labels[2] = 0;
    HPDL_EXPECT(hpdl_mlp_accuracy_f64(&m, &w, 0, X, labels, &acc) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_accuracy_f64(&m, &w, BATCH, X, labels, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_train_step_f64(&m, &w, &grad, BATCH, X, labels, -0.1, 0, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_train_step_f64(&m, &w, &grad, BATCH, X, labels, 0.1, NAN, &loss) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_sgd_f64(&m, &grad, INFINITY, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_sgd_f64(&m, &wrong, 0.1, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_copy_f64(&wrong, &m) == HPDL_ERR_INVALID);
    HPDL_EXPECT(loss == -3 && acc == -3);
    {   /* grad still holds its seed-5 weights; m is unchanged */
        hpdl_mlp_f64 seed5;
        int l;
        HPDL_CHECK(hpdl_mlp_create_f64(&seed5, N_WIDTHS, small_widths, HPDL_ACT_RELU, 5));
        for (l = 0; l < 3; l++) {
            size_t n = (size_t)small_widths[l] * small_widths[l + 1];
            HPDL_EXPECT(memcmp(grad.W[l], seed5.W[l], n * sizeof(double)) == 0);
            HPDL_EXPECT(memcmp(m.W[l], model_keep.W[l], n * sizeof(double)) == 0);
            HPDL_EXPECT(memcmp(m.b[l], model_keep.b[l], small_widths[l + 1] * sizeof(double)) == 0);
        }
        hpdl_mlp_destroy_f64(&seed5);
    }
    hpdl_mlp_work_destroy_f64(&w_wrong);
    hpdl_mlp_work_destroy_f64(&w);
    hpdl_mlp_destroy_f64(&wrong);
    hpdl_mlp_destroy_f64(&model_keep);
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_destroy_f64(&m);
}

static void test_parse_widths(void) {
    int w[HPDL_MLP_MAX_LAYERS + 1], n = -1;
    HPDL_EXPECT(hpdl_mlp_parse_widths("1024,256", 784, 10, w, &n) == HPDL_OK);
    HPDL_EXPECT(n == 4 && w[0] == 784 && w[1] == 1024 && w[2] == 256 && w[3] == 10);
    HPDL_EXPECT(hpdl_mlp_parse_widths("512", 784, 10, w, &n) == HPDL_OK && n == 3 && w[1] == 512);
    n = -1;
    w[0] = -5;
    HPDL_EXPECT(hpdl_mlp_parse_widths("", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths("512,x", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths("0", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths("-3", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths("512;256", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mlp_parse_widths(NULL, 784, 10, w, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(n == -1 && w[0] == -5); /* nothing written on error */
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_parse_widths),
        HPDL_TEST(forward_matches_naive), HPDL_TEST(gradients_relu), HPDL_TEST(gradients_sigmoid),
        HPDL_TEST(sgd_step_with_l2), HPDL_TEST(lars_step), HPDL_TEST(create_reproducible), HPDL_TEST(training_decreases_loss),
        HPDL_TEST(accuracy_counts), HPDL_TEST(create_bad_args), HPDL_TEST(training_bad_args),
    };
    hpdl_rng_seed(&rng, 314159);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
