/* quantize_cnn: the quantization lab on its CNN: trains the lab's small
   CNN (conv 5x5 -> 6, pool, conv 5x5 -> 16, pool, 120, 84, 10) on
   Fashion-MNIST with the CPU backend, or loads a network trained by
   examples/cnn_train (--load FILE, --net small|resnet18: ResNet-18 is too
   slow to train on a CPU), folds its batch norms into the convolutions,
   then quantizes it a piece at a time and measures test accuracy after
   each step:

     float            the trained f32 network
     w8 per tensor    weights rounded to int8 with one symmetric scale per
                      tensor (max |w|), computed back in float
     w8 per channel   one scale per output channel
     int8 min/max     integer-only inference (hpdl_quant_cnn_*): per-channel
                      int8 weights, int8 activations whose ranges are the
                      min/max seen on --calib training images, int32 biases
                      at s_input * s_weight, fixed-point requantisation
     int8 pct         the same with activation ranges at the --pct percentile

   The integer-only logits are computed on the CPU, the test images split
   over --threads POSIX threads (all cores by default); each int8 step
   prints a digest of them, equal for equal logits.

   --device N (a CUDA build: make builds this file with nvcc where there is
   a GPU) runs the float steps and the calibration on GPU N (the CNN's f32
   GPU backend: ResNet-18 takes about a second an image on the CPU twin),
   and the integer-only steps on the GPU too (hpdl_cuda_quant_cnn), whose
   logits must equal the CPU's on every test image: it prints how many do,
   and exits 1 when one does not (after writing the CSVs). The accuracy is
   then the GPU's, and --cpu-images N limits the CPU's reference logits to
   the first N test images (ResNet-18's take ~0.7 s an image on one core).

   Writes quantize_cnn.csv (accuracy per step against float; with --device,
   the images whose GPU logits equal the CPU's) and one weight histogram per
   layer, quantize_cnn_hist_w<layer>.csv, with the range each method picks
   in quantize_cnn_ranges.csv, into --output DIR, else $HPDL_RESULTS, else
   the current folder.

       make data && make build/examples/quantize_cnn && build/examples/quantize_cnn
       build/examples/cnn_train --net resnet18 --precision bf16 --save r18.ckpt ...
       build/examples/quantize_cnn --net resnet18 --load r18.ckpt --precision bf16 --device 0
       --help lists the flags. */
#include "hpdl.h"
#ifdef __CUDACC__
#include "hpdl_cuda.cuh"
#define HAVE_CUDA 1
#else
#define HAVE_CUDA 0
#endif
#include <pthread.h>
#include <unistd.h> /* sysconf: the number of cores */

#define HIST_BINS 101
#define EVAL_BATCH 256 /* images per float forward and per GPU integer-only forward */

