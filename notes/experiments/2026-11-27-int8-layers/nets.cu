/* The two CNNs of bench/quantize (small, ResNet-18; 3x32x32 images, batch
   256, fresh weights, batch norms folded, quantized as the bench does)
   layer by layer (2026-11-27): each int8 layer of the integer-only network
   timed alone (events, median of 20, after a whole forward), beside the
   f16 network's layers (hpdl_cuda_cnn_layer_times). Then one int8 and one
   f16 forward between cudaProfilerStart/Stop, for ncu --profile-from-start off.

       nvcc -std=c++17 -O3 -I. -DHPDL_HAVE_CUDNN -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-27-int8-layers/nets.cu -o build/int8_nets -lcublas -lcublasLt -lcudnn -ldl */
#include "hpdl_cuda.cuh"

#include <cuda_profiler_api.h>
#include <algorithm>
#include <vector>

#define BATCH 256

static const char *op_name(hpdl_cnn_op op) {
    switch (op) {
    case HPDL_CNN_CONV: return "conv";
    case HPDL_CNN_LINEAR: return "linear";
    case HPDL_CNN_MAXPOOL: return "maxpool";
    case HPDL_CNN_ADD: return "add";
    case HPDL_CNN_GLOBAL_AVGPOOL: return "gap";
    case HPDL_CNN_RELU: return "relu";
    default: return "other";
    }
}

/* Median ms of `reps` runs of int8 layer i (-1: the image's quantisation). */
static double int8_layer_ms(hpdl_cuda_quant_cnn *g, int i, const float *dX, int reps) {
    cudaEvent_t a, b;
    std::vector<double> t((size_t)reps);
    const hpdl_cnn *net = &g->net;
    const int features = (int)hpdl__shape_count(net->input);
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    for (int k = 0; k < reps; k++) {
        float ms = 0;
        HPDL_CUDA_CHECK(cudaEventRecord(a, 0));
        if (i < 0) {
            HPDL_CHECK(hpdl_cuda_quant_quantize_f32(BATCH, features, dX, features, g->act[0], g->codes[0], features, 0));
        } else {
            const hpdl_cnn_layer *l = &net->layer[i];
            const int8_t *bx = l->op == HPDL_CNN_ADD ? g->codes[g->base[l->other + 1]] : NULL;
            HPDL_CHECK(hpdl__cuda_quant_cnn_layer(g, i, BATCH, g->codes[g->base[l->input + 1]], bx,
                                                  i == net->n_layers - 1 ? (void *)g->logits : (void *)g->codes[i + 1], 0));
        }
        HPDL_CUDA_CHECK(cudaEventRecord(b, 0));
        HPDL_CUDA_CHECK(cudaEventSynchronize(b));
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        t[(size_t)k] = ms;
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[(size_t)reps / 2];
}

static void one_net(const char *name, const hpdl_cnn *net) {
    hpdl_rng r;
    hpdl_cnn folded;
    hpdl_quant_cnn q;
    hpdl_cuda_quant_cnn g;
    hpdl_cuda_cnn gf;
    hpdl_cnn_run run;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0, 0, 0);
    const int features = (int)hpdl__shape_count(net->input);
    std::vector<double> p((size_t)net->param_count), state((size_t)net->state_count + 1), pf((size_t)net->param_count);
    std::vector<float> p32((size_t)net->param_count), X((size_t)BATCH * features);
    std::vector<hpdl_f16> Xh(X.size());
    float *dX;
    hpdl_f16 *dXh;
    hpdl_rng_seed(&r, 12);
    for (size_t i = 0; i < X.size(); i++) X[i] = (float)(2 * hpdl_rng_uniform(&r) - 1);
    for (size_t i = 0; i < X.size(); i++) Xh[i] = hpdl_f16_from_f32(X[i]);
    HPDL_CHECK(hpdl_cnn_init(net, 13, p.data(), state.data()));
    HPDL_CHECK(hpdl_cnn_fold_batchnorm(net, p.data(), state.data(), 1e-5, &folded, pf.data(), NULL));
    for (int64_t i = 0; i < folded.param_count; i++) p32[i] = (float)pf[i];
    HPDL_CHECK(hpdl_quant_cnn_build(&q, &folded, p32.data(), 16, X.data(), 100.0));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, X.size() * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dXh, Xh.size() * sizeof(hpdl_f16)));
    HPDL_CUDA_CHECK(cudaMemcpy(dXh, Xh.data(), Xh.size() * sizeof(hpdl_f16), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_quant_cnn_create(&g, &q, BATCH));
    HPDL_CHECK(hpdl_cuda_quant_cnn_forward(&g, BATCH, dX, 0));
    HPDL_CHECK(hpdl_cuda_cnn_create<hpdl_f16>(&gf, HPDL_CONV_AUTO, 0));
    HPDL_CHECK(hpdl_cnn_run_create(&run, &folded, &gf.be, BATCH, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&run, pf.data(), NULL));
    std::vector<double> f16_ms((size_t)folded.n_layers);
    double f16_whole = 0, int8_sum = 0, f16_sum = 0;
    HPDL_CHECK(hpdl_cuda_cnn_layer_times(&gf, &run, BATCH, dXh, 20, f16_ms.data(), &f16_whole));
    printf("%s, batch %d: int8 layer by layer against f16 (ms, median of 20)\n", name, BATCH);
    double qms = int8_layer_ms(&g, -1, dX, 20);
    int8_sum += qms;
    printf("  %2s %-8s %-14s %9.4f\n", "-", "quantize", "", qms);
    for (int i = 0; i < folded.n_layers; i++) {
        const hpdl_cnn_layer *l = &folded.layer[i];
        hpdl_shape in = hpdl__cnn_in_shape(&folded, i), out = folded.out[i];
        char shape[64];
        double ms = g.base[i + 1] == i + 1 ? int8_layer_ms(&g, i, dX, 20) : 0;
        snprintf(shape, sizeof shape, "%dx%dx%d>%dx%dx%d k%d/%d", in.c, in.h, in.w, out.c, out.h, out.w, l->kernel, l->stride);
        printf("  %2d %-8s %-26s int8 %9.4f  f16 %9.4f  %s\n", i, op_name(l->op), shape, ms, f16_ms[(size_t)i],
               g.base[i + 1] == i + 1 ? "" : "(folded in int8)");
        int8_sum += ms;
        f16_sum += f16_ms[(size_t)i];
    }
    printf("  sums: int8 %.4f ms, f16 %.4f ms (f16 whole forward %.4f)\n", int8_sum, f16_sum, f16_whole);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    cudaProfilerStart();
    HPDL_CHECK(hpdl_cuda_quant_cnn_forward(&g, BATCH, dX, 0));
    HPDL_CHECK(hpdl_cnn_forward(&run, BATCH, dXh, 0));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    cudaProfilerStop();
    hpdl_cnn_run_destroy(&run);
    hpdl_cuda_cnn_destroy(&gf);
    hpdl_cuda_quant_cnn_destroy(&g);
    hpdl_quant_cnn_free(&q);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dXh);
}

int main(int argc, char **argv) {
    hpdl_cnn small, resnet;
    (void)argc; (void)argv;
    if (!hpdl_cuda_available()) {
        printf("int8_nets: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    HPDL_CHECK(hpdl_cnn_small(&small, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
    HPDL_CHECK(hpdl_cnn_resnet18(&resnet, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
    one_net("small", &small);
    one_net("resnet18", &resnet);
    return 0;
}
