/* bench/conv: every rung of the convolution ladder against cuDNN, per layer,
   type and pass.

   Layers: ResNet-50 at batch 128 (the 7x7/2 stem with 3 input channels, the
   3x3 convolutions of conv2_x..conv5_x, four 1x1 ones) and VGG-16 at batch
   32 (five 3x3 layers). Types: f32 in NCHW (TF32 off, cuDNN's fastest
   algorithm may be Winograd or FFT), f16 and bf16 in NHWC (f32 sums, cuDNN
   with tensor-op math), and on request f64 in NCHW. Passes: forward,
   backward-data, backward-filter.
   Each rung is first checked against cuDNN's output on the same random
   inputs (max|err| / max|ref|), then timed in turns with cuDNN's fastest
   algorithm for that layer (found once by cudnnFind*AlgorithmEx): median
   of event-timed runs, L2 flushed before each, the GPU held until all are
   queued (the host's time for cuDNN's descriptors stays out). The cudnn
   row is cuDNN timed alone; the ratios, and the anchor in the CSVs, come
   from cuDNN timed in turns with the rung. TFLOP/s counts the direct
   convolution's 2 N K P Q C R S / groups flops whatever the algorithm.
   Writes conv.csv (headline: the best rung per layer, type and pass, and
   the geometric mean over the ResNet-50 3x3 layers) and conv_all.csv (every
   row) into --output DIR, else $HPDL_RESULTS, else the current folder.

   usage: conv [--quick | --tune] [--precision f32|f16|bf16|f64] [--pass forward|backward-data|backward-filter] [--rung R]
               [--layout nchw|nhwc]
       --quick  three layers (conv3_x 3x3, a 1x1, the stem), fewer runs
       --tune   the mma rung's tile shapes on the ResNet-50 layers (f16
                forward and backward-data), each timed in turns with cuDNN
       --precision P  one type only (--type P: the same); f64 (NCHW, the
                      reference type) runs only when named  --pass P  one pass only
       --rung R       one rung only (cuDNN is always timed: the anchor)
       --layout L     f32's layout (default nchw; nhwc, the GPU CNN's, is reported as type f32-nhwc)
       --output DIR   folder for the CSVs      --help, --version */
#include "hpdl_cuda.cuh"

typedef struct layer {
    const char *name;
    int n, c, h, w, k, kernel, stride, pad;
    int quick; /* in --quick */
} layer;

static const layer k_layers[] = {
    {"r50_stem_7x7s2", 128, 3, 224, 224, 64, 7, 2, 3, 1},
    {"r50_conv2_3x3", 128, 64, 56, 56, 64, 3, 1, 1, 0},
    {"r50_conv3_3x3", 128, 128, 28, 28, 128, 3, 1, 1, 1},
    {"r50_conv4_3x3", 128, 256, 14, 14, 256, 3, 1, 1, 0},
    {"r50_conv5_3x3", 128, 512, 7, 7, 512, 3, 1, 1, 0},
    {"r50_conv2_1x1_256to64", 128, 256, 56, 56, 64, 1, 1, 0, 0},
    {"r50_conv2_1x1_64to256", 128, 64, 56, 56, 256, 1, 1, 0, 0},
    {"r50_conv4_1x1_1024to256", 128, 1024, 14, 14, 256, 1, 1, 0, 1},
    {"r50_conv5_1x1_512to2048", 128, 512, 7, 7, 2048, 1, 1, 0, 0},
    {"vgg_conv1_2", 32, 64, 224, 224, 64, 3, 1, 1, 0},
    {"vgg_conv2_2", 32, 128, 112, 112, 128, 3, 1, 1, 0},
    {"vgg_conv3_2", 32, 256, 56, 56, 256, 3, 1, 1, 0},
    {"vgg_conv4_2", 32, 512, 28, 28, 512, 3, 1, 1, 0},
    {"vgg_conv5_2", 32, 512, 14, 14, 512, 3, 1, 1, 0},
};
enum { N_LAYERS = sizeof k_layers / sizeof k_layers[0] };

