/* Tests of the GPU CNN backend: a few training steps on the GPU against the
   CPU twin from the same weights (a network with every layer kind in both
   layouts, the course's small CNN, ResNet-18), every parameter tensor
   within 1e-12 (f64) and 1e-5 (f32) relative Frobenius difference; epochs replayed from CUDA graphs equal to eager
   steps and lowering the loss; a non-finite step skipped on the device;
   mixed precision (f16, bf16) against f32 from the same weights, learning
   over epochs, and its loss scale halving on overflow; int8 calibration
   on the backend. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"
#include "tests/cnn_every_kind.h"

#include <type_traits>
#include <vector>


template <typename T> static std::vector<T> converted(const std::vector<double> &x) {
    return std::vector<T>(x.begin(), x.end());
}

template <typename T> static T *to_device(const std::vector<T> &x) {
    void *d = NULL;
    HPDL_CUDA_CHECK(cudaMalloc(&d, x.size() * sizeof(T) + 1));
    HPDL_CUDA_CHECK(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    return (T *)d;
}

/* Images in [-1, 1] and labels in [0, classes) for `batch` images. */
static void random_batch(const hpdl_cnn *net, int batch, uint64_t seed, std::vector<double> *X,
                         std::vector<int32_t> *labels) {
    hpdl_rng rng;
    hpdl_rng_seed(&rng, seed);
    X->resize((size_t)batch * net->input.c * net->input.h * net->input.w);
    for (double &v : *X) v = 2 * hpdl_rng_uniform(&rng) - 1;
    labels->resize(batch);
    for (int i = 0; i < batch; i++) (*labels)[i] = (int32_t)hpdl_rng_below(&rng, net->classes);
}

/* `steps` SGD steps of net on CPU and GPU in type T from the same weights
   (hpdl_cuda_cnn_twin_difference) on a random batch. */
