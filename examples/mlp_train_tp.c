/* mlp_train_tp: tensor-parallel (model-parallel) MLP training on
   Fashion-MNIST over MPI, CPU ranks, with data parallelism beside it.

       make data && make build/examples/mlp_train_tp
       mpirun -np 2 build/examples/mlp_train_tp --hidden 512 --batch 128 --epochs 3

   Each rank owns a slice of the hidden layer (columns of W[0], rows of W[1]);
   every rank reads the same batch; the partial logits, batch x 10, are summed
   by one allreduce per step (hpdl_mpi_tp_<s> in hpdl_mpi.h). After the
   tensor-parallel epochs, the same model from the same initial weights is
   trained with data parallelism at the same global batch (batch/P rows per
   rank) for --dp-epochs epochs, so that the bytes each step allreduces are
   measured side by side.

   Flags (defaults in brackets):
       --data DIR     IDX files [data/fashion-mnist]
       --hidden H     hidden units, one hidden layer [512]
       --batch B      rows per step, the same on every rank [128]   --epochs E [3]
       --algo A       mpi | ring [mpi]      --lr X [0.05]   --l2 X [0]   --seed S [1]
       --dp-epochs N  data-parallel epochs for the comparison (0: none) [1]
       --help, --version
   Output (rank 0): one line per epoch: loss, running train accuracy, test
   accuracy, epoch / compute / communication seconds (slowest rank), bytes
   allreduced per step; then TP against DP. */
#include "hpdl_mpi.h"

#define FASHION_MEAN 0.2860f
#define FASHION_STD 0.3530f

typedef struct options {
    const char *data, *algo;
    int widths[3], epochs, dp_epochs;
    hpdl_mpi_tp_config cfg;
} options;

/* widths[0] is set from the data once it is loaded. Parsed before MPI
   starts, so --help and a bad flag need no mpirun. */
static options parse_args(int argc, char **argv) {
    options o;
    int64_t seed;
    hpdl_cli_option opts[9];
    memset(&o, 0, sizeof o);
    hpdl_mpi_tp_config_default(&o.cfg);
    seed = (int64_t)o.cfg.seed;
    o.data = "data/fashion-mnist";
    o.algo = "mpi";
    o.widths[1] = 512;
    o.widths[2] = 10;
    o.epochs = 3;
    o.dp_epochs = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("hidden", 0, &o.widths[1], 1, 1 << 20, "hidden units, one hidden layer");
    opts[2] = hpdl_cli_int("batch", 0, &o.cfg.batch, 1, 1 << 20, "rows per step, the same on every rank");
    opts[3] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "tensor-parallel epochs");
    opts[4] = hpdl_cli_choice("algo", 0, &o.algo, "mpi|ring", "allreduce of the partial logits");
    opts[5] = hpdl_cli_f64("lr", 0, &o.cfg.lr, 0, DBL_MAX, "learning rate");
    opts[6] = hpdl_cli_f64("l2", 0, &o.cfg.l2, 0, DBL_MAX, "L2 weight decay");
    opts[7] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "random seed");
    opts[8] = hpdl_cli_int("dp-epochs", 0, &o.dp_epochs, 0, 1 << 20, "data-parallel epochs for the comparison (0: none)");
    hpdl_cli_parse(argc, argv, "mlp_train_tp", "Tensor-parallel MLP training over MPI, CPU ranks.", opts, 9);
    o.cfg.seed = (uint64_t)seed;
    o.cfg.algo = !strcmp(o.algo, "ring") ? HPDL_ALLREDUCE_RING : HPDL_ALLREDUCE_MPI;
    return o;
}

/* Stops every rank (they agree on the status) when training diverged. */
static void check_epoch(hpdl_status s, const char *what, int e) {
    if (s != HPDL_ERR_NUMERIC) return;
    if (hpdl_mpi_rank() == 0)
        fprintf(stderr, "mlp_train_tp: %s training diverged in epoch %d (non-finite loss or weights; the last step "
                        "was not applied): try a smaller --lr\n", what, e + 1);
    MPI_Finalize();
    exit(1);
}

static void print_row(const char *what, int e, double loss, double acc, double test_acc, double epoch_s,
                      double compute_s, double comm_s, double bytes) {
    if (hpdl_mpi_rank() != 0) return;
    printf("%-4s %5d %8.4f %9.4f %8.4f %8.2f %9.2f %8.2f %11.0f\n", what, e + 1, loss, acc, test_acc, epoch_s,
           compute_s, comm_s, bytes);
    fflush(stdout);
}

