/* MPI tests of the tensor-parallel driver (hpdl_mpi_tp_*) on CPU ranks:
   mpirun -np N build/mpi/mpi_tp for N = 1..4. Every rank runs every test; a
   test fails on all ranks when it fails on any; only rank 0 prints. */
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

/* ---- counting the MPI traffic (PMPI) -------------------------------------------- */

/* MPI_Allreduce is intercepted here, so the bytes a step sends are measured
   at the MPI layer rather than taken from the driver's own counters. */
static struct {
    int on;
    MPI_Datatype type;  /* calls that sum this type are "data"; every other call is "other" */
    int64_t data_calls, data_elems, other_calls, max_count;
} g_count;

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    if (g_count.on && type == g_count.type && op == MPI_SUM) {
        g_count.data_calls++;
        g_count.data_elems += count;
        if (count > g_count.max_count) g_count.max_count = count;
    } else if (g_count.on) {
        g_count.other_calls++;
    }
    return PMPI_Allreduce(send, recv, count, type, op, comm);
}

static void count_start(MPI_Datatype type) {
    memset(&g_count, 0, sizeof g_count);
    g_count.type = type;
    g_count.on = 1;
}

/* ---- a small problem with odd sizes ----------------------------------------------- */

/* 50 samples in batches of 9: five full steps and a short one of 5 rows.
   Hidden widths 7 and 10 do not divide by 2..4; hidden 2 leaves ranks 2 and
   3 without units when P > 2. */
enum { N_SAMPLES = 50, N_IN = 13, N_CLASSES = 5, BATCH = 9, EPOCHS = 2, STEPS = 6 };
#define SEED 99

static void make_data(double *X, int32_t *y) {
    hpdl_rng rng;
    int i;
    hpdl_rng_seed(&rng, 2024);
    for (i = 0; i < N_SAMPLES * N_IN; i++) X[i] = 2.0 * hpdl_rng_uniform(&rng) - 1.0;
    for (i = 0; i < N_SAMPLES; i++) y[i] = (int32_t)hpdl_rng_below(&rng, N_CLASSES);
}

static hpdl_mpi_tp_config small_config(hpdl_allreduce_algo algo) {
    hpdl_mpi_tp_config c;
    hpdl_mpi_tp_config_default(&c);
    c.batch = BATCH;
    c.algo = algo;
    c.lr = 0.2;
    c.l2 = 1e-3;
    c.seed = SEED;
    return c;
}

static int argmax_hits(int rows, int cols, const double *logits, const int32_t *labels) {
    int r, c, best, hits = 0;
    for (r = 0; r < rows; r++) {
        for (c = 1, best = 0; c < cols; c++) best = logits[r * cols + c] > logits[r * cols + best] ? c : best;
        hits += best == labels[r];
    }
    return hits;
}

/* Serial training with the same batches (hpdl_mpi_epoch_permutation of
   (seed, epoch), steps of BATCH rows). Returns the last epoch's mean loss;
   *accuracy gets its running accuracy. */
static double train_serial(hpdl_mlp_f64 *m, const hpdl_mpi_tp_config *c, const double *X, const int32_t *y,
                           double *accuracy) {
    int e, s, i, hits = 0;
    int32_t perm[N_SAMPLES], yb[BATCH];
    double Xb[BATCH * N_IN], loss = 0.0, sum = 0.0;
    hpdl_mlp_f64 grad;
    hpdl_mlp_work_f64 w;
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&grad, 3, m->widths, m->act) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f64(&w, m, BATCH) == HPDL_OK);
    for (e = 0; e < EPOCHS; e++) {
        sum = 0.0;
        hits = 0;
        HPDL_EXPECT(hpdl_mpi_epoch_permutation(perm, N_SAMPLES, c->seed, e) == HPDL_OK);
        for (s = 0; s * BATCH < N_SAMPLES; s++) {
            int rows = N_SAMPLES - s * BATCH < BATCH ? N_SAMPLES - s * BATCH : BATCH;
            for (i = 0; i < rows; i++) {
                memcpy(Xb + i * N_IN, X + perm[s * BATCH + i] * N_IN, N_IN * sizeof(double));
                yb[i] = y[perm[s * BATCH + i]];
            }
            HPDL_EXPECT(hpdl_mlp_train_step_f64(m, &w, &grad, rows, Xb, yb, c->lr, c->l2, &loss) == HPDL_OK);
            hits += argmax_hits(rows, N_CLASSES, w.act[2], yb); /* logits of the step's forward pass */
            sum += loss * rows;
        }
    }
    *accuracy = (double)hits / N_SAMPLES;
    hpdl_mlp_destroy_f64(&grad);
    hpdl_mlp_work_destroy_f64(&w);
    return sum / N_SAMPLES;
}

