/* MPI tests of the data-parallel driver (hpdl_mpi_dp_*) on CPU ranks:
   mpirun -np N build/mpi/mpi_dp for N = 1..4. Every rank runs every test; a
   test fails on all ranks when it fails on any; only rank 0 prints. */
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

/* ---- a small problem ---------------------------------------------------------- */

/* 50 samples: with b = 4 the last global step is short for every P in 1..4
   (2 rows: P = 3, 4 leave ranks with none). */
enum { N_SAMPLES = 50, N_IN = 12, N_CLASSES = 5, BATCH = 4, EPOCHS = 2 };
static const int WIDTHS[] = {N_IN, 9, 7, N_CLASSES};
#define N_WIDTHS 4
#define SEED 99

static void make_data(double *X, int32_t *y) {
    hpdl_rng rng;
    int i;
    hpdl_rng_seed(&rng, 2024);
    for (i = 0; i < N_SAMPLES * N_IN; i++) X[i] = 2.0 * hpdl_rng_uniform(&rng) - 1.0;
    for (i = 0; i < N_SAMPLES; i++) y[i] = (int32_t)hpdl_rng_below(&rng, N_CLASSES);
}

static hpdl_mpi_dp_config small_config(hpdl_allreduce_algo algo, int overlap) {
    hpdl_mpi_dp_config c;
    hpdl_mpi_dp_config_default(&c);
    c.batch = BATCH;
    c.algo = algo;
    c.overlap = overlap;
    c.bucket_bytes = overlap ? 64 : 0; /* many buckets */
    c.lr = 0.2;
    c.l2 = 1e-3;
    c.lr_scale = 1;
    c.batch_ref = 8;
    c.warmup_epochs = 1.5;
    c.seed = SEED;
    return c;
}

/* The schedule, written out independently of hpdl_mpi_dp_lr. */
static double expected_lr(const hpdl_mpi_dp_config *c, int ranks, double progress) {
    double target = c->lr * ranks * c->batch / (double)c->batch_ref;
    return progress < c->warmup_epochs ? c->lr + (target - c->lr) * progress / c->warmup_epochs : target;
}

/* Serial training with batch P*b over the same epoch permutations. Returns
   the last epoch's mean loss. */
static double train_serial(hpdl_mlp_f64 *m, const hpdl_mpi_dp_config *c, const double *X, const int32_t *y) {
    int big = hpdl_mpi_size() * c->batch, e, i;
    int64_t steps = (N_SAMPLES + big - 1) / big, s;
    int32_t perm[N_SAMPLES], yb[N_SAMPLES];
    double Xb[N_SAMPLES * N_IN], loss = 0.0, sum = 0.0;
    hpdl_mlp_f64 grad;
    hpdl_mlp_work_f64 w;
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&grad, N_WIDTHS, WIDTHS, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f64(&w, m, big) == HPDL_OK);
    for (e = 0; e < EPOCHS; e++) {
        sum = 0.0;
        HPDL_EXPECT(hpdl_mpi_epoch_permutation(perm, N_SAMPLES, c->seed, e) == HPDL_OK);
        for (s = 0; s < steps; s++) {
            int rows = (int)(N_SAMPLES - s * big < big ? N_SAMPLES - s * big : big);
            for (i = 0; i < rows; i++) {
                memcpy(Xb + i * N_IN, X + perm[s * big + i] * N_IN, N_IN * sizeof(double));
                yb[i] = y[perm[s * big + i]];
            }
            HPDL_EXPECT(hpdl_mlp_train_step_f64(m, &w, &grad, rows, Xb, yb, expected_lr(c, hpdl_mpi_size(), e + (double)s / steps),
                                                c->l2, &loss) == HPDL_OK);
            sum += loss * rows;
        }
    }
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_work_destroy_f64(&w);
    return sum / N_SAMPLES;
}

/* DP on P ranks x b from rank-dependent initial weights (the broadcast must
   make them rank 0's) against serial batch P*b from rank 0's weights. */
