/* Eager training steps of a CNN in any precision, for ncu's per-kernel summary:
     steps NET BATCH WARM TIMED PRECISION [cudnn]
   NET: small | resnet18 (3x32x32); PRECISION: f32 | f16 | bf16 */
#include "hpdl_cuda.cuh"
#include <vector>
int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "steps NET BATCH WARM TIMED PRECISION [cudnn]\n"); return 2; }
    int resnet = !strcmp(argv[1], "resnet18"), batch = atoi(argv[2]), warm = atoi(argv[3]), timed = atoi(argv[4]);
    const char *prec = argv[5];
    int cudnn = argc > 6;
    hpdl_cnn net;
    hpdl_shape shape = hpdl_shape_make(3, 32, 32);
    HPDL_CHECK(resnet ? hpdl_cnn_resnet18(&net, shape, 10, HPDL_NHWC) : hpdl_cnn_small(&net, shape, 10, HPDL_NHWC));
    std::vector<double> p(net.param_count), s(net.state_count + 1);
    int half = strcmp(prec, "f32") != 0; /* 0.5 in f16 is 0x3800, in bf16 0x3f00 */
    std::vector<float> X((size_t)batch * 3072, 0.5f);
    std::vector<uint16_t> X16((size_t)batch * 3072, !strcmp(prec, "f16") ? 0x3800 : 0x3f00);
    std::vector<int32_t> y(batch, 3);
    void *dX; int32_t *dy;
    cudaMalloc(&dX, X.size() * 4); cudaMalloc(&dy, y.size() * 4);
    if (half) cudaMemcpy(dX, X16.data(), X16.size() * 2, cudaMemcpyHostToDevice);
    else cudaMemcpy(dX, X.data(), X.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y.data(), y.size() * 4, cudaMemcpyHostToDevice);
    hpdl_cnn_init(&net, 1, p.data(), s.data());
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.01, 0.9, 5e-4);
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    hpdl_conv_algo algo = cudnn ? HPDL_CONV_CUDNN : HPDL_CONV_AUTO;
    if (!strcmp(prec, "f16")) HPDL_CHECK(hpdl_cuda_cnn_create_f16(&g, algo, 0));
    else if (!strcmp(prec, "bf16")) HPDL_CHECK(hpdl_cuda_cnn_create_bf16(&g, algo, 0));
    else HPDL_CHECK(hpdl_cuda_cnn_create_f32(&g, algo, 0));
    g.use_graphs = 0;
    HPDL_CHECK(hpdl_cnn_run_create(&r, &net, &g.be, batch, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, p.data(), s.data()));
    HPDL_CHECK(hpdl_cnn_refresh_work(&r));
    auto step = [&]() {
        if (!strcmp(prec, "f16")) HPDL_CHECK(hpdl_cuda_cnn_train_batch_f16(&g, &r, batch, (const hpdl_f16 *)dX, dy));
        else if (half) HPDL_CHECK(hpdl_cuda_cnn_train_batch_bf16(&g, &r, batch, (const hpdl_bf16 *)dX, dy));
        else HPDL_CHECK(hpdl_cuda_cnn_train_batch_f32(&g, &r, batch, (const float *)dX, dy));
    };
    for (int i = 0; i < warm; i++) step();
    cudaDeviceSynchronize();
    double t0 = hpdl_time_now();
    for (int i = 0; i < timed; i++) step();
    cudaDeviceSynchronize();
    printf("%s %s batch %d%s: %.3f ms per eager step\n", argv[1], prec, batch, cudnn ? " cudnn" : "",
           (hpdl_time_now() - t0) / (timed > 0 ? timed : 1) * 1e3);
    return 0;
}
