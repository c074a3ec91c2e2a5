/* Tests of CNNs as data on the CPU backends: planning (shapes, parameter
   counts of the course's networks, refusals), gradients of a network with
   every layer kind (residual sums included) against finite differences in
   f64, f32 against f64, training that lowers the loss with SGD and AdamW,
   a non-finite step refused with the model untouched; batch norm folded into
   convolutions keeps the inference logits; int8 integer-only inference
   of the lab's CNN against its float twin; augmentation (random crop with
   zero padding, horizontal flip) against a direct shift. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/cnn_every_kind.h"

static double *doubles(size_t n) {
    double *x = (double *)hpdl_alloc(n ? n : 1, sizeof(double));
    if (!x) { fprintf(stderr, "out of memory\n"); exit(1); }
    return x;
}

static double *random_doubles(hpdl_rng *rng, size_t n, double lo, double hi) {
    double *x = doubles(n);
    size_t i;
    for (i = 0; i < n; i++) x[i] = lo + (hi - lo) * hpdl_rng_uniform(rng);
    return x;
}

static float *to_floats(const double *x, size_t n) {
    float *f = (float *)hpdl_alloc(n ? n : 1, sizeof(float));
    size_t i;
    if (!f) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (i = 0; i < n; i++) f[i] = (float)x[i];
    return f;
}


static void course_networks(void) {
    hpdl_cnn net;
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(3, 32, 32), 10, HPDL_NCHW) == HPDL_OK);
    /* the lab's model: 456 + 2416 + 48120 + 10164 + 850 parameters */
    HPDL_EXPECT(net.param_count == 62006);
    HPDL_EXPECT(net.out[5].c == 16 && net.out[5].h == 5 && net.out[5].w == 5);
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(net.param_count == 44426 && net.classes == 10);
    /* torchvision-style ResNet-18 with the CIFAR stem: 11,173,962 parameters */
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(net.param_count == 11173962);
    HPDL_EXPECT(net.out[net.n_layers - 3].c == 512 && net.out[net.n_layers - 3].h == 4);
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NCHW) == HPDL_OK);
    HPDL_EXPECT(net.out[net.n_layers - 3].h == 4 && net.classes == 10);
}

static void define_refuses(void) {
    hpdl_cnn net, before;
    hpdl_cnn_layer l[3];
    memset(&net, 0x5a, sizeof net);
    before = net;
    l[0] = hpdl_cnn_conv(4, 3, 1, 0, 1);
    l[1] = hpdl_cnn_add(0, 2); /* reads a later layer */
    l[2] = hpdl_cnn_linear(3);
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    l[1] = hpdl_cnn_conv(4, 7, 1, 0, 1); /* kernel larger than the 3x3 input */
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    l[1] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[2] = hpdl_cnn_simple(HPDL_CNN_RELU); /* the last output is 4 x 3 x 3, not classes x 1 x 1 */
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    l[2] = hpdl_cnn_linear(3);
    l[2].input = 0; /* layer 1's output is never read */
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_define(&net, 0, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(0, 5, 5), HPDL_NCHW) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&net, &before, sizeof net) == 0);
    l[2].input = HPDL_CNN_PREVIOUS;
    HPDL_EXPECT(hpdl_cnn_define(&net, 3, l, hpdl_shape_make(1, 5, 5), HPDL_NCHW) == HPDL_OK);
}

typedef struct fixture {
    hpdl_cnn net;
    hpdl_cnn_run run;
    double *params, *state, *X;
    int32_t labels[4];
    int batch;
} fixture;

static void fixture_make(fixture *f, hpdl_layout layout, const hpdl_cnn_backend *be, hpdl_cnn_optimizer opt) {
    hpdl_rng rng;
    int i;
    hpdl_rng_seed(&rng, 7);
    f->batch = 4;
    HPDL_EXPECT(every_kind(&f->net, layout, 1) == HPDL_OK);
    f->params = doubles((size_t)f->net.param_count);
    f->state = doubles((size_t)f->net.state_count);
    HPDL_EXPECT(hpdl_cnn_init(&f->net, 11, f->params, f->state) == HPDL_OK);
    f->X = random_doubles(&rng, (size_t)f->batch * 72, -1, 1);
    for (i = 0; i < f->batch; i++) f->labels[i] = i % 3;
    HPDL_EXPECT(hpdl_cnn_run_create(&f->run, &f->net, be, f->batch, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&f->run, f->params, f->state) == HPDL_OK);
}

