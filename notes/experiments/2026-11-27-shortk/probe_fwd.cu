/* The MLP's narrow forward fwd_l1 = A1 W1 (B x 10 x H, NN) on AUTO, cuBLAS, and splitk's
   narrow tile with K split at 1x, 2x, 4x the depth AUTO's rule picks and unsplit, in turns,
   L2 flushed. */
#include "hpdl_cuda.cuh"
#include <stdio.h>

template <typename T> struct ctx { int mode, M, N, K, depth; T *A, *B, *C; };
template <typename T> static void run(void *p, cudaStream_t s) {
    ctx<T> *c = (ctx<T> *)p;
    if (c->mode < 2) {
        HPDL_CHECK(hpdl_cuda_gemm_algo(c->mode ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, HPDL_NO_TRANS, HPDL_NO_TRANS, c->M,
                                       c->N, c->K, 1, c->A, c->K, c->B, c->N, 0, c->C, c->N, s));
        return;
    }
    hpdl__gemm_args<T, float> g = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_NO_TRANS, c->M, c->N, c->K, 1.0f,
                                                         (const T *)c->A, c->K, (const T *)c->B, c->N, 0.0f, c->C, c->N,
                                                         (int)(16 / sizeof(T)));
    HPDL_CHECK(hpdl__gemm_launch_splitk_tile<typename hpdl__splitk_narrow_for<sizeof(T)>::type>(g, c->depth, s));
}
template <typename T> static void shapes(const char *type, hpdl_cuda_l2_flusher *fl) {
    const int Ms[4] = {32, 128, 512, 3000}, Ks[2] = {512, 2048};
    int sms = 0;
    HPDL_CHECK(hpdl__sm_count(&sms));
    for (int k = 0; k < 2; k++)
        for (int m = 0; m < 4; m++) {
            ctx<T> c[6];
            c[0].M = Ms[m]; c[0].N = 10; c[0].K = Ks[k];
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].A, sizeof(T) * c[0].M * c[0].K));
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].B, sizeof(T) * c[0].N * c[0].K));
            HPDL_CUDA_CHECK(cudaMalloc(&c[0].C, sizeof(T) * c[0].M * c[0].N));
            HPDL_CUDA_CHECK(cudaMemset(c[0].A, 0, sizeof(T) * c[0].M * c[0].K));
            HPDL_CUDA_CHECK(cudaMemset(c[0].B, 0, sizeof(T) * c[0].N * c[0].K));
            const int base = hpdl__splitk_depth(c[0].M, 10, c[0].K, HPDL__SPLITK_NARROW, 4, sms);
            hpdl_cuda_work_fn fns[6];
            void *ctxs[6];
            for (int i = 0; i < 6; i++) {
                c[i] = c[0];
                c[i].mode = i < 2 ? i : 2;
                int d = i < 2 ? 0 : i == 5 ? c[0].K : base << (i - 2);
                c[i].depth = d > c[0].K ? c[0].K : d;
                fns[i] = run<T>;
                ctxs[i] = &c[i];
            }
            double ms[6];
            HPDL_CHECK(hpdl_cuda_time_interleaved_ms(6, fns, ctxs, 0, 3, 50, fl, ms));
            printf("%s,%d,10,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", type, c[0].M, c[0].K, base, 1e3 * ms[0],
                   1e3 * ms[1], 1e3 * ms[2], 1e3 * ms[3], 1e3 * ms[4], 1e3 * ms[5]);
            cudaFree(c[0].A); cudaFree(c[0].B); cudaFree(c[0].C);
        }
}
int main() {
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("type,M,N,K,depth,auto_us,cublas_us,split_1x_us,split_2x_us,split_4x_us,unsplit_us\n");
    shapes<__half>("f16", &fl);
    shapes<float>("f32", &fl);
    return 0;
}
