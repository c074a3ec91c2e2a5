/* bench/dp_scaling - data-parallel MLP training (784-H-10, f32, SGD) on
   Fashion-MNIST, one GPU per rank: the course's Tables 1-3.

   For H in {2048, 512}, batch per GPU b in {32, 128, 512, 2048, 8192} (x4 up
   to 60000/P) plus 3000 and 60000/P, overlap off (one NCCL allreduce after
   backward) and on (NCCL buckets started during backward, first layer's dW
   in 4 halving row blocks, NCCL capped at 8 CTAs on a high-priority stream),
   on 1 GPU (rank 0 alone: the anchor) and on all P GPUs:
       T_P    epoch time: one pass over all 60000 samples, data resident on
              the GPUs (loading excluded), median of 3 epochs (--reps) after 1 warm-up,
              slowest rank;
       speedup S = T_1 / T_P;  weak-scaling efficiency E = T_1 / (P T_P)
              (= per-GPU throughput on P GPUs over the 1-GPU throughput, same b);
       compute and communication time per epoch (CUDA events; with overlap,
              comm = time the step waited for the reduction), busbw of the
              step's reduction and its utilisation = busbw / P_mpi (a lone
              allreduce of the same bytes).
   Then 5 epochs at batch 128 and at the largest power-of-4 batch, the latter
   without and with linear LR scaling + 2 warm-up epochs: 5th-epoch loss and
   accuracy.
   Validation first: one epoch of the GPU driver (f64, overlap, short last
   step) against the CPU driver on the same ranks, same start: weights within
   1e-9 relative, and all ranks' weights identical after training.

   Anchor: bench/pytorch/mlp_ddp.py, the same model, batch per GPU, lr and
   epoch in PyTorch (f32, TF32 off): its 1-GPU epoch without DDP and its
   P-GPU epoch under DistributedDataParallel, E the same way, at H=2048 and
   b=512 and 3000; started by rank 0 on all P GPUs while the other ranks
   wait; skipped with a message without torch (--no-torch skips it too).

   Roofline of the course's model (the P GPUs' runs): FLOPs per step =
   the step's GEMMs, b (4DH + 6HC) (no gradient for the input); bytes per
   step = the gradient, 4 (DH + H + HC + C); AI = their ratio; attainable =
   AI / (AI / P_flops + (1/P_pci + 1/P_mpi) / 2) (hpdl_roofline_combined,
   rates from hpdl_mpi_dp_roofline_cuda); measured = FLOPs per GPU per epoch
   (60000/P samples) / T_P.

   Output: tables; <--output DIR, else HPDL_RESULTS, else .>/dp_scaling.csv (headlines: per-GPU samples/s
   on P GPUs vs 1 GPU at H=2048, b=3000 and 512, overlap on and off: ratio =
   weak-scaling efficiency; epoch times and E against PyTorch's),
   dp_scaling_all.csv, dp_scaling_acc.csv, and with P > 1
   dp_roofline_rates.csv (P_flops, P_pci, P_mpi per H) and
   dp_roofline_points.csv (AI, attainable and measured FLOP/s per H, b, overlap).

   --focus: only H=2048 at b=512 and 3000, to compare the overlap settings in
   one run (dp_scaling_focus.csv): no overlap, the same with the update
   in a kernel of its own ("no overlap separate": with --algo ipc or auto the default
   reduces and updates in one kernel), then overlap for every
   combination of --pieces, --halve, --ctas and --prio (first layer's dW row
   blocks, 1 = each block half the previous, NCCL CTA cap, 1 = highest-
   priority reduction stream; variant "p4h c8 q1" = 4 halving blocks, cap 8,
   high priority), then the settings of
   the first version ("v1": 4 pieces, NCCL's CTAs, normal priority, each
   epoch's shuffle drawn on the critical path), then PyTorch DDP. Each row: 1 GPU and P GPUs,
   taking turns in rounds (train_pair; so do the tables' pairs), E against its own 1-GPU run
   and against the 1-GPU run without overlap.
   Lists are comma-separated; the full tables use their first values.

   --tp: tensor parallelism (hpdl_mpi_tp_cuda_f32: the hidden layer split
   over the GPUs, one allreduce of the partial logits a step) against data
   parallelism at the same H (512, 2048) and global batch B (128 .. 60000;
   DP: B/P rows a GPU), both NCCL without overlap, after a check of the GPU
   driver against the CPU driver; bytes per step (DP: the parameters, TP:
   B x 10 logits), the batch where they are equal (the bytes formula's
   crossover) beside the measured crossover of the epoch times
   (tp_vs_dp.csv, tp_vs_dp_all.csv).

   --algo ipc | auto: the data-parallel runs (tables, --focus, the check
   of the GPU driver) reduce with the NVLink one-shot through CUDA IPC or
   AUTO instead of NCCL (--tp stays NCCL); the CTA cap is NCCL's only.

   mpirun -np 2 build/bench/dp_scaling [--data DIR] [--quick | --focus | --tp] [--reps N] [--algo nccl|ipc|auto]
                                       [--pieces 4,2,1] [--halve 1,0] [--ctas 8,0] [--prio 1,0]
                                       [--no-torch] [--output DIR] [--help] [--version]
   Started alone on a machine with several GPUs, it re-runs itself under
   `mpirun -np <GPUs>`. */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define HPDL_USE_NCCL
#endif
#endif
#include "hpdl_mpi.h"

#define N_CLASSES 10
#define LR 0.05
#define REPS 3
#define MAX_B 8
#define MAX_LIST 6

static int g_rank, g_size, g_no_torch;
static hpdl_allreduce_algo g_algo = HPDL_ALLREDUCE_NCCL; /* --algo: the data-parallel runs' reduction */

/* Overlap settings, from the command line: the full tables use entry 0. */
typedef struct int_list { int n, v[MAX_LIST]; } int_list;
static int_list g_pieces = {3, {4, 2, 1}}, g_halve = {2, {1, 0}}, g_ctas = {2, {8, 0}}, g_prio = {2, {1, 0}};

typedef struct run_result {
    double epoch_s, compute_s, comm_s, span_s, busbw, grad_bytes, loss, acc;
    int64_t steps;
} run_result;

/* "4,2,1" -> {4, 2, 1}; exits on anything else (hpdl_arg_int_list says why). */
static int_list parse_list(const char *flag, const char *text, int lo, int hi) {
    int_list l;
    if (hpdl_arg_int_list(flag, text, lo, hi, l.v, MAX_LIST, &l.n) != HPDL_OK) exit(2);
    return l;
}

static hpdl_mpi_dp_config bench_config(int batch, int overlap, MPI_Comm comm) {
    hpdl_mpi_dp_config c;
    hpdl_mpi_dp_config_default(&c);
    c.batch = batch;
    c.algo = g_algo;
    c.overlap = overlap;
    c.first_layer_pieces = g_pieces.v[0];
    c.pieces_halving = g_halve.v[0];
    c.nccl_max_ctas = g_ctas.v[0];
    c.comm_priority = g_prio.v[0];
    c.lr = LR;
    c.batch_ref = 128;
    c.comm = comm;
    return c;
}