static const hpdl_conv_algo k_rungs[] = {HPDL_CONV_DIRECT, HPDL_CONV_IMPLICIT_GEMM, HPDL_CONV_MMA, HPDL_CONV_WGMMA,
                                         HPDL_CONV_FEW_MMA, HPDL_CONV_WINOGRAD, HPDL_CONV_IM2COL};
enum { N_RUNGS = sizeof k_rungs / sizeof k_rungs[0] };

enum { FORWARD, BACKWARD_DATA, BACKWARD_FILTER, N_PASSES };
static const char *const k_pass_names[] = {"forward", "backward-data", "backward-filter"};

typedef struct bench_opts { int quick, tune; const char *only_type, *only_pass, *only_rung, *f32_layout; } bench_opts;

/* Random values in [-1, 1] from a hash of the index (no zeros in practice). */
static __device__ float bench_value(size_t i, unsigned seed) {
    unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(i >> 32) ^ seed * 0x9e3779b9u;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
static __device__ void bench_set(double *x, float v) { *x = v; }
static __device__ void bench_set(float *x, float v) { *x = v; }
static __device__ void bench_set(__half *x, float v) { *x = __float2half(v); }
static __device__ void bench_set(__nv_bfloat16 *x, float v) { *x = __float2bfloat16(v); }

template <typename T> __global__ void bench_fill(T *x, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bench_set(&x[i], bench_value(i, seed));
}

static __device__ double bench_f64(double x) { return x; }
static __device__ double bench_f64(float x) { return x; }
static __device__ double bench_f64(__half x) { return __half2float(x); }
static __device__ double bench_f64(__nv_bfloat16 x) { return __bfloat162float(x); }

/* out[0] = max |c - ref|, out[1] = max |ref| (non-negative doubles order as unsigned ints). */
template <typename T> __global__ void bench_compare(const T *c, const T *ref, size_t n, unsigned long long *out) {
    double err = 0, mag = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double a = bench_f64(c[i]), b = bench_f64(ref[i]), d = fabs(a - b);
        if (!(d <= err)) err = d != d ? INFINITY : d; /* NaN counts as infinitely wrong */
        mag = fmax(mag, fabs(b));
    }
    atomicMax(&out[0], (unsigned long long)__double_as_longlong(err));
    atomicMax(&out[1], (unsigned long long)__double_as_longlong(mag));
}

/* One layer's tensors on the device: x, w, y (dy for the backward passes),
   the rung's output and cuDNN's (ref), each as large as the largest. */
template <typename T> struct bench_data {
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, wd, yd;
    size_t nx, nw, ny, most;
    T *x, *w, *y, *out, *ref;
    unsigned long long *d_err;
};

/* One timed call: a rung on one pass of one layer. */
template <typename T> struct bench_call {
    hpdl_conv_algo algo;
    int pass;
    const bench_data<T> *d;
    T *out;
};

template <typename T> static hpdl_status call(const bench_call<T> *c, cudaStream_t s) {
    const bench_data<T> *d = c->d;
    if (c->pass == FORWARD) return hpdl_cuda_conv2d_forward_algo(c->algo, &d->p, &d->xd, d->x, d->w, &d->yd, c->out, s);
    if (c->pass == BACKWARD_DATA)
        return hpdl_cuda_conv2d_backward_data_algo(c->algo, &d->p, &d->yd, d->y, d->w, &d->xd, c->out, s);
    return hpdl_cuda_conv2d_backward_filter_algo(c->algo, &d->p, &d->xd, d->x, &d->yd, d->y, c->out, s);
}

template <typename T> static void bench_run(void *ctx, cudaStream_t s) { call((const bench_call<T> *)ctx, s); }

/* Elements of the pass's output. */
template <typename T> static size_t out_count(const bench_data<T> *d, int pass) {
    return pass == FORWARD ? d->ny : pass == BACKWARD_DATA ? d->nx : d->nw;
}

