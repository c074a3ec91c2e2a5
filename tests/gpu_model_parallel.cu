/* GPU tests of the deep linear model split over devices: one SGD step on
   one device against a CPU f64 reference, then naive, GPipe (m >= 1) and
   1F1B steps on G devices against the one-device step; transfer counts
   against the placement; the micro-batches each device held (1F1B: at
   most G - g, GPipe: m); bad placements and arguments. With one GPU the G
   devices are "virtual" (logical d on GPU d % count); two-GPU runs skip. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

enum { DEPTH = 6, DIM = 45, BATCH = 24 };
static const float LR = 0.05f;

/* Every layer's weights, back to back (DEPTH x DIM x DIM). */
static void get_all_weights(hpdl_cuda_deep_linear *m, float *w) {
    int l;
    for (l = 0; l < m->depth; l++)
        HPDL_CHECK(hpdl_cuda_deep_linear_get_weights(m, l, w + (size_t)l * m->dim * m->dim));
}

/* ||a - b|| / ||b|| over n values. */
static double rel_diff(size_t n, const double *a, const double *b) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* One step of the same model in f64 on the CPU: w updated in place. */
static double cpu_step(double *w, const double *x, const double *t) {
    const size_t act = (size_t)BATCH * DIM, ww = (size_t)DIM * DIM;
    double *h = (double *)malloc(sizeof(double) * act * (DEPTH + 1));
    double *dz = (double *)malloc(sizeof(double) * act), *dh = (double *)malloc(sizeof(double) * act);
    double *dw = (double *)malloc(sizeof(double) * ww), loss = 0.0;
    size_t i;
    int l;
    memcpy(h, x, sizeof(double) * act);
    for (l = 0; l < DEPTH; l++) {
        double *out = h + (l + 1) * act;
        HPDL_CHECK(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_NO_TRANS, BATCH, DIM, DIM, 1.0, h + l * act, DIM, w + l * ww, DIM, 0.0, out, DIM));
        if (l < DEPTH - 1) for (i = 0; i < act; i++) out[i] = out[i] > 0.0 ? out[i] : 0.0;
    }
    for (i = 0; i < act; i++) {
        double d = h[DEPTH * act + i] - t[i];
        loss += 0.5 * d * d / BATCH;
        dz[i] = d / BATCH;
    }
    for (l = DEPTH - 1; l >= 0; l--) {
        HPDL_CHECK(hpdl_gemm_f64(HPDL_TRANS, HPDL_NO_TRANS, DIM, DIM, BATCH, 1.0, h + l * act, DIM, dz, DIM, 0.0, dw, DIM));
        if (l > 0) {
            HPDL_CHECK(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_TRANS, BATCH, DIM, DIM, 1.0, dz, DIM, w + l * ww, DIM, 0.0, dh, DIM));
            for (i = 0; i < act; i++) dz[i] = h[l * act + i] > 0.0 ? dh[i] : 0.0;
        }
        for (i = 0; i < ww; i++) w[l * ww + i] -= LR * dw[i];
    }
    free(h); free(dz); free(dh); free(dw);
    return loss;
}

typedef struct step_result {
    double *delta; /* W_after - W_before, all layers */
    float loss;
    hpdl_cuda_xfer_stats fwd, bwd;
    int peak_live[HPDL_CUDA_MAX_DEVICES];        /* micro-batches held at once */
    size_t act_bytes[HPDL_CUDA_MAX_DEVICES];     /* activation buffers allocated */
    size_t peak_act_bytes[HPDL_CUDA_MAX_DEVICES]; /* and held at the worst moment */
} step_result;

/* Builds the model on `first` (G devices), takes one step with `micro`
   (HPDL_DL_NAIVE: naive, HPDL_DL_1F1B(m): a 1F1B model, else GPipe), and
   returns the weight change, the loss and what the devices held. */
