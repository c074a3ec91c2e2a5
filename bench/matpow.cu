/* bench/matpow: A^n + B^n on one GPU and on every GPU.

   usage: matpow [N=10000] [n=10]      (or --n N --power n; --output DIR; --help, --version)

   Each matrix's power is computed on its own GPU (k = 2 matrices over G
   GPUs), by repeated squaring (floor(log2 n) squarings + one product per
   extra set bit: 4 products for n = 10) and naively (n - 1 = 9 products),
   in f32 (cuBLAS, exact f32), tf32 (cuBLAS on TF32 tensor cores: ~1e-3
   relative) and f16 (tensor cores, f32 accumulation). Also one matrix split
   by row blocks over all GPUs.

   Checks first: at N = 256 every mode and GPU count against the CPU f64
   reference hpdl_matpow_f64 (entries scaled by sqrt(3/N) so powers stay
   O(1)); at full N the all-GPU sum against the 1-GPU sum. Then times
   (CUDA events, median, L2 flushed; inputs already on the GPUs, the sum on
   GPU 0, as PyTorch's anchor does). The anchor is bench/pytorch/matpow.py
   (torch.linalg.matrix_power, one matrix per GPU, f32 with TF32 off) in the
   same run when python3 can import torch. CSV: matpow.csv. */
#include "hpdl_cuda.cuh"

#define MAX_MATS 2

typedef struct mode {
    const char *name;
    hpdl_gemm_algo algo;
    int f16;          /* storage: f16 instead of f32 */
    double tol_small; /* relative error allowed against the f64 reference */
    int reps;         /* timed runs of the squaring at N (naive: fewer) */
} mode;

static const mode MODES[] = {
    {"f32", HPDL_GEMM_CUBLAS, 0, 1e-5, 5},
    {"tf32", HPDL_GEMM_TF32, 0, 5e-3, 10},
    {"f16", HPDL_GEMM_CUBLAS, 1, 2e-2, 10},
};
enum { N_MODES = 3 };

/* Host matrices in both storage types, entries uniform in +-sqrt(3/n). */
typedef struct inputs {
    int n;
    float *f32[MAX_MATS];
    hpdl_f16 *f16[MAX_MATS];
} inputs;

static void inputs_make(inputs *in, int n, uint64_t seed) {
    size_t i, nn = (size_t)n * n;
    double s = sqrt(3.0 / n);
    hpdl_rng r;
    int j;
    in->n = n;
    hpdl_rng_seed(&r, seed);
    for (j = 0; j < MAX_MATS; j++) {
        in->f32[j] = (float *)hpdl_alloc(nn, sizeof(float));
        in->f16[j] = (hpdl_f16 *)hpdl_alloc(nn, sizeof(hpdl_f16));
        if (!in->f32[j] || !in->f16[j]) { fprintf(stderr, "matpow: out of host memory\n"); exit(EXIT_FAILURE); }
        for (i = 0; i < nn; i++) {
            in->f32[j][i] = (float)(s * (2.0 * hpdl_rng_uniform(&r) - 1.0));
            in->f16[j][i] = hpdl_f16_from_f32(in->f32[j][i]);
        }
    }
}

static void inputs_free(inputs *in) {
    int j;
    for (j = 0; j < MAX_MATS; j++) { HPDL_FREE(in->f32[j]); HPDL_FREE(in->f16[j]); }
}

/* The typed plan calls, by mode. */
static void plan_create(const mode *md, hpdl_cuda_powsum *p, int n, int power, int gpus) {
    if (md->f16) HPDL_CHECK(hpdl_cuda_powsum_create_f16(p, MAX_MATS, n, power, gpus, 0));
    else HPDL_CHECK(hpdl_cuda_powsum_create_f32(p, MAX_MATS, n, power, gpus, 0));
}

static void plan_upload(const mode *md, hpdl_cuda_powsum *p, const inputs *in) {
    if (md->f16) HPDL_CHECK(hpdl_cuda_powsum_upload_f16(p, (const hpdl_f16 *const *)in->f16));
    else HPDL_CHECK(hpdl_cuda_powsum_upload_f32(p, (const float *const *)in->f32));
}