static void check_dp_equals_serial(hpdl_allreduce_algo algo, int overlap) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES];
    hpdl_mpi_dp_config c = small_config(algo, overlap);
    hpdl_mlp_f64 dp_model, serial, initial;
    hpdl_mpi_dp_f64 dp;
    hpdl_mpi_dp_stats st;
    double serial_loss;
    int e;
    make_data(X, y);
    HPDL_EXPECT(hpdl_mlp_create_f64(&dp_model, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 7 + (uint64_t)hpdl_mpi_rank()) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&serial, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&initial, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &dp_model, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&dp_model, &initial) == 0.0); /* rank 0's weights everywhere */
    if (overlap) HPDL_EXPECT(dp.bucketer.nbuckets > 1);
    for (e = 0; e < EPOCHS; e++) HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, X, y, e, &st) == HPDL_OK);
    serial_loss = train_serial(&serial, &c, X, y);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&serial, &initial) > 1e-3); /* training moved the weights */
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&dp_model, &serial) <= 1e-12);
    HPDL_EXPECT_NEAR(st.loss, serial_loss, 1e-12);
    HPDL_EXPECT(st.samples == N_SAMPLES);
    HPDL_EXPECT(st.steps == (N_SAMPLES + hpdl_mpi_size() * BATCH - 1) / (hpdl_mpi_size() * BATCH));
    HPDL_EXPECT(st.accuracy >= 0.0 && st.accuracy <= 1.0);
    HPDL_EXPECT(st.grad_bytes == 8.0 * (13 * 9 + 10 * 7 + 8 * 5));
    HPDL_EXPECT(st.epoch_s > 0 && st.compute_s > 0 && st.comm_s >= 0 && st.compute_s + st.comm_s <= st.epoch_s * 1.01 + 1e-3);
    HPDL_EXPECT(hpdl_mpi_size() == 1 ? st.busbw == 0.0 : st.busbw > 0.0);
    HPDL_EXPECT_NEAR(st.lr_first, expected_lr(&c, hpdl_mpi_size(), EPOCHS - 1), 1e-15);
    hpdl_mpi_dp_destroy_f64(&dp);
    hpdl_mlp_destroy_f64(&dp_model);
    hpdl_mlp_destroy_f64(&serial);
    hpdl_mlp_destroy_f64(&initial);
}

MPI_TEST(test_dp_mpi_equals_serial_batch_pb) { check_dp_equals_serial(HPDL_ALLREDUCE_MPI, 0); }
MPI_TEST(test_dp_ring_equals_serial_batch_pb) { check_dp_equals_serial(HPDL_ALLREDUCE_RING, 0); }
MPI_TEST(test_dp_bucketed_mpi_equals_serial_batch_pb) { check_dp_equals_serial(HPDL_ALLREDUCE_MPI, 1); }
MPI_TEST(test_dp_bucketed_ring_equals_serial_batch_pb) { check_dp_equals_serial(HPDL_ALLREDUCE_RING, 1); }

/* f32 runs too (looser: the sum order differs from the serial batch's). */
MPI_TEST(test_dp_f32_trains_like_serial) {
    enum { N = 40, B = 5 };
    int widths[3] = {6, 8, 3}, i, e;
    float X[N * 6], Xb[N * 6];
    int32_t y[N], yb[N], perm[N];
    hpdl_mlp_f32 a, b, grad;
    hpdl_mlp_work_f32 w;
    hpdl_mpi_dp_f32 dp;
    hpdl_mpi_dp_config c;
    hpdl_rng rng;
    int big = hpdl_mpi_size() * B;
    int64_t s, steps = (N + big - 1) / big;
    double diff = 0;
    hpdl_rng_seed(&rng, 5);
    for (i = 0; i < N * 6; i++) X[i] = (float)hpdl_rng_uniform(&rng);
    for (i = 0; i < N; i++) y[i] = (int32_t)hpdl_rng_below(&rng, 3);
    hpdl_mpi_dp_config_default(&c);
    c.batch = B;
    c.lr = 0.1;
    c.algo = HPDL_ALLREDUCE_RING;
    HPDL_EXPECT(hpdl_mlp_create_f32(&a, 3, widths, HPDL_ACT_SIGMOID, 3) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f32(&b, 3, widths, HPDL_ACT_SIGMOID, 3) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_SIGMOID) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w, &b, big) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_create_f32(&dp, &a, N, &c) == HPDL_OK);
    for (e = 0; e < 3; e++) {
        HPDL_EXPECT(hpdl_mpi_dp_epoch_f32(&dp, X, y, e, NULL) == HPDL_OK);
        hpdl_mpi_epoch_permutation(perm, N, c.seed, e);
        for (s = 0; s < steps; s++) {
            int rows = (int)(N - s * big < big ? N - s * big : big);
            for (i = 0; i < rows; i++) {
                memcpy(Xb + i * 6, X + perm[s * big + i] * 6, 6 * sizeof(float));
                yb[i] = y[perm[s * big + i]];
            }
            HPDL_EXPECT(hpdl_mlp_train_step_f32(&b, &w, &grad, rows, Xb, yb, 0.1f, 0.0f, NULL) == HPDL_OK);
        }
    }
    for (i = 0; i < 6 * 8; i++) diff = fmax(diff, fabs(a.W[0][i] - b.W[0][i]));
    HPDL_EXPECT(diff <= 1e-5);
    hpdl_mpi_dp_destroy_f32(&dp);
    hpdl_mlp_destroy_f32(&a);
    hpdl_mlp_destroy_f32(&b);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_work_destroy_f32(&w);
}