typedef struct options {
    const char *data, *output, *net, *load, *precision, *optimizer;
    int epochs, batch, calib, train_images, test_images, threads, device, cpu_images;
    double lr, pct;
    int64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o;
    hpdl_cli_option opts[17];
    o.data = "data/fashion-mnist";
    o.output = o.load = NULL;
    o.net = "small"; o.precision = "f32"; o.optimizer = "sgd";
    o.epochs = 3; o.batch = 32; o.calib = 2000; o.train_images = o.test_images = o.threads = o.cpu_images = 0;
    o.device = -1;
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
    opts[9] = hpdl_cli_choice("net", 0, &o.net, "small|resnet18", "network");
    opts[10] = hpdl_cli_string("load", 0, &o.load, "FILE", "a cnn_train checkpoint of that network (no training)");
    opts[11] = hpdl_cli_choice("precision", 0, &o.precision, "f32|f16|bf16", "the checkpoint's training precision");
    opts[12] = hpdl_cli_choice("optimizer", 0, &o.optimizer, "sgd|adamw", "the checkpoint's optimizer");
    opts[13] = hpdl_cli_int("test-images", 0, &o.test_images, 0, INT32_MAX, "measure on the first N test images (0: all)");
    opts[14] = hpdl_cli_int("threads", 0, &o.threads, 0, 4096, "CPU threads of the integer-only steps (0: all cores)");
    opts[15] = hpdl_cli_int("device", 0, &o.device, -1, 1 << 16,
                            "GPU of the evaluation, checked against the CPU (-1: none; CUDA build only)");
    opts[16] = hpdl_cli_int("cpu-images", 0, &o.cpu_images, 0, INT32_MAX,
                            "with --device: the CPU's integer logits on the first N test images only (0: all)");
    hpdl_cli_parse(argc, argv, "quantize_cnn", "Post-training int8 quantization of the lab's CNN, step by step.", opts,
                   17);
    if (o.device >= 0 && !HAVE_CUDA) {
        fprintf(stderr, "quantize_cnn: --device needs the CUDA build (this one is C only: make builds it with nvcc "
                        "where there is a GPU)\n");
        exit(2);
    }
    if (o.threads == 0) o.threads = (int)(sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1);
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

/* n elements of `size` bytes (at least one), or the program stops. */
static void *allocate(int64_t n, size_t size) {
    void *p = hpdl_alloc((size_t)(n > 0 ? n : 1), size);
    if (!p) { fprintf(stderr, "quantize_cnn: out of memory\n"); exit(1); }
    return p;
}

/* Weights of layer i (conv or linear) are outputs x taps. */
static int layer_taps(const hpdl_cnn *net, int i) {
    hpdl_shape in = net->layer[i].input == HPDL_CNN_IMAGE ? net->input : net->out[net->layer[i].input];
    const hpdl_cnn_layer *l = &net->layer[i];
    return l->op == HPDL_CNN_CONV ? l->kernel * l->kernel * in.c : in.c * in.h * in.w;
}

/* w (outs x taps) rounded to int8 and back: one symmetric scale per
   output channel, or one for the whole tensor. */
static void fake_quantize(float *w, int outs, int taps, int per_channel) {
    hpdl_quant_params *p = (hpdl_quant_params *)allocate(outs, sizeof *p);
    int8_t *q = (int8_t *)allocate((int64_t)outs * taps, 1);
    int64_t j;
    int k;
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

/* Where the evaluation runs: the float steps and the calibration on a CNN
   backend (the CPU's f32 one, or with --device the GPU's), which holds the
   test images and labels and the calibration images; the integer-only
   steps on the CPU, and with --device on the GPU as well. */
typedef struct evaluator {
    const hpdl_cnn_backend *be;
    void *test_x, *test_y, *calib_x; /* in be's memory */
    int64_t n, calib;
    int on_gpu;
#ifdef __CUDACC__
    hpdl_cuda_cnn gpu;
#endif
} evaluator;

/* A copy of `bytes` of host memory in the backend's memory. */
static void *to_backend(const hpdl_cnn_backend *be, const void *host, size_t bytes) {
    void *p = be->alloc(be->ctx, bytes);
    if (!p) { fprintf(stderr, "quantize_cnn: out of memory (%s)\n", be->name); exit(1); }
    HPDL_CHECK(be->upload(be->ctx, p, host, bytes));
    return p;
}

static void evaluator_open(evaluator *ev, const options *o, const hpdl_dataset *train_set, const hpdl_dataset *test) {
    int64_t features = hpdl_dataset_features(test);
    memset(ev, 0, sizeof *ev);
    ev->be = hpdl_cnn_backend_cpu_f32();
#ifdef __CUDACC__
    if (o->device >= 0) {
        HPDL_CHECK(hpdl_cuda_cnn_create_f32(&ev->gpu, HPDL_CONV_AUTO, 0));
        ev->be = &ev->gpu.be;
        ev->on_gpu = 1;
    }
#endif
    ev->n = test->n;
    ev->calib = o->calib;
    ev->test_x = to_backend(ev->be, test->images, (size_t)(test->n * features) * sizeof(float));
    ev->test_y = to_backend(ev->be, test->labels, (size_t)test->n * sizeof(int32_t));
    ev->calib_x = to_backend(ev->be, train_set->images, (size_t)(o->calib * features) * sizeof(float));
    printf("evaluation: float steps and calibration on %s, integer-only steps on %d CPU threads%s\n", ev->be->name,
           o->threads, ev->on_gpu ? " and the GPU, compared image by image" : "");
}

static void evaluator_close(evaluator *ev) {
    ev->be->release(ev->be->ctx, ev->test_x);
    ev->be->release(ev->be->ctx, ev->test_y);
    ev->be->release(ev->be->ctx, ev->calib_x);
#ifdef __CUDACC__
    if (ev->on_gpu) hpdl_cuda_cnn_destroy(&ev->gpu);
#endif
}

/* Test accuracy of the float network with parameters p (f32, the run's copy replaced). */
static double float_accuracy(hpdl_cnn_run *r, const float *p, const evaluator *ev) {
    int64_t j, n = r->net->param_count;
    double *p64 = (double *)allocate(n, sizeof *p64), acc = 0;
    for (j = 0; j < n; j++) p64[j] = p[j];
    HPDL_CHECK(hpdl_cnn_set_params(r, p64, NULL));
    HPDL_CHECK(hpdl_cnn_accuracy(r, ev->n, ev->test_x, (const int32_t *)ev->test_y, &acc));
    free(p64);
    return acc;
}

/* A slice of the images whose integer-only logits one thread computes. */
typedef struct logits_slice {
    const hpdl_quant_cnn *q;
    const float *X; /* the slice's first image */
    int32_t *logits; /* its first logits */
    int64_t n, features;
    hpdl_status status;
} logits_slice;

static void *slice_logits(void *arg) {
    logits_slice *s = (logits_slice *)arg;
    int64_t i0;
    s->status = HPDL_OK;
    for (i0 = 0; s->status == HPDL_OK && i0 < s->n; i0 += 64) {
        int batch = (int)(s->n - i0 < 64 ? s->n - i0 : 64);
        s->status = hpdl_quant_cnn_logits(s->q, batch, s->X + i0 * s->features, s->logits + i0 * s->q->net.classes);
    }
    return NULL;
}

/* The integer-only logits of n images X on the CPU, the images split into
   `threads` slices of consecutive images, one POSIX thread each
   (hpdl_quant_cnn_logits only reads q and has scratch of its own). */
static void cpu_int8_logits(const hpdl_quant_cnn *q, int64_t n, const float *X, int64_t features, int threads,
                            int32_t *logits) {
    logits_slice *s = (logits_slice *)allocate(threads, sizeof *s);
    pthread_t *t = (pthread_t *)allocate(threads, sizeof *t);
    int k;
    for (k = 0; k < threads; k++) {
        int64_t first = n * k / threads;
        s[k].q = q;
        s[k].X = X + first * features;
        s[k].logits = logits + first * q->net.classes;
        s[k].n = n * (k + 1) / threads - first;
        s[k].features = features;
        if (pthread_create(&t[k], NULL, slice_logits, &s[k]) != 0) {
            fprintf(stderr, "quantize_cnn: cannot start thread %d of %d\n", k + 1, threads);
            exit(1);
        }
    }
    for (k = 0; k < threads; k++) pthread_join(t[k], NULL);
    for (k = 0; k < threads; k++) HPDL_CHECK(s[k].status);
    free(s);
    free(t);
}

/* Fraction of n images whose largest logit (the first on ties) is at their label. */
static double accuracy_of(const int32_t *logits, const int32_t *labels, int64_t n, int classes) {
    int64_t i, hits = 0;
    int c, best;
    for (i = 0; i < n; i++) {
        const int32_t *l = logits + i * classes;
        for (best = 0, c = 1; c < classes; c++) best = l[c] > l[best] ? c : best;
        hits += best == labels[i];
    }
    return (double)hits / (double)n;
}

/* FNV-1a over the logits' values: equal logits, equal digests (to compare
   runs with other thread counts, builds or machines). */
static unsigned long long digest(const int32_t *v, int64_t n) {
    unsigned long long h = 14695981039346656037ULL;
    int64_t i;
    for (i = 0; i < n; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ULL;
    return h;
}

#ifdef __CUDACC__
/* Integer-only logits of the n images X (device floats) on the GPU. */
static void gpu_int8_logits(const hpdl_quant_cnn *q, int64_t n, const float *X, int32_t *logits) {
    const int64_t features = (int64_t)q->net.input.c * q->net.input.h * q->net.input.w;
    hpdl_cuda_quant_cnn g;
    int64_t i0;
    HPDL_CHECK(hpdl_cuda_quant_cnn_create(&g, q, EVAL_BATCH));
    for (i0 = 0; i0 < n; i0 += EVAL_BATCH) {
        int batch = (int)(n - i0 < EVAL_BATCH ? n - i0 : EVAL_BATCH);
        HPDL_CHECK(hpdl_cuda_quant_cnn_logits(&g, batch, X + i0 * features, logits + i0 * q->net.classes, 0));
    }
    hpdl_cuda_quant_cnn_destroy(&g);
}

/* How many of the first n images have the same `classes` logits in a and b. */
static int64_t logits_equal(const int32_t *a, const int32_t *b, int64_t n, int classes) {
    int64_t i, equal = 0;
    for (i = 0; i < n; i++) equal += !memcmp(a + i * classes, b + i * classes, (size_t)classes * sizeof *a);
    return equal;
}
#endif

/* An integer-only step (activation ranges at the pct percentile, 100:
   min/max): its test accuracy from the CPU's logits; with --device, from
   the GPU's, *checked of them (the first, --cpu-images) computed on the
   CPU too and *equal of those the same (else both -1). */
static double integer_step(const options *o, const evaluator *ev, const hpdl_cnn *f, const float *pf,
                           const hpdl_dataset *test, const char *step, double pct, int64_t *equal, int64_t *checked) {
    const int classes = f->classes;
    const int64_t on_cpu = ev->on_gpu && o->cpu_images > 0 && o->cpu_images < test->n ? o->cpu_images : test->n;
    int32_t *logits = (int32_t *)allocate(test->n * classes, sizeof *logits), *gpu = NULL;
    hpdl_quant_cnn q;
    double t0 = hpdl_time_now(), t1, acc;
    HPDL_CHECK(hpdl_quant_cnn_build_backend(&q, f, pf, ev->calib, (const float *)ev->calib_x, pct, ev->be));
    t1 = hpdl_time_now();
    cpu_int8_logits(&q, on_cpu, test->images, hpdl_dataset_features(test), o->threads, logits);
    printf("%s: calibrated on %lld images in %.1f s; CPU logits of %lld images in %.1f s, digest %016llx\n", step,
           (long long)ev->calib, t1 - t0, (long long)on_cpu, hpdl_time_now() - t1, digest(logits, on_cpu * classes));
    *equal = *checked = -1;
    acc = on_cpu == test->n ? accuracy_of(logits, test->labels, test->n, classes) : 0;
#ifdef __CUDACC__
    if (ev->on_gpu) {
        gpu = (int32_t *)allocate(test->n * classes, sizeof *gpu);
        gpu_int8_logits(&q, test->n, (const float *)ev->test_x, gpu);
        acc = accuracy_of(gpu, test->labels, test->n, classes);
        *checked = on_cpu;
        *equal = logits_equal(gpu, logits, on_cpu, classes);
        printf("%s: GPU logits of %lld test images, equal to the CPU's on %lld of %lld%s\n", step,
               (long long)test->n, (long long)*equal, (long long)on_cpu, *equal == on_cpu ? "" : "  MISMATCH");
    }
#endif
    hpdl_quant_cnn_free(&q);
    free(logits);
    free(gpu);
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
    float *a = (float *)allocate(n, sizeof *a);
    int64_t j;
    double v;
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

/* The parameters and batch-norm state of a cnn_train checkpoint (written
   by `cnn_train --net N --save FILE` with the same --precision and
   --optimizer; f32 master parameters under mixed precision). */
static void load_checkpoint(const options *o, const hpdl_cnn *net, double *params, double *state) {
    float *p = (float *)allocate(net->param_count, sizeof *p), *st = (float *)allocate(net->state_count, sizeof *st);
    float *m1 = (float *)allocate(net->param_count, sizeof *m1), *m2 = (float *)allocate(net->param_count, sizeof *m2);
    int64_t steps = 0, j;
    char model[HPDL_CKPT_MAX_MODEL + 1];
    hpdl_ckpt_entry e[5];
    const int n = hpdl_cnn_ckpt_entries(net, !strcmp(o->optimizer, "adamw"), HPDL_DTYPE_F32, p, st, m1, m2, &steps, e);
    HPDL_CHECK(hpdl_cnn_ckpt_model(o->net, net, "nhwc", o->precision, model, sizeof model));
    if (n == 0 || hpdl_ckpt_load(o->load, model, n, e) != HPDL_OK) {
        fprintf(stderr, "quantize_cnn: %s is not a checkpoint of '%s' trained with %s\n", o->load, model, o->optimizer);
        exit(1);
    }
    for (j = 0; j < net->param_count; j++) params[j] = p[j];
    for (j = 0; j < net->state_count; j++) state[j] = st[j];
    printf("loaded %s (%lld steps)\n", o->load, (long long)steps);
    free(p); free(st); free(m1); free(m2);
}

/* Test accuracy through the lab's steps, of the folded network f and its
   parameters pf (f32); equal[k]: images whose GPU logits equal the CPU's in
   integer-only step k, of checked[k] (-1: not on a GPU). */
static void measure(const options *o, const evaluator *ev, const hpdl_cnn *f, const float *pf,
                    const hpdl_dataset *test, double acc[5], int64_t equal[2], int64_t checked[2]) {
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0, 0, 0);
    hpdl_cnn_run r;
    float *p = (float *)allocate(f->param_count, sizeof *p);
    int i, s;
    HPDL_CHECK(hpdl_cnn_run_create(&r, f, ev->be, EVAL_BATCH, &opt));
    acc[0] = float_accuracy(&r, pf, ev);
    for (s = 1; s <= 2; s++) { /* weights only, computed back in float */
        memcpy(p, pf, (size_t)f->param_count * sizeof *p);
        for (i = 0; i < f->n_layers; i++)
            if (f->weight_at[i] >= 0) fake_quantize(p + f->weight_at[i], f->out[i].c, layer_taps(f, i), s == 2);
        acc[s] = float_accuracy(&r, p, ev);
    }
    hpdl_cnn_run_destroy(&r);
    acc[3] = integer_step(o, ev, f, pf, test, "int8_minmax", 100.0, &equal[0], &checked[0]);
    acc[4] = integer_step(o, ev, f, pf, test, "int8_pct", o->pct, &equal[1], &checked[1]);
    free(p);
}

/* The machine each CSV's context names; with --device, that GPU chosen. */
static void choose_device(int argc, char **argv, const options *o) {
    static char context[2048];
#ifdef __CUDACC__
    if (o->device >= 0) {
        if (!hpdl_cuda_available()) {
            fprintf(stderr, "quantize_cnn: no CUDA GPU\n");
            exit(1);
        }
        HPDL_CUDA_CHECK(cudaSetDevice(o->device));
        HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, o->device));
        return;
    }
#else
    (void)o;
#endif
    HPDL_CHECK(hpdl_csv_context_make(argc, argv, "CPU (f32 backend)", context, sizeof context));
    hpdl_csv_set_context(context); /* beside every CSV: date, commit ($HPDL_COMMIT), command */
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset train_set, test;
    hpdl_cnn net, folded;
    hpdl_csv_file csv;
    evaluator ev;
    double mean, std, *p64, *state, *pf64, acc[5];
    float *pf;
    static const char *const steps[5] = {"float", "w8_per_tensor", "w8_per_channel", "int8_minmax", "int8_pct"};
    int64_t j, equal[2], checked[2];
    int s, mismatch = 0;
    hpdl_csv_set_dir(o.output);
    choose_device(argc, argv, &o);
    if (hpdl_idx_load_dir(o.data, 1, &train_set) != HPDL_OK || hpdl_idx_load_dir(o.data, 0, &test) != HPDL_OK) {
        fprintf(stderr, "quantize_cnn: cannot load the IDX files in %s (make data)\n", o.data);
        return 1;
    }
    mean_std(&train_set, &mean, &std); /* cnn_train's standardisation: the whole training set's */
    if (o.train_images && o.train_images < train_set.n) train_set.n = o.train_images;
    if (o.test_images && o.test_images < test.n) test.n = o.test_images;
    if (o.calib > train_set.n) o.calib = (int)train_set.n;
    standardise(&train_set, mean, std);
    standardise(&test, mean, std);
    {
        hpdl_shape shape = hpdl_shape_make(train_set.channels, train_set.rows, train_set.cols);
        HPDL_CHECK(!strcmp(o.net, "small") ? hpdl_cnn_small(&net, shape, 10, HPDL_NHWC)
                                           : hpdl_cnn_resnet18(&net, shape, 10, HPDL_NHWC));
    }
    p64 = (double *)allocate(net.param_count, sizeof *p64);
    state = (double *)allocate(net.state_count, sizeof *state);
    printf("quantize_cnn: %s, %lld parameters, %lld training and %lld test images of %dx%dx%d\n", o.net,
           (long long)net.param_count, (long long)train_set.n, (long long)test.n, train_set.channels, train_set.rows,
           train_set.cols);
    if (o.load) {
        load_checkpoint(&o, &net, p64, state);
    } else {
        hpdl_cnn_optimizer opt = hpdl_cnn_sgd(o.lr, 0.9, 0.0);
        hpdl_cnn_run r;
        HPDL_CHECK(hpdl_cnn_init(&net, (uint64_t)o.seed, p64, state));
        HPDL_CHECK(hpdl_cnn_run_create(&r, &net, hpdl_cnn_backend_cpu_f32(), o.batch, &opt));
        HPDL_CHECK(hpdl_cnn_set_params(&r, p64, state));
        train(&r, &train_set, &o);
        HPDL_CHECK(hpdl_cnn_get_params(&r, p64, state));
        hpdl_cnn_run_destroy(&r);
    }
    /* batch norms into the convolutions (inference: running statistics) */
    HPDL_CHECK(hpdl_cnn_fold_batchnorm(&net, p64, state, hpdl_cnn_sgd(0, 0, 0).bn_eps, &folded, NULL, NULL));
    pf64 = (double *)allocate(folded.param_count, sizeof *pf64);
    pf = (float *)allocate(folded.param_count, sizeof *pf);
    HPDL_CHECK(hpdl_cnn_fold_batchnorm(&net, p64, state, hpdl_cnn_sgd(0, 0, 0).bn_eps, &folded, pf64, NULL));
    for (j = 0; j < folded.param_count; j++) pf[j] = (float)pf64[j];
    evaluator_open(&ev, &o, &train_set, &test);
    measure(&o, &ev, &folded, pf, &test, acc, equal, checked);
    evaluator_close(&ev);

    printf("%-16s %9s %9s\n", "step", "accuracy", "vs float");
    HPDL_CHECK(hpdl_csv_create(&csv, ".", "quantize_cnn", "metric,value,unit,anchor,anchor_value,ratio"));
    for (s = 0; s < 5; s++) {
        char metric[64];
        printf("%-16s %8.2f%% %+8.2f\n", steps[s], 100 * acc[s], 100 * (acc[s] - acc[0]));
        snprintf(metric, sizeof metric, "quant_cnn_%s_%s_accuracy", o.net, steps[s]);
        hpdl_csv_row(csv.f, metric, acc[s], "fraction", "float", acc[0], 1);
    }
    printf("(int8_pct: activation ranges at the %g percentile; int8 rows: integer-only, logits int32)\n", o.pct);
    for (s = 0; s < 2; s++) {
        char metric[80];
        if (equal[s] < 0) continue;
        snprintf(metric, sizeof metric, "quant_cnn_%s_%s_gpu_logits_equal", o.net, steps[3 + s]);
        hpdl_csv_row(csv.f, metric, (double)equal[s], "images", "cpu_checked_images", (double)checked[s], 1);
        mismatch |= equal[s] != checked[s];
    }
    HPDL_CHECK(hpdl_csv_commit(&csv));
    write_weight_stats(&folded, pf, o.output ? o.output : getenv("HPDL_RESULTS") ? getenv("HPDL_RESULTS") : ".");
    free(p64); free(state); free(pf64); free(pf);
    hpdl_dataset_free(&train_set);
    hpdl_dataset_free(&test);
    if (mismatch) fprintf(stderr, "quantize_cnn: GPU integer-only logits differ from the CPU's\n");
    return mismatch;
}
