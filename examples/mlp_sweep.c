/* mlp_sweep: the convergence studies of an MLP course project, on the CPU.

       make data && make build/examples/mlp_sweep
       build/examples/mlp_sweep                       # both sweeps, CSVs in $HPDL_RESULTS or .
       build/examples/mlp_sweep --lr 0.1,0.5 --hidden 64 --epochs 3 --output /tmp
       build/examples/mlp_sweep --fp8 --epochs 20       # f32 against FP8 training

   1. Learning-rate sweep: a 784-H-10 ReLU MLP (H = --sweep-hidden) trained
      with plain SGD for each rate of --lr, from the same initial weights
      and the same batch order. Beside each f32 model an f64 twin takes the
      same steps from the same weights (converted exactly), so the relative
      difference of their weights shows how rounding differences grow with
      the learning rate and the epochs, as a CPU-vs-GPU comparison does.
   2. Width sweep: the same training at rate --sweep-lr for each hidden
      width of --hidden.
   3. With --fp8, instead of both sweeps: the 784-H-10 model (H =
      --sweep-hidden, rate --sweep-lr) trained twice from the same initial
      weights on the same batches, with f32 GEMMs and with FP8 GEMMs under
      delayed scaling (hpdl_mlp_train_step_fp8_f32: e4m3 inputs and weights,
      e5m2 gradients, amax history of 16 steps, margin 0, f32 master
      weights); test accuracy of both from their f32 weights.
   Each epoch is a fresh permutation of Fashion-MNIST drawn from seed +
   epoch, the same for every run; training and test accuracy are measured
   after every epoch. A run whose loss or weights
   become non-finite stops there (hpdl_mlp_train_step_<t> returns
   HPDL_ERR_NUMERIC) and its CSV rows say "diverged".

   Flags (defaults in brackets):
       --data DIR          IDX files [data/fashion-mnist]
       --lr LIST           learning rates of sweep 1 [0.005,0.02,0.05,0.1,0.2,0.5]
       --hidden LIST       hidden widths of sweep 2 [16,32,64,128,256,512]
       --sweep-hidden H    hidden width of sweep 1 [128]
       --sweep-lr X        learning rate of sweep 2 [0.05]
       --epochs E          [10]     --batch B [64]     --seed S [1]
       --fp8               f32 against FP8 training (3. above) instead of the sweeps
       --output DIR        folder for the CSVs [$HPDL_RESULTS, else the current folder]
       --help, --version
   Output: a line per epoch, and
       mlp_sweep_lr.csv      lr,epoch,loss,train_acc,test_acc,f32_f64_rel_diff,status
       mlp_sweep_hidden.csv  hidden,epoch,loss,train_acc,test_acc,epoch_s,status
       mlp_sweep_fp8.csv     (--fp8) epoch,f32_loss,f32_test_acc,fp8_loss,fp8_test_acc,test_acc_gap,
                             f32_epoch_s,fp8_epoch_s, with its .context */

#include "hpdl.h"

#define FASHION_MEAN 0.2860f /* pixel mean and std of the Fashion-MNIST training set */
#define FASHION_STD 0.3530f
#define MAX_LIST 16

typedef struct options {
    const char *data, *output;
    double lr[MAX_LIST];
    int n_lr, hidden[MAX_LIST], n_hidden;
    int sweep_hidden, epochs, batch, fp8;
    double sweep_lr;
    int64_t seed;
} options;

/* A comma-separated list of numbers, each checked like a single flag. */
static int parse_list(const char *flag, const char *text, double min, double max, double *out, int *n) {
    char buf[256], *item, *rest;
    if (strlen(text) >= sizeof buf) return 0;
    strcpy(buf, text);
    *n = 0;
    for (item = buf; item && *n < MAX_LIST; item = rest) {
        rest = strchr(item, ',');
        if (rest) *rest++ = '\0';
        if (hpdl_arg_f64(flag, item, min, max, &out[*n]) != HPDL_OK) return 0;
        (*n)++;
    }
    return item == NULL && *n > 0;
}

