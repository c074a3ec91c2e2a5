/* A few eager training steps of a CNN, for ncu's per-kernel summary:
     steps NET BATCH STEPS [cudnn]      NET: small | resnet18 (3x32x32) */
#include "hpdl_cuda.cuh"
#include <vector>
int main(int argc, char **argv) {
    int resnet = argc > 1 && !strcmp(argv[1], "resnet18"), batch = argc > 2 ? atoi(argv[2]) : 128;
    int steps = argc > 3 ? atoi(argv[3]) : 3, cudnn = argc > 4;
    hpdl_cnn net;
    hpdl_shape shape = hpdl_shape_make(3, 32, 32);
    HPDL_CHECK(resnet ? hpdl_cnn_resnet18(&net, shape, 10, HPDL_NHWC) : hpdl_cnn_small(&net, shape, 10, HPDL_NHWC));
    std::vector<double> p(net.param_count), s(net.state_count + 1);
    std::vector<float> X((size_t)batch * 3072, 0.5f);
    std::vector<int32_t> y(batch, 3);
    float *dX; int32_t *dy;
    cudaMalloc(&dX, X.size() * 4); cudaMalloc(&dy, y.size() * 4);
    cudaMemcpy(dX, X.data(), X.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y.data(), y.size() * 4, cudaMemcpyHostToDevice);
    hpdl_cnn_init(&net, 1, p.data(), s.data());
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 5e-4);
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    HPDL_CHECK(hpdl_cuda_cnn_create_f32(&g, cudnn ? HPDL_CONV_CUDNN : HPDL_CONV_AUTO, 0));
    g.use_graphs = 0;
    HPDL_CHECK(hpdl_cnn_run_create(&r, &net, &g.be, batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, p.data(), s.data()));
    for (int i = 0; i < steps; i++) HPDL_CHECK(hpdl_cuda_cnn_train_batch_f32(&g, &r, batch, dX, dy));
    cudaDeviceSynchronize();
    double t0 = hpdl_time_now();
    for (int i = 0; i < 20; i++) HPDL_CHECK(hpdl_cuda_cnn_train_batch_f32(&g, &r, batch, dX, dy));
    cudaDeviceSynchronize();
    printf("%s batch %d: %.3f ms per eager step\n", argv[1], batch, (hpdl_time_now() - t0) / 20 * 1e3);
    return 0;
}
