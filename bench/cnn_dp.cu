/* bench/cnn_dp - data-parallel CNN training, one GPU per rank, against
   PyTorch DDP in the same run: weak scaling of the course's small CNN and
   ResNet-18 (CIFAR form) on 50,000 synthetic 3x32x32 images resident on
   every GPU, batch B per GPU (--batch, default 32 and 128), 1 GPU against
   all P GPUs of the run.

   hpdl side: hpdl_mpi_cnn over the GPU backend (hpdl_cuda_cnn, f32, NHWC,
   eager steps), gradients averaged in NCCL buckets of --bucket-mb (25, as
   DDP) started from the backward hook while backward goes on, batch-norm
   statistics rank 0's, broadcast before each step (--bn broadcast, DDP's
   broadcast_buffers=True) or per rank (--bn local). SGD momentum 0.9,
   weight decay 5e-4, lr 0.01, as bench/cnn.
   Anchor: bench/pytorch/cnn_ddp.py, the same networks and steps under
   DistributedDataParallel, started by rank 0 with
   `python3 -m torch.distributed.run --standalone --nproc_per_node N` for
   N = 1 and P while the other ranks sleep; skipped with a message without
   torch (--no-torch skips it too).

   Per network and batch, each side measures (wall clock of whole steps,
   device synchronised before and after, slowest rank):
       T1       ms per step on 1 GPU (rank 0 alone; the same driver)
       TP       ms per step on P GPUs, each its own B images
       compute  ms per step on the P GPUs at once without any reduction
                (the bare model): comm = TP - compute is the time the step
                waited for communication
       alone    ms of the gradient's reduction with nothing else running
                (hpdl: every bucket; PyTorch: one all_reduce of all of it)
       E = T1 / TP  weak-scaling efficiency per step
   and an epoch: 50,000 images split over the ranks, ceil(50000/(P B))
   steps of TP. The small CNN times whole epochs; ResNet-18 --steps steps
   (30), scaled to the epoch. Every measurement follows --warmup steps (10).

   Validation first (else nothing is timed): the small CNN in f64, 3 steps of
   8 images per rank against one run on the union of the ranks' batches
   (every parameter tensor within 1e-11 relative Frobenius difference);
   ResNet-18 in f32 as timed (4 images per rank): the first step's averaged
   gradient against the mean of the ranks' own gradients reduced on the
   host (1e-3: two runs may get different cuDNN algorithms, and a tensor
   left out of the buckets keeps its own rank's gradient, off by order 1),
   the loss against their mean loss, after 3 steps the parameters identical
   on every rank, and rank 0's statistics on every rank after a broadcast.

   Output: a table; <--output DIR, else HPDL_RESULTS, else .>/cnn_dp.csv
   (headlines per network and batch on P GPUs: epoch ms and E against
   PyTorch DDP's, per-GPU images/s against hpdl's 1 GPU: ratio = E) and
   cnn_dp_all.csv (every measurement of both sides).

   mpirun -np 2 build/bench/cnn_dp [small|resnet18] [--batch 32,128] [--steps N]
       [--warmup N] [--bn broadcast|local] [--bucket-mb MB] [--conv cudnn|auto]
       [--no-torch] [--output DIR] [--help] [--version]
   Started alone on a machine with several GPUs, it re-runs itself under
   `mpirun -np <GPUs>`. */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL
#endif
#endif
#include "hpdl_mpi.h"

#include <unistd.h>
#include <vector>

#define N_IMAGES 50000
#define MAX_BATCHES 4
#define TORCH_SCRIPT "bench/pytorch/cnn_ddp.py"

static const char *net_names[2] = {"small", "resnet18"};
static int g_rank, g_size;

typedef struct settings {
    const char *only;     /* one network, or NULL for both */
    int batches[MAX_BATCHES], n_batches;
    int steps, warmup, no_torch, bucket_mb;
    hpdl_mpi_bn_mode bn;
    hpdl_conv_algo conv;
} settings;

/* One side's figures for one network and batch: [0] 1 GPU, [1] P GPUs. */
typedef struct side {
    double step_ms[2], compute_ms[2], alone_ms[2];
} side;

typedef struct row {
    side hpdl, torch;
    int buckets;
    double grad_mb;
} row;

