/* Compute cost of the factor-exchange step on one GPU, cuBLAS f32 (default math), H 2048.
   plain:   the MLP step's five products at batch b (what one rank runs today);
   sharded: what rank a runs when ranks trade the logits' gradient and the first layer's
            mask instead of reducing dW0: the forward's first layer in two column halves
            (the second one starting `delay` us late, as the peer's half of W0 arrives),
            then dx for both ranks' rows on this rank's 1024 hidden units and dW0 for
            those units over both ranks' rows (K = 2b).
   Prints per-step microseconds (median of 9 runs of 50 steps). */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { if ((x) != CUBLAS_STATUS_SUCCESS) { printf("cublas %s:%d\n", __FILE__, __LINE__); exit(1); } } while (0)

static cublasHandle_t h0, h1;
/* row-major C[MxN] = op(A) op(B) */
static void gemm(cublasHandle_t h, bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B,
                 int ldb, float *C, int ldc) {
    const float one = 1.f, zero = 0.f;
    CB(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one, B, ldb, A, lda,
                   &zero, C, ldc));
}

__global__ void sleep_kernel(long long ns) {
    long long t0 = clock64();
    /* clock64 ticks at ~1.98 GHz on an H200 SXM: ns * 2 ticks is close enough */
    while (clock64() - t0 < ns * 2) {}
}

struct bufs { float *X, *Xf, *W0, *H1, *W1, *Z, *D2, *D2f, *dW1, *D1, *D1h, *dW0; };
static const int IN = 784, H = 2048, OUT = 10;

static void plain(bufs &b, int B, cudaStream_t s0) {
    gemm(h0, 0, 0, B, H, IN, b.X, IN, b.W0, H, b.H1, H);         /* fwd_l0 */
    gemm(h0, 0, 0, B, OUT, H, b.H1, H, b.W1, OUT, b.Z, OUT);     /* fwd_l1 */
    gemm(h0, 1, 0, H, OUT, B, b.H1, H, b.D2, OUT, b.dW1, OUT);   /* dw_l1 */
    gemm(h0, 0, 1, B, H, OUT, b.D2, OUT, b.W1, OUT, b.D1, H);    /* dx_l1 */
    gemm(h0, 1, 0, IN, H, B, b.X, IN, b.D1, H, b.dW0, H);        /* dw_l0 */
}

static void sharded(bufs &b, int B, cudaStream_t s0, cudaStream_t s1, cudaEvent_t fork, cudaEvent_t join,
                    long long delay_ns) {
    int h = H / 2;
    CK(cudaEventRecord(fork, s0));
    CK(cudaStreamWaitEvent(s1, fork, 0));
    gemm(h0, 0, 0, B, h, IN, b.X, IN, b.W0, H, b.H1, H);                     /* own half */
    if (delay_ns > 0) sleep_kernel<<<1, 32, 0, s1>>>(delay_ns);
    gemm(h1, 0, 0, B, h, IN, b.X, IN, b.W0 + h, H, b.H1 + h, H);             /* peer's half */
    CK(cudaEventRecord(join, s1));
    CK(cudaStreamWaitEvent(s0, join, 0));
    gemm(h0, 0, 0, B, OUT, H, b.H1, H, b.W1, OUT, b.Z, OUT);
    gemm(h0, 1, 0, H, OUT, B, b.H1, H, b.D2, OUT, b.dW1, OUT);
    gemm(h0, 0, 1, 2 * B, h, OUT, b.D2f, OUT, b.W1, OUT, b.D1h, h);          /* dx, both ranks' rows */
    gemm(h0, 1, 0, IN, h, 2 * B, b.Xf, IN, b.D1h, h, b.dW0, H);              /* dW0, own units, K = 2B */
}

/* rank a owns W0's first 392 input rows: the forward sums X W0 over its own rows first (beta 0),
   then over the peer's rows once they arrive (beta 1); dx for both ranks' rows on every unit,
   dW0 for its own rows over both ranks' rows. */
static void gemm_beta(cublasHandle_t h, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, float beta) {
    const float one = 1.f;
    CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, ldb, A, lda, &beta, C, ldc));
}
static void by_rows(bufs &b, int B, cudaStream_t s0, long long delay_ns) {
    int r = IN / 2;
    gemm_beta(h0, B, H, r, b.X, IN, b.W0, H, b.H1, H, 0.f);
    if (delay_ns > 0) sleep_kernel<<<1, 32, 0, s0>>>(delay_ns);
    gemm_beta(h0, B, H, IN - r, b.X + r, IN, b.W0 + (size_t)r * H, H, b.H1, H, 1.f);
    gemm(h0, 0, 0, B, OUT, H, b.H1, H, b.W1, OUT, b.Z, OUT);
    gemm(h0, 1, 0, H, OUT, B, b.H1, H, b.D2, OUT, b.dW1, OUT);
    gemm(h0, 0, 1, 2 * B, H, OUT, b.D2f, OUT, b.W1, OUT, b.D1h, H);          /* dx, both ranks' rows, all units */
    gemm(h0, 1, 0, r, H, 2 * B, b.Xf, IN, b.D1h, H, b.dW0, H);               /* dW0, own input rows, K = 2B */
}

