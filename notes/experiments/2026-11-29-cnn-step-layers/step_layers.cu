/* Where one training step of ResNet-18 (3x32x32, NHWC) goes on the GPU,
   by layer kind: the step of hpdl_cnn_train_step taken apart, layer by
   layer, with an event pair around each layer's forward and backward share
   (eager: no graph), summed by kind over REPS steps after WARMUP.

   build: nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN
          notes/experiments/2026-11-29-cnn-step-layers/step_layers.cu -o step_layers
          -lcublas -lcublasLt -lcudnn -ldl
   run:   step_layers BATCH f16|bf16|f32 auto|cudnn */
#include "hpdl_cuda.cuh"

#include <vector>

#define WARMUP 3
#define REPS 5

enum { K_CONV, K_BN, K_RELU, K_POOL, K_LINEAR, K_ADD, K_LOSS, K_UPDATE, K_COUNT };
static const char *kind_name[K_COUNT] = {"conv", "batch norm", "relu", "pools", "linear", "residual add", "loss",
                                         "update"};

static int kind_of(hpdl_cnn_op op) {
    switch (op) {
    case HPDL_CNN_CONV: return K_CONV;
    case HPDL_CNN_BATCHNORM: return K_BN;
    case HPDL_CNN_RELU: return K_RELU;
    case HPDL_CNN_LINEAR: return K_LINEAR;
    case HPDL_CNN_ADD: return K_ADD;
    default: return K_POOL;
    }
}

/* Times one piece of work on the backend's stream: ms added to *sum. */
struct timer {
    cudaStream_t stream;
    std::vector<cudaEvent_t> ev;
    std::vector<double *> into;
    void mark(double *sum) {
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        ev.push_back(a);
        ev.push_back(b);
        into.push_back(sum);
        cudaEventRecord(a, stream);
    }
    void done() { cudaEventRecord(ev.back(), stream); }
    void collect() {
        cudaStreamSynchronize(stream);
        for (size_t k = 0; k < into.size(); k++) {
            float ms = 0;
            cudaEventElapsedTime(&ms, ev[2 * k], ev[2 * k + 1]);
            *into[k] += ms;
            cudaEventDestroy(ev[2 * k]);
            cudaEventDestroy(ev[2 * k + 1]);
        }
        ev.clear();
        into.clear();
    }
};

/* hpdl_cnn_train_step with every layer timed (fwd[kind], bwd[kind]). */
static hpdl_status timed_step(hpdl_cnn_run *r, int batch, const void *X, const int32_t *labels, timer *t,
                              double *fwd, double *bwd) {
    int written[HPDL_CNN_MAX_LAYERS] = {0}, i, last = r->net->n_layers - 1;
    hpdl_status s = HPDL_OK;
    if (r->net->state_count)
        s = r->be->copy(r->be->ctx, r->state_before, r->state, (size_t)r->net->state_count * hpdl__cnn_param_size(r->be));
    for (i = 0; s == HPDL_OK && i <= last; i++) {
        t->mark(&fwd[kind_of(r->net->layer[i].op)]);
        s = hpdl__cnn_forward_layer(r, i, batch, X, 1);
        t->done();
    }
    t->mark(&fwd[K_LOSS]);
    if (s == HPDL_OK)
        s = r->be->softmax_xent(r->be->ctx, batch, r->net->classes, r->act[last], labels, r->dact[last], r->loss);
    t->done();
    for (i = last; s == HPDL_OK && i >= 0; i--) {
        const hpdl_cnn_layer *l = &r->net->layer[i];
        t->mark(&bwd[kind_of(l->op)]);
        if (l->op == HPDL_CNN_ADD) {
            s = hpdl__cnn_add_backward(r, i, batch, written);
        } else {
            s = hpdl__cnn_backward_layer(r, i, batch, X, hpdl__cnn_grad_dest(r, l->input, written));
            if (s == HPDL_OK) s = hpdl__cnn_grad_done(r, l->input, batch, written);
        }
        t->done();
    }
    t->mark(&bwd[K_UPDATE]);
    if (s == HPDL_OK) s = hpdl_cnn_update(r);
    t->done();
    return s == HPDL_ERR_NUMERIC ? HPDL_OK : s; /* a skipped step still ran its kernels */
}

