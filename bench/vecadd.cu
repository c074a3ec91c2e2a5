/* bench/vecadd - c = a + b on K = 1, 5, 10, 50, 100 million floats.

   In one run: the CPU (hpdl_vec_add_f32); each GPU launch configuration's
   kernel time (CUDA events, median, L2 flushed) and whole-program time
   (copy a and b in, launch, copy c out; host clock, pageable and pinned host
   memory); unified memory without and with prefetching (first-touch
   migration included); the grid-stride kernel for f64/f16/bf16 at the
   largest K; the device-to-device copy as the bandwidth ceiling; and
   torch.add when bench/pytorch/vecadd.py can import torch. Every variant is
   checked against the CPU before it is timed.

   Output: a table on stdout; <HPDL_RESULTS>/vecadd.csv (headline first:
   grid-stride f32 at K=100M in GB/s, bytes read + written = 3*4*K, against the
   D2D copy) and vecadd_times.csv (config,memory,K_million,kernel_ms,total_ms)
   for bench/plots/vecadd.gp.

   build: make build/bench/vecadd    run: HPDL_RESULTS=dir build/bench/vecadd
   flags: --seed S (random inputs) [2026], --output DIR (before HPDL_RESULTS), --help, --version */
#include "hpdl_cuda.cuh"

#define NK 5
static const int64_t k_million[NK] = {1, 5, 10, 50, 100};
#define ONE_THREAD_MAX_N 10000000 /* one GPU thread over 50M elements takes minutes */
#define MEASURE_BUDGET_MS 250.0   /* repetitions per measurement: about this long */
#define TORCH_SCRIPT "bench/pytorch/vecadd.py"

typedef enum memory_kind { MEM_PAGEABLE, MEM_PINNED, MEM_MANAGED, MEM_PREFETCH, MEM_KINDS } memory_kind;
static const char *memory_name[MEM_KINDS] = {"pageable", "pinned", "managed", "managed_prefetch"};

typedef struct results {
    double cpu_ms[NK];
    double kernel_ms[HPDL_VECADD_CONFIG_COUNT][NK];            /* NAN: not measured */
    double total_ms[HPDL_VECADD_CONFIG_COUNT][MEM_KINDS][NK];  /* NAN: not measured */
    double copy_gbs;                                           /* D2D cudaMemcpy, read + write */
    double type_gbs[3];                                        /* grid-stride f64, f16, bf16 */
    double torch_gbs;                                          /* 0: not run */
} results;

typedef struct buffers {
    int64_t max_n;
    float *a, *b, *c, *ref;  /* pageable host memory; ref = CPU result */
    float *pa, *pb, *pc;     /* pinned host memory */
    void *da, *db, *dc;      /* device memory, max_n doubles each (also used as floats) */
    float *ma, *mb, *mc;     /* managed memory, one allocation */
} buffers;

static void fail(const char *what) {
    fprintf(stderr, "vecadd bench: %s\n", what);
    exit(EXIT_FAILURE);
}

static double bw_gbs(int64_t n, size_t elem, double ms) { return 3.0 * (double)n * (double)elem / (ms * 1e6); }

/* ---- checking -------------------------------------------------------------- */

static double f32_to_f64(float x) { return x; }
static double f64_same(double x) { return x; }
static double f16_to_f64(hpdl_f16 x) { return hpdl_f16_to_f32(x); }
static double bf16_to_f64(hpdl_bf16 x) { return hpdl_bf16_to_f32(x); }

/* Stops the bench unless got equals want within tol (relative above 1). */
template <class T>
static void check(const char *what, const T *got, const T *want, int64_t n, double (*to_f64)(T), double tol) {
    int64_t i;
    for (i = 0; i < n; i++) {
        double g = to_f64(got[i]), w = to_f64(want[i]);
        if (!(fabs(g - w) <= tol * (fabs(w) > 1.0 ? fabs(w) : 1.0))) {
            fprintf(stderr, "vecadd bench: %s wrong at %lld of %lld: %g, want %g\n", what, (long long)i,
                    (long long)n, g, w);
            exit(EXIT_FAILURE);
        }
    }
}