/* ---- the epoch plan ------------------------------------------------------------- */

/* Over all ranks: every sample once per epoch, and step s's rows are exactly
   rows [s*P*b, (s+1)*P*b) of the epoch permutation. */
static void check_plan(int64_t n, int batch, int epoch) {
    hpdl_mpi_dp_plan p;
    int32_t *uses = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    int32_t *total = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    int32_t *step_of = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    int32_t *step_all = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    int64_t s, i, first = 0, bad_uses = 0, bad_steps = 0, seen = 0, local_sum = 0;
    int rows = 0, global_rows = 0, big = batch * hpdl_mpi_size();
    HPDL_EXPECT(uses && total && step_of && step_all);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, n, batch, hpdl_mpi_rank(), hpdl_mpi_size()) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 17, epoch) == HPDL_OK);
    for (i = 0; i < n; i++) { uses[i] = 0; step_of[i] = -1; }
    for (s = 0; s < p.steps; s++) {
        HPDL_EXPECT(hpdl_mpi_dp_plan_step(&p, s, &first, &rows, &global_rows) == HPDL_OK);
        HPDL_EXPECT(rows <= batch && global_rows <= big && first == s * batch);
        for (i = 0; i < rows; i++) { uses[p.order[first + i]]++; step_of[p.order[first + i]] = (int32_t)s; }
        seen += rows;
    }
    HPDL_EXPECT(seen == p.local);
    MPI_Allreduce(uses, total, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(step_of, step_all, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&p.local, &local_sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < n; i++) bad_uses += total[i] != 1;
    for (i = 0; i < n; i++) bad_steps += step_all[p.perm[i]] != i / big;
    HPDL_EXPECT(bad_uses == 0);
    HPDL_EXPECT(bad_steps == 0);
    HPDL_EXPECT(local_sum == n);
    HPDL_EXPECT(p.steps == (n + big - 1) / big);
    hpdl_mpi_dp_plan_destroy(&p);
    free(uses); free(total); free(step_of); free(step_all);
}

MPI_TEST(test_plan_uses_every_sample_once_per_epoch) {
    check_plan(50, 4, 0);
    check_plan(1000, 3, 1);
    check_plan(1000, 7, 5);
    check_plan(3, 2, 0); /* fewer samples than ranks x batch */
    check_plan(1, 1, 2);
}

MPI_TEST(test_plan_reshuffles_each_epoch) {
    hpdl_mpi_dp_plan p;
    int32_t first_epoch[100];
    int64_t i, moved = 0;
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 100, 100, 0, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 3, 0) == HPDL_OK);
    memcpy(first_epoch, p.order, sizeof first_epoch);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 3, 1) == HPDL_OK);
    for (i = 0; i < 100; i++) moved += p.order[i] != first_epoch[i];
    HPDL_EXPECT(moved > 50);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 3, 0) == HPDL_OK); /* reproducible */
    HPDL_EXPECT(memcmp(first_epoch, p.order, sizeof first_epoch) == 0);
    hpdl_mpi_dp_plan_destroy(&p);
}

