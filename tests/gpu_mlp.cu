/* GPU tests of the MLP (hpdl_cuda_mlp_<type>) against its CPU twin
   hpdl_mlp_<type>: training steps from the same weights, whole epochs through
   the shuffled data feed (resident and streamed), the fused softmax
   cross-entropy kernel, mixed precision's loss scaler, and bad arguments.
   Every test skips without a GPU. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_cuda.h"

#define NO_GPU_SKIP() do { if (!hpdl_cuda_available()) HPDL_SKIP("no CUDA GPU"); } while (0)

/* One struct per precision: the CPU twin, the GPU model and the tolerance. */
#define MLP_TYPE(SUFFIX, T, TOL)                                                                           \
    struct type_##SUFFIX {                                                                                 \
        typedef T elem;                                                                                    \
        typedef hpdl_mlp_##SUFFIX cpu_mlp;                                                                 \
        typedef hpdl_mlp_work_##SUFFIX cpu_work;                                                           \
        typedef hpdl_cuda_mlp_##SUFFIX gpu_mlp;                                                            \
        static double tol() { return TOL; }                                                                \
        static hpdl_status create(cpu_mlp *m, int n, const int *w, hpdl_activation a, uint64_t seed) {     \
            return hpdl_mlp_create_##SUFFIX(m, n, w, a, seed);                                             \
        }                                                                                                  \
        static hpdl_status copy(cpu_mlp *d, const cpu_mlp *s) { /* a new model equal to s */              \
            hpdl_status st = hpdl_mlp_create_zero_##SUFFIX(d, s->n_layers + 1, s->widths, s->act);         \
            return st == HPDL_OK ? hpdl_mlp_copy_##SUFFIX(d, s) : st;                                      \
        }                                                                                                  \
        static hpdl_status zero(cpu_mlp *m, int n, const int *w, hpdl_activation a) {                      \
            return hpdl_mlp_create_zero_##SUFFIX(m, n, w, a);                                              \
        }                                                                                                  \
        static void destroy(cpu_mlp *m) { hpdl_mlp_destroy_##SUFFIX(m); }                                  \
        static hpdl_status work(cpu_work *w, const cpu_mlp *m, int b) {                                    \
            return hpdl_mlp_work_create_##SUFFIX(w, m, b);                                                 \
        }                                                                                                  \
        static void work_destroy(cpu_work *w) { hpdl_mlp_work_destroy_##SUFFIX(w); }                       \
        static hpdl_status step(cpu_mlp *m, cpu_work *w, cpu_mlp *g, int b, const T *X, const int32_t *y,  \
                                double lr, double l2, double *loss) {                                      \
            return hpdl_mlp_train_step_##SUFFIX(m, w, g, b, X, y, lr, l2, loss);                           \
        }                                                                                                  \
        static hpdl_status gcreate(gpu_mlp *g, const cpu_mlp *m, int b) {                                  \
            return hpdl_cuda_mlp_create_##SUFFIX(g, m, b);                                                 \
        }                                                                                                  \
        static void gdestroy(gpu_mlp *g) { hpdl_cuda_mlp_destroy_##SUFFIX(g); }                            \
        static hpdl_status gdownload(const gpu_mlp *g, cpu_mlp *m) {                                       \
            return hpdl_cuda_mlp_download_##SUFFIX(g, m);                                                  \
        }                                                                                                  \
        static hpdl_status gstep(gpu_mlp *g, int b, const T *X, const int32_t *y, double lr, double l2,    \
                                 double *loss) {                                                           \
            return hpdl_cuda_mlp_train_step_##SUFFIX(g, b, X, y, lr, l2, loss);                            \
        }                                                                                                  \
        static hpdl_status gepoch(gpu_mlp *g, hpdl_cuda_dataset *d, int b, double lr, double l2,           \
                                  uint64_t seed, hpdl_cuda_mlp_stats *st) {                                \
            return hpdl_cuda_mlp_train_epoch_##SUFFIX(g, d, b, lr, l2, seed, st);                          \
        }                                                                                                  \
        static hpdl_status gxent(int r, int c, const T *z, int ld, const int32_t *y, T *g, int ldg,        \
                                 double *loss) {                                                           \
            return hpdl_cuda_softmax_xent_##SUFFIX(r, c, z, ld, y, g, ldg, loss, 0);                       \
        }                                                                                                  \
        static hpdl_status xent(int r, int c, const T *z, int ld, const int32_t *y, T *g, int ldg,         \
                                double *loss) {                                                            \
            return hpdl_softmax_xent_##SUFFIX(r, c, z, ld, y, g, ldg, loss);                               \
        }                                                                                                  \
    };
MLP_TYPE(f32, float, 1e-5)
MLP_TYPE(f64, double, 1e-12)

/* Largest relative Frobenius difference ||a - b|| / ||b|| over the weight
   matrices and bias vectors of two models of one shape. */
template <class M>
static double max_rel_diff(const M *a, const M *b) {
    double worst = 0.0;
    int l;
    for (l = 0; l < b->n_layers; l++) {
        int64_t nw = (int64_t)b->widths[l] * b->widths[l + 1], i;
        double dw = 0.0, nwt = 0.0, dbias = 0.0, nb = 0.0;
        for (i = 0; i < nw; i++) {
            double d = (double)a->W[l][i] - (double)b->W[l][i];
            dw += d * d;
            nwt += (double)b->W[l][i] * (double)b->W[l][i];
        }
        for (i = 0; i < b->widths[l + 1]; i++) {
            double d = (double)a->b[l][i] - (double)b->b[l][i];
            dbias += d * d;
            nb += (double)b->b[l][i] * (double)b->b[l][i];
        }
        if (!(sqrt(dw) / sqrt(nwt) <= worst)) worst = sqrt(dw) / sqrt(nwt); /* NaN wins */
        if (nb > 0.0 && !(sqrt(dbias) / sqrt(nb) <= worst)) worst = sqrt(dbias) / sqrt(nb);
    }
    return worst;
}

/* Fills every parameter of a CPU model with NaN (so a download must write all). */
template <class M>
static void poison_model(M *m) {
    int l;
    for (l = 0; l < m->n_layers; l++) {
        memset(m->W[l], 0xff, sizeof(m->W[l][0]) * m->widths[l] * m->widths[l + 1]);
        memset(m->b[l], 0xff, sizeof(m->b[l][0]) * m->widths[l + 1]);
    }
}

template <class T>
static void fill_inputs(T *X, int32_t *y, int64_t n, int in, int classes, hpdl_rng *rng) {
    int64_t i;
    for (i = 0; i < n * in; i++) X[i] = (T)hpdl_rng_uniform(rng);
    for (i = 0; i < n; i++) y[i] = (int32_t)hpdl_rng_below(rng, (uint64_t)classes);
}

typedef struct shape { int n_widths, widths[5]; hpdl_activation act; int batch, n; } shape;

/* The brief's odd case (H=1013, batch 67, N=200: batches of 67, 67, 66), a
   deeper sigmoid net, a small one with a batch of 1 at the end, and batches
   over 1024 rows. The loss kernel gives the last layer's bias gradient: one
   block up to 32 rows, else a block per 8 rows whose sums its last block
   adds (67: 9 blocks, 1100: 138). The hidden layers' come from the
   column-sum kernel, which splits batches over 256 rows into runs (1100: 5
   runs, added by the last block of each column group). */
static const shape test_shapes[] = {
    {3, {37, 1013, 10}, HPDL_ACT_RELU, 67, 200},
    {4, {20, 64, 33, 7}, HPDL_ACT_SIGMOID, 16, 80},
    {3, {5, 3, 4}, HPDL_ACT_RELU, 8, 25},
    {3, {12, 40, 10}, HPDL_ACT_RELU, 1100, 2300},
};

/* Same initial weights on CPU and GPU, the same steps (explicit device
   inputs: the first step of each batch size eager, the rest graph replays),
   then the weights and the losses must agree. algo < 0: the model's default
   GEMM, else that rung. */
template <class Ty>
static void check_agreement(const shape *sh, int use_graphs, int epochs, int algo) {
    typedef typename Ty::elem T;
    typename Ty::cpu_mlp m, grad, got;
    typename Ty::cpu_work w;
    typename Ty::gpu_mlp g;
    int in = sh->widths[0], classes = sh->widths[sh->n_widths - 1], e;
    T *X = (T *)hpdl_alloc((size_t)sh->n * in, sizeof(T)), *dX = NULL;
    int32_t *y = (int32_t *)hpdl_alloc((size_t)sh->n, sizeof(int32_t)), *dy = NULL;
    hpdl_rng rng;
    double worst_loss = 0.0;
    hpdl_rng_seed(&rng, 42 + (uint64_t)sh->batch);
    HPDL_EXPECT(X && y);
    if (!X || !y) { HPDL_FREE(X); HPDL_FREE(y); return; }
    fill_inputs(X, y, sh->n, in, classes, &rng);
    HPDL_CHECK(Ty::create(&m, sh->n_widths, sh->widths, sh->act, 7));
    HPDL_CHECK(Ty::copy(&got, &m));
    HPDL_CHECK(Ty::zero(&grad, sh->n_widths, sh->widths, sh->act));
    HPDL_CHECK(Ty::work(&w, &m, sh->batch));
    HPDL_CHECK(Ty::gcreate(&g, &m, sh->batch));
    g.use_graphs = use_graphs;
    if (algo >= 0) g.algo = (hpdl_gemm_algo)algo;
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, (size_t)sh->n * in * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)sh->n * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, (size_t)sh->n * in * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, y, (size_t)sh->n * sizeof(int32_t), cudaMemcpyHostToDevice));
    for (e = 0; e < epochs; e++) {
        int r0;
        for (r0 = 0; r0 < sh->n; r0 += sh->batch) {
            int rows = sh->n - r0 < sh->batch ? sh->n - r0 : sh->batch;
            double lc = 0.0, lg = -1.0;
            HPDL_EXPECT(Ty::step(&m, &w, &grad, rows, X + (size_t)r0 * in, y + r0, 0.1, 1e-3, &lc) == HPDL_OK);
            HPDL_EXPECT(Ty::gstep(&g, rows, dX + (size_t)r0 * in, dy + r0, 0.1, 1e-3, &lg) == HPDL_OK);
            if (!(fabs(lg - lc) / fabs(lc) <= worst_loss)) worst_loss = fabs(lg - lc) / fabs(lc);
        }
    }
    poison_model(&got);
    HPDL_EXPECT(Ty::gdownload(&g, &got) == HPDL_OK);
    HPDL_EXPECT_NEAR(max_rel_diff(&got, &m), 0.0, Ty::tol());
    HPDL_EXPECT_NEAR(worst_loss, 0.0, Ty::tol());
    HPDL_EXPECT(g.use_graphs == use_graphs); /* capture worked when asked for */
    Ty::gdestroy(&g);
    Ty::work_destroy(&w);
    Ty::destroy(&m);
    Ty::destroy(&grad);
    Ty::destroy(&got);
    cudaFree(dX);
    cudaFree(dy);
    HPDL_FREE(X);
    HPDL_FREE(y);
}