/* ---- work items for hpdl_cuda_time_median_ms ---------------------------------------- */

template <class T>
struct add_job {
    hpdl_status (*add)(hpdl_vecadd_config, int64_t, const T *, const T *, T *, cudaStream_t);
    hpdl_vecadd_config cfg;
    int64_t n;
    const T *a, *b;
    T *c;
};

template <class T>
static void run_add(void *p, cudaStream_t s) {
    add_job<T> *j = (add_job<T> *)p;
    HPDL_CHECK(j->add(j->cfg, j->n, j->a, j->b, j->c, s));
}

typedef struct copy_job { void *dst; const void *src; size_t bytes; } copy_job;

static void run_copy(void *p, cudaStream_t s) {
    copy_job *j = (copy_job *)p;
    HPDL_CUDA_CHECK(cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, s));
}

/* Repetitions so that one measurement takes about MEASURE_BUDGET_MS. */
static int reps_for(double est_ms, int most) {
    int r = est_ms > 0.0 ? (int)(MEASURE_BUDGET_MS / est_ms) : most;
    return r < 1 ? 1 : r > most ? most : r;
}

/* Validates one run of the job against want (its time, ms, is the estimate),
   then returns the kernel's median time over warm, L2-flushed runs. */
template <class T>
static double time_kernel(add_job<T> *job, const T *want, T *host_out, double (*to_f64)(T), double tol,
                          hpdl_cuda_l2_flusher *flush) {
    hpdl_cuda_timer t;
    double est, ms = 0.0; /* set by the timing call (HPDL_CHECK exits otherwise) */
    int reps;
    HPDL_CHECK(hpdl_cuda_poison(job->c, (size_t)job->n * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_timer_create(&t, 0));
    hpdl_cuda_timer_start(&t);
    run_add<T>(job, 0);
    est = hpdl_cuda_timer_stop_ms(&t);
    hpdl_cuda_timer_destroy(&t);
    HPDL_CUDA_CHECK(cudaMemcpy(host_out, job->c, (size_t)job->n * sizeof(T), cudaMemcpyDeviceToHost));
    check<T>(hpdl_vecadd_config_name(job->cfg), host_out, want, job->n, to_f64, tol);
    reps = reps_for(est, 50);
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_add<T>, job, 0, reps > 1 ? 2 : 0, reps, flush, &ms));
    return ms;
}

/* ---- whole-program and unified-memory runs (host clock) ------------------------ */

typedef struct program_run {
    hpdl_vecadd_config cfg;
    int64_t n;
    memory_kind mem;
    const float *a, *b; /* host inputs (pageable or pinned), or managed a, b */
    float *c;           /* host output, or managed c */
    float *da, *db, *dc;
} program_run;

/* Copy a and b in, add, copy c out; returns milliseconds. */
static double run_with_copies(const program_run *r) {
    size_t bytes = (size_t)r->n * sizeof(float);
    double t0 = hpdl_time_now();
    HPDL_CUDA_CHECK(cudaMemcpyAsync(r->da, r->a, bytes, cudaMemcpyHostToDevice, 0));
    HPDL_CUDA_CHECK(cudaMemcpyAsync(r->db, r->b, bytes, cudaMemcpyHostToDevice, 0));
    HPDL_CHECK(hpdl_cuda_vec_add_f32(r->cfg, r->n, r->da, r->db, r->dc, 0));
    HPDL_CUDA_CHECK(cudaMemcpyAsync(r->c, r->dc, bytes, cudaMemcpyDeviceToHost, 0));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(0));
    return (hpdl_time_now() - t0) * 1e3;
}

/* Managed a, b, c start on the host (as after the CPU wrote them); the time
   covers the optional prefetch to the GPU, the kernel with its page faults,
   and the wait for it. */