template <typename T> static void bench_data_create(bench_data<T> *d, const layer *l, hpdl_layout layout) {
    d->p = hpdl_conv2d_params_make(l->kernel, l->stride, l->pad, 1, 1);
    d->xd = hpdl_tensor4_make(l->n, l->c, l->h, l->w, layout);
    HPDL_CHECK(hpdl_conv2d_output_desc(&d->p, &d->xd, l->k, &d->yd));
    HPDL_CHECK(hpdl_conv2d_filter_desc(&d->p, &d->xd, l->k, &d->wd));
    d->nx = hpdl_tensor4_count(&d->xd);
    d->nw = hpdl_tensor4_count(&d->wd);
    d->ny = hpdl_tensor4_count(&d->yd);
    d->most = d->nx > d->ny ? d->nx : d->ny;
    HPDL_CUDA_CHECK(cudaMalloc(&d->x, d->nx * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->w, d->nw * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->y, d->ny * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->out, d->most * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->ref, d->most * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->d_err, 2 * sizeof *d->d_err));
    bench_fill<<<1024, 256>>>(d->x, d->nx, 1u);
    bench_fill<<<1024, 256>>>(d->w, d->nw, 2u);
    bench_fill<<<1024, 256>>>(d->y, d->ny, 3u);
    HPDL_CUDA_CHECK(cudaGetLastError());
}

template <typename T> static void bench_data_destroy(bench_data<T> *d) {
    cudaFree(d->x); cudaFree(d->w); cudaFree(d->y); cudaFree(d->out); cudaFree(d->ref); cudaFree(d->d_err);
}

/* max |out - ref| / max |ref| over the pass's output. */
template <typename T> static double rel_error(const bench_data<T> *d, size_t n) {
    unsigned long long h[2];
    double err, mag;
    HPDL_CUDA_CHECK(cudaMemset(d->d_err, 0, 2 * sizeof *d->d_err));
    bench_compare<<<1024, 256>>>(d->out, d->ref, n, d->d_err);
    HPDL_CUDA_CHECK(cudaGetLastError());
    HPDL_CUDA_CHECK(cudaMemcpy(h, d->d_err, sizeof h, cudaMemcpyDeviceToHost));
    memcpy(&err, &h[0], sizeof err);
    memcpy(&mag, &h[1], sizeof mag);
    return mag > 0 ? err / mag : err;
}

/* Tolerance against cuDNN, as max error over max |ref|. f32 in either
   layout: VGG's conv2_2 backward-filter (401,408-term sums) was 1.13e-4 from
   cuDNN's NHWC result with three different rungs (H200, 2026-11-28); f64
   keeps about 1e-13 on every layer. */
static double bench_tol(const char *type) {
    if (!strcmp(type, "f64")) return 1e-10;
    return strncmp(type, "f32", 3) == 0 ? 2e-4 : 2e-2;
}

typedef struct bench_row {
    const char *layer, *type, *pass, *rung, *status; /* status: ok, skipped, unsupported, WRONG, unsteady (anchor) */
    double ms, tflops, ratio, err;
} bench_row;

typedef struct bench_out {
    FILE *head, *all;
    int good;
} bench_out;

static void print_row(bench_out *o, const bench_row *r) {
    printf("%-24s %-5s %-15s %-14s %10.3f %9.2f %7.3f %9.1e  %s\n", r->layer, r->type, r->pass, r->rung, r->ms, r->tflops,
           r->ratio, r->err, r->status);
    fflush(stdout);
    if (o->all)
        fprintf(o->all, "conv_%s_%s_%s_%s,%.6g,TFLOP/s,cudnn,%.6g,%.4f,%s,%s,%s,%s,%.6g,%.3g,%s\n", r->type, r->pass,
                r->layer, r->rung, r->tflops, r->ratio > 0 ? r->tflops / r->ratio : 0.0, r->ratio, r->layer, r->type,
                r->pass, r->rung, r->ms, r->err, r->status);
}

/* Median ms of one call, and of cuDNN timed in turns with it (anchor_ms;
   NULL: the call alone). About 1 s per rung (0.3 s quick), 3 to 50 runs. */
