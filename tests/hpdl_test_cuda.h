/* hpdl_test_cuda.h - device buffers for the GPU tests (C++): a host vector
   copied to the device, a device buffer copied back, a poisoned buffer
   (every byte 0xff: NaN in the floating types) that shows what a kernel
   left unwritten. The caller frees with hpdl_cuda_free. */
#ifndef HPDL_TEST_CUDA_H
#define HPDL_TEST_CUDA_H

#include "hpdl_cuda.cuh"
#include "hpdl_test.h"

#include <vector>

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, v.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* After the device is done with it. */
template <typename T> static std::vector<T> download(const T *d, size_t n) {
    std::vector<T> v(n);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CUDA_CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

template <typename T> static T *poisoned(size_t n) {
    T *d = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, n * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_poison(d, n * sizeof(T)));
    return d;
}

#endif
