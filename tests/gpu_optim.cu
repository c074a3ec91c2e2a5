/* GPU tests of the optimisers (hpdl_cuda_sgd_momentum_<t>, hpdl_cuda_adamw_<t>)
   against their CPU twins over several steps on random data, of the skip
   flag, of hpdl_cuda_flag_nonfinite_<t> for every type, and of a step
   captured in a CUDA graph and replayed with a new learning rate uploaded
   between replays. Tests that need a GPU skip without one. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

#include <vector>

#define NO_GPU_SKIP() do { if (!hpdl_cuda_available()) HPDL_SKIP("no CUDA GPU"); } while (0)

static const int64_t kParams = 100003; /* not a multiple of a block */
static const int kSteps = 5;

static hpdl_rng rng;

/* Per type: the typed launchers, the CPU twins and the tolerance. */
#define OPTIM_TYPE(SUFFIX, T, TOL)                                                                          \
    struct optim_##SUFFIX {                                                                                 \
        typedef T elem;                                                                                     \
        static double tol() { return TOL; }                                                                 \
        static hpdl_status gpu_sgd(int64_t n, T *w, const T *g, T *vel, const hpdl_optim_step *s, double mom, \
                                   double wd, int nesterov) {                                               \
            return hpdl_cuda_sgd_momentum_##SUFFIX(n, w, g, vel, s, mom, wd, nesterov, 0);                  \
        }                                                                                                   \
        static hpdl_status cpu_sgd(int64_t n, T *w, const T *g, T *vel, double lr, double mom, double wd,    \
                                   int nesterov) {                                                          \
            return hpdl_sgd_momentum_##SUFFIX(n, w, g, vel, lr, mom, wd, nesterov);                         \
        }                                                                                                   \
        static hpdl_status gpu_adamw(int64_t n, T *w, const T *g, T *m, T *v, const hpdl_optim_step *s,      \
                                     double b1, double b2, double eps, double wd) {                         \
            return hpdl_cuda_adamw_##SUFFIX(n, w, g, m, v, s, b1, b2, eps, wd, 0);                          \
        }                                                                                                   \
        static hpdl_status cpu_adamw(int64_t n, T *w, const T *g, T *m, T *v, int64_t t, double lr,          \
                                     double b1, double b2, double eps, double wd) {                         \
            return hpdl_adamw_##SUFFIX(n, w, g, m, v, t, lr, b1, b2, eps, wd);                              \
        }                                                                                                   \
    };
OPTIM_TYPE(f32, float, 1e-6)
OPTIM_TYPE(f64, double, 1e-14)

/* A device copy of a host vector (HPDL_CUDA_CHECK: a failed CUDA call ends the test program). */
template <typename T> struct device_vector {
    T *ptr;
    size_t count;
    explicit device_vector(size_t n) : ptr(NULL), count(n) { HPDL_CUDA_CHECK(cudaMalloc(&ptr, bytes())); }
    ~device_vector() { cudaFree(ptr); }
    size_t bytes() const { return count * sizeof(T); }
    void put(const T *h) { HPDL_CUDA_CHECK(cudaMemcpy(ptr, h, bytes(), cudaMemcpyHostToDevice)); }
    void get(T *h) const { HPDL_CUDA_CHECK(cudaMemcpy(h, ptr, bytes(), cudaMemcpyDeviceToHost)); }
    std::vector<T> get() const {
        std::vector<T> h(count);
        get(h.data());
        return h;
    }

  private:
    device_vector(const device_vector &);
    device_vector &operator=(const device_vector &);
};

template <typename T> static void fill_uniform(std::vector<T> &x, double lo, double hi) {
    for (size_t i = 0; i < x.size(); i++) x[i] = (T)(lo + (hi - lo) * hpdl_rng_uniform(&rng));
}

/* Elements where got and want differ by more than tol * max(1, max_i |want_i|)
   (NaN always differs). Relative to the array's largest value, not each
   element's: the GPU computes f32 updates in float, the CPU twin in double,
   and where momentum*v + g cancels, a small result keeps the absolute
   rounding error of its large terms (a host emulation of the float kernels
   differed by at most 3.3e-7 against the array's scale, by 7.8e-7 against
   single elements). */
template <typename T> static int64_t mismatches(const std::vector<T> &got, const std::vector<T> &want, double tol) {
    int64_t bad = 0;
    double scale = 1.0;
    for (size_t i = 0; i < want.size(); i++) scale = fabs((double)want[i]) > scale ? fabs((double)want[i]) : scale;
    for (size_t i = 0; i < want.size(); i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= tol * scale)) bad++;
    return bad;
}

