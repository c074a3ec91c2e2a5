/* examples/model_parallel: a deep stack of linear layers split over every
   GPU, trained naively (one device busy at a time) and pipelined (GPipe),
   with one micro-batch and with m.

   usage: model_parallel [DEPTH=8] [DIM=4096] [batch=512] [m=8]
          (or --depth --dim --batch --micro; --help, --version)

   The layers are split evenly (hpdl_place_even); activations cross to the
   next GPU forward and gradients cross back, peer to peer where the GPUs
   allow it. With m micro-batches each GPU works on one slice while the
   next GPU works on the previous one; the idle "bubble" is (G-1)/(m+G-1).
   Naive runs the devices strictly one after another (idle (G-1)/G); the
   pipelined schedule defers the weight gradients, so even with m = 1 the
   last device's weight gradients overlap the previous device's backward.
       nvcc -O3 -arch=native -I. examples/model_parallel.cu -lcublas */
#include "hpdl_cuda.cuh"

/* Mean milliseconds of `steps` SGD steps after 3 warm-up steps. */
static double time_steps(hpdl_cuda_deep_linear *m, int micro, int steps) {
    double t0 = 0.0;
    int i;
    for (i = 0; i < 3 + steps; i++) {
        if (i == 3) { HPDL_CUDA_CHECK(cudaDeviceSynchronize()); t0 = hpdl_time_now(); }
        HPDL_CHECK(hpdl_cuda_deep_linear_step(m, micro, 1e-4f, 0));
    }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    return (hpdl_time_now() - t0) * 1e3 / steps;
}

int main(int argc, char **argv) {
    int depth = 8, dim = 4096, batch = 512, pipe_m = 8;
    int gpus, first[HPDL_CUDA_MAX_DEVICES + 1], g, k, micro[3];
    hpdl_cuda_deep_linear model;
    hpdl_cli_option opts[4];
    opts[0] = hpdl_cli_positional(hpdl_cli_int("depth", 0, &depth, 1, 1 << 16, "linear layers"));
    opts[1] = hpdl_cli_positional(hpdl_cli_int("dim", 0, &dim, 1, 1 << 16, "width of every layer"));
    opts[2] = hpdl_cli_positional(hpdl_cli_int("batch", 0, &batch, 1, 1 << 20, "rows per step"));
    opts[3] = hpdl_cli_positional(hpdl_cli_int("micro", 0, &pipe_m, 1, 1 << 20, "m, micro-batches of the pipeline"));
    hpdl_cli_parse(argc, argv, "model_parallel", "Linear layers split over every GPU, naive and pipelined.", opts, 4);
    if (pipe_m > batch) {
        fprintf(stderr, "model_parallel: --micro %d is more than --batch %d\n", pipe_m, batch);
        return 2;
    }
    if (!hpdl_cuda_available()) { printf("no GPU\n"); return 0; }
    HPDL_CHECK(hpdl_cuda_devices_print(stdout));
    gpus = hpdl_cuda_device_count();
    if (gpus > depth) gpus = depth;
    HPDL_CHECK(hpdl_place_even(depth, gpus, first));
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&model, depth, dim, batch, first, gpus, 0));
    HPDL_CHECK(hpdl_cuda_deep_linear_init(&model, 1));
    HPDL_CHECK(hpdl_cuda_deep_linear_random_batch(&model, 2));
    printf("DEPTH %d layers of %d x %d, batch %d, on %d GPU%s:\n", depth, dim, dim, batch, gpus, gpus > 1 ? "s" : "");
    hpdl_cuda_deep_linear_print_map(&model, stdout);
    micro[0] = HPDL_DL_NAIVE;
    micro[1] = 1;
    micro[2] = pipe_m;
    for (k = 0; k < 3; k++) {
        int slices = hpdl_cuda_deep_linear_slices(micro[k]);
        double ms = time_steps(&model, micro[k], 10), step_ms = 0.0, busy[HPDL_CUDA_MAX_DEVICES], idle = 0.0;
        float loss;
        HPDL_CHECK(hpdl_cuda_deep_linear_profile(&model, micro[k], 1e-4f, &step_ms, busy));
        HPDL_CHECK(hpdl_cuda_deep_linear_loss(&model, &loss));
        for (g = 0; g < gpus; g++) idle += (1.0 - busy[g] / step_ms) / gpus;
        printf("%-9s m = %2d: %.2f ms a step, loss %.4f, %lld transfers (%.1f MiB) forward, idle %.2f (bubble %.2f)\n",
               k ? "pipelined" : "naive", slices, ms, loss, model.fwd.transfers, model.fwd.bytes / 1048576.0, idle,
               (double)(gpus - 1) / (slices + gpus - 1));
    }
    for (g = 0; g < gpus; g++) {
        size_t used = 0, total = 0;
        HPDL_CHECK(hpdl_cuda_mem_in_use(model.lanes.dev.physical[g], &used, &total));
        printf("GPU %d: %.2f GiB in use of %.1f GiB (the model holds %.2f GiB)\n", g, used / 1073741824.0,
               total / 1073741824.0, model.bytes[g] / 1073741824.0);
    }
    hpdl_cuda_deep_linear_destroy(&model);
    return 0;
}
