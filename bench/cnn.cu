/* bench/cnn - epoch time of CNN training: the course's small CNN and
   ResNet-18 on 50,000 synthetic 3x32x32 images resident on the GPU, batch
   32 and 128 (--batch), SGD with momentum, against PyTorch eager in the
   same run.

   Variants (hpdl_cnn on the GPU backend, f32, NHWC, one CUDA graph replay
   per step; device shuffle and gather, forward, loss, backward, finite
   check, update):
       f32 graph   every convolution on hpdl's own rungs (HPDL_CONV_AUTO)
       f32 eager   the same, launched kernel by kernel (what graphs save)
       f32 cudnn   the same walk with cuDNN's convolutions (HPDL_CONV_CUDNN):
                   where the time goes when the convolutions are the vendor's
       f16 graph   mixed precision: f16 activations and gradients, f32
                   master parameters, loss scaling (graphs, HPDL_CONV_AUTO)
       f16 cudnn   the same with cuDNN's convolutions: against f16 graph, what
                   hpdl's own f16 convolutions cost or save in the whole step
       bf16 graph  the same in bf16
   Anchor: bench/pytorch/cnn.py (the same networks, SGD, epoch; f32 without
   TF32, and AMP: autocast f16 + GradScaler, channels-last), skipped with a
   message without torch. Every variant's CSV row is written against both;
   the table's ratios compare like with like: PyTorch f32 / hpdl f32 graph,
   PyTorch AMP / hpdl f16 graph.

   First a check: a few steps on the GPU against the CPU twin from the same
   weights (small CNN 3x32x32, batch 8, f32: every parameter tensor within
   1e-5 relative Frobenius difference; ResNet-18 on 16x16, batch 2, in f64,
   within 1e-12: in f32 its 20 batch norms amplify the two sides' different
   rounding beyond 1e-5, notes/cnn.md), and mixed precision against f32 on
   the GPU (both nets, batch 32, 3 steps: each step's loss within 1e-2 in
   f16 and 8e-2 in bf16, relative, tests/gpu_cnn.cu says why; ResNet-18
   within 0.1 in both, a bound that catches a broken path but not rounding:
   its 20 batch norms amplify the two runs' different rounding from the
   first update on, 0.042 in f16 and 0.057 in bf16 on an H200), else the
   bench stops.
   Timing: wall clock around whole epochs (after a warm-up epoch that
   captures the graphs), the device synchronised; ResNet-18's variants
   train RESNET_STEPS steps and are scaled to the 50,000-image epoch (its
   f32 convolutions on hpdl's rungs take tens of seconds an epoch).

   Output: a table; <HPDL_RESULTS>/cnn.csv (epoch ms per net, batch and
   variant; anchor PyTorch eager f32 or AMP, ratio = anchor/value).

   build: make build/bench/cnn    run: HPDL_RESULTS=dir build/bench/cnn [small|resnet18]
   (a network's name times that network only; --net N is the same)
   flags: --net small|resnet18, --batch B,... [32,128] (up to 8 sizes), --seed S
   (synthetic images) [2026], --output DIR (before HPDL_RESULTS), --help, --version */
#include "hpdl_cuda.cuh"

#include <vector>

#define N_IMAGES 50000
#define RESNET_STEPS 30
#define TORCH_SCRIPT "bench/pytorch/cnn.py"

static const char *nets[] = {"small", "resnet18"};
#define MAX_BATCHES 8
static int batches[MAX_BATCHES], n_batches; /* --batch */
enum { V_GRAPH, V_EAGER, V_CUDNN, V_F16, V_F16_CUDNN, V_BF16, V_COUNT };
static const char *variant_name[V_COUNT] = {"f32_graph", "f32_eager",  "f32_cudnn",
                                            "f16_graph", "f16_cudnn", "bf16_graph"};

/* The synthetic images on the device in each element type. */
typedef struct images {
    const float *f32;
    const hpdl_f16 *f16;
    const hpdl_bf16 *bf16;
} images;

typedef struct results {
    double ms[2][MAX_BATCHES][V_COUNT];
    double torch_ms[2][MAX_BATCHES][2]; /* [net][batch][amp]; 0: not measured */
} results;

static hpdl_status make_net(int net, hpdl_shape shape, hpdl_cnn *out) {
    return net == 0 ? hpdl_cnn_small(out, shape, 10, HPDL_NHWC) : hpdl_cnn_resnet18(out, shape, 10, HPDL_NHWC);
}