static double run_managed(const program_run *r) {
    size_t bytes = (size_t)r->n * sizeof(float);
    double t0;
    HPDL_CHECK(hpdl_cuda_prefetch(r->a, bytes, cudaCpuDeviceId, 0));
    HPDL_CHECK(hpdl_cuda_prefetch(r->b, bytes, cudaCpuDeviceId, 0));
    HPDL_CHECK(hpdl_cuda_prefetch(r->c, bytes, cudaCpuDeviceId, 0));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(0));
    t0 = hpdl_time_now();
    if (r->mem == MEM_PREFETCH) {
        HPDL_CHECK(hpdl_cuda_prefetch(r->a, bytes, 0, 0));
        HPDL_CHECK(hpdl_cuda_prefetch(r->b, bytes, 0, 0));
        HPDL_CHECK(hpdl_cuda_prefetch(r->c, bytes, 0, 0));
    }
    HPDL_CHECK(hpdl_cuda_vec_add_f32(r->cfg, r->n, r->a, r->b, r->c, 0));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(0));
    return (hpdl_time_now() - t0) * 1e3;
}

/* Median over repetitions; the first run's output is checked against ref. */
static double time_program(const program_run *r, const float *ref) {
    double (*run)(const program_run *) = r->mem == MEM_MANAGED || r->mem == MEM_PREFETCH ? run_managed : run_with_copies;
    double ms[10];
    hpdl_stats st;
    int i, reps;
    memset(r->c, 0xff, (size_t)r->n * sizeof(float)); /* poison: NaN */
    ms[0] = run(r);
    check<float>(memory_name[r->mem], r->c, ref, r->n, f32_to_f64, 0.0);
    reps = reps_for(ms[0], 5);
    for (i = 1; i < reps; i++) ms[i] = run(r);
    HPDL_CHECK(hpdl_stats_compute(ms, reps, &st));
    return st.median;
}

/* ---- set-up ------------------------------------------------------------------------ */

static void buffers_create(buffers *B, int64_t max_n, hpdl_rng *rng) {
    size_t fb = (size_t)max_n * sizeof(float), db = (size_t)max_n * sizeof(double);
    void *m = NULL;
    int64_t i;
    B->max_n = max_n;
    B->a = (float *)hpdl_alloc((size_t)max_n, sizeof(float));
    B->b = (float *)hpdl_alloc((size_t)max_n, sizeof(float));
    B->c = (float *)hpdl_alloc((size_t)max_n, sizeof(float));
    B->ref = (float *)hpdl_alloc((size_t)max_n, sizeof(float));
    if (!B->a || !B->b || !B->c || !B->ref) fail("out of host memory");
    HPDL_CHECK(hpdl_cuda_alloc_pinned((void **)&B->pa, fb));
    HPDL_CHECK(hpdl_cuda_alloc_pinned((void **)&B->pb, fb));
    HPDL_CHECK(hpdl_cuda_alloc_pinned((void **)&B->pc, fb));
    HPDL_CHECK(hpdl_cuda_alloc(&B->da, db));
    HPDL_CHECK(hpdl_cuda_alloc(&B->db, db));
    HPDL_CHECK(hpdl_cuda_alloc(&B->dc, db));
    /* one managed allocation for all three, so the free-memory check sees the sum */
    HPDL_CHECK(hpdl_cuda_alloc_managed(&m, 3 * fb));
    B->ma = (float *)m;
    B->mb = B->ma + max_n;
    B->mc = B->mb + max_n;
    for (i = 0; i < max_n; i++) {
        B->a[i] = (float)(20.0 * hpdl_rng_uniform(rng) - 10.0);
        B->b[i] = (float)(20.0 * hpdl_rng_uniform(rng) - 10.0);
    }
    memcpy(B->pa, B->a, fb);
    memcpy(B->pb, B->b, fb);
    memcpy(B->ma, B->a, fb);
    memcpy(B->mb, B->b, fb);
    memset(B->c, 0, fb); /* touch every page once, so no run pays for first touch */
    memset(B->ref, 0, fb);
    memset(B->pc, 0, fb);
    memset(B->mc, 0, fb);
    HPDL_CUDA_CHECK(cudaMemcpy(B->da, B->a, fb, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(B->db, B->b, fb, cudaMemcpyHostToDevice));
}

static void buffers_destroy(buffers *B) {
    HPDL_FREE(B->a);
    HPDL_FREE(B->b);
    HPDL_FREE(B->c);
    HPDL_FREE(B->ref);
    hpdl_cuda_free_pinned(B->pa);
    hpdl_cuda_free_pinned(B->pb);
    hpdl_cuda_free_pinned(B->pc);
    hpdl_cuda_free(B->da);
    hpdl_cuda_free(B->db);
    hpdl_cuda_free(B->dc);
    hpdl_cuda_free(B->ma);
}

/* ---- the measurements -------------------------------------------------------------- */

static double time_cpu(const buffers *B, int64_t n) {
    double ms[3];
    hpdl_stats st;
    int i;
    for (i = 0; i < 3; i++) {
        double t0 = hpdl_time_now();
        HPDL_CHECK(hpdl_vec_add_f32(n, B->a, B->b, B->ref));
        ms[i] = (hpdl_time_now() - t0) * 1e3;
    }
    HPDL_CHECK(hpdl_stats_compute(ms, 3, &st));
    return st.median;
}

static double time_d2d_copy(const buffers *B, hpdl_cuda_l2_flusher *flush) {
    copy_job j;
    double ms;
    j.dst = B->dc;
    j.src = B->da;
    j.bytes = (size_t)B->max_n * sizeof(float);
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_copy, &j, 0, 3, 30, flush, &ms));
    return 2.0 * (double)j.bytes / (ms * 1e6);
}