static step_result run_step(const int *first, int G, int allow_virtual, int micro) {
    const size_t n = (size_t)DEPTH * DIM * DIM;
    float *w0 = (float *)malloc(sizeof(float) * n), *w1 = (float *)malloc(sizeof(float) * n);
    hpdl_cuda_deep_linear m;
    step_result r;
    size_t i;
    int g;
    memset(&r, 0, sizeof r);
    r.delta = (double *)malloc(sizeof(double) * n);
    if (micro < 0)
        HPDL_CHECK(hpdl_cuda_deep_linear_create_1f1b(&m, DEPTH, DIM, BATCH, -micro, first, G, allow_virtual));
    else
        HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, first, G, allow_virtual));
    HPDL_CHECK(hpdl_cuda_deep_linear_init(&m, 3));
    HPDL_CHECK(hpdl_cuda_deep_linear_random_batch(&m, 4));
    get_all_weights(&m, w0);
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, micro, LR, 0) == HPDL_OK);
    HPDL_CHECK(hpdl_cuda_deep_linear_loss(&m, &r.loss));
    get_all_weights(&m, w1);
    for (i = 0; i < n; i++) r.delta[i] = (double)w1[i] - (double)w0[i];
    r.fwd = m.fwd;
    r.bwd = m.bwd;
    for (g = 0; g < G; g++) {
        r.peak_live[g] = m.peak_live[g];
        r.act_bytes[g] = m.act_bytes[g];
        r.peak_act_bytes[g] = hpdl_cuda_deep_linear_peak_act_bytes(&m, g, micro);
    }
    hpdl_cuda_deep_linear_destroy(&m);
    free(w0); free(w1);
    return r;
}

/* The one-device GPU step against the CPU f64 step. */
static void test_single_device_matches_cpu(void) {
    const size_t n = (size_t)DEPTH * DIM * DIM, act = (size_t)BATCH * DIM;
    int first[2] = {0, DEPTH};
    hpdl_cuda_deep_linear m;
    float *wf, *xf, *tf;
    double *w, *w0, *x, *t, *delta, loss;
    step_result r;
    size_t i;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    wf = (float *)malloc(sizeof(float) * n); xf = (float *)malloc(sizeof(float) * act); tf = (float *)malloc(sizeof(float) * act);
    w = (double *)malloc(sizeof(double) * n); w0 = (double *)malloc(sizeof(double) * n); delta = (double *)malloc(sizeof(double) * n);
    x = (double *)malloc(sizeof(double) * act); t = (double *)malloc(sizeof(double) * act);
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, first, 1, 0));
    HPDL_CHECK(hpdl_cuda_deep_linear_init(&m, 3));
    HPDL_CHECK(hpdl_cuda_deep_linear_random_batch(&m, 4));
    get_all_weights(&m, wf);
    HPDL_CHECK(hpdl_cuda_deep_linear_get_batch(&m, xf, tf));
    hpdl_cuda_deep_linear_destroy(&m);
    for (i = 0; i < n; i++) w0[i] = w[i] = wf[i];
    for (i = 0; i < act; i++) { x[i] = xf[i]; t[i] = tf[i]; }
    HPDL_EXPECT(fabs(wf[0]) > 0.0f && fabs(wf[0]) < sqrtf(6.0f / DIM)); /* He-uniform init, not zeros */
    loss = cpu_step(w, x, t);
    for (i = 0; i < n; i++) delta[i] = w[i] - w0[i];
    r = run_step(first, 1, 0, 1);
    HPDL_EXPECT_NEAR(r.loss, loss, 1e-5 * loss);
    HPDL_EXPECT(rel_diff(n, r.delta, delta) < 1e-4);
    HPDL_EXPECT(r.fwd.transfers == 0 && r.bwd.transfers == 0);
    free(r.delta);
    free(wf); free(xf); free(tf); free(w); free(w0); free(delta); free(x); free(t);
}

/* The most micro-batches device g of G may hold under `micro`. */
static int expected_live(int micro, int G, int g) {
    int slices = hpdl_cuda_deep_linear_slices(micro);
    if (micro >= 0) return slices; /* naive: the batch; GPipe: all m until the update */
    return slices < G - g ? slices : G - g;
}

/* Naive and pipelined steps on G devices against the one-device step;
   G - 1 boundary crossings per micro-batch each way; each device held the
   micro-batches its schedule allows, and exactly the activation buffers it
   allocated at its worst moment. */
