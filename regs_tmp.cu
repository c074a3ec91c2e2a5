#include "hpdl_cuda.cuh"
int main(void) { return 0; }
template __global__ void hpdl__mlp_xent_kernel<double, double, double>(int, int, const double *, int, const double *, const int32_t *, double *, int, double, const float *, double, double *, unsigned long long *, double *);
template __global__ void hpdl__mlp_xent_kernel<float, float, float>(int, int, const float *, int, const float *, const int32_t *, float *, int, double, const float *, double, double *, unsigned long long *, float *);
template __global__ void hpdl__mlp_xent_kernel<__half, float, __half>(int, int, const __half *, int, const float *, const int32_t *, __half *, int, double, const float *, double, double *, unsigned long long *, __half *);
