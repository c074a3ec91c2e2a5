/* mlp_train: trains a multi-layer perceptron on Fashion-MNIST (or MNIST) on
   the GPU with hpdl_cuda_mlp_<precision>, one CUDA graph replay per step.

       make data && make build/examples/mlp_train
       build/examples/mlp_train --hidden 512 --batch 32 --epochs 20 --precision f32
       build/examples/mlp_train --check --precision f64      # CPU vs GPU, same steps
       build/examples/mlp_train --target-acc 0.88 --runs 5   # time to accuracy

   Flags (defaults in brackets):
       --data DIR         IDX files [data/fashion-mnist]
       --hidden A[,B...]  hidden layer widths [512]
       --batch B          mini-batch [32]       --epochs E   epochs (max) [20]
       --lr X             learning rate [0.05]  --l2 X       L2 weight decay [0]
       --precision P      f32 | f64 | f16 (mixed precision, f32 master weights)
                          | fp8 (FP8 GEMMs, delayed scaling, f32 master weights; Hopper) [f32]
       --act A            relu | sigmoid [relu] --seed S     [1]   --device D [0]
       --csv FILE         per-epoch curve (loss, accuracies, time) [none]
       --check            train a few steps on CPU and GPU, compare the weights, exit 1 if apart
       --target-acc A     stop each run once test accuracy >= A (checked each epoch)
       --runs R           runs with seeds S..S+R-1 [1]
       --util-csv FILE    NVML GPU/memory utilisation time series [mlp_util.csv]
       --algo NAME        GEMM rung for the products: auto, warptile, mma, cublas, ...
                          [the model's default: auto, hpdl's own kernels]
       --output DIR       folder for --csv and --util-csv when they are relative [.]
       --help, --version
*/
#include "hpdl_cuda.cuh"

#define FASHION_MEAN 0.2860f /* pixel mean and std of the Fashion-MNIST training set */
#define FASHION_STD 0.3530f

typedef struct options {
    const char *data, *csv, *util_csv, *precision;
    const char *hidden; /* "512" or "1024,256": hidden widths */
    int widths[HPDL_MLP_MAX_LAYERS + 1], n_widths;
    int batch, epochs, runs, device, check;
    int algo; /* hpdl_gemm_algo, or -1 for the model's default */
    double lr, l2, target;
    uint64_t seed;
    hpdl_activation act;
} options;

/* "auto|naive|...|cublas": every GEMM rung's name, for --algo. */
static const char *algo_names(void) {
    static char names[256];
    int a;
    names[0] = '\0';
    for (a = HPDL_GEMM_AUTO; a <= HPDL_GEMM_CUBLAS; a++) {
        if (a > HPDL_GEMM_AUTO) strncat(names, "|", sizeof names - strlen(names) - 1);
        strncat(names, hpdl_gemm_algo_name((hpdl_gemm_algo)a), sizeof names - strlen(names) - 1);
    }
    return names;
}

static int algo_index(const char *name) {
    int a;
    for (a = HPDL_GEMM_AUTO; a <= HPDL_GEMM_CUBLAS; a++)
        if (!strcmp(name, hpdl_gemm_algo_name((hpdl_gemm_algo)a))) return a;
    return -1;
}

/* path inside dir, unless path is absolute or dir NULL; stored in buf. */
static const char *inside(const char *dir, const char *path, char *buf, size_t size) {
    if (!dir || !path || path[0] == '/') return path;
    if (snprintf(buf, size, "%s/%s", dir, path) >= (int)size) {
        fprintf(stderr, "mlp_train: %s/%s: path too long\n", dir, path);
        exit(2);
    }
    return buf;
}

