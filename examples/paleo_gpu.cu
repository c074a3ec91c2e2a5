/* paleo_gpu - predict before you measure, on the GPU present.

   1. The device: the datasheet descriptor for an H100 SXM or H200 SXM
      (hpdl_paleo_device), else one estimated from cudaGetDeviceProperties
      (FP32 lanes per SM x SMs x 2 x boost clock; bandwidth from the memory
      clock and bus width).
   2. PPP ("platform percent of peak") measured on this GPU:
        compute: hpdl_cuda_gemm_f32 (AUTO, the GEMM ladder's best f32 rung) at
                 4096^3, random data, median of REPS, L2 flushed:
                 PPP = achieved FLOP/s / datasheet f32 peak;
        memory:  a 1 GiB cudaMemcpy device -> device:
                 PPP = (bytes read + written) / s / datasheet bandwidth.
   3. PALEO inference estimates for VGG16, GoogLeNet and ResNet-50 at batch 1
      and 128, f32 and f64 (f64 peak, the same PPPs: the f64 AUTO rung runs
      on DMMA tensor cores and would exceed the non-tensor f64 peak).
   4. One training step of the MLP 784-H-10 (ReLU), phase by phase:
        forward GEMMs   Z1 = X.W1 (B x H x 784), Z2 = A1.W2 (B x 10 x H)
        backward GEMMs  dW2 = A1^T.D2 (H x 10 x B), dA1 = D2.W2^T (B x H x 10),
                        dW1 = X^T.D1 (784 x H x B); no dX for the input layer
        copy            one batch (f32 images + int32 labels) host -> device
                        from pinned memory
        allreduce       the gradients (W and b of both layers, f32) across
                        --gpus GPUs (--ranks: the same), ring model only
      Predicted: GEMM phases FLOPs / (peak f32 * PPP compute) (2*M*N*K each,
      listed with their PALEO memory term), and a second table with PALEO's
      sum compute + memory (bytes / (bandwidth * PPP memory)) per GEMM; copy: PALEO memory term, bytes /
      (PCIe bandwidth * PPP memory); allreduce: hpdl_cost_allreduce_ring with
      alpha and beta = 1/busbw. Measured: the same GEMMs with
      hpdl_cuda_gemm_f32 and the copy with cudaMemcpyAsync, CUDA events,
      median; the allreduce is not measured here (bench/allreduce does).
   5. The CNNs' forward pass (inference) layer by layer: the small CNN and
      ResNet-18 on 3x32x32 images, batch --cnn-batch, f32 NHWC on the GPU
      backend (hpdl_cuda_cnn, convolutions HPDL_CONV_AUTO). Measured: each
      layer alone and the whole pass once, median of CNN_REPS after a
      warm-up (hpdl_cuda_cnn_layer_times; no L2 flush: a layer repeated
      finds its input in L2 when it fits). Predicted: PALEO per layer,
      FLOPs / (peak f32 * PPP compute) + bytes / (bandwidth * PPP memory)
      from hpdl_cnn_layer_cost, and PALEO's network time, their sum.

   Output: tables on stdout; <HPDL_RESULTS or .>/paleo_gpu.csv with
       ppp_gemm_f32        value TFLOP/s, anchor datasheet f32 peak, ratio = PPP
       ppp_mem_d2d         value GB/s,    anchor datasheet bandwidth, ratio = PPP
       mlp_<phase>_ms      value measured ms, anchor predicted_compute ms,
                           ratio = predicted / measured (1 = exact, < 1: the
                           model is optimistic); phase: forward, backward, copy_h2d
       mlp_<phase>_ms_vs_paleo_sum   the same against PALEO's compute + memory
       mlp_allreduce_ms    value predicted ms, anchor not_measured, ratio 0
   and <same folder>/cnn_layers.csv: net,layer,kind,gflop,mbytes,compute_ms,
       memory_ms,predicted_ms,measured_ms, a row per layer, then "sum" (the
       layers' measured times summed) and "whole" (the pass measured once);
       both with PALEO's network prediction

   build: make build/examples/paleo_gpu
   run:   build/examples/paleo_gpu [--hidden H] [--batch B] [--gpus P]
              [--alpha-us A] [--busbw-gbs G] [--pcie-gbs G] [--cnn-batch B]
              [--output DIR]
   Defaults: H 2048, B 3000, P 2, CNN batch 128; alpha 3.5 us and busbw 130 GB/s (NCCL on
   2 H200, bench/results/h200-x2/allreduce.log; notes/paleo.md explains);
   PCIe 64 GB/s per direction (Gen5 x16, H100/H200 SXM), else by compute
   capability (see default_pcie_gbs). Without a GPU: a message, exit 0. */
