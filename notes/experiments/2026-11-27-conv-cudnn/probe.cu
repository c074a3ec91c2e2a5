// Which cuDNN forward algorithm is wrong for tests/gpu_conv's case "C 256, K 40, 5x5 pad 2,
// twelve 8x8 images" (f32, NCHW, FMA math)? Runs every algorithm cuDNN accepts and compares it
// with a CPU sum in double; then prints what cudnnFindConvolutionForwardAlgorithmEx ranks first.
//   nvcc -std=c++17 -O2 notes/experiments/2026-11-27-conv-cudnn/probe.cu -o probe -lcudnn && ./probe
#include <cudnn.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudnnStatus_t s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { printf("%s: %s\n", #x, cudnnGetErrorString(s_)); exit(1); } } while (0)

int main() {
    const int N = 12, C = 256, H = 8, W = 8, K = 40, R = 5, S = 5, PAD = 2;
    std::vector<float> x((size_t)N * C * H * W), w((size_t)K * C * R * S), y((size_t)N * K * H * W);
    std::vector<double> ref(y.size());
    srand(7);
    for (auto &v : x) v = 2.0f * rand() / RAND_MAX - 1.0f;
    for (auto &v : w) v = 2.0f * rand() / RAND_MAX - 1.0f;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < H; p++)
                for (int q = 0; q < W; q++) {
                    double s = 0;
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < R; r++)
                            for (int t = 0; t < S; t++) {
                                int h = p + r - PAD, ww = q + t - PAD;
                                if (h >= 0 && h < H && ww >= 0 && ww < W)
                                    s += (double)x[((size_t)(n * C + c) * H + h) * W + ww] * w[((size_t)(k * C + c) * R + r) * S + t];
                            }
                    ref[((size_t)(n * K + k) * H + p) * W + q] = s;
                }
    float *dx, *dw, *dy;
    void *ws;
    size_t ws_bytes = (size_t)1 << 30;
    cudaMalloc(&dx, x.size() * 4); cudaMalloc(&dw, w.size() * 4); cudaMalloc(&dy, y.size() * 4); cudaMalloc(&ws, ws_bytes);
    cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CK(cudnnCreate(&h));
    CK(cudnnCreateTensorDescriptor(&xd)); CK(cudnnCreateTensorDescriptor(&yd));
    CK(cudnnCreateFilterDescriptor(&wd)); CK(cudnnCreateConvolutionDescriptor(&cd));
    CK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
    CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W));
    CK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S));
    CK(cudnnSetConvolution2dDescriptor(cd, PAD, PAD, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    printf("cuDNN %zu\n", cudnnGetVersion());
    const float one = 1, zero = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) {
        size_t need = 0;
        if (cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, (cudnnConvolutionFwdAlgo_t)a, &need) != CUDNN_STATUS_SUCCESS ||
            need > ws_bytes) { printf("algo %d: not supported\n", a); continue; }
        cudaMemset(dy, 0xff, y.size() * 4);
        cudnnStatus_t s = cudnnConvolutionForward(h, &one, xd, dx, wd, dw, cd, (cudnnConvolutionFwdAlgo_t)a, ws, need, &zero, yd, dy);
        cudaDeviceSynchronize();
        if (s != CUDNN_STATUS_SUCCESS) { printf("algo %d: %s\n", a, cudnnGetErrorString(s)); continue; }
        cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost);
        double worst = 0;
        for (size_t i = 0; i < y.size(); i++) {
            double e = fabs(y[i] - ref[i]) / (fabs(ref[i]) > 1 ? fabs(ref[i]) : 1);
            if (!(e <= worst)) worst = e;
        }
        printf("algo %d: workspace %zu B, worst relative error %.3g\n", a, need, worst);
    }
    for (int round = 0; round < 3; round++) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int n = 0;
        CK(cudnnFindConvolutionForwardAlgorithmEx(h, xd, dx, wd, dw, cd, yd, dy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws, ws_bytes));
        printf("find %d:", round);
        for (int i = 0; i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS) printf("  algo %d %.1f us math %d", (int)perf[i].algo, 1e3 * perf[i].time, (int)perf[i].mathType);
        printf("\n");
    }
    return 0;
}
