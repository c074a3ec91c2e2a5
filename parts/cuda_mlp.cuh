/* cuda_mlp: spliced into hpdl_cuda.cuh */
