// cuDNN's legacy find (cudnnFind*AlgorithmEx, as hpdl's CUDNN rung uses it): the fastest
// algorithm's time for each pass of ResNet-18's (CIFAR form) 3x3 convolutions at batch 128,
// f32 with FMA math (no TF32), in NHWC (hpdl's layout) and NCHW. Microseconds: cuDNN's own timing
// of its find, then (second line) 50 calls of that algorithm timed with events.
#include <cudnn.h>
#include <cstdio>

static void descs(cudnnTensorFormat_t f, int n, int c, int hw, int k, int r, int stride, int ohw,
                  cudnnTensorDescriptor_t *x, cudnnTensorDescriptor_t *y, cudnnFilterDescriptor_t *w,
                  cudnnConvolutionDescriptor_t *cv) {
    cudnnCreateTensorDescriptor(x); cudnnCreateTensorDescriptor(y);
    cudnnCreateFilterDescriptor(w); cudnnCreateConvolutionDescriptor(cv);
    cudnnSetTensor4dDescriptor(*x, f, CUDNN_DATA_FLOAT, n, c, hw, hw);
    cudnnSetTensor4dDescriptor(*y, f, CUDNN_DATA_FLOAT, n, k, ohw, ohw);
    cudnnSetFilter4dDescriptor(*w, CUDNN_DATA_FLOAT, f, k, c, r, r);
    cudnnSetConvolution2dDescriptor(*cv, r / 2, r / 2, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(*cv, CUDNN_FMA_MATH);
}

int main() {
    const int shapes[][5] = {{64, 32, 64, 3, 1}, {128, 16, 128, 3, 1}, {256, 8, 256, 3, 1}, {512, 4, 512, 3, 1}};
    const int n = 128;
    cudnnHandle_t h;
    cudnnCreate(&h);
    size_t ws_bytes = 512u << 20;
    void *ws;
    cudaMalloc(&ws, ws_bytes);
    printf("%4s %4s %4s R  %-5s %9s %9s %9s  (algos)\n", "C", "HW", "K", "fmt", "fwd", "bwd data", "bwd filt");
    for (auto &s : shapes) {
        const int c = s[0], hw = s[1], k = s[2], r = s[3], stride = s[4], ohw = hw / stride;
        float *x, *w, *y;
        cudaMalloc(&x, sizeof(float) * n * c * hw * hw);
        cudaMalloc(&w, sizeof(float) * k * c * r * r);
        cudaMalloc(&y, sizeof(float) * n * k * ohw * ohw);
        cudaMemset(x, 0, sizeof(float) * n * c * hw * hw);
        cudaMemset(w, 0, sizeof(float) * k * c * r * r);
        cudaMemset(y, 0, sizeof(float) * n * k * ohw * ohw);
        for (int f = 0; f < 2; f++) {
            cudnnTensorFormat_t fmt = f ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
            cudnnTensorDescriptor_t xd, yd;
            cudnnFilterDescriptor_t wd;
            cudnnConvolutionDescriptor_t cv;
            descs(fmt, n, c, hw, k, r, stride, ohw, &xd, &yd, &wd, &cv);
            cudnnConvolutionFwdAlgoPerf_t pf[8];
            cudnnConvolutionBwdDataAlgoPerf_t pd[8];
            cudnnConvolutionBwdFilterAlgoPerf_t pw[8];
            int nf = 0, nd = 0, nw = 0;
            cudnnFindConvolutionForwardAlgorithmEx(h, xd, x, wd, w, cv, yd, y, 8, &nf, pf, ws, ws_bytes);
            cudnnFindConvolutionBackwardDataAlgorithmEx(h, wd, w, yd, y, cv, xd, x, 8, &nd, pd, ws, ws_bytes);
            cudnnFindConvolutionBackwardFilterAlgorithmEx(h, xd, x, yd, y, cv, wd, w, 8, &nw, pw, ws, ws_bytes);
            printf("%4d %4d %4d %d  %-5s %9.1f %9.1f %9.1f  (%d %d %d)\n", c, hw, k, r, f ? "NCHW" : "NHWC",
                   1000 * pf[0].time, 1000 * pd[0].time, 1000 * pw[0].time, (int)pf[0].algo, (int)pd[0].algo,
                   (int)pw[0].algo);
            float steady[3];
            const float one = 1, zero = 0;
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0); cudaEventCreate(&e1);
            for (int pass = 0; pass < 3; pass++) {
                for (int i = 0; i < 60; i++) {
                    if (i == 10) cudaEventRecord(e0);
                    if (pass == 0) cudnnConvolutionForward(h, &one, xd, x, wd, w, cv, pf[0].algo, ws, ws_bytes, &zero, yd, y);
                    if (pass == 1) cudnnConvolutionBackwardData(h, &one, wd, w, yd, y, cv, pd[0].algo, ws, ws_bytes, &zero, xd, x);
                    if (pass == 2) cudnnConvolutionBackwardFilter(h, &one, xd, x, yd, y, cv, pw[0].algo, ws, ws_bytes, &zero, wd, w);
                }
                cudaEventRecord(e1);
                cudaEventSynchronize(e1);
                cudaEventElapsedTime(&steady[pass], e0, e1);
            }
            printf("%20s %9.1f %9.1f %9.1f  (steady)\n", "", 20 * steady[0], 20 * steady[1], 20 * steady[2]);
            cudnnDestroyTensorDescriptor(xd); cudnnDestroyTensorDescriptor(yd);
            cudnnDestroyFilterDescriptor(wd); cudnnDestroyConvolutionDescriptor(cv);
        }
        cudaFree(x); cudaFree(w); cudaFree(y);
    }
    printf("cuDNN %zu, last error: %s\n", cudnnGetVersion(), cudaGetErrorString(cudaGetLastError()));
    return 0;
}