/* TP on P ranks, created from rank-dependent models (rank 0's must win),
   against serial training from rank 0's weights, step for step. */
static void check_tp_equals_serial(hpdl_allreduce_algo algo, int hidden, hpdl_activation act) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES];
    int widths[3] = {N_IN, 0, N_CLASSES}, e;
    hpdl_mpi_tp_config c = small_config(algo);
    hpdl_mlp_f64 mine, serial, initial, gathered;
    hpdl_mpi_tp_f64 tp;
    hpdl_mpi_tp_stats st;
    double serial_loss, serial_acc;
    widths[1] = hidden;
    make_data(X, y);
    HPDL_EXPECT(hpdl_mlp_create_f64(&mine, 3, widths, act, 7 + (uint64_t)hpdl_mpi_rank()) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&serial, 3, widths, act, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&initial, 3, widths, act, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&gathered, 3, widths, act) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &mine, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(tp.shape.h == (int)(hidden / hpdl_mpi_size() + (hpdl_mpi_rank() < hidden % hpdl_mpi_size())));
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, &gathered) == HPDL_OK);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gathered, &initial) == 0.0); /* rank 0's, sliced and put back */
    for (e = 0; e < EPOCHS; e++) HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, y, e, &st) == HPDL_OK);
    serial_loss = train_serial(&serial, &c, X, y, &serial_acc);
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, &gathered) == HPDL_OK);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&serial, &initial) > 1e-3); /* training moved the weights */
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gathered, &serial) <= 1e-12);
    if (hpdl_mpi_size() == 1) /* the same arithmetic */
        HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gathered, &serial) == 0.0);
    HPDL_EXPECT(hpdl_test_mlp_same_on_every_rank_f64(&gathered)); /* b1 stayed replicated */
    HPDL_EXPECT_NEAR(st.loss, serial_loss, 1e-12);
    HPDL_EXPECT_NEAR(st.accuracy, serial_acc, 1e-15);
    HPDL_EXPECT(st.steps == STEPS && st.samples == N_SAMPLES);
    HPDL_EXPECT(st.allreduces == STEPS);
    HPDL_EXPECT(st.step_bytes == BATCH * N_CLASSES * sizeof(double));
    HPDL_EXPECT(st.epoch_bytes == N_SAMPLES * N_CLASSES * sizeof(double));
    HPDL_EXPECT(st.dp_grad_bytes == ((N_IN + 1) * hidden + (hidden + 1) * N_CLASSES) * sizeof(double));
    HPDL_EXPECT(st.epoch_s > 0 && st.compute_s > 0 && st.comm_s >= 0);
    HPDL_EXPECT(st.compute_s + st.comm_s <= st.epoch_s * 1.01 + 1e-3);
    HPDL_EXPECT(hpdl_mpi_size() == 1 ? st.busbw == 0.0 : st.busbw > 0.0);
    hpdl_mpi_tp_destroy_f64(&tp);
    hpdl_mlp_destroy_f64(&mine);
    hpdl_mlp_destroy_f64(&serial);
    hpdl_mlp_destroy_f64(&initial);
    hpdl_mlp_destroy_f64(&gathered);
}