static void check_against_single(const int *first, int G, int allow_virtual, int micro) {
    const size_t n = (size_t)DEPTH * DIM * DIM;
    const long long slice_bytes = (long long)BATCH * DIM * (long long)sizeof(float);
    const long long slices = hpdl_cuda_deep_linear_slices(micro);
    int one[2] = {0, DEPTH}, g;
    step_result ref = run_step(one, 1, 0, 1), r = run_step(first, G, allow_virtual, micro);
    double rel = rel_diff(n, r.delta, ref.delta);
    if (!(rel <= 1e-5)) fprintf(stderr, "    G=%d m=%d: weight updates differ by %.3g\n", G, micro, rel);
    HPDL_EXPECT(rel <= 1e-5);
    HPDL_EXPECT_NEAR(r.loss, ref.loss, 1e-5 * ref.loss);
    HPDL_EXPECT(r.fwd.transfers == slices * (G - 1));
    HPDL_EXPECT(r.bwd.transfers == slices * (G - 1));
    HPDL_EXPECT(r.fwd.bytes == (G - 1) * slice_bytes && r.bwd.bytes == (G - 1) * slice_bytes);
    for (g = 0; g < G; g++) {
        HPDL_EXPECT(r.peak_live[g] == expected_live(micro, G, g));
        HPDL_EXPECT(r.peak_act_bytes[g] == r.act_bytes[g]);
    }
    free(ref.delta);
    free(r.delta);
}

static void test_virtual_devices_match_single(void) {
    int even[4], balanced[4], mapped[4], one[2] = {0, DEPTH};
    const double cost[DEPTH] = {1, 1, 1, 1, 1, 4};
    const int map[DEPTH] = {0, 0, 0, 0, 1, 2};
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CHECK(hpdl_place_even(DEPTH, 3, even));
    HPDL_CHECK(hpdl_place_balanced(DEPTH, cost, 3, balanced));
    HPDL_CHECK(hpdl_place_from_map(DEPTH, map, 3, mapped));
    check_against_single(one, 1, 0, HPDL_DL_NAIVE); /* naive on one device: updates inside the backward */
    check_against_single(even, 3, 1, HPDL_DL_NAIVE);
    check_against_single(even, 3, 1, 1);     /* pipelined, one micro-batch */
    check_against_single(even, 3, 1, 4);
    check_against_single(balanced, 3, 1, 3);
    check_against_single(mapped, 3, 1, 6);
    HPDL_CHECK(hpdl_place_even(DEPTH, DEPTH, even));
    check_against_single(even, DEPTH, 1, 24); /* a layer per device, a row per micro-batch */
}

/* 1F1B: the same step as GPipe and naive to rounding on every placement,
   down to one row per micro-batch; with more micro-batches than stages
   each device holds G - g of them, so less than GPipe's m. */
static void test_1f1b_matches_gpipe(void) {
    int even[4], mapped[4], per_layer[DEPTH + 1], one[2] = {0, DEPTH}, g;
    const int map[DEPTH] = {0, 0, 0, 0, 1, 2};
    step_result gpipe, onef;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CHECK(hpdl_place_even(DEPTH, 3, even));
    HPDL_CHECK(hpdl_place_from_map(DEPTH, map, 3, mapped));
    HPDL_CHECK(hpdl_place_even(DEPTH, DEPTH, per_layer));
    check_against_single(one, 1, 0, HPDL_DL_1F1B(4));
    check_against_single(even, 3, 1, HPDL_DL_1F1B(1));
    check_against_single(even, 3, 1, HPDL_DL_1F1B(2)); /* fewer micro-batches than stages */
    check_against_single(even, 3, 1, HPDL_DL_1F1B(6));
    check_against_single(mapped, 3, 1, HPDL_DL_1F1B(8));
    check_against_single(per_layer, DEPTH, 1, HPDL_DL_1F1B(24));
    gpipe = run_step(even, 3, 1, 6);
    onef = run_step(even, 3, 1, HPDL_DL_1F1B(6));
    HPDL_EXPECT(rel_diff((size_t)DEPTH * DIM * DIM, onef.delta, gpipe.delta) <= 1e-5);
    for (g = 0; g < 3; g++) {
        HPDL_EXPECT(onef.peak_live[g] == 3 - g && gpipe.peak_live[g] == 6);
        HPDL_EXPECT(onef.act_bytes[g] < gpipe.act_bytes[g]);
    }
    free(gpipe.delta);
    free(onef.delta);
}