static hpdl_status plan_run(const mode *md, hpdl_cuda_powsum *p, int naive, cudaStream_t s) {
    return md->f16 ? hpdl_cuda_powsum_run_f16(p, naive, md->algo, s) : hpdl_cuda_powsum_run_f32(p, naive, md->algo, s);
}

/* The sum on GPU 0, as doubles on the host. */
static double *plan_result(const mode *md, hpdl_cuda_powsum *p) {
    size_t i, nn = (size_t)p->n * p->n;
    double *out = (double *)hpdl_alloc(nn, sizeof(double));
    void *raw = hpdl_alloc(nn, md->f16 ? 2 : 4);
    if (!out || !raw) { fprintf(stderr, "matpow: out of host memory\n"); exit(EXIT_FAILURE); }
    if (md->f16) {
        HPDL_CHECK(hpdl_cuda_powsum_download_f16(p, (hpdl_f16 *)raw));
        for (i = 0; i < nn; i++) out[i] = hpdl_f16_to_f32(((hpdl_f16 *)raw)[i]);
    } else {
        HPDL_CHECK(hpdl_cuda_powsum_download_f32(p, (float *)raw));
        for (i = 0; i < nn; i++) out[i] = ((float *)raw)[i];
    }
    HPDL_FREE(raw);
    return out;
}

static double rel_error(size_t count, const double *got, const double *want) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < count; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* A^power + B^power in f64 on the CPU, from the mode's rounded inputs. */
static double *cpu_reference(const mode *md, const inputs *in, int power) {
    size_t i, nn = (size_t)in->n * in->n;
    double *a = (double *)hpdl_alloc(nn, sizeof(double)), *pw = (double *)hpdl_alloc(nn, sizeof(double));
    double *sum = (double *)calloc(nn, sizeof(double));
    int j;
    for (j = 0; j < MAX_MATS; j++) {
        for (i = 0; i < nn; i++) a[i] = md->f16 ? hpdl_f16_to_f32(in->f16[j][i]) : in->f32[j][i];
        HPDL_CHECK(hpdl_matpow_f64(in->n, power, a, in->n, pw, in->n));
        for (i = 0; i < nn; i++) sum[i] += pw[i];
    }
    HPDL_FREE(a); HPDL_FREE(pw);
    return sum;
}

/* Small N: every mode, variant and GPU count against the CPU. */
static int check_small(int power, int all_gpus) {
    inputs in;
    int m, g, naive, ok = 1;
    inputs_make(&in, 256, 99);
    printf("checks at N = 256, n = %d, against the CPU f64 reference (relative Frobenius error):\n", power);
    for (m = 0; m < N_MODES; m++) {
        double *want = cpu_reference(&MODES[m], &in, power);
        for (g = 1; g <= all_gpus; g = g == all_gpus ? all_gpus + 1 : all_gpus)
            for (naive = 0; naive <= 1; naive++) {
                hpdl_cuda_powsum p;
                double *got, err;
                plan_create(&MODES[m], &p, in.n, power, g);
                plan_upload(&MODES[m], &p, &in);
                HPDL_CHECK(plan_run(&MODES[m], &p, naive, p.lanes.stream[0]));
                got = plan_result(&MODES[m], &p);
                err = rel_error((size_t)in.n * in.n, got, want);
                printf("  %-5s %-8s %d GPU%s  %.2e  %s\n", MODES[m].name, naive ? "naive" : "squaring", g,
                       g > 1 ? "s" : " ", err, err <= MODES[m].tol_small ? "ok" : "FAILED");
                ok &= err <= MODES[m].tol_small;
                HPDL_FREE(got);
                hpdl_cuda_powsum_destroy(&p);
            }
        HPDL_FREE(want);
    }
    inputs_free(&in);
    return ok;
}

typedef struct timed_run {
    const mode *md;
    hpdl_cuda_powsum *plan;
    int naive;
    hpdl_status status;
} timed_run;

static void run_powsum(void *ctx, cudaStream_t stream) {
    timed_run *t = (timed_run *)ctx;
    hpdl_status s = plan_run(t->md, t->plan, t->naive, stream);
    if (s != HPDL_OK) t->status = s;
}

