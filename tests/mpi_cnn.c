/* MPI tests of data-parallel CNN training (hpdl_mpi_cnn_*) on CPU ranks:
   mpirun -np N build/mpi/mpi_cnn for N = 1..4. Every rank runs every test;
   a test fails on all ranks when it fails on any; only rank 0 prints. */
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"
#include "tests/cnn_every_kind.h"

enum { GLOBAL_BATCH = 12, STEPS = 3 }; /* 12 images split evenly over 1, 2, 3 or 4 ranks */

/* Images of `shape` in [-1, 1] and labels in [0, classes), the same on every rank. */
static void make_data(const hpdl_cnn *net, int n, double *X, int32_t *labels) {
    hpdl_rng rng;
    int64_t i, features = (int64_t)net->input.c * net->input.h * net->input.w;
    hpdl_rng_seed(&rng, 2026);
    for (i = 0; i < n * features; i++) X[i] = 2 * hpdl_rng_uniform(&rng) - 1;
    for (i = 0; i < n; i++) labels[i] = (int32_t)hpdl_rng_below(&rng, (uint64_t)net->classes);
}

/* A fresh f64 run of net with hpdl_cnn_init's parameters for `seed`. */
static void make_run(const hpdl_cnn *net, uint64_t seed, int batch, hpdl_cnn_run *r) {
    double *params = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    double *state = (double *)hpdl_alloc((size_t)net->state_count + 1, sizeof(double));
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    HPDL_EXPECT(params && state && hpdl_cnn_init(net, seed, params, state) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_run_create(r, net, hpdl_cnn_backend_cpu_f64(), batch, &opt) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_set_params(r, params, state) == HPDL_OK);
    HPDL_FREE(params);
    HPDL_FREE(state);
}

/* STEPS data-parallel steps (each rank its share of every global batch) end
   where STEPS single-process steps on the whole batch end, to rounding. */
static void matches_one_process(hpdl_allreduce_algo algo, size_t bucket_bytes) {
    hpdl_cnn net;
    hpdl_cnn_run dp, one;
    hpdl_mpi_cnn d;
    int p = hpdl_mpi_size(), rank = hpdl_mpi_rank(), local = GLOBAL_BATCH / p, step;
    double X[GLOBAL_BATCH * 256], got[44426], want[44426], loss_dp = 0, loss_one = 0;
    int32_t labels[GLOBAL_BATCH];
    HPDL_EXPECT(hpdl_cnn_small(&net, hpdl_shape_make(1, 16, 16), 10, HPDL_NCHW) == HPDL_OK);
    HPDL_EXPECT(net.param_count <= 44426);
    make_data(&net, GLOBAL_BATCH, X, labels);
    make_run(&net, 1 + (uint64_t)rank, local, &dp); /* other weights on other ranks: create copies rank 0's */
    make_run(&net, 1, GLOBAL_BATCH, &one);
    HPDL_EXPECT(hpdl_mpi_cnn_create(&d, &dp, algo, bucket_bytes, HPDL_MPI_BN_LOCAL, MPI_COMM_WORLD) == HPDL_OK);
    for (step = 0; step < STEPS; step++) {
        HPDL_EXPECT(hpdl_mpi_cnn_train_step(&d, local, X + rank * local * 256, labels + rank * local) == HPDL_OK);
        HPDL_EXPECT(hpdl_cnn_train_step(&one, GLOBAL_BATCH, X, labels) == HPDL_OK);
    }
    HPDL_EXPECT(hpdl_cnn_loss(&dp, &loss_dp) == HPDL_OK && hpdl_cnn_loss(&one, &loss_one) == HPDL_OK);
    HPDL_EXPECT_NEAR(loss_dp, loss_one, 1e-12);
    HPDL_EXPECT(hpdl_cnn_get_params(&dp, got, NULL) == HPDL_OK && hpdl_cnn_get_params(&one, want, NULL) == HPDL_OK);
    HPDL_EXPECT_NEAR(hpdl_cnn_param_difference(&net, got, want, NULL), 0, 1e-12);
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&dp);
    hpdl_cnn_run_destroy(&one);
}

MPI_TEST(mpi_matches_one_process) { matches_one_process(HPDL_ALLREDUCE_MPI, 0); }
MPI_TEST(ring_buckets_match_one_process) { matches_one_process(HPDL_ALLREDUCE_RING, 512); }