template <class Ty>
static void check_all_shapes(void) {
    int i;
    for (i = 0; i < HPDL_COUNT(test_shapes); i++) {
        check_agreement<Ty>(&test_shapes[i], 1, 2, -1);
        check_agreement<Ty>(&test_shapes[i], 0, 1, HPDL_GEMM_AUTO);
        check_agreement<Ty>(&test_shapes[i], 1, 1, HPDL_GEMM_CUBLAS);
    }
}

static void test_agreement_f64(void) { NO_GPU_SKIP(); check_all_shapes<type_f64>(); }
static void test_agreement_f32(void) { NO_GPU_SKIP(); check_all_shapes<type_f32>(); }

/* Whole epochs through hpdl_cuda_dataset (device permutation + gather, graph
   replays) against CPU steps over the same permutation, for a resident and
   a streamed copy of the data (chunks of 3 batches, so several chunks and a
   short last batch). */
template <class Ty>
static void check_epochs(hpdl_data_placement placement) {
    typedef typename Ty::elem T;
    static const int widths[3] = {29, 61, 6};
    const int64_t n = 347;
    const int batch = 40, epochs = 2, in = widths[0];
    const uint64_t seed = 5;
    typename Ty::cpu_mlp m, grad, got;
    typename Ty::cpu_work w;
    typename Ty::gpu_mlp g;
    hpdl_cuda_dataset d;
    hpdl_cuda_mlp_stats st = {0, 0, 0, 0, 0, 0};
    float *images = (float *)hpdl_alloc((size_t)n * in, sizeof(float));
    int32_t *labels = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t)), *yb = (int32_t *)hpdl_alloc(batch, 4);
    T *Xb = (T *)hpdl_alloc((size_t)batch * in, sizeof(T));
    double cpu_loss_sum = 0.0;
    hpdl_rng rng;
    int64_t e, r0, i;
    hpdl_rng_seed(&rng, 99);
    fill_inputs(images, labels, n, in, widths[2], &rng);
    HPDL_CHECK(Ty::create(&m, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(Ty::copy(&got, &m));
    HPDL_CHECK(Ty::zero(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(Ty::work(&w, &m, batch));
    HPDL_CHECK(Ty::gcreate(&g, &m, batch));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, n, in, images, n, labels, placement, 3 * batch + 7));
    HPDL_EXPECT(d.resident == (placement == HPDL_DATA_RESIDENT));
    for (e = 0; e < epochs; e++) {
        uint64_t key = hpdl__shuffle_key(seed, e);
        HPDL_EXPECT(Ty::gepoch(&g, &d, batch, 0.05, 1e-4, seed, &st) == HPDL_OK);
        cpu_loss_sum = 0.0;
        for (r0 = 0; r0 < n; r0 += batch) {
            int rows = (int)(n - r0 < batch ? n - r0 : batch);
            double loss = 0.0;
            for (i = 0; i < rows; i++) {
                int32_t src = hpdl__shuffle_index(r0 + i, n, key);
                int j;
                for (j = 0; j < in; j++) Xb[i * in + j] = (T)images[(int64_t)src * in + j];
                yb[i] = labels[src];
            }
            HPDL_EXPECT(Ty::step(&m, &w, &grad, rows, Xb, yb, 0.05, 1e-4, &loss) == HPDL_OK);
            cpu_loss_sum += loss * rows;
        }
        HPDL_EXPECT(st.samples == n);
        HPDL_EXPECT_NEAR(st.loss, cpu_loss_sum / n, 10 * Ty::tol());
        HPDL_EXPECT(st.accuracy >= 0.0 && st.accuracy <= 1.0);
    }
    poison_model(&got);
    HPDL_EXPECT(Ty::gdownload(&g, &got) == HPDL_OK);
    HPDL_EXPECT_NEAR(max_rel_diff(&got, &m), 0.0, Ty::tol());
    hpdl_cuda_dataset_destroy(&d);
    Ty::gdestroy(&g);
    Ty::work_destroy(&w);
    Ty::destroy(&m);
    Ty::destroy(&grad);
    Ty::destroy(&got);
    HPDL_FREE(images);
    HPDL_FREE(labels);
    HPDL_FREE(yb);
    HPDL_FREE(Xb);
}

static void test_epochs_resident_f64(void) { NO_GPU_SKIP(); check_epochs<type_f64>(HPDL_DATA_RESIDENT); }
static void test_epochs_streamed_f64(void) { NO_GPU_SKIP(); check_epochs<type_f64>(HPDL_DATA_STREAMED); }
static void test_epochs_resident_f32(void) { NO_GPU_SKIP(); check_epochs<type_f32>(HPDL_DATA_RESIDENT); }
static void test_epochs_streamed_f32(void) { NO_GPU_SKIP(); check_epochs<type_f32>(HPDL_DATA_STREAMED); }

/* The shuffle is a bijection of [0, n) on the host and on the device alike. */
static void test_shuffle_is_permutation(void) {
    static const int64_t sizes[] = {1, 2, 3, 17, 1000, 60000};
    int k;
    NO_GPU_SKIP();
    for (k = 0; k < HPDL_COUNT(sizes); k++) {
        int64_t n = sizes[k], i, fixed = 0;
        int32_t *host = (int32_t *)hpdl_alloc((size_t)n, 4), *dev = (int32_t *)hpdl_alloc((size_t)n, 4);
        char *seen = (char *)calloc((size_t)n, 1);
        int32_t *d_perm = NULL;
        uint64_t key = hpdl__shuffle_key(11, k);
        int ok = 1;
        HPDL_CUDA_CHECK(cudaMalloc((void **)&d_perm, (size_t)n * 4));
        hpdl__shuffle_kernel<<<(unsigned)((n + 255) / 256), 256>>>(n, key, d_perm);
        HPDL_CUDA_CHECK(cudaMemcpy(dev, d_perm, (size_t)n * 4, cudaMemcpyDeviceToHost));
        for (i = 0; i < n; i++) {
            host[i] = hpdl__shuffle_index(i, n, key);
            if (host[i] < 0 || host[i] >= n || seen[host[i]] || dev[i] != host[i]) ok = 0;
            else seen[host[i]] = 1;
            fixed += host[i] == i;
        }
        HPDL_EXPECT(ok);
        if (n >= 1000) HPDL_EXPECT(fixed < n / 100); /* shuffled, not the identity */
        cudaFree(d_perm);
        HPDL_FREE(host);
        HPDL_FREE(dev);
        free(seen);
    }
}

/* The fused kernel against hpdl_softmax_xent: rows not a multiple of the
   rows per block, cols above a warp, ld > cols; grad poisoned first. */
template <class Ty>
static void check_xent(int rows, int cols, int ld) {
    typedef typename Ty::elem T;
    size_t nz = (size_t)rows * ld;
    T *z = (T *)hpdl_alloc(nz, sizeof(T)), *gw = (T *)hpdl_alloc(nz, sizeof(T)), *gg = (T *)hpdl_alloc(nz, sizeof(T));
    T *dz = NULL, *dg = NULL;
    int32_t *y = (int32_t *)hpdl_alloc((size_t)rows, 4), *dy = NULL;
    double want = 0.0, got = -1.0, *dl = NULL, worst = 0.0;
    hpdl_rng rng;
    size_t i;
    int r, c;
    hpdl_rng_seed(&rng, (uint64_t)rows * 31 + cols);
    for (i = 0; i < nz; i++) z[i] = (T)(40.0 * hpdl_rng_uniform(&rng) - 20.0);
    for (r = 0; r < rows; r++) y[r] = (int32_t)hpdl_rng_below(&rng, (uint64_t)cols);
    memset(gw, 0, nz * sizeof(T));
    HPDL_CHECK(Ty::xent(rows, cols, z, ld, y, gw, ld, &want));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dz, nz * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dg, nz * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)rows * 4));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dl, sizeof(double)));
    HPDL_CUDA_CHECK(cudaMemcpy(dz, z, nz * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, y, (size_t)rows * 4, cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_poison(dg, nz * sizeof(T)));
    HPDL_EXPECT(Ty::gxent(rows, cols, dz, ld, dy, dg, ld, dl) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMemcpy(gg, dg, nz * sizeof(T), cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(&got, dl, sizeof(double), cudaMemcpyDeviceToHost));
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) {
            double d = fabs((double)gg[(size_t)r * ld + c] - (double)gw[(size_t)r * ld + c]) * rows;
            if (!(d <= worst)) worst = d; /* relative to the 1/rows scale; NaN (unwritten) wins */
        }
    HPDL_EXPECT_NEAR(worst, 0.0, Ty::tol());
    HPDL_EXPECT_NEAR(got, want, Ty::tol());
    /* bad arguments: error, grad untouched */
    HPDL_CHECK(hpdl_cuda_poison(dg, nz * sizeof(T)));
    HPDL_EXPECT(Ty::gxent(0, cols, dz, ld, dy, dg, ld, dl) == HPDL_ERR_INVALID);
    HPDL_EXPECT(Ty::gxent(rows, cols, dz, cols - 1, dy, dg, ld, dl) == HPDL_ERR_INVALID);
    HPDL_EXPECT(Ty::gxent(rows, cols, dz, ld, NULL, dg, ld, dl) == HPDL_ERR_INVALID);
    HPDL_CUDA_CHECK(cudaMemcpy(gg, dg, nz * sizeof(T), cudaMemcpyDeviceToHost));
    {
        const unsigned char *u = (const unsigned char *)gg;
        int untouched = 1;
        for (i = 0; i < nz * sizeof(T); i++) untouched &= u[i] == 0xff;
        HPDL_EXPECT(untouched);
    }
    cudaFree(dz); cudaFree(dg); cudaFree(dy); cudaFree(dl);
    HPDL_FREE(z); HPDL_FREE(gw); HPDL_FREE(gg); HPDL_FREE(y);
}

