/* bench/model_parallel: the deep linear model over GPUs, naive, GPipe and
   1F1B.

   usage: model_parallel [--depth 8[,24,...]] [--dim 4096] [--batch 512]
                         [--micro 1,2,4,8,16] [--gpus G (0: all)] [--virtual] [--min-gpus G0]
                         [--stages-per-gpu 1[,V...]] [--output DIR] [--help] [--version]

   For each depth: the model on 1 GPU, then on G = 2 .. all GPUs (layers
   split evenly, hpdl_place_even): naive model parallelism (one device busy
   at a time, weight gradients inside the backward), then GPipe with each m
   of --micro (m = 1: one micro-batch, weight gradients deferred, which
   already overlaps devices), then 1F1B with each m (a model made for it:
   stage g stores min(m, G - g) micro-batches). Every run is checked first against the 1-GPU
   step (check_step says how), and the forward pass makes m (G - 1)
   transfers. Then the step is timed (CUDA events, median, L2 flushed) and
   one step is profiled: each device's busy time, so the measured idle
   fraction sits beside the GPipe bubble (G-1)/(m+G-1). Memory per GPU:
   the activations the devices on it held at their worst moment (what the
   schedule kept, hpdl_cuda_deep_linear_peak_act_bytes, summed over the
   logical devices a GPU runs), and the whole model's memory as
   cudaMemGetInfo saw it grow when the model was made. CSV:
   model_parallel.csv, headline = pipelined (best of GPipe and 1F1B, best
   m) step time against naive on the same GPUs (ratio = naive / pipelined).

   --virtual: G may exceed the GPUs visible; logical device d runs on GPU
   d % visible (the checks mean the same; the times are not multi-GPU, and
   such rows are named ..._logical in the CSV). --min-gpus G0: start at
   G0 devices instead of 2.

   --stages-per-gpu V (interleaved stages): GPipe and 1F1B also run on
   G x V stages of depth / (G V) layers, stage k on GPU k % G, so each GPU
   holds V chunks of layers that are not adjacent. The stages on one GPU
   share its stream and GPipe queues them breadth-first (every micro-batch
   of the first chunk, then of the next), so a GPU works on one chunk while
   the next waits for the other GPU, and the bubble shrinks to about 1/V of
   GPipe's. Such rows are named ..._vV in the CSV and compared with naive
   on G GPUs. */
#include "hpdl_cuda.cuh"

#define MAX_LIST 16

typedef struct options {
    int depth[MAX_LIST], n_depth, micro[MAX_LIST], n_micro, dim, batch, gpus, min_gpus, virtual_devices;
    int per_gpu[MAX_LIST], n_per_gpu;
} options;


static void parse(int argc, char **argv, options *o) {
    const char *depth = "8", *micro = "1,2,4,8,16", *per_gpu = "1", *output = NULL;
    hpdl_cli_option opts[9];
    o->dim = 4096;
    o->batch = 512;
    o->gpus = 0;
    o->min_gpus = 2;
    o->virtual_devices = 0;
    opts[0] = hpdl_cli_string("depth", 0, &depth, "D[,D...]", "depths (linear layers)");
    opts[1] = hpdl_cli_int("dim", 0, &o->dim, 1, 1 << 16, "width of every layer");
    opts[2] = hpdl_cli_int("batch", 0, &o->batch, 1, 1 << 20, "rows per step");
    opts[3] = hpdl_cli_string("micro", 0, &micro, "M[,M...]", "micro-batch counts of the pipeline");
    opts[4] = hpdl_cli_int("gpus", 0, &o->gpus, 0, HPDL_CUDA_MAX_DEVICES, "GPUs (0: all)");
    opts[5] = hpdl_cli_flag("virtual", 0, &o->virtual_devices, "more devices than GPUs: device d on GPU d % visible");
    opts[6] = hpdl_cli_string("output", 0, &output, "DIR", "folder for model_parallel.csv ($HPDL_RESULTS, else .)");
    opts[7] = hpdl_cli_int("min-gpus", 0, &o->min_gpus, 2, HPDL_CUDA_MAX_DEVICES, "fewest devices to run (default 2)");
    opts[8] = hpdl_cli_string("stages-per-gpu", 0, &per_gpu, "V[,V...]", "interleaved stages: V chunks of layers a GPU");
    hpdl_cli_parse(argc, argv, "model_parallel", "The deep linear model over GPUs: naive, GPipe and 1F1B.", opts, 9);
    if (hpdl_arg_int_list("--depth", depth, 1, 1 << 20, o->depth, MAX_LIST, &o->n_depth) != HPDL_OK ||
        hpdl_arg_int_list("--micro", micro, 1, 1 << 20, o->micro, MAX_LIST, &o->n_micro) != HPDL_OK ||
        hpdl_arg_int_list("--stages-per-gpu", per_gpu, 1, 1 << 20, o->per_gpu, MAX_LIST, &o->n_per_gpu) != HPDL_OK)
        exit(2);
    hpdl_csv_set_dir(output);
}