template <typename T>
static void time_call(bench_call<T> *c, bench_call<T> *anchor, const bench_opts *opt, hpdl_cuda_l2_flusher *fl, double *ms,
                      double *anchor_ms) {
    hpdl_cuda_timer t;
    double once, budget = opt->quick ? 300.0 : 1000.0, both[2];
    int reps, warmup, most = opt->quick ? 20 : 50;
    hpdl_cuda_work_fn runs[2] = {bench_run<T>, bench_run<T>};
    void *ctxs[2] = {c, anchor};
    HPDL_CHECK(hpdl_cuda_timer_create(&t, 0));
    hpdl_cuda_timer_start(&t);
    bench_run<T>(c, 0);
    once = hpdl_cuda_timer_stop_ms(&t);
    hpdl_cuda_timer_destroy(&t);
    reps = once > 0 ? (int)(budget / once) : most;
    reps = reps < 3 ? 3 : reps > most ? most : reps;
    warmup = once > 200 ? 0 : 2;
    if (!anchor) {
        HPDL_CHECK(hpdl_cuda_time_median_ms(bench_run<T>, c, 0, warmup, reps, fl, ms));
        return;
    }
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(2, runs, ctxs, 0, warmup, reps, fl, both));
    *ms = both[0];
    *anchor_ms = both[1];
}

/* Best rung of one (layer, type, pass) against cuDNN timed in turns with it. */
typedef struct bench_best { const char *rung; double tflops, anchor_tflops; } bench_best;

/* Every rung on one pass of one layer. Returns the best rung (rung NULL if none ran). */
template <typename T>
static bench_best bench_pass(bench_out *o, const bench_opts *opt, const layer *l, const char *type, bench_data<T> *d,
                             int pass, hpdl_cuda_l2_flusher *fl) {
    double flops = 2.0 * l->n * l->k * d->yd.h * d->yd.w * l->c * l->kernel * l->kernel;
    size_t n_out = out_count(d, pass);
    bench_call<T> cudnn = {HPDL_CONV_CUDNN, pass, d, d->ref};
    bench_best best = {NULL, 0, 0};
    bench_row row;
    hpdl_status s;
    double alone_ms;
    memset(&row, 0, sizeof row);
    row.layer = l->name; row.type = type; row.pass = k_pass_names[pass]; row.rung = "cudnn";
    if ((s = call(&cudnn, 0)) != HPDL_OK) { /* the first call finds cuDNN's fastest algorithm */
        row.status = s == HPDL_ERR_UNSUPPORTED ? "unsupported" : "failed";
        print_row(o, &row);
        return best;
    }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    time_call(&cudnn, (bench_call<T> *)NULL, opt, fl, &row.ms, NULL);
    alone_ms = row.ms;
    row.tflops = flops / (row.ms * 1e-3) / 1e12;
    row.ratio = 1;
    row.status = "ok";
    print_row(o, &row);
    for (int r = 0; r < N_RUNGS; r++) {
        bench_call<T> c = {k_rungs[r], pass, d, d->out};
        double anchor_ms = 0;
        memset(&row, 0, sizeof row);
        row.layer = l->name; row.type = type; row.pass = k_pass_names[pass]; row.rung = hpdl_conv_algo_name(c.algo);
        if (opt->only_rung && strcmp(opt->only_rung, row.rung) != 0) continue;
        if (c.algo == HPDL_CONV_DIRECT && pass == BACKWARD_FILTER) {
            row.status = "skipped"; /* one thread per weight summing over N*P*Q: minutes on these layers */
            print_row(o, &row);
            continue;
        }
        HPDL_CHECK(hpdl_cuda_poison(d->out, n_out * sizeof(T)));
        s = call(&c, 0);
        if (s == HPDL_ERR_UNSUPPORTED) { row.status = "unsupported"; print_row(o, &row); continue; }
        HPDL_CHECK(s);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        row.err = rel_error(d, n_out);
        if (!(row.err <= bench_tol(type))) { row.status = "WRONG"; o->good = 0; print_row(o, &row); continue; }
        time_call(&c, &cudnn, opt, fl, &row.ms, &anchor_ms);
        row.tflops = flops / (row.ms * 1e-3) / 1e12;
        row.ratio = anchor_ms / row.ms;
        /* cuDNN in turns 1.5x slower than alone: the host fell behind the
           GPU (the timing gate gave up) and its waits landed in cuDNN's
           intervals. Such a row is not counted. */
        const bool unsteady = anchor_ms > 1.5 * alone_ms;
        row.status = unsteady ? "unsteady" : "ok";
        print_row(o, &row);
        if (unsteady) continue;
        if (!best.rung || row.ratio > best.tflops / best.anchor_tflops) {
            best.rung = row.rung;
            best.tflops = row.tflops;
            best.anchor_tflops = flops / (anchor_ms * 1e-3) / 1e12;
        }
    }
    if (best.rung && o->head) {
        char metric[160];
        snprintf(metric, sizeof metric, "conv_%s_%s_%s_best_%s", type, k_pass_names[pass], l->name, best.rung);
        hpdl_csv_row(o->head, metric, best.tflops, "TFLOP/s", "cudnn", best.anchor_tflops, 1);
    }
    return best;
}