static void fixture_free(fixture *f) {
    hpdl_cnn_run_destroy(&f->run);
    HPDL_FREE(f->params);
    HPDL_FREE(f->state);
    HPDL_FREE(f->X);
}

/* Loss of the f64 run at parameters p. */
static double loss_at(fixture *f, const double *p) {
    double loss = NAN;
    HPDL_EXPECT(hpdl_cnn_set_params(&f->run, p, f->state) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_forward(&f->run, f->batch, f->X, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_backward(&f->run, f->batch, f->X, f->labels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_loss(&f->run, &loss) == HPDL_OK);
    return loss;
}

/* Every parameter's gradient against a central difference of the loss. */
static void gradients_by_finite_differences(hpdl_layout layout) {
    fixture f;
    double *grad, *p, worst = 0;
    int64_t k, n;
    fixture_make(&f, layout, hpdl_cnn_backend_cpu_f64(), hpdl_cnn_sgd(0.05, 0.9, 0));
    n = f.net.param_count;
    grad = doubles((size_t)n);
    p = doubles((size_t)n);
    memcpy(p, f.params, (size_t)n * sizeof *p);
    loss_at(&f, p);
    memcpy(grad, f.run.grads, (size_t)n * sizeof *grad);
    for (k = 0; k < n; k++) {
        const double h = 1e-5;
        double up, down, numeric, scale;
        p[k] = f.params[k] + h;
        up = loss_at(&f, p);
        p[k] = f.params[k] - h;
        down = loss_at(&f, p);
        p[k] = f.params[k];
        numeric = (up - down) / (2 * h);
        scale = fabs(numeric) > 1e-3 ? fabs(numeric) : 1e-3;
        if (fabs(numeric - grad[k]) / scale > worst) worst = fabs(numeric - grad[k]) / scale;
    }
    HPDL_EXPECT_NEAR(worst, 0, 1e-5);
    HPDL_FREE(grad);
    HPDL_FREE(p);
    fixture_free(&f);
}

static void gradients_nchw(void) { gradients_by_finite_differences(HPDL_NCHW); }
static void gradients_nhwc(void) { gradients_by_finite_differences(HPDL_NHWC); }

/* Three SGD steps in f32 and f64 from the same start agree to f32 rounding. */
static void f32_matches_f64(void) {
    fixture d, s;
    double *pd, *ps, worst = 0;
    float *X32;
    int step;
    int64_t k;
    fixture_make(&d, HPDL_NHWC, hpdl_cnn_backend_cpu_f64(), hpdl_cnn_sgd(0.05, 0.9, 5e-4));
    fixture_make(&s, HPDL_NHWC, hpdl_cnn_backend_cpu_f32(), hpdl_cnn_sgd(0.05, 0.9, 5e-4));
    X32 = to_floats(d.X, (size_t)d.batch * 72);
    for (step = 0; step < 3; step++) {
        HPDL_EXPECT(hpdl_cnn_train_step(&d.run, d.batch, d.X, d.labels) == HPDL_OK);
        HPDL_EXPECT(hpdl_cnn_train_step(&s.run, s.batch, X32, s.labels) == HPDL_OK);
    }
    pd = doubles((size_t)d.net.param_count);
    ps = doubles((size_t)d.net.param_count);
    HPDL_EXPECT(hpdl_cnn_get_params(&d.run, pd, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&s.run, ps, NULL) == HPDL_OK);
    for (k = 0; k < d.net.param_count; k++)
        if (fabs(pd[k] - ps[k]) > worst) worst = fabs(pd[k] - ps[k]);
    HPDL_EXPECT_NEAR(worst, 0, 1e-4);
    HPDL_EXPECT(worst > 0); /* the two really ran in different precisions */
    HPDL_FREE(pd);
    HPDL_FREE(ps);
    HPDL_FREE(X32);
    fixture_free(&d);
    fixture_free(&s);
}

/* Repeated steps on one batch drive its loss down; accuracy reaches 1. */
static void training_lowers_loss(hpdl_cnn_optimizer opt) {
    fixture f;
    double first = 0, last = 0, acc = 0;
    int step;
    fixture_make(&f, HPDL_NCHW, hpdl_cnn_backend_cpu_f64(), opt);
    for (step = 0; step < 60; step++) {
        HPDL_EXPECT(hpdl_cnn_train_step(&f.run, f.batch, f.X, f.labels) == HPDL_OK);
        HPDL_EXPECT(hpdl_cnn_loss(&f.run, step == 0 ? &first : &last) == HPDL_OK);
    }
    HPDL_EXPECT(f.run.steps == 60);
    HPDL_EXPECT(last < 0.2 * first);
    HPDL_EXPECT(hpdl_cnn_accuracy(&f.run, f.batch, f.X, f.labels, &acc) == HPDL_OK);
    HPDL_EXPECT_NEAR(acc, 1.0, 0);
    fixture_free(&f);
}

static void sgd_trains(void) { training_lowers_loss(hpdl_cnn_sgd(0.05, 0.9, 1e-4)); }
static void adamw_trains(void) { training_lowers_loss(hpdl_cnn_adamw(0.01, 1e-4)); }

/* A NaN pixel: HPDL_ERR_NUMERIC, parameters, moments and batch-norm
   statistics exactly as before the step. */
static void nonfinite_step_refused(void) {
    fixture f;
    double *p0, *s0, *p1, *s1;
    size_t np, ns;
    fixture_make(&f, HPDL_NCHW, hpdl_cnn_backend_cpu_f64(), hpdl_cnn_sgd(0.05, 0.9, 0));
    np = (size_t)f.net.param_count;
    ns = (size_t)f.net.state_count;
    HPDL_EXPECT(hpdl_cnn_train_step(&f.run, f.batch, f.X, f.labels) == HPDL_OK);
    p0 = doubles(np); s0 = doubles(ns); p1 = doubles(np); s1 = doubles(ns);
    HPDL_EXPECT(hpdl_cnn_get_params(&f.run, p0, s0) == HPDL_OK);
    f.X[5] = NAN;
    HPDL_EXPECT(hpdl_cnn_train_step(&f.run, f.batch, f.X, f.labels) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_cnn_get_params(&f.run, p1, s1) == HPDL_OK);
    HPDL_EXPECT(memcmp(p0, p1, np * sizeof *p0) == 0);
    HPDL_EXPECT(memcmp(s0, s1, ns * sizeof *s0) == 0);
    HPDL_EXPECT(f.run.steps == 1);
    f.X[5] = 0.5; /* training goes on; a huge learning rate ruins the next step */
    f.run.opt.schedule.base_lr = 1e300;
    HPDL_EXPECT(hpdl_cnn_train_step(&f.run, f.batch, f.X, f.labels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_train_step(&f.run, f.batch, f.X, f.labels) == HPDL_ERR_NUMERIC);
    HPDL_FREE(p0); HPDL_FREE(s0); HPDL_FREE(p1); HPDL_FREE(s1);
    fixture_free(&f);
}

static void run_refuses(void) {
    hpdl_cnn net;
    hpdl_cnn_run run;
    hpdl_cnn_backend odd;
    hpdl_cnn_optimizer bad = hpdl_cnn_sgd(0.05, 1.5, 0);
    double x[72] = {0};
    int32_t labels[4] = {0};
    HPDL_EXPECT(every_kind(&net, HPDL_NCHW, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, hpdl_cnn_backend_cpu_f64(), 4, &bad) == HPDL_ERR_INVALID);
    bad = hpdl_cnn_sgd(0.05, 0.9, 0);
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, hpdl_cnn_backend_cpu_f64(), 0, &bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, NULL, 4, &bad) == HPDL_ERR_INVALID);
    odd = *hpdl_cnn_backend_cpu_f64();
    odd.param_size = 4; /* parameters of another type, and no cast to the working copy */
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, &odd, 4, &bad) == HPDL_ERR_INVALID);
    odd.param_size = 2; /* only float or double parameters */
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, &odd, 4, &bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_run_create(&run, &net, hpdl_cnn_backend_cpu_f64(), 4, &bad) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_forward(&run, 5, x, 1) == HPDL_ERR_INVALID); /* above max_batch */
    HPDL_EXPECT(hpdl_cnn_forward(&run, 1, NULL, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_backward(&run, 1, x, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_update(NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_accuracy(&run, 0, x, labels, NULL) == HPDL_ERR_INVALID);
    hpdl_cnn_run_destroy(&run);
}

/* ---- layer costs ------------------------------------------------------------ */

/* The lab's CNN on one 3x32x32 image, counted by hand. */
static void layer_costs(void) {
    hpdl_cnn net;
    double flops = 0, bytes = 0;
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(3, 32, 32), 10, HPDL_NCHW) == HPDL_OK);
    /* conv 5x5, 3 -> 6, 28x28 out: 2*6*784*75 multiply-adds' FLOPs + 6*784 bias adds */
    HPDL_EXPECT(hpdl_cnn_layer_cost(&net, 0, 1, 4, &flops, &bytes) == HPDL_OK);
    HPDL_EXPECT_NEAR(flops, 2.0 * 6 * 784 * 75 + 6 * 784, 0);
    HPDL_EXPECT_NEAR(bytes, 4.0 * (3 * 1024 + 6 * 784 + 456), 0);
    /* max-pool 2x2 over 6x28x28 at batch 2: 4 reads per output */
    HPDL_EXPECT(hpdl_cnn_layer_cost(&net, 2, 2, 4, &flops, &bytes) == HPDL_OK);
    HPDL_EXPECT_NEAR(flops, 2.0 * 6 * 196 * 4, 0);
    /* linear 400 -> 120 */
    HPDL_EXPECT(hpdl_cnn_layer_cost(&net, 6, 1, 8, &flops, &bytes) == HPDL_OK);
    HPDL_EXPECT_NEAR(flops, 2.0 * 400 * 120 + 120, 0);
    HPDL_EXPECT_NEAR(bytes, 8.0 * (400 + 120 + 48120), 0);
    HPDL_EXPECT(hpdl_cnn_layer_cost(&net, 11, 1, 4, &flops, &bytes) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_layer_cost(&net, 0, 0, 4, &flops, &bytes) == HPDL_ERR_INVALID);
}