static hpdl_status make_net(int net, hpdl_shape shape, hpdl_cnn *out) {
    return net == 0 ? hpdl_cnn_small(out, shape, 10, HPDL_NHWC) : hpdl_cnn_resnet18(out, shape, 10, HPDL_NHWC);
}

static int64_t steps_per_epoch(int p, int batch) { return (N_IMAGES + (int64_t)p * batch - 1) / ((int64_t)p * batch); }

/* Where rank `rank` of p reads its `batch` images at step s: consecutive
   global batches, wrapping round the resident set. */
static int64_t batch_first(int64_t s, int rank, int p, int batch, int64_t n) {
    return ((s * p + rank) * batch) % (n - batch + 1);
}

/* A run of net on this rank's GPU (its own stream, which hpdl_mpi uses
   from now on) from hpdl_cnn_init's weights for seed. */
template <typename T>
static void make_run(const hpdl_cnn *net, hpdl_conv_algo conv, int batch, uint64_t seed, hpdl_cuda_cnn *g,
                     hpdl_cnn_run *r) {
    std::vector<double> params(net->param_count), state(net->state_count + 1);
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 5e-4);
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_init(net, seed, params.data(), state.data()));
    HPDL_MPI_CHECK_STATUS(sizeof(T) == 4 ? hpdl_cuda_cnn_create_f32(g, conv, 0) : hpdl_cuda_cnn_create_f64(g, conv, 0));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_run_create(r, net, &g->be, batch, &opt));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_set_params(r, params.data(), state.data()));
    hpdl_mpi_set_stream(g->stream);
}

/* Host data (the same on every rank) copied to this GPU. */
template <typename T> static T *to_device(const std::vector<T> &host) {
    T *d = NULL;
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_alloc((void **)&d, host.size() * sizeof(T)));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_to_device(d, host.data(), host.size() * sizeof(T), 0));
    return d;
}

template <typename T> static void random_images(int64_t n, int64_t features, uint64_t seed, std::vector<T> *X,
                                                std::vector<int32_t> *labels) {
    hpdl_rng rng;
    hpdl_rng_seed(&rng, seed);
    X->resize((size_t)(n * features));
    labels->resize((size_t)n);
    for (T &v : *X) v = (T)hpdl_rng_normal(&rng);
    for (int32_t &l : *labels) l = (int32_t)hpdl_rng_below(&rng, 10);
}

/* n f32 values of a run's memory (gradients, parameters, statistics) as doubles. */
static std::vector<double> download(const hpdl_cnn_run *r, const void *src, int64_t n) {
    std::vector<float> f((size_t)n);
    std::vector<double> d(f.size());
    HPDL_MPI_CHECK_STATUS(r->be->download(r->be->ctx, f.data(), src, f.size() * sizeof(float)));
    for (size_t i = 0; i < f.size(); i++) d[i] = f[i];
    return d;
}

/* Largest |x - rank 0's x|, the same on every rank. */
static double spread_from_rank0(std::vector<double> x) {
    std::vector<double> first(x);
    double local = 0, worst = 0;
    MPI_Bcast(first.data(), (int)first.size(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (size_t i = 0; i < x.size(); i++) local = fmax(local, fabs(x[i] - first[i]));
    MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static void check(int ok, const char *what) {
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) return;
    if (g_rank == 0) fprintf(stderr, "cnn_dp: validation failed (%s): nothing timed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- validation --------------------------------------------------------------- */

/* Small CNN, f64: P ranks of `local` images each = one run on all P·local. */
static double union_difference(int steps, int local) {
    hpdl_cnn net;
    hpdl_cuda_cnn g_dp, g_one;
    hpdl_cnn_run dp, one;
    hpdl_mpi_cnn d;
    std::vector<double> X;
    std::vector<int32_t> labels;
    int64_t features = 3 * 32 * 32, mine = (int64_t)g_rank * local;
    double worst = 0, diff;
    HPDL_MPI_CHECK_STATUS(make_net(0, hpdl_shape_make(3, 32, 32), &net));
    random_images<double>((int64_t)g_size * local, features, 11, &X, &labels);
    double *dX = to_device(X);
    int32_t *dlabels = to_device(labels);
    make_run<double>(&net, HPDL_CONV_AUTO, g_size * local, 1, &g_one, &one);
    make_run<double>(&net, HPDL_CONV_AUTO, local, 1 + (uint64_t)g_rank, &g_dp, &dp); /* create takes rank 0's */
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_create(&d, &dp, HPDL_ALLREDUCE_NCCL, 4096, HPDL_MPI_BN_LOCAL, MPI_COMM_WORLD));
    for (int s = 0; s < steps; s++) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_train_step(&d, local, dX + mine * features, dlabels + mine));
        HPDL_MPI_CHECK_STATUS(hpdl_cnn_train_step(&one, g_size * local, dX, dlabels));
    }
    std::vector<double> got(net.param_count), want(net.param_count);
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_get_params(&dp, got.data(), NULL));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_get_params(&one, want.data(), NULL));
    diff = hpdl_cnn_param_difference(&net, got.data(), want.data(), NULL);
    MPI_Allreduce(&diff, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&dp);
    hpdl_cnn_run_destroy(&one);
    hpdl_cuda_cnn_destroy(&g_dp);
    hpdl_cuda_cnn_destroy(&g_one);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dlabels);
    return worst;
}

