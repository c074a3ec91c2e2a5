/* bench/model_parallel: the deep linear model over GPUs, naive and
   pipelined (issue 8).

   usage: model_parallel [--depth 8[,24,...]] [--dim 4096] [--batch 512]
                         [--micro 1,2,4,8,16] [--gpus G]

   For each depth: the model on 1 GPU, then on G = 2 .. all GPUs (layers
   split evenly, hpdl_place_even) with m = 1 (naive model parallelism: one
   device busy at a time) and m > 1 micro-batches (GPipe). Every run is
   checked first: the first step's loss and the weight updates of the first
   and last layers equal the 1-GPU step's (f32, 1e-5 relative), and the
   forward pass makes m (G - 1) transfers. Then the step is timed (CUDA
   events, median, L2 flushed) and one step is profiled: each device's busy
   time, so the measured idle fraction sits beside the GPipe bubble
   (G-1)/(m+G-1). CSV: model_parallel.csv, headline = pipelined (best m)
   step time against naive on the same GPUs (ratio = naive / pipelined). */
#include "hpdl_cuda.cuh"

#define MAX_LIST 16

typedef struct options {
    int depth[MAX_LIST], n_depth, micro[MAX_LIST], n_micro, dim, batch, gpus;
} options;

static int parse_list(const char *s, int *out) {
    int n = 0;
    while (s && *s && n < MAX_LIST) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (s) s++;
    }
    return n;
}

static void parse(int argc, char **argv, options *o) {
    int i;
    o->n_depth = parse_list("8", o->depth);
    o->n_micro = parse_list("1,2,4,8,16", o->micro);
    o->dim = 4096;
    o->batch = 512;
    o->gpus = hpdl_cuda_device_count();
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--depth")) o->n_depth = parse_list(argv[i + 1], o->depth);
        else if (!strcmp(argv[i], "--micro")) o->n_micro = parse_list(argv[i + 1], o->micro);
        else if (!strcmp(argv[i], "--dim")) o->dim = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) o->batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gpus")) o->gpus = atoi(argv[i + 1]);
        else { fprintf(stderr, "model_parallel: unknown option %s\n", argv[i]); exit(EXIT_FAILURE); }
    }
}

static const float LR = 1e-4f;

/* What one step of the 1-GPU model did: the reference of every check. */
typedef struct reference {
    float loss;
    float *delta[2]; /* weight change of the first and last layers */
} reference;

/* First step from the seeded start: loss and the two layers' changes. */
static void first_step(hpdl_cuda_deep_linear *m, int micro, float *loss, float *delta[2]) {
    size_t ww = (size_t)m->dim * m->dim, i;
    int k, layers[2];
    float *before = (float *)hpdl_alloc(ww, sizeof(float));
    layers[0] = 0;
    layers[1] = m->depth - 1;
    HPDL_CHECK(hpdl_cuda_deep_linear_init(m, 1));
    HPDL_CHECK(hpdl_cuda_deep_linear_random_batch(m, 2));
    for (k = 0; k < 2; k++) {
        delta[k] = (float *)hpdl_alloc(ww, sizeof(float));
        HPDL_CHECK(hpdl_cuda_deep_linear_get_weights(m, layers[k], delta[k]));
    }
    HPDL_CHECK(hpdl_cuda_deep_linear_step(m, micro, LR, 0));
    HPDL_CHECK(hpdl_cuda_deep_linear_loss(m, loss));
    for (k = 0; k < 2; k++) {
        HPDL_CHECK(hpdl_cuda_deep_linear_get_weights(m, layers[k], before));
        for (i = 0; i < ww; i++) delta[k][i] = before[i] - delta[k][i];
    }
    HPDL_FREE(before);
}