/* ---- batch norm folded into convolutions ------------------------------------ */

/* Inference logits of net with params/state on batch X (f64 CPU run). */
static void inference_logits(const hpdl_cnn *net, const double *params, const double *state, int batch,
                             const double *X, double *logits) {
    hpdl_cnn_run r;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.1, 0.9, 0);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, net, hpdl_cnn_backend_cpu_f64(), batch, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params, state) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_forward(&r, batch, X, 0) == HPDL_OK);
    memcpy(logits, r.act[net->n_layers - 1], (size_t)batch * net->classes * sizeof *logits);
    hpdl_cnn_run_destroy(&r);
}

/* Folding gives the same inference logits with fewer layers: a network
   with every kind (its first batch norm follows a conv with a bias) and
   ResNet-18 (20 batch norms, all after convolutions), after a few training
   steps so the statistics are not the initial ones. */
static void fold_keeps_logits(const hpdl_cnn *net, int batch, int expect_layers) {
    hpdl_cnn folded;
    hpdl_cnn_run r;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 0);
    hpdl_rng rng;
    int64_t features = (int64_t)net->input.c * net->input.h * net->input.w, i;
    double *X = doubles((size_t)(batch * features)), *p = doubles((size_t)net->param_count);
    double *st = doubles((size_t)net->state_count + 1), *want = doubles((size_t)batch * net->classes);
    double *got = doubles((size_t)batch * net->classes), *fp, *fs, worst = 0;
    int32_t labels[8] = {0, 1, 2, 0, 1, 2, 0, 1};
    hpdl_rng_seed(&rng, 12);
    for (i = 0; i < batch * features; i++) X[i] = 2 * hpdl_rng_uniform(&rng) - 1;
    HPDL_EXPECT(hpdl_cnn_init(net, 2, p, st) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, net, hpdl_cnn_backend_cpu_f64(), batch, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, p, st) == HPDL_OK);
    for (i = 0; i < 3; i++) HPDL_EXPECT(hpdl_cnn_train_step(&r, batch, X, labels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p, st) == HPDL_OK);
    hpdl_cnn_run_destroy(&r);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(net, p, st, 1e-5, &folded, NULL, NULL) == HPDL_OK);
    HPDL_EXPECT(folded.n_layers == expect_layers && folded.state_count == 0);
    fp = doubles((size_t)folded.param_count);
    fs = doubles(1);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(net, p, st, 1e-5, &folded, fp, fs) == HPDL_OK);
    inference_logits(net, p, st, batch, X, want);
    inference_logits(&folded, fp, fs, batch, X, got);
    for (i = 0; i < batch * net->classes; i++) worst = fmax(worst, fabs(got[i] - want[i]) / fmax(1, fabs(want[i])));
    HPDL_EXPECT_NEAR(worst, 0, 1e-12);
    HPDL_FREE(X); HPDL_FREE(p); HPDL_FREE(st); HPDL_FREE(want); HPDL_FREE(got); HPDL_FREE(fp); HPDL_FREE(fs);
}