template <typename T>
static double cpu_gpu_difference(const hpdl_cnn *net, int batch, int steps, const hpdl_cnn_backend *cpu) {
    std::vector<double> params(net->param_count), state(net->state_count + 1), X;
    std::vector<int32_t> labels;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    double worst = -1;
    HPDL_EXPECT(cpu->elem_size == sizeof(T));
    random_batch(net, batch, 3, &X, &labels);
    std::vector<T> Xt = converted<T>(X);
    HPDL_EXPECT(hpdl_cnn_init(net, 5, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_twin_difference<T>(net, &opt, params.data(), state.data(), batch, Xt.data(),
                                                 labels.data(), steps, &worst, NULL) == HPDL_OK);
    return worst;
}

static void every_kind_matches_cpu(void) {
    hpdl_cnn net;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    for (int layout = 0; layout < 2; layout++) {
        HPDL_EXPECT(every_kind(&net, (hpdl_layout)layout, 0) == HPDL_OK);
        HPDL_EXPECT_NEAR(cpu_gpu_difference<double>(&net, 4, 3, hpdl_cnn_backend_cpu_f64()), 0, 1e-12);
        HPDL_EXPECT_NEAR(cpu_gpu_difference<float>(&net, 4, 3, hpdl_cnn_backend_cpu_f32()), 0, 1e-5);
    }
}

static void small_cnn_matches_cpu(void) {
    hpdl_cnn net;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT_NEAR(cpu_gpu_difference<double>(&net, 8, 3, hpdl_cnn_backend_cpu_f64()), 0, 1e-12);
    HPDL_EXPECT_NEAR(cpu_gpu_difference<float>(&net, 8, 3, hpdl_cnn_backend_cpu_f32()), 0, 1e-5);
}

/* ResNet-18 on Fashion-MNIST's 1x28x28, batch 2, as cnn_train --check:
   every block kind, small enough for the CPU (not smaller: batch norm over
   a few values per channel makes the input gradient mostly rounding
   noise, which the two sides round differently). */
static void resnet18_matches_cpu(void) {
    hpdl_cnn net;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT_NEAR(cpu_gpu_difference<double>(&net, 2, 2, hpdl_cnn_backend_cpu_f64()), 0, 1e-12);
    /* f32: both sides round differently (float sums in another order) and
       20 batch norms amplify it; measured 1.7e-3, asserted loosely. */
    double f32 = cpu_gpu_difference<float>(&net, 2, 2, hpdl_cnn_backend_cpu_f32());
    fprintf(stderr, "    resnet18 f32 GPU vs CPU twin: %.3g\n", f32);
    HPDL_EXPECT_NEAR(f32, 0, 1e-2);
}

/* Labels a linear rule can tell apart: image i of class c = i % 3 has its
   c-th third (in memory order) brightened by 1. */
static void separable_set(const hpdl_cnn *net, int n, std::vector<float> *X, std::vector<int32_t> *labels) {
    std::vector<double> Xd;
    std::vector<int32_t> ignored;
    int features = net->input.c * net->input.h * net->input.w, third = features / 3;
    random_batch(net, n, 9, &Xd, &ignored);
    X->assign(Xd.begin(), Xd.end());
    labels->resize(n);
    for (int i = 0; i < n; i++) {
        (*labels)[i] = i % 3;
        for (int f = 0; f < third; f++) (*X)[(size_t)i * features + (i % 3) * third + f] += 1.0f;
    }
}

/* Epochs from graphs give the parameters eager steps give, and learn, on
   mirrored images (flips only: a class is a band of rows in NHWC memory
   order, which a left-right mirror keeps). */
static void graph_epochs(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g[2];
    hpdl_cnn_run r[2];
    std::vector<float> X;
    std::vector<int32_t> labels;
    const int n = 1000;
    double first = 0, last = 0, acc = 0, worst = 0;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(3, 16, 16), 3, HPDL_NHWC) == HPDL_OK);
    separable_set(&net, n, &X, &labels);
    float *dX = to_device(X);
    int32_t *dlabels = to_device(labels);
    std::vector<double> params(net.param_count), got(net.param_count), want(net.param_count);
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.02, 0.9, 5e-4);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), NULL) == HPDL_OK);
    for (int k = 0; k < 2; k++) {
        HPDL_EXPECT(hpdl_cuda_cnn_create<float>(&g[k], HPDL_CONV_AUTO) == HPDL_OK);
        g[k].use_graphs = k; /* g[0] eager, g[1] graphs */
        g[k].augment_flip = 1; /* the draws are outside the graph: both see the same images */
        HPDL_EXPECT(hpdl_cnn_run_create(&r[k], &net, &g[k].be, 64, &opt) == HPDL_OK);
        HPDL_EXPECT(hpdl_cnn_set_params(&r[k], params.data(), NULL) == HPDL_OK);
    }
    for (int epoch = 0; epoch < 8; epoch++)
        for (int k = 0; k < 2; k++) {
            HPDL_EXPECT(hpdl_cuda_cnn_train_epoch<float>(&g[k], &r[k], n, dX, dlabels, 100 + epoch) == HPDL_OK);
            if (k == 1) HPDL_EXPECT(hpdl_cuda_cnn_results(&g[k], epoch == 0 ? &first : &last, NULL) == HPDL_OK);
        }
    HPDL_EXPECT(hpdl_cnn_get_params(&r[0], want.data(), NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r[1], got.data(), NULL) == HPDL_OK);
    for (int64_t k = 0; k < net.param_count; k++) worst = fmax(worst, fabs(got[k] - want[k]));
    HPDL_EXPECT_NEAR(worst, 0, 1e-6);
    HPDL_EXPECT(r[1].steps == 8 * 16);
    HPDL_EXPECT(last < 0.5 * first);
    HPDL_EXPECT(hpdl_cnn_accuracy(&r[1], n, dX, dlabels, &acc) == HPDL_OK);
    HPDL_EXPECT(acc > 0.9);
    for (int k = 0; k < 2; k++) { hpdl_cnn_run_destroy(&r[k]); hpdl_cuda_cnn_destroy(&g[k]); }
    cudaFree(dX);
    cudaFree(dlabels);
}