static double rel_diff(size_t n, const float *a, const float *b) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) { num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]); den += (double)b[i] * b[i]; }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Checks a run's first step against the reference; prints the worst error. */
static int check_step(hpdl_cuda_deep_linear *m, int micro, const reference *ref) {
    float loss, *delta[2];
    double err = 0.0;
    int k, G = m->lanes.dev.count, ok;
    first_step(m, micro, &loss, delta);
    for (k = 0; k < 2; k++) {
        double e = rel_diff((size_t)m->dim * m->dim, delta[k], ref->delta[k]);
        if (e > err) err = e;
        HPDL_FREE(delta[k]);
    }
    ok = err <= 1e-5 && fabs(loss - ref->loss) <= 1e-5 * fabs(ref->loss) &&
         m->fwd.transfers == (long long)micro * (G - 1) && m->bwd.transfers == (long long)micro * (G - 1);
    if (!ok) printf("  CHECK FAILED: G=%d m=%d: loss %.7g vs %.7g, updates %.2e, transfers %lld/%lld\n", G, micro,
                    loss, ref->loss, err, m->fwd.transfers, m->bwd.transfers);
    return ok;
}

typedef struct step_ctx { hpdl_cuda_deep_linear *m; int micro; hpdl_status status; } step_ctx;

static void run_step(void *ctx, cudaStream_t stream) {
    step_ctx *c = (step_ctx *)ctx;
    hpdl_status s = hpdl_cuda_deep_linear_step(c->m, c->micro, LR, stream);
    if (s != HPDL_OK) c->status = s;
}

typedef struct result { double ms, idle, bubble; long long fwd_transfers, fwd_bytes; } result;

/* Times the step (median of 10 after 2 warm-ups) and profiles one. */
static result measure(hpdl_cuda_deep_linear *m, int micro, hpdl_cuda_l2_flusher *flush) {
    step_ctx c;
    result r;
    double busy[HPDL_CUDA_MAX_DEVICES], step_ms = 0.0, idle = 0.0;
    int g, G = m->lanes.dev.count;
    c.m = m; c.micro = micro; c.status = HPDL_OK;
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_step, &c, m->lanes.stream[0], 2, 10, flush, &r.ms));
    HPDL_CHECK(c.status);
    r.fwd_transfers = m->fwd.transfers;
    r.fwd_bytes = m->fwd.bytes;
    HPDL_CHECK(hpdl_cuda_deep_linear_profile(m, micro, LR, &step_ms, busy));
    for (g = 0; g < G; g++) idle += 1.0 - busy[g] / step_ms;
    r.idle = idle / G;
    r.bubble = (double)(G - 1) / (micro + G - 1);
    return r;
}

static void print_row(int G, const char *what, int micro, const result *r, double naive_ms, double one_ms,
                      const hpdl_cuda_deep_linear *m) {
    int g;
    printf("  %4d  %-9s %3d  %8.2f  %8.3f  %7.3f  %6.3f  %6.3f  %9lld  %8.1f   ", G, what, micro, r->ms,
           naive_ms > 0.0 ? r->ms / naive_ms : 1.0, one_ms / r->ms, r->bubble, r->idle, r->fwd_transfers,
           r->fwd_bytes / 1048576.0);
    for (g = 0; g < G; g++) printf("%s%.0f", g ? "/" : "", m->bytes[g] / 1048576.0);
    printf("\n");
}

