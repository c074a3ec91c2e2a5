/* Compile check: the three headers together, every kernel instantiated.
   The Makefile builds this for sm_80 when no GPU is present (see NVARCH). */
#include "hpdl_mpi.h" /* includes hpdl_cuda.cuh, which includes hpdl.h */

int main(void) { return 0; }
