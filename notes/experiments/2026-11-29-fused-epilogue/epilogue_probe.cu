/* The data-parallel step's first-layer dW GEMM alone (784 x 2048 x 512,
   f32, AUTO's 3xTF32 kernel through hpdl__gemm_auto_mirrored) on one GPU,
   after C went out from the staged tile (5e52d23): with posts (into a local
   buffer standing for the peer's inbox), with the staged tile stored and
   nothing posted (what the plain GEMM would gain from the same epilogue),
   and without a mirror (the plain GEMM, C stored from the accumulators).
   Operands of 0.0115 (bytes 0x3c). Events around 100 launches, the median
   of 9 rounds, the variants in turns.
   nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a epilogue_probe.cu -lcublas -lcublasLt -ldl */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

enum { POSTED, STAGED_ONLY, NO_MIRROR, VARIANTS };
static const char *k_names[] = {"staged C and posts", "staged C, no posts", "no mirror"};

static __device__ __forceinline__ void post(uint4 *to, uint4 p) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(p.x), "r"(p.y), "r"(p.z), "r"(p.w)
                 : "memory");
}

template <int HOW> struct probe_mirror {
    enum { POSTS = 1 };
    float *to;
    __device__ __forceinline__ void operator()(size_t i, const float *v) const {
        if (HOW == POSTED) post((uint4 *)(to + i), *(const uint4 *)v);
    }
};

struct operands { int M, N, K; float *A, *B, *C, *to; };

template <int HOW> static void launch(const operands &o) {
    hpdl_status s;
    if (HOW == NO_MIRROR) {
        s = hpdl__gemm_auto_mirrored(HPDL_TRANS, HPDL_NO_TRANS, o.M, o.N, o.K, (const float *)o.A, o.M,
                                     (const float *)o.B, o.N, o.C, o.N, hpdl__gemm_no_mirror(), 0);
    } else {
        probe_mirror<HOW> m;
        m.to = o.to;
        s = hpdl__gemm_auto_mirrored(HPDL_TRANS, HPDL_NO_TRANS, o.M, o.N, o.K, (const float *)o.A, o.M,
                                     (const float *)o.B, o.N, o.C, o.N, m, 0);
    }
    if (s != HPDL_OK) { fprintf(stderr, "%s: status %d\n", k_names[HOW], (int)s); exit(1); }
}

static void run(int how, const operands &o) {
    if (how == POSTED) launch<POSTED>(o);
    else if (how == STAGED_ONLY) launch<STAGED_ONLY>(o);
    else launch<NO_MIRROR>(o);
}

int main(void) {
    enum { ROUNDS = 9, LAUNCHES = 100 };
    operands o = {784, 2048, 512, NULL, NULL, NULL, NULL};
    const size_t out = (size_t)o.M * o.N * sizeof(float);
    std::vector<float> us[VARIANTS];
    cudaEvent_t a, b;
    int round, v, i;
    cudaMalloc((void **)&o.A, (size_t)o.K * o.M * sizeof(float));
    cudaMalloc((void **)&o.B, (size_t)o.K * o.N * sizeof(float));
    cudaMalloc((void **)&o.C, out);
    cudaMalloc((void **)&o.to, out);
    cudaMemset(o.A, 0x3c, (size_t)o.K * o.M * sizeof(float));
    cudaMemset(o.B, 0x3c, (size_t)o.K * o.N * sizeof(float));
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (v = 0; v < VARIANTS; v++) run(v, o);
    for (round = 0; round < ROUNDS; round++)
        for (v = 0; v < VARIANTS; v++) {
            float ms = 0;
            cudaEventRecord(a);
            for (i = 0; i < LAUNCHES; i++) run(v, o);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            cudaEventElapsedTime(&ms, a, b);
            us[v].push_back(1e3f * ms / LAUNCHES);
        }
    if (cudaGetLastError() != cudaSuccess) { fprintf(stderr, "CUDA error\n"); return 1; }
    printf("variant,median_us,min_us,max_us\n");
    for (v = 0; v < VARIANTS; v++) {
        std::sort(us[v].begin(), us[v].end());
        printf("%s,%.2f,%.2f,%.2f\n", k_names[v], us[v][ROUNDS / 2], us[v][0], us[v][ROUNDS - 1]);
    }
    return 0;
}
