/* Per-layer comparison of CPU and GPU activations and gradients (f64) of
   ResNet-18 on HWxHW images (layers HW), or of tests/gpu_cnn.cu's network
   with every layer kind (layers kinds): finds the first layer where they part. */
#include "hpdl_cuda.cuh"
#include <vector>
static double diff(const void *cpu, const void *gpu_dev, size_t n) {
    std::vector<double> g(n);
    cudaMemcpy(g.data(), gpu_dev, n * 8, cudaMemcpyDeviceToHost);
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs(g[i] - ((const double *)cpu)[i]));
    return w;
}
int main(int argc, char **argv) {
    hpdl_cnn net;
    int kinds = argc > 1 && !strcmp(argv[1], "kinds"), hw = kinds ? 6 : argc > 1 ? atoi(argv[1]) : 8, batch = 2;
    if (kinds) {
        hpdl_cnn_layer l[13];
        l[0] = hpdl_cnn_conv(4, 3, 1, 1, 1); l[1] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
        l[2] = hpdl_cnn_simple(HPDL_CNN_RELU); l[3] = hpdl_cnn_conv(4, 3, 1, 1, 0);
        l[4] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM); l[5] = hpdl_cnn_add(4, 2);
        l[6] = hpdl_cnn_simple(HPDL_CNN_RELU); l[7] = hpdl_cnn_pool(HPDL_CNN_MAXPOOL, 2, 2, 0);
        l[8] = hpdl_cnn_pool(HPDL_CNN_AVGPOOL, 2, 1, 0); l[9] = hpdl_cnn_conv(5, 1, 1, 0, 1);
        l[10] = hpdl_cnn_simple(HPDL_CNN_GLOBAL_AVGPOOL); l[11] = hpdl_cnn_linear(6); l[12] = hpdl_cnn_linear(3);
        hpdl_cnn_define(&net, 13, l, hpdl_shape_make(2, 6, 6), HPDL_NHWC);
    } else {
        hpdl_cnn_resnet18(&net, hpdl_shape_make(3, hw, hw), 10, HPDL_NHWC);
    }
    std::vector<double> p(net.param_count), s(net.state_count), X((size_t)batch * net.input.c * hw * hw);
    std::vector<int32_t> y = {1, 2};
    hpdl_rng rng; hpdl_rng_seed(&rng, 3);
    for (auto &v : X) v = 2 * hpdl_rng_uniform(&rng) - 1;
    hpdl_cnn_init(&net, 5, p.data(), s.data());
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0.05, 0.9, 0);
    hpdl_cuda_cnn g; hpdl_cuda_cnn_create<double>(&g, HPDL_CONV_AUTO);
    hpdl_cnn_run c, d;
    hpdl_cnn_run_create(&c, &net, hpdl_cnn_backend_cpu_f64(), batch, &opt);
    hpdl_cnn_run_create(&d, &net, &g.be, batch, &opt);
    hpdl_cnn_set_params(&c, p.data(), s.data()); hpdl_cnn_set_params(&d, p.data(), s.data());
    double *dX, *dy_; int32_t *dl;
    cudaMalloc(&dX, X.size() * 8); cudaMemcpy(dX, X.data(), X.size() * 8, cudaMemcpyHostToDevice);
    cudaMalloc(&dl, 8); cudaMemcpy(dl, y.data(), 8, cudaMemcpyHostToDevice); (void)dy_;
    hpdl_cnn_forward(&c, batch, X.data(), 1); hpdl_cnn_forward(&d, batch, dX, 1);
    hpdl_cnn_backward(&c, batch, X.data(), y.data()); hpdl_cnn_backward(&d, batch, dX, dl);
    cudaDeviceSynchronize();
    for (int i = 0; i < net.n_layers; i++) {
        size_t n = (size_t)batch * net.out[i].c * net.out[i].h * net.out[i].w;
        printf("layer %2d op %d in %2d  %3dx%2dx%2d  act %.3g  dact %.3g", i, net.layer[i].op, net.layer[i].input,
               net.out[i].c, net.out[i].h, net.out[i].w, diff(c.act[i], d.act[i], n), diff(c.dact[i], d.dact[i], n));
        if (net.weight_at[i] >= 0) {
            int64_t next = net.param_count; /* the next layer's parameters start there */
            for (int j = i + 1; j < net.n_layers; j++)
                if (net.weight_at[j] >= 0) { next = net.weight_at[j]; break; }
            int64_t count = next - net.weight_at[i];
            printf("  dW+db %.3g", diff((double *)c.grads + net.weight_at[i], (double *)d.grads + net.weight_at[i], (size_t)count));
        }
        printf("\n");
    }
    return 0;
}