/* ResNet-18, f32 as timed: the averaged gradient, loss, replicas and statistics. */
static void resnet_checks(const settings *st, int local, double *grad_diff, double *loss_diff, double *param_spread,
                          double *state_spread) {
    hpdl_cnn net;
    hpdl_cuda_cnn g_dp, g_ref;
    hpdl_cnn_run dp, ref;
    hpdl_mpi_cnn d;
    std::vector<float> X;
    std::vector<int32_t> labels;
    int64_t features = 3 * 32 * 32, mine = (int64_t)g_rank * local;
    double loss_dp = 0, loss_ref = 0, mean_loss = 0, diff = 0;
    HPDL_MPI_CHECK_STATUS(make_net(1, hpdl_shape_make(3, 32, 32), &net));
    random_images<float>((int64_t)g_size * local, features, 12, &X, &labels);
    float *dX = to_device(X);
    int32_t *dlabels = to_device(labels);
    /* the reference: this rank's own gradient from rank 0's weights */
    make_run<float>(&net, st->conv, local, 1, &g_ref, &ref);
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_forward(&ref, local, dX + mine * features, 1));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_backward(&ref, local, dX + mine * features, dlabels + mine));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_loss(&ref, &loss_ref));
    std::vector<double> want = download(&ref, ref.grads, net.param_count);
    MPI_Allreduce(MPI_IN_PLACE, want.data(), (int)want.size(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (double &v : want) v /= g_size;
    MPI_Allreduce(&loss_ref, &mean_loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    mean_loss /= g_size;
    make_run<float>(&net, st->conv, local, 1 + (uint64_t)g_rank, &g_dp, &dp);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_create(&d, &dp, HPDL_ALLREDUCE_NCCL, (size_t)st->bucket_mb << 20, st->bn,
                                              MPI_COMM_WORLD));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_train_step(&d, local, dX + mine * features, dlabels + mine));
    HPDL_MPI_CHECK_STATUS(hpdl_cnn_loss(&dp, &loss_dp));
    diff = hpdl_cnn_param_difference(&net, download(&dp, dp.grads, net.param_count).data(), want.data(), NULL);
    MPI_Allreduce(&diff, grad_diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    diff = fabs(loss_dp - mean_loss) / fmax(fabs(mean_loss), 1e-30);
    MPI_Allreduce(&diff, loss_diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int s = 0; s < 2; s++)
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_train_step(&d, local, dX + mine * features, dlabels + mine));
    *param_spread = spread_from_rank0(download(&dp, dp.params, net.param_count));
    HPDL_MPI_CHECK_STATUS(hpdl__mpi_cnn_share(&d, 0)); /* what the next step starts from */
    *state_spread = spread_from_rank0(download(&dp, dp.state, net.state_count));
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&dp);
    hpdl_cnn_run_destroy(&ref);
    hpdl_cuda_cnn_destroy(&g_dp);
    hpdl_cuda_cnn_destroy(&g_ref);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dlabels);
}