static void test_softmax_xent_f64(void) {
    NO_GPU_SKIP();
    check_xent<type_f64>(67, 10, 10);
    check_xent<type_f64>(13, 100, 103);
    check_xent<type_f64>(1, 1, 1);
}
static void test_softmax_xent_f32(void) {
    NO_GPU_SKIP();
    check_xent<type_f32>(67, 10, 10);
    check_xent<type_f32>(13, 100, 103);
    check_xent<type_f32>(1, 1, 1);
}

/* A mixed-precision GPU model and its f32 CPU twin, from the same start. */
typedef struct amp_pair {
    hpdl_mlp_f32 cpu, start, grad, got; /* got: the GPU model's weights, downloaded */
    hpdl_mlp_work_f32 work;
    hpdl_cuda_mlp_f16 gpu;
} amp_pair;

static void amp_pair_create(amp_pair *p, const int widths[3], uint64_t seed, int batch) {
    HPDL_CHECK(hpdl_mlp_create_f32(&p->cpu, 3, widths, HPDL_ACT_RELU, seed));
    HPDL_CHECK(type_f32::copy(&p->start, &p->cpu));
    HPDL_CHECK(type_f32::copy(&p->got, &p->cpu));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&p->grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&p->work, &p->cpu, batch));
    HPDL_CHECK(hpdl_cuda_mlp_create_f16(&p->gpu, &p->cpu, batch));
}