static const float LR = 1e-4f;

/* The checked step's learning rate. The check compares W_after - W_before
   of two runs, and W_after is rounded to f32: at LR an update (~1e-5) is
   only ~1e4 ulps of its weight (~1e-2, ulp ~1e-9), so two runs whose
   gradients differ in the 7th digit round some weights apart by an ulp,
   ~1e-4 of an update each. 100 times the step keeps that rounding below
   the tolerances; the weights are set back to the seeded start afterwards. */
static const float CHECK_LR = 1e-2f;

/* What one step of the 1-GPU model did: the reference of every check. */
typedef struct reference {
    float loss;
    float *delta[2]; /* weight change of the first and last layers */
} reference;

/* First step from the seeded start: loss and the two layers' changes. */
static void first_step(hpdl_cuda_deep_linear *m, int micro, float lr, float *loss, float *delta[2]) {
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
    HPDL_CHECK(hpdl_cuda_deep_linear_step(m, micro, lr, 0));
    HPDL_CHECK(hpdl_cuda_deep_linear_loss(m, loss));
    for (k = 0; k < 2; k++) {
        HPDL_CHECK(hpdl_cuda_deep_linear_get_weights(m, layers[k], before));
        for (i = 0; i < ww; i++) delta[k][i] = before[i] - delta[k][i];
    }
    HPDL_CHECK(hpdl_cuda_deep_linear_init(m, 1)); /* timing starts from the seeded model */
    HPDL_FREE(before);
}

static double rel_diff(size_t n, const float *a, const float *b) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) { num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]); den += (double)b[i] * b[i]; }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* How far a run's first step is from the 1-GPU step: loss, and the
   updates of the last and the first layer (relative, 2-norm). */
typedef struct check { double loss, last, first; } check;

/* Tolerances. The loss and the last layer's update are continuous in the
   rounding: other GEMM kernels (micro-batches have fewer rows) sum in
   another order, ~1e-6 apart. The first layer's update is not: its
   gradient passed every ReLU's derivative, a step function, and a
   pre-activation within ~1e-7 of zero (a few of the batch x dim per layer)
   flips its mask between two runs, moving that gradient entry by all of
   itself; the sum over ~1e-6 of entries flipped per layer is ~1e-3 of the
   norm (sqrt of the fraction), growing with depth (1.5e-3 at depth 8,
   3.8e-3 at 24, measured). Both runs are equally good f32. A lost
   micro-batch of 16 moves an update by >= 1/16, a wrong sign by 2. */
static const double TOL_LOSS = 1e-5, TOL_LAST = 1e-5, TOL_FIRST = 2e-2;

static int check_passes(const check *c) {
    return c->loss <= TOL_LOSS && c->last <= TOL_LAST && c->first <= TOL_FIRST;
}

