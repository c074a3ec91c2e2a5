/* examples/matpow: A^n + B^n for N x N matrices on one GPU and on every GPU.

   usage: matpow [N=10000] [n=10]      (or --n N --power n; --help, --version)

   Each matrix's power is computed by repeated squaring (A^10 = A^8 A^2: 3
   squarings and 1 product instead of 9 products) on its own GPU, and the
   two powers are summed on GPU 0 over a peer-to-peer copy. The inputs are
   uploaded once; the times cover the powers and the sum.
       nvcc -O3 -arch=native -I. examples/matpow.cu -lcublas */
#include "hpdl_cuda.cuh"

/* Seconds for one sum of powers (the plan's inputs already on the GPUs). */
static double time_sum(hpdl_cuda_powsum *plan) {
    double t0;
    HPDL_CHECK(hpdl_cuda_powsum_run_f32(plan, 0, HPDL_GEMM_CUBLAS, plan->lanes.stream[0])); /* warm-up */
    HPDL_CUDA_CHECK(cudaStreamSynchronize(plan->lanes.stream[0]));
    t0 = hpdl_time_now();
    HPDL_CHECK(hpdl_cuda_powsum_run_f32(plan, 0, HPDL_GEMM_CUBLAS, plan->lanes.stream[0]));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(plan->lanes.stream[0]));
    return hpdl_time_now() - t0;
}

int main(int argc, char **argv) {
    int n = 10000, power = 10, gpus, run, j;
    size_t i, nn;
    float *mats[2], *result[2];
    double seconds[2], diff = 0.0, norm = 0.0, scale;
    hpdl_rng rng;
    hpdl_cli_option opts[2];
    opts[0] = hpdl_cli_positional(hpdl_cli_int("n", 0, &n, 1, 1 << 16, "matrix size N (N x N)"));
    opts[1] = hpdl_cli_positional(hpdl_cli_int("power", 0, &power, 0, 1 << 20, "the power n"));
    hpdl_cli_parse(argc, argv, "matpow", "A^n + B^n for N x N matrices on one GPU and on every GPU.", opts, 2);
    nn = (size_t)n * n;
    scale = sqrt(3.0 / n);
    if (!hpdl_cuda_available()) { printf("no GPU\n"); return 0; }
    HPDL_CHECK(hpdl_cuda_devices_print(stdout));
    gpus = hpdl_cuda_device_count() < 2 ? 1 : 2; /* one matrix per GPU */
    hpdl_rng_seed(&rng, 1);
    for (j = 0; j < 2; j++) { /* entries in +-sqrt(3/N): the powers stay O(1) */
        mats[j] = (float *)hpdl_alloc(nn, sizeof(float));
        result[j] = (float *)hpdl_alloc(nn, sizeof(float));
        if (!mats[j] || !result[j]) { fprintf(stderr, "out of memory\n"); return EXIT_FAILURE; }
        for (i = 0; i < nn; i++) mats[j][i] = (float)(scale * (2.0 * hpdl_rng_uniform(&rng) - 1.0));
    }
    for (run = 0; run < 2; run++) {
        hpdl_cuda_powsum plan;
        HPDL_CHECK(hpdl_cuda_powsum_create_f32(&plan, 2, n, power, run ? gpus : 1, 0));
        HPDL_CHECK(hpdl_cuda_powsum_upload_f32(&plan, (const float *const *)mats));
        seconds[run] = time_sum(&plan);
        HPDL_CHECK(hpdl_cuda_powsum_download_f32(&plan, result[run]));
        hpdl_cuda_powsum_destroy(&plan);
        printf("A^%d + B^%d, N = %d, on %d GPU%s: %.4f s\n", power, power, n, run ? gpus : 1, run && gpus > 1 ? "s" : "",
               seconds[run]);
    }
    for (i = 0; i < nn; i++) {
        diff += ((double)result[1][i] - result[0][i]) * ((double)result[1][i] - result[0][i]);
        norm += (double)result[0][i] * result[0][i];
    }
    printf("speedup %.2fx; results agree to %.1e (relative)\n", seconds[0] / seconds[1], sqrt(diff / norm));
    for (j = 0; j < 2; j++) { HPDL_FREE(mats[j]); HPDL_FREE(result[j]); }
    return 0;
}