static void measure_size(const buffers *B, int k, hpdl_cuda_l2_flusher *flush, int managed_ok, results *R) {
    int64_t n = k_million[k] * 1000000;
    int cfg, mem;
    R->cpu_ms[k] = time_cpu(B, n);
    for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++) {
        add_job<float> job;
        if (cfg == HPDL_VECADD_ONE_THREAD && n > ONE_THREAD_MAX_N) continue;
        job.add = hpdl_cuda_vec_add_f32;
        job.cfg = (hpdl_vecadd_config)cfg;
        job.n = n;
        job.a = (const float *)B->da;
        job.b = (const float *)B->db;
        job.c = (float *)B->dc;
        R->kernel_ms[cfg][k] = time_kernel<float>(&job, B->ref, B->pc, f32_to_f64, 0.0, flush);
        for (mem = 0; mem < MEM_KINDS; mem++) {
            program_run r;
            int managed = mem == MEM_MANAGED || mem == MEM_PREFETCH;
            if (managed && !managed_ok) continue;
            r.cfg = (hpdl_vecadd_config)cfg;
            r.n = n;
            r.mem = (memory_kind)mem;
            r.a = managed ? B->ma : mem == MEM_PINNED ? B->pa : B->a;
            r.b = managed ? B->mb : mem == MEM_PINNED ? B->pb : B->b;
            r.c = managed ? B->mc : mem == MEM_PINNED ? B->pc : B->c;
            r.da = (float *)B->da;
            r.db = (float *)B->db;
            r.dc = (float *)B->dc;
            R->total_ms[cfg][mem][k] = time_program(&r, B->ref);
        }
    }
}

/* Grid-stride kernel for element type T at max_n: inputs converted from the
   f32 data on the host, checked against the CPU twin, then timed. */