/* Per-epoch figures of one setting, gathered over one or more runs. */
typedef struct epoch_log {
    int n;
    double t[64], c[64], m[64], sp[64], bw[64];
} epoch_log;

/* r's times: the medians of the logged epochs. */
static void summarize(const epoch_log *log, run_result *r) {
    hpdl_stats s;
    memset(&s, 0, sizeof s); /* zeros where no epoch was timed */
    hpdl_stats_compute(log->t, log->n, &s); r->epoch_s = s.median;
    hpdl_stats_compute(log->c, log->n, &s); r->compute_s = s.median;
    hpdl_stats_compute(log->m, log->n, &s); r->comm_s = s.median;
    hpdl_stats_compute(log->sp, log->n, &s); r->span_s = s.median;
    hpdl_stats_compute(log->bw, log->n, &s); r->busbw = s.median;
}

/* Trains `epochs` epochs on the ranks of comm (the others return at once),
   appending the epochs after `warmup` to *log; the result holds the last
   epoch's loss and size (and the test accuracy with dtest), not times.
   Epoch numbers go 0, stride, 2 stride, ...: stride 2 defeats the
   driver's drawing of the next epoch's shuffle ahead of time (the v1
   behaviour). */
static run_result train_logged(int hidden, const hpdl_mpi_dp_config *cfg, const hpdl_dataset *train_set,
                               hpdl_cuda_dataset *dtrain, hpdl_cuda_dataset *dtest, int warmup, int epochs, int stride,
                               epoch_log *log) {
    int widths[3] = {784, hidden, N_CLASSES}, e;
    hpdl_mlp_f32 m0;
    hpdl_cuda_mlp_f32 g;
    hpdl_mpi_dp_cuda_f32 dp;
    hpdl_mpi_dp_stats st;
    hpdl_cuda_mlp_stats ev;
    run_result r;
    int rank = 0;
    memset(&r, 0, sizeof r);
    memset(&st, 0, sizeof st);
    if (cfg->comm == MPI_COMM_NULL) return r;
    MPI_Comm_rank(cfg->comm, &rank);
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f32(&m0, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_create_f32(&g, &m0, cfg->batch));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_create_f32(&dp, &g, train_set->n, cfg));
    for (e = 0; e < warmup + epochs; e++) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_epoch_f32(&dp, &g, dtrain, e * stride, &st));
        if (e < warmup || log->n == 64) continue;
        log->t[log->n] = st.epoch_s; log->c[log->n] = st.compute_s; log->m[log->n] = st.comm_s;
        log->sp[log->n] = st.comm_span_s; log->bw[log->n++] = st.busbw;
    }
    r.grad_bytes = st.grad_bytes;
    r.steps = st.steps;
    r.loss = st.loss;
    ev.accuracy = 0;
    if (rank == 0 && dtest) HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_evaluate_f32(&g, dtest, &ev));
    r.acc = ev.accuracy;
    hpdl_mpi_dp_cuda_destroy_f32(&dp);
    hpdl_cuda_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m0);
    return r;
}

/* One run of `epochs` epochs after `warmup`: medians of its epochs. */
static run_result train(int hidden, const hpdl_mpi_dp_config *cfg, const hpdl_dataset *train_set,
                        hpdl_cuda_dataset *dtrain, hpdl_cuda_dataset *dtest, int warmup, int epochs) {
    epoch_log log;
    run_result r;
    log.n = 0;
    r = train_logged(hidden, cfg, train_set, dtrain, dtest, warmup, epochs, 1, &log);
    summarize(&log, &r);
    return r;
}

/* A setting's 1-GPU run (c1: rank 0 alone) and P-GPU run (cp), taking
   turns in up to PAIR_ROUNDS rounds of about reps / PAIR_ROUNDS epochs
   each (after a warm-up epoch), medians over all of each one's epochs.
   E compares the two: a drift in the machine's state (the clocks, a
   PyTorch run just before) reaches both alike, where one run after the
   other gave it to the first alone. */