static void fold_every_kind(void) {
    hpdl_cnn net;
    HPDL_EXPECT(every_kind(&net, HPDL_NHWC, 1) == HPDL_OK);
    fold_keeps_logits(&net, 4, 11); /* both batch norms follow a conv */
    HPDL_EXPECT(every_kind(&net, HPDL_NCHW, 0) == HPDL_OK);
    fold_keeps_logits(&net, 4, 11);
}

static void fold_resnet18(void) {
    hpdl_cnn net;
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 8, 8), 3, HPDL_NHWC) == HPDL_OK);
    fold_keeps_logits(&net, 4, net.n_layers - 20);
}

static void fold_refuses(void) {
    hpdl_cnn net, out;
    double p[1];
    HPDL_EXPECT(every_kind(&net, HPDL_NCHW, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(&net, NULL, NULL, 1e-5, &out, p, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(&net, p, p, 0, &out, NULL, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(NULL, p, p, 1e-5, &out, NULL, NULL) == HPDL_ERR_INVALID);
}

/* ---- int8 integer-only inference ------------------------------------------- */

enum { Q_TRAIN = 600, Q_TEST = 300, Q_SIDE = 16, Q_FEATURES = Q_SIDE * Q_SIDE };

/* Noise in [-1, 1] with the third of the image (in memory order) named by
   the class (i % 3) brightened by 0.3: learnable, not trivially (the float
   network reaches about 0.96). */
static void banded_images(int n, uint64_t seed, float *X, int32_t *labels) {
    hpdl_rng rng;
    int i, f;
    hpdl_rng_seed(&rng, seed);
    for (i = 0; i < n; i++) {
        labels[i] = i % 3;
        for (f = 0; f < Q_FEATURES; f++)
            X[i * Q_FEATURES + f] = (float)(2 * hpdl_rng_uniform(&rng) - 1 + 0.3 * (f / (Q_FEATURES / 3 + 1) == i % 3));
    }
}

/* The lab's CNN trained in f32 on the CPU, then int8: the integer-only
   network classifies within 2 points of the float one, and its int32
   logits times logit_scale are the float logits to within a tenth of
   their largest magnitude. */
static void quantized_small_cnn(void) {
    static float Xtr[Q_TRAIN * Q_FEATURES], Xte[Q_TEST * Q_FEATURES], params32[20000];
    static int32_t ytr[Q_TRAIN], yte[Q_TEST], ilogits[Q_TEST * 3];
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_quant_cnn q;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.02, 0.9, 5e-4);
    double *p = doubles(20000), acc_float = 0, acc_int = 0, worst = 0, largest = 0;
    int i, epoch;
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, Q_SIDE, Q_SIDE), 3, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(net.param_count <= 20000);
    banded_images(Q_TRAIN, 1, Xtr, ytr);
    banded_images(Q_TEST, 2, Xte, yte);
    HPDL_EXPECT(hpdl_cnn_init(&net, 3, p, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, hpdl_cnn_backend_cpu_f32(), 32, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, p, NULL) == HPDL_OK);
    for (epoch = 0; epoch < 3; epoch++)
        for (i = 0; i + 32 <= Q_TRAIN; i += 32)
            HPDL_EXPECT(hpdl_cnn_train_step(&r, 32, Xtr + i * Q_FEATURES, ytr + i) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_accuracy(&r, Q_TEST, Xte, yte, &acc_float) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p, NULL) == HPDL_OK);
    for (i = 0; i < net.param_count; i++) params32[i] = (float)p[i];
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &net, params32, 200, Xtr, 100.0) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_accuracy(&q, Q_TEST, Xte, yte, &acc_int) == HPDL_OK);
    HPDL_EXPECT(acc_float > 0.9);
    HPDL_EXPECT_NEAR(acc_int, acc_float, 0.02);
    HPDL_EXPECT(hpdl_quant_cnn_logits(&q, 32, Xte, ilogits) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_forward(&r, 32, Xte, 0) == HPDL_OK);
    for (i = 0; i < 32 * 3; i++) largest = fmax(largest, fabs(((const float *)r.act[net.n_layers - 1])[i]));
    for (i = 0; i < 32 * 3; i++)
        worst = fmax(worst, fabs(ilogits[i] * q.logit_scale - ((const float *)r.act[net.n_layers - 1])[i]));
    HPDL_EXPECT(worst <= 0.1 * largest);
    fprintf(stderr, "    test accuracy: float %.3f, integer-only %.3f; logits apart by %.3g of at most %.3g\n", acc_float,
            acc_int, worst, largest);
    hpdl_quant_cnn_free(&q);
    hpdl_cnn_run_destroy(&r);
    HPDL_FREE(p);
}