static options parse_args(int argc, char **argv) {
    const char *lr = "0.005,0.02,0.05,0.1,0.2,0.5", *hidden = "16,32,64,128,256,512";
    double tmp[MAX_LIST];
    hpdl_cli_option opts[10];
    options o;
    int j, ok;
    memset(&o, 0, sizeof o);
    o.data = "data/fashion-mnist";
    o.output = NULL;
    o.sweep_hidden = 128;
    o.sweep_lr = 0.05;
    o.epochs = 10;
    o.batch = 64;
    o.seed = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_string("lr", 0, &lr, "X,Y,...", "learning rates of sweep 1");
    opts[2] = hpdl_cli_string("hidden", 0, &hidden, "H,...", "hidden widths of sweep 2");
    opts[3] = hpdl_cli_int("sweep-hidden", 0, &o.sweep_hidden, 1, 65536, "hidden width of sweep 1");
    opts[4] = hpdl_cli_f64("sweep-lr", 0, &o.sweep_lr, 1e-6, 100.0, "learning rate of sweep 2");
    opts[5] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 100000, "epochs");
    opts[6] = hpdl_cli_int("batch", 0, &o.batch, 1, 60000, "mini-batch");
    opts[7] = hpdl_cli_i64("seed", 0, &o.seed, 0, INT64_MAX, "random seed");
    opts[8] = hpdl_cli_string("output", 0, &o.output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    opts[9] = hpdl_cli_flag("fp8", 0, &o.fp8, "f32 against FP8 training instead of the sweeps");
    hpdl_cli_parse(argc, argv, "mlp_sweep", "Learning-rate and width sweeps of an MLP on Fashion-MNIST, CPU.", opts, 10);
    ok = parse_list("--lr", lr, 1e-6, 100.0, o.lr, &o.n_lr) && parse_list("--hidden", hidden, 1, 65536, tmp, &o.n_hidden);
    for (j = 0; ok && j < o.n_hidden; j++) {
        o.hidden[j] = (int)tmp[j];
        ok = tmp[j] == (double)o.hidden[j];
    }
    if (!ok) {
        fprintf(stderr, "mlp_sweep: --lr and --hidden take up to %d numbers with commas between them\n", MAX_LIST);
        exit(2);
    }
    hpdl_csv_set_dir(o.output);
    return o;
}

/* Relative Frobenius difference of the f32 model's weights from the f64 twin's. */
static double rel_diff(const hpdl_mlp_f32 *a, const hpdl_mlp_f64 *b) {
    double num = 0.0, den = 0.0, d;
    size_t i, n;
    int l;
    for (l = 0; l < a->n_layers; l++) {
        n = (size_t)a->widths[l] * a->widths[l + 1];
        for (i = 0; i < n; i++) { d = a->W[l][i] - b->W[l][i]; num += d * d; den += b->W[l][i] * b->W[l][i]; }
        for (i = 0; i < (size_t)a->widths[l + 1]; i++) { d = a->b[l][i] - b->b[l][i]; num += d * d; den += b->b[l][i] * b->b[l][i]; }
    }
    return den > 0.0 ? sqrt(num / den) : 0.0;
}

/* The f64 twin of an f32 model: the same weights, converted exactly. */
static void to_f64(const hpdl_mlp_f32 *a, hpdl_mlp_f64 *b) {
    size_t i, n;
    int l;
    HPDL_CHECK(hpdl_mlp_create_zero_f64(b, a->n_layers + 1, a->widths, a->act));
    for (l = 0; l < a->n_layers; l++) {
        n = (size_t)a->widths[l] * a->widths[l + 1];
        for (i = 0; i < n; i++) b->W[l][i] = a->W[l][i];
        for (i = 0; i < (size_t)a->widths[l + 1]; i++) b->b[l][i] = a->b[l][i];
    }
}