static check check_step(hpdl_cuda_deep_linear *m, int micro, float lr, const reference *ref) {
    float loss, *delta[2];
    check c;
    first_step(m, micro, lr, &loss, delta);
    c.loss = fabs(loss - ref->loss) / fabs(ref->loss);
    c.first = rel_diff((size_t)m->dim * m->dim, delta[0], ref->delta[0]);
    c.last = rel_diff((size_t)m->dim * m->dim, delta[1], ref->delta[1]);
    HPDL_FREE(delta[0]);
    HPDL_FREE(delta[1]);
    return c;
}

/* Checks a run (micro as for the step) and its transfers; says why it fails. */
static int check_run(hpdl_cuda_deep_linear *m, int micro, const reference *ref, check *c) {
    long long want = (long long)hpdl_cuda_deep_linear_slices(micro) * (m->lanes.dev.count - 1);
    int ok;
    *c = check_step(m, micro, CHECK_LR, ref);
    ok = check_passes(c) && m->fwd.transfers == want && m->bwd.transfers == want;
    if (!ok) printf("  CHECK FAILED: G=%d m=%d: loss %.1e, last layer %.1e, first layer %.1e, transfers %lld/%lld\n",
                    m->lanes.dev.count, micro, c->loss, c->last, c->first, m->fwd.transfers, m->bwd.transfers);
    return ok;
}

/* The check must be able to fail: the 1-GPU step with 15/16 of the
   gradient (as if one micro-batch of 16 were lost) and with the wrong sign. */
static int check_can_fail(hpdl_cuda_deep_linear *one, const reference *ref) {
    check short_c = check_step(one, 1, CHECK_LR * 15.0f / 16.0f, ref), sign_c = check_step(one, 1, -CHECK_LR, ref);
    int ok = !check_passes(&short_c) && !check_passes(&sign_c);
    printf("  check's own test: 1/16 short -> last %.1e first %.1e; wrong sign -> last %.1e first %.1e: %s\n",
           short_c.last, short_c.first, sign_c.last, sign_c.first, ok ? "both rejected" : "NOT REJECTED");
    return ok;
}

typedef struct step_ctx { hpdl_cuda_deep_linear *m; int micro; hpdl_status status; } step_ctx;

static void run_step(void *ctx, cudaStream_t stream) {
    step_ctx *c = (step_ctx *)ctx;
    hpdl_status s = hpdl_cuda_deep_linear_step(c->m, c->micro, LR, stream);
    if (s != HPDL_OK) c->status = s;
}

typedef struct result { double ms, idle, bubble, act_mib; long long fwd_transfers, fwd_bytes; } result;

/* The activations held at the worst moment of the last step, in MiB, on
   the GPU that held most: a GPU running several logical devices holds the
   sum of theirs. */
static double peak_act_mib_per_gpu(const hpdl_cuda_deep_linear *m, int micro) {
    double per_gpu[HPDL_CUDA_MAX_DEVICES] = {0}, most = 0.0;
    int g;
    for (g = 0; g < m->lanes.dev.count; g++)
        per_gpu[m->lanes.dev.physical[g]] += hpdl_cuda_deep_linear_peak_act_bytes(m, g, micro) / 1048576.0;
    for (g = 0; g < HPDL_CUDA_MAX_DEVICES; g++) most = per_gpu[g] > most ? per_gpu[g] : most;
    return most;
}

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
    r.bubble = (double)(G - 1) / (hpdl_cuda_deep_linear_slices(micro) + G - 1); /* naive: (G-1)/G */
    r.act_mib = peak_act_mib_per_gpu(m, micro);
    return r;
}

/* The model's memory on each GPU as cudaMemGetInfo sees it: in use now
   minus in use before the model was made (before[]). */
typedef struct gpu_memory { size_t before[HPDL_CUDA_MAX_DEVICES]; double mib[HPDL_CUDA_MAX_DEVICES]; int n; } gpu_memory;

