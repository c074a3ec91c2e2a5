/* cnn_train: trains the course's CNNs (the quantization lab's small CNN,
   ResNet-18) on Fashion-MNIST or CIFAR-10 on the GPU: hpdl_cnn's layer walk
   on the GPU backend, one CUDA graph replay per step, the data resident.

       make data && make build/examples/cnn_train
       build/examples/cnn_train --net small --epochs 10
       build/examples/cnn_train --net resnet18 --batch 128 --epochs 15 --schedule cosine
       build/examples/cnn_train --net resnet18 --check       # CPU twin vs GPU, same steps
       build/examples/cnn_train --net resnet18 --precision bf16   # mixed precision (NHWC)
       build/examples/cnn_train --save run.ckpt ... / --load run.ckpt ...
       build/examples/cnn_train --batch 32 --lr 0.02 --epochs 20 --target-acc 0.9 --runs 5
                                                             # time to accuracy over 5 seeds
       build/examples/cnn_train --util-csv util.csv ...      # NVML utilisation meanwhile

   Flags (defaults in brackets):
       --net N            small | resnet18 [small]
       --data DIR         IDX files (Fashion-MNIST) or CIFAR-10's .bin files [data/fashion-mnist]
       --epochs E [10]    --batch B [128]    --lr X [0.05]    --seed S [1]
       --optimizer O      sgd (momentum 0.9) | adamw [sgd]   --wd X  weight decay [5e-4]
       --schedule S       constant | cosine | step:N:GAMMA, each with :warmup=N [cosine]
       --precision P      f32 | f64 | f16 | bf16 [f32]; f16 and bf16: mixed precision
                          (16-bit activations and gradients, f32 parameters, loss
                          scaling), NHWC only
       --layout L         nhwc | nchw [nhwc]
       --check            a few steps on the CPU twin and the GPU from the same weights;
                          exit 1 when a parameter tensor differs by more than 1e-12 (f64) /
                          1e-5 (f32) in relative Frobenius norm (the MLP's check). f16 and
                          bf16: against the GPU in f32, exit 1 when a step's loss differs
                          by more than 1e-2 / 8e-2 (relative; tests/gpu_cnn.cu says why)
       --save FILE        checkpoint after every epoch (parameters, batch-norm state,
                          optimiser state; written whole, see notes/checkpoint.md)
       --load FILE        start from a checkpoint of the same network and precision
       --augment P [0]    random crops of the zero-padded images, up to P pixels off
       --flip             mirror half the training images left-right (CIFAR-10, not digits)
       --target-acc A     stop each run after the first epoch whose test accuracy >= A;
                          its time to accuracy is the training time of its epochs (each
                          from its first launch to its last step done on the device),
                          evaluation excluded. Writes cnn_tta.csv (a row per run, then
                          mean, std and coefficient of variation over the runs that
                          reached A); exit 1 when a run did not
       --runs R [1]       runs with seeds S..S+R-1, each from fresh weights
       --time-limit S     stop a run after the first epoch that ends S seconds or more
                          after the run began (evaluation included) [0: none]
       --util-csv FILE    NVML samples every 100 ms while training (GPU and memory-
                          controller utilisation, SM clock, power); prints their means
       --eager            steps launched kernel by kernel, no CUDA graph replays
       --output DIR       folder for cnn_tta.csv [$HPDL_RESULTS, else .]
       --device D [0]     --help, --version */
#include "hpdl_cuda.cuh"

#include <vector>