/* The step values for step t (>= 1), as the host uploads them before a launch. */
static hpdl_optim_step step_values(double lr, double beta1, double beta2, int64_t t) {
    hpdl_optim_step s;
    memset(&s, 0xff, sizeof s);
    HPDL_EXPECT(hpdl_optim_step_make(lr, beta1, beta2, t, &s) == HPDL_OK);
    return s;
}

/* ---- against the CPU twins ------------------------------------------------ */

template <class Ty> static void check_sgd(double momentum, double weight_decay, int nesterov) {
    typedef typename Ty::elem T;
    std::vector<T> w(kParams), grad(kParams), vel(kParams, (T)0);
    device_vector<T> dw(kParams), dgrad(kParams), dvel(kParams);
    device_vector<hpdl_optim_step> dstep(1);
    fill_uniform(w, -1, 1);
    dw.put(w.data());
    dvel.put(vel.data());
    for (int t = 1; t <= kSteps; t++) {
        double lr = 0.05 / t; /* a different lr each step */
        hpdl_optim_step s = step_values(lr, 0, 0, t);
        fill_uniform(grad, -2, 2);
        dgrad.put(grad.data());
        dstep.put(&s);
        HPDL_EXPECT(Ty::gpu_sgd(kParams, dw.ptr, dgrad.ptr, dvel.ptr, dstep.ptr, momentum, weight_decay, nesterov) ==
                    HPDL_OK);
        HPDL_EXPECT(Ty::cpu_sgd(kParams, w.data(), grad.data(), vel.data(), lr, momentum, weight_decay, nesterov) ==
                    HPDL_OK);
        HPDL_EXPECT(mismatches(dw.get(), w, Ty::tol()) == 0);
        HPDL_EXPECT(mismatches(dvel.get(), vel, Ty::tol()) == 0);
    }
}

template <class Ty> static void check_adamw(double beta1, double beta2, double eps, double weight_decay) {
    typedef typename Ty::elem T;
    std::vector<T> w(kParams), grad(kParams), m(kParams, (T)0), v(kParams, (T)0);
    device_vector<T> dw(kParams), dgrad(kParams), dm(kParams), dv(kParams);
    device_vector<hpdl_optim_step> dstep(1);
    fill_uniform(w, -1, 1);
    dw.put(w.data());
    dm.put(m.data());
    dv.put(v.data());
    for (int t = 1; t <= kSteps; t++) {
        double lr = 0.01 * (1 + 0.5 * t);
        hpdl_optim_step s = step_values(lr, beta1, beta2, t);
        fill_uniform(grad, -2, 2);
        dgrad.put(grad.data());
        dstep.put(&s);
        HPDL_EXPECT(Ty::gpu_adamw(kParams, dw.ptr, dgrad.ptr, dm.ptr, dv.ptr, dstep.ptr, beta1, beta2, eps,
                                  weight_decay) == HPDL_OK);
        HPDL_EXPECT(Ty::cpu_adamw(kParams, w.data(), grad.data(), m.data(), v.data(), t, lr, beta1, beta2, eps,
                                  weight_decay) == HPDL_OK);
        HPDL_EXPECT(mismatches(dw.get(), w, Ty::tol()) == 0);
        HPDL_EXPECT(mismatches(dm.get(), m, Ty::tol()) == 0);
        HPDL_EXPECT(mismatches(dv.get(), v, Ty::tol()) == 0);
    }
}

static void test_sgd_f32(void) {
    NO_GPU_SKIP();
    check_sgd<optim_f32>(0.9, 0.0, 0);
    check_sgd<optim_f32>(0.9, 1e-4, 1);
    check_sgd<optim_f32>(0.0, 0.01, 0);
}

static void test_sgd_f64(void) {
    NO_GPU_SKIP();
    check_sgd<optim_f64>(0.9, 0.0, 0);
    check_sgd<optim_f64>(0.9, 1e-4, 1);
    check_sgd<optim_f64>(0.0, 0.01, 0);
}

static void test_adamw_f32(void) {
    NO_GPU_SKIP();
    check_adamw<optim_f32>(0.9, 0.999, 1e-8, 0.01);
    check_adamw<optim_f32>(0.0, 0.5, 1e-3, 0.0);
}