static void amp_pair_destroy(amp_pair *p) {
    hpdl_cuda_mlp_destroy_f16(&p->gpu);
    hpdl_mlp_work_destroy_f32(&p->work);
    hpdl_mlp_destroy_f32(&p->cpu);
    hpdl_mlp_destroy_f32(&p->start);
    hpdl_mlp_destroy_f32(&p->got);
    hpdl_mlp_destroy_f32(&p->grad);
}

/* Steps on both models: the CPU twin's on X, y; the GPU model's on their
   device copies dX, dy. */
static void amp_pair_steps(amp_pair *p, int steps, int batch, const float *X, const int32_t *y, const float *dX,
                           const int32_t *dy, double lr) {
    double loss;
    int s;
    for (s = 0; s < steps; s++) {
        HPDL_EXPECT(hpdl_mlp_train_step_f32(&p->cpu, &p->work, &p->grad, batch, X, y, lr, 0.0, &loss) == HPDL_OK);
        HPDL_EXPECT(hpdl_cuda_mlp_train_step_f16(&p->gpu, batch, dX, dy, lr, 0.0, NULL) == HPDL_OK);
    }
}

/* How far the GPU model's update is from the CPU twin's, both from the
   start: sqrt(sum (dg - dc)^2 / sum dc^2) over every layer's weights, and
   biases when `biases`. Downloads the GPU model into got first. */
