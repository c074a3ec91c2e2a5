/* cuda_vecadd: spliced into hpdl_cuda.cuh */