template <class T>
static double type_bandwidth(const buffers *B, T (*from_f32)(float), double (*to_f64)(T), double tol,
                             hpdl_status (*gpu)(hpdl_vecadd_config, int64_t, const T *, const T *, T *, cudaStream_t),
                             hpdl_status (*cpu)(int64_t, const T *, const T *, T *), hpdl_cuda_l2_flusher *flush) {
    int64_t i, n = B->max_n;
    size_t bytes = (size_t)n * sizeof(T);
    T *a = (T *)hpdl_alloc((size_t)n, sizeof(T)), *b = (T *)hpdl_alloc((size_t)n, sizeof(T));
    T *want = (T *)hpdl_alloc((size_t)n, sizeof(T)), *got = (T *)hpdl_alloc((size_t)n, sizeof(T));
    add_job<T> job;
    double ms;
    if (!a || !b || !want || !got) fail("out of host memory");
    for (i = 0; i < n; i++) {
        a[i] = from_f32(B->a[i]);
        b[i] = from_f32(B->b[i]);
    }
    HPDL_CHECK(cpu(n, a, b, want));
    HPDL_CUDA_CHECK(cudaMemcpy(B->da, a, bytes, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(B->db, b, bytes, cudaMemcpyHostToDevice));
    job.add = gpu;
    job.cfg = HPDL_VECADD_GRID_STRIDE;
    job.n = n;
    job.a = (const T *)B->da;
    job.b = (const T *)B->db;
    job.c = (T *)B->dc;
    ms = time_kernel<T>(&job, want, got, to_f64, tol, flush);
    HPDL_FREE(a);
    HPDL_FREE(b);
    HPDL_FREE(want);
    HPDL_FREE(got);
    return bw_gbs(n, sizeof(T), ms);
}

static double f64_from_f32(float x) { return x; }

/* torch.add on the same GPU through bench/pytorch/vecadd.py; 0 when python3
   or torch is missing. The script prints "torch_add_gbs <value>". */
static double torch_bandwidth(int64_t n) {
    char cmd[256], line[256];
    double gbs = 0.0;
    FILE *p;
    FILE *script = fopen(TORCH_SCRIPT, "r");
    if (!script) return 0.0;
    fclose(script);
    snprintf(cmd, sizeof cmd, "python3 " TORCH_SCRIPT " %lld 2>/dev/null", (long long)n);
    p = popen(cmd, "r");
    if (!p) return 0.0;
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "torch_add_gbs %lf", &gbs) == 1) break;
    pclose(p);
    return gbs;
}

/* ---- output ------------------------------------------------------------------------ */

static void print_table(const results *R, const char *gpu) {
    int k, cfg;
    printf("\nvecadd on %s: c = a + b, float32; ms (GB/s counts 12 bytes an element)\n", gpu);
    printf("%7s  %-12s %10s %8s %12s %12s %12s %12s\n", "K(M)", "config", "kernel", "GB/s", "+copies", "+copies",
           "managed", "managed");
    printf("%7s  %-12s %10s %8s %12s %12s %12s %12s\n", "", "", "", "", "pageable", "pinned", "", "prefetched");
    for (k = 0; k < NK; k++) {
        int64_t n = k_million[k] * 1000000;
        printf("%7lld  %-12s %10.3f %8.1f\n", (long long)k_million[k], "cpu", R->cpu_ms[k], bw_gbs(n, 4, R->cpu_ms[k]));
        for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++) {
            const double *pageable = R->total_ms[cfg][MEM_PAGEABLE], *pinned = R->total_ms[cfg][MEM_PINNED];
            const double *managed = R->total_ms[cfg][MEM_MANAGED], *prefetched = R->total_ms[cfg][MEM_PREFETCH];
            if (isnan(R->kernel_ms[cfg][k])) {
                printf("%7s  %-12s %10s   (skipped: one GPU thread over %lld M elements takes minutes)\n", "",
                       hpdl_vecadd_config_name((hpdl_vecadd_config)cfg), "-", (long long)k_million[k]);
                continue;
            }
            printf("%7s  %-12s %10.3f %8.1f %12.3f %12.3f %12.3f %12.3f\n", "",
                   hpdl_vecadd_config_name((hpdl_vecadd_config)cfg), R->kernel_ms[cfg][k],
                   bw_gbs(n, 4, R->kernel_ms[cfg][k]), pageable[k], pinned[k], managed[k], prefetched[k]);
        }
    }
}

