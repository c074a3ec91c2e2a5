/* mlp_large_batch: why the linear scaling rule diverged at 8192 images per GPU, and two remedies,
   on the CPU. Data-parallel SGD over P ranks of b images is SGD on batches of P b (the drivers of
   hpdl_mpi.h are tested to give the same weights), so one process with batch P b trains the same
   network as two GPUs with b each, only slower. Runs the 784-H-10 ReLU MLP on Fashion-MNIST for
   --epochs epochs (plain SGD, no momentum: the data-parallel drivers' optimiser), one row per run:

     base       batch --base-batch at --lr
     large      batch --batch at --lr (the learning rate tuned for the base batch)
     linear     --lr * batch / base-batch, reached by a linear warm-up over --warmup epochs
                (Goyal et al.'s rule)
     sqrt       --lr * sqrt(batch / base-batch), the same warm-up
     lars       LARS (hpdl_mlp_lars_f32): each layer's step scaled by eta ||W|| / ||G||, at
                --lars-lr with the same warm-up

   Prints each run's loss and test accuracy per epoch; writes large_batch.csv (run, batch, final
   learning rate, last epoch's loss and test accuracy) into --output DIR, else $HPDL_RESULTS,
   else the current folder.
       make data && make build/examples/mlp_large_batch && build/examples/mlp_large_batch
       --help lists the flags; --runs base,lars picks runs. */
#include "hpdl.h"

typedef struct options {
    const char *data, *output, *runs;
    int hidden, batch, base_batch, epochs;
    double lr, warmup, lars_lr, eta;
    int64_t seed;
} options;

static options parse_args(int argc, char **argv) {
    options o;
    hpdl_cli_option opts[12];
    o.data = "data/fashion-mnist";
    o.output = NULL;
    o.runs = "base,large,linear,sqrt,lars";
    o.hidden = 2048; o.batch = 16384; o.base_batch = 128; o.epochs = 5;
    o.lr = 0.05; o.warmup = 2; o.lars_lr = 1.0; o.eta = 0.01; o.seed = 1;
    opts[0] = hpdl_cli_string("data", 0, &o.data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("hidden", 0, &o.hidden, 1, 1 << 16, "hidden units");
    opts[2] = hpdl_cli_int("batch", 0, &o.batch, 1, 60000, "the large batch (P GPUs x b)");
    opts[3] = hpdl_cli_int("base-batch", 0, &o.base_batch, 1, 60000, "the batch --lr was tuned for");
    opts[4] = hpdl_cli_int("epochs", 0, &o.epochs, 1, 1 << 16, "epochs per run");
    opts[5] = hpdl_cli_f64("lr", 0, &o.lr, DBL_MIN, 100, "learning rate at the base batch");
    opts[6] = hpdl_cli_f64("warmup", 0, &o.warmup, 0, 1 << 16, "warm-up epochs of the scaled runs");
    opts[7] = hpdl_cli_f64("lars-lr", 0, &o.lars_lr, DBL_MIN, 1e6, "LARS's learning rate");
    opts[8] = hpdl_cli_f64("eta", 0, &o.eta, DBL_MIN, 1e6, "LARS's trust coefficient");
    opts[9] = hpdl_cli_string("runs", 0, &o.runs, "LIST", "comma-separated: base,large,linear,sqrt,lars");
    opts[10] = hpdl_cli_i64("seed", 0, &o.seed, 0, INT64_MAX, "seed of the weights and shuffles");
    opts[11] = hpdl_cli_string("output", 0, &o.output, "DIR", "folder for large_batch.csv ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "mlp_large_batch", "Large-batch SGD: the linear scaling rule, sqrt scaling and LARS.",
                   opts, 12);
    return o;
}

typedef struct run_result { double lr, loss, acc; } run_result;

/* Learning rate at `progress` epochs: a linear warm-up from lr0 to target over `warmup` epochs. */
static double warmed(double lr0, double target, double warmup, double progress) {
    return warmup > 0 && progress < warmup ? lr0 + (target - lr0) * progress / warmup : target;
}

/* One run: `name` picks the rule; prints its epochs, returns its last epoch. */
static run_result train_run(const options *o, const char *name, hpdl_dataset *train, const hpdl_dataset *test) {
    const int large = strcmp(name, "base") != 0, batch = large ? o->batch : o->base_batch;
    const int lars = !strcmp(name, "lars"), warm = !strcmp(name, "linear") || !strcmp(name, "sqrt") || lars;
    const double ratio = (double)o->batch / o->base_batch;
    const double target = !strcmp(name, "linear") ? o->lr * ratio : !strcmp(name, "sqrt") ? o->lr * sqrt(ratio)
                          : lars ? o->lars_lr : o->lr;
    int widths[3] = {784, 0, 10};
    hpdl_mlp_f32 model, grad;
    hpdl_mlp_work_f32 work;
    run_result r = {target, 0, 0};
    int64_t i, steps = train->n / batch, s;
    int epoch;
    widths[1] = o->hidden;
    HPDL_CHECK(hpdl_mlp_create_f32(&model, 3, widths, HPDL_ACT_RELU, (uint64_t)o->seed));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&work, &model, batch));
    for (epoch = 0; epoch < o->epochs; epoch++) {
        double sum = 0, t0 = hpdl_time_now();
        HPDL_CHECK(hpdl_dataset_shuffle(train, (uint64_t)o->seed + (uint64_t)epoch));
        for (s = 0; s < steps; s++) {
            const double lr = warm ? warmed(lars ? o->lars_lr * 0.01 : o->lr, target, o->warmup, epoch + (double)s / steps)
                                   : target;
            double loss = 0;
            i = s * batch;
            HPDL_CHECK(hpdl_mlp_backward_f32(&model, &work, batch, train->images + i * 784, train->labels + i, &grad,
                                             &loss));
            if (!(loss <= DBL_MAX) || (lars ? hpdl_mlp_lars_f32(&model, &grad, (float)lr, 0.0f, o->eta)
                                            : hpdl_mlp_sgd_f32(&model, &grad, (float)lr, 0.0f)) != HPDL_OK) {
                sum = HUGE_VAL; /* diverged (a weight would overflow): the row says so */
                break;
            }
            sum += loss;
            r.lr = lr;
        }
        r.loss = sum / (double)steps;
        HPDL_CHECK(hpdl_mlp_accuracy_f32(&model, &work, test->n, test->images, test->labels, &r.acc));
        printf("  %-7s batch %5d  epoch %d  lr %-9.4g loss %-10.4g test %.4f  %.1f s\n", name, batch, epoch + 1, r.lr,
               r.loss, r.acc, hpdl_time_now() - t0);
        if (!(r.loss <= DBL_MAX)) break;
    }
    hpdl_mlp_work_destroy_f32(&work);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&model);
    return r;
}

