/* quantize: post-training int8 quantization of the Fashion-MNIST MLP, step
   by step, as in the course's quantization lab.

       make data && make build/examples/quantize && build/examples/quantize
       make plots                     # PNG charts of the histograms (bench/plots/quantize.gp)

   1. trains a 784-H-10 ReLU MLP (on the GPU with hpdl_cuda_mlp_f32 when
      there is one, else on the CPU with hpdl_mlp_train_step_f32);
   2. quantizes it (hpdl.h): weights per output channel,
      symmetric; activation ranges calibrated on training batches; int32
      biases at scale s_w * s_x;
   3. reports test accuracy for float, int8 weights only, + int8 activations,
      + int32 biases (integer-only), on the CPU and on the GPU (integer-only,
      mma.sync and dp4a kernels, whose int32 logits must equal the CPU's);
   4. writes weight and activation histograms (quantize_hist_w<l>.csv,
      quantize_hist_a<l>.csv) and the accuracies (quantize_accuracy.csv) to
      --output, else $HPDL_RESULTS, else results/<gpu or cpu>/.

   Flags (defaults in brackets):
       --data DIR     IDX files [data/fashion-mnist]
       --hidden H     hidden width [256]        --epochs E    [5]
       --batch B      [64]                      --lr X        [0.05]
       --calib N      calibration rows [2000]   --pct P       activation range:
                      100 = min/max, else that percentile [100]
       --seed S       [1]                       --cpu         train on the CPU even with a GPU
       --output DIR   results folder (--out DIR: the same)
       --help, --version */
#include "hpdl_cuda.cuh"

#include <sys/stat.h>

#include <vector>

#define FASHION_MEAN 0.2860f /* pixel mean and std of the Fashion-MNIST training set */
#define FASHION_STD 0.3530f
#define HIST_BINS 101

typedef struct options {
    const char *data, *out;
    int hidden, epochs, batch, calib, cpu;
    double lr, pct;
    uint64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o;
    int64_t seed = 1;
    hpdl_cli_option opts[11];
    o.data = "data/fashion-mnist";
    o.out = NULL;
    o.hidden = 256; o.epochs = 5; o.batch = 64; o.calib = 2000; o.cpu = 0;
    o.lr = 0.05; o.pct = 100.0; o.seed = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("hidden", 0, &o.hidden, 1, 1 << 20, "hidden width");
    opts[2] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "epochs");
    opts[3] = hpdl_cli_int("batch", 0, &o.batch, 1, 1 << 20, "mini-batch");
    opts[4] = hpdl_cli_f64("lr", 0, &o.lr, DBL_MIN, DBL_MAX, "learning rate");
    opts[5] = hpdl_cli_int("calib", 0, &o.calib, 1, INT32_MAX, "calibration rows");
    opts[6] = hpdl_cli_f64("pct", 0, &o.pct, 50, 100, "activation range: 100 = min/max, else that percentile");
    opts[7] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "random seed");
    opts[8] = hpdl_cli_flag("cpu", 0, &o.cpu, "train on the CPU even with a GPU");
    opts[9] = hpdl_cli_string("output", 0, &o.out, "DIR", "results folder (none: $HPDL_RESULTS, else results/<gpu or cpu>)");
    opts[10] = hpdl_cli_string("out", 0, &o.out, "DIR", "the same as --output");
    hpdl_cli_parse(argc, argv, "quantize", "Post-training int8 quantization of the Fashion-MNIST MLP.", opts, 11);
    o.seed = (uint64_t)seed;
    hpdl_csv_set_dir(o.out);
    return o;
}

/* ---- training ------------------------------------------------------------------------ */

static void train_cpu(const options *o, hpdl_mlp_f32 *m, const hpdl_dataset *train) {
    hpdl_mlp_work_f32 w;
    hpdl_mlp_f32 grad;
    int dim = (int)hpdl_dataset_features(train), e;
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, m->n_layers + 1, m->widths, m->act));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, m, o->batch));
    for (e = 1; e <= o->epochs; e++) {
        double loss_sum = 0, t0 = hpdl_time_now(), loss;
        int64_t i0, steps = 0;
        for (i0 = 0; i0 + o->batch <= train->n; i0 += o->batch, steps++) {
            HPDL_CHECK(hpdl_mlp_train_step_f32(m, &w, &grad, o->batch, train->images + (size_t)i0 * dim,
                                               train->labels + i0, (float)o->lr, 0.0f, &loss));
            loss_sum += loss;
        }
        printf("  epoch %d (CPU): loss %.4f, %.1f s\n", e, loss_sum / (double)steps, hpdl_time_now() - t0);
    }
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&grad);
}

