/* How far apart two correct f32 trainings of the same network can be
   (2026-11-26): cnn_train --check's steps (SGD with momentum 0.9, lr 0.05,
   weight decay 5e-4, constant rate; Fashion-MNIST's first images,
   standardised, NHWC) on the CPU twin in f32 and in f64 from the same
   weights, then the check's measure, the largest relative Frobenius
   difference of a parameter tensor (hpdl_cnn_param_difference), after each
   step. The f64 run stands for the exact one: what the f32 run is off by
   is the f32 rounding any f32 implementation carries, whose size a GPU
   against CPU comparison in f32 cannot go below (both sides are off by
   about that much, in their own directions).

       cc -std=c99 -O2 -I. notes/experiments/2026-11-26-f32-floor/floor.c -o build/floor -lm
       build/floor [small|resnet18] [batch] [steps]   (make data first) */
#include "hpdl.h"

static void standardise(const hpdl_dataset *d, int n, float *x32, double *x64) {
    int64_t features = hpdl_dataset_features(d), i, total = d->n * features;
    double sum = 0, sq = 0, mean, std;
    for (i = 0; i < total; i++) sum += d->images[i], sq += (double)d->images[i] * d->images[i];
    mean = sum / (double)total;
    std = sqrt(sq / (double)total - mean * mean);
    for (i = 0; i < n * features; i++) { /* one channel: NCHW and NHWC agree */
        x64[i] = (float)((d->images[i] - mean) / std);
        x32[i] = (float)x64[i];
    }
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "resnet18";
    const int batch = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 3;
    hpdl_dataset train;
    hpdl_cnn net;
    hpdl_shape shape;
    hpdl_cnn_run r32, r64;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    double *params, *state, *p32, *p64;
    float *x32;
    double *x64;
    int k, layer = -1;
    HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist", 1, &train));
    shape.c = train.channels, shape.h = train.rows, shape.w = train.cols;
    HPDL_CHECK(strcmp(which, "small") ? hpdl_cnn_resnet18(&net, shape, 10, HPDL_NHWC)
                                      : hpdl_cnn_small(&net, shape, 10, HPDL_NHWC));
    params = malloc((size_t)net.param_count * sizeof *params);
    state = malloc((size_t)(net.state_count + 1) * sizeof *state);
    p32 = malloc((size_t)net.param_count * sizeof *p32);
    p64 = malloc((size_t)net.param_count * sizeof *p64);
    x32 = malloc((size_t)batch * hpdl_dataset_features(&train) * sizeof *x32);
    x64 = malloc((size_t)batch * hpdl_dataset_features(&train) * sizeof *x64);
    standardise(&train, batch, x32, x64);
    HPDL_CHECK(hpdl_cnn_init(&net, 1, params, state));
    HPDL_CHECK(hpdl_cnn_run_create(&r32, &net, hpdl_cnn_backend_cpu_f32(), batch, &opt));
    HPDL_CHECK(hpdl_cnn_run_create(&r64, &net, hpdl_cnn_backend_cpu_f64(), batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r32, params, state));
    HPDL_CHECK(hpdl_cnn_set_params(&r64, params, state));
    printf("%s, batch %d, %lld parameters: CPU f32 against CPU f64 from the same weights\n", which, batch,
           (long long)net.param_count);
    for (k = 1; k <= steps; k++) {
        HPDL_CHECK(hpdl_cnn_train_step(&r32, batch, x32, train.labels));
        HPDL_CHECK(hpdl_cnn_train_step(&r64, batch, x64, train.labels));
        HPDL_CHECK(hpdl_cnn_get_params(&r32, p32, NULL));
        HPDL_CHECK(hpdl_cnn_get_params(&r64, p64, NULL));
        double worst = hpdl_cnn_param_difference(&net, p32, p64, &layer);
        printf("step %d: largest relative Frobenius difference of a parameter tensor %.3g (layer %d: %s)\n", k,
               worst, layer, layer >= 0 && net.layer[layer].op == HPDL_CNN_BATCHNORM ? "batch norm" : "conv or linear");
        fflush(stdout);
    }
    hpdl_cnn_run_destroy(&r32);
    hpdl_cnn_run_destroy(&r64);
    hpdl_dataset_free(&train);
    free(params); free(state); free(p32); free(p64); free(x32); free(x64);
    return 0;
}
