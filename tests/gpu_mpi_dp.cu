/* tests/gpu_mpi_dp.cu - data-parallel MLP training on GPUs
   (hpdl_mpi_dp_cuda_f64), with the reduction after backward (one kernel
   reducing and updating where the one-shot IPC allreduce runs, or the
   allreduce then the update) and with buckets reduced during backward (the
   first layer's dW in two row blocks), against the CPU driver (tested
   against serial training in tests/mpi_dp.c) on the same ranks from the
   same start: weights after two epochs with a short last step, for two and
   three layers and an input width that is not a multiple of 64; f32 at the
   bench's widths, where the first layer's GEMM pushes its dW to the peer,
   against the allreduce then the update; a step with a NaN skipped on every
   rank alike; the steps the drivers time; bad arguments. One rank per GPU;
   skipped without a GPU.

   Started on its own on a machine with several GPUs, it starts itself again
   under `mpirun -np <GPUs>`.
       mpirun -np 2 build/gpu/gpu_mpi_dp [name filter] */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL /* the buckets go through NCCL when it is there */
#endif
#endif
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

enum { N = 203, BATCH = 16, CLASSES = 7, IN = 200 };

static int g_gpu = -1;        /* this rank's GPU; -1: none */
static int g_gpus_shared = 0; /* more ranks than GPUs: NCCL refuses them */

/* The same random data set on every rank (labels 0..CLASSES-1), as f64 for
   the CPU driver and f32 for the GPU's (the same values). */
static void make_data(int in, double *X, float *Xf, int32_t *y) {
    hpdl_rng rng;
    int64_t i;
    hpdl_rng_seed(&rng, 11);
    for (i = 0; i < (int64_t)N * in; i++) X[i] = Xf[i] = (float)hpdl_rng_uniform(&rng);
    for (i = 0; i < N; i++) y[i] = (int32_t)hpdl_rng_below(&rng, CLASSES);
}

/* The reduction after backward: FUSED one kernel with the update where
   the one-shot IPC allreduce runs (AUTO on one node), SEPARATE the
   allreduce then the update; BUCKETS: NCCL (else, or with more ranks than
   GPUs, MPI) buckets during backward, the first layer's dW in two row
   blocks. */
enum { FUSED, BUCKETS, SEPARATE, MODES };

static hpdl_mpi_dp_config config(int mode) {
    const int buckets = mode == BUCKETS;
    hpdl_mpi_dp_config c;
    hpdl_mpi_dp_config_default(&c);
    c.batch = BATCH;
    c.algo = HPDL_ALLREDUCE_AUTO;
    c.lr = 0.1;
    c.l2 = 1e-4;
    c.seed = 5;
    c.overlap = buckets;
    c.separate_update = mode == SEPARATE;
#ifdef HPDL_USE_NCCL
    if (buckets && !g_gpus_shared) c.algo = HPDL_ALLREDUCE_NCCL;
#endif
    c.first_layer_pieces = 2;
    c.bucket_bytes = 4 << 10; /* several buckets even for these small layers */
    return c;
}

/* Two epochs of the GPU driver and of the CPU driver from *cpu's start
   (trained in place); the GPU's weights into *out. */
