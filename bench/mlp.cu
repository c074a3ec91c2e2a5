/* bench/mlp - epoch time of MLP training, 784-H-10 (ReLU, SGD), 60000 samples
   already on the GPU, H in {512, 2048}, batch in {32, 128, 512, 3000}.

   Variants, each one full epoch (device shuffle, gather, forward, loss,
   backward, update for every mini-batch; the last batch is short when the
   batch does not divide 60000):
       f32 graph      hpdl_cuda_mlp_f32 with its products through cuBLAS
                      (algo HPDL_GEMM_CUBLAS), one CUDA graph replay per step
       f32 own        the model as created: hpdl's own GEMMs (the ladder's
                      AUTO: splitk, 3xTF32 mma where its tiles fill the GPU,
                      else warptile)
       f32 eager      the cuBLAS model's steps launched kernel by kernel
       f16 graph      mixed precision (f16 products through cuBLAS, f32 master
                      weights, dynamic loss scaling), graph replays
       f16 mma        the model as created: hpdl's own GEMMs (the ladder's
                      AUTO: splitk, the Hopper wgmma rungs, warptile or mma by
                      shape; the name is the column's since the first runs)
   and the anchor in the same run: PyTorch eager, the same network, SGD and
   epoch (bench/pytorch/mlp.py; f32, and torch.autocast + GradScaler for the
   f16 rows), skipped with a message without torch.

   First a check: a few f32 steps on the GPU against the CPU twin from the
   same weights (relative Frobenius difference <= 1e-5), else the bench stops.
   Timing: CUDA events around each epoch on the model's stream, 1 warm-up
   epoch (captures the graphs), median of 5, L2 flushed between epochs.

   Output: a table; <HPDL_RESULTS>/mlp.csv (headline first: f32 epoch ms at
   H=512, batch 32 and 3000, anchor PyTorch eager, ratio = anchor/value) and
   mlp_detail.csv (every variant per H and batch).

   build: make build/bench/mlp    run: HPDL_RESULTS=dir build/bench/mlp
   flags: --seed S (synthetic data) [2026], --output DIR (before HPDL_RESULTS), --help, --version */
#include "hpdl_cuda.cuh"

#define N_TRAIN 60000
#define N_FEATURES 784
#define N_CLASSES 10
#define LR 0.05
#define WARMUP 1
#define REPS 5
#define TORCH_SCRIPT "bench/pytorch/mlp.py"

static const int hiddens[] = {512, 2048};
static const int batches[] = {32, 128, 512, 3000};
#define NH 2
#define NB 4

enum { V_F32, V_F32_OWN, V_F32_EAGER, V_F16, V_F16_MMA, V_COUNT };
static const char *variant_name[V_COUNT] = {"f32_graph", "f32_own", "f32_eager", "f16_graph", "f16_mma"};

typedef struct results {
    double ms[V_COUNT][NH][NB];
    double torch_ms[2][NH][NB]; /* [amp]; 0: not measured */
    int64_t f16_skipped[NH][NB]; /* over the timed epochs of the default f16 model */
} results;

/* ---- check ------------------------------------------------------------------ */