#include "hpdl_cuda.cuh"

#define IN 784
#define OUT 10
#define WARMUP 3
#define REPS 15
#define PPP_N 4096
#define D2D_BYTES ((size_t)1 << 30)
#define CNN_REPS 20

typedef struct options {
    int hidden, batch, ranks, cnn_batch;
    double alpha_s, busbw, pcie_bw; /* s, bytes/s, bytes/s (0: by device) */
} options;

static options parse_options(int argc, char **argv) {
    options o;
    double alpha_us = 3.5, busbw_gbs = 130, pcie_gbs = 0;
    const char *output = NULL;
    hpdl_cli_option opts[9];
    o.hidden = 2048;
    o.batch = 3000;
    o.ranks = 2;
    o.cnn_batch = 128;
    opts[0] = hpdl_cli_int("hidden", 0, &o.hidden, 1, 1 << 16, "hidden units of the MLP 784-H-10");
    opts[1] = hpdl_cli_int("batch", 0, &o.batch, 1, 1 << 20, "mini-batch");
    opts[2] = hpdl_cli_int("gpus", 0, &o.ranks, 1, 1 << 20, "GPUs of the allreduce model");
    opts[3] = hpdl_cli_f64("alpha-us", 0, &alpha_us, DBL_MIN, 1e12, "allreduce latency, microseconds");
    opts[4] = hpdl_cli_f64("busbw-gbs", 0, &busbw_gbs, DBL_MIN, 1e12, "allreduce bus bandwidth, GB/s");
    opts[5] = hpdl_cli_f64("pcie-gbs", 0, &pcie_gbs, DBL_MIN, 1e12, "host-to-device bandwidth, GB/s (0: the device's)");
    opts[6] = hpdl_cli_string("output", 0, &output, "DIR", "folder for paleo_gpu.csv ($HPDL_RESULTS, else .)");
    opts[7] = hpdl_cli_int("ranks", 0, &o.ranks, 1, 1 << 20, "the same as --gpus");
    opts[8] = hpdl_cli_int("cnn-batch", 0, &o.cnn_batch, 2, 4096, "images of the CNNs' forward pass");
    hpdl_cli_parse(argc, argv, "paleo_gpu", "PALEO predictions against measurements on the GPU present.", opts, 9);
    o.alpha_s = alpha_us * 1e-6;
    o.busbw = busbw_gbs * 1e9;
    o.pcie_bw = pcie_gbs * 1e9;
    hpdl_csv_set_dir(output);
    return o;
}

/* ---- the device ------------------------------------------------------------ */

/* FP32 lanes per SM: 64 on GP100, Volta, GA100; 128 on the other recent parts. */
static int fp32_lanes_per_sm(int major, int minor) {
    return (major == 6 && minor == 0) || major == 7 || (major == 8 && minor == 0) ? 64 : 128;
}

/* f64 : f32 rate: 1/2 on the data-centre parts (sm_60, 70, 80, 90, 100), else 1/64. */
static double f64_ratio(int major, int minor) {
    return minor == 0 && (major == 6 || major == 7 || major == 8 || major == 9 || major == 10) ? 0.5 : 1.0 / 64;
}

/* The datasheet descriptor when the name says H100/H200 SXM (the PCIe and
   NVL boards have other clocks and memory), else an estimate from clocks. */
static void pick_device(const hpdl_cuda_device_info *info, hpdl_device_model *dev, int *from_datasheet) {
    int khz = 0;
    double peak;
    int sxm = !strstr(info->name, "PCIe") && !strstr(info->name, "NVL");
    *from_datasheet = 1;
    if (sxm && strstr(info->name, "H100")) { HPDL_CHECK(hpdl_paleo_device(HPDL_DEVICE_H100, dev)); return; }
    if (sxm && strstr(info->name, "H200")) { HPDL_CHECK(hpdl_paleo_device(HPDL_DEVICE_H200, dev)); return; }
    *from_datasheet = 0;
    HPDL_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    peak = 2.0 * fp32_lanes_per_sm(info->cc_major, info->cc_minor) * info->sm_count * khz * 1e3;
    HPDL_CHECK(hpdl_paleo_device_custom(info->name, peak, peak * f64_ratio(info->cc_major, info->cc_minor),
                                        info->mem_bandwidth_gbs * 1e9, dev));
}

/* Host -> device rate per direction of a x16 link: Gen5 on sm_90 and later,
   Gen4 on sm_80, Gen3 before (an assumption: --pcie-gbs overrides it). */
static double default_pcie_gbs(int major) { return major >= 9 ? 64.0 : major == 8 ? 32.0 : 16.0; }

/* ---- device buffers and timed work -------------------------------------------- */