static void test_adamw_f64(void) {
    NO_GPU_SKIP();
    check_adamw<optim_f64>(0.9, 0.999, 1e-8, 0.01);
    check_adamw<optim_f64>(0.0, 0.5, 1e-3, 0.0);
}

/* ---- skip ----------------------------------------------------------------- */

/* With skip set, neither optimiser writes: weights and state keep their bits. */
template <class Ty> static void check_skip(void) {
    typedef typename Ty::elem T;
    const int64_t n = 4099;
    std::vector<T> w(n), grad(n), a(n), b(n);
    device_vector<T> dw(n), dgrad(n), da(n), db(n);
    device_vector<hpdl_optim_step> dstep(1);
    hpdl_optim_step s = step_values(0.1, 0.9, 0.999, 3);
    fill_uniform(w, -1, 1);
    fill_uniform(grad, -2, 2);
    fill_uniform(a, -1, 1);
    fill_uniform(b, 0, 1);
    dw.put(w.data());
    dgrad.put(grad.data());
    da.put(a.data());
    db.put(b.data());
    s.skip = 1;
    dstep.put(&s);
    HPDL_EXPECT(Ty::gpu_sgd(n, dw.ptr, dgrad.ptr, da.ptr, dstep.ptr, 0.9, 0.01, 1) == HPDL_OK);
    HPDL_EXPECT(Ty::gpu_adamw(n, dw.ptr, dgrad.ptr, da.ptr, db.ptr, dstep.ptr, 0.9, 0.999, 1e-8, 0.01) == HPDL_OK);
    HPDL_EXPECT(memcmp(dw.get().data(), w.data(), n * sizeof(T)) == 0);
    HPDL_EXPECT(memcmp(da.get().data(), a.data(), n * sizeof(T)) == 0);
    HPDL_EXPECT(memcmp(db.get().data(), b.data(), n * sizeof(T)) == 0);
    s.skip = 0; /* and without it the same launch does write */
    dstep.put(&s);
    HPDL_EXPECT(Ty::gpu_sgd(n, dw.ptr, dgrad.ptr, da.ptr, dstep.ptr, 0.9, 0.01, 1) == HPDL_OK);
    HPDL_EXPECT(memcmp(dw.get().data(), w.data(), n * sizeof(T)) != 0);
}

static void test_skip_leaves_everything_untouched(void) {
    NO_GPU_SKIP();
    check_skip<optim_f32>();
    check_skip<optim_f64>();
}

/* ---- finiteness flag ------------------------------------------------------ */

#define FLAG_TYPE(SUFFIX, T, FROM_F64, LARGEST)                                                              \
    struct flag_##SUFFIX {                                                                                  \
        typedef T elem;                                                                                     \
        static T from(double x) { return FROM_F64(x); }                                                    \
        static T largest() { return FROM_F64(LARGEST); }                                                   \
        static T lowest() { return FROM_F64(-(LARGEST)); }                                                 \
        static hpdl_status flag(int64_t n, const T *x, int *d_flag) {                                       \
            return hpdl_cuda_flag_nonfinite_##SUFFIX(n, x, d_flag, 0);                                      \
        }                                                                                                   \
    };
#define FROM_F64_F32(x) ((float)(x))
#define FROM_F64_F64(x) ((double)(x))
#define FROM_F64_F16(x) hpdl_f16_from_f32((float)(x))
#define FROM_F64_BF16(x) hpdl_bf16_from_f32((float)(x))
FLAG_TYPE(f32, float, FROM_F64_F32, FLT_MAX)
FLAG_TYPE(f64, double, FROM_F64_F64, DBL_MAX)
FLAG_TYPE(f16, hpdl_f16, FROM_F64_F16, 65504.0)
FLAG_TYPE(bf16, hpdl_bf16, FROM_F64_BF16, 3.3895313892515355e38) /* (2 - 2^-7) * 2^127 */

/* Runs the check on x with the flag set to `before`; returns the flag after. */
template <class Ty> static int flag_after(const std::vector<typename Ty::elem> &x, int before) {
    device_vector<typename Ty::elem> dx(x.size());
    device_vector<int> dflag(1);
    int after = -1;
    dx.put(x.data());
    dflag.put(&before);
    HPDL_EXPECT(Ty::flag((int64_t)x.size(), dx.ptr, dflag.ptr) == HPDL_OK);
    dflag.get(&after);
    return after;
}