MPI_TEST(test_tp_mpi_equals_serial_hidden7) { check_tp_equals_serial(HPDL_ALLREDUCE_MPI, 7, HPDL_ACT_RELU); }
MPI_TEST(test_tp_ring_equals_serial_hidden10) { check_tp_equals_serial(HPDL_ALLREDUCE_RING, 10, HPDL_ACT_RELU); }
MPI_TEST(test_tp_sigmoid_equals_serial) { check_tp_equals_serial(HPDL_ALLREDUCE_MPI, 10, HPDL_ACT_SIGMOID); }
/* With P > 2 some ranks own no hidden unit and add zeros to the logits. */
MPI_TEST(test_tp_more_ranks_than_hidden_units) { check_tp_equals_serial(HPDL_ALLREDUCE_RING, 2, HPDL_ACT_RELU); }

/* f32 too, looser: the partial logits are summed in another order. */
MPI_TEST(test_tp_f32_trains_like_serial) {
    enum { N = 40, IN = 6, H = 11, C = 3, B = 7 };
    int widths[3] = {IN, H, C}, i, e, s;
    float X[N * IN], Xb[B * IN];
    int32_t y[N], yb[B], perm[N];
    hpdl_mlp_f32 a, b, grad, gathered;
    hpdl_mlp_work_f32 w;
    hpdl_mpi_tp_f32 tp;
    hpdl_mpi_tp_config c;
    hpdl_mpi_tp_stats st;
    hpdl_rng rng;
    double diff = 0, scale = 0;
    memset(&st, 0, sizeof st); /* read below even if an epoch fails */
    hpdl_rng_seed(&rng, 5);
    for (i = 0; i < N * IN; i++) X[i] = (float)hpdl_rng_uniform(&rng);
    for (i = 0; i < N; i++) y[i] = (int32_t)hpdl_rng_below(&rng, C);
    hpdl_mpi_tp_config_default(&c);
    c.batch = B;
    c.lr = 0.1;
    c.algo = HPDL_ALLREDUCE_RING;
    HPDL_EXPECT(hpdl_mlp_create_f32(&a, 3, widths, HPDL_ACT_RELU, 3) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f32(&b, 3, widths, HPDL_ACT_RELU, 3) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f32(&gathered, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_work_create_f32(&w, &b, B) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_create_f32(&tp, &a, N, &c) == HPDL_OK);
    for (e = 0; e < 3; e++) {
        HPDL_EXPECT(hpdl_mpi_tp_epoch_f32(&tp, X, y, e, &st) == HPDL_OK);
        hpdl_mpi_epoch_permutation(perm, N, c.seed, e);
        for (s = 0; s * B < N; s++) {
            int rows = N - s * B < B ? N - s * B : B;
            for (i = 0; i < rows; i++) {
                memcpy(Xb + i * IN, X + perm[s * B + i] * IN, IN * sizeof(float));
                yb[i] = y[perm[s * B + i]];
            }
            HPDL_EXPECT(hpdl_mlp_train_step_f32(&b, &w, &grad, rows, Xb, yb, 0.1f, 0.0f, NULL) == HPDL_OK);
        }
    }
    HPDL_EXPECT(hpdl_mpi_tp_gather_f32(&tp, &gathered) == HPDL_OK);
    for (i = 0; i < IN * H; i++) {
        diff = fmax(diff, fabs(gathered.W[0][i] - b.W[0][i]));
        scale = fmax(scale, fabs(b.W[0][i]));
    }
    for (i = 0; i < H * C; i++) diff = fmax(diff, fabs(gathered.W[1][i] - b.W[1][i]));
    HPDL_EXPECT(diff <= 1e-5 * scale);
    HPDL_EXPECT(st.step_bytes == B * C * sizeof(float) && st.epoch_bytes == N * C * sizeof(float));
    HPDL_EXPECT(st.dp_grad_bytes == ((IN + 1) * H + (H + 1) * C) * sizeof(float));
    hpdl_mpi_tp_destroy_f32(&tp);
    hpdl_mlp_destroy_f32(&a);
    hpdl_mlp_destroy_f32(&b);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&gathered);
    hpdl_mlp_work_destroy_f32(&w);
}

/* ---- what goes over the wire -------------------------------------------------------- */

/* MPI_Allreduce calls that sum doubles during one epoch of a driver with
   this batch; *other: the rest of the epoch's MPI_Allreduce calls. */
