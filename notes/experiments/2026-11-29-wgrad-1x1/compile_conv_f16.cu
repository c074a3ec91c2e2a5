/* The compile cost of one 16-bit convolution call (AUTO backward-filter,
   which reaches every 16-bit rung): timed with the header before and after
   the wgmma rung calls the GEMM for large 1x1 backward-filters.
       time nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> -c compile_conv_f16.cu */
#include "hpdl_cuda.cuh"

hpdl_status backward_filter(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const __half *x,
                            const hpdl_tensor4 *yd, const __half *dy, __half *dw) {
    return hpdl_cuda_conv2d_backward_filter(p, xd, x, yd, dy, dw);
}