/* Rows grouped by series, K ascending, so gnuplot draws each as one line. */
static void write_times_csv(const results *R) {
    FILE *f = hpdl_csv_open_with_header(".", "vecadd_times", "config,memory,K_million,kernel_ms,total_ms");
    int k, cfg, mem;
    if (!f) return;
    for (k = 0; k < NK; k++) fprintf(f, "cpu,host,%lld,%.6g,%.6g\n", (long long)k_million[k], R->cpu_ms[k], R->cpu_ms[k]);
    for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++)
        for (mem = 0; mem < MEM_KINDS; mem++)
            for (k = 0; k < NK; k++) {
                if (isnan(R->total_ms[cfg][mem][k])) continue;
                fprintf(f, "%s,%s,%lld,%.6g,%.6g\n", hpdl_vecadd_config_name((hpdl_vecadd_config)cfg),
                        memory_name[mem], (long long)k_million[k], R->kernel_ms[cfg][k], R->total_ms[cfg][mem][k]);
            }
    fclose(f);
}

static void write_headline_csv(const results *R) {
    static const char *type_metric[3] = {"vecadd_f64_grid_stride_100M_bw", "vecadd_f16_grid_stride_100M_bw",
                                         "vecadd_bf16_grid_stride_100M_bw"};
    static const char *mem_metric[MEM_KINDS] = {"vecadd_f32_grid_stride_100M_pageable_ms", "vecadd_f32_grid_stride_100M_pinned_ms",
                                                "vecadd_f32_grid_stride_100M_managed_ms",
                                                "vecadd_f32_grid_stride_100M_managed_prefetch_ms"};
    FILE *f = hpdl_csv_open(".", "vecadd");
    int last = NK - 1, i, gs = HPDL_VECADD_GRID_STRIDE;
    double gs_gbs = bw_gbs(k_million[last] * 1000000, 4, R->kernel_ms[gs][last]);
    if (!f) return;
    hpdl_csv_row(f, "vecadd_f32_grid_stride_100M_bw", gs_gbs, "GB/s", "d2d_copy", R->copy_gbs, 1);
    hpdl_csv_row(f, "vecadd_f32_many_blocks_100M_bw", bw_gbs(k_million[last] * 1000000, 4, R->kernel_ms[HPDL_VECADD_MANY_BLOCKS][last]),
                 "GB/s", "d2d_copy", R->copy_gbs, 1);
    hpdl_csv_row(f, "vecadd_f32_one_block_100M_bw", bw_gbs(k_million[last] * 1000000, 4, R->kernel_ms[HPDL_VECADD_ONE_BLOCK][last]),
                 "GB/s", "d2d_copy", R->copy_gbs, 1);
    for (i = 0; i < 3; i++) hpdl_csv_row(f, type_metric[i], R->type_gbs[i], "GB/s", "d2d_copy", R->copy_gbs, 1);
    if (R->torch_gbs > 0.0) {
        hpdl_csv_row(f, "vecadd_f32_grid_stride_100M_bw", gs_gbs, "GB/s", "pytorch", R->torch_gbs, 1);
        hpdl_csv_row(f, "torch_add_f32_100M_bw", R->torch_gbs, "GB/s", "d2d_copy", R->copy_gbs, 1);
    }
    hpdl_csv_row(f, "vecadd_f32_grid_stride_100M_kernel_ms", R->kernel_ms[gs][last], "ms", "cpu", R->cpu_ms[last], 0);
    for (i = 0; i < MEM_KINDS; i++)
        if (!isnan(R->total_ms[gs][i][last]))
            hpdl_csv_row(f, mem_metric[i], R->total_ms[gs][i][last], "ms", "cpu", R->cpu_ms[last], 0);
    fclose(f);
}