template <class Ty> static void check_flag(void) {
    typedef typename Ty::elem T;
    const size_t n = 1000003;
    std::vector<T> x(n);
    for (size_t i = 0; i < n; i++) x[i] = Ty::from(200.0 * hpdl_rng_uniform(&rng) - 100.0);
    x[1] = Ty::largest(); /* the finite extremes and a tiny value are not flagged */
    x[2] = Ty::lowest();
    x[3] = Ty::from(1e-40);
    HPDL_EXPECT(flag_after<Ty>(x, 0) == 0);
    HPDL_EXPECT(flag_after<Ty>(x, 1) == 1); /* never cleared */
    x[n - 1] = Ty::from(NAN); /* at the last element */
    HPDL_EXPECT(flag_after<Ty>(x, 0) == 1);
    x[n - 1] = Ty::from(1.0);
    x[0] = Ty::from(HUGE_VAL);
    HPDL_EXPECT(flag_after<Ty>(x, 0) == 1);
    x[0] = Ty::from(1.0);
    x[n / 2] = Ty::from(-HUGE_VAL);
    HPDL_EXPECT(flag_after<Ty>(x, 0) == 1);
    x[n / 2] = Ty::from(1.0);
    HPDL_EXPECT(flag_after<Ty>(std::vector<T>(x.begin(), x.begin() + 1), 0) == 0); /* one element */
    x[0] = Ty::from(NAN);
    HPDL_EXPECT(flag_after<Ty>(std::vector<T>(x.begin(), x.begin() + 1), 0) == 1);
}

static void test_flag_nonfinite_every_type(void) {
    NO_GPU_SKIP();
    check_flag<flag_f32>();
    check_flag<flag_f64>();
    check_flag<flag_f16>();
    check_flag<flag_bf16>();
}

/* ---- a captured step, replayed -------------------------------------------- */

/* Graph: flag non-finite gradients into the step's own skip, then AdamW.
   Before each replay the host uploads new gradients and a new hpdl_optim_step
   (lr, bias corrections, skip = 0); the replay with a NaN gradient must skip
   itself, with no host check in between. */