#define PAIR_ROUNDS 5
static void train_pair(int hidden, const hpdl_mpi_dp_config *c1, const hpdl_mpi_dp_config *cp,
                       const hpdl_dataset *train_set, hpdl_cuda_dataset *dtrain, int reps, int stride, run_result *r1,
                       run_result *rp) {
    const int rounds = reps < PAIR_ROUNDS ? reps : PAIR_ROUNDS;
    epoch_log l1, lp;
    int i;
    l1.n = lp.n = 0;
    for (i = 0; i < rounds; i++) {
        const int epochs = reps / rounds + (i < reps % rounds);
        *r1 = train_logged(hidden, c1, train_set, dtrain, NULL, 1, epochs, stride, &l1);
        MPI_Barrier(MPI_COMM_WORLD);
        *rp = train_logged(hidden, cp, train_set, dtrain, NULL, 1, epochs, stride, &lp);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    summarize(&l1, r1);
    summarize(&lp, rp);
}

/* ---- validation ------------------------------------------------------------------ */

static double rel_diff_f64(const hpdl_mlp_f64 *a, const hpdl_mlp_f64 *b) {
    double d = 0, s = 0;
    int l, i;
    for (l = 0; l < a->n_layers; l++) {
        for (i = 0; i < a->widths[l] * a->widths[l + 1]; i++) {
            d = fmax(d, fabs(a->W[l][i] - b->W[l][i]));
            s = fmax(s, fabs(b->W[l][i]));
        }
        for (i = 0; i < a->widths[l + 1]; i++) d = fmax(d, fabs(a->b[l][i] - b->b[l][i]));
    }
    return s > 0 ? d / s : d;
}

/* GPU driver (f64, buckets reduced with --algo, first layer in 4 pieces) vs CPU driver. */
static void validate(const hpdl_dataset *train_set) {
    const int n = 500, widths[3] = {784, 128, N_CLASSES};
    double *X = (double *)hpdl_alloc((size_t)n * 784, sizeof(double)), diff, dmax = 0, dmin = 0, sum = 0;
    hpdl_mlp_f64 cpu, gpu_out;
    hpdl_cuda_mlp_f64 g;
    hpdl_cuda_dataset d;
    hpdl_mpi_dp_f64 cdp;
    hpdl_mpi_dp_cuda_f64 gdp;
    hpdl_mpi_dp_config c = bench_config(32, 1, MPI_COMM_WORLD);
    int i, l;
    if (!X) MPI_Abort(MPI_COMM_WORLD, 1);
    for (i = 0; i < n * 784; i++) X[i] = train_set->images[i];
    c.l2 = 1e-4;
    c.lr_scale = 1;
    c.warmup_epochs = 0.5;
    c.bucket_bytes = 64 << 10;
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f64(&cpu, 3, widths, HPDL_ACT_RELU, 5 + (uint64_t)g_rank)); /* bcast makes them rank 0's */
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f64(&gpu_out, 3, widths, HPDL_ACT_RELU, 5 + (uint64_t)g_rank));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_create_f64(&g, &cpu, c.batch));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_upload(&d, n, 784, train_set->images, n, train_set->labels, HPDL_DATA_RESIDENT, 0));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_create_f64(&gdp, &g, n, &c));
    c.algo = HPDL_ALLREDUCE_MPI;
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_create_f64(&cdp, &cpu, n, &c));
    for (i = 0; i < 2; i++) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_cuda_epoch_f64(&gdp, &g, &d, i, NULL));
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_epoch_f64(&cdp, X, train_set->labels, i, NULL));
    }
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_mlp_download_f64(&g, &gpu_out));
    diff = rel_diff_f64(&gpu_out, &cpu);
    for (l = 0; l < gpu_out.n_layers; l++)
        for (i = 0; i < gpu_out.widths[l] * gpu_out.widths[l + 1]; i++) sum += gpu_out.W[l][i] * (i % 7 + 1);
    MPI_Allreduce(&sum, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &dmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("check: GPU driver vs CPU driver, 784-128-10 f64, %d ranks, 2 epochs of %d samples: max relative "
               "difference %.2e; weights identical on all ranks: %s\n", g_size, n, diff, dmax == dmin ? "yes" : "NO");
    if (diff > 1e-9 || dmax != dmin || diff != diff) {
        if (g_rank == 0) fprintf(stderr, "dp_scaling: validation failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hpdl_mpi_dp_cuda_destroy_f64(&gdp);
    hpdl_mpi_dp_destroy_f64(&cdp);
    hpdl_cuda_dataset_destroy(&d);
    hpdl_cuda_mlp_destroy_f64(&g);
    hpdl_mlp_destroy_f64(&cpu);
    hpdl_mlp_destroy_f64(&gpu_out);
    HPDL_FREE(X);
}

/* ---- PyTorch DDP anchor ------------------------------------------------------------ */

#define TORCH_SCRIPT "bench/pytorch/mlp_ddp.py"
#define TORCH_HIDDEN 2048
static const int headline_batches[2] = {512, 3000}; /* the headline batches, --focus's too */

/* PyTorch's median epochs at one batch per GPU, ms (0: not measured). */
typedef struct torch_epochs { double t1_ms, tp_ms; } torch_epochs;

static double torch_eff(const torch_epochs *t) { return t->tp_ms > 0 ? t->t1_ms / (g_size * t->tp_ms) : 0; }

/* Rank 0 runs the script on all P GPUs (the other ranks wait in the
   barrier) and files its lines into out[k] for headline_batches[k]. Collective. */
static void run_torch(int reps, torch_epochs out[2]) {
    char cmd[512], line[1024];
    FILE *pipe = NULL;
    memset(out, 0, 2 * sizeof *out);
    if (g_rank == 0 && !g_no_torch) {
        snprintf(cmd, sizeof cmd, "python3 " TORCH_SCRIPT " --spawn %d --hidden %d --batch %d,%d --reps %d 2>&1", g_size,
                 TORCH_HIDDEN, headline_batches[0], headline_batches[1], reps);
        printf("\npytorch (%d GPU%s): %s\n", g_size, g_size > 1 ? "s" : "", cmd);
        fflush(stdout);
        if (!(pipe = popen(cmd, "r"))) printf("pytorch: cannot run python3 (%s)\n", strerror(errno));
    }
    while (pipe && fgets(line, sizeof line, pipe)) {
        const char *at = strstr(line, "pytorch_mlp_ddp hidden ");
        int hidden, batch, ranks, k;
        double t1, tp;
        if (at && sscanf(at, "pytorch_mlp_ddp hidden %d batch %d ranks %d epoch1_ms %lf epochp_ms %lf", &hidden, &batch,
                         &ranks, &t1, &tp) == 5 && hidden == TORCH_HIDDEN && ranks == g_size) {
            for (k = 0; k < 2; k++)
                if (batch == headline_batches[k]) { out[k].t1_ms = t1; out[k].tp_ms = tp; }
        } else {
            printf("  %s", line); /* the script's own words: versions, or why it skipped */
        }
    }
    if (pipe) pclose(pipe);
    if (g_rank == 0 && !g_no_torch && out[0].tp_ms == 0 && out[1].tp_ms == 0)
        printf("pytorch: no epoch measured (see above); the anchor's rows are left out\n");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- focus: overlap settings side by side at H=2048 ------------------------------- */

typedef struct focus_row {
    char name[40];
    int overlap, pieces, halve, ctas, prio, stride;
    int separate; /* the reduction's kernel, then the update's (else one kernel where IPC's one-shot runs) */
} focus_row;

static focus_row focus_make(int overlap, int pieces, int halve, int ctas, int prio, int stride) {
    focus_row r;
    if (!overlap) snprintf(r.name, sizeof r.name, "%sno overlap", stride > 1 ? "v1 " : "");
    else snprintf(r.name, sizeof r.name, "%soverlap p%d%s c%d q%d", stride > 1 ? "v1 " : "", pieces, halve ? "h" : "",
                  ctas, prio);
    r.overlap = overlap; r.pieces = pieces; r.halve = halve; r.ctas = ctas; r.prio = prio; r.stride = stride;
    r.separate = 0;
    return r;
}

/* Row 0 (no overlap, shuffle drawn ahead) is every row's second anchor;
   row 1 is row 0 with the update in a kernel of its own. */
static int focus_rows(focus_row *rows) {
    int n = 0, i, h, j, k;
    rows[n++] = focus_make(0, 1, 0, 0, 0, 1);
    rows[n] = rows[0];
    rows[n].separate = 1;
    snprintf(rows[n++].name, sizeof rows[0].name, "no overlap separate");
    for (i = 0; i < g_pieces.n; i++)
        for (h = 0; h < g_halve.n; h++)
            for (j = 0; j < g_ctas.n; j++)
                for (k = 0; k < g_prio.n; k++)
                    if (g_pieces.v[i] > 1 || h == 0) /* one block: nothing to halve */
                        rows[n++] = focus_make(1, g_pieces.v[i], g_pieces.v[i] > 1 && g_halve.v[h], g_ctas.v[j],
                                               g_prio.v[k], 1);
    rows[n++] = focus_make(0, 1, 0, 0, 0, 2);
    rows[n++] = focus_make(1, 4, 0, 0, 0, 2);
    return n;
}

static void focus(const hpdl_dataset *train_set, hpdl_cuda_dataset *dtrain, MPI_Comm solo, int reps) {
    const int *batches = headline_batches;
    focus_row rows[4 + MAX_LIST * 2 * MAX_LIST * 2];
    torch_epochs torch[2];
    int n = focus_rows(rows), k, i;
    FILE *csv = g_rank == 0 ? hpdl_csv_open_with_header(".", "dp_scaling_focus",
                                                        "variant,hidden,batch_per_gpu,gpus,overlap,pieces,halving,max_ctas,"
                                                        "priority,plan_ahead,t1_ms,tp_ms,compute1_ms,compute_ms,comm_ms,"
                                                        "comm_span_ms,eff,eff_vs_no_overlap")
                              : NULL;
    if (g_rank == 0)
        printf("\nFocus: H 2048, %d GPUs, %s, median of %d epochs; E = T1/(P TP) against the row's own 1-GPU run, "
               "E0 against the 1-GPU run without overlap; compute: 1 GPU | P GPUs (ms per epoch)\n", g_size,
               hpdl_allreduce_algo_name(g_algo), reps);
    run_torch(reps, torch);
    for (k = 0; k < 2; k++) {
        run_result plain1;
        memset(&plain1, 0, sizeof plain1);
        if (g_rank == 0)
            printf("%6s %-22s | %8s %8s | %8s %8s %7s %7s | %6s %6s\n", "b/GPU", "variant", "T1 ms", "TP ms",
                   "comp1", "compP", "comm", "span", "E", "E0");
        for (i = 0; i < n; i++) {
            hpdl_mpi_dp_config c1 = bench_config(batches[k], rows[i].overlap, solo);
            hpdl_mpi_dp_config cp = bench_config(batches[k], rows[i].overlap, MPI_COMM_WORLD);
            run_result r1, rp;
            double e, e0;
            c1.first_layer_pieces = cp.first_layer_pieces = rows[i].pieces;
            c1.pieces_halving = cp.pieces_halving = rows[i].halve;
            c1.nccl_max_ctas = cp.nccl_max_ctas = rows[i].ctas;
            c1.comm_priority = cp.comm_priority = rows[i].prio;
            c1.separate_update = cp.separate_update = rows[i].separate;
            train_pair(2048, &c1, &cp, train_set, dtrain, reps, rows[i].stride, &r1, &rp);
            if (i == 0) plain1 = r1;
            if (g_rank != 0) continue;
            e = rp.epoch_s > 0 ? r1.epoch_s / (g_size * rp.epoch_s) : 0;
            e0 = rp.epoch_s > 0 ? plain1.epoch_s / (g_size * rp.epoch_s) : 0;
            printf("%6d %-22s | %8.2f %8.2f | %8.2f %8.2f %7.2f %7.2f | %6.3f %6.3f\n", batches[k], rows[i].name,
                   1e3 * r1.epoch_s, 1e3 * rp.epoch_s, 1e3 * r1.compute_s, 1e3 * rp.compute_s, 1e3 * rp.comm_s,
                   1e3 * rp.span_s, e, e0);
            fflush(stdout);
            if (csv)
                fprintf(csv, "%s,2048,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", rows[i].name,
                        batches[k], g_size, rows[i].overlap, rows[i].pieces, rows[i].halve, rows[i].ctas, rows[i].prio,
                        rows[i].stride == 1, 1e3 * r1.epoch_s, 1e3 * rp.epoch_s, 1e3 * r1.compute_s,
                        1e3 * rp.compute_s, 1e3 * rp.comm_s, 1e3 * rp.span_s, e, e0);
        }
        if (g_rank != 0 || torch[k].tp_ms == 0) continue;
        printf("%6d %-22s | %8.2f %8.2f | %8s %8s %7s %7s | %6.3f %6s\n", batches[k], "pytorch ddp", torch[k].t1_ms,
               torch[k].tp_ms, "-", "-", "-", "-", torch_eff(&torch[k]), "-");
        if (csv)
            fprintf(csv, "pytorch ddp,2048,%d,%d,,,,,,,%.4f,%.4f,,,,,%.4f,\n", batches[k], g_size, torch[k].t1_ms,
                    torch[k].tp_ms, torch_eff(&torch[k]));
    }
    if (csv) fclose(csv);
}


/* ---- tensor parallelism against data parallelism (--tp) ---------------------------- */

/* Median epoch of tensor-parallel training (hpdl_mpi_tp_cuda_f32, NCCL) of
   784-hidden-10 at global batch `batch`, every rank on the same rows. */
static run_result train_tp(int hidden, int batch, const hpdl_dataset *train_set, hpdl_cuda_dataset *dtrain, int reps) {
    int widths[3] = {784, hidden, N_CLASSES}, e;
    double t[64], c[64], m[64];
    hpdl_mlp_f32 m0;
    hpdl_mpi_tp_config cfg;
    hpdl_mpi_tp_cuda_f32 tp;
    hpdl_mpi_tp_stats st;
    hpdl_stats s;
    run_result r;
    memset(&r, 0, sizeof r);
    memset(&s, 0, sizeof s); /* zeros where no epoch was timed */
    hpdl_mpi_tp_config_default(&cfg);
    cfg.batch = batch;
    cfg.algo = HPDL_ALLREDUCE_NCCL;
    cfg.lr = LR;
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f32(&m0, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_cuda_create_f32(&tp, &m0, train_set->n, &cfg));
    for (e = 0; e < 1 + reps; e++) {
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_cuda_epoch_f32(&tp, dtrain, e, &st));
        if (e < 1) continue;
        t[e - 1] = st.epoch_s; c[e - 1] = st.compute_s; m[e - 1] = st.comm_s;
    }
    hpdl_stats_compute(t, reps, &s); r.epoch_s = s.median;
    hpdl_stats_compute(c, reps, &s); r.compute_s = s.median;
    hpdl_stats_compute(m, reps, &s); r.comm_s = s.median;
    r.grad_bytes = st.step_bytes;
    r.steps = st.steps;
    r.loss = st.loss;
    hpdl_mpi_tp_cuda_destroy_f32(&tp);
    hpdl_mlp_destroy_f32(&m0);
    return r;
}

/* Tensor-parallel training on the GPUs against the CPU driver on the first
   4096 samples, one epoch from the same start: weights within 1e-4. */
static void validate_tp(const hpdl_dataset *train_set) {
    enum { N_VAL = 4096 };
    int widths[3] = {784, 96, N_CLASSES};
    hpdl_mlp_f32 m0, from_cpu, from_gpu;
    hpdl_mpi_tp_config cfg;
    hpdl_mpi_tp_f32 cpu;
    hpdl_mpi_tp_cuda_f32 gpu;
    hpdl_cuda_dataset part;
    double num = 0, den = 0;
    int l, i;
    hpdl_mpi_tp_config_default(&cfg);
    cfg.batch = 256;
    cfg.lr = LR;
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_f32(&m0, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_zero_f32(&from_cpu, 3, widths, HPDL_ACT_RELU));
    HPDL_MPI_CHECK_STATUS(hpdl_mlp_create_zero_f32(&from_gpu, 3, widths, HPDL_ACT_RELU));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_upload(&part, N_VAL, 784, train_set->images, N_VAL, train_set->labels,
                                                   HPDL_DATA_RESIDENT, 0));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_create_f32(&cpu, &m0, N_VAL, &cfg));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_epoch_f32(&cpu, train_set->images, train_set->labels, 0, NULL));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_gather_f32(&cpu, &from_cpu));
    cfg.algo = HPDL_ALLREDUCE_NCCL;
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_cuda_create_f32(&gpu, &m0, N_VAL, &cfg));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_cuda_epoch_f32(&gpu, &part, 0, NULL));
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_tp_cuda_gather_f32(&gpu, &from_gpu));
    for (l = 0; l < 2; l++)
        for (i = 0; i < widths[l] * widths[l + 1]; i++) {
            num += pow(from_gpu.W[l][i] - from_cpu.W[l][i], 2);
            den += pow(from_cpu.W[l][i] - m0.W[l][i], 2); /* against the update: the weights moved */
        }
    if (g_rank == 0)
        printf("validation (tensor parallel): GPU driver vs CPU driver, %d ranks, one epoch of %d samples: "
               "weights differ by %.2e of the update: %s\n", g_size, N_VAL, sqrt(num / den),
               sqrt(num / den) < 1e-3 ? "ok" : "FAILED");
    if (!(sqrt(num / den) < 1e-3)) MPI_Abort(MPI_COMM_WORLD, 1);
    hpdl_mpi_tp_cuda_destroy_f32(&gpu);
    hpdl_mpi_tp_destroy_f32(&cpu);
    hpdl_cuda_dataset_destroy(&part);
    hpdl_mlp_destroy_f32(&m0); hpdl_mlp_destroy_f32(&from_cpu); hpdl_mlp_destroy_f32(&from_gpu);
}