/* A NaN pixel: the step is skipped on the device and counted; parameters
   and batch-norm statistics are unchanged; the next good step runs. */
static void nonfinite_step_skipped(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<double> X, params, state, p0, s0, p1, s1;
    std::vector<int32_t> labels;
    int64_t skipped = -1;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(every_kind(&net, HPDL_NHWC, 0) == HPDL_OK);
    params.resize(net.param_count); p0 = p1 = params;
    state.resize(net.state_count); s0 = s1 = state;
    random_batch(&net, 4, 2, &X, &labels);
    std::vector<float> Xf(X.begin(), X.end());
    Xf[7] = NAN;
    float *dX = to_device(Xf);
    int32_t *dlabels = to_device(labels);
    hpdl_cnn_optimizer opt = hpdl_cnn_adamw(0.01, 0.01);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_create<float>(&g, HPDL_CONV_AUTO) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, &g.be, 4, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p0.data(), s0.data()) == HPDL_OK);
    for (int s = 0; s < 3; s++) HPDL_EXPECT(hpdl_cuda_cnn_train_batch<float>(&g, &r, 4, dX, dlabels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_results(&g, NULL, &skipped) == HPDL_OK);
    HPDL_EXPECT(skipped == 3);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p1.data(), s1.data()) == HPDL_OK);
    HPDL_EXPECT(p0 == p1 && s0 == s1);
    Xf[7] = 0.25f;
    HPDL_CUDA_CHECK(cudaMemcpy(dX, Xf.data(), Xf.size() * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_cnn_train_batch<float>(&g, &r, 4, dX, dlabels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p1.data(), s1.data()) == HPDL_OK);
    HPDL_EXPECT(p0 != p1 && s0 != s1);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
    cudaFree(dlabels);
}

/* ---- mixed precision ------------------------------------------------------ */

static hpdl_f16 to_16bit(float v, const hpdl_f16 *) { return hpdl_f16_from_f32(v); }
static hpdl_bf16 to_16bit(float v, const hpdl_bf16 *) { return hpdl_bf16_from_f32(v); }

template <typename H> static std::vector<H> converted_16bit(const std::vector<float> &x) {
    std::vector<H> out(x.size());
    for (size_t i = 0; i < x.size(); i++) out[i] = to_16bit(x[i], (const H *)NULL);
    return out;
}

/* Mixed precision tracks f32: `steps` SGD steps on one batch from the same
   weights, each step's loss within tol (relative). A step's loss depends on
   about ten roundings to the 16-bit type (the input, each weight tensor,
   each stored activation), each off by at most the unit roundoff u (f16
   2^-11, bf16 2^-8); with f32 sums their effect on logits and loss of
   order 1 is a few u, and a few steps carry it along: tolerance 20 u,
   f16 1e-2 and bf16 8e-2. A working copy left stale, or gradients not
   unscaled, are off by far more: the f32 loss falls by tens of percent
   over these steps on a batch it memorises. */
template <typename H>
static void mixed_tracks_f32(const char *name, const hpdl_cnn *net, int batch, int steps, double tol) {
    std::vector<double> params(net->param_count), state(net->state_count + 1), X;
    std::vector<int32_t> labels;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    double loss = -1, param = -1;
    random_batch(net, batch, 3, &X, &labels);
    std::vector<float> Xf(X.begin(), X.end());
    HPDL_EXPECT(hpdl_cnn_init(net, 5, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_mixed_difference<H>(net, &opt, params.data(), state.data(), batch, Xf.data(),
                                                  labels.data(), steps, &loss, &param) == HPDL_OK);
    fprintf(stderr, "    %s vs f32, %d steps: loss %.3g (tolerance %g), parameters %.3g\n", name, steps, loss, tol,
            param);
    HPDL_EXPECT_NEAR(loss, 0, tol);
}

static void mixed_matches_f32(void) {
    hpdl_cnn small, kinds;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_small(&small, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC) == HPDL_OK);
    HPDL_EXPECT(every_kind(&kinds, HPDL_NHWC, 0) == HPDL_OK); /* batch norm, residual, pools */
    mixed_tracks_f32<hpdl_f16>("small CNN f16", &small, 16, 4, 1e-2);
    mixed_tracks_f32<hpdl_bf16>("small CNN bf16", &small, 16, 4, 8e-2);
    mixed_tracks_f32<hpdl_f16>("every kind f16", &kinds, 16, 4, 1e-2);
    mixed_tracks_f32<hpdl_bf16>("every kind bf16", &kinds, 16, 4, 8e-2);
}

