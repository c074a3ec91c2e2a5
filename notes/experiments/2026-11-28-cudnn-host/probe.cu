// Host cost of one cuDNN convolution call on hpdl's CUDNN rung against bare
// cuDNN calls, for ResNet-18 (CIFAR form) shapes at batch 128, f32 NHWC:
//   hpdl       hpdl_cuda_conv2d_forward_algo(HPDL_CONV_CUDNN, ...) (descriptors
//              made and destroyed each call, the plan looked up)
//   remade     cudnnConvolutionForward with descriptors made and destroyed each call
//   kept       cudnnConvolutionForward with descriptors made once
// Each: 200 calls queued back to back, host microseconds a call; then the
// device synchronised: wall microseconds a call (host- or GPU-bound, whichever
// is longer). The algorithm of the bare calls is cudnnFind's first. Then the
// backward passes on hpdl's CUDNN rung, the same way (data: dx from dy and w;
// filter: dw from x and dy).
#include "hpdl_cuda.cuh"
#include <chrono>
#include <cstdio>

static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct descs { cudnnTensorDescriptor_t x, y; cudnnFilterDescriptor_t w; cudnnConvolutionDescriptor_t c; };

static void make(descs *d, int n, int c, int hw, int k, int r, int stride, int out_hw) {
    cudnnCreateTensorDescriptor(&d->x); cudnnCreateTensorDescriptor(&d->y);
    cudnnCreateFilterDescriptor(&d->w); cudnnCreateConvolutionDescriptor(&d->c);
    cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, hw, hw);
    cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, k, out_hw, out_hw);
    cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, k, c, r, r);
    cudnnSetConvolution2dDescriptor(d->c, r / 2, r / 2, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(d->c, CUDNN_FMA_MATH);
}
static void destroy(descs *d) {
    cudnnDestroyTensorDescriptor(d->x); cudnnDestroyTensorDescriptor(d->y);
    cudnnDestroyFilterDescriptor(d->w); cudnnDestroyConvolutionDescriptor(d->c);
}

int main() {
    const int shapes[][6] = {{64, 32, 64, 3, 1, 32}, {128, 16, 128, 3, 1, 16}, {256, 8, 256, 3, 1, 8}, {512, 4, 512, 3, 1, 4}};
    const int n = 128, calls = 200;
    cudnnHandle_t h;
    cudnnCreate(&h);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudnnSetStream(h, stream);
    size_t ws_bytes = 256 << 20;
    void *ws;
    cudaMalloc(&ws, ws_bytes);
    printf("%-22s %10s %10s %10s %10s %10s %10s\n", "shape (C, HW, K, R)", "hpdl host", "hpdl wall", "remade h", "remade w",
           "kept host", "kept wall");
    for (auto &s : shapes) {
        const int c = s[0], hw = s[1], k = s[2], r = s[3], stride = s[4], ohw = s[5];
        float *x, *w, *y;
        cudaMalloc(&x, sizeof(float) * n * c * hw * hw);
        cudaMalloc(&w, sizeof(float) * k * c * r * r);
        cudaMalloc(&y, sizeof(float) * n * k * ohw * ohw);
        cudaMemset(x, 0, sizeof(float) * n * c * hw * hw);
        cudaMemset(w, 0, sizeof(float) * k * c * r * r);
        hpdl_conv2d_params p = {r, r, stride, stride, r / 2, r / 2, 1, 1, 1};
        hpdl_tensor4 xd = hpdl_tensor4_make(n, c, hw, hw, HPDL_NHWC), yd = hpdl_tensor4_make(n, k, ohw, ohw, HPDL_NHWC);
        descs d;
        make(&d, n, c, hw, k, r, stride, ohw);
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int found = 0;
        cudnnFindConvolutionForwardAlgorithmEx(h, d.x, x, d.w, w, d.c, d.y, y, 8, &found, perf, ws, ws_bytes);
        cudnnConvolutionFwdAlgo_t algo = perf[0].algo;
        const float one = 1, zero = 0;
        double t[6];
        hpdl_status st = hpdl_cuda_conv2d_forward_algo(HPDL_CONV_CUDNN, &p, &xd, x, w, &yd, y, stream); /* its find */
        cudaDeviceSynchronize();
        for (int v = 0; v < 3; v++) {
            double t0 = now_us();
            for (int i = 0; i < calls; i++) {
                if (v == 0) {
                    st = hpdl_cuda_conv2d_forward_algo(HPDL_CONV_CUDNN, &p, &xd, x, w, &yd, y, stream);
                } else if (v == 1) {
                    descs e;
                    make(&e, n, c, hw, k, r, stride, ohw);
                    cudnnConvolutionForward(h, &one, e.x, x, e.w, w, e.c, algo, ws, ws_bytes, &zero, e.y, y);
                    destroy(&e);
                } else {
                    cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.c, algo, ws, ws_bytes, &zero, d.y, y);
                }
            }
            double t1 = now_us();
            cudaStreamSynchronize(stream);
            double t2 = now_us();
            t[2 * v] = (t1 - t0) / calls;
            t[2 * v + 1] = (t2 - t0) / calls;
        }
        printf("%4d %4d %4d %d        %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f   (hpdl %s, algo %d)\n", c, hw, k, r, t[0],
               t[1], t[2], t[3], t[4], t[5], hpdl_status_string(st), (int)algo);
        for (int pass = 0; pass < 2; pass++) {
            auto call = [&]() {
                return pass == 0 ? hpdl_cuda_conv2d_backward_data_algo(HPDL_CONV_CUDNN, &p, &yd, y, w, &xd, x, stream)
                                 : hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_CUDNN, &p, &xd, x, &yd, y, w, stream);
            };
            st = call(); /* its find */
            cudaDeviceSynchronize();
            double t0 = now_us();
            for (int i = 0; i < calls; i++) st = call();
            double t1 = now_us();
            cudaStreamSynchronize(stream);
            double t2 = now_us();
            printf("    backward %-6s host %8.1f us, wall %8.1f us a call (%s)\n", pass == 0 ? "data" : "filter",
                   (t1 - t0) / calls, (t2 - t0) / calls, hpdl_status_string(st));
        }
        destroy(&d);
        cudaFree(x); cudaFree(w); cudaFree(y);
    }
    printf("last error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
