/* quantize_cnn: the quantization lab on its CNN, on the CPU: trains the
   lab's small CNN (conv 5x5 -> 6, pool, conv 5x5 -> 16, pool, 120, 84, 10)
   on Fashion-MNIST with the CPU backend, then quantizes it a piece at a
   time and measures test accuracy after each step:

     float            the trained f32 network
     w8 per tensor    weights rounded to int8 with one symmetric scale per
                      tensor (max |w|), computed back in float
     w8 per channel   one scale per output channel
     int8 min/max     integer-only inference (hpdl_quant_cnn_*): per-channel
                      int8 weights, int8 activations whose ranges are the
                      min/max seen on --calib training images, int32 biases
                      at s_input * s_weight, fixed-point requantisation
     int8 pct         the same with activation ranges at the --pct percentile

   Writes quantize_cnn.csv (accuracy per step against float) and one weight
   histogram per layer, quantize_cnn_hist_w<layer>.csv, with the range each
   method picks in quantize_cnn_ranges.csv, into --output DIR, else
   $HPDL_RESULTS, else the current folder.

       make data && make build/examples/quantize_cnn && build/examples/quantize_cnn
       --help lists the flags. */
#include "hpdl.h"

#define HIST_BINS 101

typedef struct options {
    const char *data, *output;
    int epochs, batch, calib, train_images;
    double lr, pct;
    int64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o;
    hpdl_cli_option opts[9];
    o.data = "data/fashion-mnist";
    o.output = NULL;
    o.epochs = 3; o.batch = 32; o.calib = 2000; o.train_images = 0;
    o.lr = 0.02; o.pct = 99.99; o.seed = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "training epochs");
    opts[2] = hpdl_cli_int("batch", 0, &o.batch, 1, 1 << 16, "mini-batch");
    opts[3] = hpdl_cli_f64("lr", 0, &o.lr, DBL_MIN, 100, "learning rate (SGD, momentum 0.9)");
    opts[4] = hpdl_cli_int("calib", 0, &o.calib, 1, INT32_MAX, "calibration images");
    opts[5] = hpdl_cli_f64("pct", 0, &o.pct, 50, 100, "percentile of the second activation calibration");
    opts[6] = hpdl_cli_int("train-images", 0, &o.train_images, 0, INT32_MAX, "train on the first N images (0: all)");
    opts[7] = hpdl_cli_i64("seed", 0, &o.seed, 0, INT64_MAX, "seed of the weights and the shuffles");
    opts[8] = hpdl_cli_string("output", 0, &o.output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "quantize_cnn", "Post-training int8 quantization of the lab's small CNN, step by step.",
                   opts, 9);
    return o;
}

/* The images standardised with the training set's mean and std (one
   channel: CHW and HWC are the same floats). */
static void standardise(hpdl_dataset *d, double mean, double std) {
    int64_t i, n = d->n * hpdl_dataset_features(d);
    for (i = 0; i < n; i++) d->images[i] = (float)((d->images[i] - mean) / std);
}

static void mean_std(const hpdl_dataset *d, double *mean, double *std) {
    int64_t i, n = d->n * hpdl_dataset_features(d);
    double sum = 0, sq = 0;
    for (i = 0; i < n; i++) sum += d->images[i], sq += (double)d->images[i] * d->images[i];
    *mean = sum / (double)n;
    *std = sqrt(sq / (double)n - *mean * *mean);
}

/* Weights of layer i of a chain (conv or linear): outputs x taps. */
static int layer_taps(const hpdl_cnn *net, int i) {
    hpdl_shape in = i ? net->out[i - 1] : net->input;
    const hpdl_cnn_layer *l = &net->layer[i];
    return l->op == HPDL_CNN_CONV ? l->kernel * l->kernel * in.c : in.c * in.h * in.w;
}

/* w (outs x taps) rounded to int8 and back: one symmetric scale per
   output channel, or one for the whole tensor. */
static void fake_quantize(float *w, int outs, int taps, int per_channel) {
    hpdl_quant_params *p = (hpdl_quant_params *)hpdl_alloc((size_t)outs, sizeof *p);
    int8_t *q = (int8_t *)hpdl_alloc((size_t)outs * taps, 1);
    int64_t j;
    int k;
    if (!p || !q) { fprintf(stderr, "quantize_cnn: out of memory\n"); exit(1); }
    if (per_channel) {
        HPDL_CHECK(hpdl_quant_params_per_channel_f32(w, outs, taps, taps, 0, 1, p));
    } else {
        float most = 0;
        for (j = 0; j < (int64_t)outs * taps; j++) most = fabsf(w[j]) > most ? fabsf(w[j]) : most;
        HPDL_CHECK(hpdl_quant_params_from_range(-most, most, 1, &p[0]));
        for (k = 1; k < outs; k++) p[k] = p[0];
    }
    HPDL_CHECK(hpdl_quant_quantize_channels_f32(w, outs, taps, taps, 0, p, q, taps));
    for (k = 0; k < outs; k++)
        for (j = 0; j < taps; j++)
            w[(size_t)k * taps + j] = p[k].scale * (float)(q[(size_t)k * taps + j] - p[k].zero_point);
    free(p);
    free(q);
}

