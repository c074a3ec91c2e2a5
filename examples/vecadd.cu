/* vecadd - the CUDA workflow in six steps, on c = a + b.

     1. allocate host memory        4. launch the kernel
     2. allocate device memory      5. copy the result device -> host
     3. copy inputs host -> device  6. free device and host memory

   The GPU result is checked against the CPU (hpdl_vec_add_f32 in hpdl.h).

   build:  make build/examples/vecadd        (or: nvcc -O3 -I. examples/vecadd.cu -o vecadd -lcublas)
   run:    build/examples/vecadd [n [config]]     (or --n N --config C)
           n: elements (default 10000000); config: 0 one thread, 1 one block,
           2 many blocks (default), 3 grid-stride. Exit code 1 on a wrong result.
           --help, --version */
#include "hpdl_cuda.cuh"

int main(int argc, char **argv) {
    int64_t n = 10000000;
    int which = HPDL_VECADD_MANY_BLOCKS;
    hpdl_vecadd_config config;
    size_t bytes;
    float *a, *b, *c, *expected;       /* host (CPU) memory */
    float *d_a, *d_b, *d_c;            /* device (GPU) memory */
    hpdl_cuda_timer timer;
    hpdl_rng rng;
    int64_t i, wrong = 0;
    float kernel_ms;
    hpdl_cli_option opts[2];

    opts[0] = hpdl_cli_positional(hpdl_cli_i64("n", 0, &n, 1, (int64_t)1 << 40, "elements"));
    opts[1] = hpdl_cli_positional(hpdl_cli_int("config", 0, &which, 0, HPDL_VECADD_CONFIG_COUNT - 1,
                                               "0 one thread, 1 one block, 2 many blocks, 3 grid-stride"));
    hpdl_cli_parse(argc, argv, "vecadd", "c = a + b on the GPU, checked against the CPU.", opts, 2);
    config = (hpdl_vecadd_config)which;
    bytes = (size_t)n * sizeof(float);
    if (!hpdl_cuda_available()) {
        printf("vecadd: no CUDA GPU found, nothing to run\n");
        return 0;
    }

    /* 1. Allocate host memory and fill the inputs with random numbers. */
    a = (float *)hpdl_alloc((size_t)n, sizeof(float));
    b = (float *)hpdl_alloc((size_t)n, sizeof(float));
    c = (float *)hpdl_alloc((size_t)n, sizeof(float));
    expected = (float *)hpdl_alloc((size_t)n, sizeof(float));
    if (!a || !b || !c || !expected) {
        fprintf(stderr, "vecadd: out of host memory for %lld elements\n", (long long)n);
        return 1;
    }
    hpdl_rng_seed(&rng, 2026);
    for (i = 0; i < n; i++) {
        a[i] = (float)hpdl_rng_uniform(&rng);
        b[i] = (float)hpdl_rng_uniform(&rng);
    }

    /* 2. Allocate device memory: the GPU cannot read the host arrays directly. */
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_a, bytes));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_b, bytes));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_c, bytes));

    /* 3. Copy the inputs from host to device. */
    HPDL_CUDA_CHECK(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice));

    /* 4. Launch the kernel. For "many blocks" the launcher runs
          kernel<<<(n + 255) / 256, 256>>>(n, d_a, d_b, d_c): one thread per
          element. Launches are asynchronous: the timer's stop waits for it.
          This first launch also loads the kernel onto the GPU, so its time is
          not the kernel's speed: build/bench/vecadd measures that properly. */
    HPDL_CHECK(hpdl_cuda_timer_create(&timer, 0));
    hpdl_cuda_timer_start(&timer);
    HPDL_CHECK(hpdl_cuda_vec_add_f32(config, n, d_a, d_b, d_c, 0));
    kernel_ms = hpdl_cuda_timer_stop_ms(&timer);
    HPDL_CUDA_CHECK(cudaGetLastError());

    /* 5. Copy the result from device to host (this waits for the kernel). */
    HPDL_CUDA_CHECK(cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost));

    /* Check against the CPU: float addition is exact IEEE on both sides. */
    HPDL_CHECK(hpdl_vec_add_f32(n, a, b, expected));
    for (i = 0; i < n; i++)
        if (c[i] != expected[i]) wrong++;
    printf("vecadd: %lld elements, %s: kernel %.3f ms, %lld wrong\n", (long long)n,
           hpdl_vecadd_config_name(config), kernel_ms, (long long)wrong);

    /* 6. Free device memory, then host memory. */
    hpdl_cuda_timer_destroy(&timer);
    HPDL_CUDA_CHECK(cudaFree(d_a));
    HPDL_CUDA_CHECK(cudaFree(d_b));
    HPDL_CUDA_CHECK(cudaFree(d_c));
    HPDL_FREE(a);
    HPDL_FREE(b);
    HPDL_FREE(c);
    HPDL_FREE(expected);
    return wrong ? 1 : 0;
}