/* graph_epochs in mixed precision: epochs from graphs (augmented, with
   the scaler's first skipped steps) learn the separable set. */
template <typename H> static void mixed_epochs_learn_as(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<float> X;
    std::vector<int32_t> labels;
    const int n = 1000;
    double first = 0, last = 0, acc = 0;
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(3, 16, 16), 3, HPDL_NHWC) == HPDL_OK);
    separable_set(&net, n, &X, &labels);
    H *dX = to_device(converted_16bit<H>(X));
    int32_t *dlabels = to_device(labels);
    std::vector<double> params(net.param_count);
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.02, 0.9, 5e-4);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_create<H>(&g, HPDL_CONV_AUTO) == HPDL_OK);
    g.augment_flip = 1;
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, &g.be, 64, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params.data(), NULL) == HPDL_OK);
    for (int epoch = 0; epoch < 8; epoch++) {
        HPDL_EXPECT(hpdl_cuda_cnn_train_epoch<H>(&g, &r, n, dX, dlabels, 100 + epoch) == HPDL_OK);
        HPDL_EXPECT(hpdl_cuda_cnn_results(&g, epoch == 0 ? &first : &last, NULL) == HPDL_OK);
    }
    HPDL_EXPECT(last < 0.5 * first);
    HPDL_EXPECT(hpdl_cnn_accuracy(&r, n, dX, dlabels, &acc) == HPDL_OK);
    HPDL_EXPECT(acc > 0.9);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
    cudaFree(dlabels);
}

static void mixed_epochs_learn(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    mixed_epochs_learn_as<hpdl_f16>();
    mixed_epochs_learn_as<hpdl_bf16>();
}

/* An overflow skips the step: f16 with a loss scale past its range (the
   loss gradient itself is inf), bf16 with an inf pixel. Each skipped step,
   eager then replayed from its graph, leaves the master parameters and
   the batch-norm statistics as they were and halves the scale; a clean
   step then trains and keeps it. */
template <typename H> static void overflow_skipped_as(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<double> X, params, state, p0, s0, p1, s1;
    std::vector<int32_t> labels;
    const int f16 = std::is_same<H, hpdl_f16>::value;
    const double start = f16 ? 1e30 : 65536.0; /* f16's largest value is 65504 */
    double scale = 0;
    int64_t skipped = -1;
    HPDL_EXPECT(every_kind(&net, HPDL_NHWC, 0) == HPDL_OK);
    params.resize(net.param_count); p0 = p1 = params;
    state.resize(net.state_count); s0 = s1 = state;
    random_batch(&net, 8, 2, &X, &labels);
    std::vector<float> Xf(X.begin(), X.end());
    if (!f16) Xf[5] = INFINITY;
    H *dX = to_device(converted_16bit<H>(Xf));
    int32_t *dlabels = to_device(labels);
    hpdl_cnn_optimizer opt = hpdl_cnn_adamw(0.01, 0.01);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_create<H>(&g, HPDL_CONV_AUTO) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, &g.be, 8, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_set_loss_scale(&g, start) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p0.data(), s0.data()) == HPDL_OK);
    for (int s = 0; s < 2; s++) HPDL_EXPECT(hpdl_cuda_cnn_train_batch<H>(&g, &r, 8, dX, dlabels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_results(&g, NULL, &skipped) == HPDL_OK);
    HPDL_EXPECT(skipped == 2);
    HPDL_EXPECT(hpdl_cuda_cnn_loss_scale(&g, &scale) == HPDL_OK);
    HPDL_EXPECT(scale == (double)(float)(start / 4));
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p1.data(), s1.data()) == HPDL_OK);
    HPDL_EXPECT(p0 == p1 && s0 == s1);
    if (f16) {
        HPDL_EXPECT(hpdl_cuda_cnn_set_loss_scale(&g, 1024.0) == HPDL_OK);
    } else {
        Xf[5] = 0.25f;
        std::vector<H> clean = converted_16bit<H>(Xf);
        HPDL_CUDA_CHECK(cudaMemcpy(dX, clean.data(), clean.size() * sizeof(H), cudaMemcpyHostToDevice));
    }
    HPDL_EXPECT(hpdl_cuda_cnn_loss_scale(&g, &scale) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_train_batch<H>(&g, &r, 8, dX, dlabels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_results(&g, NULL, &skipped) == HPDL_OK);
    HPDL_EXPECT(skipped == 2);
    double after = 0;
    HPDL_EXPECT(hpdl_cuda_cnn_loss_scale(&g, &after) == HPDL_OK);
    HPDL_EXPECT(after == scale);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, p1.data(), s1.data()) == HPDL_OK);
    HPDL_EXPECT(p0 != p1 && s0 != s1);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
    cudaFree(dlabels);
}