/* ---- check ------------------------------------------------------------------- */

/* Largest relative Frobenius difference of a parameter tensor after
   `steps` SGD steps on the CPU twin and the GPU from the same weights. */
/* The checks' data: images in [-1, 1], labels in 0..9, the network's
   initial weights, all from fixed seeds. */
template <typename T> struct check_batch {
    std::vector<double> params, state;
    std::vector<T> X;
    std::vector<int32_t> labels;
    check_batch(const hpdl_cnn *net, int batch)
        : params(net->param_count), state(net->state_count + 1),
          X((size_t)batch * net->input.c * net->input.h * net->input.w), labels(batch) {
        hpdl_rng rng;
        hpdl_rng_seed(&rng, 7);
        for (T &v : X) v = (T)(2 * hpdl_rng_uniform(&rng) - 1);
        for (int32_t &l : labels) l = (int32_t)hpdl_rng_below(&rng, 10);
        HPDL_CHECK(hpdl_cnn_init(net, 1, params.data(), state.data()));
    }
};

template <typename T> static double cpu_gpu_difference(const hpdl_cnn *net, int batch, int steps) {
    check_batch<T> b(net, batch);
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    double worst = 0;
    HPDL_CHECK(hpdl_cuda_cnn_twin_difference<T>(net, &opt, b.params.data(), b.state.data(), batch, b.X.data(),
                                                b.labels.data(), steps, &worst, NULL));
    return worst;
}

/* Largest relative difference of a step's loss, mixed precision in H
   against f32 on the GPU, 3 SGD steps of 32 images from the same weights. */
template <typename H> static double mixed_difference(const hpdl_cnn *net) {
    const int batch = 32;
    check_batch<float> b(net, batch);
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    double loss = 0;
    HPDL_CHECK(hpdl_cuda_cnn_mixed_difference<H>(net, &opt, b.params.data(), b.state.data(), batch, b.X.data(),
                                                 b.labels.data(), 3, &loss, NULL));
    return loss;
}

static void check_or_stop(void) {
    hpdl_cnn small, resnet;
    HPDL_CHECK(make_net(0, hpdl_shape_make(3, 32, 32), &small));
    HPDL_CHECK(make_net(1, hpdl_shape_make(3, 16, 16), &resnet));
    double e_small = cpu_gpu_difference<float>(&small, 8, 3), e_resnet = cpu_gpu_difference<double>(&resnet, 2, 2);
    double m[2][2] = {{mixed_difference<hpdl_f16>(&small), mixed_difference<hpdl_bf16>(&small)},
                      {mixed_difference<hpdl_f16>(&resnet), mixed_difference<hpdl_bf16>(&resnet)}};
    printf("check: GPU vs CPU twin, largest relative Frobenius difference of a parameter tensor: small CNN f32 "
           "%.2g (limit 1e-5), ResNet-18 f64 %.2g (limit 1e-12)\n", e_small, e_resnet);
    printf("check: mixed precision vs f32 on the GPU, largest relative difference of a step's loss: small CNN f16 "
           "%.2g, bf16 %.2g (limits 1e-2, 8e-2); ResNet-18 f16 %.2g, bf16 %.2g (limit 0.1)\n", m[0][0], m[0][1],
           m[1][0], m[1][1]);
    if (!(e_small <= 1e-5 && e_resnet <= 1e-12 && m[0][0] <= 1e-2 && m[0][1] <= 8e-2 && m[1][0] <= 0.1 &&
          m[1][1] <= 0.1)) {
        printf("check FAILED: nothing timed\n");
        exit(1);
    }
}

/* ---- timing -------------------------------------------------------------------- */