/* n uniform values in [-1, 1) on the device. */
static float *device_random(size_t n, hpdl_rng *rng) {
    float *host = (float *)hpdl_alloc(n, sizeof(float)), *dev = NULL;
    size_t i;
    if (!host) { fprintf(stderr, "paleo_gpu: out of host memory\n"); exit(EXIT_FAILURE); }
    for (i = 0; i < n; i++) host[i] = (float)(2.0 * hpdl_rng_uniform(rng) - 1.0);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dev, n * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_FREE(host);
    return dev;
}

/* One row-major product C (M x N) = op(A) (M x K) . op(B) (K x N). */
typedef struct gemm_call {
    const char *name;
    hpdl_transpose ta, tb;
    int M, N, K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
} gemm_call;

static gemm_call make_gemm(const char *name, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                           const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    gemm_call g;
    g.name = name;
    g.ta = ta;
    g.tb = tb;
    g.M = M;
    g.N = N;
    g.K = K;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.A = A;
    g.B = B;
    g.C = C;
    return g;
}

static double gemm_flops(const gemm_call *g) { return 2.0 * g->M * g->N * g->K; }
/* Fewest bytes: read A and B, write C once (f32). */
static double gemm_bytes(const gemm_call *g) {
    return 4.0 * ((double)g->M * g->K + (double)g->K * g->N + (double)g->M * g->N);
}

typedef struct gemm_list { const gemm_call *calls; int n; } gemm_list;

static void run_gemms(void *ctx, cudaStream_t s) {
    const gemm_list *l = (const gemm_list *)ctx;
    int i;
    for (i = 0; i < l->n; i++) {
        const gemm_call *g = &l->calls[i];
        HPDL_CHECK(hpdl_cuda_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, 1.0f, g->A, g->lda, g->B, g->ldb, 0.0f, g->C,
                                      g->ldc, s));
    }
}

static double time_gemms(const gemm_call *calls, int n, hpdl_cuda_l2_flusher *flush) {
    gemm_list l;
    double ms = 0.0;
    l.calls = calls;
    l.n = n;
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_gemms, &l, 0, WARMUP, REPS, flush, &ms));
    return ms * 1e-3;
}

typedef struct copy_job { void *dst; const void *src; size_t bytes; cudaMemcpyKind kind; } copy_job;

static void run_copy(void *ctx, cudaStream_t s) {
    const copy_job *c = (const copy_job *)ctx;
    HPDL_CUDA_CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, c->kind, s));
}

static double time_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    copy_job c;
    double ms = 0.0;
    c.dst = dst;
    c.src = src;
    c.bytes = bytes;
    c.kind = kind;
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_copy, &c, 0, WARMUP, REPS, NULL, &ms));
    return ms * 1e-3;
}

/* A measured fraction of peak, capped at 1 (a custom device's peak is only an
   estimate, and hpdl_paleo_estimate needs 0 < PPP <= 1). */
static double capped_ppp(double rate, double peak, const char *what) {
    if (rate <= peak) return rate / peak;
    printf("note: measured %s rate above the descriptor's peak: PPP capped at 1\n", what);
    return 1.0;
}

/* ---- 2. PPP ------------------------------------------------------------------- */

static double measure_ppp_gemm(const hpdl_device_model *dev, hpdl_rng *rng, hpdl_cuda_l2_flusher *flush,
                               double *tflops) {
    const size_t nn = (size_t)PPP_N * PPP_N;
    float *A = device_random(nn, rng), *B = device_random(nn, rng), *C = NULL;
    gemm_call g;
    double s;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&C, nn * sizeof(float)));
    g = make_gemm("4096^3", HPDL_NO_TRANS, HPDL_NO_TRANS, PPP_N, PPP_N, PPP_N, A, PPP_N, B, PPP_N, C, PPP_N);
    s = time_gemms(&g, 1, flush);
    *tflops = gemm_flops(&g) / s * 1e-12;
    printf("GEMM f32 %dx%dx%d, hpdl_cuda_gemm_f32 (AUTO = %s): %.3f ms, %.1f TFLOP/s of %.1f datasheet\n", PPP_N,
           PPP_N, PPP_N, hpdl_gemm_algo_name(HPDL_GEMM_WARPTILE), s * 1e3, *tflops, dev->peak_f32 * 1e-12);
    hpdl_cuda_free(A);
    hpdl_cuda_free(B);
    hpdl_cuda_free(C);
    return capped_ppp(*tflops * 1e12, dev->peak_f32, "f32 GEMM");
}