static options parse_args(int argc, char **argv) {
    static char csv_path[1024], util_path[1024];
    options o;
    int64_t seed = 1;
    const char *act = "relu", *algo = NULL, *output = NULL;
    hpdl_cli_option opts[17];
    int n = 0;
    memset(&o, 0, sizeof o);
    o.data = "data/fashion-mnist";
    o.util_csv = "mlp_util.csv";
    o.precision = "f32";
    o.hidden = "512";
    o.batch = 32;
    o.epochs = 20;
    o.runs = 1;
    o.lr = 0.05;
    opts[n++] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[n++] = hpdl_cli_string("hidden", 0, &o.hidden, "A[,B...]", "hidden layer widths");
    opts[n++] = hpdl_cli_int("batch", 0, &o.batch, 1, 1 << 20, "mini-batch");
    opts[n++] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "epochs (max)");
    opts[n++] = hpdl_cli_f64("lr", 0, &o.lr, DBL_MIN, DBL_MAX, "learning rate");
    opts[n++] = hpdl_cli_f64("l2", 0, &o.l2, 0, DBL_MAX, "L2 weight decay");
    opts[n++] = hpdl_cli_choice("precision", 0, &o.precision, "f32|f64|f16|fp8",
                                "element type (f16: mixed precision; fp8: FP8 GEMMs, delayed scaling; "
                                "both with f32 master weights)");
    opts[n++] = hpdl_cli_choice("act", 0, &act, "relu|sigmoid", "hidden activation");
    opts[n++] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "random seed");
    opts[n++] = hpdl_cli_int("device", 0, &o.device, 0, 1 << 16, "GPU");
    opts[n++] = hpdl_cli_string("csv", 0, &o.csv, "FILE", "per-epoch curve (loss, accuracies, time)");
    opts[n++] = hpdl_cli_flag("check", 0, &o.check, "train a few steps on CPU and GPU, compare, exit 1 if apart");
    opts[n++] = hpdl_cli_f64("target-acc", 0, &o.target, 0, 1, "stop each run once test accuracy >= this");
    opts[n++] = hpdl_cli_int("runs", 0, &o.runs, 1, 1 << 20, "runs with seeds S..S+R-1");
    opts[n++] = hpdl_cli_string("util-csv", 0, &o.util_csv, "FILE", "NVML GPU/memory utilisation time series");
    opts[n++] = hpdl_cli_choice("algo", 0, &algo, algo_names(),
                                "GEMM rung for the products (none: the model's default, auto)");
    opts[n++] = hpdl_cli_string("output", 0, &output, "DIR", "folder for --csv and --util-csv (none: the current one)");
    hpdl_cli_parse(argc, argv, "mlp_train", "Trains an MLP on Fashion-MNIST on the GPU.", opts, n);
    o.csv = inside(output, o.csv, csv_path, sizeof csv_path);
    o.util_csv = inside(output, o.util_csv, util_path, sizeof util_path);
    o.seed = (uint64_t)seed;
    o.act = !strcmp(act, "sigmoid") ? HPDL_ACT_SIGMOID : HPDL_ACT_RELU;
    o.algo = algo ? algo_index(algo) : -1;
    /* the list is checked here; main parses it again with the data's input width */
    if (hpdl_mlp_parse_widths(o.hidden, 1, 10, o.widths, &o.n_widths) != HPDL_OK) {
        fprintf(stderr, "mlp_train: --hidden: '%s' is not a list of widths like 512 or 1024,256\n", o.hidden);
        exit(2);
    }
    return o;
}

/* Each precision: the data's element type, the CPU twin (for --check and
   the initial weights), its workspace, the GPU model and the --check
   tolerance. f16 is mixed precision with f32 master weights, so its twin is
   the f32 CPU model. The hpdl_mlp_* and hpdl_cuda_mlp_* calls below take
   their type from the models'. */