static void validate_or_stop(const settings *st) {
    double u = union_difference(3, 8), grad = 0, loss = 0, params = 0, state = 0;
    resnet_checks(st, 4, &grad, &loss, &params, &state);
    if (g_rank == 0)
        printf("check (%d ranks): small CNN f64, 3 steps of 8 images per rank vs one run on the union: %.2g (limit "
               "1e-11)\n       ResNet-18 f32, averaged gradient vs the ranks' own averaged on the host: %.2g (limit "
               "1e-3), loss %.2g (1e-5); after 3 steps parameters spread %.2g, statistics after a broadcast %.2g "
               "(both 0)\n", g_size, u, grad, loss, params, state);
    check(u <= 1e-11, "union batch");
    check(grad <= 1e-3 && loss <= 1e-5, "ResNet-18 averaged gradient");
    check(params == 0 && state == 0, "replicas");
}

/* ---- timing -------------------------------------------------------------------- */

/* ms per call of step(k), k = 0 .. count-1, slowest rank of comm; the
   device and the ranks synchronised before, the device after. */
template <typename F> static double time_steps(MPI_Comm comm, cudaStream_t stream, int64_t count, F step) {
    double t0, ms, worst = 0;
    HPDL_CUDA_CHECK(cudaStreamSynchronize(stream));
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    for (int64_t k = 0; k < count; k++) step(k);
    HPDL_CUDA_CHECK(cudaStreamSynchronize(stream));
    ms = 1e3 * (MPI_Wtime() - t0) / (double)count;
    MPI_Allreduce(&ms, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    return worst;
}

/* One network and batch on the ranks of comm (the others return at once):
   plain steps (compute), then data-parallel steps, then the buckets alone.
   Index 1 of the results for the whole world, 0 for rank 0 alone. */
static void measure(const settings *st, int net_index, int batch, MPI_Comm comm, const float *dX,
                    const int32_t *dlabels, row *out) {
    hpdl_cnn net;
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    hpdl_mpi_cnn d;
    int rank = 0, p = 1, k;
    int64_t features = 3 * 32 * 32, steps;
    if (comm == MPI_COMM_NULL) return;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    k = p > 1 || g_size == 1;
    steps = net_index == 0 || st->steps == 0 ? steps_per_epoch(p, batch) : st->steps;
    HPDL_MPI_CHECK_STATUS(make_net(net_index, hpdl_shape_make(3, 32, 32), &net));
    make_run<float>(&net, st->conv, batch, 1, &g, &r);
    auto plain = [&](int64_t s) {
        int64_t first = batch_first(s, rank, p, batch, N_IMAGES);
        HPDL_MPI_CHECK_STATUS(hpdl_cnn_train_step(&r, batch, dX + first * features, dlabels + first));
    };
    auto parallel = [&](int64_t s) {
        int64_t first = batch_first(s, rank, p, batch, N_IMAGES);
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_train_step(&d, batch, dX + first * features, dlabels + first));
    };
    time_steps(comm, g.stream, st->warmup, plain);
    out->hpdl.compute_ms[k] = time_steps(comm, g.stream, steps, plain);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_cnn_create(&d, &r, HPDL_ALLREDUCE_NCCL, (size_t)st->bucket_mb << 20, st->bn, comm));
    time_steps(comm, g.stream, st->warmup, parallel);
    out->hpdl.step_ms[k] = time_steps(comm, g.stream, steps, parallel);
    out->hpdl.alone_ms[k] = time_steps(comm, g.stream, 20, [&](int64_t) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_bucketer_wait(&d.buckets)); /* every bucket, nothing else */
    });
    out->buckets = d.buckets.nbuckets;
    out->grad_mb = 4e-6 * (double)net.param_count;
    hpdl_mpi_cnn_destroy(&d);
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
}

/* ---- PyTorch DDP anchor --------------------------------------------------------------- */