static void mixed_overflow_skipped(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    overflow_skipped_as<hpdl_f16>();
    overflow_skipped_as<hpdl_bf16>();
}

/* Mixed precision wants NHWC (the tensor-core convolutions); f32 and f64
   have no loss scale to set. */
static void mixed_refuses(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<double> params;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 0);
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NCHW) == HPDL_OK);
    params.resize(net.param_count);
    std::vector<hpdl_bf16> X(2 * 28 * 28, hpdl_bf16_from_f32(0.5f));
    std::vector<int32_t> labels(2, 1);
    hpdl_bf16 *dX = to_device(X);
    int32_t *dlabels = to_device(labels);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_create_bf16(&g, HPDL_CONV_AUTO, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, &g.be, 2, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params.data(), NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_train_batch_bf16(&g, &r, 2, dX, dlabels) == HPDL_ERR_UNSUPPORTED);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    HPDL_EXPECT(hpdl_cuda_cnn_create_f32(&g, HPDL_CONV_AUTO, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_set_loss_scale(&g, 1024.0) == HPDL_ERR_INVALID);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
    cudaFree(dlabels);
}

/* The GPU's augmentation is the CPU twin's, bit for bit (both layouts and types). */
template <typename T> static void augment_matches_cpu_as(hpdl_layout layout) {
    hpdl_tensor4 d = hpdl_tensor4_make(37, 3, 9, 7, layout);
    std::vector<T> x(hpdl_tensor4_count(&d)), want(x.size()), got(x.size());
    hpdl_rng rng;
    void *dx = NULL, *dy = NULL;
    hpdl_rng_seed(&rng, 8);
    for (T &v : x) v = (T)hpdl_rng_uniform(&rng);
    HPDL_EXPECT(hpdl_augment_crop_flip(&d, sizeof(T), x.data(), 3, 1, 42, 1000, want.data()) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc(&dx, x.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&dy, x.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_augment_crop_flip(&d, sizeof(T), dx, 3, 1, 42, 1000, dy, 0) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMemcpy(got.data(), dy, x.size() * sizeof(T), cudaMemcpyDeviceToHost));
    HPDL_EXPECT(memcmp(got.data(), want.data(), x.size() * sizeof(T)) == 0);
    cudaFree(dx);
    cudaFree(dy);
}

static void augment_matches_cpu(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    augment_matches_cpu_as<float>(HPDL_NHWC);
    augment_matches_cpu_as<double>(HPDL_NCHW);
}

/* Every layer's forward time and the whole pass's: measured, positive. */
static void layer_times(void) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<double> X, params, ms;
    std::vector<int32_t> labels;
    double whole = 0;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 0);
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC) == HPDL_OK);
    params.resize(net.param_count);
    std::vector<double> state(net.state_count);
    ms.assign(net.n_layers, -1.0);
    random_batch(&net, 8, 4, &X, &labels);
    std::vector<float> Xf(X.begin(), X.end());
    float *dX = to_device(Xf);
    HPDL_EXPECT(hpdl_cnn_init(&net, 1, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_create<float>(&g, HPDL_CONV_AUTO) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(&r, &net, &g.be, 8, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(&r, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_cnn_layer_times(&g, &r, 8, dX, 3, ms.data(), &whole) == HPDL_OK);
    for (double t : ms) HPDL_EXPECT(t > 0);
    HPDL_EXPECT(whole > 0);
    HPDL_EXPECT(hpdl_cuda_cnn_layer_times(&g, &r, 9, dX, 3, ms.data(), &whole) == HPDL_ERR_INVALID);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
}

/* int8 calibration through the GPU's f32 backend
   (hpdl_quant_cnn_build_backend): ResNet-18's activation scales within
   1e-4 of the CPU-calibrated network's (the two f32 forwards round
   differently), and the network it builds computes its int8 logits on the
   CPU as the GPU's quantized CNN does (hpdl_cuda_quant_cnn_logits). */
static void quant_calibration_on_gpu(void) {
    const int n = 40, classes = 10;
    hpdl_cnn net, folded;
    hpdl_cuda_cnn g;
    hpdl_cuda_quant_cnn gq;
    hpdl_quant_cnn cpu, gpu;
    std::vector<double> X, params, state, pf;
    std::vector<int32_t> labels, want((size_t)n * classes), got((size_t)n * classes);
    double worst = 0;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 12, 12), classes, HPDL_NHWC) == HPDL_OK);
    params.resize(net.param_count);
    state.resize(net.state_count);
    pf.resize(net.param_count);
    HPDL_EXPECT(hpdl_cnn_init(&net, 7, params.data(), state.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_fold_batchnorm(&net, params.data(), state.data(), 1e-5, &folded, pf.data(), NULL) == HPDL_OK);
    random_batch(&folded, n, 8, &X, &labels);
    std::vector<float> Xf(X.begin(), X.end()), p32(pf.begin(), pf.begin() + folded.param_count);
    float *dX = to_device(Xf);
    HPDL_EXPECT(hpdl_cuda_cnn_create<float>(&g, HPDL_CONV_AUTO) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_build(&cpu, &folded, p32.data(), n, Xf.data(), 100.0) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_cnn_build_backend(&gpu, &folded, p32.data(), n, dX, 100.0, &g.be) == HPDL_OK);
    for (int i = 0; i <= folded.n_layers; i++)
        worst = fmax(worst, fabs(gpu.act[i].scale - cpu.act[i].scale) / cpu.act[i].scale);
    fprintf(stderr, "    activation scales calibrated on the GPU within %.3g of the CPU's\n", worst);
    HPDL_EXPECT(worst <= 1e-4);
    HPDL_EXPECT(hpdl_quant_cnn_logits(&gpu, n, Xf.data(), want.data()) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_quant_cnn_create(&gq, &gpu, n) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_quant_cnn_logits(&gq, n, dX, got.data(), 0) == HPDL_OK);
    HPDL_EXPECT(want == got);
    hpdl_cuda_quant_cnn_destroy(&gq);
    hpdl_quant_cnn_free(&cpu);
    hpdl_quant_cnn_free(&gpu);
    hpdl_cuda_cnn_destroy(&g);
    cudaFree(dX);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(every_kind_matches_cpu), HPDL_TEST(small_cnn_matches_cpu), HPDL_TEST(resnet18_matches_cpu),
        HPDL_TEST(graph_epochs),           HPDL_TEST(nonfinite_step_skipped), HPDL_TEST(augment_matches_cpu),
        HPDL_TEST(layer_times),            HPDL_TEST(mixed_matches_f32),      HPDL_TEST(mixed_epochs_learn),
        HPDL_TEST(mixed_overflow_skipped), HPDL_TEST(mixed_refuses),      HPDL_TEST(quant_calibration_on_gpu),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