template <class T, class CPU, class WORK, class GPU>
struct precision {
    typedef T elem;
    typedef CPU cpu;
    typedef WORK work;
    typedef GPU gpu;
};
struct prec_f32 : precision<float, hpdl_mlp_f32, hpdl_mlp_work_f32, hpdl_cuda_mlp_f32> {
    static const char *name() { return "f32"; }
    static double tol() { return 1e-5; }
};
struct prec_f64 : precision<double, hpdl_mlp_f64, hpdl_mlp_work_f64, hpdl_cuda_mlp_f64> {
    static const char *name() { return "f64"; }
    static double tol() { return 1e-12; }
};
struct prec_f16 : precision<float, hpdl_mlp_f32, hpdl_mlp_work_f32, hpdl_cuda_mlp_f16> {
    static const char *name() { return "f16"; }
    static double tol() { return 3e-2; } /* f16 products; biases start at 0, so their relative error is the gradients (~1e-2) */
};

/* FP8 GEMMs (e4m3 activations and weights, e5m2 gradients) under delayed
   scaling, f32 master weights, evaluated in f32 (notes/fp8.md). */
struct prec_fp8 : precision<float, hpdl_mlp_f32, hpdl_mlp_work_f32, hpdl_cuda_mlp_fp8> {
    static const char *name() { return "fp8"; }
};

/* A new model equal to s. */
template <class M>
static hpdl_status copy_model(M *d, const M *s) {
    hpdl_status st = hpdl_mlp_create_zero(d, s->n_layers + 1, s->widths, s->act);
    return st == HPDL_OK ? hpdl_mlp_copy(d, s) : st;
}

/* The GPU model of m, with --gemm's algorithm when given. */
template <class G, class M>
static hpdl_status gpu_create(G *g, const M *m, int batch, const options *o) {
    hpdl_status s = hpdl_cuda_mlp_create(g, m, batch);
    if (s == HPDL_OK && o->algo >= 0) g->algo = (hpdl_gemm_algo)o->algo;
    return s;
}

/* Steps the mixed-precision loss scaler has skipped so far (0 otherwise). */
template <class G>
static int64_t skipped(G *g) {
    int64_t n = 0;
    HPDL_CHECK(hpdl_cuda_mlp_scaler(g, NULL, &n));
    return n;
}