static void train_both(int mode, const int *widths, hpdl_mlp_f64 *cpu, hpdl_mlp_f64 *out) {
    double *X = (double *)malloc(sizeof(double) * N * widths[0]);
    float *Xf = (float *)malloc(sizeof(float) * N * widths[0]);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mpi_dp_config c = config(mode);
    hpdl_mpi_dp_stats st;
    hpdl_mpi_dp_f64 cdp;
    hpdl_mpi_dp_cuda_f64 gdp;
    hpdl_cuda_mlp_f64 g;
    hpdl_cuda_dataset data;
    int e;
    make_data(widths[0], X, Xf, y);
    HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, cpu, BATCH));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N, widths[0], Xf, N, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mpi_dp_cuda_create_f64(&gdp, &g, N, &c));
    c.algo = HPDL_ALLREDUCE_MPI;
    HPDL_CHECK(hpdl_mpi_dp_create_f64(&cdp, cpu, N, &c));
    for (e = 0; e < 2; e++) {
        HPDL_CHECK(hpdl_mpi_dp_cuda_epoch_f64(&gdp, &g, &data, e, &st));
        HPDL_CHECK(hpdl_mpi_dp_epoch_f64(&cdp, X, y, e, NULL));
    }
    HPDL_EXPECT(st.steps == (N + BATCH * hpdl_mpi_size() - 1) / (BATCH * hpdl_mpi_size()));
    HPDL_EXPECT(st.samples == N);
    HPDL_CHECK(hpdl_cuda_mlp_download_f64(&g, out));
    hpdl_mpi_dp_cuda_destroy_f64(&gdp);
    hpdl_mpi_dp_destroy_f64(&cdp);
    hpdl_cuda_dataset_destroy(&data);
    hpdl_cuda_mlp_destroy_f64(&g);
    free(X); free(Xf); free(y);
}

MPI_TEST(test_matches_cpu_driver) {
    static const int shapes[3][4] = {{37, 19, CLASSES}, {IN, 24, CLASSES}, {IN, 24, 16, CLASSES}};
    static const int n_widths[3] = {3, 3, 4};
    int k, mode;
    if (g_gpu < 0) HPDL_SKIP("no GPU for this rank");
    for (mode = 0; mode < MODES; mode++)
        for (k = 0; k < 3; k++) {
            hpdl_mlp_f64 cpu, start, gpu;
            HPDL_CHECK(hpdl_mlp_create_f64(&cpu, n_widths[k], shapes[k], HPDL_ACT_RELU, 3));
            HPDL_CHECK(hpdl_mlp_create_f64(&start, n_widths[k], shapes[k], HPDL_ACT_RELU, 3));
            HPDL_CHECK(hpdl_mlp_create_zero_f64(&gpu, n_widths[k], shapes[k], HPDL_ACT_RELU));
            train_both(mode, shapes[k], &cpu, &gpu);
            HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gpu, &cpu) < 1e-12);
            HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gpu, &start) > 1e-3); /* it trained */
            HPDL_EXPECT(hpdl_test_mlp_same_on_every_rank_f64(&gpu));
            hpdl_mlp_destroy_f64(&cpu); hpdl_mlp_destroy_f64(&start); hpdl_mlp_destroy_f64(&gpu);
        }
}

/* f32, 784-2048-7 at 64 rows a rank (AUTO makes the first layer's dW in one
   3xTF32 kernel, as for the bench's model; it needs K >= 64), every step
   full: the fused step, whose GEMM posts the first layer's dW and the
   other layers' gradient into the peer's inbox, against the allreduce
   kernel then the SGD kernel. The sums are the same (rank order) and so
   is the update's arithmetic. */