/* A residual network (identity and strided 1x1 shortcuts, batch norms,
   global average pooling), trained in f32, batch norms folded, then int8:
   the integer-only network (residual sums and the pooling rescaled by
   fixed-point multipliers, ReLUs folded into the sums) within 3 points of
   the folded float network, its logits within a tenth of their largest. */
static void quantized_residual_cnn(void) {
    static float Xtr[Q_TRAIN * Q_FEATURES], Xte[Q_TEST * Q_FEATURES], params32[40000];
    static int32_t ytr[Q_TRAIN], yte[Q_TEST], ilogits[32 * 3];
    hpdl_cnn_layer l[21];
    hpdl_cnn net, folded;
    hpdl_cnn_run r, rf;
    hpdl_quant_cnn q;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.02, 0.9, 5e-4);
    double *p = doubles(40000), *state = doubles(1000), *pf = doubles(40000), acc_float = 0, acc_int = 0, worst = 0,
           largest = 0;
    int i, n = 0, epoch;
    l[n++] = hpdl_cnn_conv(8, 3, 1, 1, 0);  /* 0 */
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU); /* 2: block input */
    l[n++] = hpdl_cnn_conv(8, 3, 1, 1, 0);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[n++] = hpdl_cnn_conv(8, 3, 1, 1, 0);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM); /* 7 */
    l[n++] = hpdl_cnn_add(7, 2);             /* identity shortcut */
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU); /* 9: next block's input */
    l[n++] = hpdl_cnn_conv(16, 3, 2, 1, 0);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[n++] = hpdl_cnn_conv(16, 3, 1, 1, 0);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM); /* 14 */
    l[n] = hpdl_cnn_conv(16, 1, 2, 0, 0);    /* 15: strided 1x1 shortcut from 9 */
    l[n++].input = 9;
    l[n++] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM); /* 16 */
    l[n++] = hpdl_cnn_add(14, 16);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_GLOBAL_AVGPOOL);
    l[n++] = hpdl_cnn_linear(3);
    HPDL_EXPECT(hpdl_cnn_define(&net, n, l, hpdl_shape_make(1, Q_SIDE, Q_SIDE), HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(net.param_count <= 40000 && net.state_count <= 1000);
    banded_images(Q_TRAIN, 1, Xtr, ytr);
    banded_images(Q_TEST, 2, Xte, yte);
    HPDL_EXPECT(hpdl_cnn_init(&net, 5, p, state) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, hpdl_cnn_backend_cpu_f32(), 32, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, p, state) == HPDL_OK);
    for (epoch = 0; epoch < 3; epoch++)
        for (i = 0; i + 32 <= Q_TRAIN; i += 32)
            HPDL_EXPECT(hpdl_cnn_train_step(&r, 32, Xtr + i * Q_FEATURES, ytr + i) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p, state) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(&net, p, state, opt.bn_eps, &folded, pf, NULL) == HPDL_OK);
    HPDL_EXPECT(folded.state_count == 0 && folded.n_layers == n - 6); /* all six batch norms folded */
    HPDL_EXPECT(hpdl_cnn_run_create(&rf, &folded, hpdl_cnn_backend_cpu_f32(), 32, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&rf, pf, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_accuracy(&rf, Q_TEST, Xte, yte, &acc_float) == HPDL_OK);
    for (i = 0; i < folded.param_count; i++) params32[i] = (float)pf[i];
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &folded, params32, 200, Xtr, 100.0) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_accuracy(&q, Q_TEST, Xte, yte, &acc_int) == HPDL_OK);
    HPDL_EXPECT(acc_float > 0.6); /* global pooling discards where the band is: well above chance (1/3), not 0.9 */
    HPDL_EXPECT_NEAR(acc_int, acc_float, 0.03);
    HPDL_EXPECT(hpdl_quant_cnn_logits(&q, 32, Xte, ilogits) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_forward(&rf, 32, Xte, 0) == HPDL_OK);
    for (i = 0; i < 32 * 3; i++) largest = fmax(largest, fabs(((const float *)rf.act[folded.n_layers - 1])[i]));
    for (i = 0; i < 32 * 3; i++)
        worst = fmax(worst, fabs(ilogits[i] * q.logit_scale - ((const float *)rf.act[folded.n_layers - 1])[i]));
    HPDL_EXPECT(worst <= 0.1 * largest);
    fprintf(stderr, "    residual net: test accuracy float %.3f, integer-only %.3f; logits apart by %.3g of at most %.3g\n",
            acc_float, acc_int, worst, largest);
    hpdl_quant_cnn_free(&q);
    hpdl_cnn_run_destroy(&rf);
    hpdl_cnn_run_destroy(&r);
    HPDL_FREE(p);
    HPDL_FREE(pf);
    HPDL_FREE(state);
}