static double time_plan(const mode *md, hpdl_cuda_powsum *p, int naive, int reps, hpdl_cuda_l2_flusher *flush) {
    timed_run t;
    double ms = 0.0;
    t.md = md; t.plan = p; t.naive = naive; t.status = HPDL_OK;
    HPDL_CHECK(hpdl_cuda_time_median_ms(run_powsum, &t, p->lanes.stream[0], 1, reps, flush, &ms));
    HPDL_CHECK(t.status);
    return ms / 1e3;
}

/* Seconds of PyTorch for (mode, gpus) from bench/pytorch/matpow.py, or 0. */
typedef struct torch_times { double s[N_MODES][2]; int have; } torch_times;

static void run_pytorch(int n, int power, torch_times *tt) {
    char cmd[256], line[256], name[32];
    FILE *f;
    memset(tt, 0, sizeof *tt);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import torch' 2>/dev/null && PYTHONUNBUFFERED=1 python3 bench/pytorch/matpow.py %d %d", n, power);
    f = popen(cmd, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        int gpus, m;
        double sec;
        fputs(line, stdout);
        if (sscanf(line, "pytorch %31s %d %lf", name, &gpus, &sec) != 3) continue;
        for (m = 0; m < N_MODES; m++)
            if (!strcmp(name, MODES[m].name)) { tt->s[m][gpus > 1] = sec; tt->have = 1; }
    }
    pclose(f);
}

static double tflops(int n, int products, double sec) {
    return sec > 0.0 ? MAX_MATS * (double)products * 2.0 * (double)n * n * n / sec / 1e12 : 0.0;
}

static int products_of(int power, int naive) {
    hpdl__matpow_plan p;
    hpdl__matpow_plan_init(&p, power, naive);
    return p.count;
}

/* One mode at full size: 1 GPU and all GPUs, squaring and naive. Returns
   seconds [gpus>1][naive]; checks the all-GPU sum against the 1-GPU sum. */
static int bench_mode(const mode *md, const inputs *in, int power, int all_gpus, double sec[2][2]) {
    hpdl_cuda_powsum one, all;
    hpdl_cuda_l2_flusher flush;
    double *ref, *got, err = 0.0, naive_err;
    int naive, ok = 1;
    plan_create(md, &one, in->n, power, 1);
    plan_upload(md, &one, in);
    HPDL_CHECK(plan_run(md, &one, 0, one.lanes.stream[0]));
    ref = plan_result(md, &one);
    HPDL_CHECK(plan_run(md, &one, 1, one.lanes.stream[0]));
    got = plan_result(md, &one);
    naive_err = rel_error((size_t)in->n * in->n, got, ref);
    HPDL_FREE(got);
    if (all_gpus > 1) {
        plan_create(md, &all, in->n, power, all_gpus);
        plan_upload(md, &all, in);
        HPDL_CHECK(plan_run(md, &all, 0, all.lanes.stream[0]));
        got = plan_result(md, &all);
        err = rel_error((size_t)in->n * in->n, got, ref);
        ok = err <= 1e-6;
        HPDL_FREE(got);
    }
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    for (naive = 0; naive <= 1; naive++) {
        int reps = naive ? (md->reps + 1) / 2 : md->reps;
        sec[0][naive] = time_plan(md, &one, naive, reps, &flush);
        sec[1][naive] = all_gpus > 1 ? time_plan(md, &all, naive, reps, &flush) : sec[0][naive];
    }
    hpdl_cuda_l2_flusher_destroy(&flush);
    printf("  %-5s  squaring vs naive (1 GPU): %.2e relative;  %d GPUs vs 1 GPU: %.2e  %s\n", md->name, naive_err,
           all_gpus, err, ok ? "ok" : "FAILED");
    for (naive = 0; naive <= 1; naive++) {
        int products = products_of(power, naive), g;
        for (g = 0; g <= (all_gpus > 1); g++) {
            int gpus = g ? all_gpus : 1;
            printf("  %-5s  %-8s  %d GPU%s  %8.4f s  %7.1f TFLOP/s  speedup %.2fx\n", md->name,
                   naive ? "naive" : "squaring", gpus, gpus > 1 ? "s" : " ", sec[g][naive],
                   tflops(in->n, products, sec[g][naive]), sec[0][naive] / sec[g][naive]);
        }
    }
    HPDL_FREE(ref);
    hpdl_cuda_powsum_destroy(&one);
    if (all_gpus > 1) hpdl_cuda_powsum_destroy(&all);
    return ok;
}

