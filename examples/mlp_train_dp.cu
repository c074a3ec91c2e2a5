/* mlp_train_dp: data-parallel MLP training on Fashion-MNIST over MPI, one GPU
   per rank (or CPU ranks when no GPU is found).

       make data && make build/examples/mlp_train_dp
       mpirun -np 2 build/examples/mlp_train_dp --hidden 512 --batch 128 --epochs 5 --algo nccl
       mpirun -np 2 build/examples/mlp_train_dp --batch 2048 --algo bucket --lr-scale --warmup 2

   Every rank holds the model; rank 0's initial weights are broadcast; each
   epoch is a fresh permutation keyed by (seed, epoch), each global batch of
   P*b rows split over the ranks; gradients are summed with the chosen
   algorithm, and every rank takes the same SGD step (hpdl_mpi.h).

   Flags (defaults in brackets):
       --data DIR         IDX files [data/fashion-mnist]
       --hidden A[,B...]  hidden layer widths [512]
       --batch B          rows per rank per step [128]     --epochs E  [5]
       --algo A           nccl | mpi | ring | ipc | auto | bucket (ipc: the NVLink one-shot
                          allreduce through CUDA IPC, GPUs of one node; auto: IPC for small
                          messages, else NCCL; bucket: NCCL buckets started during
                          backward on GPUs, MPI_Iallreduce buckets on CPU ranks) [nccl on GPUs, mpi on CPUs]
       --overlap          bucketed reduction with the chosen --algo
       --bucket-kb K      bucket size [1024]       --pieces K  first layer's dW in K blocks (overlap) [4]
       --lr X             reference learning rate [0.05]     --l2 X  [0]
       --lr-scale         linear scaling: lr * P * B / ref   --lr-ref-batch R  [128]
       --warmup E         gradual warm-up over E epochs (Goyal et al.) [0]
       --precision P      f32 | f64 [f32]          --seed S [1]   --no-check (skip argument agreement)
       --help, --version
   Output (rank 0): the roofline inputs (P_flops, P_pci, P_mpi), then one line per epoch:
       epoch, loss, train acc, test acc, epoch s, compute s, comm s, busbw GB/s, lr. */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL
#endif
#endif
#include "hpdl_mpi.h"

#define FASHION_MEAN 0.2860f
#define FASHION_STD 0.3530f

typedef struct options {
    const char *data, *algo, *precision;
    const char *hidden; /* "512" or "1024,256": hidden widths */
    int widths[HPDL_MLP_MAX_LAYERS + 1], n_widths, epochs, check;
    hpdl_mpi_dp_config cfg;
} options;

static void set_algo(options *o, int gpu) {
    const char *a = o->algo;
    if (!a) a = gpu >= 0 ? "nccl" : "mpi";
    if (!strcmp(a, "bucket")) {
        o->cfg.overlap = 1;
        o->cfg.algo = gpu >= 0 ? HPDL_ALLREDUCE_NCCL : HPDL_ALLREDUCE_MPI;
    } else if (!strcmp(a, "nccl")) o->cfg.algo = HPDL_ALLREDUCE_NCCL;
    else if (!strcmp(a, "mpi")) o->cfg.algo = HPDL_ALLREDUCE_MPI;
    else if (!strcmp(a, "ring")) o->cfg.algo = HPDL_ALLREDUCE_RING;
    else if (!strcmp(a, "ipc")) o->cfg.algo = HPDL_ALLREDUCE_IPC_ONESHOT; /* GPUs of one node */
    else o->cfg.algo = HPDL_ALLREDUCE_AUTO; /* "auto": --algo is one of the choices */
}