/* Rank 0 runs the script on `ranks` GPUs and files its lines into rows. */
static void run_torch(const settings *st, int ranks, row rows[2][MAX_BATCHES]) {
    char cmd[1024], line[1024], batches[64] = "";
    FILE *pipe;
    for (int b = 0; b < st->n_batches; b++)
        snprintf(batches + strlen(batches), sizeof batches - strlen(batches), "%s%d", b ? "," : "", st->batches[b]);
    snprintf(cmd, sizeof cmd,
             "python3 -m torch.distributed.run --standalone --nproc_per_node %d " TORCH_SCRIPT
             " --net %s --batch %s --steps %d --warmup %d --bn %s --bucket-mb %d 2>&1",
             ranks, st->only ? st->only : "small,resnet18", batches, st->steps, st->warmup,
             st->bn == HPDL_MPI_BN_BROADCAST ? "broadcast" : "local", st->bucket_mb);
    printf("pytorch (%d GPU%s): %s\n", ranks, ranks > 1 ? "s" : "", cmd);
    fflush(stdout);
    if (!(pipe = popen(cmd, "r"))) { printf("pytorch: cannot run python3 (%s)\n", strerror(errno)); return; }
    while (fgets(line, sizeof line, pipe)) {
        const char *at = strstr(line, "pytorch_ddp net ");
        char name[32];
        int batch, n;
        double step, compute, alone;
        if (at && sscanf(at, "pytorch_ddp net %31s batch %d ranks %d step_ms %lf compute_ms %lf alone_ms %lf", name,
                         &batch, &n, &step, &compute, &alone) == 6 && n == ranks) {
            int k = ranks > 1 || g_size == 1;
            for (int i = 0; i < 2; i++)
                for (int b = 0; b < st->n_batches; b++)
                    if (!strcmp(name, net_names[i]) && batch == st->batches[b]) {
                        rows[i][b].torch.step_ms[k] = step;
                        rows[i][b].torch.compute_ms[k] = compute;
                        rows[i][b].torch.alone_ms[k] = alone;
                    }
        } else {
            printf("  %s", line); /* the script's own words: versions, or why it skipped */
        }
    }
    pclose(pipe);
}

/* The other ranks wait without spinning a core the script could use. */
static void sleepy_barrier(void) {
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) usleep(5000);
    }
}

/* ---- output ---------------------------------------------------------------------- */

/* One GPU in all: its figures are both columns. */
static void single_gpu(side *s) {
    s->step_ms[0] = s->step_ms[1];
    s->compute_ms[0] = s->compute_ms[1];
    s->alone_ms[0] = s->alone_ms[1];
}

static double eff(const side *s) { return s->step_ms[1] > 0 ? s->step_ms[0] / s->step_ms[1] : 0; }
static double epoch_ms(const side *s, int k, int batch) {
    return s->step_ms[k] * (double)steps_per_epoch(k ? g_size : 1, batch);
}

static void print_table(const settings *st, row rows[2][MAX_BATCHES]) {
    printf("\nWeak scaling, %d GPUs, ms per step (B images per GPU); comm = TP - compute (waited for); alone = "
           "the gradient's reduction with nothing else; E = T1/TP\n", g_size);
    printf("%-8s %4s | %-5s %8s %8s %8s %7s %7s %6s | %10s %10s\n", "net", "B", "side", "T1", "TP", "compute",
           "comm", "alone", "E", "epoch1 ms", "epochP ms");
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < st->n_batches; b++) {
            const row *r = &rows[i][b];
            if (r->hpdl.step_ms[1] == 0) continue; /* not measured in this run */
            for (int t = 0; t < 2; t++) {
                const side *s = t ? &r->torch : &r->hpdl;
                if (t && s->step_ms[1] == 0) continue;
                printf("%-8s %4d | %-5s %8.3f %8.3f %8.3f %7.3f %7.3f %6.3f | %10.1f %10.1f\n", net_names[i],
                       st->batches[b], t ? "torch" : "hpdl", s->step_ms[0], s->step_ms[1], s->compute_ms[1],
                       s->step_ms[1] - s->compute_ms[1], s->alone_ms[1], eff(s), epoch_ms(s, 0, st->batches[b]),
                       epoch_ms(s, 1, st->batches[b]));
            }
            if (r->torch.step_ms[1] > 0)
                printf("%-8s %4d | hpdl/torch: step time x%.2f (P GPUs), E %.3f vs %.3f; gradient %.1f MB in %d "
                       "bucket%s\n", net_names[i], st->batches[b], r->torch.step_ms[1] / r->hpdl.step_ms[1],
                       eff(&r->hpdl), eff(&r->torch), r->grad_mb, r->buckets, r->buckets == 1 ? "" : "s");
        }
    printf("(x = PyTorch DDP step time / hpdl's, above 1: hpdl faster; epochs: ceil(50000/(P B)) steps)\n");
}