/* Bytes each rank hands to the step's allreduce: data parallelism the
   gradient of every parameter, tensor parallelism the partial logits of
   the global batch. Equal at batch* = params / classes. */
static double dp_step_bytes(int hidden) { return 4.0 * (785.0 * hidden + (hidden + 1.0) * N_CLASSES); }
static double tp_step_bytes(int batch) { return 4.0 * batch * N_CLASSES; }

/* Where the epoch-time ratio DP/TP crosses 1 between two measured global
   batches (log-linear in the batch); 0 when it does not cross. */
static double crossing(int b0, double ratio0, int b1, double ratio1) {
    double f;
    if ((ratio0 - 1.0) * (ratio1 - 1.0) > 0.0 || ratio0 == ratio1) return 0.0;
    f = log(ratio0) / (log(ratio0) - log(ratio1));
    return exp(log((double)b0) + f * (log((double)b1) - log((double)b0)));
}

/* Same H, same global batch B: data parallelism (B/P rows per GPU, NCCL,
   no overlap) and tensor parallelism (B rows on every GPU, NCCL) on all P
   GPUs; bytes per step of each and the crossover batch the bytes formula
   predicts, beside the one measured. */
static void tp_table(const hpdl_dataset *train_set, hpdl_cuda_dataset *dtrain, int reps) {
    static const int hiddens[2] = {512, 2048}, globals[6] = {128, 512, 2048, 8192, 30000, 60000};
    FILE *csv = NULL, *all = NULL;
    int h, k;
    validate_tp(train_set);
    if (g_rank == 0) {
        csv = hpdl_csv_open(".", "tp_vs_dp");
        all = hpdl_csv_open_with_header(".", "tp_vs_dp_all",
                                        "hidden,global_batch,gpus,dp_epoch_ms,dp_comm_ms,dp_step_bytes,tp_epoch_ms,"
                                        "tp_comm_ms,tp_step_bytes,dp_over_tp");
        printf("\nTensor vs data parallelism, %d GPUs, same H and global batch B (DP: B/%d rows a GPU)\n", g_size,
               g_size);
        printf("%5s %6s | %9s %9s %10s | %9s %9s %10s | %7s\n", "H", "B", "DP ms", "comm", "bytes/step", "TP ms",
               "comm", "bytes/step", "DP/TP");
    }
    for (h = 0; h < 2; h++) {
        double ratio[6], measured = 0.0, predicted = dp_step_bytes(hiddens[h]) / (4.0 * N_CLASSES);
        for (k = 0; k < 6; k++) {
            hpdl_mpi_dp_config c = bench_config(globals[k] / g_size, 0, MPI_COMM_WORLD);
            run_result dp = train(hiddens[h], &c, train_set, dtrain, NULL, 1, reps);
            run_result tp = train_tp(hiddens[h], globals[k], train_set, dtrain, reps);
            ratio[k] = dp.epoch_s / tp.epoch_s;
            if (k > 0 && !measured) measured = crossing(globals[k - 1], ratio[k - 1], globals[k], ratio[k]);
            if (g_rank != 0) continue;
            printf("%5d %6d | %9.2f %9.2f %10.0f | %9.2f %9.2f %10.0f | %7.3f\n", hiddens[h], globals[k],
                   1e3 * dp.epoch_s, 1e3 * dp.comm_s, dp_step_bytes(hiddens[h]), 1e3 * tp.epoch_s, 1e3 * tp.comm_s,
                   tp_step_bytes(globals[k]), ratio[k]);
            if (all)
                fprintf(all, "%d,%d,%d,%.4f,%.4f,%.0f,%.4f,%.4f,%.0f,%.4f\n", hiddens[h], globals[k], g_size,
                        1e3 * dp.epoch_s, 1e3 * dp.comm_s, dp_step_bytes(hiddens[h]), 1e3 * tp.epoch_s,
                        1e3 * tp.comm_s, tp_step_bytes(globals[k]), ratio[k]);
            if (csv) {
                char metric[96], anchor[96];
                snprintf(metric, sizeof metric, "tp_epoch_time_%dgpu_h%d_b%d", g_size, hiddens[h], globals[k]);
                snprintf(anchor, sizeof anchor, "dp_epoch_time_%dgpu_h%d_b%d", g_size, hiddens[h], globals[k]);
                hpdl_csv_row(csv, metric, 1e3 * tp.epoch_s, "ms", anchor, 1e3 * dp.epoch_s, 0);
            }
        }
        if (g_rank != 0) continue;
        printf("  H %d: bytes per step equal at B = %.0f (TP sends less below); measured epoch-time crossover: ", hiddens[h],
               predicted);
        if (measured > 0.0) printf("B = %.0f\n", measured);
        else printf("none between %d and %d (DP/TP %.3f .. %.3f)\n", globals[0], globals[5], ratio[0], ratio[5]);
        if (csv) {
            char metric[96], anchor[96];
            snprintf(metric, sizeof metric, "crossover_batch_measured_%dgpu_h%d", g_size, hiddens[h]);
            snprintf(anchor, sizeof anchor, "crossover_batch_bytes_formula_h%d", hiddens[h]);
            hpdl_csv_row(csv, metric, measured, "rows", anchor, predicted, 1);
        }
    }
    if (csv) fclose(csv);
    if (all) fclose(all);
}