static void memory_before(gpu_memory *mem) {
    size_t total;
    int d;
    mem->n = hpdl_cuda_device_count();
    for (d = 0; d < mem->n; d++) HPDL_CHECK(hpdl_cuda_mem_in_use(d, &mem->before[d], &total));
}

static void memory_after(gpu_memory *mem) {
    size_t used, total;
    int d;
    for (d = 0; d < mem->n; d++) {
        HPDL_CHECK(hpdl_cuda_mem_in_use(d, &used, &total));
        mem->mib[d] = ((double)used - (double)mem->before[d]) / 1048576.0;
    }
}

/* Where a run's CSV rows and anchors are named: depth, GPUs, stages a
   GPU (interleaved when above 1), and whether several devices of the
   plain schedule share a GPU. */
typedef struct run_place { int depth, G, per_gpu, logical; } run_place;

/* Makes the model for `micro` (a 1F1B model for HPDL_DL_1F1B(m)) on the
   place's G x per_gpu devices, its memory per GPU measured. */
static void make_model(hpdl_cuda_deep_linear *m, const options *o, const run_place *p, const int *first, int micro,
                       gpu_memory *mem) {
    int stages = p->G * p->per_gpu, virt = o->virtual_devices || p->per_gpu > 1;
    memory_before(mem);
    if (micro < 0)
        HPDL_CHECK(hpdl_cuda_deep_linear_create_1f1b(m, p->depth, o->dim, o->batch, -micro, first, stages, virt));
    else
        HPDL_CHECK(hpdl_cuda_deep_linear_create(m, p->depth, o->dim, o->batch, first, stages, virt));
    memory_after(mem);
}

/* The schedule's name: "naive", "gpipe m=4", "1f1b m=4" (sep: " " or "_"). */
static void schedule_name(int micro, const char *sep, char *out, size_t size) {
    if (micro == HPDL_DL_NAIVE) snprintf(out, size, "naive");
    else snprintf(out, size, "%s%sm%s%d", micro < 0 ? "1f1b" : "gpipe", sep, *sep == ' ' ? "=" : "",
                  hpdl_cuda_deep_linear_slices(micro));
}

/* devs: "2", or "2x3" for 2 GPUs of 3 interleaved stages each. */
static void print_row(const char *devs, int micro, const result *r, double naive_ms, double one_ms, const check *c,
                      const gpu_memory *mem) {
    int d;
    char mode[32], idle[16] = "     -"; /* not measured for interleaved stages */
    if (!strcmp(devs, "1")) snprintf(mode, sizeof mode, "one GPU");
    else schedule_name(micro, " ", mode, sizeof mode);
    if (r->idle >= 0.0) snprintf(idle, sizeof idle, "%6.3f", r->idle);
    printf("  %4s  %-12s %8.2f  %7.3f  %7.3f  %6.3f  %s  %9lld  %7.1f  %.0e/%.0e  %8.1f  ", devs, mode, r->ms,
           naive_ms > 0.0 ? r->ms / naive_ms : 1.0, one_ms / r->ms, r->bubble, idle, r->fwd_transfers,
           r->fwd_bytes / 1048576.0, c->last, c->first, r->act_mib);
    for (d = 0; d < mem->n; d++) printf("%s%.0f", d ? "/" : "", mem->mib[d]);
    printf("\n");
}

static void run_name(const run_place *p, int micro, char *out, size_t size) {
    char sched[32], stages[16] = "";
    schedule_name(micro, "_", sched, sizeof sched);
    if (p->per_gpu > 1) snprintf(stages, sizeof stages, "_v%d", p->per_gpu);
    snprintf(out, size, "%s_d%d_g%d%s%s", sched, p->depth, p->G, stages, p->logical ? "_logical" : "");
}

/* One run: checked, timed, a row printed and its CSV rows (memory against
   GPipe with the same m and stages when gpipe_mib > 0). */