static void write_csvs(const settings *st, row rows[2][MAX_BATCHES]) {
    FILE *f = hpdl_csv_open(".", "cnn_dp");
    FILE *all = hpdl_csv_open_with_header(".", "cnn_dp_all",
                                          "impl,net,batch_per_gpu,gpus,steps_per_epoch,step_ms,compute_ms,comm_ms,"
                                          "comm_alone_ms,epoch_ms,weak_eff");
    char metric[128], anchor[64];
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < st->n_batches; b++) {
            const row *r = &rows[i][b];
            int B = st->batches[b];
            if (r->hpdl.step_ms[1] == 0) continue;
            snprintf(metric, sizeof metric, "epoch_ms_%s_b%d_%dgpu", net_names[i], B, g_size);
            hpdl_csv_row(f, metric, epoch_ms(&r->hpdl, 1, B), "ms", "pytorch_ddp", epoch_ms(&r->torch, 1, B), 0);
            snprintf(metric, sizeof metric, "weak_eff_%s_b%d_%dgpu", net_names[i], B, g_size);
            hpdl_csv_row(f, metric, eff(&r->hpdl), "T1/TP", "pytorch_ddp", eff(&r->torch), 1);
            snprintf(metric, sizeof metric, "per_gpu_images_per_s_%s_b%d_%dgpu", net_names[i], B, g_size);
            snprintf(anchor, sizeof anchor, "1gpu_%s_b%d", net_names[i], B);
            hpdl_csv_row(f, metric, 1e3 * B / r->hpdl.step_ms[1], "images/s", anchor, 1e3 * B / r->hpdl.step_ms[0], 1);
            for (int t = 0; t < 2 && all; t++)
                for (int k = 0; k < 2; k++) {
                    const side *s = t ? &r->torch : &r->hpdl;
                    if (s->step_ms[k] == 0) continue;
                    fprintf(all, "%s,%s,%d,%d,%lld,%.4f,%.4f,%.4f,%.4f,%.2f,%.4f\n", t ? "pytorch_ddp" : "hpdl",
                            net_names[i], B, k ? g_size : 1, (long long)steps_per_epoch(k ? g_size : 1, B),
                            s->step_ms[k], s->compute_ms[k], s->step_ms[k] - s->compute_ms[k], s->alone_ms[k],
                            epoch_ms(s, k, B), k ? eff(s) : 1.0);
                }
        }
    if (f) fclose(f);
    if (all) fclose(all);
}

/* ---- main ------------------------------------------------------------------------ */


static void parse_args(int argc, char **argv, settings *st) {
    const char *batches = "32,128", *bn = "broadcast", *output = NULL;
#ifdef HPDL_HAVE_CUDNN
    const char *conv = "cudnn";
#else
    const char *conv = "auto";
#endif
    hpdl_cli_option o[9];
    memset(st, 0, sizeof *st);
    st->steps = 30;
    st->warmup = 10;
    st->bucket_mb = 25;
    o[0] = hpdl_cli_positional(hpdl_cli_choice("net", 0, &st->only, "small|resnet18", "one network only (none: both)"));
    o[1] = hpdl_cli_string("batch", 'b', &batches, "B,...", "images per GPU per step");
    o[2] = hpdl_cli_int("steps", 0, &st->steps, 0, 100000, "ResNet-18's timed steps (0: a whole epoch)");
    o[3] = hpdl_cli_int("warmup", 0, &st->warmup, 1, 10000, "untimed steps before each measurement");
    o[4] = hpdl_cli_choice("bn", 0, &bn, "broadcast|local", "batch-norm statistics: rank 0's, or each rank's");
    o[5] = hpdl_cli_int("bucket-mb", 0, &st->bucket_mb, 1, 1024, "gradient bucket size (MiB)");
    o[6] = hpdl_cli_choice("conv", 0, &conv, "cudnn|auto", "hpdl's convolutions: cuDNN's or its own");
    o[7] = hpdl_cli_flag("no-torch", 0, &st->no_torch, "skip the PyTorch DDP anchor");
    o[8] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "cnn_dp", "Data-parallel CNN training on the GPUs, weak scaling against PyTorch DDP.",
                   o, 9);
    if (hpdl_arg_int_list("--batch", batches, 2, 4096, st->batches, MAX_BATCHES, &st->n_batches) != HPDL_OK) exit(2);
    st->bn = strcmp(bn, "local") ? HPDL_MPI_BN_BROADCAST : HPDL_MPI_BN_LOCAL;
    st->conv = strcmp(conv, "cudnn") ? HPDL_CONV_AUTO : HPDL_CONV_CUDNN;
    hpdl_csv_set_dir(output);
}

