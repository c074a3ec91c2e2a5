/* The MLP's K = 10 products (B x H x 10, NT) on AUTO and cuBLAS in turns,
   L2 flushed, as bench/gemm --mlp times them, f16 and f32; prints microseconds
   and cuBLAS / AUTO. Built against the working tree's header. */
#include "hpdl_cuda.cuh"
#include <stdio.h>

template <typename T> struct ctx { hpdl_gemm_algo algo; int M, N, K; T *A, *B, *C; };
template <typename T> static void run(void *p, cudaStream_t s) {
    ctx<T> *c = (ctx<T> *)p;
    HPDL_CHECK(hpdl_cuda_gemm_algo(c->algo, HPDL_NO_TRANS, HPDL_TRANS, c->M, c->N, c->K, 1, c->A, c->K, c->B, c->K, 0,
                                   c->C, c->N, s));
}
template <typename T> static void shapes(const char *type, hpdl_cuda_l2_flusher *fl) {
    const int Ms[4] = {32, 128, 512, 3000}, Ns[2] = {512, 2048};
    for (int n = 0; n < 2; n++)
        for (int m = 0; m < 4; m++) {
            ctx<T> a, b;
            a.M = Ms[m]; a.N = Ns[n]; a.K = 10;
            HPDL_CUDA_CHECK(cudaMalloc(&a.A, sizeof(T) * a.M * a.K));
            HPDL_CUDA_CHECK(cudaMalloc(&a.B, sizeof(T) * a.N * a.K));
            HPDL_CUDA_CHECK(cudaMalloc(&a.C, sizeof(T) * a.M * a.N));
            HPDL_CUDA_CHECK(cudaMemset(a.A, 0, sizeof(T) * a.M * a.K));
            HPDL_CUDA_CHECK(cudaMemset(a.B, 0, sizeof(T) * a.N * a.K));
            b = a;
            a.algo = HPDL_GEMM_AUTO;
            b.algo = HPDL_GEMM_CUBLAS;
            hpdl_cuda_work_fn fns[2] = {run<T>, run<T>};
            void *ctxs[2] = {&a, &b};
            double ms[2];
            for (int flush = 1; flush >= 0; flush--) {
                HPDL_CHECK(hpdl_cuda_time_interleaved_ms(2, fns, ctxs, 0, 3, 50, flush ? fl : NULL, ms));
                printf("%s,%d,%d,10,%d,%.3f,%.3f,%.3f", type, a.M, a.N, flush, 1e3 * ms[0], 1e3 * ms[1], ms[1] / ms[0]);
                printf("\n");
            }
            cudaFree(a.A); cudaFree(a.B); cudaFree(a.C);
        }
}
int main() {
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("type,M,N,K,flush,auto_us,cublas_us,ratio\n");
    shapes<__half>("f16", &fl);
    shapes<float>("f32", &fl);
    return 0;
}