/* A few f32 steps on CPU and GPU from the same weights must agree. */
static void check_f32(int hidden, const float *images, const int32_t *labels) {
    const int batch = 64, steps = 3;
    int widths[3] = {N_FEATURES, hidden, N_CLASSES}, s, l;
    hpdl_mlp_f32 m, grad, got;
    hpdl_mlp_work_f32 w;
    hpdl_cuda_mlp_f32 g;
    float *dX = NULL;
    int32_t *dy = NULL;
    double worst = 0.0;
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&got, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, batch));
    HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, &m, batch));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, (size_t)batch * steps * N_FEATURES * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)batch * steps * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, images, (size_t)batch * steps * N_FEATURES * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, labels, (size_t)batch * steps * sizeof(int32_t), cudaMemcpyHostToDevice));
    for (s = 0; s < steps; s++) {
        size_t r0 = (size_t)s * batch;
        HPDL_CHECK(hpdl_mlp_train_step_f32(&m, &w, &grad, batch, images + r0 * N_FEATURES, labels + r0, (float)LR, 0.0f, NULL));
        HPDL_CHECK(hpdl_cuda_mlp_train_step_f32(&g, batch, dX + r0 * N_FEATURES, dy + r0, LR, 0.0, NULL));
    }
    HPDL_CHECK(hpdl_cuda_mlp_download_f32(&g, &got));
    for (l = 0; l < 2; l++) {
        int64_t i, n = (int64_t)widths[l] * widths[l + 1];
        double num = 0.0, den = 0.0;
        for (i = 0; i < n; i++) {
            num += ((double)got.W[l][i] - m.W[l][i]) * ((double)got.W[l][i] - m.W[l][i]);
            den += (double)m.W[l][i] * m.W[l][i];
        }
        if (!(sqrt(num / den) <= worst)) worst = sqrt(num / den);
    }
    printf("check 784-%d-10 f32, %d steps: GPU vs CPU weights, max relative Frobenius difference %.2e\n", hidden, steps,
           worst);
    if (!(worst <= 1e-5)) { fprintf(stderr, "mlp bench: GPU and CPU disagree\n"); exit(EXIT_FAILURE); }
    hpdl_cuda_mlp_destroy_f32(&g);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&m);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&got);
    cudaFree(dX);
    cudaFree(dy);
}

/* ---- timing ------------------------------------------------------------------- */

typedef struct epoch_ctx {
    hpdl_cuda_mlp_f32 *g32;
    hpdl_cuda_mlp_f16 *g16;
    hpdl_cuda_dataset *data;
    int batch;
    uint64_t seed;
} epoch_ctx;

/* One epoch, enqueued without a host sync (stats NULL). */
static void epoch_f32(void *p, cudaStream_t s) {
    epoch_ctx *c = (epoch_ctx *)p;
    (void)s;
    HPDL_CHECK(hpdl_cuda_mlp_train_epoch_f32(c->g32, c->data, c->batch, LR, 0.0, c->seed++, NULL));
}
static void epoch_f16(void *p, cudaStream_t s) {
    epoch_ctx *c = (epoch_ctx *)p;
    (void)s;
    HPDL_CHECK(hpdl_cuda_mlp_train_epoch_f16(c->g16, c->data, c->batch, LR, 0.0, c->seed++, NULL));
}

static double time_variant(int v, int hidden, int batch, hpdl_cuda_dataset *data, hpdl_cuda_l2_flusher *flush,
                           int64_t *skipped) {
    int widths[3] = {N_FEATURES, hidden, N_CLASSES};
    hpdl_mlp_f32 m;
    hpdl_cuda_mlp_f32 g32;
    hpdl_cuda_mlp_f16 g16;
    epoch_ctx c;
    double ms = 0.0;
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    c.data = data;
    c.batch = batch;
    c.seed = 1;
    if (v == V_F16 || v == V_F16_MMA) {
        HPDL_CHECK(hpdl_cuda_mlp_create_f16(&g16, &m, batch));
        g16.algo = v == V_F16_MMA ? HPDL_GEMM_AUTO : HPDL_GEMM_CUBLAS;
        c.g16 = &g16;
        HPDL_CHECK(hpdl_cuda_time_median_ms(epoch_f16, &c, g16.stream, WARMUP, REPS, flush, &ms));
        if (v == V_F16) HPDL_CHECK(hpdl_cuda_mlp_scaler_f16(&g16, NULL, skipped));
        hpdl_cuda_mlp_destroy_f16(&g16);
    } else {
        HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g32, &m, batch));
        g32.algo = v == V_F32_OWN ? HPDL_GEMM_AUTO : HPDL_GEMM_CUBLAS;
        g32.use_graphs = v != V_F32_EAGER;
        c.g32 = &g32;
        HPDL_CHECK(hpdl_cuda_time_median_ms(epoch_f32, &c, g32.stream, WARMUP, REPS, flush, &ms));
        if (g32.use_graphs != (v != V_F32_EAGER)) fprintf(stderr, "mlp bench: graph capture failed, ran eagerly\n");
        hpdl_cuda_mlp_destroy_f32(&g32);
    }
    hpdl_mlp_destroy_f32(&m);
    return ms;
}

