/* Compile check: the three headers together, every public function and so
   every kernel instantiated. Their functions are templates compiled only
   where used (HPDL_LAZY in hpdl_cuda.cuh), so this file uses each one: the
   Makefile lists them all in api.inc from the preprocessed headers
   (scripts/api_names.sh), so a new function is checked without an edit here.
   Without a GPU the Makefile builds this to machine code for sm_90a and
   sm_80, and every other CUDA program to PTX only (see NVARCH). */
#include "hpdl_mpi.h" /* includes hpdl_cuda.cuh, which includes hpdl.h */

#define HPDL_INSTANTIATE(f) (void)&f<0>;

int main(void) {
#include "api.inc"
    return 0;
}
