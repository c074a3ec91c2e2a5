/* Compile check: the three headers together, every kernel instantiated.
   When no GPU is present the Makefile builds this to machine code for sm_90a
   and sm_80, and every other CUDA program to PTX only (see NVARCH). */
#include "hpdl_mpi.h" /* includes hpdl_cuda.cuh, which includes hpdl.h */

int main(void) { return 0; }