typedef struct rowpow_run { hpdl_cuda_rowpow *plan; int power; const float *a; float *out; hpdl_status status; } rowpow_run;

static void run_rowpow(void *ctx, cudaStream_t stream) {
    rowpow_run *r = (rowpow_run *)ctx;
    hpdl_status s = hpdl_cuda_rowpow_run_f32(r->plan, r->power, r->a, r->plan->n, r->out, r->plan->n, HPDL_GEMM_CUBLAS, stream);
    if (s != HPDL_OK) r->status = s;
}

/* One matrix (A) on G GPUs by row blocks, f32: seconds for G = 1 and all. */
static int bench_rowpow(const inputs *in, int power, int all_gpus, double sec[2], double *moved_gb) {
    size_t nn = (size_t)in->n * in->n;
    float *d_a, *d_out;
    float *h1 = (float *)hpdl_alloc(nn, sizeof(float)), *h2 = (float *)hpdl_alloc(nn, sizeof(float));
    double err, num = 0.0, den = 0.0;
    hpdl_cuda_l2_flusher flush;
    int g;
    size_t i;
    HPDL_CUDA_CHECK(cudaSetDevice(0));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_a, nn * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_out, nn * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemcpy(d_a, in->f32[0], nn * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&flush));
    for (g = 0; g <= 1; g++) {
        hpdl_cuda_rowpow plan;
        rowpow_run r;
        double ms = 0.0;
        long long before;
        HPDL_CHECK(hpdl_cuda_rowpow_create_f32(&plan, in->n, g ? all_gpus : 1, 0));
        r.plan = &plan; r.power = power; r.a = d_a; r.out = d_out; r.status = HPDL_OK;
        HPDL_CHECK(hpdl_cuda_poison(d_out, nn * sizeof(float)));
        before = plan.xfer.bytes;
        run_rowpow(&r, 0);
        HPDL_CHECK(r.status);
        if (g) *moved_gb = (double)(plan.xfer.bytes - before) / 1e9;
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        HPDL_CUDA_CHECK(cudaMemcpy(g ? h2 : h1, d_out, nn * sizeof(float), cudaMemcpyDeviceToHost));
        HPDL_CHECK(hpdl_cuda_time_median_ms(run_rowpow, &r, 0, 1, 5, &flush, &ms));
        HPDL_CHECK(r.status);
        sec[g] = ms / 1e3;
        hpdl_cuda_rowpow_destroy(&plan);
    }
    for (i = 0; i < nn; i++) { num += ((double)h2[i] - h1[i]) * ((double)h2[i] - h1[i]); den += (double)h1[i] * h1[i]; }
    err = sqrt(num / den);
    printf("  f32    one matrix by row blocks: 1 GPU %.4f s, %d GPUs %.4f s (speedup %.2fx), %.2f GB moved, "
           "%.2e vs 1 GPU  %s\n", sec[0], all_gpus, sec[1], sec[0] / sec[1], *moved_gb, err, err <= 1e-5 ? "ok" : "FAILED");
    hpdl_cuda_l2_flusher_destroy(&flush);
    cudaFree(d_a); cudaFree(d_out);
    HPDL_FREE(h1); HPDL_FREE(h2);
    return err <= 1e-5;
}