/* hpdl_quant_cnn_build_backend reads the image and every layer's output
   through the backend (here the CPU's f32 one with a counting download):
   a download each per batch of 64 images, and the network built is
   hpdl_quant_cnn_build's. No backend, or one of doubles: refused. */
static int downloads;

static hpdl_status counting_download(void *ctx, void *host, const void *src, size_t bytes) {
    downloads++;
    return hpdl_cnn_backend_cpu_f32()->download(ctx, host, src, bytes);
}

static void quantized_cnn_calibrates_through_a_backend(void) {
    static float X[100 * Q_FEATURES], params32[20000];
    static int32_t labels[100], want[8 * 3], got[8 * 3];
    hpdl_cnn net;
    hpdl_cnn_backend be = *hpdl_cnn_backend_cpu_f32();
    hpdl_quant_cnn a, b;
    double *p = doubles(20000);
    int i;
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, Q_SIDE, Q_SIDE), 3, HPDL_NHWC) == HPDL_OK);
    banded_images(100, 4, X, labels);
    HPDL_EXPECT(hpdl_cnn_init(&net, 6, p, NULL) == HPDL_OK);
    for (i = 0; i < net.param_count; i++) params32[i] = (float)p[i];
    be.download = counting_download;
    HPDL_EXPECT(hpdl_quant_cnn_build(&a, &net, params32, 100, X, 99.9) == HPDL_OK);
    downloads = 0;
    HPDL_EXPECT(hpdl_quant_cnn_build_backend(&b, &net, params32, 100, X, 99.9, &be) == HPDL_OK);
    HPDL_EXPECT(downloads == 2 * (net.n_layers + 1)); /* two batches: 64 and 36 images */
    for (i = 0; i <= net.n_layers; i++)
        HPDL_EXPECT(a.act[i].scale == b.act[i].scale && a.act[i].zero_point == b.act[i].zero_point);
    HPDL_EXPECT(hpdl_quant_cnn_logits(&a, 8, X, want) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_logits(&b, 8, X, got) == HPDL_OK);
    HPDL_EXPECT(memcmp(want, got, sizeof want) == 0);
    hpdl_quant_cnn_free(&a);
    hpdl_quant_cnn_free(&b);
    memset(&b, 0x5a, sizeof b);
    HPDL_EXPECT(hpdl_quant_cnn_build_backend(&b, &net, params32, 100, X, 100, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_cnn_build_backend(&b, &net, params32, 100, X, 100, hpdl_cnn_backend_cpu_f64()) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(((unsigned char *)&b)[0] == 0x5a);
    HPDL_FREE(p);
}

static void quantized_cnn_refuses(void) {
    static float X[4 * 72], params[4096];
    hpdl_cnn net;
    hpdl_quant_cnn q;
    memset(&q, 0x5a, sizeof q);
    HPDL_EXPECT(every_kind(&net, HPDL_NHWC, 0) == HPDL_OK); /* batch norm and a residual sum */
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &net, params, 4, X, 100) == HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, Q_SIDE, Q_SIDE), 3, HPDL_NCHW) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &net, params, 4, X, 100) == HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, Q_SIDE, Q_SIDE), 3, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &net, params, 4, X, 40) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_cnn_build(&q, &net, params, 0, X, 100) == HPDL_ERR_INVALID);
    HPDL_EXPECT(((unsigned char *)&q)[0] == 0x5a);
}