static result bench_run(hpdl_cuda_deep_linear *m, int micro, const reference *ref, hpdl_cuda_l2_flusher *flush,
                        double naive_ms, double one_ms, double gpipe_mib, const gpu_memory *mem, const run_place *p,
                        FILE *csv, int *ok) {
    int depth = m->depth, G = m->lanes.dev.count, slices = hpdl_cuda_deep_linear_slices(micro), d;
    char run[64], metric[128], anchor[128], devs[16];
    double model_mib = 0.0;
    check c;
    result r;
    *ok &= check_run(m, micro, ref, &c);
    r = measure(m, micro, flush);
    snprintf(devs, sizeof devs, "%d", G);
    if (p->per_gpu > 1) { /* the stages of a GPU overlap: their busy times do not add up to the GPU's */
        snprintf(devs, sizeof devs, "%dx%d", p->G, p->per_gpu);
        r.bubble = (double)(p->G - 1) / (p->per_gpu * slices + p->G - 1);
        r.idle = -1.0;
    }
    print_row(devs, micro, &r, naive_ms, one_ms, &c, mem);
    snprintf(anchor, sizeof anchor, "single_gpu_d%d_step_time", depth);
    run_name(p, micro, run, sizeof run);
    snprintf(metric, sizeof metric, "%s_step_time", run);
    hpdl_csv_row(csv, metric, r.ms, "ms", anchor, one_ms, 0);
    snprintf(metric, sizeof metric, "%s_peak_act_mib_per_gpu", run);
    run_name(p, slices, anchor, sizeof anchor); /* GPipe with the same m on the same stages */
    strcat(anchor, "_peak_act_mib_per_gpu");
    hpdl_csv_row(csv, metric, r.act_mib, "MiB", gpipe_mib > 0.0 ? anchor : "", gpipe_mib > 0.0 ? gpipe_mib : r.act_mib, 0);
    for (d = 0; d < mem->n; d++) model_mib = mem->mib[d] > model_mib ? mem->mib[d] : model_mib;
    snprintf(metric, sizeof metric, "%s_model_mib_per_gpu_memgetinfo", run);
    hpdl_csv_row(csv, metric, model_mib, "MiB", "", model_mib, 0);
    snprintf(metric, sizeof metric, "%s_fwd_transfers", run);
    hpdl_csv_row(csv, metric, (double)r.fwd_transfers, "count", "expected_m_times_g_minus_1", (double)slices * (G - 1), 1);
    snprintf(metric, sizeof metric, "%s_idle_fraction", run);
    if (r.idle >= 0.0) hpdl_csv_row(csv, metric, r.idle, "fraction", "gpipe_bubble", r.bubble, 0);
    return r;
}
/* The fastest pipelined run so far. */
typedef struct best_run { int micro, per_gpu; double ms; } best_run;

static void keep_best(best_run *b, int micro, int per_gpu, double ms) {
    if (!b->micro || ms < b->ms) { b->micro = micro; b->per_gpu = per_gpu; b->ms = ms; }
}

/* The headline: the best pipelined run against naive on the same GPUs. */
static void headline(const run_place *p, const best_run *best, double naive_ms, double one_ms, FILE *csv) {
    char metric[128], naive_name[128], sched[32];
    run_place naive = *p;
    naive.per_gpu = 1;
    schedule_name(best->micro, "_", sched, sizeof sched);
    snprintf(metric, sizeof metric, "pipelined_best_d%d_g%d%s_step_time_%s", p->depth, p->G, p->logical ? "_logical" : "",
             sched);
    if (best->per_gpu > 1) snprintf(metric + strlen(metric), sizeof metric - strlen(metric), "_v%d", best->per_gpu);
    run_name(&naive, HPDL_DL_NAIVE, naive_name, sizeof naive_name);
    strcat(naive_name, "_step_time");
    hpdl_csv_row(csv, metric, best->ms, "ms", naive_name, naive_ms, 0);
    schedule_name(best->micro, " ", sched, sizeof sched);
    printf("  -> %d GPUs: best pipelined (%s, %d stage%s a GPU) takes %.3f of the naive step (%.2fx faster), "
           "%.2fx the 1-GPU speed\n", p->G, sched, best->per_gpu, best->per_gpu > 1 ? "s" : "", best->ms / naive_ms,
           naive_ms / best->ms, one_ms / best->ms);
}

