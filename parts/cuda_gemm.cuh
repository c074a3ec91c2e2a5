/* cuda_gemm: spliced into hpdl_cuda.cuh */