/* ||a - b||_F / ||b||_F of one weight matrix. */
template <class T>
static double rel_frobenius(const T *a, const T *b, int64_t n) {
    double num = 0.0, den = 0.0;
    int64_t i;
    for (i = 0; i < n; i++) {
        num += ((double)a[i] - (double)b[i]) * ((double)a[i] - (double)b[i]);
        den += (double)b[i] * (double)b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* --check: the same few steps on CPU and GPU from the same initial weights,
   on the first samples of the (shuffled) training set. */
template <class P>
static int run_check(const options *o, const hpdl_dataset *train) {
    typedef typename P::elem T;
    const int n = train->n < 512 ? (int)train->n : 512, steps = 8, in = o->widths[0];
    const int batch = o->batch < 64 && o->batch < n ? o->batch : n < 64 ? n : 64;
    typename P::cpu m, grad, got;
    typename P::work w;
    typename P::gpu g;
    T *X = (T *)hpdl_alloc((size_t)n * in, sizeof(T)), *dX = NULL;
    int32_t *dy = NULL;
    int64_t i;
    int s, l, fail = 0;
    if (!X) { fprintf(stderr, "out of memory\n"); return 1; }
    for (i = 0; i < (int64_t)n * in; i++) X[i] = (T)train->images[i];
    HPDL_CHECK(hpdl_mlp_create(&m, o->n_widths, o->widths, o->act, o->seed));
    HPDL_CHECK(copy_model(&got, &m));
    HPDL_CHECK(hpdl_mlp_create_zero(&grad, o->n_widths, o->widths, o->act));
    HPDL_CHECK(hpdl_mlp_work_create(&w, &m, batch));
    HPDL_CHECK(gpu_create(&g, &m, batch, o));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, (size_t)n * in * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)n * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, (size_t)n * in * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, train->labels, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
    printf("check: %s, %d steps of batch %d on CPU and GPU from the same weights\n", P::name(), steps, batch);
    for (s = 0; s < steps; s++) {
        size_t r0 = (size_t)(s * batch) % (size_t)(n - batch + 1);
        double lc = 0.0, lg = 0.0; /* the CPU step writes its loss */
        int64_t skipped_before = skipped(&g);
        HPDL_CHECK(hpdl_cuda_mlp_train_step(&g, batch, dX + r0 * in, dy + r0, o->lr, o->l2, &lg));
        if (skipped(&g) != skipped_before) { /* mixed precision overflowed: the scaler skipped it */
            printf("  step %d  gpu skipped the step (loss-scale overflow); so does the cpu\n", s);
            continue;
        }
        HPDL_CHECK(hpdl_mlp_train_step(&m, &w, &grad, batch, X + r0 * in, train->labels + r0, o->lr, o->l2, &lc));
        printf("  step %d  loss cpu %.10f  gpu %.10f\n", s, lc, lg);
    }
    HPDL_CHECK(hpdl_cuda_mlp_download(&g, &got));
    for (l = 0; l < m.n_layers; l++) {
        double dw = rel_frobenius(got.W[l], m.W[l], (int64_t)m.widths[l] * m.widths[l + 1]);
        double db = rel_frobenius(got.b[l], m.b[l], m.widths[l + 1]);
        int bad = !(dw <= P::tol()) || !(db <= P::tol());
        fail |= bad;
        printf("  W%d (%dx%d): rel Frobenius diff %.3e   b%d: %.3e   %s\n", l, m.widths[l], m.widths[l + 1], dw, l,
               db, bad ? "FAIL" : "ok");
    }
    printf("check %s (tolerance %.0e)\n", fail ? "FAILED" : "passed", P::tol());
    hpdl_cuda_mlp_destroy(&g);
    hpdl_mlp_work_destroy(&w);
    hpdl_mlp_destroy(&m);
    hpdl_mlp_destroy(&grad);
    hpdl_mlp_destroy(&got);
    cudaFree(dX);
    cudaFree(dy);
    HPDL_FREE(X);
    return fail;
}

/* The FP8 step's CPU twin is not the f32 step --check runs:
   build/gpu/gpu_fp8 checks the GPU's FP8 step against it. */
template <>
int run_check<prec_fp8>(const options *, const hpdl_dataset *) {
    fprintf(stderr, "mlp_train: --check runs the f32 CPU step; the FP8 step is checked against its twin by "
                    "build/gpu/gpu_fp8\n");
    return 2;
}

/* One training run: epochs until the target (if any) or the epoch limit.
   Returns the wall time to reach the target (training + per-epoch evaluation),
   or -1 if it was not reached; *final_acc gets the last test accuracy. */
template <class P>
static double train_run(const options *o, int run, uint64_t seed, hpdl_cuda_dataset *train, hpdl_cuda_dataset *test,
                        FILE *csv, double *final_acc) {
    typename P::cpu m;
    typename P::gpu g;
    double t_start = hpdl_time_now(), hit_time = -1.0;
    int e;
    HPDL_CHECK(hpdl_mlp_create(&m, o->n_widths, o->widths, o->act, seed));
    HPDL_CHECK(gpu_create(&g, &m, o->batch > 1000 ? o->batch : 1000, o));
    for (e = 1; e <= o->epochs; e++) {
        hpdl_cuda_mlp_stats tr, te;
        double t0 = hpdl_time_now(), ms;
        hpdl_status s;
        memset(&tr, 0, sizeof tr); /* read below when the epoch fails */
        s = hpdl_cuda_mlp_train_epoch(&g, train, o->batch, o->lr, o->l2, seed, &tr);
        if (s == HPDL_ERR_NUMERIC || (s == HPDL_OK && !(fabs(tr.loss) <= DBL_MAX))) { /* f16: the loss tells */
            fprintf(stderr, "mlp_train: training diverged in epoch %d (loss %g, %lld steps not applied): "
                            "try a smaller --lr\n", e, tr.loss, (long long)tr.nonfinite_steps);
            exit(1);
        }
        HPDL_CHECK(s);
        ms = 1e3 * (hpdl_time_now() - t0);
        HPDL_CHECK(hpdl_cuda_mlp_evaluate(&g, test, &te));
        printf("run %d epoch %2d/%d  loss %.4f  train %.2f%%  test %.2f%% (loss %.4f)  %8.1f ms  %10.0f samples/s",
               run, e, o->epochs, tr.loss, 100 * tr.accuracy, 100 * te.accuracy, te.loss, ms, tr.samples / (ms * 1e-3));
        if (!strcmp(P::name(), "f16")) printf("  scale %g skipped %lld", tr.loss_scale, (long long)tr.skipped_steps);
        printf("\n");
        fflush(stdout);
        if (csv)
            fprintf(csv, "%d,%d,%.6f,%.6f,%.6f,%.6f,%.3f,%.0f,%g,%lld\n", run, e, tr.loss, tr.accuracy, te.loss, te.accuracy,
                    ms, tr.samples / (ms * 1e-3), tr.loss_scale, (long long)tr.skipped_steps);
        *final_acc = te.accuracy;
        if (o->target > 0.0 && te.accuracy >= o->target) { hit_time = hpdl_time_now() - t_start; break; }
    }
    hpdl_cuda_mlp_destroy(&g);
    hpdl_mlp_destroy(&m);
    return hit_time;
}

/* Runs with seeds seed..seed+R-1; with a target, the time-to-accuracy
   summary, with GPU utilisation sampled through NVML meanwhile. */
template <class P>
static int run_training(const options *o, hpdl_cuda_dataset *train, hpdl_cuda_dataset *test) {
    double *times = (double *)hpdl_alloc((size_t)o->runs, sizeof(double));
    double *accs = (double *)hpdl_alloc((size_t)o->runs, sizeof(double));
    FILE *csv = o->csv ? fopen(o->csv, "w") : NULL;
    hpdl_nvml_sampler sampler;
    hpdl_status nvml = hpdl_nvml_sampler_start(&sampler, o->device, 100, o->util_csv);
    int r, hits = 0;
    if (!times || !accs) { fprintf(stderr, "out of memory\n"); return 1; }
    if (o->csv && !csv) fprintf(stderr, "cannot write %s: %s\n", o->csv, strerror(errno));
    if (csv) fprintf(csv, "run,epoch,loss,train_acc,test_loss,test_acc,epoch_ms,samples_per_s,loss_scale,skipped_steps\n");
    if (nvml != HPDL_OK) printf("nvml: utilisation not sampled (%s)\n", hpdl_status_string(nvml));
    for (r = 0; r < o->runs; r++) {
        double t = train_run<P>(o, r, o->seed + (uint64_t)r, train, test, csv, &accs[r]);
        if (t >= 0.0) times[hits++] = t;
        if (o->target > 0.0) {
            if (t >= 0.0) printf("run %d (seed %llu): reached %.2f%% in %.3f s\n", r, (unsigned long long)(o->seed + r), 100 * o->target, t);
            else printf("run %d (seed %llu): did not reach %.2f%% in %d epochs\n", r, (unsigned long long)(o->seed + r), 100 * o->target, o->epochs);
        }
    }
    if (nvml == HPDL_OK) {
        double gpu = 0.0, mem = 0.0;
        int64_t n = 0;
        hpdl_nvml_sampler_stop(&sampler, &gpu, &mem, &n);
        printf("nvml: mean GPU utilisation %.1f%%, memory-controller utilisation %.1f%% (%lld samples, %s)\n", gpu, mem,
               (long long)n, o->util_csv);
    }
    if (o->target > 0.0) {
        hpdl_stats ts, as;
        printf("time to %.2f%% test accuracy: %d of %d runs reached it\n", 100 * o->target, hits, o->runs);
        if (hits > 0 && hpdl_stats_compute(times, hits, &ts) == HPDL_OK)
            printf("  time: mean %.3f s  std %.3f s  CV %.1f%%  (min %.3f, max %.3f)\n", ts.mean, ts.stddev, 100 * ts.cv,
                   ts.min, ts.max);
        if (hpdl_stats_compute(accs, o->runs, &as) == HPDL_OK)
            printf("  final test accuracy: mean %.2f%%  std %.2f%%\n", 100 * as.mean, 100 * as.stddev);
    }
    if (csv) fclose(csv);
    HPDL_FREE(times);
    HPDL_FREE(accs);
    return o->target > 0.0 && hits < o->runs;
}

template <class P>
static int run(const options *o, hpdl_dataset *train, hpdl_dataset *test) {
    hpdl_cuda_dataset dtrain, dtest;
    int rc;
    if (o->check) return run_check<P>(o, train);
    HPDL_CHECK(hpdl_cuda_dataset_create(&dtrain, train, HPDL_DATA_AUTO));
    HPDL_CHECK(hpdl_cuda_dataset_create(&dtest, test, HPDL_DATA_AUTO));
    printf("data: %lld training samples (%s), %lld test samples\n", (long long)dtrain.n,
           dtrain.resident ? "resident on the GPU" : "streamed from pinned memory", (long long)dtest.n);
    rc = run_training<P>(o, &dtrain, &dtest);
    hpdl_cuda_dataset_destroy(&dtrain);
    hpdl_cuda_dataset_destroy(&dtest);
    return rc;
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset train, test;
    hpdl_cuda_device_info info;
    int l, rc;
    if (!hpdl_cuda_available()) { fprintf(stderr, "mlp_train: no CUDA GPU\n"); return 1; }
    HPDL_CUDA_CHECK(cudaSetDevice(o.device));
    HPDL_CHECK(hpdl_cuda_device_query(o.device, &info));
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 1, &train));
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 0, &test));
    if (test.channels != train.channels || test.rows != train.rows || test.cols != train.cols ||
        hpdl_mlp_parse_widths(o.hidden, (int)hpdl_dataset_features(&train), 10, o.widths, &o.n_widths) != HPDL_OK) {
        fprintf(stderr, "mlp_train: training images %dx%dx%d, test images %dx%dx%d: they must match\n", train.channels,
                train.rows, train.cols, test.channels, test.rows, test.cols);
        return 1;
    }
    HPDL_CHECK(hpdl_dataset_normalize(&train, FASHION_MEAN, FASHION_STD));
    HPDL_CHECK(hpdl_dataset_normalize(&test, FASHION_MEAN, FASHION_STD));
    HPDL_CHECK(hpdl_dataset_shuffle(&train, o.seed)); /* the files are sorted by label */
    printf("mlp_train on %s: %s, widths", info.name, o.precision);
    for (l = 0; l < o.n_widths; l++) printf("%s%d", l ? "-" : " ", o.widths[l]);
    printf(", %s, batch %d, lr %g, l2 %g, seed %llu, gemm %s\n", o.act == HPDL_ACT_RELU ? "relu" : "sigmoid", o.batch, o.lr,
           o.l2, (unsigned long long)o.seed, o.algo >= 0 ? hpdl_gemm_algo_name((hpdl_gemm_algo)o.algo) : "default");
    if (!strcmp(o.precision, "f32")) rc = run<prec_f32>(&o, &train, &test);
    else if (!strcmp(o.precision, "f64")) rc = run<prec_f64>(&o, &train, &test);
    else if (!strcmp(o.precision, "f16")) rc = run<prec_f16>(&o, &train, &test);
    else if (!strcmp(o.precision, "fp8")) rc = run<prec_fp8>(&o, &train, &test);
    else { fprintf(stderr, "unknown precision %s\n", o.precision); rc = 2; }
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    return rc;
}