static double measure_ppp_memory(const hpdl_device_model *dev, const hpdl_cuda_device_info *info, double *gbs) {
    size_t bytes = D2D_BYTES;
    void *src = NULL, *dst = NULL;
    double s;
    while (bytes > ((size_t)1 << 24) && 2 * bytes > info->free_mem / 2) bytes /= 2;
    HPDL_CHECK(hpdl_cuda_alloc(&src, bytes));
    HPDL_CHECK(hpdl_cuda_alloc(&dst, bytes));
    HPDL_CUDA_CHECK(cudaMemset(src, 1, bytes));
    s = time_copy(dst, src, bytes, cudaMemcpyDeviceToDevice);
    *gbs = 2.0 * bytes / s * 1e-9;
    printf("cudaMemcpy D2D %.0f MiB: %.3f ms, %.0f GB/s read+written of %.0f datasheet\n", bytes / 1048576.0, s * 1e3,
           *gbs, dev->mem_bw * 1e-9);
    hpdl_cuda_free(src);
    hpdl_cuda_free(dst);
    return capped_ppp(*gbs * 1e9, dev->mem_bw, "copy");
}

/* ---- 3. network estimates ---------------------------------------------------------- */

/* The PALEO functions take one PPP; with the bandwidth scaled by
   ppp_mem / ppp_flops their memory term becomes bytes / (bandwidth * ppp_mem)
   while the compute term keeps ppp_flops: pass `eff` with ppp_flops. */
static void effective_device(const hpdl_device_model *dev, double ppp_flops, double ppp_mem, hpdl_device_model *eff) {
    HPDL_CHECK(hpdl_paleo_device_custom(dev->name, dev->peak_f32, dev->peak_f64, dev->mem_bw * ppp_mem / ppp_flops,
                                        eff));
}

typedef hpdl_status (*net_builder)(hpdl_net *, hpdl_layer *, int);

static void print_network_estimates(const hpdl_device_model *dev, double ppp_flops, double ppp_mem) {
    static const net_builder builders[3] = {hpdl_net_vgg16, hpdl_net_googlenet, hpdl_net_resnet50};
    static const int batches[2] = {1, 128};
    hpdl_device_model eff;
    int n, p, b;
    effective_device(dev, ppp_flops, ppp_mem, &eff);
    printf("\nInference (forward) estimates on %s, PALEO style, per layer summed:\n"
           "compute = FLOPs / (peak * %.3f), memory = bytes / (%.0f GB/s * %.3f);\n"
           "sum = no overlap (PALEO), max = compute and memory overlapped within each layer.\n\n",
           dev->name, ppp_flops, dev->mem_bw * 1e-9, ppp_mem);
    printf("%-10s %-4s %6s %12s %12s %12s %12s %10s\n", "network", "prec", "batch", "compute ms", "memory ms",
           "sum ms", "max ms", "img/s(sum)");
    for (n = 0; n < 3; n++) {
        hpdl_net net;
        HPDL_CHECK(builders[n](&net, NULL, 0));
        for (p = 0; p < 2; p++)
            for (b = 0; b < 2; b++) {
                hpdl_paleo_time t;
                HPDL_CHECK(hpdl_paleo_net_time(&net, batches[b], &eff, (hpdl_precision)p, ppp_flops, &t));
                printf("%-10s %-4s %6d %12.3f %12.3f %12.3f %12.3f %10.0f\n", net.name, p ? "f64" : "f32",
                       batches[b], 1e3 * t.compute_s, 1e3 * t.memory_s, 1e3 * t.sum_s, 1e3 * t.max_s,
                       batches[b] / t.sum_s);
            }
        hpdl_net_free(&net);
    }
}

/* ---- 4. the MLP step ------------------------------------------------------------------ */

typedef struct mlp_buffers {
    float *X, *W1, *W2, *A1, *D1, *D2, *Z1, *Z2, *dW1, *dW2, *dA1;
} mlp_buffers;

static void mlp_buffers_create(mlp_buffers *m, int B, int H, hpdl_rng *rng) {
    m->X = device_random((size_t)B * IN, rng);
    m->W1 = device_random((size_t)IN * H, rng);
    m->W2 = device_random((size_t)H * OUT, rng);
    m->A1 = device_random((size_t)B * H, rng);
    m->D1 = device_random((size_t)B * H, rng);
    m->D2 = device_random((size_t)B * OUT, rng);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&m->Z1, (size_t)B * H * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&m->Z2, (size_t)B * OUT * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&m->dW1, (size_t)IN * H * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&m->dW2, (size_t)H * OUT * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&m->dA1, (size_t)B * H * sizeof(float)));
}