/* ---- augmentation ---------------------------------------------------------- */

/* Image n of x (c x h x w floats, NCHW) shifted by (dy, dx) with zeros
   shifted in, and mirrored afterwards when mirror: written out directly. */
static void shifted(const float *x, int c, int h, int w, int dy, int dx, int mirror, float *out) {
    int k, i, j;
    for (k = 0; k < c; k++)
        for (i = 0; i < h; i++)
            for (j = 0; j < w; j++) {
                int sj = (mirror ? w - 1 - j : j) + dx, si = i + dy;
                out[(k * h + i) * w + j] = si >= 0 && si < h && sj >= 0 && sj < w ? x[(k * h + si) * w + sj] : 0.0f;
            }
}

enum { AUG_N = 1000, AUG_C = 2, AUG_H = 5, AUG_W = 6, AUG_PAD = 2 }; /* 20 draws of each of the 50 choices expected */

/* Every augmented image is its original under exactly one of the 25
   shifts (and a mirror or not); every shift and both mirrors occur. */
static void augment_draws_every_shift(void) {
    static float x[AUG_N * AUG_C * AUG_H * AUG_W], y[AUG_N * AUG_C * AUG_H * AUG_W];
    float want[AUG_C * AUG_H * AUG_W];
    int seen[2][2 * AUG_PAD + 1][2 * AUG_PAD + 1] = {{{0}}}, n, dy, dx, m, all = 1;
    const int size = AUG_C * AUG_H * AUG_W;
    hpdl_tensor4 d = hpdl_tensor4_make(AUG_N, AUG_C, AUG_H, AUG_W, HPDL_NCHW);
    hpdl_rng rng;
    hpdl_rng_seed(&rng, 4);
    for (n = 0; n < AUG_N * size; n++) x[n] = (float)(1 + hpdl_rng_uniform(&rng)); /* no zeros */
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, AUG_PAD, 1, 77, 0, y) == HPDL_OK);
    for (n = 0; n < AUG_N; n++) {
        int matches = 0;
        for (m = 0; m < 2; m++)
            for (dy = -AUG_PAD; dy <= AUG_PAD; dy++)
                for (dx = -AUG_PAD; dx <= AUG_PAD; dx++) {
                    shifted(x + n * size, AUG_C, AUG_H, AUG_W, dy, dx, m, want);
                    if (!memcmp(want, y + n * size, sizeof want)) { matches++; seen[m][dy + AUG_PAD][dx + AUG_PAD]++; }
                }
        HPDL_EXPECT(matches == 1);
    }
    for (m = 0; m < 2; m++)
        for (dy = 0; dy <= 2 * AUG_PAD; dy++)
            for (dx = 0; dx <= 2 * AUG_PAD; dx++) all &= seen[m][dy][dx] > 0;
    HPDL_EXPECT(all);
}