typedef struct options {
    const char *net, *data, *optimizer, *schedule, *precision, *layout, *save, *load, *util_csv, *output;
    int epochs, batch, device, check, augment_pad, flip, runs, eager;
    double lr, wd, target, time_limit; /* target, time_limit: 0 for none */
    int64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o = {"small", "data/fashion-mnist", "sgd", "cosine", "f32", "nhwc", NULL, NULL, NULL, NULL,
                 10, 128, 0, 0, 0, 0, 1, 0, 0.05, 5e-4, 0, 0, 1};
    hpdl_lr_schedule syntax;
    hpdl_cli_option opts[23];
    int n = 0;
    opts[n++] = hpdl_cli_choice("net", 0, &o.net, "small|resnet18", "network");
    opts[n++] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files (Fashion-MNIST) or CIFAR-10's .bin files");
    opts[n++] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 20, "epochs");
    opts[n++] = hpdl_cli_int("batch", 0, &o.batch, 2, 1 << 16, "mini-batch");
    opts[n++] = hpdl_cli_f64("lr", 0, &o.lr, 0, 1e6, "learning rate");
    opts[n++] = hpdl_cli_choice("optimizer", 0, &o.optimizer, "sgd|adamw", "sgd (momentum 0.9) or adamw");
    opts[n++] = hpdl_cli_f64("wd", 0, &o.wd, 0, 1, "weight decay");
    opts[n++] = hpdl_cli_string("schedule", 0, &o.schedule, "S",
                                "constant | cosine | step:N:GAMMA, each with :warmup=N");
    opts[n++] = hpdl_cli_choice("precision", 0, &o.precision, "f32|f64|f16|bf16",
                                "element type (f16, bf16: mixed precision)");
    opts[n++] = hpdl_cli_choice("layout", 0, &o.layout, "nhwc|nchw", "activation layout");
    opts[n++] = hpdl_cli_i64("seed", 0, &o.seed, 0, INT64_MAX, "random seed");
    opts[n++] = hpdl_cli_flag("check", 0, &o.check, "a few steps on the CPU twin and the GPU; exit 1 if apart");
    opts[n++] = hpdl_cli_string("save", 0, &o.save, "FILE", "checkpoint after every epoch");
    opts[n++] = hpdl_cli_string("load", 0, &o.load, "FILE", "start from a checkpoint of the same network and precision");
    opts[n++] = hpdl_cli_int("device", 0, &o.device, 0, 1 << 16, "GPU");
    opts[n++] = hpdl_cli_int("augment", 0, &o.augment_pad, 0, 64, "random crops shifted up to this many pixels");
    opts[n++] = hpdl_cli_flag("flip", 0, &o.flip, "mirror half the training images left-right");
    opts[n++] = hpdl_cli_f64("target-acc", 0, &o.target, 0, 1, "stop each run once test accuracy >= this");
    opts[n++] = hpdl_cli_int("runs", 0, &o.runs, 1, 1 << 20, "runs with seeds S..S+R-1");
    opts[n++] = hpdl_cli_f64("time-limit", 0, &o.time_limit, 0, 1e9, "stop a run after the epoch that ends this many seconds in");
    opts[n++] = hpdl_cli_string("util-csv", 0, &o.util_csv, "FILE", "NVML utilisation time series while training");
    opts[n++] = hpdl_cli_flag("eager", 0, &o.eager, "launch each step kernel by kernel (no CUDA graphs)");
    opts[n++] = hpdl_cli_string("output", 0, &o.output, "DIR", "folder for cnn_tta.csv");
    hpdl_cli_parse(argc, argv, "cnn_train", "Trains the course's CNNs on Fashion-MNIST or CIFAR-10 on the GPU.", opts, n);
    hpdl_csv_set_dir(o.output);
    if (o.runs > 1 && (o.save || o.load)) {
        fprintf(stderr, "cnn_train: --runs %d trains from fresh weights each time: no --save or --load\n", o.runs);
        exit(2);
    }
    /* the schedule's words now; main checks it again over the real number of steps */
    if (hpdl_lr_parse(o.schedule, o.lr, (int64_t)1 << 40, &syntax) != HPDL_OK) exit(2);
    if ((!strcmp(o.precision, "f16") || !strcmp(o.precision, "bf16")) && strcmp(o.layout, "nhwc")) {
        fprintf(stderr, "cnn_train: --precision %s needs --layout nhwc (mixed precision runs its convolutions on "
                        "tensor cores, which read NHWC)\n", o.precision);
        exit(2);
    }
    return o;
}

/* CIFAR-10 when DIR holds its batches, else IDX files. */
static void load_data(const char *dir, hpdl_dataset *train, hpdl_dataset *test) {
    char probe[4096];
    FILE *f;
    snprintf(probe, sizeof probe, "%s/data_batch_1.bin", dir);
    int cifar = (f = fopen(probe, "rb")) != NULL;
    if (f) fclose(f);
    if ((cifar ? hpdl_cifar10_load_dir(dir, 1, train) : hpdl_idx_load_dir(dir, 1, train)) != HPDL_OK ||
        (cifar ? hpdl_cifar10_load_dir(dir, 0, test) : hpdl_idx_load_dir(dir, 0, test)) != HPDL_OK) {
        fprintf(stderr, "cnn_train: cannot load the data in %s (make data, or make data CIFAR_DIR=...)\n", dir);
        exit(1);
    }
    if (hpdl_dataset_features(train) != hpdl_dataset_features(test) || train->channels != test->channels) {
        fprintf(stderr, "cnn_train: training and test images differ in shape\n");
        exit(1);
    }
}

