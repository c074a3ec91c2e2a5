/* The MLP's SGD step alone: the one-pass kernel (hpdl__mlp_sgd_kept_kernel,
   as hpdl__mlp_launch_sgd launches it) against the two-pass kernel
   (hpdl__mlp_sgd_kernel, as it was launched before), at the parameter
   counts of 784-512-10 and 784-2048-10, f32 and mixed precision (f16
   gradients and weight copy). Events around 200 launches, the median of 9
   rounds, the two kernels in turns. lr is tiny so the parameters stay put.
   nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a sgd_probe.cu -lcublas -lcublasLt -ldl */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

template <typename C>
static void two_pass(int64_t n_w, int64_t n, float *P, C *cW, const C *G, hpdl__mlp_state *st, int amp) {
    void (*kernel)(int64_t, int64_t, float *, C *, const C *, hpdl__mlp_state *, int, int) =
        hpdl__mlp_sgd_kernel<float, C>;
    int batch = 0, per_sm = 0, sms = 0, blocks = hpdl__grid_for(n, 256);
    void *args[] = {&n_w, &n, &P, &cW, (void *)&G, &st, &amp, &batch};
    hpdl__sm_count(&sms);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, 0);
    if (per_sm > 4) per_sm = 4;
    if (blocks > per_sm * sms) blocks = per_sm * sms;
    cudaLaunchCooperativeKernel((const void *)kernel, blocks, 256, args, 0, 0);
}

template <typename C> static void probe(const char *name, int hidden, int amp) {
    const int64_t n_w = 784 * (int64_t)hidden + (int64_t)hidden * 10, n = n_w + hidden + 10;
    float *P = NULL;
    C *G = NULL, *cW = NULL;
    hpdl__mlp_state init, *st = NULL;
    cudaEvent_t a, b;
    std::vector<float> us[2];
    int round, v, i;
    cudaMalloc((void **)&P, n * sizeof(float));
    cudaMalloc((void **)&G, n * sizeof(C));
    cudaMemset(P, 0, n * sizeof(float));
    cudaMemset(G, 0, n * sizeof(C));
    if (amp) { cudaMalloc((void **)&cW, n_w * sizeof(C)); cudaMemset(cW, 0, n_w * sizeof(C)); }
    memset(&init, 0, sizeof init);
    init.lr = 1e-12;
    init.loss_scale = 1.0f;
    cudaMalloc((void **)&st, sizeof init);
    cudaMemcpy(st, &init, sizeof init, cudaMemcpyHostToDevice);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (round = 0; round < 10; round++)
        for (v = 0; v < 2; v++) {
            float ms = 0;
            cudaEventRecord(a, 0);
            for (i = 0; i < 200; i++) {
                if (v == 0) hpdl__mlp_launch_sgd<float, C>(n_w, n, P, amp ? cW : NULL, G, st, amp, 0, 0);
                else two_pass<C>(n_w, n, P, amp ? cW : NULL, G, st, amp);
            }
            cudaEventRecord(b, 0);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&ms, a, b);
            if (round > 0) us[v].push_back(ms * 1000.0f / 200);
        }
    for (v = 0; v < 2; v++) std::sort(us[v].begin(), us[v].end());
    printf("%s,%d,%lld,%.2f,%.2f,%s\n", name, hidden, (long long)n, us[0][us[0].size() / 2], us[1][us[1].size() / 2],
           cudaGetErrorString(cudaGetLastError()));
    cudaFree(P); cudaFree(G); cudaFree(cW); cudaFree(st);
}

int main(void) {
    printf("precision,hidden,params,one_pass_us,two_pass_us,cuda\n");
    probe<float>("f32", 512, 0);
    probe<float>("f32", 2048, 0);
    probe<__half>("f16", 512, 1);
    probe<__half>("f16", 2048, 1);
    return 0;
}