/* Whether p->G x p->per_gpu stages can run: stage k must land on the GPU
   of device k % G (logical d runs on GPU d % visible), one layer a stage
   at least. */
static int stages_fit(const run_place *p) {
    int stages = p->G * p->per_gpu;
    if (p->per_gpu == 1) return 1;
    if (stages <= p->depth && stages <= HPDL_CUDA_MAX_DEVICES && p->G % hpdl_cuda_device_count() == 0) return 1;
    printf("  %d stages a GPU on %d GPUs: skipped (needs G x V <= depth, <= %d, and G a multiple of the %d GPUs "
           "visible)\n", p->per_gpu, p->G, HPDL_CUDA_MAX_DEVICES, hpdl_cuda_device_count());
    return 0;
}

/* GPipe with each m of --micro on one whole-batch model, then 1F1B with
   each m on a model made for it, on the place's G x per_gpu stages; the
   fastest is kept in *best. */
static int bench_pipelines(const options *o, const run_place *p, const reference *ref, double naive_ms, double one_ms,
                           hpdl_cuda_l2_flusher *flush, FILE *csv, best_run *best) {
    hpdl_cuda_deep_linear m;
    gpu_memory mem;
    double gpipe_mib[MAX_LIST];
    int first[HPDL_CUDA_MAX_DEVICES + 1], k, ok = 1;
    HPDL_CHECK(hpdl_place_even(p->depth, p->G * p->per_gpu, first));
    make_model(&m, o, p, first, HPDL_DL_NAIVE, &mem);
    if (p->per_gpu > 1) hpdl_cuda_deep_linear_print_map(&m, stdout);
    for (k = 0; k < o->n_micro; k++) {
        result r;
        if (o->batch % o->micro[k]) continue;
        r = bench_run(&m, o->micro[k], ref, flush, naive_ms, one_ms, 0.0, &mem, p, csv, &ok);
        gpipe_mib[k] = r.act_mib;
        keep_best(best, o->micro[k], p->per_gpu, r.ms);
    }
    hpdl_cuda_deep_linear_destroy(&m);
    for (k = 0; k < o->n_micro; k++) {
        int micro = HPDL_DL_1F1B(o->micro[k]);
        result r;
        if (o->batch % o->micro[k]) continue;
        make_model(&m, o, p, first, micro, &mem);
        r = bench_run(&m, micro, ref, flush, naive_ms, one_ms, gpipe_mib[k], &mem, p, csv, &ok);
        keep_best(best, micro, p->per_gpu, r.ms);
        hpdl_cuda_deep_linear_destroy(&m);
    }
    return ok;
}

/* G GPUs: naive, then the pipelines with each --stages-per-gpu V. */
static int bench_devices(const options *o, const run_place *p, const reference *ref, double one_ms,
                         hpdl_cuda_l2_flusher *flush, FILE *csv) {
    hpdl_cuda_deep_linear m;
    gpu_memory mem;
    best_run best = {0, 0, 0.0};
    run_place stages = *p;
    double naive_ms;
    int first[HPDL_CUDA_MAX_DEVICES + 1], v, ok = 1;
    HPDL_CHECK(hpdl_place_even(p->depth, p->G, first));
    make_model(&m, o, p, first, HPDL_DL_NAIVE, &mem);
    hpdl_cuda_deep_linear_print_map(&m, stdout);
    naive_ms = bench_run(&m, HPDL_DL_NAIVE, ref, flush, 0.0, one_ms, 0.0, &mem, p, csv, &ok).ms;
    hpdl_cuda_deep_linear_destroy(&m);
    for (v = 0; v < o->n_per_gpu; v++) {
        stages.per_gpu = o->per_gpu[v];
        if (stages_fit(&stages)) ok &= bench_pipelines(o, &stages, ref, naive_ms, one_ms, flush, csv, &best);
    }
    if (best.micro) headline(p, &best, naive_ms, one_ms, csv);
    return ok;
}