/* A value in the element type. */
template <typename T> static T element(double v) { return (T)v; }
template <> hpdl_f16 element<hpdl_f16>(double v) { return hpdl_f16_from_f32((float)v); }
template <> hpdl_bf16 element<hpdl_bf16>(double v) { return hpdl_bf16_from_f32((float)v); }

/* Images standardised with the training set's mean and std, in the
   network's layout and element type (datasets are CHW floats). */
template <typename T>
static std::vector<T> prepared(const hpdl_dataset *d, double mean, double std, hpdl_layout layout) {
    int64_t features = hpdl_dataset_features(d), plane = (int64_t)d->rows * d->cols;
    std::vector<T> out((size_t)(d->n * features));
    for (int64_t i = 0; i < d->n; i++)
        for (int64_t c = 0; c < d->channels; c++)
            for (int64_t p = 0; p < plane; p++) {
                int64_t to = layout == HPDL_NHWC ? p * d->channels + c : c * plane + p;
                out[(size_t)(i * features + to)] = element<T>((d->images[i * features + c * plane + p] - mean) / std);
            }
    return out;
}

static void mean_std(const hpdl_dataset *d, double *mean, double *std) {
    int64_t n = d->n * hpdl_dataset_features(d);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) { sum += d->images[i]; sq += (double)d->images[i] * d->images[i]; }
    *mean = sum / (double)n;
    *std = sqrt(sq / (double)n - *mean * *mean);
}