static void train_gpu(const options *o, hpdl_mlp_f32 *m, const hpdl_dataset *train) {
    hpdl_cuda_dataset d;
    hpdl_cuda_mlp_f32 g;
    int e;
    HPDL_CHECK(hpdl_cuda_dataset_create(&d, train, HPDL_DATA_AUTO));
    HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, m, o->batch));
    for (e = 1; e <= o->epochs; e++) {
        hpdl_cuda_mlp_stats st;
        double t0 = hpdl_time_now();
        hpdl_status s;
        memset(&st, 0, sizeof st); /* read below when the epoch fails */
        s = hpdl_cuda_mlp_train_epoch_f32(&g, &d, o->batch, o->lr, 0.0, o->seed + (uint64_t)e, &st);
        if (s != HPDL_ERR_NUMERIC) HPDL_CHECK(s);
        if (s == HPDL_ERR_NUMERIC || !(fabs(st.loss) <= DBL_MAX)) {
            fprintf(stderr, "quantize: training diverged in epoch %d (loss %g): try a smaller --lr\n", e, st.loss);
            exit(1);
        }
        printf("  epoch %d (GPU): loss %.4f, train accuracy %.2f%%, %.2f s\n", e, st.loss, 100 * st.accuracy,
               hpdl_time_now() - t0);
    }
    HPDL_CHECK(hpdl_cuda_mlp_download_f32(&g, m));
    hpdl_cuda_mlp_destroy_f32(&g);
    hpdl_cuda_dataset_destroy(&d);
}

/* ---- histograms ------------------------------------------------------------------------ */

static void write_hist(const char *dir, const char *name, const float *x, int64_t n, double lo, double hi) {
    hpdl_quant_hist h;
    char path[1024];
    if (!(lo < hi)) hi = lo + 1.0; /* a constant tensor still gets a chart */
    snprintf(path, sizeof path, "%s/quantize_hist_%s.csv", dir, name);
    HPDL_CHECK(hpdl_quant_hist_init(&h, HIST_BINS, lo, hi));
    HPDL_CHECK(hpdl_quant_hist_add_f32(&h, x, n));
    HPDL_CHECK(hpdl_quant_hist_write_csv(&h, path));
    hpdl_quant_hist_free(&h);
}

static void minmax(const float *x, int64_t n, double *lo, double *hi) {
    int64_t i;
    *lo = HUGE_VAL;
    *hi = -HUGE_VAL;
    for (i = 0; i < n; i++) {
        if (x[i] < *lo) *lo = x[i];
        if (x[i] > *hi) *hi = x[i];
    }
}

/* Weights of each layer (w<l>) and each layer's input activations on the
   calibration rows (a<l>: a0 is the network input), over their own range. */
static void write_histograms(const char *dir, const hpdl_mlp_f32 *m, int n, const float *X) {
    hpdl_mlp_work_f32 w;
    char name[32];
    double lo, hi;
    int l;
    for (l = 0; l < m->n_layers; l++) {
        int64_t count = (int64_t)m->widths[l] * m->widths[l + 1];
        minmax(m->W[l], count, &lo, &hi);
        snprintf(name, sizeof name, "w%d", l);
        write_hist(dir, name, m->W[l], count, lo, hi);
    }
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, m, n));
    HPDL_CHECK(hpdl_mlp_forward_f32(m, &w, n, X));
    for (l = 0; l < m->n_layers; l++) {
        const float *a = l ? w.act[l] : X;
        int64_t count = (int64_t)n * m->widths[l];
        minmax(a, count, &lo, &hi);
        snprintf(name, sizeof name, "a%d", l);
        write_hist(dir, name, a, count, lo, hi);
    }
    hpdl_mlp_work_destroy_f32(&w);
    printf("histograms: %s/quantize_hist_{w,a}<layer>.csv\n", dir);
}