/* ---- the course's roofline (Q2.5, Q2.6) ---------------------------------------------- */

/* GEMM FLOPs of one sample's step: forward X W1 and A1 W2 (2DH + 2HC),
   backward dW2, dA1 and dW1 (2HC + 2HC + 2DH; no gradient for the input). */
static double gemm_flops_per_sample(int hidden) { return 4.0 * 784 * hidden + 6.0 * hidden * N_CLASSES; }

/* The AI at which the model's compute time equals its transfer time. */
static double ridge_ai(const hpdl_mpi_dp_roofline *r) { return r->p_flops * 0.5 * (1.0 / r->p_pci + 1.0 / r->p_mpi); }

/* Rank 0: the rates per H (dp_roofline_rates.csv) and each P-GPU run
   against the model (dp_roofline_points.csv, and a table). */
static void write_roofline(const int *hiddens, int nh, const int *batches, int nb, const hpdl_mpi_dp_roofline *roof,
                           run_result res[2][MAX_B][2][2], int64_t n_train) {
    FILE *rates = hpdl_csv_open_with_header(".", "dp_roofline_rates",
                                            "hidden,gpus,allreduce,grad_bytes,p_flops_tflops,p_pci_gbs,p_mpi_busbw_gbs,"
                                            "p_mpi_algbw_gbs,ridge_flop_per_byte");
    FILE *points = hpdl_csv_open_with_header(".", "dp_roofline_points",
                                             "hidden,batch_per_gpu,overlap,gpus,gemm_flops_per_step,grad_bytes,"
                                             "ai_flop_per_byte,attainable_tflops,measured_tflops,measured_over_attainable");
    int h, k, o;
    printf("\nRoofline of the course's model, %d GPUs: AI = GEMM FLOPs per step / gradient bytes; attainable = "
           "AI / (AI/P_flops + (1/P_pci + 1/P_mpi)/2); measured = GEMM FLOPs per GPU per epoch / TP\n", g_size);
    printf("%5s %6s %3s | %9s %9s | %14s %14s %6s\n", "H", "b/GPU", "ovl", "AI", "ridge AI", "attain TFLOP/s",
           "meas. TFLOP/s", "frac");
    for (h = 0; h < nh; h++) {
        double bytes = dp_step_bytes(hiddens[h]), per_sample = gemm_flops_per_sample(hiddens[h]);
        if (rates)
            fprintf(rates, "%d,%d,%s,%.0f,%.4f,%.4f,%.4f,%.4f,%.1f\n", hiddens[h], g_size,
                    hpdl_allreduce_algo_name(g_algo), bytes, roof[h].p_flops * 1e-12, roof[h].p_pci * 1e-9,
                    roof[h].p_mpi * 1e-9, roof[h].p_mpi_algbw * 1e-9, ridge_ai(&roof[h]));
        for (k = 0; k < nb; k++)
            for (o = 0; o < 2; o++) {
                double tp = res[h][k][o][1].epoch_s, flops = batches[k] * per_sample, ai = flops / bytes, att = 0;
                double measured = tp > 0 ? (double)n_train / g_size * per_sample / tp : 0;
                if (hpdl_roofline_combined(ai, roof[h].p_flops, roof[h].p_pci, roof[h].p_mpi, &att) != HPDL_OK) att = 0;
                printf("%5d %6d %3d | %9.0f %9.0f | %14.2f %14.2f %6.3f\n", hiddens[h], batches[k], o, ai,
                       ridge_ai(&roof[h]), att * 1e-12, measured * 1e-12, att > 0 ? measured / att : 0);
                if (points)
                    fprintf(points, "%d,%d,%d,%d,%.6g,%.0f,%.2f,%.4f,%.4f,%.4f\n", hiddens[h], batches[k], o, g_size,
                            flops, bytes, ai, att * 1e-12, measured * 1e-12, att > 0 ? measured / att : 0);
            }
    }
    if (rates) fclose(rates);
    if (points) fclose(points);
}