static float *dalloc(size_t n) {
    float *p;
    CK(cudaMalloc(&p, n * sizeof(float)));
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    CK(cudaMemcpy(p, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return p;
}

template <typename F> static double time_us(F f, cudaStream_t s0, int steps) {
    cudaEvent_t a, z;
    std::vector<double> r;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&z));
    for (int i = 0; i < 5; i++) f();
    for (int rep = 0; rep < 9; rep++) {
        float ms;
        CK(cudaEventRecord(a, s0));
        for (int i = 0; i < steps; i++) f();
        CK(cudaEventRecord(z, s0));
        CK(cudaEventSynchronize(z));
        CK(cudaEventElapsedTime(&ms, a, z));
        r.push_back(1e3 * ms / steps);
    }
    std::sort(r.begin(), r.end());
    return r[4];
}

int main() {
    cudaStream_t s0, s1;
    cudaEvent_t fork, join;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CB(cublasCreate(&h0));
    CB(cublasCreate(&h1));
    CB(cublasSetStream(h0, s0));
    CB(cublasSetStream(h1, s1));
    int batches[2] = {512, 3000};
    printf("b,variant,delay_us,step_us\n");
    for (int bi = 0; bi < 2; bi++) {
        int B = batches[bi];
        bufs b;
        b.X = dalloc((size_t)B * IN); b.Xf = dalloc((size_t)2 * B * IN); b.W0 = dalloc((size_t)IN * H);
        b.H1 = dalloc((size_t)B * H); b.W1 = dalloc((size_t)H * OUT); b.Z = dalloc((size_t)B * OUT);
        b.D2 = dalloc((size_t)B * OUT); b.D2f = dalloc((size_t)2 * B * OUT); b.dW1 = dalloc((size_t)H * OUT);
        b.D1 = dalloc((size_t)B * H); b.D1h = dalloc((size_t)2 * B * H); b.dW0 = dalloc((size_t)IN * H);
        printf("%d,plain,0,%.2f\n", B, time_us([&] { plain(b, B, s0); }, s0, 50));
        long long delays[5] = {0, 5000, 10000, 15000, 20000};
        for (int d = 0; d < 5; d++)
            printf("%d,sharded,%lld,%.2f\n", B, delays[d] / 1000,
                   time_us([&] { sharded(b, B, s0, s1, fork, join, delays[d]); }, s0, 50));
        long long rdelays[3] = {0, 10000, 20000};
        for (int d = 0; d < 3; d++)
            printf("%d,by_rows,%lld,%.2f\n", B, rdelays[d] / 1000,
                   time_us([&] { by_rows(b, B, s0, rdelays[d]); }, s0, 50));
        /* the products alone */
        int h = H / 2;
        printf("%d,fwd_l0_full,0,%.2f\n", B, time_us([&] { gemm(h0, 0, 0, B, H, IN, b.X, IN, b.W0, H, b.H1, H); }, s0, 50));
        printf("%d,fwd_l0_half,0,%.2f\n", B, time_us([&] { gemm(h0, 0, 0, B, h, IN, b.X, IN, b.W0, H, b.H1, H); }, s0, 50));
        printf("%d,dx_plain,0,%.2f\n", B, time_us([&] { gemm(h0, 0, 1, B, H, OUT, b.D2, OUT, b.W1, OUT, b.D1, H); }, s0, 50));
        printf("%d,dx_sharded,0,%.2f\n", B, time_us([&] { gemm(h0, 0, 1, 2 * B, h, OUT, b.D2f, OUT, b.W1, OUT, b.D1h, h); }, s0, 50));
        printf("%d,dw_l0_plain,0,%.2f\n", B, time_us([&] { gemm(h0, 1, 0, IN, H, B, b.X, IN, b.D1, H, b.dW0, H); }, s0, 50));
        printf("%d,dw_l0_sharded,0,%.2f\n", B, time_us([&] { gemm(h0, 1, 0, IN, h, 2 * B, b.Xf, IN, b.D1h, h, b.dW0, H); }, s0, 50));
        printf("%d,fwd_l0_khalf,0,%.2f\n", B, time_us([&] { gemm_beta(h0, B, H, IN / 2, b.X, IN, b.W0, H, b.H1, H, 1.f); }, s0, 50));
        printf("%d,dx_rows,0,%.2f\n", B, time_us([&] { gemm(h0, 0, 1, 2 * B, H, OUT, b.D2f, OUT, b.W1, OUT, b.D1h, H); }, s0, 50));
        printf("%d,dw_l0_rows,0,%.2f\n", B, time_us([&] { gemm(h0, 1, 0, IN / 2, H, 2 * B, b.Xf, IN, b.D1h, H, b.dW0, H); }, s0, 50));
        printf("%d,sleep,10,%.2f\n", B, time_us([&] { sleep_kernel<<<1, 32, 0, s0>>>(10000); }, s0, 50));
    }
    return 0;
}