static double amp_update_error(amp_pair *p, int biases) {
    double num = 0.0, den = 0.0;
    int64_t i;
    int l;
    HPDL_EXPECT(hpdl_cuda_mlp_download_f16(&p->gpu, &p->got) == HPDL_OK);
    for (l = 0; l < p->cpu.n_layers; l++) {
        const int64_t weights = (int64_t)p->cpu.widths[l] * p->cpu.widths[l + 1];
        for (i = 0; i < weights + (biases ? p->cpu.widths[l + 1] : 0); i++) {
            const float *g = i < weights ? p->got.W[l] + i : p->got.b[l] + (i - weights);
            const float *c = i < weights ? p->cpu.W[l] + i : p->cpu.b[l] + (i - weights);
            const float *o = i < weights ? p->start.W[l] + i : p->start.b[l] + (i - weights);
            num += ((double)*g - *c) * ((double)*g - *c);
            den += ((double)*c - *o) * ((double)*c - *o);
        }
    }
    HPDL_EXPECT(den > 0.0);
    return sqrt(num / den);
}

/* Mixed precision: the update of a few steps follows the f32 CPU twin's
   (f16 products: within a few percent); an inf in the input skips the step
   (master weights bit-for-bit unchanged) and halves the scale; 2000 clean
   steps double it. */
static void test_amp(void) {
    static const int widths[3] = {24, 48, 5};
    const int batch = 8;
    amp_pair p;
    hpdl_mlp_f32 after;
    float X[batch * 24], *dX = NULL;
    int32_t y[batch], *dy = NULL;
    double scale = 0.0;
    int64_t skipped = -1, i;
    hpdl_rng rng;
    int l, s, same = 1;
    NO_GPU_SKIP();
    hpdl_rng_seed(&rng, 123);
    fill_inputs(X, y, batch, widths[0], widths[2], &rng);
    for (i = 0; i < batch * widths[0]; i++) X[i] *= 0.25f; /* small enough that S = 2^16 cannot overflow */
    amp_pair_create(&p, widths, 9, batch);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, sizeof X));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, sizeof y));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice));
    amp_pair_steps(&p, 3, batch, X, y, dX, dy, 0.5);
    HPDL_EXPECT_NEAR(amp_update_error(&p, 0), 0.0, 3e-2);
    HPDL_EXPECT(hpdl_cuda_mlp_scaler_f16(&p.gpu, &scale, &skipped) == HPDL_OK);
    HPDL_EXPECT(scale == 65536.0 && skipped == 0);
    /* injected overflow */
    X[5] = INFINITY;
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f16(&p.gpu, batch, dX, dy, 0.5, 0.0, NULL) == HPDL_OK);
    HPDL_CHECK(type_f32::copy(&after, &p.got));
    HPDL_EXPECT(hpdl_cuda_mlp_download_f16(&p.gpu, &after) == HPDL_OK);
    for (l = 0; l < 2; l++) {
        same &= memcmp(after.W[l], p.got.W[l], sizeof(float) * widths[l] * widths[l + 1]) == 0;
        same &= memcmp(after.b[l], p.got.b[l], sizeof(float) * widths[l + 1]) == 0;
    }
    HPDL_EXPECT(same);
    HPDL_EXPECT(hpdl_cuda_mlp_scaler_f16(&p.gpu, &scale, &skipped) == HPDL_OK);
    HPDL_EXPECT(scale == 32768.0 && skipped == 1);
    /* growth: small inputs keep every step finite */
    for (i = 0; i < batch * widths[0]; i++) X[i] = 0.01f * (float)hpdl_rng_uniform(&rng);
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    for (s = 0; s < HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL; s++)
        HPDL_EXPECT(hpdl_cuda_mlp_train_step_f16(&p.gpu, batch, dX, dy, 1e-3, 0.0, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_mlp_scaler_f16(&p.gpu, &scale, &skipped) == HPDL_OK);
    HPDL_EXPECT(scale == 65536.0 && skipped == 1);
    amp_pair_destroy(&p);
    hpdl_mlp_destroy_f32(&after);
    cudaFree(dX);
    cudaFree(dy);
}

/* Mixed precision on hpdl's own kernels (AUTO) at the bench's shape, 784 ->
   512 -> 10: the hidden layer's bias and ReLU come from its GEMM
   (hpdl__gemm_bias_act: the thin kernel at batch 40, the one-tile rung in
   slices at 600). Three steps in CUDA graphs, none skipped (inputs small
   enough that the loss scale cannot overflow), follow the f32 CPU twin's
   update, biases included, as closely as the cuBLAS-backed model's do
   (test_amp). */
static void test_amp_own_kernels(void) {
    static const int widths[3] = {784, 512, 10}, batches[2] = {40, 600};
    int b;
    NO_GPU_SKIP();
    for (b = 0; b < 2; b++) {
        const int batch = batches[b];
        amp_pair p;
        float *X = (float *)hpdl_alloc((size_t)batch * widths[0], sizeof(float)), *dX = NULL;
        int32_t *y = (int32_t *)hpdl_alloc((size_t)batch, sizeof(int32_t)), *dy = NULL;
        double scale = 0.0, err;
        hpdl_rng rng;
        int64_t i, skipped = -1;
        HPDL_EXPECT(X && y);
        if (!X || !y) { HPDL_FREE(X); HPDL_FREE(y); return; }
        hpdl_rng_seed(&rng, 321 + (uint64_t)batch);
        fill_inputs(X, y, batch, widths[0], widths[2], &rng);
        for (i = 0; i < (int64_t)batch * widths[0]; i++) X[i] *= 0.05f;
        amp_pair_create(&p, widths, 11, batch);
        p.gpu.algo = HPDL_GEMM_AUTO;
        HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, (size_t)batch * widths[0] * sizeof(float)));
        HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)batch * sizeof(int32_t)));
        HPDL_CUDA_CHECK(cudaMemcpy(dX, X, (size_t)batch * widths[0] * sizeof(float), cudaMemcpyHostToDevice));
        HPDL_CUDA_CHECK(cudaMemcpy(dy, y, (size_t)batch * sizeof(int32_t), cudaMemcpyHostToDevice));
        amp_pair_steps(&p, 3, batch, X, y, dX, dy, 0.1);
        err = amp_update_error(&p, 1);
        if (!(err <= 3e-2)) fprintf(stderr, "    batch %d: relative update error %g\n", batch, err);
        HPDL_EXPECT_NEAR(err, 0.0, 3e-2);
        HPDL_EXPECT(hpdl_cuda_mlp_scaler_f16(&p.gpu, &scale, &skipped) == HPDL_OK);
        HPDL_EXPECT(skipped == 0);
        amp_pair_destroy(&p);
        cudaFree(dX);
        cudaFree(dy);
        HPDL_FREE(X);
        HPDL_FREE(y);
    }
}