static void csv_rows(FILE *f, int all_gpus, double sec[N_MODES][2][2], const torch_times *tt, const double row_sec[2]) {
    char metric[96], anchor[96];
    int m;
    if (!f) return;
    snprintf(metric, sizeof metric, "squaring_f32_%dgpu_time", all_gpus);
    hpdl_csv_row(f, metric, sec[0][1][0], "s", "squaring_f32_1gpu_time", sec[0][0][0], 0); /* headline: speedup */
    if (tt->have && tt->s[0][1] > 0.0) {
        snprintf(anchor, sizeof anchor, "pytorch_f32_%dgpu_time", all_gpus);
        hpdl_csv_row(f, metric, sec[0][1][0], "s", anchor, tt->s[0][1], 0);
    }
    if (tt->have && tt->s[0][0] > 0.0)
        hpdl_csv_row(f, "squaring_f32_1gpu_time", sec[0][0][0], "s", "pytorch_f32_1gpu_time", tt->s[0][0], 0);
    for (m = 0; m < N_MODES; m++) {
        int g;
        for (g = 0; g <= 1; g++) {
            int gpus = g ? all_gpus : 1;
            snprintf(metric, sizeof metric, "squaring_%s_%dgpu_time", MODES[m].name, gpus);
            snprintf(anchor, sizeof anchor, "naive_%s_%dgpu_time", MODES[m].name, gpus);
            hpdl_csv_row(f, metric, sec[m][g][0], "s", anchor, sec[m][g][1], 0);
            if (m > 0) {
                snprintf(anchor, sizeof anchor, "squaring_f32_%dgpu_time", gpus);
                hpdl_csv_row(f, metric, sec[m][g][0], "s", anchor, sec[0][g][0], 0);
                if (tt->have && tt->s[m][g] > 0.0) {
                    snprintf(anchor, sizeof anchor, "pytorch_%s_%dgpu_time", MODES[m].name, gpus);
                    hpdl_csv_row(f, metric, sec[m][g][0], "s", anchor, tt->s[m][g], 0);
                }
            }
        }
        if (m > 0) {
            snprintf(metric, sizeof metric, "squaring_%s_%dgpu_time", MODES[m].name, all_gpus);
            snprintf(anchor, sizeof anchor, "squaring_%s_1gpu_time", MODES[m].name);
            hpdl_csv_row(f, metric, sec[m][1][0], "s", anchor, sec[m][0][0], 0);
        }
    }
    if (all_gpus < 2) return;
    snprintf(metric, sizeof metric, "rowblocks_f32_one_matrix_%dgpu_time", all_gpus);
    hpdl_csv_row(f, metric, row_sec[1], "s", "rowblocks_f32_one_matrix_1gpu_time", row_sec[0], 0);
}

int main(int argc, char **argv) {
    int n = 10000, power = 10, all_gpus, m, ok;
    double sec[N_MODES][2][2], row_sec[2] = {0, 0}, moved = 0.0;
    torch_times tt;
    inputs in;
    FILE *csv;
    const char *output = NULL;
    hpdl_cli_option opts[3];
    opts[0] = hpdl_cli_positional(hpdl_cli_int("n", 0, &n, 2, 1 << 16, "matrix size N (N x N)"));
    opts[1] = hpdl_cli_positional(hpdl_cli_int("power", 0, &power, 2, 1 << 20, "the power n"));
    opts[2] = hpdl_cli_string("output", 0, &output, "DIR", "folder for matpow.csv ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "matpow", "A^n + B^n on one GPU and on every GPU, against cuBLAS and PyTorch.", opts, 3);
    hpdl_csv_set_dir(output);
    if (!hpdl_cuda_available()) { printf("matpow: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CHECK(hpdl_cuda_devices_print(stdout));
    all_gpus = hpdl_cuda_device_count();
    if (all_gpus > MAX_MATS) all_gpus = MAX_MATS; /* one matrix per GPU */
    ok = check_small(power, all_gpus);
    printf("\nA^%d + B^%d, N = %d, inputs on the GPUs, sum on GPU 0:\n", power, power, n);
    inputs_make(&in, n, 2026);
    for (m = 0; m < N_MODES; m++) ok &= bench_mode(&MODES[m], &in, power, all_gpus, sec[m]);
    if (all_gpus > 1) ok &= bench_rowpow(&in, power, all_gpus, row_sec, &moved);
    inputs_free(&in);
    run_pytorch(n, power, &tt);
    printf("\n%-6s %-9s %10s %10s %10s %12s\n", "mode", "variant", "1 GPU s", "all s", "speedup", "PyTorch all");
    for (m = 0; m < N_MODES; m++)
        printf("%-6s %-9s %10.4f %10.4f %9.2fx %11.4f\n", MODES[m].name, "squaring", sec[m][0][0], sec[m][1][0],
               sec[m][0][0] / sec[m][1][0], tt.s[m][1]);
    printf("%-6s %-9s %10.4f %10.4f %9.2fx\n", "f32", "naive", sec[0][0][1], sec[0][1][1], sec[0][0][1] / sec[0][1][1]);
    csv = hpdl_csv_open(".", "matpow");
    csv_rows(csv, all_gpus, sec, &tt, row_sec);
    if (csv) fclose(csv);
    printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : EXIT_FAILURE;
}