int main(int argc, char **argv) {
    const int batch = argc > 1 ? atoi(argv[1]) : 2048;
    const char *prec = argc > 2 ? argv[2] : "f16";
    const hpdl_conv_algo conv = argc > 3 && !strcmp(argv[3], "cudnn") ? HPDL_CONV_CUDNN : HPDL_CONV_AUTO;
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_cuda_cnn g;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 5e-4);
    double fwd[K_COUNT] = {0}, bwd[K_COUNT] = {0}, whole = 0, sum = 0;
    HPDL_CHECK(hpdl_cnn_resnet18(&net, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
    std::vector<double> params(net.param_count), state(net.state_count + 1);
    HPDL_CHECK(hpdl_cnn_init(&net, 1, params.data(), state.data()));
    if (!strcmp(prec, "f16")) HPDL_CHECK(hpdl_cuda_cnn_create_f16(&g, conv, 0));
    else if (!strcmp(prec, "bf16")) HPDL_CHECK(hpdl_cuda_cnn_create_bf16(&g, conv, 0));
    else HPDL_CHECK(hpdl_cuda_cnn_create_f32(&g, conv, 0));
    g.use_graphs = 0;
    HPDL_CHECK(hpdl_cnn_run_create(&r, &net, &g.be, batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, params.data(), state.data()));
    const size_t n_x = (size_t)batch * 3 * 32 * 32;
    void *X = NULL;
    int32_t *labels = NULL;
    std::vector<int32_t> h_labels(batch);
    for (int k = 0; k < batch; k++) h_labels[k] = k % 10;
    HPDL_CUDA_CHECK(cudaMalloc(&X, n_x * g.be.elem_size));
    HPDL_CUDA_CHECK(cudaMemset(X, 0, n_x * g.be.elem_size)); /* zeros: the batch norms keep it finite */
    HPDL_CUDA_CHECK(cudaMalloc(&labels, batch * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemcpy(labels, h_labels.data(), batch * sizeof(int32_t), cudaMemcpyHostToDevice));
    timer t;
    t.stream = g.stream;
    for (int k = 0; k < WARMUP; k++) {
        hpdl_status s = hpdl_cnn_train_step(&r, batch, X, labels);
        if (s != HPDL_OK && s != HPDL_ERR_NUMERIC) HPDL_CHECK(s);
    }
    for (int k = 0; k < REPS; k++) { /* the whole step as one piece: what the per-layer events add */
        double w = 0;
        t.mark(&w);
        hpdl_status s = hpdl_cnn_train_step(&r, batch, X, labels);
        t.done();
        if (s != HPDL_OK && s != HPDL_ERR_NUMERIC) HPDL_CHECK(s);
        t.collect();
        whole += w / REPS;
    }
    for (int k = 0; k < REPS; k++) {
        HPDL_CHECK(timed_step(&r, batch, X, labels, &t, fwd, bwd));
        t.collect();
    }
    printf("ResNet-18 3x32x32 NHWC, batch %d, %s, convolutions %s: ms per step (mean of %d, eager)\n", batch, prec,
           conv == HPDL_CONV_CUDNN ? "cuDNN" : "hpdl AUTO", REPS);
    printf("%-14s %9s %9s %9s %7s\n", "kind", "forward", "backward", "both", "share");
    for (int k = 0; k < K_COUNT; k++) sum += (fwd[k] + bwd[k]) / REPS;
    for (int k = 0; k < K_COUNT; k++)
        printf("%-14s %9.3f %9.3f %9.3f %6.1f%%\n", kind_name[k], fwd[k] / REPS, bwd[k] / REPS,
               (fwd[k] + bwd[k]) / REPS, 100 * (fwd[k] + bwd[k]) / REPS / sum);
    printf("%-14s %29.3f\n%-14s %29.3f\n", "sum of pieces", sum, "whole step", whole);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    return 0;
}
