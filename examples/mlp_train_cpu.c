/* mlp_train_cpu: trains a 784-128-10 ReLU MLP on Fashion-MNIST on the CPU (`make data`
   first) and writes its learning curve to mlp_cpu.csv. `--help` lists the flags. */
#include "hpdl.h"

int main(int argc, char **argv) {
    int widths[3] = {784, 128, 10}, batch = 64, epochs = 3;
    double lr = 0.05;
    int64_t seed = 42;
    const char *data = "data/fashion-mnist", *output = NULL;
    hpdl_cli_option opts[7];
    hpdl_dataset train, test;
    hpdl_mlp_f32 model, grad;
    hpdl_mlp_work_f32 work;
    FILE *csv;
    int epoch;
    int64_t i;
    opts[0] = hpdl_cli_string("data", 0, &data, "DIR", "IDX files");
    opts[1] = hpdl_cli_int("hidden", 0, &widths[1], 1, 1 << 16, "hidden units");
    opts[2] = hpdl_cli_int("batch", 0, &batch, 1, 60000, "mini-batch");
    opts[3] = hpdl_cli_int("epochs", 0, &epochs, 1, 1 << 20, "epochs");
    opts[4] = hpdl_cli_f64("lr", 0, &lr, DBL_MIN, 100, "learning rate");
    opts[5] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "seed of the initial weights");
    opts[6] = hpdl_cli_string("output", 0, &output, "DIR", "folder for mlp_cpu.csv ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "mlp_train_cpu", "Trains a 784-H-10 MLP on Fashion-MNIST on the CPU.", opts, 7);
    hpdl_csv_set_dir(output);
    HPDL_CHECK(hpdl_idx_load_dir(data, 1, &train));
    HPDL_CHECK(hpdl_idx_load_dir(data, 0, &test));
    if (train.channels != 1 || hpdl_dataset_features(&train) != widths[0] ||
        hpdl_dataset_features(&test) != widths[0]) {
        fprintf(stderr, "expected one-channel images of %d pixels\n", widths[0]); /* the model's input width */
        return 1;
    }
    HPDL_CHECK(hpdl_dataset_shuffle(&train, 1)); /* the files are sorted by label */
    HPDL_CHECK(hpdl_mlp_create_f32(&model, 3, widths, HPDL_ACT_RELU, (uint64_t)seed));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&work, &model, batch));
    csv = hpdl_csv_open_with_header(".", "mlp_cpu", "epoch,loss,test_accuracy");
    for (epoch = 1; epoch <= epochs; epoch++) {
        double loss = 0, sum = 0, acc = 0;
        for (i = 0; i + batch <= train.n; i += batch) {
            HPDL_CHECK(hpdl_mlp_train_step_f32(&model, &work, &grad, batch, train.images + i * widths[0],
                                               train.labels + i, (float)lr, 0.0f, &loss));
            sum += loss;
        }
        HPDL_CHECK(hpdl_mlp_accuracy_f32(&model, &work, test.n, test.images, test.labels, &acc));
        printf("epoch %d: loss %.3f, test accuracy %.1f %%\n", epoch, sum / (double)(train.n / batch), 100 * acc);
        if (csv) fprintf(csv, "%d,%.4f,%.4f\n", epoch, sum / (double)(train.n / batch), acc);
    }
    if (csv) fclose(csv);
    hpdl_mlp_work_destroy_f32(&work);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&model);
    hpdl_dataset_free(&train);
    hpdl_dataset_free(&test);
    return 0;
}