/* Test accuracy of the float network with parameters p (f32, the run's copy replaced). */
static double float_accuracy(hpdl_cnn_run *r, const float *p, const hpdl_dataset *test) {
    int64_t j, n = r->net->param_count;
    double *p64 = (double *)hpdl_alloc((size_t)n, sizeof *p64), acc = 0;
    if (!p64) { fprintf(stderr, "quantize_cnn: out of memory\n"); exit(1); }
    for (j = 0; j < n; j++) p64[j] = p[j];
    HPDL_CHECK(hpdl_cnn_set_params(r, p64, NULL));
    HPDL_CHECK(hpdl_cnn_accuracy(r, test->n, test->images, test->labels, &acc));
    free(p64);
    return acc;
}

static void train(hpdl_cnn_run *r, hpdl_dataset *train_set, const options *o) {
    int64_t features = hpdl_dataset_features(train_set), i;
    int epoch;
    for (epoch = 1; epoch <= o->epochs; epoch++) {
        double t0 = hpdl_time_now(), sum = 0, loss = 0;
        int64_t steps = 0;
        HPDL_CHECK(hpdl_dataset_shuffle(train_set, (uint64_t)o->seed + (uint64_t)epoch));
        for (i = 0; i + o->batch <= train_set->n; i += o->batch, steps++) {
            HPDL_CHECK(hpdl_cnn_train_step(r, o->batch, train_set->images + i * features, train_set->labels + i));
            HPDL_CHECK(hpdl_cnn_loss(r, &loss));
            sum += loss;
        }
        printf("epoch %d  loss %.4f  %.1f s\n", epoch, sum / (double)(steps ? steps : 1), hpdl_time_now() - t0);
    }
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The pct-th percentile of |w| (n values). */
static double abs_percentile(const float *w, int64_t n, double pct) {
    float *a = (float *)hpdl_alloc((size_t)n, sizeof *a);
    int64_t j;
    double v;
    if (!a) { fprintf(stderr, "quantize_cnn: out of memory\n"); exit(1); }
    for (j = 0; j < n; j++) a[j] = fabsf(w[j]);
    qsort(a, (size_t)n, sizeof *a, by_value);
    v = a[(int64_t)(pct / 100.0 * (double)(n - 1))];
    free(a);
    return v;
}

/* Each weighted layer's histogram over [-max|w|, max|w|] into DIR, and the
   ranges min/max, 3 sigma and the 99.9th percentile of |w| would pick. */
static void write_weight_stats(const hpdl_cnn *net, const float *p, const char *dir) {
    hpdl_csv_file ranges;
    int i;
    HPDL_CHECK(hpdl_csv_create(&ranges, ".", "quantize_cnn_ranges", "layer,minmax,three_sigma,pct99_9"));
    for (i = 0; i < net->n_layers; i++) {
        int64_t j, n;
        const float *w;
        double most = 0, sq = 0, cut;
        hpdl_quant_hist h;
        char path[1024];
        if (net->weight_at[i] < 0) continue;
        n = (int64_t)net->out[i].c * layer_taps(net, i);
        w = p + net->weight_at[i];
        for (j = 0; j < n; j++) most = fabs(w[j]) > most ? fabs(w[j]) : most, sq += (double)w[j] * w[j];
        HPDL_CHECK(hpdl_quant_hist_init(&h, HIST_BINS, -most, most));
        HPDL_CHECK(hpdl_quant_hist_add_f32(&h, w, n));
        snprintf(path, sizeof path, "%s/quantize_cnn_hist_w%d.csv", dir, i);
        HPDL_CHECK(hpdl_quant_hist_write_csv(&h, path));
        cut = abs_percentile(w, n, 99.9);
        fprintf(ranges.f, "%d,%.6g,%.6g,%.6g\n", i, most, 3 * sqrt(sq / (double)n), cut);
        hpdl_quant_hist_free(&h);
    }
    HPDL_CHECK(hpdl_csv_commit(&ranges));
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset train_set, test;
    hpdl_cnn net;
    hpdl_cnn_run r;
    hpdl_cnn_optimizer opt;
    hpdl_quant_cnn q;
    hpdl_csv_file csv;
    double mean, std, *p64, *state, acc[5];
    float *trained, *p;
    static const char *const steps[5] = {"float", "w8_per_tensor", "w8_per_channel", "int8_minmax", "int8_pct"};
    char context[2048];
    int64_t j;
    int i, s;
    hpdl_csv_set_dir(o.output);
    HPDL_CHECK(hpdl_csv_context_make(argc, argv, "CPU (f32 backend)", context, sizeof context));
    hpdl_csv_set_context(context); /* beside every CSV: date, commit ($HPDL_COMMIT), command */
    if (hpdl_idx_load_dir(o.data, 1, &train_set) != HPDL_OK || hpdl_idx_load_dir(o.data, 0, &test) != HPDL_OK) {
        fprintf(stderr, "quantize_cnn: cannot load the IDX files in %s (make data)\n", o.data);
        return 1;
    }
    if (o.train_images && o.train_images < train_set.n) train_set.n = o.train_images;
    if (o.calib > train_set.n) o.calib = (int)train_set.n;
    mean_std(&train_set, &mean, &std);
    standardise(&train_set, mean, std);
    standardise(&test, mean, std);
    HPDL_CHECK(hpdl_cnn_small(&net, hpdl_shape_make(train_set.channels, train_set.rows, train_set.cols), 10, HPDL_NHWC));
    p64 = (double *)hpdl_alloc((size_t)net.param_count, sizeof *p64);
    state = (double *)hpdl_alloc(1, sizeof *state);
    trained = (float *)hpdl_alloc((size_t)net.param_count, sizeof *trained);
    p = (float *)hpdl_alloc((size_t)net.param_count, sizeof *p);
    if (!p64 || !state || !trained || !p) { fprintf(stderr, "quantize_cnn: out of memory\n"); return 1; }
    HPDL_CHECK(hpdl_cnn_init(&net, (uint64_t)o.seed, p64, state));
    opt = hpdl_cnn_sgd(o.lr, 0.9, 0.0);
    HPDL_CHECK(hpdl_cnn_run_create(&r, &net, hpdl_cnn_backend_cpu_f32(), o.batch > 256 ? o.batch : 256, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, p64, NULL));
    printf("quantize_cnn: small CNN, %lld parameters, %lld training and %lld test images of %dx%dx%d, CPU f32\n",
           (long long)net.param_count, (long long)train_set.n, (long long)test.n, train_set.channels, train_set.rows,
           train_set.cols);
    train(&r, &train_set, &o);
    HPDL_CHECK(hpdl_cnn_get_params(&r, p64, NULL));
    for (j = 0; j < net.param_count; j++) trained[j] = (float)p64[j];

    acc[0] = float_accuracy(&r, trained, &test);
    for (s = 1; s <= 2; s++) { /* weights only, computed back in float */
        memcpy(p, trained, (size_t)net.param_count * sizeof *p);
        for (i = 0; i < net.n_layers; i++)
            if (net.weight_at[i] >= 0) fake_quantize(p + net.weight_at[i], net.out[i].c, layer_taps(&net, i), s == 2);
        acc[s] = float_accuracy(&r, p, &test);
    }
    for (s = 3; s <= 4; s++) { /* integer-only */
        HPDL_CHECK(hpdl_quant_cnn_build(&q, &net, trained, o.calib, train_set.images, s == 3 ? 100.0 : o.pct));
        HPDL_CHECK(hpdl_quant_cnn_accuracy(&q, test.n, test.images, test.labels, &acc[s]));
        hpdl_quant_cnn_free(&q);
    }

    printf("%-16s %9s %9s\n", "step", "accuracy", "vs float");
    HPDL_CHECK(hpdl_csv_create(&csv, ".", "quantize_cnn", "metric,value,unit,anchor,anchor_value,ratio"));
    for (s = 0; s < 5; s++) {
        char metric[64];
        printf("%-16s %8.2f%% %+8.2f\n", steps[s], 100 * acc[s], 100 * (acc[s] - acc[0]));
        snprintf(metric, sizeof metric, "quant_cnn_small_%s_accuracy", steps[s]);
        hpdl_csv_row(csv.f, metric, acc[s], "fraction", "float", acc[0], 1);
    }
    printf("(int8_pct: activation ranges at the %g percentile; int8 rows: integer-only, logits int32)\n", o.pct);
    HPDL_CHECK(hpdl_csv_commit(&csv));
    write_weight_stats(&net, trained, o.output ? o.output : getenv("HPDL_RESULTS") ? getenv("HPDL_RESULTS") : ".");
    hpdl_cnn_run_destroy(&r);
    free(p64); free(state); free(trained); free(p);
    hpdl_dataset_free(&train_set);
    hpdl_dataset_free(&test);
    return 0;
}