MPI_TEST(test_fused_matches_separate_f32) {
    enum { ROWS = 384, WIDE = 784, ROWS_A_STEP = 64 };
    const int widths[3] = {WIDE, 2048, CLASSES};
    float *X = (float *)malloc(sizeof(float) * ROWS * WIDE);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * ROWS);
    hpdl_mlp_f32 start, out[2];
    hpdl_cuda_dataset data;
    hpdl_rng rng;
    int mode, e;
    int64_t i;
    if (g_gpu < 0) { free(X); free(y); HPDL_SKIP("no GPU for this rank"); }
    hpdl_rng_seed(&rng, 12);
    for (i = 0; i < (int64_t)ROWS * WIDE; i++) X[i] = (float)hpdl_rng_uniform(&rng);
    for (i = 0; i < ROWS; i++) y[i] = (int32_t)hpdl_rng_below(&rng, CLASSES);
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, ROWS, WIDE, X, ROWS, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mlp_create_f32(&start, 3, widths, HPDL_ACT_RELU, 3));
    for (mode = 0; mode < 2; mode++) {
        hpdl_mpi_dp_config c = config(mode == 0 ? FUSED : SEPARATE);
        hpdl_mpi_dp_cuda_f32 dp;
        hpdl_cuda_mlp_f32 g;
        c.batch = ROWS_A_STEP;
        HPDL_CHECK(hpdl_mlp_create_zero_f32(&out[mode], 3, widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, &start, ROWS_A_STEP));
        HPDL_CHECK(hpdl_mpi_dp_cuda_create_f32(&dp, &g, ROWS, &c));
        for (e = 0; e < 2; e++) HPDL_CHECK(hpdl_mpi_dp_cuda_epoch_f32(&dp, &g, &data, e, NULL));
        if (mode == 0 && hpdl_mpi_size() == 2 && !g_gpus_shared) /* the path under test was taken */
            HPDL_EXPECT(dp.fused && dp.posted == (g.n_params + 3) / 4); /* every pack of the gradient */
        if (mode == 1) HPDL_EXPECT(!dp.fused);
        HPDL_CHECK(hpdl_cuda_mlp_download_f32(&g, &out[mode]));
        hpdl_mpi_dp_cuda_destroy_f32(&dp);
        hpdl_cuda_mlp_destroy_f32(&g);
    }
    HPDL_EXPECT(hpdl_test_mlp_diff_f32(&out[0], &out[1]) < 1e-5);
    HPDL_EXPECT(hpdl_test_mlp_diff_f32(&out[0], &start) > 1e-3); /* it trained */
    hpdl_mlp_destroy_f32(&out[0]); hpdl_mlp_destroy_f32(&out[1]); hpdl_mlp_destroy_f32(&start);
    hpdl_cuda_dataset_destroy(&data);
    free(X); free(y);
}

/* A NaN in one sample: the step that takes it is skipped on every rank (the
   one whose rows hold it and the others), the epoch says so on every rank,
   and the weights stay finite, trained by the other steps, and the same on
   every rank and with or without buckets. */
MPI_TEST(test_nan_step_skipped_everywhere) {
    const int widths[3] = {IN, 24, CLASSES};
    double *X = (double *)malloc(sizeof(double) * N * IN);
    float *Xf = (float *)malloc(sizeof(float) * N * IN);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mlp_f64 start, out[2];
    hpdl_cuda_dataset data;
    int buckets, l, i, finite = 1;
    if (g_gpu < 0) { free(X); free(Xf); free(y); HPDL_SKIP("no GPU for this rank"); }
    make_data(IN, X, Xf, y);
    Xf[57 * IN + 3] = NAN;
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N, IN, Xf, N, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mlp_create_f64(&start, 3, widths, HPDL_ACT_RELU, 3));
    for (buckets = 0; buckets < 2; buckets++) {
        hpdl_mpi_dp_config c = config(buckets ? BUCKETS : FUSED);
        hpdl_mpi_dp_cuda_f64 dp;
        hpdl_cuda_mlp_f64 g;
        hpdl_mpi_dp_stats st;
        HPDL_CHECK(hpdl_mlp_create_zero_f64(&out[buckets], 3, widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, &start, BATCH));
        HPDL_CHECK(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c));
        HPDL_EXPECT(hpdl_mpi_dp_cuda_epoch_f64(&dp, &g, &data, 0, &st) == HPDL_ERR_NUMERIC);
        HPDL_CHECK(hpdl_cuda_mlp_download_f64(&g, &out[buckets]));
        hpdl_mpi_dp_cuda_destroy_f64(&dp);
        hpdl_cuda_mlp_destroy_f64(&g);
    }
    for (l = 0; l < 2; l++)
        for (i = 0; i < widths[l] * widths[l + 1]; i++) finite &= isfinite(out[0].W[l][i]) && isfinite(out[1].W[l][i]);
    HPDL_EXPECT(finite);
    HPDL_EXPECT(hpdl_test_mlp_same_on_every_rank_f64(&out[0]));
    HPDL_EXPECT(hpdl_test_mlp_same_on_every_rank_f64(&out[1]));
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&out[1], &out[0]) < 1e-12);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&out[0], &start) > 1e-3);
    hpdl_mlp_destroy_f64(&out[0]); hpdl_mlp_destroy_f64(&out[1]); hpdl_mlp_destroy_f64(&start);
    hpdl_cuda_dataset_destroy(&data);
    free(X); free(Xf); free(y);
}