/* ---- quantized accuracy ---------------------------------------------------------------- */

/* Runs the integer-only model on the GPU with one algorithm: accuracy, and
   how many int32 logits differ from the CPU's (must be 0). */
/* Integer-only test accuracy on the GPU with one int8 GEMM kernel, and how
   many int32 logits differ from the CPU's; HPDL_ERR_UNSUPPORTED where the
   kernel cannot run (wgmma off Hopper). */
static hpdl_status gpu_accuracy(const hpdl_quant_mlp *q, hpdl_quant_algo algo, const hpdl_dataset *test, const float *dX,
                                const int32_t *dy, const int32_t *cpu_logits, double *acc, int64_t *mismatches) {
    hpdl_cuda_quant_mlp g;
    int classes = q->widths[q->n_layers];
    int64_t i;
    hpdl_status s;
    std::vector<int32_t> logits((size_t)test->n * classes);
    HPDL_CHECK(hpdl_cuda_quant_mlp_create(&g, q, (int)test->n, algo));
    s = hpdl_cuda_quant_mlp_accuracy(&g, test->n, dX, dy, acc, 0);
    if (s == HPDL_OK) {
        HPDL_CUDA_CHECK(cudaMemcpy(logits.data(), g.logits, logits.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
        for (*mismatches = 0, i = 0; i < (int64_t)logits.size(); i++) *mismatches += logits[i] != cpu_logits[i];
    }
    hpdl_cuda_quant_mlp_destroy(&g);
    return s;
}

static void results_dir(const options *o, char *dir, size_t size) {
    const char *env = getenv("HPDL_RESULTS");
    char slug[128] = "cpu";
    if (o->out) snprintf(dir, size, "%s", o->out);
    else if (env && *env) snprintf(dir, size, "%s", env);
    else {
        hpdl_cuda_device_info info;
        if (hpdl_cuda_available() && hpdl_cuda_device_query(0, &info) == HPDL_OK)
            hpdl_cuda_device_slug(info.name, slug, sizeof slug);
        snprintf(dir, size, "results/%s", slug);
    }
    mkdir("results", 0755); /* the usual parent; errors show up when writing */
    mkdir(dir, 0755);
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    int widths[3], gpu = hpdl_cuda_available(), mode, dim, classes = 10;
    hpdl_dataset train, test;
    hpdl_mlp_f32 m;
    hpdl_mlp_work_f32 fw;
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work qw;
    double float_acc, acc[4] = {0, 0, 0, 0};
    char dir[512];
    FILE *csv;
    results_dir(&o, dir, sizeof dir);
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 1, &train));
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 0, &test));
    if (test.channels != train.channels || test.rows != train.rows || test.cols != train.cols) {
        fprintf(stderr, "quantize: training images %dx%dx%d, test images %dx%dx%d: they must match\n", train.channels,
                train.rows, train.cols, test.channels, test.rows, test.cols); /* the input width comes from the data */
        return 1;
    }
    HPDL_CHECK(hpdl_dataset_normalize(&train, FASHION_MEAN, FASHION_STD));
    HPDL_CHECK(hpdl_dataset_normalize(&test, FASHION_MEAN, FASHION_STD));
    HPDL_CHECK(hpdl_dataset_shuffle(&train, o.seed)); /* the files are sorted by label */
    dim = (int)hpdl_dataset_features(&train); /* fits: the loaders cap a data set at HPDL_IDX_MAX_ITEMS (2^30) */
    widths[0] = dim; widths[1] = o.hidden; widths[2] = classes;
    if (o.calib > train.n) o.calib = (int)train.n;
    printf("quantize: MLP %d-%d-%d (relu), %d epochs, batch %d, lr %g; calibration on %d training rows (%s)\n", dim,
           o.hidden, classes, o.epochs, o.batch, o.lr, o.calib, o.pct >= 100 ? "min/max" : "percentile");
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, o.seed));
    if (gpu && !o.cpu) train_gpu(&o, &m, &train);
    else train_cpu(&o, &m, &train);

    HPDL_CHECK(hpdl_mlp_work_create_f32(&fw, &m, 1000));
    HPDL_CHECK(hpdl_mlp_accuracy_f32(&m, &fw, test.n, test.images, test.labels, &float_acc));
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &m, o.calib, train.images, o.pct));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&qw, &q, (int)test.n));
    printf("input: scale %.6g, zero point %d; hidden input: scale %.6g, zero point %d; logit scale %.6g\n",
           q.x_params[0].scale, q.x_params[0].zero_point, q.x_params[1].scale, q.x_params[1].zero_point, q.logit_scale);

    csv = hpdl_csv_open(dir, "quantize_accuracy");
    printf("\n%-36s %10s %10s\n", "test accuracy", "CPU", "vs float");
    printf("%-36s %9.2f%% %10s\n", "float", 100 * float_acc, "");
    hpdl_csv_row(csv, "accuracy_float_cpu", 100 * float_acc, "%", "float", 100 * float_acc, 1);
    for (mode = HPDL_QUANT_WEIGHTS; mode <= HPDL_QUANT_INTEGER; mode++) {
        static const char *const names[4] = {"", "accuracy_int8_weights_cpu", "accuracy_int8_activations_cpu",
                                             "accuracy_integer_only_cpu"};
        HPDL_CHECK(hpdl_quant_mlp_accuracy(&q, (hpdl_quant_mode)mode, &qw, test.n, test.images, test.labels, &acc[mode]));
        printf("%-36s %9.2f%% %+9.2f pp\n", hpdl_quant_mode_name((hpdl_quant_mode)mode), 100 * acc[mode],
               100 * (acc[mode] - float_acc));
        hpdl_csv_row(csv, names[mode], 100 * acc[mode], "%", "float", 100 * float_acc, 1);
    }
    if (gpu) {
        static const hpdl_quant_algo algos[3] = {HPDL_QUANT_WGMMA, HPDL_QUANT_MMA, HPDL_QUANT_DP4A};
        float *dX = NULL;
        int32_t *dy = NULL;
        int a;
        HPDL_CHECK(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &qw, (int)test.n, test.images)); /* CPU int32 logits */
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, (size_t)test.n * dim * sizeof(float)));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dy, (size_t)test.n * sizeof(int32_t)));
        HPDL_CHECK(hpdl_cuda_to_device(dX, test.images, (size_t)test.n * dim * sizeof(float), 0));
        HPDL_CHECK(hpdl_cuda_to_device(dy, test.labels, (size_t)test.n * sizeof(int32_t), 0));
        for (a = 0; a < 3; a++) {
            int64_t bad = 0;
            char metric[64];
            double g = 0;
            hpdl_status s = gpu_accuracy(&q, algos[a], &test, dX, dy, qw.logits, &g, &bad);
            if (s == HPDL_ERR_UNSUPPORTED) {
                printf("%-36s (GPU %s: not on this GPU)\n", "integer-only on the GPU", hpdl_quant_algo_name(algos[a]));
                continue;
            }
            HPDL_CHECK(s);
            printf("%-36s %9.2f%% %+9.2f pp   (GPU %s; int32 logits differing from the CPU: %lld)\n",
                   "integer-only on the GPU", 100 * g, 100 * (g - float_acc), hpdl_quant_algo_name(algos[a]), (long long)bad);
            snprintf(metric, sizeof metric, "accuracy_integer_only_gpu_%s", hpdl_quant_algo_name(algos[a]));
            hpdl_csv_row(csv, metric, 100 * g, "%", "float", 100 * float_acc, 1);
            snprintf(metric, sizeof metric, "logit_mismatches_gpu_%s", hpdl_quant_algo_name(algos[a]));
            hpdl_csv_row(csv, metric, (double)bad, "count", "", 0, 0);
            if (bad) { fprintf(stderr, "quantize: GPU and CPU integer logits differ\n"); return 1; }
        }
        hpdl_cuda_free(dX);
        hpdl_cuda_free(dy);
    }
    if (csv) fclose(csv);
    printf("\n");
    write_histograms(dir, &m, o.calib < 2000 ? o.calib : 2000, train.images);
    hpdl_quant_mlp_work_destroy(&qw);
    hpdl_quant_mlp_free(&q);
    hpdl_mlp_work_destroy_f32(&fw);
    hpdl_mlp_destroy_f32(&m);
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    return 0;
}