/* Parsed before MPI starts, so --help and a bad flag need no mpirun. */
static options parse_args(int argc, char **argv) {
    options o;
    int kb, no_check = 0, n = 0;
    int64_t seed;
    hpdl_cli_option opts[18];
    memset(&o, 0, sizeof o);
    hpdl_mpi_dp_config_default(&o.cfg);
    seed = (int64_t)o.cfg.seed;
    kb = (int)((o.cfg.bucket_bytes ? o.cfg.bucket_bytes : HPDL_MPI_DP_BUCKET_BYTES) >> 10);
    o.data = "data/fashion-mnist";
    o.precision = "f32";
    o.hidden = "512";
    o.epochs = 5;
    o.cfg.batch_ref = 128;
    o.cfg.first_layer_pieces = 4;
    opts[n++] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[n++] = hpdl_cli_string("hidden", 0, &o.hidden, "A[,B...]", "hidden layer widths");
    opts[n++] = hpdl_cli_int("batch", 0, &o.cfg.batch, 1, 1 << 20, "rows per rank per step");
    opts[n++] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "epochs");
    opts[n++] = hpdl_cli_choice("algo", 0, &o.algo, "nccl|mpi|ring|ipc|auto|bucket",
                                "allreduce (none: nccl on GPUs, mpi on CPUs)");
    opts[n++] = hpdl_cli_flag("overlap", 0, &o.cfg.overlap, "bucketed reduction with the chosen --algo");
    opts[n++] = hpdl_cli_int("bucket-kb", 0, &kb, 1, 1 << 20, "bucket size in KiB");
    opts[n++] = hpdl_cli_int("pieces", 0, &o.cfg.first_layer_pieces, 1, 1 << 10, "first layer's dW in K blocks (overlap)");
    opts[n++] = hpdl_cli_f64("lr", 0, &o.cfg.lr, 0, DBL_MAX, "reference learning rate");
    opts[n++] = hpdl_cli_f64("l2", 0, &o.cfg.l2, 0, DBL_MAX, "L2 weight decay");
    opts[n++] = hpdl_cli_flag("lr-scale", 0, &o.cfg.lr_scale, "linear scaling: lr * P * B / ref");
    opts[n++] = hpdl_cli_int("lr-ref-batch", 0, &o.cfg.batch_ref, 0, 1 << 20, "reference batch of --lr-scale");
    opts[n++] = hpdl_cli_f64("warmup", 0, &o.cfg.warmup_epochs, 0, 1 << 20, "gradual warm-up over E epochs");
    opts[n++] = hpdl_cli_choice("precision", 0, &o.precision, "f32|f64", "element type");
    opts[n++] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "random seed");
    opts[n++] = hpdl_cli_flag("no-check", 0, &no_check, "skip the check that every rank got the same flags");
    hpdl_cli_parse(argc, argv, "mlp_train_dp", "Data-parallel MLP training over MPI, one GPU per rank.", opts, n);
    o.cfg.seed = (uint64_t)seed;
    o.cfg.bucket_bytes = (size_t)kb << 10;
    o.check = !no_check;
    /* the list is checked here; main parses it again with the data's input width */
    if (hpdl_mlp_parse_widths(o.hidden, 1, 10, o.widths, &o.n_widths) != HPDL_OK) {
        fprintf(stderr, "mlp_train_dp: --hidden: '%s' is not a list of widths like 512 or 1024,256\n", o.hidden);
        exit(2);
    }
    return o;
}

/* GEMM FLOPs of one sample's step: per layer 2 forward and 2 for dW, 2
   more for the gradient of its input except the first layer's (not computed). */
static double flops_per_sample(const int *w, int n) {
    double f = 0;
    int l;
    for (l = 0; l + 1 < n; l++) f += (l == 0 ? 4.0 : 6.0) * w[l] * w[l + 1];
    return f;
}

static void print_header(const options *o, int gpu, int64_t params, const hpdl_mpi_dp_roofline *r) {
    double ai = flops_per_sample(o->widths, o->n_widths) * o->cfg.batch / (4.0 * params), att = 0;
    int l;
    if (hpdl_mpi_rank() != 0) return;
    printf("mlp_train_dp: %d rank(s) on %s, MLP %d", hpdl_mpi_size(), gpu >= 0 ? "GPUs" : "CPUs", o->widths[0]);
    for (l = 1; l < o->n_widths; l++) printf("-%d", o->widths[l]);
    printf(", %s, batch %d/rank (global %d), algo %s%s, lr %.4g%s, warm-up %.3g epochs\n", o->precision, o->cfg.batch,
           o->cfg.batch * hpdl_mpi_size(), hpdl_allreduce_algo_name(o->cfg.algo), o->cfg.overlap ? " + buckets" : "",
           o->cfg.lr, o->cfg.lr_scale ? " (linear scaling)" : "", o->cfg.warmup_epochs);
    printf("roofline inputs: P_flops %.2f TFLOP/s (GEMM), P_pci %.2f GB/s (H2D), P_mpi %.2f GB/s busbw "
           "(%.2f algbw) for %.2f MB of gradients\n",
           r->p_flops * 1e-12, r->p_pci * 1e-9, r->p_mpi * 1e-9, r->p_mpi_algbw * 1e-9, 4e-6 * params);
    if (r->p_pci > 0 && r->p_mpi > 0 && hpdl_roofline_combined(ai, r->p_flops, r->p_pci, r->p_mpi, &att) == HPDL_OK)
        printf("combined roofline at %.1f FLOP per gradient byte: %.2f TFLOP/s attainable\n", ai, att * 1e-12);
    printf("%5s %8s %9s %8s %9s %9s %9s %9s %8s\n", "epoch", "loss", "train_acc", "test_acc", "epoch_s", "compute_s",
           "comm_s", "busbw", "lr");
}

static void print_epoch(int e, const hpdl_mpi_dp_stats *st, double test_acc) {
    if (hpdl_mpi_rank() != 0) return;
    printf("%5d %8.4f %9.4f %8.4f %9.4f %9.4f %9.4f %8.1f %8.4g\n", e + 1, st->loss, st->accuracy, test_acc, st->epoch_s,
           st->compute_s, st->comm_s, st->busbw * 1e-9, st->lr_last);
    fflush(stdout);
}