int main(int argc, char **argv) {
    static row rows[2][MAX_BATCHES];
    settings st;
    MPI_Comm solo;
    int gpu;
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    parse_args(argc, argv, &st);
    hpdl_mpi_relaunch_per_gpu(argc, argv, "cnn_dp");
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_init(&argc, &argv));
    g_rank = hpdl_mpi_rank();
    g_size = hpdl_mpi_size();
    gpu = hpdl_mpi_select_gpu();
    if (gpu < 0) {
        if (g_rank == 0) printf("cnn_dp: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n");
        hpdl_mpi_finalize();
        return 1;
    }
#ifndef HPDL_MPI_HAVE_NCCL
    if (g_rank == 0) printf("cnn_dp: skipped, built without NCCL; nothing measured\n");
    hpdl_mpi_finalize();
    return 1;
#endif
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, gpu)); /* beside every CSV: GPU, driver, date, commit, command */
    if (g_rank == 0)
        printf("cnn_dp: %d rank%s, one GPU each; %d synthetic 3x32x32 images resident per GPU; hpdl f32 NHWC, %s "
               "convolutions, NCCL buckets of %d MiB, batch-norm statistics %s\n", g_size, g_size > 1 ? "s" : "",
               N_IMAGES, st.conv == HPDL_CONV_CUDNN ? "cuDNN" : "hpdl's", st.bucket_mb,
               st.bn == HPDL_MPI_BN_BROADCAST ? "broadcast from rank 0" : "per rank");
    validate_or_stop(&st);
    hpdl_mpi_set_checks(0); /* timing: no cross-rank argument comparison per collective */
    std::vector<float> X;
    std::vector<int32_t> labels;
    random_images<float>(N_IMAGES, 3 * 32 * 32, 2026, &X, &labels);
    float *dX = to_device(X);
    int32_t *dlabels = to_device(labels);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < st.n_batches; b++) {
            row *r = &rows[i][b];
            if (st.only && strcmp(st.only, net_names[i])) continue;
            if (g_size > 1) measure(&st, i, st.batches[b], solo, dX, dlabels, r);
            MPI_Barrier(MPI_COMM_WORLD);
            measure(&st, i, st.batches[b], MPI_COMM_WORLD, dX, dlabels, r);
            if (g_size == 1) single_gpu(&r->hpdl);
            if (g_rank == 0)
                printf("  %-8s B %4d: hpdl T1 %.3f ms, TP %.3f ms (compute %.3f), E %.3f\n", net_names[i],
                       st.batches[b], r->hpdl.step_ms[0], r->hpdl.step_ms[1], r->hpdl.compute_ms[1], eff(&r->hpdl));
            fflush(stdout);
        }
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dlabels);
    if (g_rank == 0 && !st.no_torch) {
        run_torch(&st, 1, rows);
        if (g_size > 1) run_torch(&st, g_size, rows);
        for (int i = 0; i < 2 && g_size == 1; i++)
            for (int b = 0; b < st.n_batches; b++) single_gpu(&rows[i][b].torch);
    }
    sleepy_barrier();
    if (g_rank == 0) {
        print_table(&st, rows);
        write_csvs(&st, rows);
    }
    if (solo != MPI_COMM_NULL) MPI_Comm_free(&solo);
    hpdl_mpi_set_stream(0); /* the backends' streams are gone */
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_finalize());
    return 0;
}