int main(int argc, char **argv) {
    options o = parse_args(argc, argv);
    static const char *const names[] = {"base", "large", "linear", "sqrt", "lars"};
    hpdl_dataset train, test;
    hpdl_csv_file csv;
    char context[2048];
    int k;
    hpdl_csv_set_dir(o.output);
    HPDL_CHECK(hpdl_csv_context_make(argc, argv, "CPU (f32)", context, sizeof context));
    hpdl_csv_set_context(context);
    if (hpdl_idx_load_dir(o.data, 1, &train) != HPDL_OK || hpdl_idx_load_dir(o.data, 0, &test) != HPDL_OK ||
        hpdl_dataset_features(&train) != 784) {
        fprintf(stderr, "mlp_large_batch: cannot load 28x28 IDX files in %s (make data)\n", o.data);
        return 1;
    }
    if (o.batch > train.n || o.base_batch > train.n) {
        fprintf(stderr, "mlp_large_batch: batches larger than the %lld training images\n", (long long)train.n);
        return 2;
    }
    printf("mlp_large_batch: 784-%d-10 ReLU MLP, plain SGD, %d epochs; base batch %d at lr %g, large batch %d\n",
           o.hidden, o.epochs, o.base_batch, o.lr, o.batch);
    HPDL_CHECK(hpdl_csv_create(&csv, ".", "large_batch", "run,batch,final_lr,warmup_epochs,last_epoch_loss,last_epoch_test_acc"));
    for (k = 0; k < 5; k++) {
        char list[256], *tok;
        int wanted = 0;
        run_result r;
        snprintf(list, sizeof list, "%s", o.runs);
        for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) wanted |= !strcmp(tok, names[k]);
        if (!wanted) continue;
        r = train_run(&o, names[k], &train, &test);
        fprintf(csv.f, "%s,%d,%.6g,%g,%.6g,%.4f\n", names[k], k ? o.batch : o.base_batch, r.lr, k >= 2 ? o.warmup : 0.0,
                r.loss, r.acc);
    }
    HPDL_CHECK(hpdl_csv_commit(&csv));
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    return 0;
}