/* Largest |x - rank 0's x| over n values, the same answer on every rank. */
static double spread_from_rank0(const double *x, int64_t n) {
    double *mine = (double *)hpdl_alloc((size_t)n, sizeof(double)), local = 0, worst = 0;
    int64_t i;
    memcpy(mine, x, (size_t)n * sizeof *mine);
    MPI_Bcast(mine, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (i = 0; i < n; i++) local = fmax(local, fabs(x[i] - mine[i]));
    MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    HPDL_FREE(mine);
    return worst;
}

/* With batch norm and different data per rank: parameters stay equal on
   every rank; running statistics too with HPDL_MPI_BN_BROADCAST (as of the
   last broadcast: rank 0's before the step, so compare after one more). */
static void batchnorm_modes(hpdl_mpi_bn_mode bn) {
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_mpi_cnn d;
    int rank = hpdl_mpi_rank(), p = hpdl_mpi_size(), step;
    double X[4 * 72], params[512], state[64];
    int32_t labels[4];
    HPDL_EXPECT(every_kind(&net, HPDL_NHWC, 0) == HPDL_OK);
    HPDL_EXPECT(net.param_count <= 512 && net.state_count <= 64);
    make_data(&net, 4, X, labels);
    X[rank] += rank; /* each rank's batch differs */
    make_run(&net, 3, 4, &r);
    HPDL_EXPECT(hpdl_mpi_cnn_create(&d, &r, HPDL_ALLREDUCE_MPI, 0, bn, MPI_COMM_WORLD) == HPDL_OK);
    for (step = 0; step < STEPS; step++) HPDL_EXPECT(hpdl_mpi_cnn_train_step(&d, 4, X, labels) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, params, state) == HPDL_OK);
    HPDL_EXPECT(spread_from_rank0(params, net.param_count) == 0);
    if (bn == HPDL_MPI_BN_BROADCAST) {
        HPDL_EXPECT(hpdl__mpi_cnn_share(&d, 0) == HPDL_OK); /* what the next step starts from */
        HPDL_EXPECT(hpdl_cnn_get_params(&r, params, state) == HPDL_OK);
        HPDL_EXPECT(spread_from_rank0(state, net.state_count) == 0);
    } else if (p > 1) {
        HPDL_EXPECT(spread_from_rank0(state, net.state_count) > 0); /* each rank its own statistics */
    }
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&r);
}

MPI_TEST(bn_local_statistics) { batchnorm_modes(HPDL_MPI_BN_LOCAL); }
MPI_TEST(bn_broadcast_statistics) { batchnorm_modes(HPDL_MPI_BN_BROADCAST); }

/* A NaN on the last rank: HPDL_ERR_NUMERIC on every rank, the model unchanged
   everywhere; then the next good step runs. Unequal batches: INVALID. */
MPI_TEST(nan_on_one_rank_stops_every_rank) {
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_mpi_cnn d;
    double X[4 * 72], before[512], after[512];
    int32_t labels[4];
    HPDL_EXPECT(every_kind(&net, HPDL_NCHW, 0) == HPDL_OK);
    make_data(&net, 4, X, labels);
    make_run(&net, 5, 4, &r);
    HPDL_EXPECT(hpdl_mpi_cnn_create(&d, &r, HPDL_ALLREDUCE_RING, 0, HPDL_MPI_BN_LOCAL, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, before, NULL) == HPDL_OK);
    if (hpdl_mpi_rank() == hpdl_mpi_size() - 1) X[3] = NAN;
    HPDL_EXPECT(hpdl_mpi_cnn_train_step(&d, 4, X, labels) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_cnn_get_params(&r, after, NULL) == HPDL_OK);
    HPDL_EXPECT(memcmp(before, after, (size_t)net.param_count * sizeof *before) == 0);
    X[3] = 0.5;
    HPDL_EXPECT(hpdl_mpi_cnn_train_step(&d, 4, X, labels) == HPDL_OK);
    if (hpdl_mpi_size() > 1)
        HPDL_EXPECT(hpdl_mpi_cnn_train_step(&d, hpdl_mpi_rank() == 0 ? 2 : 4, X, labels) == HPDL_ERR_INVALID);
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&r);
}

MPI_TEST(create_refuses_bad_arguments) {
    hpdl_mpi_cnn d;
    hpdl_cnn net;
    hpdl_cnn_run r;
    HPDL_EXPECT(every_kind(&net, HPDL_NCHW, 0) == HPDL_OK);
    make_run(&net, 5, 4, &r);
    HPDL_EXPECT(hpdl_mpi_cnn_create(NULL, &r, HPDL_ALLREDUCE_MPI, 0, HPDL_MPI_BN_LOCAL, MPI_COMM_WORLD) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_cnn_create(&d, NULL, HPDL_ALLREDUCE_MPI, 0, HPDL_MPI_BN_LOCAL, MPI_COMM_WORLD) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_cnn_create(&d, &r, HPDL_ALLREDUCE_MPI, 0, (hpdl_mpi_bn_mode)7, MPI_COMM_WORLD) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_cnn_train_step(NULL, 4, NULL, NULL) == HPDL_ERR_INVALID);
    hpdl_cnn_run_destroy(&r);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(mpi_matches_one_process),   HPDL_TEST(ring_buckets_match_one_process),
        HPDL_TEST(bn_local_statistics),       HPDL_TEST(bn_broadcast_statistics),
        HPDL_TEST(nan_on_one_rank_stops_every_rank), HPDL_TEST(create_refuses_bad_arguments),
    };
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
