/* First of two translation units that both include hpdl.h: the program must
   link (static inline functions, one copy per unit). This unit includes a
   system header first, as many programs do, so under -std=c99 hpdl.h cannot
   ask libc for POSIX; b.c includes hpdl.h first. b.c has main and checks that
   this unit's GEMM, softmax and timer give what its own copies give. */
#include <stdio.h>
#include "hpdl.h"

hpdl_status unit_a_gemm_softmax(int M, int N, int K, const float *A, const float *B, float *C,
                                const int32_t *labels, double *loss);
double unit_a_time_now(void);

/* C = A*B (row-major, M x K times K x N), then the cross-entropy of C's rows. */
hpdl_status unit_a_gemm_softmax(int M, int N, int K, const float *A, const float *B, float *C,
                                const int32_t *labels, double *loss) {
    hpdl_status st = hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    return st == HPDL_OK ? hpdl_softmax_xent_f32(M, N, C, N, labels, NULL, 0, loss) : st;
}

double unit_a_time_now(void) { return hpdl_time_now(); }