static void mlp_buffers_destroy(mlp_buffers *m) {
    float *all[11];
    int i;
    all[0] = m->X; all[1] = m->W1; all[2] = m->W2; all[3] = m->A1; all[4] = m->D1; all[5] = m->D2;
    all[6] = m->Z1; all[7] = m->Z2; all[8] = m->dW1; all[9] = m->dW2; all[10] = m->dA1;
    for (i = 0; i < 11; i++) hpdl_cuda_free(all[i]);
}

/* calls[0..1]: forward, calls[2..4]: backward (row-major, as hpdl_cuda_mlp). */
static void mlp_gemms(const mlp_buffers *m, int B, int H, gemm_call *calls) {
    calls[0] = make_gemm("fwd Z1 = X.W1", HPDL_NO_TRANS, HPDL_NO_TRANS, B, H, IN, m->X, IN, m->W1, H, m->Z1, H);
    calls[1] = make_gemm("fwd Z2 = A1.W2", HPDL_NO_TRANS, HPDL_NO_TRANS, B, OUT, H, m->A1, H, m->W2, OUT, m->Z2, OUT);
    calls[2] = make_gemm("bwd dW2 = A1^T.D2", HPDL_TRANS, HPDL_NO_TRANS, H, OUT, B, m->A1, H, m->D2, OUT, m->dW2, OUT);
    calls[3] = make_gemm("bwd dA1 = D2.W2^T", HPDL_NO_TRANS, HPDL_TRANS, B, H, OUT, m->D2, OUT, m->W2, OUT, m->dA1, H);
    calls[4] = make_gemm("bwd dW1 = X^T.D1", HPDL_TRANS, HPDL_NO_TRANS, IN, H, B, m->X, IN, m->D1, H, m->dW1, H);
}

/* One GEMM's PALEO terms on the effective device (see effective_device). */
static hpdl_paleo_time gemm_estimate(const gemm_call *g, const hpdl_device_model *eff, double ppp_flops) {
    hpdl_paleo_time t;
    HPDL_CHECK(hpdl_paleo_estimate(gemm_flops(g), gemm_bytes(g), eff->peak_f32, eff->mem_bw, ppp_flops, &t));
    return t;
}

/* Each GEMM alone: FLOPs, PALEO terms and measured time, for the record. */
static void print_gemm_list(const gemm_call *calls, int n, const hpdl_device_model *eff, double ppp_flops,
                            hpdl_cuda_l2_flusher *flush) {
    int i;
    printf("%-20s %6s %6s %6s %9s %9s %11s %10s %11s %8s\n", "GEMM", "M", "N", "K", "GFLOP", "MB", "compute ms",
           "memory ms", "measured ms", "TFLOP/s");
    for (i = 0; i < n; i++) {
        const gemm_call *g = &calls[i];
        hpdl_paleo_time t = gemm_estimate(g, eff, ppp_flops);
        double s = time_gemms(g, 1, flush);
        printf("%-20s %6d %6d %6d %9.3f %9.2f %11.4f %10.4f %11.4f %8.1f\n", g->name, g->M, g->N, g->K,
               gemm_flops(g) * 1e-9, gemm_bytes(g) * 1e-6, 1e3 * t.compute_s, 1e3 * t.memory_s, 1e3 * s,
               gemm_flops(g) / s * 1e-12);
    }
}

/* A phase's predictions: compute terms only (FLOPs / (peak * PPP)) and
   PALEO's no-overlap sum (compute + memory per GEMM). */
static void phase_estimate(const gemm_call *calls, int n, const hpdl_device_model *eff, double ppp_flops,
                           double *compute_s, double *paleo_s) {
    int i;
    *compute_s = *paleo_s = 0.0;
    for (i = 0; i < n; i++) {
        hpdl_paleo_time t = gemm_estimate(&calls[i], eff, ppp_flops);
        *compute_s += t.compute_s;
        *paleo_s += t.sum_s;
    }
}

#define N_PHASES 3

typedef struct mlp_result {
    double predicted[N_PHASES], paleo[N_PHASES], measured[N_PHASES]; /* paleo: compute + memory */
    double allreduce_bytes, allreduce_s;
} mlp_result;

static const char *const phase_names[N_PHASES] = {"forward GEMMs", "backward GEMMs", "copy H2D (pinned)"};
static const char *const phase_keys[N_PHASES] = {"forward", "backward", "copy_h2d"};