/* pad 0 without flip copies; a batch starting at image k draws as images
   k.. of a larger batch; the same seed repeats, another seed differs. */
static void augment_is_reproducible(void) {
    static float x[AUG_N * 60], y[AUG_N * 60], part[10 * 60], again[AUG_N * 60];
    hpdl_tensor4 d = hpdl_tensor4_make(AUG_N, AUG_C, AUG_H, AUG_W, HPDL_NHWC);
    hpdl_tensor4 ten = hpdl_tensor4_make(10, AUG_C, AUG_H, AUG_W, HPDL_NHWC);
    int i;
    for (i = 0; i < AUG_N * 60; i++) x[i] = (float)(i % 97) + 1;
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, 0, 0, 5, 0, y) == HPDL_OK);
    HPDL_EXPECT(memcmp(x, y, sizeof x) == 0);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, 3, 1, 5, 0, y) == HPDL_OK);
    HPDL_EXPECT(hpdl_augment_crop_flip(&ten, sizeof(float), x + 100 * 60, 3, 1, 5, 100, part) == HPDL_OK);
    HPDL_EXPECT(memcmp(part, y + 100 * 60, sizeof part) == 0);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, 3, 1, 5, 0, again) == HPDL_OK);
    HPDL_EXPECT(memcmp(again, y, sizeof y) == 0);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, 3, 1, 6, 0, again) == HPDL_OK);
    HPDL_EXPECT(memcmp(again, y, sizeof y) != 0);
}

static void augment_refuses(void) {
    float x[60] = {0}, y[60];
    hpdl_tensor4 d = hpdl_tensor4_make(1, AUG_C, AUG_H, AUG_W, HPDL_NCHW);
    memset(y, 0x5a, sizeof y);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, -1, 1, 1, 0, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, 3, x, 1, 1, 1, 0, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), NULL, 1, 1, 1, 0, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(float), x, 1, 1, 1, -1, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(((unsigned char *)y)[0] == 0x5a);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(course_networks),
        HPDL_TEST(define_refuses),
        HPDL_TEST(gradients_nchw),
        HPDL_TEST(gradients_nhwc),
        HPDL_TEST(f32_matches_f64),
        HPDL_TEST(sgd_trains),
        HPDL_TEST(adamw_trains),
        HPDL_TEST(nonfinite_step_refused),
        HPDL_TEST(run_refuses),
        HPDL_TEST(layer_costs),
        HPDL_TEST(fold_every_kind),
        HPDL_TEST(fold_resnet18),
        HPDL_TEST(fold_refuses),
        HPDL_TEST(quantized_small_cnn),
        HPDL_TEST(quantized_residual_cnn),
        HPDL_TEST(quantized_cnn_calibrates_through_a_backend),
        HPDL_TEST(quantized_cnn_refuses),
        HPDL_TEST(augment_draws_every_shift),
        HPDL_TEST(augment_is_reproducible),
        HPDL_TEST(augment_refuses),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