/* Rank 0: PyTorch's epochs and E beside hpdl's at H=2048 (res2048: its
   runs), both overlap settings, into dp_scaling.csv and on stdout. */
static void torch_rows(FILE *csv, const torch_epochs *torch, const int *batches, int nb, run_result res2048[MAX_B][2][2]) {
    char metric[96], anchor[96];
    int j, k, o;
    for (j = 0; j < 2; j++) {
        int b = headline_batches[j];
        for (k = 0; k < nb && batches[k] != b; k++) {}
        if (torch[j].tp_ms == 0 || k == nb) continue;
        printf("H 2048 b %4d: PyTorch DDP T1 %.2f ms, TP %.2f ms, E %.3f", b, torch[j].t1_ms, torch[j].tp_ms,
               torch_eff(&torch[j]));
        for (o = 0; o < 2; o++) {
            const run_result *r1 = &res2048[k][o][0], *rp = &res2048[k][o][1];
            const char *ovl = o ? "overlap" : "no_overlap";
            double e = rp->epoch_s > 0 ? r1->epoch_s / (g_size * rp->epoch_s) : 0;
            printf(" | hpdl %s: T1 %.2f, TP %.2f, E %.3f", o ? "overlap" : "no overlap", 1e3 * r1->epoch_s,
                   1e3 * rp->epoch_s, e);
            snprintf(metric, sizeof metric, "epoch_ms_1gpu_h2048_b%d_%s", b, ovl);
            snprintf(anchor, sizeof anchor, "pytorch_1gpu_h2048_b%d", b);
            hpdl_csv_row(csv, metric, 1e3 * r1->epoch_s, "ms", anchor, torch[j].t1_ms, 0);
            snprintf(metric, sizeof metric, "epoch_ms_%dgpu_h2048_b%d_%s", g_size, b, ovl);
            snprintf(anchor, sizeof anchor, "pytorch_ddp_%dgpu_h2048_b%d", g_size, b);
            hpdl_csv_row(csv, metric, 1e3 * rp->epoch_s, "ms", anchor, torch[j].tp_ms, 0);
            snprintf(metric, sizeof metric, "weak_eff_%dgpu_h2048_b%d_%s", g_size, b, ovl);
            hpdl_csv_row(csv, metric, e, "T1/(P TP)", anchor, torch_eff(&torch[j]), 1);
        }
        printf("\n");
    }
}

/* ---- the course's tables ------------------------------------------------------------ */