/* GPU ranks, for one precision. */
#define DEFINE_TRAIN_GPU(SUFFIX, T)                                                                            \
    static void train_gpu_##SUFFIX(const options *o, int gpu, const hpdl_dataset *train, const hpdl_dataset *test) { \
        hpdl_mlp_##SUFFIX m;                                                                                   \
        hpdl_cuda_mlp_##SUFFIX g;                                                                              \
        hpdl_cuda_dataset dtrain, dtest;                                                                       \
        hpdl_mpi_dp_cuda_##SUFFIX dp;                                                                          \
        hpdl_mpi_dp_roofline r;                                                                                \
        hpdl_mpi_dp_stats st;                                                                                  \
        hpdl_cuda_mlp_stats ev;                                                                                \
        int e;                                                                                                 \
        memset(&st, 0, sizeof st);                                                                             \
        HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_##SUFFIX(&m, o->n_widths, o->widths, HPDL_ACT_RELU, o->cfg.seed));            \
        HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_create_##SUFFIX(&g, &m, o->cfg.batch));                                         \
        HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_create(&dtrain, train, HPDL_DATA_RESIDENT));                                \
        HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_create(&dtest, test, HPDL_DATA_RESIDENT));                                  \
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_roofline_cuda(g.n_params, o->cfg.algo, o->cfg.comm, &r));                         \
        print_header(o, gpu, g.n_params, &r);                                                                  \
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_create_##SUFFIX(&dp, &g, train->n, &o->cfg));                                \
        for (e = 0; e < o->epochs; e++) {                                                                      \
            HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_epoch_##SUFFIX(&dp, &g, &dtrain, e, &st));                               \
            ev.accuracy = 0;                                                                                   \
            if (hpdl_mpi_rank() == 0) HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_evaluate_##SUFFIX(&g, &dtest, &ev));              \
            print_epoch(e, &st, ev.accuracy);                                                                  \
        }                                                                                                      \
        hpdl_mpi_dp_cuda_destroy_##SUFFIX(&dp);                                                                \
        hpdl_cuda_dataset_destroy(&dtrain);                                                                    \
        hpdl_cuda_dataset_destroy(&dtest);                                                                     \
        hpdl_cuda_mlp_destroy_##SUFFIX(&g);                                                                    \
        hpdl_mlp_destroy_##SUFFIX(&m);                                                                         \
    }
DEFINE_TRAIN_GPU(f32, float)
DEFINE_TRAIN_GPU(f64, double)

/* CPU ranks (f32). */
static void train_cpu(const options *o, const hpdl_dataset *train, const hpdl_dataset *test) {
    hpdl_mlp_f32 m;
    hpdl_mlp_work_f32 w;
    hpdl_mpi_dp_f32 dp;
    hpdl_mpi_dp_roofline r;
    hpdl_mpi_dp_stats st;
    double acc = 0;
    int e;
    memset(&st, 0, sizeof st);
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f32(&m, o->n_widths, o->widths, HPDL_ACT_RELU, o->cfg.seed));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_work_create_f32(&w, &m, 1000));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_create_f32(&dp, &m, train->n, &o->cfg));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_roofline_cpu(dp.n_grad, o->cfg.algo, o->cfg.comm, &r));
    print_header(o, -1, dp.n_grad, &r);
    for (e = 0; e < o->epochs; e++) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_epoch_f32(&dp, train->images, train->labels, e, &st));
        if (hpdl_mpi_rank() == 0) HPDL_MPI_CHECK_STATUS(hpdl_mlp_accuracy_f32(&m, &w, test->n, test->images, test->labels, &acc));
        print_epoch(e, &st, acc);
    }
    hpdl_mpi_dp_destroy_f32(&dp);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&m);
}

int main(int argc, char **argv) {
    options o;
    hpdl_dataset train, test;
    int gpu;
    o = parse_args(argc, argv);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_init(&argc, &argv));
    gpu = hpdl_mpi_select_gpu();
    set_algo(&o, gpu);
    hpdl_mpi_set_checks(o.check);
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(o.data, 1, &train));
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(o.data, 0, &test));
    if (test.channels != train.channels || test.rows != train.rows || test.cols != train.cols ||
        hpdl_mlp_parse_widths(o.hidden, (int)hpdl_dataset_features(&train), 10, o.widths, &o.n_widths) != HPDL_OK) {
        if (hpdl_mpi_rank() == 0)
            fprintf(stderr, "mlp_train_dp: training images %dx%dx%d, test images %dx%dx%d: they must match\n",
                    train.channels, train.rows, train.cols, test.channels, test.rows, test.cols);
        MPI_Finalize();
        return 1;
    }
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&train, FASHION_MEAN, FASHION_STD));
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&test, FASHION_MEAN, FASHION_STD));
    if (gpu < 0) {
        if (strcmp(o.precision, "f32") && hpdl_mpi_rank() == 0) fprintf(stderr, "CPU ranks train in f32\n");
        train_cpu(&o, &train, &test);
    } else if (!strcmp(o.precision, "f64")) {
        train_gpu_f64(&o, gpu, &train, &test);
    } else {
        train_gpu_f32(&o, gpu, &train, &test);
    }
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_finalize());
    return 0;
}
