/* The wgmma rung's f16 backward-filter on three ResNet-50 layers at batch 128 (conv5_x 3x3,
   conv4_x 3x3, conv5 1x1 512 -> 2048): median of 30 event-timed calls each, then one call per
   layer between cudaProfilerStart/Stop for ncu --profile-from-start off (every kernel of the call:
   the memset of the f32 sums, the wgrad kernel, the cast). Built once against each header.
   nvcc -std=c++17 -O3 -I<repo> -gencode arch=compute_90a,code=sm_90a wgrad_probe.cu -lcublas -lcublasLt -ldl */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <cuda_profiler_api.h>
#include <vector>

struct probe_layer { const char *name; int n, c, hw, k, kernel, pad; };

static double median_ms(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const hpdl_f16 *x,
                        const hpdl_tensor4 *yd, const hpdl_f16 *dy, hpdl_f16 *dw) {
    std::vector<float> ms(30);
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 3; i++) HPDL_CHECK(hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_WGMMA, p, xd, x, yd, dy, dw, 0));
    for (size_t i = 0; i < ms.size(); i++) {
        cudaEventRecord(a);
        HPDL_CHECK(hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_WGMMA, p, xd, x, yd, dy, dw, 0));
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms[i], a, b);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main(void) {
    const probe_layer layers[] = {{"r50_conv5_3x3", 128, 512, 7, 512, 3, 1},
                                  {"r50_conv4_3x3", 128, 256, 14, 256, 3, 1},
                                  {"r50_conv5_1x1_512to2048", 128, 512, 7, 2048, 1, 0}};
    for (const probe_layer &l : layers) {
        hpdl_conv2d_params p = hpdl_conv2d_params_make(l.kernel, 1, l.pad, 1, 1);
        hpdl_tensor4 xd = hpdl_tensor4_make(l.n, l.c, l.hw, l.hw, HPDL_NHWC), yd, wd;
        HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.k, &yd));
        HPDL_CHECK(hpdl_conv2d_filter_desc(&p, &xd, l.k, &wd));
        size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nw = hpdl_tensor4_count(&wd);
        std::vector<hpdl_f16> hx(nx), hy(ny);
        hpdl_rng rng;
        hpdl_rng_seed(&rng, 1);
        for (auto &v : hx) v = hpdl_f16_from_f32((float)(2 * hpdl_rng_uniform(&rng) - 1));
        for (auto &v : hy) v = hpdl_f16_from_f32((float)(2 * hpdl_rng_uniform(&rng) - 1));
        hpdl_f16 *x, *dy, *dw;
        HPDL_CHECK(hpdl_cuda_alloc((void **)&x, nx * 2));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dy, ny * 2));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dw, nw * 2));
        HPDL_CHECK(hpdl_cuda_to_device(x, hx.data(), nx * 2, 0));
        HPDL_CHECK(hpdl_cuda_to_device(dy, hy.data(), ny * 2, 0));
        printf("%-24s %.4f ms\n", l.name, median_ms(&p, &xd, x, &yd, dy, dw));
        cudaProfilerStart();
        HPDL_CHECK(hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_WGMMA, &p, &xd, x, &yd, dy, dw, 0));
        cudaDeviceSynchronize();
        cudaProfilerStop();
        hpdl_cuda_free(x), hpdl_cuda_free(dy), hpdl_cuda_free(dw);
    }
    return 0;
}
