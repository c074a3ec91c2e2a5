/* Is the GPU's f32 training of ResNet-18 within 1e-5 of the exact run,
   where the CPU twin's f32 run is not? (2026-11-26) cnn_train --check's
   steps (SGD, momentum 0.9, lr 0.05, weight decay 5e-4; Fashion-MNIST's
   first images standardised, NHWC) from the same weights on three sides:
   the CPU twin in f64 (the exact run), the CPU twin in f32, the GPU in f32.
   After each step, the check's measure (largest relative Frobenius
   difference of a parameter tensor) of each f32 side against f64, and of
   the two f32 sides against each other. If the GPU were within 1e-5 of
   f64, a more accurate CPU f32 twin would make the f32 check meetable.

       nvcc -std=c++17 -O3 -arch=sm_90a -I. notes/experiments/2026-11-26-f32-floor/gpu_floor.cu \
            -o build/gpu_floor -lcublas -lcuda
       build/gpu_floor [small|resnet18] [batch] [steps] */
#include "hpdl_cuda.cuh"
#include <vector>

static void report(const hpdl_cnn *net, const char *what, const std::vector<double> &a, const std::vector<double> &b) {
    int layer = -1;
    double d = hpdl_cnn_param_difference(net, a.data(), b.data(), &layer);
    printf("  %-22s %.3g (layer %d: %s)\n", what, d, layer,
           layer >= 0 && net->layer[layer].op == HPDL_CNN_BATCHNORM ? "batch norm" : "conv or linear");
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "resnet18";
    const int batch = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 3;
    hpdl_dataset train;
    hpdl_cnn net;
    hpdl_shape shape;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 5e-4);
    HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist", 1, &train));
    shape.c = train.channels, shape.h = train.rows, shape.w = train.cols;
    HPDL_CHECK(strcmp(which, "small") ? hpdl_cnn_resnet18(&net, shape, 10, HPDL_NHWC)
                                      : hpdl_cnn_small(&net, shape, 10, HPDL_NHWC));
    const int64_t features = hpdl_dataset_features(&train), total = train.n * features;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < total; i++) sum += train.images[i], sq += (double)train.images[i] * train.images[i];
    const double mean = sum / (double)total, sd = sqrt(sq / (double)total - mean * mean);
    std::vector<float> x32(batch * features);
    std::vector<double> x64(batch * features), params(net.param_count), state(net.state_count + 1);
    for (int64_t i = 0; i < batch * features; i++) x32[i] = (float)(x64[i] = (float)((train.images[i] - mean) / sd));
    HPDL_CHECK(hpdl_cnn_init(&net, 1, params.data(), state.data()));

    hpdl_cnn_run c64, c32, g32;
    hpdl_cuda_cnn g;
    float *dx;
    int32_t *dl;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dx, x32.size() * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dl, batch * sizeof(int32_t)));
    HPDL_CHECK(hpdl_cuda_to_device(dx, x32.data(), x32.size() * sizeof(float), 0));
    HPDL_CHECK(hpdl_cuda_to_device(dl, train.labels, batch * sizeof(int32_t), 0));
    HPDL_CHECK(hpdl_cuda_cnn_create<float>(&g, HPDL_CONV_AUTO));
    HPDL_CHECK(hpdl_cnn_run_create(&c64, &net, hpdl_cnn_backend_cpu_f64(), batch, &opt));
    HPDL_CHECK(hpdl_cnn_run_create(&c32, &net, hpdl_cnn_backend_cpu_f32(), batch, &opt));
    HPDL_CHECK(hpdl_cnn_run_create(&g32, &net, &g.be, batch, &opt));
    for (hpdl_cnn_run *r : {&c64, &c32, &g32}) HPDL_CHECK(hpdl_cnn_set_params(r, params.data(), state.data()));
    std::vector<double> p64(net.param_count), pc(net.param_count), pg(net.param_count);
    printf("%s, batch %d, %lld parameters, same weights: largest relative Frobenius difference of a parameter tensor\n",
           which, batch, (long long)net.param_count);
    for (int k = 1; k <= steps; k++) {
        HPDL_CHECK(hpdl_cnn_train_step(&c64, batch, x64.data(), train.labels));
        HPDL_CHECK(hpdl_cnn_train_step(&c32, batch, x32.data(), train.labels));
        HPDL_CHECK(hpdl_cuda_cnn_train_batch<float>(&g, &g32, batch, dx, dl));
        HPDL_CHECK(hpdl_cnn_get_params(&c64, p64.data(), NULL));
        HPDL_CHECK(hpdl_cnn_get_params(&c32, pc.data(), NULL));
        HPDL_CHECK(hpdl_cnn_get_params(&g32, pg.data(), NULL));
        printf("step %d\n", k);
        report(&net, "GPU f32 vs CPU f64", pg, p64);
        report(&net, "CPU f32 vs CPU f64", pc, p64);
        report(&net, "GPU f32 vs CPU f32", pg, pc);
        fflush(stdout);
    }
    hpdl_cnn_run_destroy(&c64);
    hpdl_cnn_run_destroy(&c32);
    hpdl_cnn_run_destroy(&g32);
    hpdl_cuda_cnn_destroy(&g);
    hpdl_cuda_free(dx);
    hpdl_cuda_free(dl);
    hpdl_dataset_free(&train);
    return 0;
}
