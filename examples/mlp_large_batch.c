/* mlp_large_batch: why the linear scaling rule diverged at 8192 images per GPU, and what makes a
   batch of 16384 work, on the CPU. Data-parallel SGD over P ranks of b images is SGD on batches of
   P b (the drivers of hpdl_mpi.h are tested to give the same weights), so one process with batch
   P b trains the same network as two GPUs with b each, only slower. Runs the 784-H-10 ReLU MLP on
   Fashion-MNIST for --epochs epochs, one row per run. On raw pixels in [0, 1]:

     base       plain SGD (the data-parallel drivers' optimiser), batch --base-batch at --lr
     large      batch --batch at --lr (the learning rate tuned for the base batch)
     linear     --lr * batch / base-batch, reached by a linear warm-up over --warmup epochs
                (Goyal et al.'s rule)
     sqrt       --lr * sqrt(batch / base-batch), the same warm-up
     lars       LARS (hpdl_mlp_lars_f32): each layer's step scaled by eta ||W|| / ||G||, at
                --lars-lr with the same warm-up
     momentum   SGD with --momentum (hpdl_sgd_momentum_f32) and the linear rule, as Goyal et al.
                ran it: from the base rate lr (1 - momentum), which takes the same long-run step
                as plain SGD at lr, to that times batch / base-batch, the same warm-up

   and on pixels standardised one by one with the training set's mean and deviation
   (hpdl_dataset_feature_stats, hpdl_dataset_standardize):

     std-momentum  SGD with --momentum, sqrt scaling of lr (1 - momentum), the same warm-up
     std-adam      Adam (hpdl_adamw_f32, betas 0.9 and 0.999, no weight decay) at --adam-lr,
                   no warm-up

   Prints each run's loss and test accuracy per epoch; writes large_batch.csv (run, batch, final
   learning rate, warm-up, last epoch's loss and test accuracy, optimiser, inputs) into --output
   DIR, else $HPDL_RESULTS, else the current folder.
       make data && make build/examples/mlp_large_batch && build/examples/mlp_large_batch
       --help lists the flags; --runs base,std-adam picks runs. */
#include "hpdl.h"

typedef struct options {
    const char *data, *output, *runs;
    int hidden, batch, base_batch, epochs;
    double lr, warmup, lars_lr, eta, momentum, adam_lr;
    int64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o;
    hpdl_cli_option opts[14];
    o.data = "data/fashion-mnist";
    o.output = NULL;
    o.runs = "base,large,linear,sqrt,lars,momentum,std-momentum,std-adam";
    o.hidden = 2048; o.batch = 16384; o.base_batch = 128; o.epochs = 5;
    o.lr = 0.05; o.warmup = 2; o.lars_lr = 1.0; o.eta = 0.01; o.momentum = 0.9; o.adam_lr = 0.001; o.seed = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("hidden", 0, &o.hidden, 1, 1 << 16, "hidden units");
    opts[2] = hpdl_cli_int("batch", 0, &o.batch, 1, 60000, "the large batch (P GPUs x b)");
    opts[3] = hpdl_cli_int("base-batch", 0, &o.base_batch, 1, 60000, "the batch --lr was tuned for");
    opts[4] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 16, "epochs per run");
    opts[5] = hpdl_cli_f64("lr", 0, &o.lr, DBL_MIN, 100, "plain SGD's learning rate at the base batch");
    opts[6] = hpdl_cli_f64("warmup", 0, &o.warmup, 0, 1 << 16, "warm-up epochs of the scaled runs");
    opts[7] = hpdl_cli_f64("lars-lr", 0, &o.lars_lr, DBL_MIN, 1e6, "LARS's learning rate");
    opts[8] = hpdl_cli_f64("eta", 0, &o.eta, DBL_MIN, 1e6, "LARS's trust coefficient");
    opts[9] = hpdl_cli_f64("momentum", 0, &o.momentum, 0, 0.999, "momentum of the momentum runs");
    opts[10] = hpdl_cli_f64("adam-lr", 0, &o.adam_lr, DBL_MIN, 1, "Adam's learning rate");
    opts[11] = hpdl_cli_string("runs", 0, &o.runs, "LIST", "comma-separated: base,large,linear,sqrt,lars,momentum,std-momentum,std-adam");
    opts[12] = hpdl_cli_i64("seed", 0, &o.seed, 0, INT64_MAX, "seed of the weights and shuffles");
    opts[13] = hpdl_cli_string("output", 0, &o.output, "DIR", "folder for large_batch.csv ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "mlp_large_batch",
                   "Large-batch training: the linear scaling rule, sqrt scaling, LARS, momentum, standardised inputs, Adam.",
                   opts, 14);
    return o;
}

