/* Where the int8 CNN forward's time goes at batch 256 (2026-11-29): the two
   CNNs of bench/quantize (small, ResNet-18; fresh weights, batch norms
   folded, quantized as the bench does), int8 and f16, each timed three ways,
   median of 50:
     eager  - one forward between two events (what bench/quantize times);
     host   - the host's time to queue one forward, the GPU idle before;
     graph  - the same forward captured once into a CUDA graph and replayed
              between two events (the GPU's own time, no host in between).
   The graph's int8 logits are checked against the eager ones.

       nvcc -std=c++17 -O3 -I. -DHPDL_HAVE_CUDNN -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-29-int8-small/host_graph.cu -o build/q/host_graph \
           -lcublas -lcublasLt -lcudnn -ldl */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <chrono>
#include <vector>

#define BATCH 256
#define REPS 50

typedef void (*forward_fn)(void *ctx, cudaStream_t s);

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* Median ms of fn between two events on s (the host queues it in between). */
static double eager_ms(forward_fn fn, void *ctx, cudaStream_t s) {
    cudaEvent_t a, b;
    std::vector<double> t;
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    for (int k = 0; k < REPS; k++) {
        float ms = 0;
        HPDL_CUDA_CHECK(cudaEventRecord(a, s));
        fn(ctx, s);
        HPDL_CUDA_CHECK(cudaEventRecord(b, s));
        HPDL_CUDA_CHECK(cudaEventSynchronize(b));
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

/* Median ms the host takes to queue fn, the stream empty before. */
static double host_ms(forward_fn fn, void *ctx, cudaStream_t s) {
    std::vector<double> t;
    for (int k = 0; k < REPS; k++) {
        HPDL_CUDA_CHECK(cudaStreamSynchronize(s));
        auto t0 = std::chrono::steady_clock::now();
        fn(ctx, s);
        auto t1 = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    HPDL_CUDA_CHECK(cudaStreamSynchronize(s));
    return median(t);
}

/* Median ms of fn captured into a graph and replayed; -1 if it cannot be captured. */
static double graph_ms(forward_fn fn, void *ctx, cudaStream_t s) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    HPDL_CUDA_CHECK(cudaStreamSynchronize(s));
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return -1;
    fn(ctx, s);
    if (cudaStreamEndCapture(s, &graph) != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    cudaEvent_t a, b;
    std::vector<double> t;
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    HPDL_CUDA_CHECK(cudaGraphLaunch(exec, s));
    for (int k = 0; k < REPS; k++) {
        float ms = 0;
        HPDL_CUDA_CHECK(cudaEventRecord(a, s));
        HPDL_CUDA_CHECK(cudaGraphLaunch(exec, s));
        HPDL_CUDA_CHECK(cudaEventRecord(b, s));
        HPDL_CUDA_CHECK(cudaEventSynchronize(b));
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return median(t);
}

struct int8_ctx { hpdl_cuda_quant_cnn *g; const float *X; };
struct f16_ctx { hpdl_cnn_run *r; const hpdl_f16 *X; };

static void int8_forward(void *p, cudaStream_t s) {
    int8_ctx *c = (int8_ctx *)p;
    HPDL_CHECK(hpdl_cuda_quant_cnn_forward(c->g, BATCH, c->X, s));
}

static void f16_forward(void *p, cudaStream_t s) {
    f16_ctx *c = (f16_ctx *)p;
    (void)s; /* the backend queues on its own stream */
    HPDL_CHECK(hpdl_cnn_forward(c->r, BATCH, c->X, 0));
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
    cudaStream_t s;
    HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
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
    HPDL_CHECK(hpdl_cuda_cnn_create<hpdl_f16>(&gf, HPDL_CONV_AUTO, 0));
    HPDL_CHECK(hpdl_cnn_run_create(&run, &folded, &gf.be, BATCH, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&run, pf.data(), NULL));

    int8_ctx ic = {&g, dX};
    f16_ctx fc = {&run, dXh};
    const size_t n_logits = (size_t)BATCH * folded.classes;
    std::vector<int32_t> eager_logits(n_logits), graph_logits(n_logits);
    int8_forward(&ic, s); /* warm-up: scratch reserved, workspaces sized */
    HPDL_CUDA_CHECK(cudaStreamSynchronize(s));
    HPDL_CUDA_CHECK(cudaMemcpy(eager_logits.data(), g.logits, n_logits * 4, cudaMemcpyDeviceToHost));
    double e8 = eager_ms(int8_forward, &ic, s), h8 = host_ms(int8_forward, &ic, s);
    HPDL_CUDA_CHECK(cudaMemset(g.logits, 0, n_logits * 4));
    double g8 = graph_ms(int8_forward, &ic, s);
    HPDL_CUDA_CHECK(cudaMemcpy(graph_logits.data(), g.logits, n_logits * 4, cudaMemcpyDeviceToHost));
    printf("%-8s int8: eager %.4f ms, host %.4f ms, graph %.4f ms (graph logits %s)\n", name, e8, h8, g8,
           eager_logits == graph_logits ? "equal" : "DIFFER");
    fflush(stdout);
    f16_forward(&fc, gf.stream);
    HPDL_CUDA_CHECK(cudaStreamSynchronize(gf.stream));
    double e16 = eager_ms(f16_forward, &fc, gf.stream), h16 = host_ms(f16_forward, &fc, gf.stream);
    double g16 = graph_ms(f16_forward, &fc, gf.stream);
    printf("%-8s f16:  eager %.4f ms, host %.4f ms, graph %.4f ms\n", name, e16, h16, g16);
    hpdl_cnn_run_destroy(&run);
    hpdl_cuda_cnn_destroy(&gf);
    hpdl_cuda_quant_cnn_destroy(&g);
    hpdl_quant_cnn_free(&q);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dXh);
    cudaStreamDestroy(s);
}

int main() {
    hpdl_cnn small, resnet;
    if (!hpdl_cuda_available()) {
        printf("host_graph: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    HPDL_CHECK(hpdl_cnn_small(&small, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
    HPDL_CHECK(hpdl_cnn_resnet18(&resnet, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
    one_net("small", &small);
    one_net("resnet18", &resnet);
    return 0;
}