static void count_epoch(int batch, hpdl_mpi_tp_stats *st, int64_t *other) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES];
    int widths[3] = {N_IN, 7, N_CLASSES};
    hpdl_mpi_tp_config c = small_config(HPDL_ALLREDUCE_MPI);
    hpdl_mlp_f64 m;
    hpdl_mpi_tp_f64 tp;
    make_data(X, y);
    c.batch = batch;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, 3, widths, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &c) == HPDL_OK);
    count_start(MPI_DOUBLE);
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, y, 0, st) == HPDL_OK);
    g_count.on = 0;
    *other = g_count.other_calls;
    hpdl_mpi_tp_destroy_f64(&tp);
    hpdl_mlp_destroy_f64(&m);
}

/* One allreduce of batch x classes per step, measured at MPI_Allreduce;
   nothing else grows with the number of steps. */
MPI_TEST(test_tp_one_allreduce_of_the_logits_per_step) {
    hpdl_mpi_tp_stats a, b;
    int64_t other_a = 0, other_b = 0, data_b;
    int p = hpdl_mpi_size();
    count_epoch(4, &b, &other_b); /* 13 steps */
    data_b = g_count.data_calls;
    count_epoch(BATCH, &a, &other_a); /* 6 steps */
    HPDL_EXPECT(a.steps == STEPS && b.steps == 13);
    HPDL_EXPECT(g_count.data_calls == (p > 1 ? STEPS : 0)); /* one rank: nothing to reduce */
    HPDL_EXPECT(data_b == (p > 1 ? 13 : 0));
    HPDL_EXPECT(g_count.data_elems == (p > 1 ? N_SAMPLES * N_CLASSES : 0));
    HPDL_EXPECT(g_count.max_count == (p > 1 ? BATCH * N_CLASSES : 0));
    HPDL_EXPECT(other_a == other_b && other_a <= 2); /* per epoch, not per step */
    HPDL_EXPECT(a.epoch_bytes == (double)N_SAMPLES * N_CLASSES * sizeof(double));
}

/* ---- bad arguments: every rank gets the error, nothing is written ------------------- */

static int last_rank(void) { return hpdl_mpi_rank() == hpdl_mpi_size() - 1; }

static int untouched(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != 0xab) return 0;
    return 1;
}

MPI_TEST(test_tp_create_bad_arguments_on_one_rank) {
    int widths[3] = {N_IN, 7, N_CLASSES}, other[3] = {N_IN, 8, N_CLASSES}, deep[4] = {N_IN, 7, 6, N_CLASSES};
    hpdl_mpi_tp_config c = small_config(HPDL_ALLREDUCE_MPI), bad;
    hpdl_mlp_f64 m, m8, m3;
    hpdl_mpi_tp_f64 tp;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, 3, widths, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&m8, 3, other, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_f64(&m3, 4, deep, HPDL_ACT_RELU, 7) == HPDL_OK);
    memset(&tp, 0xab, sizeof tp);
    bad = c;
    if (last_rank()) bad.batch = 0;
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, last_rank() ? NULL : &m, N_SAMPLES, &c) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, last_rank() ? -1 : N_SAMPLES, &c) == HPDL_ERR_INVALID);
    bad = c;
    if (last_rank()) bad.l2 = -1;
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    if (hpdl_mpi_size() > 1) { /* valid everywhere, but the ranks disagree */
        HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, last_rank() ? &m8 : &m, N_SAMPLES, &c) == HPDL_ERR_INVALID);
        bad = c;
        if (last_rank()) bad.lr = 0.3;
        HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
        bad = c;
        if (last_rank()) bad.seed = 1234;
        HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &bad) == HPDL_ERR_INVALID);
    }
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m3, N_SAMPLES, &c) == HPDL_ERR_UNSUPPORTED); /* two hidden layers */
    bad = c;
    bad.algo = HPDL_ALLREDUCE_NCCL;
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &bad) == HPDL_ERR_UNSUPPORTED); /* host buffers */
    HPDL_EXPECT(untouched(&tp, sizeof tp));
    hpdl_mlp_destroy_f64(&m);
    hpdl_mlp_destroy_f64(&m8);
    hpdl_mlp_destroy_f64(&m3);
}