MPI_TEST(test_plan_bad_arguments) {
    hpdl_mpi_dp_plan p, poison;
    int64_t first = -7;
    int rows = -7, global_rows = -7;
    memset(&poison, 0xab, sizeof poison);
    p = poison;
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(NULL, 10, 2, 0, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 0, 2, 0, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 10, 0, 0, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 10, 2, 1, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 10, 2, -1, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 10, 2, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&p, &poison, sizeof p) == 0);
    HPDL_EXPECT(hpdl_mpi_dp_plan_create(&p, 10, 2, 0, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 1, -1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_epoch(&p, 1, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_plan_step(&p, 5, &first, &rows, &global_rows) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_step(&p, -1, &first, &rows, &global_rows) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_plan_step(&p, 0, NULL, &rows, &global_rows) == HPDL_ERR_INVALID);
    HPDL_EXPECT(first == -7 && rows == -7 && global_rows == -7);
    hpdl_mpi_dp_plan_destroy(&p);
}

/* ---- learning-rate schedule ---------------------------------------------------- */

MPI_TEST(test_lr_linear_scaling_and_warmup) {
    hpdl_mpi_dp_config c;
    double lr = -1;
    hpdl_mpi_dp_config_default(&c);
    c.lr = 0.1;
    c.batch = 64;
    c.batch_ref = 128;
    /* no scaling: lr whatever the ranks */
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.1, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 3.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.1, 1e-15);
    /* scaling: 0.1 * 4 * 64 / 128 = 0.2 from the start without warm-up */
    c.lr_scale = 1;
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.2, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 1, 0.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.05, 1e-15);
    /* warm-up over 2 epochs: 0.1 -> 0.2 linearly, then flat */
    c.warmup_epochs = 2;
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.1, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.5, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.125, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 1.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.15, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 2.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.2, 1e-15);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 7.5, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.2, 1e-15);
    /* batch_ref 0 means the per-rank batch: scale by the ranks alone */
    c.batch_ref = 0;
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 9.0, &lr) == HPDL_OK); HPDL_EXPECT_NEAR(lr, 0.4, 1e-15);
    /* bad arguments leave lr alone */
    lr = -3;
    HPDL_EXPECT(hpdl_mpi_dp_lr(NULL, 4, 0.0, &lr) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 0, 0.0, &lr) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, -0.5, &lr) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, NAN, &lr) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.0, NULL) == HPDL_ERR_INVALID);
    c.lr = -1;
    HPDL_EXPECT(hpdl_mpi_dp_lr(&c, 4, 0.0, &lr) == HPDL_ERR_INVALID);
    HPDL_EXPECT(lr == -3);
}

/* ---- bad arguments ---------------------------------------------------------------- */

MPI_TEST(test_create_bad_arguments) {
    hpdl_mpi_dp_f64 dp, poison;
    hpdl_mpi_dp_config c = small_config(HPDL_ALLREDUCE_MPI, 0), bad;
    hpdl_mlp_f64 m, before;
    memset(&poison, 0xab, sizeof poison);
    dp = poison;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 11 + (uint64_t)hpdl_mpi_rank()) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&before, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 11 + (uint64_t)hpdl_mpi_rank()) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(NULL, &m, N_SAMPLES, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, NULL, N_SAMPLES, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, 0, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, NULL) == HPDL_ERR_INVALID);
    bad = c; bad.batch = 0;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    bad = c; bad.algo = (hpdl_allreduce_algo)42;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    bad = c; bad.lr = -0.1;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    bad = c; bad.warmup_epochs = -1;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    bad = c; bad.comm = MPI_COMM_NULL;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    bad = c; bad.algo = HPDL_ALLREDUCE_NCCL; /* host buffers */
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_UNSUPPORTED);
    /* bad on the last rank only: every rank refuses, nobody hangs */
    bad = c; if (hpdl_mpi_rank() == hpdl_mpi_size() - 1) bad.batch = -3;
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&dp, &poison, sizeof dp) == 0);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&m, &before) == 0.0); /* no broadcast happened */
    hpdl_mlp_destroy_f64(&m);
    hpdl_mlp_destroy_f64(&before);
}