/* Streams holding a splitk workspace now. */
static int splitk_spaces_used(void) {
    const hpdl__splitk_space *spaces = hpdl__splitk_spaces();
    int n = 0;
    while (n < HPDL__SPLITK_SPACES && spaces[n].ws) n++;
    return n;
}

/* Models made and destroyed one after another give their stream's splitk
   workspace back: twenty f32 models on the default (AUTO), each stepping
   once at batch 600 (products that split K, so the step makes one), leave
   the table of workspaces as they found it; before, the 17th model's
   products could not split. */
static void test_models_give_back_splitk_space(void) {
    static const int widths[3] = {784, 512, 10};
    const int batch = 600;
    hpdl_mlp_f32 m;
    float *dX = NULL;
    int32_t *dy = NULL;
    int i, before;
    NO_GPU_SKIP();
    HPDL_EXPECT(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 7) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, (size_t)batch * widths[0] * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, (size_t)batch * sizeof(int32_t)));
    HPDL_CUDA_CHECK(cudaMemset(dX, 0, (size_t)batch * widths[0] * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemset(dy, 0, (size_t)batch * sizeof(int32_t)));
    before = splitk_spaces_used();
    for (i = 0; i < 20; i++) {
        hpdl_cuda_mlp_f32 g;
        double loss = 0.0;
        HPDL_EXPECT(hpdl_cuda_mlp_create_f32(&g, &m, batch) == HPDL_OK);
        HPDL_EXPECT(g.algo == HPDL_GEMM_AUTO);
        HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, batch, dX, dy, 0.01, 0.0, &loss) == HPDL_OK);
        HPDL_EXPECT(splitk_spaces_used() == before + 1);
        hpdl_cuda_mlp_destroy_f32(&g);
        HPDL_EXPECT(splitk_spaces_used() == before);
    }
    cudaFree(dX);
    cudaFree(dy);
    hpdl_mlp_destroy_f32(&m);
}

/* Bad hyper-parameters and mismatched data get HPDL_ERR_INVALID and change
   nothing. */
static void test_bad_arguments(void) {
    static const int widths[3] = {6, 5, 3};
    hpdl_mlp_f32 m, bad, got;
    hpdl_mlp_work_f32 w;
    hpdl_cuda_mlp_f32 g, g2;
    hpdl_cuda_dataset d;
    float X[4 * 6], *dX = NULL;
    int32_t y[4] = {0, 1, 2, 1}, y_bad[4] = {0, 1, 5, 1}, y_neg[4] = {0, -1, 0, 0}, *dy = NULL;
    hpdl_rng rng;
    int l;
    NO_GPU_SKIP();
    hpdl_rng_seed(&rng, 77);
    for (l = 0; l < 4 * 6; l++) X[l] = (float)hpdl_rng_uniform(&rng);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(type_f32::copy(&got, &m));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, 4));
    memset(&g2, 0x5a, sizeof g2);
    HPDL_EXPECT(hpdl_cuda_mlp_create_f32(&g2, &m, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_create_f32(&g2, NULL, 4) == HPDL_ERR_INVALID);
    HPDL_CHECK(type_f32::copy(&bad, &m));
    bad.widths[1] = 0; /* a layer of width 0 */
    HPDL_EXPECT(hpdl_cuda_mlp_create_f32(&g2, &bad, 4) == HPDL_ERR_INVALID);
    bad.widths[1] = 5;
    HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, &m, 4));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, sizeof X));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, sizeof y));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 0, dX, dy, 0.1, 0.0, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 5, dX, dy, 0.1, 0.0, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, NULL, dy, 0.1, 0.0, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, dX, dy, NAN, 0.0, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, dX, dy, 0.1, -1.0, NULL) == HPDL_ERR_INVALID);
    /* mismatched data */
    HPDL_EXPECT(hpdl_cuda_dataset_upload(&d, 4, 6, X, 3, y, HPDL_DATA_AUTO, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_dataset_upload(&d, 4, 6, X, 4, y_neg, HPDL_DATA_AUTO, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_dataset_upload(&d, 4, 0, X, 4, y, HPDL_DATA_AUTO, 0) == HPDL_ERR_INVALID);
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, 4, 6, X, 4, y_bad, HPDL_DATA_AUTO, 0)); /* label 5 >= 3 classes */
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_f32(&g, &d, 4, 0.1, 0.0, 1, NULL) == HPDL_ERR_INVALID);
    hpdl_cuda_dataset_destroy(&d);
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, 4, 5, X, 4, y, HPDL_DATA_AUTO, 0)); /* 5 features, net takes 6 */
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_f32(&g, &d, 4, 0.1, 0.0, 1, NULL) == HPDL_ERR_INVALID);
    hpdl_cuda_dataset_destroy(&d);
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, 4, 6, X, 4, y, HPDL_DATA_STREAMED, 2)); /* chunk < batch */
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_f32(&g, &d, 4, 0.1, 0.0, 1, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_f32(&g, &d, 0, 0.1, 0.0, 1, NULL) == HPDL_ERR_INVALID);
    hpdl_cuda_dataset_destroy(&d);
    /* a model of another shape cannot take these weights */
    HPDL_EXPECT(hpdl_cuda_mlp_upload_f32(&g, &bad) == HPDL_OK); /* same shape: fine */
    bad.widths[1] = 4;
    HPDL_EXPECT(hpdl_cuda_mlp_upload_f32(&g, &bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_download_f32(&g, &bad) == HPDL_ERR_INVALID);
    bad.widths[1] = 5;
    /* nothing above trained: the weights are the uploaded ones */
    poison_model(&got);
    HPDL_EXPECT(hpdl_cuda_mlp_download_f32(&g, &got) == HPDL_OK);
    for (l = 0; l < 2; l++)
        HPDL_EXPECT(memcmp(got.W[l], m.W[l], sizeof(float) * widths[l] * widths[l + 1]) == 0);
    hpdl_cuda_mlp_destroy_f32(&g);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&m);
    hpdl_mlp_destroy_f32(&bad);
    hpdl_mlp_destroy_f32(&got);
    cudaFree(dX);
    cudaFree(dy);
}