static void tables(const hpdl_dataset *train_set, hpdl_cuda_dataset *dtrain, hpdl_cuda_dataset *dtest, MPI_Comm solo,
                   int quick, int reps) {
    static const int hiddens[2] = {2048, 512};
    int batches[MAX_B], nb = 0, i, h, k, o, b, nh;
    run_result res[2][MAX_B][2][2]; /* [hidden][batch][overlap][0: 1 GPU, 1: P GPUs] */
    hpdl_mpi_dp_roofline roof[2];
    torch_epochs torch[2];
    FILE *csv = NULL, *all = NULL, *acc = NULL;
    for (b = 32; b <= train_set->n / g_size && nb < MAX_B - 2; b *= 4) batches[nb++] = b;
    batches[nb++] = 3000;
    if (batches[nb - 2] != train_set->n / g_size) batches[nb++] = (int)(train_set->n / g_size);
    if (quick) { /* the two headline batches and one small one */
        nb = 0;
        batches[nb++] = 128; batches[nb++] = 512; batches[nb++] = 3000;
    }
    nh = quick ? 1 : 2;
    memset(res, 0, sizeof res);
    run_torch(reps, torch);
    for (h = 0; h < nh; h++) {
        int64_t params = (int64_t)785 * hiddens[h] + (int64_t)(hiddens[h] + 1) * N_CLASSES;
        HPDL_MPI_CHECK_STATUS(hpdl_mpi_dp_roofline_cuda(params, g_algo, MPI_COMM_WORLD, &roof[h]));
        if (g_rank == 0)
            printf("H %d: P_flops %.2f TFLOP/s, P_pci %.2f GB/s, P_mpi %.2f GB/s busbw (lone %s allreduce of %.2f MB)\n",
                   hiddens[h], roof[h].p_flops * 1e-12, roof[h].p_pci * 1e-9, roof[h].p_mpi * 1e-9,
                   hpdl_allreduce_algo_name(g_algo), 4e-6 * params);
        for (k = 0; k < nb; k++)
            for (o = 0; o < 2; o++) {
                hpdl_mpi_dp_config c1 = bench_config(batches[k], o, solo), cp = bench_config(batches[k], o, MPI_COMM_WORLD);
                train_pair(hiddens[h], &c1, &cp, train_set, dtrain, reps, 1, &res[h][k][o][0], &res[h][k][o][1]);
                if (g_rank == 0)
                    printf("  H %4d b %5d overlap %d: 1 GPU %8.2f ms, %d GPUs %8.2f ms (compute %.2f, comm %.2f ms), "
                           "E = %.3f\n", hiddens[h], batches[k], o, 1e3 * res[h][k][o][0].epoch_s, g_size,
                           1e3 * res[h][k][o][1].epoch_s, 1e3 * res[h][k][o][1].compute_s, 1e3 * res[h][k][o][1].comm_s,
                           res[h][k][o][0].epoch_s / (g_size * res[h][k][o][1].epoch_s));
                fflush(stdout);
            }
    }
    /* accuracy after 5 epochs: batch 128; the largest power-of-4 batch without and with scaling + warm-up */
    {
        int big = batches[nb - (batches[nb - 1] == 3000 ? 2 : 3)];
        run_result a[3];
        hpdl_mpi_dp_config c;
        c = bench_config(128, 1, MPI_COMM_WORLD);
        a[0] = train(hiddens[0], &c, train_set, dtrain, dtest, 4, 1);
        c = bench_config(big, 1, MPI_COMM_WORLD);
        a[1] = train(hiddens[0], &c, train_set, dtrain, dtest, 4, 1);
        c.lr_scale = 1;
        c.warmup_epochs = 2;
        a[2] = train(hiddens[0], &c, train_set, dtrain, dtest, 4, 1);
        if (g_rank == 0) {
            acc = hpdl_csv_open_with_header(".", "dp_scaling_acc",
                                            "run,hidden,batch_per_gpu,gpus,lr_scale,warmup_epochs,final_lr,"
                                            "epoch5_loss,epoch5_test_acc");
            printf("\nTable 4: after 5 epochs, H %d, %d GPUs (lr %.3g at batch 128)\n", hiddens[0], g_size, LR);
            printf("%-28s %8s %10s %9s %9s\n", "run", "batch/GPU", "final lr", "loss", "test_acc");
            printf("%-28s %8d %10.4g %9.4f %9.4f\n", "batch 128", 128, LR, a[0].loss, a[0].acc);
            printf("%-28s %8d %10.4g %9.4f %9.4f\n", "largest, no scaling", big, LR, a[1].loss, a[1].acc);
            printf("%-28s %8d %10.4g %9.4f %9.4f\n", "largest, scaling + warm-up 2", big,
                   LR * g_size * big / 128.0, a[2].loss, a[2].acc);
            if (acc) {
                fprintf(acc, "batch128,%d,128,%d,0,0,%g,%.5f,%.5f\n", hiddens[0], g_size, LR, a[0].loss, a[0].acc);
                fprintf(acc, "largest,%d,%d,%d,0,0,%g,%.5f,%.5f\n", hiddens[0], big, g_size, LR, a[1].loss, a[1].acc);
                fprintf(acc, "largest_scaled,%d,%d,%d,1,2,%g,%.5f,%.5f\n", hiddens[0], big, g_size,
                        LR * g_size * big / 128.0, a[2].loss, a[2].acc);
                fclose(acc);
            }
        }
    }
    if (g_rank == 0) {
        csv = hpdl_csv_open(".", "dp_scaling");
        all = hpdl_csv_open_with_header(".", "dp_scaling_all",
                                        "hidden,batch_per_gpu,overlap,gpus,steps,epoch_ms,compute_ms,comm_ms,"
                                        "comm_span_ms,grad_mb,busbw_gbs,bw_util,speedup,weak_eff");
        printf("\nTables 1-3: epoch = 60000 samples; S = T1/TP; E = T1/(P TP); comm = waited-for reduction; "
               "util = busbw / P_mpi\n");
        printf("%5s %6s %3s | %9s | %9s %9s %9s %7s %5s | %6s %6s\n", "H", "b/GPU", "ovl", "T1 ms", "TP ms",
               "compute", "comm", "busbw", "util", "S", "E");
        for (h = 0; h < nh; h++)
            for (k = 0; k < nb; k++)
                for (o = 0; o < 2; o++) {
                    run_result *r1 = &res[h][k][o][0], *rp = &res[h][k][o][1];
                    double S = rp->epoch_s > 0 ? r1->epoch_s / rp->epoch_s : 0, E = S / g_size;
                    double util = roof[h].p_mpi > 0 ? rp->busbw / roof[h].p_mpi : 0;
                    printf("%5d %6d %3d | %9.2f | %9.2f %9.2f %9.2f %7.1f %5.2f | %6.3f %6.3f\n", hiddens[h],
                           batches[k], o, 1e3 * r1->epoch_s, 1e3 * rp->epoch_s, 1e3 * rp->compute_s, 1e3 * rp->comm_s,
                           rp->busbw * 1e-9, util, S, E);
                    for (i = 0; i < 2 && all; i++) {
                        run_result *r = i ? rp : r1;
                        fprintf(all, "%d,%d,%d,%d,%lld,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.4f,%.4f,%.4f\n", hiddens[h],
                                batches[k], o, i ? g_size : 1, (long long)r->steps, 1e3 * r->epoch_s,
                                1e3 * r->compute_s, 1e3 * r->comm_s, 1e3 * r->span_s, r->grad_bytes * 1e-6,
                                r->busbw * 1e-9, i ? util : 0.0, i ? S : 1.0, i ? E : 1.0);
                    }
                    if (hiddens[h] == 2048 && (batches[k] == 3000 || batches[k] == 512) && csv) {
                        char metric[128], anchor[128];
                        snprintf(metric, sizeof metric, "per_gpu_samples_per_s_%dgpu_h2048_b%d_%s", g_size, batches[k],
                                 o ? "overlap" : "no_overlap");
                        snprintf(anchor, sizeof anchor, "1gpu_h2048_b%d_%s", batches[k], o ? "overlap" : "no_overlap");
                        hpdl_csv_row(csv, metric, 60000.0 / (g_size * rp->epoch_s), "samples/s", anchor,
                                     60000.0 / r1->epoch_s, 1);
                    }
                }
        printf("(dp_scaling.csv's ratio column: E for the per-GPU samples/s rows; PyTorch's time / hpdl's for the "
               "epoch rows; hpdl's E / PyTorch's for the weak_eff rows)\n\n");
        torch_rows(csv, torch, batches, nb, res[0]);
        if (csv) fclose(csv);
        if (all) fclose(all);
        if (g_size > 1) write_roofline(hiddens, nh, batches, nb, roof, res, train_set->n);
        else printf("\nroofline: left out on one GPU (no gradient is sent)\n");
    }
}

