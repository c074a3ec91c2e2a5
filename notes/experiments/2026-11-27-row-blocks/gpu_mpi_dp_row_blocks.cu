/* tests/gpu_mpi_dp.cu - data-parallel MLP training on GPUs with the first
   layer in row blocks (hpdl_mpi_dp_config.shard_first_layer: each rank
   updates one block of W0, the blocks and their gradients travel on the copy
   engines) against the CPU driver (tested against serial training in
   tests/mpi_dp.c) on the same ranks from the same start: weights after two
   epochs with a short last step, for an input width whose first block is
   empty, one split into blocks of 64 rows, and three layers; a step with a
   NaN skipped on every rank alike; bad arguments. One rank per GPU; skipped
   without a GPU or where the ranks' GPUs cannot reach each other.

   Started on its own on a machine with several GPUs, it starts itself again
   under `mpirun -np <GPUs>`.
       mpirun -np 2 build/gpu/gpu_mpi_dp [name filter] */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL
#endif
#endif
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

enum { N = 203, BATCH = 16, CLASSES = 7, MAX_IN = 200 };

static int g_gpu = -1; /* this rank's GPU; -1: none */

/* The same random data set on every rank (labels 0..CLASSES-1). */
static void make_data(int in, double *X, float *Xf, int32_t *y) {
    hpdl_rng rng;
    int64_t i;
    hpdl_rng_seed(&rng, 11);
    for (i = 0; i < (int64_t)N * in; i++) X[i] = Xf[i] = (float)hpdl_rng_uniform(&rng); /* the same on both */
    for (i = 0; i < N; i++) y[i] = (int32_t)hpdl_rng_below(&rng, CLASSES);
}

static hpdl_mpi_dp_config config(int shard) {
    hpdl_mpi_dp_config c;
    hpdl_mpi_dp_config_default(&c);
    c.batch = BATCH;
    c.algo = HPDL_ALLREDUCE_AUTO;
    c.lr = 0.1;
    c.l2 = 1e-4;
    c.seed = 5;
    c.shard_first_layer = shard;
    return c;
}

/* max |a - b| / max |b| over every weight and bias. */
static double model_diff(const hpdl_mlp_f64 *a, const hpdl_mlp_f64 *b) {
    double d = 0.0, s = 0.0;
    int l, i;
    for (l = 0; l < a->n_layers; l++) {
        for (i = 0; i < a->widths[l] * a->widths[l + 1]; i++) {
            d = fmax(d, fabs(a->W[l][i] - b->W[l][i]));
            s = fmax(s, fabs(b->W[l][i]));
        }
        for (i = 0; i < a->widths[l + 1]; i++) d = fmax(d, fabs(a->b[l][i] - b->b[l][i]));
    }
    return d / s;
}