MPI_TEST(test_tp_epoch_and_gather_bad_arguments_on_one_rank) {
    static double X[N_SAMPLES * N_IN];
    static int32_t y[N_SAMPLES], bad_y[N_SAMPLES];
    int widths[3] = {N_IN, 7, N_CLASSES}, wrong[3] = {N_IN, 7, N_CLASSES + 1};
    hpdl_mpi_tp_config c = small_config(HPDL_ALLREDUCE_RING);
    hpdl_mlp_f64 m, before, after, out, wrong_out;
    hpdl_mpi_tp_f64 tp;
    hpdl_mpi_tp_stats st;
    make_data(X, y);
    memcpy(bad_y, y, sizeof y);
    bad_y[N_SAMPLES - 1] = N_CLASSES; /* one label out of range */
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, 3, widths, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&before, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&after, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&out, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&wrong_out, 3, wrong, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, &before) == HPDL_OK);
    memset(&st, 0xab, sizeof st);
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, last_rank() ? NULL : X, y, 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, last_rank() ? bad_y : y, 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, y, last_rank() ? -1 : 0, &st) == HPDL_ERR_INVALID);
    if (hpdl_mpi_size() > 1) /* valid, but another rank's batches would differ */
        HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, y, last_rank() ? 1 : 0, &st) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched(&st, sizeof st));
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, &after) == HPDL_OK);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&after, &before) == 0.0); /* no step was taken */
    memset(out.W[0], 0xab, sizeof(double) * N_IN * 7);
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, last_rank() ? &wrong_out : &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, last_rank() ? NULL : &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched(out.W[0], sizeof(double) * N_IN * 7));
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(NULL, X, y, 0, &st) == HPDL_ERR_INVALID); /* no comm: local */
    hpdl_mpi_tp_destroy_f64(&tp);
    hpdl_mpi_tp_destroy_f64(&tp); /* twice is harmless */
    hpdl_mlp_destroy_f64(&m);
    hpdl_mlp_destroy_f64(&before);
    hpdl_mlp_destroy_f64(&after);
    hpdl_mlp_destroy_f64(&out);
    hpdl_mlp_destroy_f64(&wrong_out);
}

/* A NaN pixel (in every row, so the first step sees it) used to train on:
   now every rank stops with HPDL_ERR_NUMERIC before updating its slice. */
MPI_TEST(test_tp_nan_input_stops_every_rank_unchanged) {
    int widths[3] = {N_IN, 7, N_CLASSES}, i;
    hpdl_mpi_tp_config c = small_config(HPDL_ALLREDUCE_MPI);
    hpdl_mlp_f64 m, gathered;
    hpdl_mpi_tp_f64 tp;
    double X[N_SAMPLES * N_IN];
    int32_t y[N_SAMPLES];
    make_data(X, y);
    for (i = 0; i < N_SAMPLES; i++) X[i * N_IN + 3] = NAN;
    HPDL_EXPECT(hpdl_mlp_create_f64(&m, 3, widths, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&gathered, 3, widths, HPDL_ACT_RELU) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_create_f64(&tp, &m, N_SAMPLES, &c) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_tp_epoch_f64(&tp, X, y, 0, NULL) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_mpi_tp_gather_f64(&tp, &gathered) == HPDL_OK);
    HPDL_EXPECT(hpdl_test_mlp_diff_f64(&gathered, &m) == 0.0);
    hpdl_mpi_tp_destroy_f64(&tp);
    hpdl_mlp_destroy_f64(&gathered);
    hpdl_mlp_destroy_f64(&m);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_tp_mpi_equals_serial_hidden7),
        HPDL_TEST(test_tp_ring_equals_serial_hidden10),
        HPDL_TEST(test_tp_sigmoid_equals_serial),
        HPDL_TEST(test_tp_more_ranks_than_hidden_units),
        HPDL_TEST(test_tp_f32_trains_like_serial),
        HPDL_TEST(test_tp_one_allreduce_of_the_logits_per_step),
        HPDL_TEST(test_tp_create_bad_arguments_on_one_rank),
        HPDL_TEST(test_tp_epoch_and_gather_bad_arguments_on_one_rank),
        HPDL_TEST(test_tp_nan_input_stops_every_rank_unchanged),
    };
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
