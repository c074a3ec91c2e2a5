/* GPU tests of the vector add family (hpdl_cuda_vec_add_<type>, four launch
   configurations) against its CPU twin hpdl_vec_add_<type>, and of the
   managed-memory and timing helpers. Every test skips without a GPU.

   The grid-stride configuration (d) is built here with a one-wave grid, so
   that its loop goes round many times at test lengths; by default its grid
   only differs in size (bench/vecadd validates that at 100M for every type). */
#define HPDL_VECADD_WAVES 1
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

#define NO_GPU_SKIP() do { if (!hpdl_cuda_available()) HPDL_SKIP("no CUDA GPU"); } while (0)

/* Lengths that are not multiples of a block or a 16-byte pack; 5000011 makes
   the grid-stride loop go round more than once for every type. */
static const int64_t test_lengths[] = {0, 1, 255, 257, 1000003, 5000011};

/* One GPU thread over 5M elements is slow; under compute-sanitizer
   (HPDL_TEST_SMALL=1, scripts/gpu_sanitize.sh) over 1M it takes minutes. */
static int64_t one_thread_max_length(void) { return getenv("HPDL_TEST_SMALL") ? 257 : 1000003; }

/* Offsets (in elements) of a, b, c from their 256-byte aligned allocations:
   aligned, all misaligned, and misaligned differently (vector path falls back). */
static const int test_offsets[][3] = {{0, 0, 0}, {1, 1, 1}, {0, 1, 0}, {0, 0, 1}};

/* One struct per element type: conversions and the two functions under test. */
#define VECADD_TYPE(SUFFIX, T, FROM_F64, TO_F64, TOL)                                              \
    struct type_##SUFFIX {                                                                         \
        typedef T elem;                                                                            \
        static T from(double x) { return FROM_F64(x); }                                            \
        static double to(T x) { return (double)TO_F64(x); }                                        \
        static double tol() { return TOL; }                                                        \
        static hpdl_status cpu(int64_t n, const T *a, const T *b, T *c) {                          \
            return hpdl_vec_add_##SUFFIX(n, a, b, c);                                              \
        }                                                                                          \
        static hpdl_status gpu(hpdl_vecadd_config g, int64_t n, const T *a, const T *b, T *c,      \
                               cudaStream_t s) {                                                   \
            return hpdl_cuda_vec_add(g, n, a, b, c, s);                                            \
        }                                                                                          \
    };
#define FROM_F64_F32(x) ((float)(x))
#define FROM_F64_F64(x) (x)
#define FROM_F64_F16(x) hpdl_f16_from_f32((float)(x))
#define FROM_F64_BF16(x) hpdl_bf16_from_f32((float)(x))
VECADD_TYPE(f32, float, FROM_F64_F32, HPDL_LOAD_SELF, 1e-6)
VECADD_TYPE(f64, double, FROM_F64_F64, HPDL_LOAD_SELF, 1e-12)
VECADD_TYPE(f16, hpdl_f16, FROM_F64_F16, HPDL_LOAD_F16, 1e-2)
VECADD_TYPE(bf16, hpdl_bf16, FROM_F64_BF16, HPDL_LOAD_BF16, 1e-2)

template <class Ty>
static void fill_random(typename Ty::elem *x, int64_t n, hpdl_rng *rng) {
    int64_t i;
    for (i = 0; i < n; i++) x[i] = Ty::from(20.0 * hpdl_rng_uniform(rng) - 10.0);
}

/* Counts elements of got that differ from want beyond the type's tolerance
   (NaN, e.g. a poisoned element nobody wrote, always differs). */
template <class Ty>
static int64_t count_mismatches(const typename Ty::elem *got, const typename Ty::elem *want, int64_t n) {
    int64_t i, bad = 0;
    for (i = 0; i < n; i++) {
        double g = Ty::to(got[i]), w = Ty::to(want[i]);
        if (!(fabs(g - w) <= Ty::tol() * (fabs(w) > 1.0 ? fabs(w) : 1.0))) bad++;
    }
    return bad;
}

