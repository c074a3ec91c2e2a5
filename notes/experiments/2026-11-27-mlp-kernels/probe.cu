/* Which kernels cuBLAS and hpdl's AUTO run for each product of an MLP
   training step (784 -> H -> 10), one call each after a warm-up, so that
   ncu lists them in order: for every product, first cuBLAS's kernels, then
   AUTO's, with a marker kernel between products.
   usage: probe f16|f32 [product H B]   (run under ncu; stdout names the
   products in order; with a product, H and B: that one only) */
#include "hpdl_cuda.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__global__ void probe_marker(int id) { (void)id; }

static const char *only_name;
static int only_h, only_b;

template <typename T> static void run_products(void) {
    const int widths[2] = {512, 2048}, batches[4] = {32, 128, 512, 3000};
    const size_t most = (size_t)3000 * 2048 + 784 * 3000;
    T *A, *B, *C;
    int h, b, i, id = 0;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&A, most * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&B, most * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&C, most * sizeof(T)));
    cudaMemset(A, 0, most * sizeof(T));
    cudaMemset(B, 0, most * sizeof(T));
    for (h = 0; h < 2; h++)
        for (b = 0; b < 4; b++) {
            const int H = widths[h], Bt = batches[b];
            const hpdl_transpose n = HPDL_NO_TRANS, t = HPDL_TRANS;
            const struct { const char *name; hpdl_transpose ta, tb; int M, N, K; } p[5] = {
                {"fwd_l0", n, n, Bt, H, 784}, {"fwd_l1", n, n, Bt, 10, H}, {"dw_l1", t, n, H, 10, Bt},
                {"dx_l1", n, t, Bt, H, 10},   {"dw_l0", t, n, 784, H, Bt}};
            for (i = 0; i < 5; i++) {
                const int lda = p[i].ta == t ? p[i].M : p[i].K, ldb = p[i].tb == t ? p[i].K : p[i].N;
                int algo;
                if (only_name && (strcmp(only_name, p[i].name) != 0 || only_h != H || only_b != Bt)) continue;
                for (algo = 0; algo < 2; algo++) { /* warm-up: every lazy set-up out of the way */
                    hpdl_gemm_algo a = algo ? HPDL_GEMM_AUTO : HPDL_GEMM_CUBLAS;
                    HPDL_CHECK(hpdl_cuda_gemm_algo(a, p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, 1, A, lda, B, ldb, 0,
                                                   C, p[i].N, 0));
                }
                HPDL_CUDA_CHECK(cudaDeviceSynchronize());
                printf("%d H%d B%d %s %dx%dx%d\n", id, H, Bt, p[i].name, p[i].M, p[i].N, p[i].K);
                probe_marker<<<1, 1>>>(id++);
                HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_CUBLAS, p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, 1, A, lda,
                                               B, ldb, 0, C, p[i].N, 0));
                probe_marker<<<1, 1>>>(-1);
                HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_AUTO, p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, 1, A, lda, B,
                                               ldb, 0, C, p[i].N, 0));
                HPDL_CUDA_CHECK(cudaDeviceSynchronize());
            }
        }
    hpdl_cuda_free(A);
    hpdl_cuda_free(B);
    hpdl_cuda_free(C);
}

int main(int argc, char **argv) {
    if (argc > 4) {
        only_name = argv[2];
        only_h = atoi(argv[3]);
        only_b = atoi(argv[4]);
    }
    if (argc > 1 && strcmp(argv[1], "f32") == 0)
        run_products<float>();
    else
        run_products<__half>();
    return 0;
}