/* The order of epoch e: a permutation of 0..n-1 drawn from seed + e (Fisher-Yates). */
static void epoch_order(int64_t *perm, int64_t n, uint64_t seed) {
    hpdl_rng rng;
    int64_t i, j, t;
    hpdl_rng_seed(&rng, seed);
    for (i = 0; i < n; i++) perm[i] = i;
    for (i = n - 1; i > 0; i--) {
        j = (int64_t)hpdl_rng_below(&rng, (uint64_t)i + 1);
        t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
}

/* Rows perm[i..i+batch) of the set into x (batch x dim) and y. */
static void gather_batch(const hpdl_dataset *set, const int64_t *perm, int64_t i, int batch, int dim, float *x,
                         int32_t *y) {
    int64_t r;
    for (r = 0; r < batch; r++) {
        memcpy(x + r * dim, set->images + perm[i + r] * dim, (size_t)dim * sizeof(float));
        y[r] = set->labels[perm[i + r]];
    }
}

/* Trains one f32 model (and, with twin != 0, its f64 twin) for o->epochs
   epochs, one CSV row per epoch: "key,epoch,loss,train_acc,test_acc,last". */
static void train(const options *o, const hpdl_dataset *train_set, const hpdl_dataset *test, int hidden, double lr,
                  int twin, FILE *csv, const char *sweep, const char *key) {
    const int dim = (int)hpdl_dataset_features(train_set);
    int widths[3];
    hpdl_mlp_f32 m, g;
    hpdl_mlp_work_f32 w;
    hpdl_mlp_f64 m64, g64;
    hpdl_mlp_work_f64 w64;
    double *x64 = NULL, loss, loss64, sum, correct_sum, acc, t0, last;
    float *x = (float *)hpdl_alloc((size_t)o->batch * dim, sizeof(float));
    int32_t *y = (int32_t *)hpdl_alloc((size_t)o->batch, sizeof(int32_t));
    int64_t *perm = (int64_t *)hpdl_alloc((size_t)train_set->n, sizeof(int64_t));
    int epoch, dead = 0;
    int64_t i, j, steps;
    if (!x || !y || !perm) { fprintf(stderr, "mlp_sweep: out of memory\n"); exit(1); }
    widths[0] = dim; widths[1] = hidden; widths[2] = 10;
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, (uint64_t)o->seed));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&g, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, o->batch > 1000 ? o->batch : 1000));
    if (twin) {
        to_f64(&m, &m64);
        HPDL_CHECK(hpdl_mlp_create_zero_f64(&g64, 3, widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_mlp_work_create_f64(&w64, &m64, o->batch));
        x64 = (double *)hpdl_alloc((size_t)o->batch * dim, sizeof(double));
        if (!x64) { fprintf(stderr, "mlp_sweep: out of memory\n"); exit(1); }
    }
    for (epoch = 1; epoch <= o->epochs; epoch++) {
        t0 = hpdl_time_now();
        epoch_order(perm, train_set->n, (uint64_t)o->seed + (uint64_t)epoch);
        sum = 0.0;
        correct_sum = 0.0;
        steps = 0;
        for (i = 0; !dead && i + o->batch <= train_set->n; i += o->batch, steps++) {
            hpdl_status s;
            gather_batch(train_set, perm, i, o->batch, dim, x, y);
            s = hpdl_mlp_train_step_f32(&m, &w, &g, o->batch, x, y, (float)lr, 0.0f, &loss);
            if (s == HPDL_ERR_NUMERIC) { dead = 1; break; }
            HPDL_CHECK(s);
            sum += loss;
            if (twin) {
                for (j = 0; j < (int64_t)o->batch * dim; j++) x64[j] = x[j];
                s = hpdl_mlp_train_step_f64(&m64, &w64, &g64, o->batch, x64, y, lr, 0.0, &loss64);
                if (s == HPDL_ERR_NUMERIC) { dead = 1; break; }
                HPDL_CHECK(s);
            }
        }
        if (dead) {
            printf("%s: lr %g, hidden %d, epoch %d: diverged (non-finite loss or weights)\n", sweep, lr, hidden, epoch);
            if (csv) fprintf(csv, "%s,%d,,,,,diverged\n", key, epoch);
            break;
        }
        last = hpdl_time_now() - t0;
        HPDL_CHECK(hpdl_mlp_accuracy_f32(&m, &w, train_set->n, train_set->images, train_set->labels, &correct_sum));
        HPDL_CHECK(hpdl_mlp_accuracy_f32(&m, &w, test->n, test->images, test->labels, &acc));
        printf("%s: lr %g, hidden %d, epoch %d: loss %.4f, train %.4f, test %.4f, %.2f s%s", sweep, lr, hidden, epoch,
               sum / (double)steps, correct_sum, acc, last, twin ? "" : "\n");
        if (twin) printf(", f32 vs f64 weights %.3e\n", rel_diff(&m, &m64));
        if (csv)
            fprintf(csv, "%s,%d,%.6f,%.6f,%.6f,%.6g,ok\n", key, epoch, sum / (double)steps, correct_sum, acc,
                    twin ? rel_diff(&m, &m64) : last);
        fflush(stdout);
    }
    if (twin) {
        HPDL_FREE(x64);
        hpdl_mlp_work_destroy_f64(&w64);
        hpdl_mlp_destroy_f64(&g64);
        hpdl_mlp_destroy_f64(&m64);
    }
    HPDL_FREE(x);
    HPDL_FREE(y);
    HPDL_FREE(perm);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m);
}