typedef enum optimiser { OPT_SGD, OPT_LARS, OPT_MOMENTUM, OPT_ADAM } optimiser;
static const char *const optimiser_names[] = {"sgd", "lars", "momentum", "adam"};

/* What a run does: its batch, inputs, optimiser and learning rates (a linear warm-up from lr0 to
   target over warmup epochs). */
typedef struct rule {
    const char *name;
    int batch, standardised;
    optimiser opt;
    double lr0, target, warmup;
} rule;

static const char *const run_names[] = {"base", "large", "linear", "sqrt", "lars", "momentum", "std-momentum", "std-adam"};
enum { N_RUNS = 8 };

static rule rule_for(const options *o, const char *name) {
    const double ratio = (double)o->batch / o->base_batch, momentum_lr = o->lr * (1 - o->momentum);
    rule r;
    r.name = name;
    r.batch = strcmp(name, "base") ? o->batch : o->base_batch;
    r.standardised = !strncmp(name, "std-", 4);
    r.opt = !strcmp(name, "lars") ? OPT_LARS : strstr(name, "momentum") ? OPT_MOMENTUM
                                             : !strcmp(name, "std-adam") ? OPT_ADAM : OPT_SGD;
    r.lr0 = r.opt == OPT_MOMENTUM ? momentum_lr : r.opt == OPT_LARS ? o->lars_lr * 0.01 : r.opt == OPT_ADAM ? o->adam_lr : o->lr;
    r.target = !strcmp(name, "linear") ? o->lr * ratio : !strcmp(name, "sqrt") ? o->lr * sqrt(ratio)
               : r.opt == OPT_LARS ? o->lars_lr : !strcmp(name, "momentum") ? momentum_lr * ratio
               : !strcmp(name, "std-momentum") ? momentum_lr * sqrt(ratio) : r.lr0;
    r.warmup = r.target != r.lr0 ? o->warmup : 0;
    return r;
}

/* Learning rate at `progress` epochs: the linear warm-up from lr0 to target. */
static double warmed(const rule *r, double progress) {
    return r->warmup > 0 && progress < r->warmup ? r->lr0 + (r->target - r->lr0) * progress / r->warmup : r->target;
}

/* One tensor's momentum or Adam step (state s0: velocity or first moment; s1: second moment);
   t counts the steps from 1. */
static hpdl_status tensor_step(const rule *r, const options *o, int64_t n, float *w, const float *g, float *s0,
                               float *s1, double lr, int64_t t) {
    return r->opt == OPT_MOMENTUM ? hpdl_sgd_momentum_f32(n, w, g, s0, lr, o->momentum, 0, 0)
                                  : hpdl_adamw_f32(n, w, g, s0, s1, t, lr, 0.9, 0.999, 1e-8, 0);
}

/* The run's optimiser on every weight matrix and bias vector. */
static hpdl_status update(const rule *r, const options *o, hpdl_mlp_f32 *m, const hpdl_mlp_f32 *g,
                          hpdl_mlp_f32 state[2], double lr, int64_t t) {
    hpdl_status st = HPDL_OK;
    int l;
    if (r->opt == OPT_SGD) return hpdl_mlp_sgd_f32(m, g, (float)lr, 0.0f);
    if (r->opt == OPT_LARS) return hpdl_mlp_lars_f32(m, g, (float)lr, 0.0f, o->eta);
    for (l = 0; l < m->n_layers && st == HPDL_OK; l++) {
        st = tensor_step(r, o, (int64_t)m->widths[l] * m->widths[l + 1], m->W[l], g->W[l], state[0].W[l],
                         state[1].W[l], lr, t);
        if (st == HPDL_OK)
            st = tensor_step(r, o, m->widths[l + 1], m->b[l], g->b[l], state[0].b[l], state[1].b[l], lr, t);
    }
    return st;
}

typedef struct run_result { double lr, loss, acc; } run_result;

/* One run: prints its epochs, returns its last epoch. A loss that is not finite, or a step that
   would overflow a weight, ends it: the row says so with an infinite loss. */