static int is_poison(const void *p, size_t bytes) {
    const unsigned char *u = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < bytes; i++)
        if (u[i] != 0xff) return 0;
    return 1;
}

/* Runs cfg on n random elements at the given element offsets into device
   buffers with a guard element either side, c poisoned first. Checks the
   result against the CPU twin and that nothing outside c[0..n) was written. */
template <class Ty>
static void check_config(hpdl_vecadd_config cfg, int64_t n, const int *offset, hpdl_rng *rng) {
    typedef typename Ty::elem T;
    size_t total = (size_t)n + 2, bytes = total * sizeof(T);
    T *a = (T *)hpdl_alloc(total, sizeof(T)), *b = (T *)hpdl_alloc(total, sizeof(T));
    T *want = (T *)hpdl_alloc(total, sizeof(T)), *got = (T *)hpdl_alloc(total, sizeof(T));
    T *d_a = NULL, *d_b = NULL, *d_c = NULL;
    int64_t bad;
    HPDL_EXPECT(a && b && want && got);
    if (!a || !b || !want || !got) goto done;
    HPDL_EXPECT(hpdl_cuda_alloc((void **)&d_a, bytes) == HPDL_OK && hpdl_cuda_alloc((void **)&d_b, bytes) == HPDL_OK &&
                hpdl_cuda_alloc((void **)&d_c, bytes) == HPDL_OK);
    fill_random<Ty>(a, (int64_t)total, rng);
    fill_random<Ty>(b, (int64_t)total, rng);
    HPDL_EXPECT(Ty::cpu(n, a + offset[0], b + offset[1], want) == HPDL_OK);
    HPDL_EXPECT(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    HPDL_EXPECT(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    HPDL_EXPECT(hpdl_cuda_poison(d_c, bytes) == HPDL_OK);
    HPDL_EXPECT(Ty::gpu(cfg, n, d_a + offset[0], d_b + offset[1], d_c + offset[2], 0) == HPDL_OK);
    HPDL_EXPECT(cudaMemcpy(got, d_c, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    bad = count_mismatches<Ty>(got + offset[2], want, n);
    HPDL_EXPECT(bad == 0);
    HPDL_EXPECT(is_poison(got, (size_t)offset[2] * sizeof(T)));
    HPDL_EXPECT(is_poison(got + offset[2] + n, (total - (size_t)offset[2] - (size_t)n) * sizeof(T)));
    if (bad) fprintf(stderr, "    %s n=%lld offsets %d,%d,%d: %lld wrong\n", hpdl_vecadd_config_name(cfg),
                     (long long)n, offset[0], offset[1], offset[2], (long long)bad);
done:
    hpdl_cuda_free(d_a);
    hpdl_cuda_free(d_b);
    hpdl_cuda_free(d_c);
    HPDL_FREE(a);
    HPDL_FREE(b);
    HPDL_FREE(want);
    HPDL_FREE(got);
}

/* Every configuration x length x offset pattern for one type. */
template <class Ty>
static void check_all_configs(uint64_t seed) {
    hpdl_rng rng;
    int cfg, l, o;
    hpdl_rng_seed(&rng, seed);
    for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++)
        for (l = 0; l < HPDL_COUNT(test_lengths); l++)
            for (o = 0; o < HPDL_COUNT(test_offsets); o++) {
                if (cfg == HPDL_VECADD_ONE_THREAD && test_lengths[l] > one_thread_max_length()) continue;
                check_config<Ty>((hpdl_vecadd_config)cfg, test_lengths[l], test_offsets[o], &rng);
            }
    HPDL_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
}

static void test_vecadd_f32(void) { NO_GPU_SKIP(); check_all_configs<type_f32>(11); }
static void test_vecadd_f64(void) { NO_GPU_SKIP(); check_all_configs<type_f64>(12); }
static void test_vecadd_f16(void) { NO_GPU_SKIP(); check_all_configs<type_f16>(13); }
static void test_vecadd_bf16(void) { NO_GPU_SKIP(); check_all_configs<type_bf16>(14); }

/* c = a (in place) on a non-default stream. */
static void test_vecadd_in_place_on_stream(void) {
    const int64_t n = 1000003;
    size_t bytes = (size_t)n * sizeof(float);
    float *a, *b, *want, *d_a = NULL, *d_b = NULL;
    cudaStream_t stream;
    hpdl_rng rng;
    int cfg;
    NO_GPU_SKIP();
    a = (float *)hpdl_alloc((size_t)n, sizeof(float));
    b = (float *)hpdl_alloc((size_t)n, sizeof(float));
    want = (float *)hpdl_alloc((size_t)n, sizeof(float));
    HPDL_EXPECT(a && b && want && cudaStreamCreate(&stream) == cudaSuccess);
    if (!a || !b || !want) goto done;
    hpdl_rng_seed(&rng, 21);
    fill_random<type_f32>(b, n, &rng);
    HPDL_EXPECT(hpdl_cuda_alloc((void **)&d_a, bytes) == HPDL_OK && hpdl_cuda_alloc((void **)&d_b, bytes) == HPDL_OK);
    HPDL_EXPECT(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    for (cfg = HPDL_VECADD_ONE_BLOCK; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++) {
        fill_random<type_f32>(a, n, &rng);
        HPDL_EXPECT(hpdl_vec_add_f32(n, a, b, want) == HPDL_OK);
        HPDL_EXPECT(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
        HPDL_EXPECT(hpdl_cuda_vec_add_f32((hpdl_vecadd_config)cfg, n, d_a, d_b, d_a, stream) == HPDL_OK);
        HPDL_EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);
        HPDL_EXPECT(cudaMemcpy(a, d_a, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        HPDL_EXPECT(count_mismatches<type_f32>(a, want, n) == 0);
    }
    cudaStreamDestroy(stream);
done:
    hpdl_cuda_free(d_a);
    hpdl_cuda_free(d_b);
    HPDL_FREE(a);
    HPDL_FREE(b);
    HPDL_FREE(want);
}

/* Bad arguments return HPDL_ERR_INVALID and launch nothing: c keeps its
   bytes and no launch error is pending. */
static void test_vecadd_bad_args(void) {
    const int64_t n = 1000;
    float host[1000], after[1000], *d_a = NULL, *d_c = NULL;
    hpdl_f16 *h16 = NULL;
    hpdl_rng rng;
    int cfg;
    NO_GPU_SKIP();
    hpdl_rng_seed(&rng, 31);
    fill_random<type_f32>(host, n, &rng);
    HPDL_EXPECT(hpdl_cuda_alloc((void **)&d_a, sizeof host) == HPDL_OK && hpdl_cuda_alloc((void **)&d_c, sizeof host) == HPDL_OK);
    HPDL_EXPECT(cudaMemcpy(d_a, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
    HPDL_EXPECT(cudaMemcpy(d_c, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
    for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++) {
        hpdl_vecadd_config g = (hpdl_vecadd_config)cfg;
        HPDL_EXPECT(hpdl_cuda_vec_add_f32(g, n, NULL, d_a, d_c, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_vec_add_f32(g, n, d_a, NULL, d_c, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_vec_add_f32(g, n, d_a, d_a, NULL, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_vec_add_f32(g, -1, d_a, d_a, d_c, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_vec_add_f16(g, n, h16, h16, (hpdl_f16 *)d_c, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_vec_add_f32(g, 0, NULL, NULL, NULL, 0) == HPDL_OK); /* nothing to do */
    }
    HPDL_EXPECT(hpdl_cuda_vec_add_f32((hpdl_vecadd_config)HPDL_VECADD_CONFIG_COUNT, n, d_a, d_a, d_c, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_vec_add_f64((hpdl_vecadd_config)-1, n / 2, (double *)d_a, (double *)d_a, (double *)d_c, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess);
    HPDL_EXPECT(cudaMemcpy(after, d_c, sizeof after, cudaMemcpyDeviceToHost) == cudaSuccess);
    HPDL_EXPECT(memcmp(after, host, sizeof host) == 0);
    hpdl_cuda_free(d_a);
    hpdl_cuda_free(d_c);
}

static void test_vecadd_config_names(void) {
    int i, j;
    for (i = 0; i < HPDL_VECADD_CONFIG_COUNT; i++) {
        const char *name = hpdl_vecadd_config_name((hpdl_vecadd_config)i);
        HPDL_EXPECT(strcmp(name, "unknown") != 0);
        for (j = 0; j < i; j++) HPDL_EXPECT(strcmp(name, hpdl_vecadd_config_name((hpdl_vecadd_config)j)) != 0);
    }
    HPDL_EXPECT(strcmp(hpdl_vecadd_config_name((hpdl_vecadd_config)HPDL_VECADD_CONFIG_COUNT), "unknown") == 0);
}

/* Managed buffers written on the host, prefetched to the GPU, added there,
   prefetched back and read on the host. */
static void test_managed_prefetch_vecadd(void) {
    const int64_t n = 1000003;
    size_t bytes = (size_t)n * sizeof(float);
    float *a = NULL, *b = NULL, *c = NULL, *want;
    hpdl_status pf;
    hpdl_rng rng;
    NO_GPU_SKIP();
    want = (float *)hpdl_alloc((size_t)n, sizeof(float));
    HPDL_EXPECT(want != NULL);
    HPDL_EXPECT(hpdl_cuda_alloc_managed((void **)&a, bytes) == HPDL_OK && hpdl_cuda_alloc_managed((void **)&b, bytes) == HPDL_OK &&
                hpdl_cuda_alloc_managed((void **)&c, bytes) == HPDL_OK);
    if (!a || !b || !c || !want) goto done;
    hpdl_rng_seed(&rng, 41);
    fill_random<type_f32>(a, n, &rng);
    fill_random<type_f32>(b, n, &rng);
    memset(c, 0xff, bytes);
    HPDL_EXPECT(hpdl_vec_add_f32(n, a, b, want) == HPDL_OK);
    pf = hpdl_cuda_prefetch(a, bytes, 0, 0);
    HPDL_EXPECT(pf == HPDL_OK || pf == HPDL_ERR_UNSUPPORTED);
    if (pf == HPDL_OK) {
        HPDL_EXPECT(hpdl_cuda_prefetch(b, bytes, 0, 0) == HPDL_OK);
        HPDL_EXPECT(hpdl_cuda_prefetch(c, bytes, 0, 0) == HPDL_OK);
    }
    HPDL_EXPECT(hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, n, a, b, c, 0) == HPDL_OK);
    if (pf == HPDL_OK) HPDL_EXPECT(hpdl_cuda_prefetch(c, bytes, cudaCpuDeviceId, 0) == HPDL_OK);
    HPDL_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
    HPDL_EXPECT(count_mismatches<type_f32>(c, want, n) == 0);
done:
    hpdl_cuda_free(a);
    hpdl_cuda_free(b);
    hpdl_cuda_free(c);
    HPDL_FREE(want);
}

static void test_managed_bad_args_and_refusal(void) {
    hpdl_cuda_device_info info;
    void *p = &info;
    int count = 0;
    NO_GPU_SKIP();
    HPDL_EXPECT(hpdl_cuda_device_query(0, &info) == HPDL_OK && cudaGetDeviceCount(&count) == cudaSuccess);
    HPDL_EXPECT(hpdl_cuda_alloc_managed(NULL, 16) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_alloc_managed(&p, 0) == HPDL_OK && p == NULL);
    p = &info;
    HPDL_EXPECT(hpdl_cuda_alloc_managed(&p, info.global_mem) == HPDL_ERR_NOMEM && p == NULL); /* > free - margin */
    HPDL_EXPECT(hpdl_cuda_prefetch(NULL, 16, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_prefetch(&info, 16, count, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_prefetch(&info, 16, -2, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_prefetch(NULL, 0, 0, 0) == HPDL_OK);
}

/* A run whose host side takes 2 ms before it queues a 1000-element add. */
typedef struct slow_host_run { float *a, *b, *c; } slow_host_run;
static void run_after_host_work(void *ctx, cudaStream_t stream) {
    slow_host_run *r = (slow_host_run *)ctx;
    const double until = hpdl_time_now() + 2e-3;
    while (hpdl_time_now() < until) {
    }
    hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, 1000, r->a, r->b, r->c, stream);
}

/* The three zeroed 1000-element vectors of a timed add (0 when no memory). */
static int slow_host_run_create(slow_host_run *r) {
    HPDL_EXPECT(hpdl_cuda_alloc((void **)&r->a, 3000 * sizeof(float)) == HPDL_OK);
    if (!r->a) return 0;
    r->b = r->a + 1000, r->c = r->a + 2000;
    HPDL_EXPECT(cudaMemset(r->a, 0, 3000 * sizeof(float)) == cudaSuccess);
    return 1;
}

/* The timing helpers measure the GPU's work, not the host's queueing: the
   runs start once all are queued. Timed as queued, each interval would hold
   the host's 2 ms (the GPU reaches the first event, then waits). */
static void test_timing_leaves_host_time_out(void) {
    slow_host_run r = {NULL, NULL, NULL};
    double ms = -1;
    NO_GPU_SKIP();
    if (!slow_host_run_create(&r)) return;
    HPDL_EXPECT(hpdl_cuda_time_median_ms(run_after_host_work, &r, 0, 1, 20, NULL, &ms) == HPDL_OK);
    HPDL_EXPECT(ms >= 0 && ms < 0.5);
    hpdl_cuda_free(r.a);
}

/* A run that waits for the whole GPU before it queues its add. */
static void run_after_device_sync(void *ctx, cudaStream_t stream) {
    slow_host_run *r = (slow_host_run *)ctx;
    cudaDeviceSynchronize();
    hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, 1000, r->a, r->b, r->c, stream);
}

/* Such a run waits behind the gate that its own queueing is to open: the
   gate gives up after its limit (0.2 s), so the timing ends and says OK. */
static void test_timing_survives_a_synchronising_run(void) {
    slow_host_run r = {NULL, NULL, NULL};
    double ms = -1, t0;
    NO_GPU_SKIP();
    if (!slow_host_run_create(&r)) return;
    t0 = hpdl_time_now();
    HPDL_EXPECT(hpdl_cuda_time_median_ms(run_after_device_sync, &r, 0, 1, 5, NULL, &ms) == HPDL_OK);
    HPDL_EXPECT(ms >= 0 && hpdl_time_now() - t0 < 2.0);
    hpdl_cuda_free(r.a);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_vecadd_config_names),
        HPDL_TEST(test_vecadd_f32),
        HPDL_TEST(test_vecadd_f64),
        HPDL_TEST(test_vecadd_f16),
        HPDL_TEST(test_vecadd_bf16),
        HPDL_TEST(test_vecadd_in_place_on_stream),
        HPDL_TEST(test_vecadd_bad_args),
        HPDL_TEST(test_managed_prefetch_vecadd),
        HPDL_TEST(test_managed_bad_args_and_refusal),
        HPDL_TEST(test_timing_leaves_host_time_out),
        HPDL_TEST(test_timing_survives_a_synchronising_run),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