/* All layers and passes of one type; headline geometric means over the ResNet-50 3x3 layers. */
template <typename T>
static void bench_type(bench_out *o, const bench_opts *opt, const char *type, hpdl_layout layout, hpdl_cuda_l2_flusher *fl) {
    double log_sum[N_PASSES] = {0}, log_anchor[N_PASSES] = {0};
    int count[N_PASSES] = {0};
    const size_t named = opt->only_type ? strlen(opt->only_type) : 0; /* "f32" names f32-nhwc too */
    if (opt->only_type && (strncmp(opt->only_type, type, named) != 0 || (type[named] && type[named] != '-'))) return;
    for (int i = 0; i < N_LAYERS; i++) {
        const layer *l = &k_layers[i];
        bench_data<T> d;
        if (opt->quick && !l->quick) continue;
        bench_data_create(&d, l, layout);
        for (int pass = 0; pass < N_PASSES; pass++) {
            if (opt->only_pass && strcmp(opt->only_pass, k_pass_names[pass]) != 0) continue;
            bench_best b = bench_pass(o, opt, l, type, &d, pass, fl);
            if (b.rung && strncmp(l->name, "r50_conv", 8) == 0 && strstr(l->name, "_3x3")) {
                log_sum[pass] += log(b.tflops);
                log_anchor[pass] += log(b.anchor_tflops);
                count[pass]++;
            }
        }
        bench_data_destroy(&d);
    }
    for (int pass = 0; pass < N_PASSES; pass++) {
        char metric[128];
        if (count[pass] == 0) continue;
        snprintf(metric, sizeof metric, "conv_%s_%s_r50_3x3_geomean_best", type, k_pass_names[pass]);
        hpdl_csv_row(o->head, metric, exp(log_sum[pass] / count[pass]), "TFLOP/s", "cudnn",
                     exp(log_anchor[pass] / count[pass]), 1);
        printf("%-24s %-5s %-15s geometric mean of the best rung's ratio to cuDNN over %d layers: %.3f\n", "r50 3x3", type,
               k_pass_names[pass], count[pass], exp((log_sum[pass] - log_anchor[pass]) / count[pass]));
    }
}

/* ---- --tune: the mma rung's tile shapes ------------------------------------------- */

typedef hpdl_status (*tune_fn)(const hpdl__conv_mma_args<__half> &a, cudaStream_t s);
template <typename SH, bool DATA> static hpdl_status tune_shape(const hpdl__conv_mma_args<__half> &a, cudaStream_t s) {
    return hpdl__conv_mma_launch_shape<__half, SH, DATA>(a, 1, s);
}
struct tune_ctx { tune_fn fn; hpdl__conv_mma_args<__half> a; };
static void tune_run(void *ctx, cudaStream_t s) { ((tune_ctx *)ctx)->fn(((tune_ctx *)ctx)->a, s); }