/* The GPU drivers' timed steps (events only for them): every 8th and the
   last, each in its own place, the places 0, 1, ... in step order. */
MPI_TEST(test_timed_steps) {
    int64_t steps, step;
    HPDL_EXPECT(hpdl__dp_timed_steps(0) == 0);
    for (steps = 1; steps <= 40; steps++) {
        int64_t next = 0;
        for (step = 0; step < steps; step++) {
            const int64_t slot = hpdl__dp_timed_slot(step, steps);
            const int timed = step % HPDL__DP_TIMED_EVERY == 0 || step == steps - 1;
            HPDL_EXPECT(timed ? slot == next : slot == -1);
            next += timed;
        }
        HPDL_EXPECT(hpdl__dp_timed_steps(steps) == next);
        HPDL_EXPECT(hpdl__dp_timed_scale(steps) == (double)steps / (double)next);
    }
}

MPI_TEST(test_bad_arguments) {
    const int widths[3] = {IN, 24, CLASSES};
    float *Xf = (float *)calloc((size_t)N * IN, sizeof(float));
    int32_t *y = (int32_t *)calloc(N, sizeof(int32_t));
    hpdl_mlp_f64 model;
    hpdl_cuda_mlp_f64 g;
    hpdl_mpi_dp_cuda_f64 dp;
    hpdl_cuda_dataset data;
    hpdl_mpi_dp_config c = config(1);
    if (g_gpu < 0) { free(Xf); free(y); HPDL_SKIP("no GPU for this rank"); }
    HPDL_CHECK(hpdl_mlp_create_f64(&model, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, &model, BATCH));
    HPDL_EXPECT(hpdl_mpi_dp_cuda_create_f64(NULL, &g, N, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_cuda_create_f64(&dp, &g, 0, &c) == HPDL_ERR_INVALID);
    c.batch = BATCH + 1; /* more rows than the model was made for */
    HPDL_EXPECT(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c) == HPDL_ERR_INVALID);
    c.batch = BATCH;
    c.first_layer_pieces = HPDL_MPI_DP_MAX_PIECES + 1;
    HPDL_EXPECT(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c) == HPDL_ERR_INVALID);
    c.first_layer_pieces = 2;
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N - 1, IN, Xf, N - 1, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c));
    HPDL_EXPECT(hpdl_mpi_dp_cuda_epoch_f64(&dp, &g, &data, 0, NULL) == HPDL_ERR_INVALID); /* N - 1 rows, made for N */
    HPDL_EXPECT(hpdl_mpi_dp_cuda_epoch_f64(&dp, &g, &data, -1, NULL) == HPDL_ERR_INVALID);
    hpdl_mpi_dp_cuda_destroy_f64(&dp);
    hpdl_cuda_dataset_destroy(&data);
    hpdl_cuda_mlp_destroy_f64(&g);
    hpdl_mlp_destroy_f64(&model);
    free(Xf); free(y);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_matches_cpu_driver),
        HPDL_TEST(test_fused_matches_separate_f32),
        HPDL_TEST(test_nan_step_skipped_everywhere),
        HPDL_TEST(test_timed_steps),
        HPDL_TEST(test_bad_arguments),
    };
    hpdl_mpi_relaunch_per_gpu(argc, argv, "gpu_mpi_dp");
    HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
    g_gpu = hpdl_mpi_select_gpu();
    g_gpus_shared = hpdl_test_gpus_shared(g_gpu) == 1;
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