MPI_TEST(test_epoch_bad_arguments_leave_model) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES];
    hpdl_mpi_dp_config c = small_config(HPDL_ALLREDUCE_RING, 0);
    hpdl_mlp_f64 m, before;
    hpdl_mpi_dp_f64 dp;
    hpdl_mpi_dp_stats st, st_poison;
    make_data(X, y);
    memset(&st_poison, 0xab, sizeof st_poison);
    st = st_poison;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 5) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&before, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 5) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(NULL, X, y, 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, NULL, y, 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, X, NULL, 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, X, y, -1, &st) == HPDL_ERR_INVALID);
    y[N_SAMPLES - 1] = N_CLASSES; /* a label out of range, on one rank only */
    if (hpdl_mpi_rank() == 0) y[N_SAMPLES - 1] = 0;
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, X, y, 0, &st) == (hpdl_mpi_size() == 1 ? HPDL_OK : HPDL_ERR_INVALID));
    if (hpdl_mpi_size() > 1) {
        HPDL_EXPECT(memcmp(&st, &st_poison, sizeof st) == 0);
        HPDL_EXPECT(hpdl_test_mlp_diff_f64(&m, &before) == 0.0);
    }
    hpdl_mpi_dp_destroy_f64(&dp);
    hpdl_mlp_destroy_f64(&m);
    hpdl_mlp_destroy_f64(&before);
}

/* NaN inputs on rank 0 only used to train every rank on (status OK, weights
   NaN): the reduced gradient is NaN on every rank, so every rank refuses
   the first step with HPDL_ERR_NUMERIC and keeps its model. */
MPI_TEST(test_epoch_nan_on_one_rank_stops_every_rank_unchanged) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES];
    hpdl_mpi_dp_config c = small_config(HPDL_ALLREDUCE_RING, 0);
    hpdl_mlp_f64 m, before;
    hpdl_mpi_dp_f64 dp;
    int i;
    make_data(X, y);
    if (hpdl_mpi_rank() == 0)
        for (i = 0; i < N_SAMPLES; i++) X[i * N_IN + 2] = NAN;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 5) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&before, N_WIDTHS, WIDTHS, HPDL_ACT_RELU, 5) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_create_f64(&dp, &m, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_dp_epoch_f64(&dp, X, y, 0, NULL) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&m, &before) == 0.0);
    hpdl_mpi_dp_destroy_f64(&dp);
    hpdl_mlp_destroy_f64(&m);
    hpdl_mlp_destroy_f64(&before);
}

MPI_TEST(test_roofline_inputs_cpu) {
    hpdl_mpi_dp_roofline r;
    memset(&r, 0, sizeof r);
    HPDL_EXPECT(hpdl_mpi_dp_roofline_cpu(1 << 16, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD, &r) == HPDL_OK);
    HPDL_EXPECT(r.p_flops > 1e6);
    HPDL_EXPECT(hpdl_mpi_size() == 1 ? r.p_mpi == 0.0 : r.p_mpi > 0.0);
    HPDL_EXPECT(hpdl_mpi_dp_roofline_cpu(0, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD, &r) == HPDL_ERR_INVALID);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_dp_mpi_equals_serial_batch_pb),
        HPDL_TEST(test_dp_ring_equals_serial_batch_pb),
        HPDL_TEST(test_dp_bucketed_mpi_equals_serial_batch_pb),
        HPDL_TEST(test_dp_bucketed_ring_equals_serial_batch_pb),
        HPDL_TEST(test_dp_f32_trains_like_serial),
        HPDL_TEST(test_plan_uses_every_sample_once_per_epoch),
        HPDL_TEST(test_plan_reshuffles_each_epoch),
        HPDL_TEST(test_plan_bad_arguments),
        HPDL_TEST(test_lr_linear_scaling_and_warmup),
        HPDL_TEST(test_create_bad_arguments),
        HPDL_TEST(test_epoch_bad_arguments_leave_model),
        HPDL_TEST(test_epoch_nan_on_one_rank_stops_every_rank_unchanged),
        HPDL_TEST(test_roofline_inputs_cpu),
    };
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