/* One layer and pass (f16): every shape, checked against cuDNN, then all
   timed in turns with it. */
template <bool DATA> static void tune_layer(const layer *l, hpdl_cuda_l2_flusher *fl) {
    typedef hpdl__tc_shape<128, 128, 32, 4, 64, 64> wide32;
    typedef hpdl__tc_shape<64, 128, 64, 4, 32, 64> short64;
    static const struct { const char *name; tune_fn fn; } shapes[] = {
        {"128x128x64 s3 (wide)", tune_shape<hpdl__conv_mma_shape, DATA>},
        {"128x64x64 s4 (narrow)", tune_shape<hpdl__conv_mma_narrow_shape, DATA>},
        {"128x128x32 s4", tune_shape<wide32, DATA>},
        {"64x128x64 s4", tune_shape<short64, DATA>}};
    enum { N = sizeof shapes / sizeof shapes[0] };
    const int pass = DATA ? BACKWARD_DATA : FORWARD;
    bench_data<__half> d;
    hpdl__conv_geom g;
    tune_ctx c[N];
    bench_call<__half> cudnn;
    hpdl_cuda_work_fn runs[N + 1];
    void *ctxs[N + 1];
    double ms[N + 1], err[N], flops;
    bench_data_create(&d, l, HPDL_NHWC);
    flops = 2.0 * l->n * l->k * d.yd.h * d.yd.w * l->c * l->kernel * l->kernel;
    cudnn.algo = HPDL_CONV_CUDNN; cudnn.pass = pass; cudnn.d = &d; cudnn.out = d.ref;
    HPDL_CHECK(call(&cudnn, 0));
    HPDL_CHECK(hpdl__conv_geom_make(&d.p, &d.xd, &d.yd, d.x, d.w, d.out, &g));
    runs[0] = bench_run<__half>;
    ctxs[0] = &cudnn;
    for (int i = 0; i < N; i++) {
        c[i].fn = shapes[i].fn;
        HPDL_CHECK(DATA ? hpdl__conv_mma_make_args<__half>(g, HPDL__CONV_INPUT_GRAD, d.w, d.y, d.out, &c[i].a)
                        : hpdl__conv_mma_make_args<__half>(g, HPDL__CONV_FORWARD, d.x, d.w, d.out, &c[i].a));
        HPDL_CHECK(hpdl_cuda_poison(d.out, out_count(&d, pass) * sizeof(__half)));
        HPDL_CHECK(c[i].fn(c[i].a, 0));
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        err[i] = rel_error(&d, out_count(&d, pass));
        runs[i + 1] = tune_run;
        ctxs[i + 1] = &c[i];
    }
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(N + 1, runs, ctxs, 0, 2, 20, fl, ms));
    for (int i = 0; i < N; i++)
        printf("tune %-24s %-13s %-22s %8.3f ms %8.2f TFLOP/s  ratio %.3f  err %.1e%s\n", l->name, k_pass_names[pass],
               shapes[i].name, ms[i + 1], flops / (ms[i + 1] * 1e-3) / 1e12, ms[0] / ms[i + 1], err[i],
               err[i] <= bench_tol("f16") ? "" : "  WRONG");
    fflush(stdout);
    bench_data_destroy(&d);
}

static void tune_all(hpdl_cuda_l2_flusher *fl) {
    for (int i = 0; i < N_LAYERS; i++) {
        if (strncmp(k_layers[i].name, "r50_conv", 8) != 0) continue;
        tune_layer<false>(&k_layers[i], fl);
        tune_layer<true>(&k_layers[i], fl);
    }
}

/* cuDNN is the anchor: without it there is nothing to measure against. */
static int built_with_cudnn(void) {
#ifdef HPDL_HAVE_CUDNN
    return 1;
#else
    return 0;
#endif
}

