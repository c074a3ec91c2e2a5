/* The MLP's narrow weight gradient dw_l1 = A1^T D1 (H x 10 x B; A1 is B x H, so A's M index
   is contiguous) on AUTO, cuBLAS, and the narrow MN-major kernel with its K split at 1x, 2x
   and 4x the depth AUTO's rule picks (capped at K: one slice), in turns, L2 flushed. */
#include "hpdl_cuda.cuh"
#include <stdio.h>

template <typename T> struct ctx { int mode, M, N, K, depth; T *A, *B, *C; };
template <typename T> static void run(void *p, cudaStream_t s) {
    ctx<T> *c = (ctx<T> *)p;
    if (c->mode < 2) {
        HPDL_CHECK(hpdl_cuda_gemm_algo(c->mode ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, HPDL_TRANS, HPDL_NO_TRANS, c->M, c->N,
                                       c->K, 1, c->A, c->M, c->B, c->N, 0, c->C, c->N, s));
        return;
    }
    hpdl__gemm_args<T, float> g = hpdl__gemm_make_args(HPDL_TRANS, HPDL_NO_TRANS, c->M, c->N, c->K, 1.0f,
                                                         (const T *)c->A, c->M, (const T *)c->B, c->N, 0.0f, c->C, c->N,
                                                         (int)(16 / sizeof(T)));
    const int nb = sizeof(T) == 2 ? 16 : 12;
    hpdl__splitk_space *sp = c->depth < c->K ? hpdl__splitk_space_for(s) : NULL;
    HPDL_CHECK(hpdl__narrow<T>::launch(g, nb, c->depth, sp, s));
}
template <typename T> static void shapes(const char *type, hpdl_cuda_l2_flusher *fl) {
    const int Ms[2] = {512, 2048}, Ks[4] = {32, 128, 512, 3000};
    int sms = 0;
    HPDL_CHECK(hpdl__sm_count(&sms));
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 4; k++) {
            ctx<T> c[5];
            c[0].M = Ms[m]; c[0].N = 10; c[0].K = Ks[k];
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].A, sizeof(T) * c[0].M * c[0].K));
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].B, sizeof(T) * c[0].N * c[0].K));
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].C, sizeof(T) * c[0].M * c[0].N));
            HPDL_CUDA_CHECK(cudaMemset(c[0].A, 0, sizeof(T) * c[0].M * c[0].K));
            HPDL_CUDA_CHECK(cudaMemset(c[0].B, 0, sizeof(T) * c[0].N * c[0].K));
            const int nb = sizeof(T) == 2 ? 16 : 12, base = hpdl__narrow_depth(c[0].M, c[0].K, nb, sms);
            hpdl_cuda_work_fn fns[5];
            void *ctxs[5];
            for (int i = 0; i < 5; i++) {
                c[i] = c[0];
                c[i].mode = i < 2 ? i : 2;
                int d = i < 2 ? 0 : base << (i - 2);
                int most = hpdl__narrow_most(nb);
                c[i].depth = d > c[0].K ? c[0].K : d > most ? most : d;
                fns[i] = run<T>;
                ctxs[i] = &c[i];
            }
            double ms[5];
            HPDL_CHECK(hpdl_cuda_time_interleaved_ms(5, fns, ctxs, 0, 3, 50, fl, ms));
            printf("%s,%d,10,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", type, c[0].M, c[0].K, base, 1e3 * ms[0], 1e3 * ms[1],
                   1e3 * ms[2], 1e3 * ms[3], 1e3 * ms[4]);
            cudaFree(c[0].A); cudaFree(c[0].B); cudaFree(c[0].C);
        }
}
int main() {
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("type,M,N,K,depth,auto_us,cublas_us,narrow_1x_us,narrow_2x_us,narrow_4x_us\n");
    shapes<__half>("f16", &fl);
    shapes<float>("f32", &fl);
    return 0;
}