/* 1 when every rank holds the same weights as rank 0 (bit for bit). */
static int same_on_every_rank(const hpdl_mlp_f64 *m) {
    int l, same = 1, all = 0;
    for (l = 0; l < m->n_layers; l++) {
        int64_t n = (int64_t)m->widths[l] * m->widths[l + 1], i;
        double *root = (double *)malloc(sizeof(double) * n);
        for (i = 0; i < n; i++) root[i] = m->W[l][i];
        MPI_Bcast(root, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (i = 0; i < n; i++) same &= root[i] == m->W[l][i];
        free(root);
    }
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Creates the sharded GPU driver; 0 (and a skip message) where the ranks'
   GPUs cannot share memory. */
static int create_sharded(hpdl_mpi_dp_cuda_f64 *dp, hpdl_cuda_mlp_f64 *g, const hpdl_mpi_dp_config *c) {
    hpdl_status s = hpdl_mpi_dp_cuda_create_f64(dp, g, N, c);
    if (s == HPDL_ERR_UNSUPPORTED) return 0;
    HPDL_CHECK(s);
    return 1;
}

/* Two epochs of the sharded GPU driver and of the CPU driver from the same
   start; the GPU's weights in *out. 0 where sharding is unsupported. */
static int train_both(int n_widths, const int *widths, hpdl_mlp_f64 *cpu, hpdl_mlp_f64 *out) {
    double *X = (double *)malloc(sizeof(double) * N * widths[0]);
    float *Xf = (float *)malloc(sizeof(float) * N * widths[0]);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mpi_dp_config c = config(1);
    hpdl_mpi_dp_stats st;
    hpdl_mpi_dp_f64 cdp;
    hpdl_mpi_dp_cuda_f64 gdp;
    hpdl_cuda_mlp_f64 g;
    hpdl_cuda_dataset data;
    int e, ok;
    make_data(widths[0], X, Xf, y);
    HPDL_CHECK(hpdl_mlp_create_f64(cpu, n_widths, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_mlp_create_zero_f64(out, n_widths, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, cpu, BATCH));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N, widths[0], Xf, N, y, HPDL_DATA_RESIDENT, 0));
    ok = create_sharded(&gdp, &g, &c);
    if (ok) {
        c.algo = HPDL_ALLREDUCE_MPI;
        HPDL_CHECK(hpdl_mpi_dp_create_f64(&cdp, cpu, N, &c));
        for (e = 0; e < 2; e++) {
            HPDL_CHECK(hpdl_mpi_dp_cuda_epoch_f64(&gdp, &g, &data, e, &st));
            HPDL_CHECK(hpdl_mpi_dp_epoch_f64(&cdp, X, y, e, NULL));
        }
        HPDL_EXPECT(st.steps == (N + BATCH * hpdl_mpi_size() - 1) / (BATCH * hpdl_mpi_size()));
        HPDL_CHECK(hpdl_cuda_mlp_download_f64(&g, out));
        hpdl_mpi_dp_cuda_destroy_f64(&gdp);
        hpdl_mpi_dp_destroy_f64(&cdp);
    }
    hpdl_cuda_dataset_destroy(&data);
    hpdl_cuda_mlp_destroy_f64(&g);
    free(X); free(Xf); free(y);
    return ok;
}

MPI_TEST(test_matches_cpu_driver) {
    /* 37 inputs: rank 0's block is empty on 2 ranks (blocks start at
       multiples of 64); 200: blocks of 64 and 136 rows; then three layers */
    static const int shapes[3][4] = {{37, 19, CLASSES}, {MAX_IN, 24, CLASSES}, {MAX_IN, 24, 16, CLASSES}};
    static const int n_widths[3] = {3, 3, 4};
    int k;
    if (g_gpu < 0) HPDL_SKIP("no GPU for this rank");
    for (k = 0; k < 3; k++) {
        hpdl_mlp_f64 cpu, gpu;
        if (!train_both(n_widths[k], shapes[k], &cpu, &gpu)) {
            hpdl_mlp_destroy_f64(&cpu); hpdl_mlp_destroy_f64(&gpu);
            HPDL_SKIP("the ranks' GPUs cannot share memory");
        }
        HPDL_EXPECT(model_diff(&gpu, &cpu) < 1e-12);
        HPDL_EXPECT(same_on_every_rank(&gpu));
        hpdl_mlp_destroy_f64(&cpu);
        hpdl_mlp_destroy_f64(&gpu);
    }
}

/* A NaN in one sample: the step that takes it is skipped on every rank (the
   one whose batch holds it, and the others), the epoch says so on every
   rank, and the weights stay finite and the same everywhere - the same
   weights as the driver without sharding, which skips that step too. */
MPI_TEST(test_nan_step_skipped_everywhere) {
    const int widths[3] = {MAX_IN, 24, CLASSES};
    double *X = (double *)malloc(sizeof(double) * N * MAX_IN);
    float *Xf = (float *)malloc(sizeof(float) * N * MAX_IN);
    int32_t *y = (int32_t *)malloc(sizeof(int32_t) * N);
    hpdl_mlp_f64 start, out[2];
    hpdl_cuda_dataset data;
    int shard, l, i, finite = 1;
    if (g_gpu < 0) { free(X); free(Xf); free(y); HPDL_SKIP("no GPU for this rank"); }
    make_data(MAX_IN, X, Xf, y);
    Xf[57 * MAX_IN + 3] = NAN;
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N, MAX_IN, Xf, N, y, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_mlp_create_f64(&start, 3, widths, HPDL_ACT_RELU, 3));
    for (shard = 0; shard < 2; shard++) {
        hpdl_mpi_dp_config c = config(shard);
        hpdl_mpi_dp_cuda_f64 dp;
        hpdl_cuda_mlp_f64 g;
        hpdl_mpi_dp_stats st;
        HPDL_CHECK(hpdl_mlp_create_zero_f64(&out[shard], 3, widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, &start, BATCH));
        if (shard && !create_sharded(&dp, &g, &c)) {
            hpdl_cuda_mlp_destroy_f64(&g);
            hpdl_mlp_destroy_f64(&out[0]); hpdl_mlp_destroy_f64(&out[1]); hpdl_mlp_destroy_f64(&start);
            hpdl_cuda_dataset_destroy(&data);
            free(X); free(Xf); free(y);
            HPDL_SKIP("the ranks' GPUs cannot share memory");
        }
        if (!shard) HPDL_CHECK(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c));
        HPDL_EXPECT(hpdl_mpi_dp_cuda_epoch_f64(&dp, &g, &data, 0, &st) == HPDL_ERR_NUMERIC);
        HPDL_CHECK(hpdl_cuda_mlp_download_f64(&g, &out[shard]));
        hpdl_mpi_dp_cuda_destroy_f64(&dp);
        hpdl_cuda_mlp_destroy_f64(&g);
    }
    for (l = 0; l < 2; l++)
        for (i = 0; i < widths[l] * widths[l + 1]; i++) finite &= isfinite(out[1].W[l][i]);
    HPDL_EXPECT(finite);
    HPDL_EXPECT(same_on_every_rank(&out[1]));
    HPDL_EXPECT(model_diff(&out[1], &out[0]) < 1e-12);
    HPDL_EXPECT(model_diff(&out[1], &start) > 1e-3); /* the other steps trained */
    hpdl_mlp_destroy_f64(&out[0]); hpdl_mlp_destroy_f64(&out[1]); hpdl_mlp_destroy_f64(&start);
    hpdl_cuda_dataset_destroy(&data);
    free(X); free(Xf); free(y);
}

MPI_TEST(test_bad_arguments) {
    const int widths[3] = {MAX_IN, 24, CLASSES};
    hpdl_mlp_f64 model;
    hpdl_cuda_mlp_f64 g;
    hpdl_mpi_dp_cuda_f64 dp;
    hpdl_mpi_dp_config c = config(1);
    if (g_gpu < 0) HPDL_SKIP("no GPU for this rank");
    HPDL_CHECK(hpdl_mlp_create_f64(&model, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_cuda_mlp_create_f64(&g, &model, BATCH));
    c.overlap = 1; /* buckets and row blocks are two ways of doing the same */
    HPDL_EXPECT(hpdl_mpi_dp_cuda_create_f64(&dp, &g, N, &c) == HPDL_ERR_INVALID);
    hpdl_cuda_mlp_destroy_f64(&g);
    hpdl_mlp_destroy_f64(&model);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_matches_cpu_driver),
        HPDL_TEST(test_nan_step_skipped_everywhere),
        HPDL_TEST(test_bad_arguments),
    };
    hpdl_mpi_relaunch_per_gpu(argc, argv, "gpu_mpi_dp");
    HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
    g_gpu = hpdl_mpi_select_gpu();
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