template <typename T> static const T *upload(const std::vector<T> &x) {
    T *d = NULL;
    HPDL_CUDA_CHECK(cudaMalloc(&d, x.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename H> static std::vector<H> converted(const std::vector<float> &x, H (*to)(float)) {
    std::vector<H> out(x.size());
    for (size_t i = 0; i < x.size(); i++) out[i] = to(x[i]);
    return out;
}

static hpdl_status create_variant(hpdl_cuda_cnn *g, int v) {
    const hpdl_conv_algo conv = v == V_CUDNN || v == V_F16_CUDNN ? HPDL_CONV_CUDNN : HPDL_CONV_AUTO;
    if (v == V_F16 || v == V_F16_CUDNN) return hpdl_cuda_cnn_create_f16(g, conv, 0);
    if (v == V_BF16) return hpdl_cuda_cnn_create_bf16(g, conv, 0);
    return hpdl_cuda_cnn_create_f32(g, conv, 0);
}

static hpdl_status epoch_variant(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int v, int64_t n, const images *X,
                                 const int32_t *labels, uint64_t seed) {
    if (v == V_F16 || v == V_F16_CUDNN) return hpdl_cuda_cnn_train_epoch_f16(g, r, n, X->f16, labels, seed);
    if (v == V_BF16) return hpdl_cuda_cnn_train_epoch_bf16(g, r, n, X->bf16, labels, seed);
    return hpdl_cuda_cnn_train_epoch_f32(g, r, n, X->f32, labels, seed);
}

/* ms of one 50,000-image epoch of `net` at `batch` in variant v: a warm-up
   epoch (or step run) captures the graphs, then one timed (ResNet-18:
   RESNET_STEPS steps, at most the epoch, scaled to it). */
static double time_variant(int net_index, int batch, int v, const images *X, const int32_t *dlabels) {
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_cuda_cnn g;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 5e-4);
    const int64_t steps_images = (int64_t)RESNET_STEPS * batch;
    const int whole = net_index == 0 || steps_images >= N_IMAGES; /* whole epochs, the warm-up one too */
    const int64_t n = whole ? N_IMAGES : steps_images;
    std::vector<double> params, state;
    double t0, ms;
    HPDL_CHECK(make_net(net_index, hpdl_shape_make(3, 32, 32), &net));
    params.resize(net.param_count);
    state.resize(net.state_count + 1);
    HPDL_CHECK(hpdl_cnn_init(&net, 1, params.data(), state.data()));
    HPDL_CHECK(create_variant(&g, v));
    g.use_graphs = v != V_EAGER;
    HPDL_CHECK(hpdl_cnn_run_create(&r, &net, &g.be, batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, params.data(), state.data()));
    HPDL_CHECK(epoch_variant(&g, &r, v, whole ? n : 4 * (int64_t)batch, X, dlabels, 1));
    HPDL_CHECK(hpdl_cuda_cnn_results(&g, NULL, NULL));
    t0 = hpdl_time_now();
    HPDL_CHECK(epoch_variant(&g, &r, v, n, X, dlabels, 2));
    HPDL_CHECK(hpdl_cuda_cnn_results(&g, NULL, NULL));
    ms = 1e3 * (hpdl_time_now() - t0) * (double)N_IMAGES / (double)n;
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    return ms;
}

/* ---- PyTorch anchor -------------------------------------------------------------- */

static void run_torch(results *r, const char *only, const char *batch_list) {
    char line[512];
    char cmd[256];
    snprintf(cmd, sizeof cmd, "python3 " TORCH_SCRIPT " --net %s --batch %s --amp 0,1 2>&1",
             only ? only : "small,resnet18", batch_list);
    FILE *p = popen(cmd, "r");
    if (!p) { printf("pytorch: cannot run python3 (%s)\n", strerror(errno)); return; }
    while (fgets(line, sizeof line, p)) {
        char name[32];
        int b, amp;
        double ms;
        if (sscanf(line, "pytorch_cnn net %31s batch %d amp %d epoch_ms %lf", name, &b, &amp, &ms) == 4) {
            for (int n = 0; n < 2; n++)
                for (int k = 0; k < n_batches; k++)
                    if (!strcmp(name, nets[n]) && b == batches[k] && (amp == 0 || amp == 1)) r->torch_ms[n][k][amp] = ms;
        } else {
            printf("  %s", line); /* the script's own words: versions, or why it skipped */
        }
    }
    pclose(p);
}

/* ---- output ------------------------------------------------------------------------ */

static void write_csv(const results *r) {
    FILE *f = hpdl_csv_open(".", "cnn");
    char metric[128];
    if (!f) return;
    for (int n = 0; n < 2; n++)
        for (int b = 0; b < n_batches; b++)
            for (int v = 0; v < V_COUNT; v++)
                for (int amp = 0; amp < 2; amp++) {
                    if (r->ms[n][b][v] == 0) continue; /* not timed in this run */
                    snprintf(metric, sizeof metric, "epoch_ms_%s_b%d_%s", nets[n], batches[b], variant_name[v]);
                    hpdl_csv_row(f, metric, r->ms[n][b][v], "ms", amp ? "pytorch_eager_amp" : "pytorch_eager_f32",
                                 r->torch_ms[n][b][amp], 0);
                }
    fclose(f);
}

static void print_table(const results *r) {
    printf("\n%-9s %5s | %10s %10s %10s %10s %10s %10s | %10s %10s | %8s %8s\n", "net", "batch", "f32 graph",
           "f32 eager", "f32 cudnn", "f16 graph", "f16 cudnn", "bf16 graph", "torch f32", "torch amp", "x f32",
           "x amp");
    for (int n = 0; n < 2; n++)
        for (int b = 0; b < n_batches; b++) {
            const double *ms = r->ms[n][b], t32 = r->torch_ms[n][b][0], t16 = r->torch_ms[n][b][1];
            if (ms[V_GRAPH] == 0) continue; /* not timed in this run */
            printf("%-9s %5d | %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f | %10.1f %10.1f | %7.2fx %7.2fx\n", nets[n],
                   batches[b], ms[V_GRAPH], ms[V_EAGER], ms[V_CUDNN], ms[V_F16], ms[V_F16_CUDNN], ms[V_BF16], t32, t16,
                   t32 / ms[V_GRAPH], t16 / ms[V_F16]);
        }
    printf("(ms per 50,000-image epoch; x f32 = PyTorch eager f32 / hpdl f32 graph, x amp = PyTorch eager AMP / "
           "hpdl f16 graph; ResNet-18's hpdl columns scaled from %d steps where they are less than the epoch)\n",
           RESNET_STEPS);
}

int main(int argc, char **argv) {
    static results r;
    const char *only = NULL, *output = NULL, *batch_list = "32,128";
    int64_t seed = 2026;
    hpdl_cuda_device_info info;
    hpdl_rng rng;
    images dX;
    int32_t *dlabels;
    hpdl_cli_option opts[4];
    opts[0] = hpdl_cli_positional(hpdl_cli_choice("net", 0, &only, "small|resnet18", "one network only (none: both)"));
    opts[1] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "seed of the synthetic images");
    opts[2] = hpdl_cli_string("output", 0, &output, "DIR", "folder for cnn.csv ($HPDL_RESULTS, else .)");
    opts[3] = hpdl_cli_string("batch", 0, &batch_list, "B,...", "batch sizes, up to 8");
    hpdl_cli_parse(argc, argv, "cnn", "CNN training epochs on the GPU against PyTorch eager.", opts, 4);
    if (hpdl_arg_int_list("--batch", batch_list, 1, 65536, batches, MAX_BATCHES, &n_batches) != HPDL_OK) return 2;
    hpdl_csv_set_dir(output);
    if (!hpdl_cuda_available()) { printf("cnn: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    printf("cnn bench on %s: small CNN and ResNet-18, %d synthetic 3x32x32 images resident, SGD momentum 0.9\n",
           info.name, N_IMAGES);
    check_or_stop();
    std::vector<float> X((size_t)N_IMAGES * 3 * 32 * 32);
    std::vector<int32_t> labels(N_IMAGES);
    hpdl_rng_seed(&rng, (uint64_t)seed);
    for (float &v : X) v = (float)hpdl_rng_normal(&rng);
    for (int32_t &l : labels) l = (int32_t)hpdl_rng_below(&rng, 10);
    dX.f32 = upload(X);
    dX.f16 = upload(converted<hpdl_f16>(X, hpdl_f16_from_f32));
    dX.bf16 = upload(converted<hpdl_bf16>(X, hpdl_bf16_from_f32));
    HPDL_CUDA_CHECK(cudaMalloc(&dlabels, labels.size() * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemcpy(dlabels, labels.data(), labels.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    for (int n = 0; n < 2; n++)
        for (int b = 0; b < n_batches; b++)
            for (int v = 0; v < V_COUNT; v++) {
                if (only && strcmp(only, nets[n])) continue;
                r.ms[n][b][v] = time_variant(n, batches[b], v, &dX, dlabels);
                printf("  %-9s batch %4d %-10s %10.1f ms/epoch\n", nets[n], batches[b], variant_name[v], r.ms[n][b][v]);
                fflush(stdout);
            }
    run_torch(&r, only, batch_list);
    print_table(&r);
    write_csv(&r);
    cudaFree((void *)dX.f32);
    cudaFree((void *)dX.f16);
    cudaFree((void *)dX.bf16);
    cudaFree(dlabels);
    return 0;
}