template <typename T> static T *upload(const std::vector<T> &x) {
    T *d = NULL;
    HPDL_CUDA_CHECK(cudaMalloc(&d, x.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* What a checkpoint names: the network, its input and layout, the type. */
static void model_name(const options *o, const hpdl_cnn *net, char *out, size_t size) {
    HPDL_CHECK(hpdl_cnn_ckpt_model(o->net, net, o->layout, o->precision, out, size));
}

/* The checkpoint's tensors over host buffers: parameters, batch-norm
   state, the optimiser's moments and its step count, all of the backend's
   parameter type (f32 under mixed precision: its master parameters); the
   layout is hpdl_cnn_ckpt_entries'. */
static size_t param_size(const hpdl_cnn_run *r) { return r->be->param_size ? r->be->param_size : r->be->elem_size; }

struct checkpoint {
    std::vector<char> params, state, m1, m2;
    int64_t steps;
    hpdl_ckpt_entry entries[5];
    int n;
    checkpoint(const hpdl_cnn_run *r) : steps(0) {
        size_t e = param_size(r);
        params.resize(r->net->param_count * e);
        state.resize((r->net->state_count ? r->net->state_count : 1) * e);
        m1.resize(params.size());
        m2.resize(r->moment2 ? params.size() : 0);
        n = hpdl_cnn_ckpt_entries(r->net, r->moment2 != NULL, e == 4 ? HPDL_DTYPE_F32 : HPDL_DTYPE_F64, params.data(),
                                  state.data(), m1.data(), r->moment2 ? m2.data() : NULL, &steps, entries);
        if (n == 0) {
            fprintf(stderr, "cnn_train: no checkpoint layout for this run\n");
            exit(1);
        }
    }
    /* device <-> host for each buffer of the run */
    void move(hpdl_cnn_run *r, int to_device) {
        void *dev[4] = {r->params, r->state, r->moment1, r->moment2};
        for (int k = 0; k < 4; k++) {
            size_t bytes = (size_t)entries[k].dims[0] * param_size(r);
            if (!dev[k] || !bytes) continue;
            HPDL_CHECK(to_device ? r->be->upload(r->be->ctx, dev[k], entries[k].data, bytes)
                                 : r->be->download(r->be->ctx, entries[k].data, dev[k], bytes));
        }
    }
};

static void save(const options *o, hpdl_cnn_run *r, const char *model) {
    checkpoint ck(r);
    ck.move(r, 0);
    ck.steps = r->steps;
    HPDL_CHECK(hpdl_ckpt_save(o->save, model, ck.n, ck.entries));
}

static void load(const options *o, hpdl_cnn_run *r, hpdl_cuda_cnn *g, const char *model) {
    checkpoint ck(r);
    if (hpdl_ckpt_load(o->load, model, ck.n, ck.entries) != HPDL_OK) {
        fprintf(stderr, "cnn_train: cannot start from %s\n", o->load);
        exit(1);
    }
    ck.move(r, 1);
    HPDL_CHECK(hpdl_cnn_refresh_work(r)); /* mixed precision: the 16-bit copy the layers read */
    r->steps = ck.steps;
    /* the GPU counts its steps (the schedule's position) on the device */
    unsigned long long steps = (unsigned long long)ck.steps;
    HPDL_CUDA_CHECK(cudaMemcpy(g->d_counts, &steps, sizeof steps, cudaMemcpyHostToDevice));
    printf("resumed from %s at step %lld\n", o->load, (long long)ck.steps);
}

static hpdl_cnn_optimizer make_optimizer(const options *o, int64_t total_steps) {
    hpdl_cnn_optimizer opt = !strcmp(o->optimizer, "sgd") ? hpdl_cnn_sgd(o->lr, 0.9, o->wd) : hpdl_cnn_adamw(o->lr, o->wd);
    if (hpdl_lr_parse(o->schedule, o->lr, total_steps, &opt.schedule) != HPDL_OK) exit(2);
    return opt;
}

/* --check: a few steps on the CPU twin and the GPU from the same weights. */
template <typename T>
static int check(const options *o, const hpdl_cnn *net, const std::vector<T> &X, const hpdl_dataset *train) {
    const int batch = !strcmp(o->net, "resnet18") ? 2 : 8, steps = 3;
    const double tol = sizeof(T) == 8 ? 1e-12 : 1e-5;
    std::vector<double> params(net->param_count), state(net->state_count + 1);
    hpdl_cnn_optimizer opt = make_optimizer(o, steps);
    double worst = 0;
    int layer = -1;
    HPDL_CHECK(hpdl_cnn_init(net, (uint64_t)o->seed, params.data(), state.data()));
    HPDL_CHECK(hpdl_cuda_cnn_twin_difference<T>(net, &opt, params.data(), state.data(), batch, X.data(), train->labels,
                                                steps, &worst, &layer));
    printf("check %s %s: %d steps of %d images, %lld parameters; largest relative Frobenius difference of a "
           "parameter tensor %.3g (layer %d; tolerance %g): %s\n",
           o->net, o->precision, steps, batch, (long long)net->param_count, worst, layer, tol,
           worst <= tol ? "ok" : "FAILED");
    return worst <= tol ? 0 : 1;
}

/* --check in f16 or bf16: a few steps in mixed precision and in f32 on the
   GPU from the same weights (X: f32 images). */
template <typename H>
static int check_mixed(const options *o, const hpdl_cnn *net, const std::vector<float> &X, const hpdl_dataset *train) {
    const int batch = 32, steps = 3;
    const double tol = !strcmp(o->precision, "f16") ? 1e-2 : 8e-2;
    std::vector<double> params(net->param_count), state(net->state_count + 1);
    hpdl_cnn_optimizer opt = make_optimizer(o, steps);
    double loss = 0, param = 0;
    HPDL_CHECK(hpdl_cnn_init(net, (uint64_t)o->seed, params.data(), state.data()));
    HPDL_CHECK(hpdl_cuda_cnn_mixed_difference<H>(net, &opt, params.data(), state.data(), batch, X.data(),
                                                 train->labels, steps, &loss, &param));
    printf("check %s %s: %d steps of %d images against f32 on the GPU; largest relative difference of a step's "
           "loss %.3g (tolerance %g), of a parameter tensor after %.3g: %s\n",
           o->net, o->precision, steps, batch, loss, tol, param, loss <= tol ? "ok" : "FAILED");
    return loss <= tol ? 0 : 1;
}

/* The data on the device, in the network's layout and element type. */
template <typename T> struct resident {
    T *x_train, *x_test;
    int32_t *y_train, *y_test;
    int64_t n_train, n_test;
    resident(const std::vector<T> &xtrain, const std::vector<T> &xtest, const hpdl_dataset *train,
             const hpdl_dataset *test)
        : x_train(upload(xtrain)), x_test(upload(xtest)),
          y_train(upload(std::vector<int32_t>(train->labels, train->labels + train->n))),
          y_test(upload(std::vector<int32_t>(test->labels, test->labels + test->n))), n_train(train->n),
          n_test(test->n) {}
    ~resident() { cudaFree(x_train); cudaFree(x_test); cudaFree(y_train); cudaFree(y_test); }
};

/* One training run from fresh weights of `seed` (or --load), up to
   --epochs, the first epoch that reaches --target-acc or the first that
   ends after --time-limit. Its seconds: the epochs' training time, each
   from its first launch to its last step done (hpdl_cuda_cnn_results
   waits for the device); the accuracies after each epoch are not counted. */
template <typename T>
static hpdl_tta_run train_run(const options *o, const hpdl_cnn *net, const resident<T> *d, uint64_t seed,
                              const char *model) {
    int64_t steps_per_epoch = (d->n_train + o->batch - 1) / o->batch;
    hpdl_cnn_optimizer opt = make_optimizer(o, steps_per_epoch * o->epochs);
    hpdl_tta_run result = {seed, 0, 0, 0.0, 0.0};
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    std::vector<double> params(net->param_count), state(net->state_count + 1);
    double start = hpdl_time_now();
    HPDL_CHECK(hpdl_cnn_init(net, seed, params.data(), state.data()));
    HPDL_CHECK(hpdl_cuda_cnn_create<T>(&g, HPDL_CONV_AUTO));
    HPDL_CHECK(hpdl_cnn_run_create(&r, net, &g.be, o->batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, params.data(), state.data()));
    g.augment_pad = o->augment_pad;
    g.augment_flip = o->flip;
    g.use_graphs = !o->eager;
    if (o->load) load(o, &r, &g, model);
    for (int epoch = 1; epoch <= o->epochs; epoch++) {
        double loss_sum = 0, train_acc = 0, test_acc = 0, t0 = hpdl_time_now(), ms, scale = 1;
        int64_t skipped = 0;
        char note[128] = "";
        HPDL_CHECK(hpdl_cuda_cnn_train_epoch<T>(&g, &r, d->n_train, d->x_train, d->y_train, seed * 1000 + epoch));
        HPDL_CHECK(hpdl_cuda_cnn_results(&g, &loss_sum, &skipped));
        ms = 1e3 * (hpdl_time_now() - t0);
        HPDL_CHECK(hpdl_cnn_accuracy(&r, d->n_train, d->x_train, d->y_train, &train_acc));
        HPDL_CHECK(hpdl_cnn_accuracy(&r, d->n_test, d->x_test, d->y_test, &test_acc));
        HPDL_CHECK(hpdl_cuda_cnn_loss_scale(&g, &scale));
        if (sizeof(T) == 2) /* mixed precision: the scaler skips a step when it overflows */
            snprintf(note, sizeof note, "  loss_scale %g  skipped %lld", scale, (long long)skipped);
        else if (skipped)
            snprintf(note, sizeof note, "  (steps skipped: loss or gradient not finite)");
        result.epochs = epoch;
        result.seconds += 1e-3 * ms;
        result.accuracy = test_acc;
        printf("epoch %3d  loss %.4f  train_acc %.4f  test_acc %.4f  ms %.1f  images/s %.0f  train_s %.3f%s\n", epoch,
               loss_sum / (double)steps_per_epoch, train_acc, test_acc, ms, 1e3 * (double)d->n_train / ms,
               result.seconds, note);
        fflush(stdout);
        if (o->save) save(o, &r, model);
        if (o->target > 0 && test_acc >= o->target) {
            result.reached = 1;
            break;
        }
        if (o->time_limit > 0 && hpdl_time_now() - start >= o->time_limit) break;
    }
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    return result;
}

/* The NVML sampler's means, when it ran. */
static void print_utilisation(hpdl_nvml_sampler *sampler, const char *csv) {
    hpdl_nvml_stats st;
    memset(&st, 0, sizeof st); /* finish writes nothing for a sampler that did not start */
    hpdl_nvml_sampler_finish(sampler, &st);
    printf("nvml: mean GPU utilisation %.1f %%, memory-controller utilisation %.1f %%, SM clock %.0f MHz, "
           "power %.0f W, power-capped %.0f %% of samples (%lld samples every 100 ms, %s)\n",
           st.gpu_util, st.mem_util, st.sm_clock_mhz, st.power_w, 100 * st.power_capped, (long long)st.samples, csv);
}

/* --target-acc: each run's time to it, their mean, std and CV, and cnn_tta.csv. */
static int report_tta(const options *o, const std::vector<hpdl_tta_run> &runs) {
    hpdl_stats e, s;
    hpdl_csv_file csv;
    int reached = 0;
    HPDL_CHECK(hpdl_tta_summary(runs.data(), (int)runs.size(), &reached, &e, &s));
    printf("time to %.2f %% test accuracy (training only, evaluation excluded): %d of %d runs reached it\n",
           100 * o->target, reached, (int)runs.size());
    for (const hpdl_tta_run &t : runs)
        printf("  seed %llu: %s after %d epochs, %.3f s (test accuracy %.4f)\n", (unsigned long long)t.seed,
               t.reached ? "reached" : "NOT reached", t.epochs, t.seconds, t.accuracy);
    if (reached)
        printf("  epochs: mean %.2f  std %.2f  CV %.1f %%;  seconds: mean %.3f  std %.3f  CV %.1f %%  "
               "(min %.3f, max %.3f)\n",
               e.mean, e.stddev, 100 * e.cv, s.mean, s.stddev, 100 * s.cv, s.min, s.max);
    if (hpdl_csv_create(&csv, ".", "cnn_tta", HPDL_TTA_CSV_HEADER) == HPDL_OK) {
        if (hpdl_tta_csv_rows(csv.f, runs.data(), (int)runs.size()) != HPDL_OK) {
            fprintf(stderr, "cnn_train: cannot write %s\n", csv.path);
            hpdl_csv_discard(&csv);
        } else if (hpdl_csv_commit(&csv) == HPDL_OK) {
            printf("wrote %s\n", csv.path);
        }
    }
    return reached < (int)runs.size();
}

template <typename T> static int run(const options *o, const hpdl_dataset *train, const hpdl_dataset *test) {
    hpdl_layout layout = !strcmp(o->layout, "nhwc") ? HPDL_NHWC : HPDL_NCHW;
    hpdl_shape shape = hpdl_shape_make(train->channels, train->rows, train->cols);
    hpdl_cnn net;
    hpdl_nvml_sampler sampler;
    hpdl_status nvml = HPDL_ERR_UNSUPPORTED;
    std::vector<hpdl_tta_run> runs;
    double mean, std;
    char model[256];
    if ((!strcmp(o->net, "small") ? hpdl_cnn_small(&net, shape, 10, layout) : hpdl_cnn_resnet18(&net, shape, 10, layout)) !=
        HPDL_OK)
        return 1;
    mean_std(train, &mean, &std);
    if constexpr (sizeof(T) == 2) {
        if (o->check) return check_mixed<T>(o, &net, prepared<float>(train, mean, std, layout), train);
    }
    std::vector<T> Xtrain = prepared<T>(train, mean, std, layout), Xtest = prepared<T>(test, mean, std, layout);
    if constexpr (sizeof(T) > 2) {
        if (o->check) return check<T>(o, &net, Xtrain, train);
    }
    resident<T> d(Xtrain, Xtest, train, test);
    model_name(o, &net, model, sizeof model);
    printf("%s: %d layers, %lld parameters, %lld training and %lld test images of %dx%dx%d, batch %d, %s %s, %s\n",
           o->net, net.n_layers, (long long)net.param_count, (long long)train->n, (long long)test->n, shape.c,
           shape.h, shape.w, o->batch, o->precision, o->layout, o->eager ? "eager" : "CUDA graphs");
    if (o->util_csv && (nvml = hpdl_nvml_sampler_start(&sampler, o->device, 100, o->util_csv)) != HPDL_OK)
        printf("nvml: utilisation not sampled (%s)\n", hpdl_status_string(nvml));
    for (int k = 0; k < o->runs; k++) {
        if (o->runs > 1) printf("run %d, seed %lld\n", k, (long long)(o->seed + k));
        runs.push_back(train_run<T>(o, &net, &d, (uint64_t)(o->seed + k), model));
    }
    if (nvml == HPDL_OK) print_utilisation(&sampler, o->util_csv);
    return o->target > 0 ? report_tta(o, runs) : 0;
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset train, test;
    int rc;
    if (!hpdl_cuda_available()) {
        fprintf(stderr, "cnn_train: no CUDA GPU\n");
        return 1;
    }
    HPDL_CUDA_CHECK(cudaSetDevice(o.device));
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, o.device));
    load_data(o.data, &train, &test);
    if (!strcmp(o.precision, "f64")) rc = run<double>(&o, &train, &test);
    else if (!strcmp(o.precision, "f16")) rc = run<hpdl_f16>(&o, &train, &test);
    else if (!strcmp(o.precision, "bf16")) rc = run<hpdl_bf16>(&o, &train, &test);
    else rc = run<float>(&o, &train, &test);
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    return rc;
}