static void mlp_step(const options *o, const hpdl_device_model *dev, double ppp_flops, double ppp_mem,
                     double pcie_bw, hpdl_rng *rng, hpdl_cuda_l2_flusher *flush, mlp_result *r) {
    const int B = o->batch, H = o->hidden;
    const size_t copy_bytes = (size_t)B * (IN * sizeof(float) + sizeof(int32_t));
    const double params = (double)IN * H + H + (double)H * OUT + OUT;
    mlp_buffers m;
    gemm_call calls[5];
    hpdl_device_model eff;
    hpdl_paleo_time copy_t;
    void *pinned = NULL, *dst = NULL;
    int gpus = hpdl_cuda_device_count();

    printf("\nOne training step of the MLP %d-%d-%d, batch %d, f32\n\n", IN, H, OUT, B);
    mlp_buffers_create(&m, B, H, rng);
    mlp_gemms(&m, B, H, calls);
    effective_device(dev, ppp_flops, ppp_mem, &eff);
    print_gemm_list(calls, 5, &eff, ppp_flops, flush);

    phase_estimate(calls, 2, &eff, ppp_flops, &r->predicted[0], &r->paleo[0]);
    phase_estimate(calls + 2, 3, &eff, ppp_flops, &r->predicted[1], &r->paleo[1]);
    r->measured[0] = time_gemms(calls, 2, flush);
    r->measured[1] = time_gemms(calls + 2, 3, flush);

    HPDL_CHECK(hpdl_paleo_estimate(0.0, (double)copy_bytes, dev->peak_f32, pcie_bw, ppp_mem, &copy_t));
    r->predicted[2] = r->paleo[2] = copy_t.memory_s;
    HPDL_CHECK(hpdl_cuda_alloc_pinned(&pinned, copy_bytes));
    HPDL_CHECK(hpdl_cuda_alloc(&dst, copy_bytes));
    memset(pinned, 0x3c, copy_bytes);
    r->measured[2] = time_copy(dst, pinned, copy_bytes, cudaMemcpyHostToDevice);
    hpdl_cuda_free_pinned(pinned);
    hpdl_cuda_free(dst);
    mlp_buffers_destroy(&m);

    r->allreduce_bytes = 4.0 * params;
    HPDL_CHECK(hpdl_cost_allreduce_ring(r->allreduce_bytes, o->ranks, o->alpha_s, 1.0 / o->busbw, &r->allreduce_s));

    printf("\nPredicted: GEMMs FLOPs / (%.1f TFLOP/s * %.3f); copy %.2f MB / (%.0f GB/s PCIe * %.3f);\n"
           "allreduce of %.2f MB of gradients on %d ranks, ring: 2(p-1)*%.2f us + 2(p-1)/p * n / %.0f GB/s\n\n",
           dev->peak_f32 * 1e-12, ppp_flops, copy_bytes * 1e-6, pcie_bw * 1e-9, ppp_mem, r->allreduce_bytes * 1e-6,
           o->ranks, o->alpha_s * 1e6, o->busbw * 1e-9);
    HPDL_CHECK(hpdl_paleo_print_comparison(stdout, N_PHASES, phase_names, r->predicted, r->measured));
    printf("%-24s %14.4f %14s   not measured (%d GPU%s; bench/allreduce measures NCCL)\n", "allreduce (ring model)",
           1e3 * r->allreduce_s, "-", gpus, gpus == 1 ? "" : "s");
    printf("\nThe same with PALEO's sum, compute + memory term per GEMM (the N = 10 and K = 10\n"
           "products are memory bound: about 5 FLOP/byte, below the ridge)\n\n");
    HPDL_CHECK(hpdl_paleo_print_comparison(stdout, N_PHASES, phase_names, r->paleo, r->measured));
}

/* ---- 5. the CNNs' layers ---------------------------------------------------------------- */

static const char *cnn_kind(const hpdl_cnn_layer *l) {
    switch (l->op) {
    case HPDL_CNN_CONV: return "conv";
    case HPDL_CNN_BATCHNORM: return "bn";
    case HPDL_CNN_RELU: return "relu";
    case HPDL_CNN_MAXPOOL: return "maxpool";
    case HPDL_CNN_AVGPOOL: return "avgpool";
    case HPDL_CNN_GLOBAL_AVGPOOL: return "gap";
    case HPDL_CNN_LINEAR: return "fc";
    case HPDL_CNN_ADD: return "add";
    }
    return "?";
}

/* "conv3x3/2-128", "fc-10", "bn", ...: what a chart's axis can hold. */
static void cnn_label(const hpdl_cnn *net, int i, char *out, size_t size) {
    const hpdl_cnn_layer *l = &net->layer[i];
    if (l->op == HPDL_CNN_CONV)
        snprintf(out, size, "conv%dx%d/%d-%d", l->kernel, l->kernel, l->stride, l->channels);
    else if (l->op == HPDL_CNN_LINEAR)
        snprintf(out, size, "fc-%d", l->channels);
    else
        snprintf(out, size, "%s", cnn_kind(l));
}

/* Each layer's measured forward time (ms, net->n_layers values) and the
   whole pass's, on batch random images, from fresh weights. */
