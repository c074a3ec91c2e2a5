/* cuda_multi: spliced into hpdl_cuda.cuh */
