/* Host time of one eager call that takes scratch memory, the stream
   synchronised after each call (as a student's loop that checks each
   layer does), against the same calls queued 20 at a time. Built against
   the header before and after hpdl's own scratch pool:
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> eager_scratch.cu -lcublas -o eager_scratch
   Prints: case, us a call synchronised, us a call queued. */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

typedef hpdl_status (*call_fn)(void *);

struct buffers {
    hpdl_tensor4 xd, yd;
    hpdl_conv2d_params p;
    float *x, *y, *w, *gamma, *beta, *rm, *rv, *sm, *si;
    hpdl_f16 *xh, *yh;
};

static hpdl_status bn_f16(void *v) {
    buffers *b = (buffers *)v;
    return hpdl_cuda_batchnorm_forward_training(&b->xd, b->xh, b->gamma, b->beta, 0.1, 1e-5, b->rm, b->rv, b->yh, b->sm,
                                                b->si);
}
static hpdl_status bn_f32(void *v) {
    buffers *b = (buffers *)v;
    return hpdl_cuda_batchnorm_forward_training(&b->xd, b->x, b->gamma, b->beta, 0.1, 1e-5, b->rm, b->rv, b->y, b->sm,
                                                b->si);
}
static hpdl_status conv_im2col(void *v) {
    buffers *b = (buffers *)v;
    return hpdl_cuda_conv2d_forward_algo(HPDL_CONV_IM2COL, &b->p, &b->xd, b->x, b->w, &b->yd, b->y);
}

static double median(std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* us a call: each call followed by a synchronisation, and 20 calls queued then one. */
static void time_case(const char *name, call_fn f, void *b) {
    std::vector<double> synced, queued;
    for (int i = 0; i < 20; i++) { HPDL_CHECK(f(b)); }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 200; rep++) {
        double t0 = hpdl_time_now();
        HPDL_CHECK(f(b));
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        synced.push_back((hpdl_time_now() - t0) * 1e6);
    }
    for (int rep = 0; rep < 20; rep++) {
        double t0 = hpdl_time_now();
        for (int i = 0; i < 20; i++) HPDL_CHECK(f(b));
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        queued.push_back((hpdl_time_now() - t0) * 1e6 / 20);
    }
    printf("%s,%.1f,%.1f\n", name, median(synced), median(queued));
}

int main(void) {
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    buffers b;
    const int n = 128, c = 64, h = 32, k = 128;
    b.xd = hpdl_tensor4_make(n, c, h, h, HPDL_NHWC);
    b.p = hpdl_conv2d_params_make(3, 2, 1, 1, 1);
    HPDL_CHECK(hpdl_conv2d_output_desc(&b.p, &b.xd, k, &b.yd));
    const size_t nx = hpdl_tensor4_count(&b.xd), ny = hpdl_tensor4_count(&b.yd) > nx ? hpdl_tensor4_count(&b.yd) : nx;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b.x, nx * 4));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b.y, ny * 4));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b.w, (size_t)k * 9 * c * 4));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b.xh, nx * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b.yh, nx * 2));
    float **per_channel[] = {&b.gamma, &b.beta, &b.rm, &b.rv, &b.sm, &b.si};
    for (float **q : per_channel) HPDL_CHECK(hpdl_cuda_alloc((void **)q, c * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.x, 0, nx * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.xh, 0, nx * 2));
    HPDL_CUDA_CHECK(cudaMemset(b.w, 0, (size_t)k * 9 * c * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.gamma, 0, c * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.beta, 0, c * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.rm, 0, c * 4));
    HPDL_CUDA_CHECK(cudaMemset(b.rv, 0, c * 4));
    puts("case,us_synced,us_queued");
    time_case("bn_training_f16_128x64x32x32", bn_f16, &b);
    time_case("bn_training_f32_128x64x32x32", bn_f32, &b);
    time_case("conv_im2col_f32_3x3s2_64to128", conv_im2col, &b);
    return 0;
}