/* ---- PyTorch anchor ------------------------------------------------------------- */

/* Runs the script once for every (H, batch); fills torch_ms[amp]. */
static void run_torch(int amp, results *r) {
    char cmd[256], line[512];
    FILE *p;
    int h, b;
    snprintf(cmd, sizeof cmd, "python3 %s --hidden 512,2048 --batch 32,128,512,3000%s 2>&1", TORCH_SCRIPT,
             amp ? " --amp" : "");
    p = popen(cmd, "r");
    if (!p) { printf("pytorch: cannot run python3 (%s)\n", strerror(errno)); return; }
    while (fgets(line, sizeof line, p)) {
        int hh, bb, aa, i, j;
        double ms;
        if (sscanf(line, "pytorch_mlp hidden %d batch %d amp %d epoch_ms %lf", &hh, &bb, &aa, &ms) == 4) {
            for (i = 0; i < NH; i++)
                for (j = 0; j < NB; j++)
                    if (hiddens[i] == hh && batches[j] == bb) r->torch_ms[amp][i][j] = ms;
        } else {
            printf("  %s", line); /* the script's own messages (version, or why it is skipped) */
        }
    }
    pclose(p);
    for (h = 0; h < NH; h++)
        for (b = 0; b < NB; b++)
            if (r->torch_ms[amp][h][b] == 0.0) { printf("pytorch%s: no timing (skipped)\n", amp ? " amp" : ""); return; }
}

/* ---- output ----------------------------------------------------------------------- */

static void write_csv(const results *r, const char *gpu) {
    FILE *f = hpdl_csv_open(".", "mlp"), *d;
    char metric[128];
    int h, b, v;
    if (!f) return;
    for (b = 0; b < NB; b += NB - 1) { /* headline: H=512 at batch 32 and 3000 */
        snprintf(metric, sizeof metric, "headline_epoch_ms_f32_h512_b%d", batches[b]);
        hpdl_csv_row(f, metric, r->ms[V_F32][0][b], "ms", "pytorch_eager_f32", r->torch_ms[0][0][b], 0);
    }
    for (h = 0; h < NH; h++)
        for (b = 0; b < NB; b++)
            for (v = 0; v < V_COUNT; v++) {
                int amp = v == V_F16 || v == V_F16_MMA;
                snprintf(metric, sizeof metric, "epoch_ms_%s_h%d_b%d", variant_name[v], hiddens[h], batches[b]);
                hpdl_csv_row(f, metric, r->ms[v][h][b], "ms", amp ? "pytorch_eager_amp" : "pytorch_eager_f32",
                             r->torch_ms[amp][h][b], 0);
            }
    fclose(f);
    d = hpdl_csv_open_with_header(".", "mlp_detail",
                                  "gpu,hidden,batch,f32_graph_ms,f32_own_ms,f32_eager_ms,f16_graph_ms,f16_mma_ms,"
                                  "pytorch_f32_ms,pytorch_amp_ms,f32_samples_per_s,f16_skipped_steps");
    if (!d) return;
    for (h = 0; h < NH; h++)
        for (b = 0; b < NB; b++)
            fprintf(d, "%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%lld\n", gpu, hiddens[h], batches[b],
                    r->ms[V_F32][h][b], r->ms[V_F32_OWN][h][b], r->ms[V_F32_EAGER][h][b], r->ms[V_F16][h][b],
                    r->ms[V_F16_MMA][h][b], r->torch_ms[0][h][b], r->torch_ms[1][h][b],
                    N_TRAIN / (r->ms[V_F32][h][b] * 1e-3), (long long)r->f16_skipped[h][b]);
    fclose(d);
}