/* The SGD step's kernels on their own: n = 5000 parameters take the one-pass
   kernel, 24 million the two-pass one (their blocks' old values would not
   fit in shared memory). A step with finite gradients updates every
   parameter (the last 100 are biases: no decay), the f16 weight copy with
   them (mixed precision: G scaled by S = 1024); a step with one NaN or inf
   gradient leaves parameters and copy exactly as they were. */
template <typename C> static void sgd_steps(int64_t n, int amp) {
    const int64_t n_w = n - 100, bad_at[2] = {n / 2, n - 1};
    const double lr = 0.125, l2 = 0.01, scale = amp ? 1024.0 : 1.0;
    std::vector<float> P(n), updated;
    std::vector<C> G(n), W, W_updated;
    hpdl__mlp_state init, st;
    hpdl__mlp_state *d_st = NULL;
    float *dP = NULL;
    C *dG = NULL, *dW = NULL;
    hpdl_rng rng;
    int64_t i, wrong = 0;
    int k;
    hpdl_rng_seed(&rng, (uint64_t)n + (uint64_t)amp);
    for (i = 0; i < n; i++) {
        P[i] = (float)hpdl_rng_uniform(&rng) - 0.5f;
        G[i] = (C)(float)(scale * (hpdl_rng_uniform(&rng) - 0.5));
    }
    memset(&init, 0, sizeof init);
    init.lr = lr;
    init.l2 = l2;
    init.loss_scale = (float)scale;
    dP = upload(P);
    dG = upload(G);
    if (amp) {
        for (i = 0; i < n_w; i++) W.push_back((C)P[i]);
        dW = upload(W);
    }
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_st, sizeof init));
    HPDL_CUDA_CHECK(cudaMemcpy(d_st, &init, sizeof init, cudaMemcpyHostToDevice));
    HPDL_EXPECT((hpdl__mlp_launch_sgd<float, C>(n_w, n, dP, dW, dG, d_st, amp, 7, 0)) == HPDL_OK);
    updated = download(dP, n);
    for (i = 0; i < n; i++) {
        const double p = P[i], g = (double)(float)G[i] / scale;
        const double want = p - lr * (g + (i < n_w ? l2 * p : 0.0));
        wrong += fabs(updated[i] - want) > 1e-6 * (1.0 + fabs(want));
    }
    HPDL_EXPECT(wrong == 0);
    if (amp) { /* the copy is the updated master, converted */
        W_updated = download(dW, n_w);
        for (i = 0; i < n_w; i++) W[i] = (C)updated[i];
        HPDL_EXPECT(memcmp(W.data(), W_updated.data(), (size_t)n_w * sizeof(C)) == 0);
    }
    for (k = 0; k < 2; k++) { /* a NaN in a weight's gradient, then an inf in a bias's */
        const C poison = (C)(k == 0 ? NAN : INFINITY);
        HPDL_CUDA_CHECK(cudaMemcpy(dG + bad_at[k], &poison, sizeof poison, cudaMemcpyHostToDevice));
        HPDL_EXPECT((hpdl__mlp_launch_sgd<float, C>(n_w, n, dP, dW, dG, d_st, amp, 7, 0)) == HPDL_OK);
        HPDL_EXPECT(memcmp(download(dP, n).data(), updated.data(), (size_t)n * sizeof(float)) == 0);
        if (amp) HPDL_EXPECT(memcmp(download(dW, n_w).data(), W_updated.data(), (size_t)n_w * sizeof(C)) == 0);
        HPDL_CUDA_CHECK(cudaMemcpy(dG + bad_at[k], &G[bad_at[k]], sizeof(C), cudaMemcpyHostToDevice));
    }
    HPDL_CUDA_CHECK(cudaMemcpy(&st, d_st, sizeof st, cudaMemcpyDeviceToHost));
    HPDL_EXPECT(st.cursor == 21 && st.found_inf == 0 && st.blocks_done == 0);
    if (amp) HPDL_EXPECT(st.skipped_steps == 2 && st.loss_scale == 256.0f);
    else HPDL_EXPECT(st.nonfinite_steps == 2);
    hpdl_cuda_free(d_st);
    hpdl_cuda_free(dP);
    hpdl_cuda_free(dG);
    hpdl_cuda_free(dW);
}

static void test_sgd_one_and_two_passes(void) {
    NO_GPU_SKIP();
    sgd_steps<float>(5000, 0);
    sgd_steps<__half>(5000, 1);
    sgd_steps<float>(24000000, 0);
    sgd_steps<__half>(24000000, 1);
}

/* A NaN input used to train on (status OK, weights NaN): now the step is
   not applied, the status says HPDL_ERR_NUMERIC, and the weights stay as
   they were; the epoch counts the steps it did not apply. Then clean data
   trains again. */