/* One depth: 1 GPU, then G = 2 .. gpus, naive and pipelined. */
static int bench_depth(const options *o, int depth, FILE *csv) {
    hpdl_cuda_deep_linear m;
    hpdl_cuda_l2_flusher flush;
    reference ref;
    result one, r;
    int first[HPDL_CUDA_MAX_DEVICES + 1], G, k, ok = 1;
    char metric[128], anchor[128];
    printf("\nDEPTH %d, DIM %d, batch %d, f32 (%.1f GFLOP a step)\n", depth, o->dim, o->batch,
           6.0 * depth * o->batch * (double)o->dim * o->dim / 1e9);
    printf("  GPUs  mode        m   step ms  /naive   speedup  bubble  idle    fwd moves  fwd MiB   MiB per GPU\n");
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    first[0] = 0; first[1] = depth;
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, depth, o->dim, o->batch, first, 1, 0));
    first_step(&m, 1, &ref.loss, ref.delta);
    one = measure(&m, 1, &flush);
    print_row(1, "one GPU", 1, &one, 0.0, one.ms, &m);
    hpdl_cuda_deep_linear_destroy(&m);
    snprintf(anchor, sizeof anchor, "single_gpu_d%d_step_time", depth);
    for (G = 2; G <= o->gpus && G <= depth; G++) {
        double naive_ms = 0.0, best_ms = 0.0;
        int best_m = 0;
        HPDL_CHECK(hpdl_place_even(depth, G, first));
        HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, depth, o->dim, o->batch, first, G, 0));
        if (G == o->gpus) hpdl_cuda_deep_linear_print_map(&m, stdout);
        for (k = 0; k < o->n_micro; k++) {
            int micro = o->micro[k];
            if (micro < 1 || o->batch % micro) continue;
            ok &= check_step(&m, micro, &ref);
            r = measure(&m, micro, &flush);
            if (micro == 1) naive_ms = r.ms;
            else if (!best_m || r.ms < best_ms) { best_ms = r.ms; best_m = micro; }
            print_row(G, micro == 1 ? "naive" : "pipelined", micro, &r, naive_ms, one.ms, &m);
            snprintf(metric, sizeof metric, "%s_d%d_g%d_m%d_step_time", micro == 1 ? "naive" : "pipelined", depth, G, micro);
            hpdl_csv_row(csv, metric, r.ms, "ms", anchor, one.ms, 0);
            snprintf(metric, sizeof metric, "fwd_transfers_d%d_g%d_m%d", depth, G, micro);
            hpdl_csv_row(csv, metric, (double)r.fwd_transfers, "count", "expected_m_times_g_minus_1",
                         (double)micro * (G - 1), 1);
            snprintf(metric, sizeof metric, "idle_fraction_d%d_g%d_m%d", depth, G, micro);
            hpdl_csv_row(csv, metric, r.idle, "fraction", "gpipe_bubble", r.bubble, 0);
        }
        if (naive_ms > 0.0 && best_m) { /* the headline: pipelined against naive on the same GPUs */
            char naive_name[128];
            snprintf(metric, sizeof metric, "pipelined_best_d%d_g%d_step_time_m%d", depth, G, best_m);
            snprintf(naive_name, sizeof naive_name, "naive_d%d_g%d_step_time", depth, G);
            hpdl_csv_row(csv, metric, best_ms, "ms", naive_name, naive_ms, 0);
            printf("  -> %d GPUs: pipelined (m = %d) takes %.3f of the naive step (%.2fx faster), %.2fx the 1-GPU speed\n",
                   G, best_m, best_ms / naive_ms, naive_ms / best_ms, one.ms / best_ms);
        }
        hpdl_cuda_deep_linear_destroy(&m);
    }
    for (k = 0; k < 2; k++) HPDL_FREE(ref.delta[k]);
    hpdl_cuda_l2_flusher_destroy(&flush);
    return ok;
}

int main(int argc, char **argv) {
    options o;
    FILE *csv;
    int d, ok = 1;
    if (!hpdl_cuda_available()) { printf("model_parallel: no GPU, nothing to bench\n"); return 0; }
    parse(argc, argv, &o);
    if (o.gpus < 1 || o.gpus > hpdl_cuda_device_count() || o.dim < 1 || o.batch < 1) {
        fprintf(stderr, "model_parallel: bad --gpus/--dim/--batch (GPUs visible: %d)\n", hpdl_cuda_device_count());
        return EXIT_FAILURE;
    }
    HPDL_CHECK(hpdl_cuda_devices_print(stdout));
    printf("speedup = 1-GPU step / this step; idle = measured mean fraction of the step a device is not computing;\n"
           "bubble = (G-1)/(m+G-1); fwd moves/MiB: activations sent forward in one step\n");
    csv = hpdl_csv_open("bench/results", "model_parallel");
    for (d = 0; d < o.n_depth; d++) ok &= bench_depth(&o, o.depth[d], csv);
    if (csv) fclose(csv);
    printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : EXIT_FAILURE;
}