/* ---- main ------------------------------------------------------------------------ */

/* The command line, before MPI starts (and before the relaunch under
   mpirun, so --help runs once); the lists go into g_pieces .. g_prio. */
static void parse_args(int argc, char **argv, const char **data, int *quick, int *focus_only, int *tp_only,
                       int *reps) {
    const char *pieces = "4,2,1", *halve = "1,0", *ctas = "8,0", *prio = "1,0", *output = NULL, *algo = "nccl";
    hpdl_cli_option o[12];
    o[0] = hpdl_cli_string("data", 0, data, "DIR", "IDX files");
    o[1] = hpdl_cli_flag("quick", 0, quick, "H=2048 only, batches 128, 512 and 3000");
    o[2] = hpdl_cli_flag("focus", 0, focus_only, "only H=2048 at b=512 and 3000, every overlap setting");
    o[3] = hpdl_cli_int("reps", 0, reps, 0, 60, "timed epochs (0: 3, or 10 with --focus)");
    o[4] = hpdl_cli_string("pieces", 0, &pieces, "K,...", "first layer's dW row blocks");
    o[5] = hpdl_cli_string("halve", 0, &halve, "0|1,...", "1: each block half the previous");
    o[6] = hpdl_cli_string("ctas", 0, &ctas, "C,...", "NCCL CTA cap (0: NCCL's)");
    o[7] = hpdl_cli_string("prio", 0, &prio, "0|1,...", "1: highest-priority reduction stream");
    o[8] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    o[9] = hpdl_cli_flag("tp", 0, tp_only, "only tensor against data parallelism, same H and global batch");
    o[10] = hpdl_cli_choice("algo", 0, &algo, "nccl|ipc|auto",
                            "data parallelism's reduction: NCCL, the NVLink one-shot (CUDA IPC), or AUTO");
    o[11] = hpdl_cli_flag("no-torch", 0, &g_no_torch, "skip the PyTorch DDP anchor");
    hpdl_cli_parse(argc, argv, "dp_scaling", "Data-parallel MLP training, 1 GPU against all: the course's tables.", o, 12);
    g_algo = !strcmp(algo, "ipc") ? HPDL_ALLREDUCE_IPC_ONESHOT
             : !strcmp(algo, "auto") ? HPDL_ALLREDUCE_AUTO : HPDL_ALLREDUCE_NCCL;
    g_pieces = parse_list("--pieces", pieces, 1, HPDL_MPI_DP_MAX_PIECES);
    g_halve = parse_list("--halve", halve, 0, 1);
    g_ctas = parse_list("--ctas", ctas, 0, 64);
    g_prio = parse_list("--prio", prio, 0, 1);
    hpdl_csv_set_dir(output);
}

int main(int argc, char **argv) {
    const char *data = "data/fashion-mnist";
    int quick = 0, focus_only = 0, tp_only = 0, reps = 0, gpu;
    hpdl_dataset train_set, test_set;
    hpdl_cuda_dataset dtrain, dtest;
    MPI_Comm solo;
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    parse_args(argc, argv, &data, &quick, &focus_only, &tp_only, &reps);
    if (!reps) reps = focus_only ? 10 : REPS;
    hpdl_mpi_relaunch_per_gpu(argc, argv, "dp_scaling");
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_init(&argc, &argv));
    g_rank = hpdl_mpi_rank();
    g_size = hpdl_mpi_size();
    gpu = hpdl_mpi_select_gpu();
    if (gpu < 0) {
        if (g_rank == 0) printf("dp_scaling: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n");
        hpdl_mpi_finalize();
        return 1;
    }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, gpu)); /* beside every CSV: GPU, driver, date, commit, command */
#ifndef HPDL_MPI_HAVE_NCCL
    if (g_rank == 0) printf("dp_scaling: skipped, built without NCCL; nothing measured\n");
    hpdl_mpi_finalize();
    return 1;
#endif
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(data, 1, &train_set));
    HPDL_MPI_CHECK_STATUS(hpdl_idx_load_dir(data, 0, &test_set));
    if (train_set.channels != 1 || hpdl_dataset_features(&train_set) != 784 || hpdl_dataset_features(&test_set) != 784) {
        if (g_rank == 0) fprintf(stderr, "dp_scaling: %s: expected one-channel 28x28 images (MNIST format)\n", data);
        hpdl_mpi_finalize();
        return 1;
    }
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&train_set, 0.2860f, 0.3530f));
    HPDL_MPI_CHECK_STATUS(hpdl_dataset_normalize(&test_set, 0.2860f, 0.3530f));
    if (!tp_only) validate(&train_set);
    hpdl_mpi_set_checks(0); /* timing: no cross-rank argument comparison per collective */
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_create(&dtrain, &train_set, HPDL_DATA_RESIDENT));
    HPDL_MPI_CHECK_STATUS(hpdl_cuda_dataset_create(&dtest, &test_set, HPDL_DATA_RESIDENT));
    MPI_Comm_split(MPI_COMM_WORLD, g_rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
    if (focus_only) focus(&train_set, &dtrain, solo, reps);
    else if (tp_only) tp_table(&train_set, &dtrain, reps);
    else tables(&train_set, &dtrain, &dtest, solo, quick, reps);
    hpdl_cuda_dataset_destroy(&dtrain);
    hpdl_cuda_dataset_destroy(&dtest);
    if (solo != MPI_COMM_NULL) MPI_Comm_free(&solo);
    hpdl_dataset_free(&train_set);
    hpdl_dataset_free(&test_set);
    HPDL_MPI_CHECK_STATUS(hpdl_mpi_finalize());
    return 0;
}