/* One depth: 1 GPU, then G = min_gpus .. gpus devices. */
static int bench_depth(const options *o, int depth, FILE *csv) {
    hpdl_cuda_deep_linear m;
    hpdl_cuda_l2_flusher flush;
    gpu_memory mem;
    reference ref;
    result one;
    run_place place;
    check exact = {0.0, 0.0, 0.0};
    int first[2], k, ok = 1;
    printf("\nDEPTH %d, DIM %d, batch %d, f32 (%.1f GFLOP a step)\n", depth, o->dim, o->batch,
           6.0 * depth * o->batch * (double)o->dim * o->dim / 1e9);
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    first[0] = 0; first[1] = depth;
    memory_before(&mem);
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, depth, o->dim, o->batch, first, 1, 0));
    memory_after(&mem);
    first_step(&m, 1, CHECK_LR, &ref.loss, ref.delta);
    ok &= check_can_fail(&m, &ref);
    printf("  devs  mode          step ms   /naive  speedup  bubble  idle    fwd moves  fwd MiB  check      "
           "act MiB/GPU  model MiB per GPU (cudaMemGetInfo)\n");
    one = measure(&m, 1, &flush);
    print_row("1", 1, &one, 0.0, one.ms, &exact, &mem);
    hpdl_cuda_deep_linear_destroy(&m);
    place.depth = depth;
    place.per_gpu = 1;
    for (place.G = o->min_gpus; place.G <= o->gpus && place.G <= depth; place.G++) {
        place.logical = place.G > hpdl_cuda_device_count();
        ok &= bench_devices(o, &place, &ref, one.ms, &flush, csv);
    }
    for (k = 0; k < 2; k++) HPDL_FREE(ref.delta[k]);
    hpdl_cuda_l2_flusher_destroy(&flush);
    return ok;
}

int main(int argc, char **argv) {
    options o;
    FILE *csv;
    int d, ok = 1;
    parse(argc, argv, &o);
    if (!hpdl_cuda_available()) { printf("model_parallel: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    if (o.gpus == 0) o.gpus = hpdl_cuda_device_count();
    if (o.gpus < 1 || (o.gpus > hpdl_cuda_device_count() && !o.virtual_devices) || o.dim < 1 || o.batch < 1) {
        fprintf(stderr, "model_parallel: bad --gpus/--dim/--batch (GPUs visible: %d)\n", hpdl_cuda_device_count());
        return EXIT_FAILURE;
    }
    HPDL_CHECK(hpdl_cuda_devices_print(stdout));
    printf("naive: one device busy at a time; gpipe m: m micro-batches, weight gradients deferred;\n"
           "1f1b m: PipeDream-flush, stage g holds at most min(m, G - g) micro-batches; act MiB/GPU: activations\n"
           "held at the worst moment on the GPU that held most (logical devices on one GPU summed);\n"
           "speedup = 1-GPU step / this step; idle = measured mean fraction of the step a device is not computing;\n"
           "bubble = (G-1)/(m+G-1), naive (G-1)/G, V interleaved stages a GPU (devs GxV) (G-1)/(Vm+G-1);\n"
           "fwd moves/MiB: activations sent forward in one step;\n"
           "check = relative error of the last/first layer's update against the 1-GPU step\n");
    csv = hpdl_csv_open(".", "model_parallel");
    for (d = 0; d < o.n_depth; d++) ok &= bench_depth(&o, o.depth[d], csv);
    if (csv) fclose(csv);
    printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : EXIT_FAILURE;
}