static void print_table(const results *r) {
    int h, b;
    printf("\n%5s %5s | %9s %9s %9s | %9s %9s | %9s %9s | %7s %7s\n", "H", "batch", "f32 graph", "f32 own",
           "f32 eager", "f16 graph", "f16 mma", "torch f32", "torch amp", "x f32", "x f16");
    for (h = 0; h < NH; h++)
        for (b = 0; b < NB; b++) {
            double t32 = r->torch_ms[0][h][b], t16 = r->torch_ms[1][h][b];
            printf("%5d %5d | %9.2f %9.2f %9.2f | %9.2f %9.2f | %9.2f %9.2f | %6.1fx %6.1fx\n", hiddens[h], batches[b],
                   r->ms[V_F32][h][b], r->ms[V_F32_OWN][h][b], r->ms[V_F32_EAGER][h][b], r->ms[V_F16][h][b],
                   r->ms[V_F16_MMA][h][b], t32, t16, t32 > 0 ? t32 / r->ms[V_F32][h][b] : 0.0,
                   t16 > 0 ? t16 / r->ms[V_F16][h][b] : 0.0);
        }
    printf("(epoch times in ms; x = PyTorch eager time / hpdl time, f32 graph and f16 graph)\n");
}

int main(int argc, char **argv) {
    static results r;
    hpdl_cuda_device_info info;
    hpdl_cuda_dataset data;
    hpdl_cuda_l2_flusher flush;
    float *images = (float *)hpdl_alloc((size_t)N_TRAIN * N_FEATURES, sizeof(float));
    int32_t *labels = (int32_t *)hpdl_alloc(N_TRAIN, sizeof(int32_t));
    char slug[128];
    hpdl_rng rng;
    int64_t i;
    int h, b, v;
    int64_t seed = 2026;
    const char *output = NULL;
    hpdl_cli_option opts[2];
    opts[0] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "seed of the synthetic data");
    opts[1] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "mlp", "MLP training epochs on the GPU against PyTorch eager.", opts, 2);
    hpdl_csv_set_dir(output);
    if (!hpdl_cuda_available()) { printf("mlp: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    if (!images || !labels) { fprintf(stderr, "mlp bench: out of memory\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    hpdl_cuda_device_slug(info.name, slug, sizeof slug);
    printf("mlp bench on %s: 784-H-10 ReLU, SGD lr %g, %d random samples resident on the GPU\n", info.name, LR, N_TRAIN);
    hpdl_rng_seed(&rng, (uint64_t)seed);
    for (i = 0; i < (int64_t)N_TRAIN * N_FEATURES; i++) images[i] = (float)hpdl_rng_uniform(&rng);
    for (i = 0; i < N_TRAIN; i++) labels[i] = (int32_t)hpdl_rng_below(&rng, N_CLASSES);
    for (h = 0; h < NH; h++) check_f32(hiddens[h], images, labels);
    HPDL_CHECK(hpdl_cuda_dataset_upload(&data, N_TRAIN, N_FEATURES, images, N_TRAIN, labels, HPDL_DATA_RESIDENT, 0));
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    for (h = 0; h < NH; h++)
        for (b = 0; b < NB; b++)
            for (v = 0; v < V_COUNT; v++) {
                r.ms[v][h][b] = time_variant(v, hiddens[h], batches[b], &data, &flush, &r.f16_skipped[h][b]);
                printf("  H %4d batch %4d %-10s %9.3f ms/epoch\n", hiddens[h], batches[b], variant_name[v], r.ms[v][h][b]);
                fflush(stdout);
            }
    run_torch(0, &r);
    run_torch(1, &r);
    print_table(&r);
    write_csv(&r, slug);
    hpdl_cuda_l2_flusher_destroy(&flush);
    hpdl_cuda_dataset_destroy(&data);
    HPDL_FREE(images);
    HPDL_FREE(labels);
    return 0;
}