int main(int argc, char **argv) {
    bench_opts opt;
    bench_out o;
    hpdl_cuda_device_info info;
    hpdl_cuda_l2_flusher fl;
    const char *output = NULL;
    hpdl_cli_option opts[8];
    memset(&opt, 0, sizeof opt);
    memset(&o, 0, sizeof o);
    opts[0] = hpdl_cli_flag("quick", 0, &opt.quick, "three layers (conv3_x 3x3, a 1x1, the stem), fewer runs");
    opts[1] = hpdl_cli_flag("tune", 0, &opt.tune, "the mma rung's tile shapes on the ResNet-50 layers");
    opts[2] = hpdl_cli_choice("precision", 0, &opt.only_type, "f32|f16|bf16|f64",
                               "one type only (none: f16, bf16 and f32; f64 only when named)");
    opts[3] = hpdl_cli_choice("type", 0, &opt.only_type, "f32|f16|bf16|f64", "the same as --precision");
    opts[4] = hpdl_cli_choice("pass", 0, &opt.only_pass, "forward|backward-data|backward-filter", "one pass only (none: all)");
    opts[5] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    opts[6] = hpdl_cli_choice("rung", 0, &opt.only_rung, "direct|implicit-gemm|mma|wgmma|few-mma|winograd|im2col",
                               "one rung only (none: all)");
    opts[7] = hpdl_cli_choice("layout", 0, &opt.f32_layout, "nchw|nhwc", "f32's layout (default nchw)");
    hpdl_cli_parse(argc, argv, "conv", "Every rung of the convolution ladder against cuDNN.", opts, 8);
    const int f32_nhwc = opt.f32_layout && strcmp(opt.f32_layout, "nhwc") == 0;
    hpdl_csv_set_dir(output);
    if (!hpdl_cuda_available()) { printf("conv: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    if (!built_with_cudnn()) {
        printf("conv: skipped, built without cuDNN (the anchor; the Makefile adds it when it finds cudnn.h); nothing measured\n");
        return 1;
    }
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    if (opt.tune) { tune_all(&fl); hpdl_cuda_l2_flusher_destroy(&fl); return 0; }
    printf("conv on %s (%d SMs, sm_%d%d): random inputs in [-1, 1], stride/pad as in the networks, no bias\n", info.name,
           info.sm_count, info.cc_major, info.cc_minor);
    printf("f32 %s (TF32 off), f16/bf16 NHWC (f32 sums); each rung checked against cuDNN (max|err|/max|ref|) before "
           "timing; median time, L2 flushed; TFLOP/s of the direct convolution's flops; ratio = speed / cuDNN's fastest "
           "algorithm (cudnnFind), the two timed in turns\n",
           f32_nhwc ? "NHWC" : "NCHW");
    printf("%-24s %-5s %-15s %-14s %10s %9s %7s %9s  %s\n", "layer", "type", "pass", "rung", "ms", "TFLOP/s", "ratio",
           "err", "status");
    o.good = 1;
    o.head = hpdl_csv_open(".", "conv");
    o.all = hpdl_csv_open_with_header(".", "conv_all",
                                      "metric,value,unit,anchor,anchor_value,ratio,layer,type,pass,rung,ms,max_rel_err,status");
    bench_type<__half>(&o, &opt, "f16", HPDL_NHWC, &fl);
    bench_type<__nv_bfloat16>(&o, &opt, "bf16", HPDL_NHWC, &fl);
    if (f32_nhwc) bench_type<float>(&o, &opt, "f32-nhwc", HPDL_NHWC, &fl);
    else bench_type<float>(&o, &opt, "f32", HPDL_NCHW, &fl);
    if (opt.only_type && !strcmp(opt.only_type, "f64")) bench_type<double>(&o, &opt, "f64", HPDL_NCHW, &fl);
    if (o.head) fclose(o.head);
    if (o.all) fclose(o.all);
    hpdl_cuda_l2_flusher_destroy(&fl);
    if (!o.good) { fprintf(stderr, "conv: some rungs computed wrong results (status WRONG above)\n"); return 1; }
    return 0;
}