/* Two GPUs, one stage each and interleaved: 3 and 6 stages on the 2 GPUs
   (stage k on GPU k % 2, sharing its stream; GPipe queued breadth-first). */
static void test_two_gpus_match_single(void) {
    int first[3], three[4], six[7];
    if (hpdl_cuda_device_count() < 2) HPDL_SKIP("needs 2 GPUs");
    HPDL_CHECK(hpdl_place_even(DEPTH, 2, first));
    HPDL_CHECK(hpdl_place_even(DEPTH, 3, three));
    HPDL_CHECK(hpdl_place_even(DEPTH, 6, six));
    check_against_single(first, 2, 0, HPDL_DL_NAIVE);
    check_against_single(first, 2, 0, 1);
    check_against_single(first, 2, 0, 8);
    check_against_single(first, 2, 0, HPDL_DL_1F1B(8));
    check_against_single(three, 3, 1, 4);
    check_against_single(six, 6, 1, HPDL_DL_NAIVE);
    check_against_single(six, 6, 1, 2);
    check_against_single(six, 6, 1, 8);
    check_against_single(six, 6, 1, HPDL_DL_1F1B(4));
}

/* Busy time per device is measured and fits inside the step; naive keeps
   one device busy at a time, so its devices' busy times add up to at most
   the step. */
static void test_profile(void) {
    int first[4], g;
    double step_ms = 0.0, busy[3] = {0, 0, 0}, sum = 0.0;
    hpdl_cuda_deep_linear m;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CHECK(hpdl_place_even(DEPTH, 3, first));
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, first, 3, 1));
    HPDL_CHECK(hpdl_cuda_deep_linear_init(&m, 3));
    HPDL_CHECK(hpdl_cuda_deep_linear_random_batch(&m, 4));
    HPDL_EXPECT(hpdl_cuda_deep_linear_profile(&m, 4, LR, &step_ms, busy) == HPDL_OK);
    HPDL_EXPECT(step_ms > 0.0);
    for (g = 0; g < 3; g++) HPDL_EXPECT(busy[g] > 0.0 && busy[g] <= step_ms * 1.001);
    HPDL_EXPECT(hpdl_cuda_deep_linear_profile(&m, HPDL_DL_NAIVE, LR, &step_ms, busy) == HPDL_OK);
    for (g = 0; g < 3; g++) sum += busy[g];
    HPDL_EXPECT(busy[0] > 0.0 && sum <= step_ms * 1.001);
    hpdl_cuda_deep_linear_destroy(&m);
}

static void test_bad_placement_and_args(void) {
    const int empty[4] = {0, 3, 3, DEPTH}, late[3] = {1, 3, DEPTH}, short_end[3] = {0, 3, DEPTH - 1};
    int first[3], many[HPDL_CUDA_MAX_DEVICES + 1], gpus = hpdl_cuda_device_count();
    hpdl_cuda_deep_linear m;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, empty, 3, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, late, 2, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, short_end, 2, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, NULL, 2, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, DEPTH, 0, BATCH, late, 2, 1) == HPDL_ERR_INVALID);
    if (gpus + 1 <= HPDL_CUDA_MAX_DEVICES) { /* more GPUs than exist, no virtual devices */
        HPDL_CHECK(hpdl_place_even(2 * HPDL_CUDA_MAX_DEVICES, gpus + 1, many));
        HPDL_EXPECT(hpdl_cuda_deep_linear_create(&m, 2 * HPDL_CUDA_MAX_DEVICES, DIM, BATCH, many, gpus + 1, 0) == HPDL_ERR_INVALID);
    }
    HPDL_CHECK(hpdl_place_even(DEPTH, 2, first));
    HPDL_CHECK(hpdl_cuda_deep_linear_create(&m, DEPTH, DIM, BATCH, first, 2, 1));
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, 5, LR, 0) == HPDL_ERR_INVALID); /* 24 rows do not split in 5 */
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, HPDL_DL_1F1B(4), LR, 0) == HPDL_ERR_INVALID); /* whole-batch model */
    HPDL_EXPECT(hpdl_cuda_deep_linear_get_weights(&m, DEPTH, NULL) == HPDL_ERR_INVALID);
    hpdl_cuda_deep_linear_destroy(&m);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create_1f1b(&m, DEPTH, DIM, BATCH, 0, first, 2, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_deep_linear_create_1f1b(&m, DEPTH, DIM, BATCH, 5, first, 2, 1) == HPDL_ERR_INVALID);
    HPDL_CHECK(hpdl_cuda_deep_linear_create_1f1b(&m, DEPTH, DIM, BATCH, 4, first, 2, 1));
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, 4, LR, 0) == HPDL_ERR_INVALID);               /* GPipe on a 1F1B model */
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, HPDL_DL_1F1B(2), LR, 0) == HPDL_ERR_INVALID); /* made for 4 */
    HPDL_EXPECT(hpdl_cuda_deep_linear_step(&m, HPDL_DL_1F1B(4), LR, 0) == HPDL_OK);
    hpdl_cuda_deep_linear_destroy(&m);
}