template <typename T> static void check_graph_replay(double tol) {
    const int64_t n = 4099;
    const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
    std::vector<T> w(n), grad(n), m(n, (T)0), v(n, (T)0);
    device_vector<T> dw(n), dgrad(n), dm(n), dv(n);
    device_vector<hpdl_optim_step> dstep(1);
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    hpdl_status flagged, stepped;
    int64_t t = 0;
    fill_uniform(w, -1, 1);
    dw.put(w.data());
    dm.put(m.data());
    dv.put(v.data());
    HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    HPDL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    flagged = hpdl_cuda_flag_nonfinite(n, dgrad.ptr, &dstep.ptr->skip, stream);
    stepped = hpdl_cuda_adamw(n, dw.ptr, dgrad.ptr, dm.ptr, dv.ptr, dstep.ptr, beta1, beta2, eps, weight_decay, stream);
    HPDL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    HPDL_EXPECT(flagged == HPDL_OK && stepped == HPDL_OK);
    HPDL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 5; replay++) {
        int poisoned = replay == 2;
        double lr = 0.01 * (replay + 1);
        hpdl_optim_step s = step_values(lr, beta1, beta2, t + 1);
        std::vector<T> w_before = dw.get();
        fill_uniform(grad, -2, 2);
        if (poisoned) grad[n - 1] = (T)NAN;
        HPDL_CUDA_CHECK(cudaMemcpyAsync(dgrad.ptr, grad.data(), n * sizeof(T), cudaMemcpyHostToDevice, stream));
        HPDL_CUDA_CHECK(cudaMemcpyAsync(dstep.ptr, &s, sizeof s, cudaMemcpyHostToDevice, stream));
        HPDL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        HPDL_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (poisoned) {
            HPDL_EXPECT(memcmp(dw.get().data(), w_before.data(), n * sizeof(T)) == 0);
            continue;
        }
        t++;
        HPDL_EXPECT(hpdl_adamw(n, w.data(), grad.data(), m.data(), v.data(), t, lr, beta1, beta2, eps, weight_decay) ==
                    HPDL_OK);
        HPDL_EXPECT(mismatches(dw.get(), w, tol) == 0);
        HPDL_EXPECT(mismatches(dm.get(), m, tol) == 0);
        HPDL_EXPECT(mismatches(dv.get(), v, tol) == 0);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

static void test_graph_replay_with_new_lr(void) {
    NO_GPU_SKIP();
    check_graph_replay<float>(1e-6);
    check_graph_replay<double>(1e-14);
}

/* ---- bad arguments -------------------------------------------------------- */

/* hpdl_optim_step_make is host code: runs without a GPU. */
static void test_optim_step_make(void) {
    hpdl_optim_step s, before;
    s = step_values(0.5, 0.9, 0.999, 3);
    HPDL_EXPECT(s.lr == 0.5 && s.skip == 0);
    HPDL_EXPECT_NEAR(s.bias_correction1, 1 - 0.9 * 0.9 * 0.9, 1e-15);
    HPDL_EXPECT_NEAR(s.bias_correction2, 1 - 0.999 * 0.999 * 0.999, 1e-15);
    s = step_values(0.5, 0, 0, 1); /* SGD: no bias correction */
    HPDL_EXPECT(s.bias_correction1 == 1 && s.bias_correction2 == 1);
    memset(&before, 0x5a, sizeof before);
    s = before;
    HPDL_EXPECT(hpdl_optim_step_make(0.1, 0.9, 0.999, 0, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_optim_step_make(-0.1, 0.9, 0.999, 1, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_optim_step_make(NAN, 0.9, 0.999, 1, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_optim_step_make(0.1, 1.0, 0.999, 1, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_optim_step_make(0.1, 0.9, -0.5, 1, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_optim_step_make(0.1, 0.9, 0.999, 1, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&s, &before, sizeof s) == 0);
}

/* Refused before any launch, so nothing is written; n == 0 launches nothing. */
static void test_bad_arguments(void) {
    NO_GPU_SKIP();
    const int64_t n = 257;
    std::vector<float> w(n), a(n), b(n);
    device_vector<float> dw(n), da(n), db(n);
    device_vector<hpdl_optim_step> dstep(1);
    device_vector<int> dflag(1);
    hpdl_optim_step s = step_values(0.1, 0.9, 0.999, 1);
    fill_uniform(w, -1, 1);
    fill_uniform(a, -1, 1);
    fill_uniform(b, 0, 1);
    dw.put(w.data());
    da.put(a.data());
    db.put(b.data());
    dstep.put(&s);
    float *W = dw.ptr, *A = da.ptr, *B = db.ptr;
    const hpdl_optim_step *S = dstep.ptr;
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(-1, W, A, B, S, 0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, NULL, A, B, S, 0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, NULL, B, S, 0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, NULL, S, 0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, B, NULL, 0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, B, S, -0.9, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, B, S, 0.9, -1, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, B, S, 0.9, NAN, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f32(n, W, A, B, S, 0.0, 0, 1, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(-1, W, A, B, B, S, 0.9, 0.999, 1e-8, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, NULL, B, S, 0.9, 0.999, 1e-8, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, A, B, NULL, 0.9, 0.999, 1e-8, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, A, B, S, 1.0, 0.999, 1e-8, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, A, B, S, 0.9, -0.1, 1e-8, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, A, B, S, 0.9, 0.999, 0, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_adamw_f32(n, W, A, A, B, S, 0.9, 0.999, 1e-8, -1, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_flag_nonfinite_f32(-1, A, dflag.ptr, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_flag_nonfinite_f32(n, NULL, dflag.ptr, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_flag_nonfinite_f32(n, A, NULL, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_sgd_momentum_f64(0, NULL, NULL, NULL, NULL, 0.9, 0, 0, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_adamw_f64(0, NULL, NULL, NULL, NULL, NULL, 0.9, 0.999, 1e-8, 0, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_flag_nonfinite_bf16(0, NULL, NULL, 0) == HPDL_OK);
    HPDL_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
    HPDL_EXPECT(memcmp(dw.get().data(), w.data(), n * sizeof(float)) == 0);
    HPDL_EXPECT(memcmp(da.get().data(), a.data(), n * sizeof(float)) == 0);
    HPDL_EXPECT(memcmp(db.get().data(), b.data(), n * sizeof(float)) == 0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_optim_step_make),
        HPDL_TEST(test_sgd_f32),
        HPDL_TEST(test_sgd_f64),
        HPDL_TEST(test_adamw_f32),
        HPDL_TEST(test_adamw_f64),
        HPDL_TEST(test_skip_leaves_everything_untouched),
        HPDL_TEST(test_flag_nonfinite_every_type),
        HPDL_TEST(test_graph_replay_with_new_lr),
        HPDL_TEST(test_bad_arguments),
    };
    hpdl_rng_seed(&rng, 20261126);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
