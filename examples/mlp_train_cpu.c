/* Trains a 784-128-10 MLP on Fashion-MNIST on the CPU (run `make data` first)
   and writes its learning curve to mlp_cpu.csv. */
#include "hpdl.h"

int main(void) {
    const int widths[3] = {784, 128, 10}, batch = 64;
    hpdl_dataset train, test;
    hpdl_mlp_f32 model, grad;
    hpdl_mlp_work_f32 work;
    FILE *csv;
    int epoch;
    int64_t i;
    HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist", 1, &train));
    HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist", 0, &test));
    if (train.channels != 1 || hpdl_dataset_features(&train) != widths[0] ||
        hpdl_dataset_features(&test) != widths[0]) {
        fprintf(stderr, "expected one-channel images of %d pixels\n", widths[0]); /* the model's input width */
        return 1;
    }
    HPDL_CHECK(hpdl_dataset_shuffle(&train, 1)); /* the files are sorted by label */
    HPDL_CHECK(hpdl_mlp_create_f32(&model, 3, widths, HPDL_ACT_RELU, 42));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&work, &model, batch));
    csv = hpdl_csv_open_with_header(".", "mlp_cpu", "epoch,loss,test_accuracy");
    for (epoch = 1; epoch <= 3; epoch++) {
        double loss = 0, sum = 0, acc = 0;
        for (i = 0; i + batch <= train.n; i += batch) {
            HPDL_CHECK(hpdl_mlp_train_step_f32(&model, &work, &grad, batch, train.images + i * widths[0],
                                               train.labels + i, 0.05f, 0.0f, &loss));
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
