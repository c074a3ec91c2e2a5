/* tests/gpu_mpi_tp.cu - tensor-parallel MLP training on GPUs
   (hpdl_mpi_tp_cuda_f32) against the CPU driver (hpdl_mpi_tp_f32, itself
   tested against the serial trainer in tests/mpi_tp.c) on the same ranks
   from the same start: weights and loss after two epochs, with a short last
   step and a hidden width that does not divide by the ranks; bad
   arguments. One rank per GPU; skipped without a GPU.

   Started on its own on a machine with several GPUs, it starts itself again
   under `mpirun -np <GPUs>`.
       mpirun -np 2 build/gpu/gpu_mpi_tp [name filter] */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL /* the logits allreduce by NCCL when AUTO finds it */
#endif
#endif
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

enum { IN = 37, HIDDEN = 19, CLASSES = 7, N = 203, BATCH = 16 };

static int g_gpu = -1; /* this rank's GPU; -1: none */

/* The same random data set on every rank (labels 0..CLASSES-1). */
static void make_data(float *X, int32_t *y) {
    hpdl_rng rng;
    int64_t i;
    hpdl_rng_seed(&rng, 11);
    for (i = 0; i < (int64_t)N * IN; i++) X[i] = (float)hpdl_rng_uniform(&rng) * 2.0f - 1.0f;
    for (i = 0; i < N; i++) y[i] = (int32_t)hpdl_rng_below(&rng, CLASSES);
}

static hpdl_mpi_tp_config config(void) {
    hpdl_mpi_tp_config c;
    hpdl_mpi_tp_config_default(&c);
    c.batch = BATCH;
    c.lr = 0.1;
    c.l2 = 1e-4;
    c.seed = 5;
    return c;
}

/* ||a - b|| / ||b|| over every weight and bias. */
static double model_diff(const hpdl_mlp_f32 *a, const hpdl_mlp_f32 *b) {
    double num = 0.0, den = 0.0;
    int l, i, n;
    for (l = 0; l < 2; l++) {
        n = a->widths[l] * a->widths[l + 1];
        for (i = 0; i < n; i++) { num += pow(a->W[l][i] - b->W[l][i], 2); den += pow(b->W[l][i], 2); }
        for (i = 0; i < a->widths[l + 1]; i++) { num += pow(a->b[l][i] - b->b[l][i], 2); den += pow(b->b[l][i], 2); }
    }
    return sqrt(num / den);
}

MPI_TEST(test_matches_cpu_driver) {
    const int widths[3] = {IN, HIDDEN, CLASSES};
    float *X = (float *)malloc(sizeof(float) * N * IN);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mlp_f32 start, from_cpu, from_gpu;
    hpdl_mpi_tp_config c = config();
    hpdl_mpi_tp_f32 cpu;
    hpdl_mpi_tp_cuda_f32 gpu;
    hpdl_mpi_tp_stats sc = {}, sg = {}; /* zeroed: gcc -O3 cannot see that the epochs set them */
    hpdl_cuda_dataset data;
    int e;
    if (g_gpu < 0) { free(X); free(y); HPDL_SKIP("no GPU for this rank"); }
    make_data(X, y);
    HPDL_CHECK(hpdl_mlp_create_f32(&start, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&from_cpu, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&from_gpu, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N, IN, X, N, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mpi_tp_create_f32(&cpu, &start, N, &c));
    c.algo = HPDL_ALLREDUCE_AUTO;
    HPDL_CHECK(hpdl_mpi_tp_cuda_create_f32(&gpu, &start, N, &c));
    for (e = 0; e < 2; e++) {
        HPDL_CHECK(hpdl_mpi_tp_epoch_f32(&cpu, X, y, e, &sc));
        HPDL_CHECK(hpdl_mpi_tp_cuda_epoch_f32(&gpu, &data, e, &sg));
    }
    HPDL_CHECK(hpdl_mpi_tp_gather_f32(&cpu, &from_cpu));
    HPDL_CHECK(hpdl_mpi_tp_cuda_gather_f32(&gpu, &from_gpu));
    HPDL_EXPECT(model_diff(&from_gpu, &from_cpu) < 1e-4);
    HPDL_EXPECT(model_diff(&from_gpu, &start) > 1e-2); /* it trained */
    HPDL_EXPECT_NEAR(sg.loss, sc.loss, 1e-4 * sc.loss);
    HPDL_EXPECT(sg.steps == (N + BATCH - 1) / BATCH && sg.samples == N);
    HPDL_EXPECT(sg.allreduces == (hpdl_mpi_size() > 1 ? sg.steps : 0));
    HPDL_EXPECT(sg.step_bytes == (double)BATCH * CLASSES * sizeof(float));
    HPDL_EXPECT(sg.dp_grad_bytes == sc.dp_grad_bytes);
    hpdl_mpi_tp_cuda_destroy_f32(&gpu);
    hpdl_mpi_tp_destroy_f32(&cpu);
    hpdl_cuda_dataset_destroy(&data);
    hpdl_mlp_destroy_f32(&start); hpdl_mlp_destroy_f32(&from_cpu); hpdl_mlp_destroy_f32(&from_gpu);
    free(X); free(y);
}

MPI_TEST(test_bad_arguments) {
    const int widths[3] = {IN, HIDDEN, CLASSES};
    int narrow[3] = {IN, 1, CLASSES};
    float *X = (float *)malloc(sizeof(float) * N * IN);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mlp_f32 model, thin;
    hpdl_mpi_tp_config c = config();
    hpdl_mpi_tp_cuda_f32 gpu;
    hpdl_cuda_dataset data;
    if (g_gpu < 0) { free(X); free(y); HPDL_SKIP("no GPU for this rank"); }
    make_data(X, y);
    HPDL_CHECK(hpdl_mlp_create_f32(&model, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_EXPECT(hpdl_mpi_tp_cuda_create_f32(NULL, &model, N, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_cuda_create_f32(&gpu, &model, N, NULL) == HPDL_ERR_INVALID);
    narrow[1] = hpdl_mpi_size() - 1; /* a rank without a hidden unit */
    if (narrow[1] >= 1) {
        HPDL_CHECK(hpdl_mlp_create_f32(&thin, 3, narrow, HPDL_ACT_RELU, 3));
        HPDL_EXPECT(hpdl_mpi_tp_cuda_create_f32(&gpu, &thin, N, &c) == HPDL_ERR_UNSUPPORTED);
        hpdl_mlp_destroy_f32(&thin);
    }
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N - 1, IN, X, N - 1, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mpi_tp_cuda_create_f32(&gpu, &model, N, &c));
    HPDL_EXPECT(hpdl_mpi_tp_cuda_epoch_f32(&gpu, &data, 0, NULL) == HPDL_ERR_INVALID); /* N - 1 rows, made for N */
    HPDL_EXPECT(hpdl_mpi_tp_cuda_epoch_f32(NULL, &data, 0, NULL) == HPDL_ERR_INVALID);
    hpdl_mpi_tp_cuda_destroy_f32(&gpu);
    hpdl_cuda_dataset_destroy(&data);
    hpdl_mlp_destroy_f32(&model);
    free(X); free(y);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_matches_cpu_driver),
        HPDL_TEST(test_bad_arguments),
    };
    hpdl_mpi_relaunch_per_gpu(argc, argv, "gpu_mpi_tp");
    HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
    g_gpu = hpdl_mpi_select_gpu();
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