int main(int argc, char **argv) {
    static results R;
    static buffers B;
    hpdl_cuda_device_info info;
    hpdl_cuda_l2_flusher flush;
    hpdl_rng rng;
    hpdl_status pf;
    int k, cfg, mem, managed_ok;
    int64_t max_n = k_million[NK - 1] * 1000000;
    double gs_gbs;
    int64_t seed = 2026;
    const char *output = NULL;
    hpdl_cli_option opts[2];

    opts[0] = hpdl_cli_i64("seed", 0, &seed, 0, INT64_MAX, "seed of the random inputs");
    opts[1] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "vecadd", "Vector add: launch configurations and memory kinds against a D2D copy.", opts, 2);
    hpdl_csv_set_dir(output);
    if (!hpdl_cuda_available()) {
        printf("vecadd: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n");
        return 1;
    }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    printf("vecadd bench on %s (%d SMs, %.1f GiB free); one-thread runs only up to %d M elements, "
           "once each: one GPU thread over 50M+ elements takes minutes\n",
           info.name, info.sm_count, info.free_mem / 1073741824.0, ONE_THREAD_MAX_N / 1000000);
    for (cfg = 0; cfg < HPDL_VECADD_CONFIG_COUNT; cfg++)
        for (k = 0; k < NK; k++) {
            R.kernel_ms[cfg][k] = NAN;
            for (mem = 0; mem < MEM_KINDS; mem++) R.total_ms[cfg][mem][k] = NAN;
        }
    hpdl_rng_seed(&rng, (uint64_t)seed);
    buffers_create(&B, max_n, &rng);
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    pf = hpdl_cuda_prefetch(B.ma, (size_t)max_n * sizeof(float), cudaCpuDeviceId, 0);
    managed_ok = pf == HPDL_OK;
    if (!managed_ok) printf("unified memory: skipped (%s: no concurrent managed access)\n", hpdl_status_string(pf));

    R.copy_gbs = time_d2d_copy(&B, &flush);
    for (k = 0; k < NK; k++) {
        measure_size(&B, k, &flush, managed_ok, &R);
        fprintf(stderr, "  K = %lld M done\n", (long long)k_million[k]);
    }
    R.type_gbs[0] = type_bandwidth<double>(&B, f64_from_f32, f64_same, 1e-12, hpdl_cuda_vec_add_f64, hpdl_vec_add_f64, &flush);
    R.type_gbs[1] = type_bandwidth<hpdl_f16>(&B, hpdl_f16_from_f32, f16_to_f64, 1e-2, hpdl_cuda_vec_add_f16, hpdl_vec_add_f16, &flush);
    R.type_gbs[2] = type_bandwidth<hpdl_bf16>(&B, hpdl_bf16_from_f32, bf16_to_f64, 1e-2, hpdl_cuda_vec_add_bf16, hpdl_vec_add_bf16, &flush);
    hpdl_cuda_l2_flusher_destroy(&flush);
    buffers_destroy(&B);
    R.torch_gbs = torch_bandwidth(max_n);

    print_table(&R, info.name);
    gs_gbs = bw_gbs(max_n, 4, R.kernel_ms[HPDL_VECADD_GRID_STRIDE][NK - 1]);
    printf("\ngrid-stride at 100M: f32 %.1f GB/s, f64 %.1f, f16 %.1f, bf16 %.1f\n", gs_gbs, R.type_gbs[0],
           R.type_gbs[1], R.type_gbs[2]);
    printf("D2D cudaMemcpy (read + write), same run: %.1f GB/s\n", R.copy_gbs);
    if (R.torch_gbs > 0.0) printf("torch.add f32 at 100M: %.1f GB/s\n", R.torch_gbs);
    else printf("torch.add: not measured (python3 with torch not found)\n");
    printf("HEADLINE grid-stride f32, K=100M: %.1f GB/s = %.3f of the D2D copy\n", gs_gbs, gs_gbs / R.copy_gbs);
    write_headline_csv(&R);
    write_times_csv(&R);
    return 0;
}