/* Device utilities: peer enabling is idempotent; moves are counted. */
static void test_device_utilities(void) {
    hpdl_cuda_devices set;
    hpdl_cuda_xfer_stats st;
    float host[1000], back[1000];
    void *a, *b;
    size_t used = 0, total = 0;
    int i, on = 0, same = 1;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_EXPECT(hpdl_cuda_devices_print(stdout) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_mem_in_use(0, &used, &total) == HPDL_OK && used > 0 && used <= total);
    HPDL_EXPECT(hpdl_cuda_mem_in_use(hpdl_cuda_device_count(), &used, &total) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_devices_open(&set, 2, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_devices_open(&set, 2, 1) == HPDL_OK); /* again: peer access already on */
    HPDL_EXPECT(hpdl_cuda_enable_peer(0, 0, &on) == HPDL_OK && on);
    for (i = 0; i < 1000; i++) host[i] = (float)i - 500.5f;
    cudaSetDevice(set.physical[0]);
    HPDL_CUDA_CHECK(cudaMalloc(&a, sizeof host));
    cudaSetDevice(set.physical[1]);
    HPDL_CUDA_CHECK(cudaMalloc(&b, sizeof host));
    HPDL_CHECK(hpdl_cuda_poison(b, sizeof host));
    HPDL_CUDA_CHECK(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice));
    memset(&st, 0, sizeof st);
    HPDL_EXPECT(hpdl_cuda_move(&set, b, 1, a, 0, sizeof host, NULL, 0, 0, &st) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_move(&set, b, 1, a, 2, sizeof host, NULL, 0, 0, &st) == HPDL_ERR_INVALID);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CUDA_CHECK(cudaMemcpy(back, b, sizeof host, cudaMemcpyDeviceToHost));
    for (i = 0; i < 1000; i++) same &= back[i] == host[i];
    HPDL_EXPECT(same);
    HPDL_EXPECT(st.transfers == 1 && st.bytes == (long long)sizeof host && st.local + st.peer + st.staged == 1);
    if (set.physical[0] != set.physical[1]) { /* force the path through pinned host memory, in small chunks */
        void *stage = NULL;
        HPDL_CHECK(hpdl_cuda_alloc_pinned(&stage, 1024));
        set.peer[1][0] = 0;
        HPDL_CHECK(hpdl_cuda_poison(b, sizeof host));
        HPDL_EXPECT(hpdl_cuda_move(&set, b, 1, a, 0, sizeof host, stage, 1024, 0, &st) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        HPDL_CUDA_CHECK(cudaMemcpy(back, b, sizeof host, cudaMemcpyDeviceToHost));
        for (i = 0; i < 1000; i++) same &= back[i] == host[i];
        HPDL_EXPECT(same && st.staged == 1 && st.transfers == 2);
        hpdl_cuda_free_pinned(stage);
    }
    cudaFree(a);
    cudaSetDevice(set.physical[0]);
    cudaFree(b);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_device_utilities),
        HPDL_TEST(test_single_device_matches_cpu),
        HPDL_TEST(test_virtual_devices_match_single),
        HPDL_TEST(test_1f1b_matches_gpipe),
        HPDL_TEST(test_two_gpus_match_single),
        HPDL_TEST(test_profile),
        HPDL_TEST(test_bad_placement_and_args),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
