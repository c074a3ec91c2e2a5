/* The one-tile Hopper rung's K split on the MLP's first-layer weight gradient dw_l0 = X^T D0
   (784 x H x B, TN), f16: AUTO, cuBLAS, and the rung with its K cut into S slices (then the
   slices' adding kernel), S = 1 .. 8, in turns, L2 flushed. */
#include "hpdl_cuda.cuh"
#include <stdio.h>

struct ctx { int mode, slices, M, N, K; __half *A, *B, *C; };
static void run(void *p, cudaStream_t s) {
    ctx *c = (ctx *)p;
    if (c->mode < 2) {
        HPDL_CHECK(hpdl_cuda_gemm_algo(c->mode ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, HPDL_TRANS, HPDL_NO_TRANS, c->M, c->N,
                                       c->K, 1, c->A, c->M, c->B, c->N, 0, c->C, c->N, s));
        return;
    }
    hpdl__gemm_args<__half, float> g = hpdl__gemm_make_args(HPDL_TRANS, HPDL_NO_TRANS, c->M, c->N, c->K, 1.0f,
                                                              (const __half *)c->A, c->M, (const __half *)c->B, c->N,
                                                              0.0f, c->C, c->N, 8);
    hpdl__wg_launch l = hpdl__wg_picker<__half>::pick(HPDL_GEMM_WGMMA, !g.a.kcontig, !g.b.kcontig);
    l.slices = c->slices;
    const int64_t tiles = (int64_t)((c->M + 63) / 64) * ((c->N + 255) / 256);
    if (tiles * l.slices * 64 * 256 * 4 > (int64_t)HPDL__SPLITK_WS_BYTES) return; /* past the workspace: not timed */
    hpdl__splitk_space *sp = l.slices > 1 ? hpdl__splitk_space_for(s) : NULL;
    if (sp) l.slice_sums = sp->ws;
    HPDL_CHECK(hpdl__gemm_run_wgmma(l, g, s));
    if (sp)
        hpdl__wg_add_slices_kernel<__half><<<hpdl__grid_for((int64_t)g.M * ((g.N + 3) / 4), 256), 256, 0, s>>>(
            g, (const float *)sp->ws, l.slices);
}
int main() {
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    const int shapes[3][3] = {{784, 512, 3000}, {784, 2048, 3000}, {784, 512, 512}};
    int sms = 0;
    HPDL_CHECK(hpdl__sm_count(&sms));
    printf("M,N,K,rule_slices,auto_us,cublas_us,s1,s2,s3,s4,s5,s6,s8\n");
    for (int i = 0; i < 3; i++) {
        ctx c[9];
        c[0].M = shapes[i][0]; c[0].N = shapes[i][1]; c[0].K = shapes[i][2];
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].A, 2 * (size_t)c[0].M * c[0].K));
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].B, 2 * (size_t)c[0].N * c[0].K));
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].C, 2 * (size_t)c[0].M * c[0].N));
        HPDL_CUDA_CHECK(cudaMemset(c[0].A, 0, 2 * (size_t)c[0].M * c[0].K));
        HPDL_CUDA_CHECK(cudaMemset(c[0].B, 0, 2 * (size_t)c[0].N * c[0].K));
        const int s_of[7] = {1, 2, 3, 4, 5, 6, 8};
        hpdl_cuda_work_fn fns[9];
        void *ctxs[9];
        for (int j = 0; j < 9; j++) {
            c[j] = c[0];
            c[j].mode = j < 2 ? j : 2;
            c[j].slices = j < 2 ? 0 : s_of[j - 2];
            fns[j] = run;
            ctxs[j] = &c[j];
        }
        double ms[9];
        HPDL_CHECK(hpdl_cuda_time_interleaved_ms(9, fns, ctxs, 0, 3, 50, &fl, ms));
        printf("%d,%d,%d,%d", c[0].M, c[0].N, c[0].K, hpdl__wg_split_slices(c[0].M, c[0].N, c[0].K, 64, sms));
        for (int j = 0; j < 9; j++) printf(",%.3f", 1e3 * ms[j]);
        printf("\n");
    }
    return 0;
}