static void cnn_measure(const hpdl_cnn *net, int batch, hpdl_rng *rng, double *layer_ms, double *whole_ms) {
    const hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 0); /* a run needs one; nothing is trained */
    double *params = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    double *state = (double *)hpdl_alloc((size_t)net->state_count + 1, sizeof(double));
    size_t image = (size_t)net->input.c * net->input.h * net->input.w;
    float *X = device_random((size_t)batch * image, rng);
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    if (!params || !state) { fprintf(stderr, "paleo_gpu: out of host memory\n"); exit(EXIT_FAILURE); }
    HPDL_CHECK(hpdl_cnn_init(net, 1, params, state));
    HPDL_CHECK(hpdl_cuda_cnn_create<float>(&g, HPDL_CONV_AUTO));
    HPDL_CHECK(hpdl_cnn_run_create(&r, net, &g.be, batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, params, state));
    HPDL_CHECK(hpdl_cuda_cnn_layer_times(&g, &r, batch, X, CNN_REPS, layer_ms, whole_ms));
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    hpdl_cuda_free(X);
    HPDL_FREE(params);
    HPDL_FREE(state);
}

/* One network: the table on stdout, its rows into csv (may be NULL). */
static void cnn_layers(const char *name, const hpdl_cnn *net, int batch, const hpdl_device_model *eff,
                       double ppp_flops, hpdl_rng *rng, FILE *csv) {
    double *measured = (double *)hpdl_alloc((size_t)net->n_layers, sizeof(double));
    double whole = 0, sum_measured = 0, sum_predicted = 0;
    char label[64];
    int i;
    if (!measured) { fprintf(stderr, "paleo_gpu: out of host memory\n"); exit(EXIT_FAILURE); }
    cnn_measure(net, batch, rng, measured, &whole);
    printf("\n%s, batch %d, 3x32x32, f32 NHWC: forward pass layer by layer\n\n", name, batch);
    printf("%3s %-16s %9s %9s %10s %10s %12s %12s %9s\n", "#", "layer", "GFLOP", "MB", "compute ms", "memory ms",
           "predicted ms", "measured ms", "meas/pred");
    for (i = 0; i < net->n_layers; i++) {
        double flops, bytes;
        hpdl_paleo_time t;
        HPDL_CHECK(hpdl_cnn_layer_cost(net, i, batch, sizeof(float), &flops, &bytes));
        HPDL_CHECK(hpdl_paleo_estimate(flops, bytes, eff->peak_f32, eff->mem_bw, ppp_flops, &t));
        cnn_label(net, i, label, sizeof label);
        printf("%3d %-16s %9.3f %9.2f %10.4f %10.4f %12.4f %12.4f %9.2f\n", i, label, flops * 1e-9, bytes * 1e-6,
               1e3 * t.compute_s, 1e3 * t.memory_s, 1e3 * t.sum_s, measured[i], measured[i] / (1e3 * t.sum_s));
        if (csv)
            fprintf(csv, "%s,%d,%s,%.6f,%.4f,%.6f,%.6f,%.6f,%.6f\n", name, i, label, flops * 1e-9, bytes * 1e-6,
                    1e3 * t.compute_s, 1e3 * t.memory_s, 1e3 * t.sum_s, measured[i]);
        sum_measured += measured[i];
        sum_predicted += 1e3 * t.sum_s;
    }
    printf("%3s %-16s %9s %9s %10s %10s %12.4f %12.4f %9.2f\n", "", "sum of layers", "", "", "", "", sum_predicted,
           sum_measured, sum_measured / sum_predicted);
    printf("%3s %-16s %9s %9s %10s %10s %12.4f %12.4f %9.2f\n", "", "whole pass", "", "", "", "", sum_predicted, whole,
           whole / sum_predicted);
    printf("sum of the layers alone / whole pass: %.3f (%d layers, %d images)\n", sum_measured / whole,
           net->n_layers, batch);
    if (csv) {
        fprintf(csv, "%s,sum,sum,,,,,%.6f,%.6f\n", name, sum_predicted, sum_measured);
        fprintf(csv, "%s,whole,whole,,,,,%.6f,%.6f\n", name, sum_predicted, whole);
    }
    HPDL_FREE(measured);
}