static run_result train_run(const options *o, const rule *r, hpdl_dataset *train, const hpdl_dataset *test) {
    int widths[3] = {784, 0, 10};
    hpdl_mlp_f32 model, grad, state[2];
    hpdl_mlp_work_f32 work;
    run_result res = {0, 0, 0};
    const int64_t steps = train->n / r->batch;
    int64_t s, t = 0;
    int epoch, k;
    widths[1] = o->hidden;
    HPDL_CHECK(hpdl_mlp_create_f32(&model, 3, widths, HPDL_ACT_RELU, (uint64_t)o->seed));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    for (k = 0; k < 2; k++) HPDL_CHECK(hpdl_mlp_create_zero_f32(&state[k], 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&work, &model, r->batch));
    res.lr = r->target;
    for (epoch = 0; epoch < o->epochs; epoch++) {
        double sum = 0, t0 = hpdl_time_now();
        HPDL_CHECK(hpdl_dataset_shuffle(train, (uint64_t)o->seed + (uint64_t)epoch));
        for (s = 0; s < steps; s++) {
            const int64_t i = s * r->batch;
            const double lr = warmed(r, epoch + (double)s / steps);
            double loss = 0;
            HPDL_CHECK(hpdl_mlp_backward_f32(&model, &work, r->batch, train->images + i * 784, train->labels + i,
                                             &grad, &loss));
            if (!(loss <= DBL_MAX) || update(r, o, &model, &grad, state, lr, ++t) != HPDL_OK) {
                sum = HUGE_VAL;
                break;
            }
            sum += loss;
            res.lr = lr;
        }
        res.loss = sum / (double)steps;
        HPDL_CHECK(hpdl_mlp_accuracy_f32(&model, &work, test->n, test->images, test->labels, &res.acc));
        printf("  %-12s batch %5d  epoch %d  lr %-9.4g loss %-10.4g test %.4f  %.1f s\n", r->name, r->batch,
               epoch + 1, res.lr, res.loss, res.acc, hpdl_time_now() - t0);
        if (!(res.loss <= DBL_MAX)) break;
    }
    hpdl_mlp_work_destroy_f32(&work);
    for (k = 0; k < 2; k++) hpdl_mlp_destroy_f32(&state[k]);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&model);
    return res;
}

/* Loads the training or test set; on a failure the program ends. */
static void load(const char *dir, int train, hpdl_dataset *d) {
    if (hpdl_idx_load_dir(dir, train, d) != HPDL_OK || hpdl_dataset_features(d) != 784) {
        fprintf(stderr, "mlp_large_batch: cannot load 28x28 IDX files in %s (make data)\n", dir);
        exit(1);
    }
}

/* Both sets with every pixel standardised by the training set's statistics; min_std 0.1 (a
   typical pixel's deviation is 0.35) keeps the nearly constant border pixels from turning into
   amplified noise. */
static void standardise(hpdl_dataset *train, hpdl_dataset *test) {
    static float mean[784], std[784];
    HPDL_CHECK(hpdl_dataset_feature_stats(train, mean, std));
    HPDL_CHECK(hpdl_dataset_standardize(train, mean, std, 0.1f));
    HPDL_CHECK(hpdl_dataset_standardize(test, mean, std, 0.1f));
}

static int wanted(const char *runs, const char *name) {
    char list[256], *tok;
    int found = 0;
    snprintf(list, sizeof list, "%s", runs);
    for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) found |= !strcmp(tok, name);
    return found;
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    hpdl_dataset sets[2][2]; /* [standardised][train, test] */
    hpdl_csv_file csv;
    char context[2048];
    int k, std;
    hpdl_csv_set_dir(o.output);
    HPDL_CHECK(hpdl_csv_context_make(argc, argv, "CPU (f32)", context, sizeof context));
    hpdl_csv_set_context(context);
    for (std = 0; std < 2; std++) {
        load(o.data, 1, &sets[std][0]);
        load(o.data, 0, &sets[std][1]);
    }
    standardise(&sets[1][0], &sets[1][1]);
    if (o.batch > sets[0][0].n || o.base_batch > sets[0][0].n) {
        fprintf(stderr, "mlp_large_batch: batches larger than the %lld training images\n", (long long)sets[0][0].n);
        return 2;
    }
    printf("mlp_large_batch: 784-%d-10 ReLU MLP, %d epochs; base batch %d at lr %g, large batch %d\n", o.hidden,
           o.epochs, o.base_batch, o.lr, o.batch);
    HPDL_CHECK(hpdl_csv_create(&csv, ".", "large_batch",
                               "run,batch,final_lr,warmup_epochs,last_epoch_loss,last_epoch_test_acc,optimiser,inputs"));
    for (k = 0; k < N_RUNS; k++) {
        rule r;
        run_result res;
        if (!wanted(o.runs, run_names[k])) continue;
        r = rule_for(&o, run_names[k]);
        res = train_run(&o, &r, &sets[r.standardised][0], &sets[r.standardised][1]);
        fprintf(csv.f, "%s,%d,%.6g,%g,%.6g,%.4f,%s,%s\n", r.name, r.batch, res.lr, r.warmup, res.loss, res.acc,
                optimiser_names[r.opt], r.standardised ? "standardised" : "raw");
    }
    HPDL_CHECK(hpdl_csv_commit(&csv));
    for (std = 0; std < 2; std++) {
        hpdl_dataset_free(&sets[std][0]);
        hpdl_dataset_free(&sets[std][1]);
    }
    return 0;
}