/* Tensor parallelism; returns the bytes allreduced per (full) step. */
static double train_tp(const options *o, const hpdl_mlp_f32 *init, const hpdl_dataset *train,
                       const hpdl_dataset *test) {
    hpdl_mlp_f32 full;
    hpdl_mlp_work_f32 w;
    hpdl_mpi_tp_f32 tp;
    hpdl_mpi_tp_stats st;
    double acc = 0;
    int e, h0, h1;
    memset(&st, 0, sizeof st);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_create_f32(&tp, init, train->n, &o->cfg));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_zero_f32(&full, 3, o->widths, HPDL_ACT_RELU));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_work_create_f32(&w, &full, 1000));
    h0 = tp.shape.h;
    h1 = tp.shape.h;
    HPDL_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &h0, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    HPDL_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &h1, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (hpdl_mpi_rank() == 0)
        printf("tensor parallel: %d..%d of %d hidden units per rank, batch %d on every rank, algo %s, lr %.4g\n", h0,
               h1, o->widths[1], o->cfg.batch, hpdl_allreduce_algo_name(o->cfg.algo), o->cfg.lr);
    for (e = 0; e < o->epochs; e++) {
        hpdl_status s = hpdl_mpi_tp_epoch_f32(&tp, train->images, train->labels, e, &st);
        check_epoch(s, "tensor-parallel", e);
        HPDL_MPI_CHECK_STATUS(s);
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_gather_f32(&tp, &full)); /* for the test accuracy; not part of a step */
        if (hpdl_mpi_rank() == 0)
            HPDL_MPI_CHECK_STATUS(hpdl_mlp_accuracy_f32(&full, &w, test->n, test->images, test->labels, &acc));
        print_row("tp", e, st.loss, st.accuracy, acc, st.epoch_s, st.compute_s, st.comm_s, st.step_bytes);
    }
    hpdl_mpi_tp_destroy_f32(&tp);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&full);
    return st.step_bytes;
}

/* Data parallelism at the same global batch; returns its bytes per step. */
static double train_dp(const options *o, const hpdl_mlp_f32 *init, const hpdl_dataset *train,
                       const hpdl_dataset *test) {
    hpdl_mlp_f32 m;
    hpdl_mlp_work_f32 w;
    hpdl_mpi_dp_f32 dp;
    hpdl_mpi_dp_config c;
    hpdl_mpi_dp_stats st;
    double acc = 0;
    int e, p = hpdl_mpi_size();
    memset(&st, 0, sizeof st);
    hpdl_mpi_dp_config_default(&c);
    c.batch = (o->cfg.batch + p - 1) / p;
    c.algo = o->cfg.algo;
    c.lr = o->cfg.lr;
    c.l2 = o->cfg.l2;
    c.seed = o->cfg.seed;
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_zero_f32(&m, 3, o->widths, HPDL_ACT_RELU));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_copy_f32(&m, init));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_work_create_f32(&w, &m, 1000));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_create_f32(&dp, &m, train->n, &c));
    if (hpdl_mpi_rank() == 0)
        printf("data parallel, same initial weights: batch %d per rank (global %d), algo %s\n", c.batch, c.batch * p,
               hpdl_allreduce_algo_name(c.algo));
    for (e = 0; e < o->dp_epochs; e++) {
        hpdl_status s = hpdl_mpi_dp_epoch_f32(&dp, train->images, train->labels, e, &st);
        check_epoch(s, "data-parallel", e);
        HPDL_MPI_CHECK_STATUS(s);
        if (hpdl_mpi_rank() == 0)
            HPDL_MPI_CHECK_STATUS(hpdl_mlp_accuracy_f32(&m, &w, test->n, test->images, test->labels, &acc));
        print_row("dp", e, st.loss, st.accuracy, acc, st.epoch_s, st.compute_s, st.comm_s, st.grad_bytes);
    }
    hpdl_mpi_dp_destroy_f32(&dp);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&m);
    return st.grad_bytes;
}

int main(int argc, char **argv) {
    options o;
    hpdl_dataset train, test;
    hpdl_mlp_f32 init;
    double tp_bytes, dp_bytes = 0, params;
    o = parse_args(argc, argv);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_init(&argc, &argv));
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(o.data, 1, &train));
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(o.data, 0, &test));
    if (test.channels != train.channels || test.rows != train.rows || test.cols != train.cols) {
        if (hpdl_mpi_rank() == 0)
            fprintf(stderr, "mlp_train_tp: training images are %dx%dx%d but test images %dx%dx%d\n", train.channels,
                    train.rows, train.cols, test.channels, test.rows, test.cols);
        MPI_Finalize();
        return 1;
    }
    o.widths[0] = (int)hpdl_dataset_features(&train); /* the input width comes from the data */
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&train, FASHION_MEAN, FASHION_STD));
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&test, FASHION_MEAN, FASHION_STD));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f32(&init, 3, o.widths, HPDL_ACT_RELU, o.cfg.seed));
    params = (double)(o.widths[0] + 1) * o.widths[1] + (double)(o.widths[1] + 1) * o.widths[2];
    if (hpdl_mpi_rank() == 0) {
        printf("mlp_train_tp: %d rank(s), MLP %d-%d-%d (%.0f parameters), f32\n", hpdl_mpi_size(), o.widths[0],
               o.widths[1], o.widths[2], params);
        printf("%-4s %5s %8s %9s %8s %8s %9s %8s %11s\n", "", "epoch", "loss", "train_acc", "test_acc", "epoch_s",
               "compute_s", "comm_s", "bytes/step");
    }
    tp_bytes = train_tp(&o, &init, &train, &test);
    if (o.dp_epochs > 0) dp_bytes = train_dp(&o, &init, &train, &test);
    if (hpdl_mpi_rank() == 0) {
        printf("bytes allreduced per step: TP %.0f (batch %d x %d classes x 4 B)", tp_bytes, o.cfg.batch, o.widths[2]);
        if (dp_bytes > 0) printf(", DP %.0f (%.0f parameters x 4 B): DP/TP = %.1f", dp_bytes, params, dp_bytes / tp_bytes);
        printf("\n");
    }
    hpdl_mlp_destroy_f32(&init);
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_finalize());
    return 0;
}