/* Section 5 for both networks, into cnn_layers.csv. */
static void cnn_section(const options *o, const hpdl_device_model *dev, double ppp_flops, double ppp_mem,
                        hpdl_rng *rng) {
    const hpdl_shape cifar = hpdl_shape_make(3, 32, 32);
    hpdl_device_model eff;
    hpdl_cnn small, resnet;
    hpdl_csv_file csv;
    int have_csv = hpdl_csv_create(&csv, ".", "cnn_layers",
                                   "net,layer,kind,gflop,mbytes,compute_ms,memory_ms,predicted_ms,measured_ms") == HPDL_OK;
    effective_device(dev, ppp_flops, ppp_mem, &eff);
    HPDL_CHECK(hpdl_cnn_small(&small, cifar, 10, HPDL_NHWC));
    HPDL_CHECK(hpdl_cnn_resnet18(&resnet, cifar, 10, HPDL_NHWC));
    printf("\nCNN layers: measured alone (median of %d) against PALEO, FLOPs / (%.1f TFLOP/s * %.3f) + "
           "bytes / (%.0f GB/s * %.3f)\n",
           CNN_REPS, dev->peak_f32 * 1e-12, ppp_flops, dev->mem_bw * 1e-9, ppp_mem);
    cnn_layers("small", &small, o->cnn_batch, &eff, ppp_flops, rng, have_csv ? csv.f : NULL);
    cnn_layers("resnet18", &resnet, o->cnn_batch, &eff, ppp_flops, rng, have_csv ? csv.f : NULL);
    if (have_csv && hpdl_csv_commit(&csv) != HPDL_OK) fprintf(stderr, "paleo_gpu: cnn_layers.csv not written\n");
}

/* ---- CSV ------------------------------------------------------------------------------ */

static void write_csv(double tflops, double peak_tflops, double gbs, double peak_gbs, const mlp_result *r) {
    FILE *f = hpdl_csv_open(".", "paleo_gpu");
    char metric[64];
    int i;
    if (!f) return;
    hpdl_csv_row(f, "ppp_gemm_f32", tflops, "TFLOP/s", "datasheet_peak_f32", peak_tflops, 1);
    hpdl_csv_row(f, "ppp_mem_d2d", gbs, "GB/s", "datasheet_bandwidth", peak_gbs, 1);
    for (i = 0; i < N_PHASES; i++) {
        snprintf(metric, sizeof metric, "mlp_%s_ms", phase_keys[i]);
        hpdl_csv_row(f, metric, 1e3 * r->measured[i], "ms", "predicted_compute", 1e3 * r->predicted[i], 0);
        snprintf(metric, sizeof metric, "mlp_%s_ms_vs_paleo_sum", phase_keys[i]);
        hpdl_csv_row(f, metric, 1e3 * r->measured[i], "ms", "predicted_paleo_sum", 1e3 * r->paleo[i], 0);
    }
    hpdl_csv_row(f, "mlp_allreduce_ms", 1e3 * r->allreduce_s, "ms", "not_measured", 0.0, 0);
    fclose(f);
}

int main(int argc, char **argv) {
    options o = parse_options(argc, argv);
    hpdl_cuda_device_info info;
    hpdl_device_model dev;
    hpdl_cuda_l2_flusher flush;
    hpdl_rng rng;
    mlp_result r;
    double ppp_flops, ppp_mem, tflops, gbs, pcie_bw;
    int datasheet;

    if (!hpdl_cuda_available()) {
        printf("paleo_gpu: no CUDA GPU found, nothing to run (examples/paleo prints the CPU-side estimates)\n");
        return 0;
    }
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0));
    pick_device(&info, &dev, &datasheet);
    pcie_bw = o.pcie_bw > 0.0 ? o.pcie_bw : default_pcie_gbs(info.cc_major) * 1e9;
    printf("GPU 0: %s (sm_%d%d, %d SMs) -> descriptor %s (%s): %.1f TFLOP/s f32, %.1f f64, %.0f GB/s; "
           "PCIe %.0f GB/s\n\n",
           info.name, info.cc_major, info.cc_minor, info.sm_count, dev.name,
           datasheet ? "datasheet" : "estimated from clocks", dev.peak_f32 * 1e-12, dev.peak_f64 * 1e-12,
           dev.mem_bw * 1e-9, pcie_bw * 1e-9);

    hpdl_rng_seed(&rng, 2026);
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    ppp_flops = measure_ppp_gemm(&dev, &rng, &flush, &tflops);
    ppp_mem = measure_ppp_memory(&dev, &info, &gbs);
    printf("PPP: compute %.3f, memory %.3f\n", ppp_flops, ppp_mem);

    print_network_estimates(&dev, ppp_flops, ppp_mem);
    mlp_step(&o, &dev, ppp_flops, ppp_mem, pcie_bw, &rng, &flush, &r);
    write_csv(tflops, dev.peak_f32 * 1e-12, gbs, dev.mem_bw * 1e-9, &r);
    cnn_section(&o, &dev, ppp_flops, ppp_mem, &rng);
    hpdl_cuda_l2_flusher_destroy(&flush);
    return 0;
}