/* --fp8: the f32 model (run 0) and its FP8 twin (run 1), from the same
   weights, step by step on the same batches; a CSV row per epoch. */
static void compare_fp8(const options *o, const hpdl_dataset *train_set, const hpdl_dataset *test) {
    const int dim = (int)hpdl_dataset_features(train_set);
    int widths[3], epoch, k;
    hpdl_mlp_f32 m[2], g[2];
    hpdl_mlp_work_f32 w[2];
    hpdl_mlp_fp8 fp8;
    hpdl_csv_file csv;
    float *x = (float *)hpdl_alloc((size_t)o->batch * dim, sizeof(float));
    int32_t *y = (int32_t *)hpdl_alloc((size_t)o->batch, sizeof(int32_t));
    int64_t *perm = (int64_t *)hpdl_alloc((size_t)train_set->n, sizeof(int64_t));
    if (!x || !y || !perm) { fprintf(stderr, "mlp_sweep: out of memory\n"); exit(1); }
    widths[0] = dim; widths[1] = o->sweep_hidden; widths[2] = 10;
    for (k = 0; k < 2; k++) {
        HPDL_CHECK(hpdl_mlp_create_f32(&m[k], 3, widths, HPDL_ACT_RELU, (uint64_t)o->seed));
        HPDL_CHECK(hpdl_mlp_create_zero_f32(&g[k], 3, widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_mlp_work_create_f32(&w[k], &m[k], o->batch > 1000 ? o->batch : 1000));
    }
    HPDL_CHECK(hpdl_mlp_fp8_create(&fp8, &m[1], o->batch, 16, 0));
    HPDL_CHECK(hpdl_csv_create(&csv, ".", "mlp_sweep_fp8",
                               "epoch,f32_loss,f32_test_acc,fp8_loss,fp8_test_acc,test_acc_gap,f32_epoch_s,fp8_epoch_s"));
    printf("fp8: %d-%d-10 ReLU MLP, lr %g, batch %d: f32 and FP8 (delayed scaling) from the same weights\n", dim,
           o->sweep_hidden, o->sweep_lr, o->batch);
    for (epoch = 1; epoch <= o->epochs; epoch++) {
        double loss_sum[2] = {0, 0}, seconds[2] = {0, 0}, acc[2], loss, t0;
        int64_t i, steps = 0;
        epoch_order(perm, train_set->n, (uint64_t)o->seed + (uint64_t)epoch);
        for (i = 0; i + o->batch <= train_set->n; i += o->batch, steps++) {
            gather_batch(train_set, perm, i, o->batch, dim, x, y);
            t0 = hpdl_time_now();
            HPDL_CHECK(hpdl_mlp_train_step_f32(&m[0], &w[0], &g[0], o->batch, x, y, (float)o->sweep_lr, 0.0f, &loss));
            seconds[0] += hpdl_time_now() - t0;
            loss_sum[0] += loss;
            t0 = hpdl_time_now();
            HPDL_CHECK(hpdl_mlp_train_step_fp8_f32(&m[1], &w[1], &g[1], &fp8, o->batch, x, y, (float)o->sweep_lr,
                                                   0.0f, &loss));
            seconds[1] += hpdl_time_now() - t0;
            loss_sum[1] += loss;
        }
        for (k = 0; k < 2; k++) HPDL_CHECK(hpdl_mlp_accuracy_f32(&m[k], &w[k], test->n, test->images, test->labels, &acc[k]));
        printf("fp8: epoch %d: f32 loss %.4f, test %.4f (%.1f s); FP8 loss %.4f, test %.4f (%.1f s); gap %+.4f\n", epoch,
               loss_sum[0] / steps, acc[0], seconds[0], loss_sum[1] / steps, acc[1], seconds[1], acc[1] - acc[0]);
        fprintf(csv.f, "%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,%.3f\n", epoch, loss_sum[0] / steps, acc[0],
                loss_sum[1] / steps, acc[1], acc[1] - acc[0], seconds[0], seconds[1]);
        fflush(stdout);
    }
    HPDL_CHECK(hpdl_csv_commit(&csv));
    hpdl_mlp_fp8_destroy(&fp8);
    for (k = 0; k < 2; k++) {
        hpdl_mlp_work_destroy_f32(&w[k]);
        hpdl_mlp_destroy_f32(&g[k]);
        hpdl_mlp_destroy_f32(&m[k]);
    }
    HPDL_FREE(x);
    HPDL_FREE(y);
    HPDL_FREE(perm);
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset train_set, test;
    FILE *csv;
    char key[32], context[2048];
    int k;
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 1, &train_set));
    HPDL_CHECK(hpdl_idx_load_dir(o.data, 0, &test));
    HPDL_CHECK(hpdl_dataset_normalize(&train_set, FASHION_MEAN, FASHION_STD));
    HPDL_CHECK(hpdl_dataset_normalize(&test, FASHION_MEAN, FASHION_STD));
    if (o.fp8) {
        HPDL_CHECK(hpdl_csv_context_make(argc, argv, "CPU (f32, and FP8 through the CPU twin)", context, sizeof context));
        hpdl_csv_set_context(context);
        compare_fp8(&o, &train_set, &test);
        hpdl_dataset_free(&train_set);
        hpdl_dataset_free(&test);
        return 0;
    }

    csv = hpdl_csv_open_with_header(".", "mlp_sweep_lr",
                   "lr,epoch,loss,train_acc,test_acc,f32_f64_rel_diff,status");
    for (k = 0; k < o.n_lr; k++) {
        snprintf(key, sizeof key, "%g", o.lr[k]);
        train(&o, &train_set, &test, o.sweep_hidden, o.lr[k], 1, csv, "lr sweep", key);
    }
    if (csv) fclose(csv);

    csv = hpdl_csv_open_with_header(".", "mlp_sweep_hidden",
                   "hidden,epoch,loss,train_acc,test_acc,epoch_s,status");
    for (k = 0; k < o.n_hidden; k++) {
        snprintf(key, sizeof key, "%d", o.hidden[k]);
        train(&o, &train_set, &test, o.hidden[k], o.sweep_lr, 0, csv, "width sweep", key);
    }
    if (csv) fclose(csv);
    hpdl_dataset_free(&train_set);
    hpdl_dataset_free(&test);
    return 0;
}