static void test_nonfinite_step_not_applied(void) {
    static const int widths[3] = {6, 5, 3};
    hpdl_mlp_f32 m, got;
    hpdl_cuda_mlp_f32 g;
    hpdl_cuda_mlp_stats st;
    hpdl_cuda_dataset d;
    float X[4 * 6], *dX = NULL;
    int32_t y[4] = {0, 1, 2, 1}, *dy = NULL;
    double loss = 0;
    hpdl_rng rng;
    int l;
    NO_GPU_SKIP();
    hpdl_rng_seed(&rng, 78);
    for (l = 0; l < 4 * 6; l++) X[l] = (float)hpdl_rng_uniform(&rng);
    X[7] = NAN;
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(type_f32::copy(&got, &m));
    HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, &m, 4));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dX, sizeof X));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&dy, sizeof y));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, dX, dy, 0.1, 0.0, &loss) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, dX, dy, 0.1, 0.0, &loss) == HPDL_ERR_NUMERIC); /* graph replay */
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, 4, 6, X, 4, y, HPDL_DATA_RESIDENT, 0));
    memset(&st, 0, sizeof st);
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_f32(&g, &d, 2, 0.1, 0.0, 1, &st) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(st.nonfinite_steps == 1); /* the batch holding row 1; the other one trains */
    hpdl_cuda_dataset_destroy(&d);
    poison_model(&got);
    HPDL_EXPECT(hpdl_cuda_mlp_download_f32(&g, &got) == HPDL_OK);
    for (l = 0; l < 2; l++)
        for (int i = 0; i < widths[l] * widths[l + 1]; i++) HPDL_EXPECT(isfinite(got.W[l][i]));
    X[7] = 0.5f;
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X, sizeof X, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_mlp_upload_f32(&g, &m) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_f32(&g, 4, dX, dy, 0.1, 0.0, &loss) == HPDL_OK && isfinite(loss));
    HPDL_EXPECT(hpdl_cuda_mlp_download_f32(&g, &got) == HPDL_OK);
    HPDL_EXPECT(memcmp(got.W[0], m.W[0], sizeof(float) * widths[0] * widths[1]) != 0); /* it trained */
    hpdl_cuda_mlp_destroy_f32(&g);
    hpdl_mlp_destroy_f32(&m);
    hpdl_mlp_destroy_f32(&got);
    cudaFree(dX);
    cudaFree(dy);
}

/* The NVML sampler starts where the driver library is present (else says
   unsupported) and averages what it saw: utilisations in percent, an SM
   clock and a power draw a running GPU has (a clock of 0 would mean the
   clock was never read). */
static void test_nvml_sampler(void) {
    hpdl_nvml_sampler s;
    hpdl_nvml_stats stats;
    double gpu = -1.0, mem = -1.0;
    int64_t n = -1;
    hpdl_status st;
    struct timespec nap = {0, 50 * 1000000L};
    NO_GPU_SKIP();
    st = hpdl_nvml_sampler_start(&s, 0, 5, NULL);
    if (st == HPDL_ERR_UNSUPPORTED) HPDL_SKIP("libnvidia-ml.so.1 not found");
    HPDL_EXPECT(st == HPDL_OK);
    nanosleep(&nap, NULL);
    hpdl_nvml_sampler_stop(&s, &gpu, &mem, &n);
    HPDL_EXPECT(n >= 1);
    HPDL_EXPECT(gpu >= 0.0 && gpu <= 100.0 && mem >= 0.0 && mem <= 100.0);
    HPDL_EXPECT(hpdl_nvml_sampler_start(&s, 0, 5, NULL) == HPDL_OK);
    nanosleep(&nap, NULL);
    memset(&stats, 0, sizeof stats);
    hpdl_nvml_sampler_finish(&s, &stats);
    HPDL_EXPECT(stats.samples >= 1);
    HPDL_EXPECT(stats.sm_clock_mhz >= 100.0 && stats.sm_clock_mhz <= 5000.0);
    HPDL_EXPECT(stats.power_w > 1.0 && stats.power_w < 5000.0);
    HPDL_EXPECT(stats.power_capped >= 0.0 && stats.power_capped <= 1.0);
    HPDL_EXPECT(hpdl_nvml_sampler_start(&s, 0, 0, NULL) == HPDL_ERR_INVALID);
}

/* With a CSV path the sampler makes the path's missing folder, writes a
   sample per row under its header, and the run's context beside it. */
static void test_nvml_sampler_csv(void) {
    char dir[] = "/tmp/hpdl_nvml_XXXXXX", csv[128], context[128], line[512];
    hpdl_nvml_sampler s;
    hpdl_status st;
    struct timespec nap = {0, 50 * 1000000L};
    FILE *f;
    int rows = 0, said = 0;
    NO_GPU_SKIP();
    HPDL_EXPECT(mkdtemp(dir) != NULL);
    snprintf(csv, sizeof csv, "%s/new/util.csv", dir);
    snprintf(context, sizeof context, "%s/new/util.context", dir);
    hpdl_csv_set_context("device: the sampler's test\n");
    st = hpdl_nvml_sampler_start(&s, 0, 5, csv);
    hpdl_csv_set_context(NULL);
    if (st == HPDL_ERR_UNSUPPORTED) HPDL_SKIP("libnvidia-ml.so.1 not found");
    HPDL_EXPECT(st == HPDL_OK);
    nanosleep(&nap, NULL);
    hpdl_nvml_sampler_finish(&s, NULL);
    if ((f = fopen(csv, "r")) != NULL) {
        HPDL_EXPECT(fgets(line, sizeof line, f) && !strncmp(line, "t_s,gpu_util_pct,mem_util_pct,", 30));
        while (fgets(line, sizeof line, f)) rows++;
        fclose(f);
    }
    HPDL_EXPECT(rows >= 1);
    if ((f = fopen(context, "r")) != NULL) {
        said = fgets(line, sizeof line, f) && !strcmp(line, "device: the sampler's test\n");
        fclose(f);
    }
    HPDL_EXPECT(said);
    remove(csv);
    remove(context);
    snprintf(line, sizeof line, "%s/new", dir);
    rmdir(line);
    rmdir(dir);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_softmax_xent_f64),    HPDL_TEST(test_softmax_xent_f32),
        HPDL_TEST(test_agreement_f64),       HPDL_TEST(test_agreement_f32),
        HPDL_TEST(test_shuffle_is_permutation),
        HPDL_TEST(test_epochs_resident_f64), HPDL_TEST(test_epochs_streamed_f64),
        HPDL_TEST(test_epochs_resident_f32), HPDL_TEST(test_epochs_streamed_f32),
        HPDL_TEST(test_amp),                 HPDL_TEST(test_amp_own_kernels), HPDL_TEST(test_models_give_back_splitk_space),
        HPDL_TEST(test_bad_arguments),
        HPDL_TEST(test_nonfinite_step_not_applied), HPDL_TEST(test_sgd_one_and_two_passes),
        HPDL_TEST(test_nvml_sampler),        HPDL_TEST(test_nvml_sampler_csv),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
