/* hpdl_cuda.cuh - v0.1.0 - high-performance deep learning kernels, CUDA part.

   Built on hpdl.h (included here). Every GPU kernel has a CPU twin of the
   same name in hpdl.h that the tests compare it against.

   USAGE
       #include "hpdl_cuda.cuh"
       float *d_x;
       HPDL_CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
       HPDL_CHECK(hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, n, d_a, d_b, d_c, 0));
       nvcc -O3 -arch=native prog.cu -lcublas

   OPTIONS
       HPDL_NO_NVTX   compile the NVTX ranges out (no nvtx3 header needed)

   Half types: hpdl_f16 / hpdl_bf16 have the bits of __half / __nv_bfloat16;
   launchers take the hpdl_ types and reinterpret them for the kernels.

   CHANGELOG
       2026-11-22  v0.1.0  check macros, buffers, event timer, NVTX, device query.
*/
#ifndef HPDL_CUDA_CUH
#define HPDL_CUDA_CUH

#include "hpdl.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifndef HPDL_NO_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */
/* ------------------------------------------------------------------------ */

/* For examples and benches: print the failing call with file:line and exit. */
#define HPDL_CUDA_CHECK(call)                                                 \
    do {                                                                      \
        cudaError_t hpdl__e = (call);                                         \
        if (hpdl__e != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", __FILE__,    \
                    __LINE__, cudaGetErrorName(hpdl__e),                      \
                    cudaGetErrorString(hpdl__e), #call);                      \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define HPDL_CUBLAS_CHECK(call)                                               \
    do {                                                                      \
        cublasStatus_t hpdl__b = (call);                                      \
        if (hpdl__b != CUBLAS_STATUS_SUCCESS) {                               \
            fprintf(stderr, "%s:%d: cuBLAS error %s in %s\n", __FILE__,       \
                    __LINE__, cublasGetStatusName(hpdl__b), #call);           \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

/* For library code: report the failing call and return HPDL_ERR_CUDA. */
#define HPDL_CUDA_TRY(call)                                                   \
    do {                                                                      \
        cudaError_t hpdl__e = (call);                                         \
        if (hpdl__e != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: CUDA error %s in %s\n", __FILE__,         \
                    __LINE__, cudaGetErrorString(hpdl__e), #call);            \
            return HPDL_ERR_CUDA;                                             \
        }                                                                     \
    } while (0)

/* After a launch: a bad configuration shows up only here. */
#define HPDL_CUDA_TRY_LAUNCH() HPDL_CUDA_TRY(cudaGetLastError())

/* True when a usable GPU is present; tests skip when it is not. */
HPDL_API int hpdl_cuda_available(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return count > 0;
}

/* ------------------------------------------------------------------------ */
/* Device query                                                              */
/* ------------------------------------------------------------------------ */

typedef struct hpdl_cuda_device_info {
    char name[256];
    int sm_count, cc_major, cc_minor;
    size_t global_mem, free_mem, l2_bytes, smem_per_block_optin;
    double mem_bandwidth_gbs; /* from clock and bus width: a datasheet-like peak */
} hpdl_cuda_device_info;

HPDL_API hpdl_status hpdl_cuda_device_query(int device, hpdl_cuda_device_info *info) {
    cudaDeviceProp p;
    size_t free_b = 0, total_b = 0;
    int clock_khz = 0, bus_bits = 0, current = 0;
    if (!info) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDeviceProperties(&p, device));
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(device));
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    HPDL_CUDA_TRY(cudaSetDevice(current));
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->global_mem = p.totalGlobalMem;
    info->free_mem = free_b;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->smem_per_block_optin = p.sharedMemPerBlockOptin;
    info->mem_bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9; /* DDR */
    return HPDL_OK;
}

/* "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3": the bench/results/<gpu>/ folder. */
HPDL_API void hpdl_cuda_device_slug(const char *name, char *slug, size_t size) {
    size_t o = 0;
    const char *p = name;
    if (size == 0) return;
    if (strncmp(p, "NVIDIA ", 7) == 0) p += 7;
    for (; *p && o + 1 < size; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) slug[o++] = c;
        else if (o > 0 && slug[o - 1] != '-') slug[o++] = '-';
    }
    while (o > 0 && slug[o - 1] == '-') o--;
    slug[o] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

HPDL_API hpdl_status hpdl_cuda_alloc(void **ptr, size_t bytes) {
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    if (cudaMalloc(ptr, bytes) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* Page-locked host memory: needed for truly asynchronous copies. */
HPDL_API hpdl_status hpdl_cuda_alloc_pinned(void **ptr, size_t bytes) {
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    if (cudaMallocHost(ptr, bytes) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

HPDL_API void hpdl_cuda_free(void *ptr) { if (ptr) cudaFree(ptr); }
HPDL_API void hpdl_cuda_free_pinned(void *ptr) { if (ptr) cudaFreeHost(ptr); }

HPDL_API hpdl_status hpdl_cuda_to_device(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    return HPDL_OK;
}

HPDL_API hpdl_status hpdl_cuda_to_host(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    return HPDL_OK;
}

/* Fills a device buffer with one byte value, e.g. 0xff to poison outputs
   (every f32/f64/f16 element becomes NaN) before a test writes them. */
HPDL_API hpdl_status hpdl_cuda_poison(void *ptr, size_t bytes) {
    if (!ptr && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemset(ptr, 0xff, bytes));
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Event timer                                                               */
/* ------------------------------------------------------------------------ */

typedef struct hpdl_cuda_timer {
    cudaEvent_t start, stop;
    cudaStream_t stream;
} hpdl_cuda_timer;

HPDL_API hpdl_status hpdl_cuda_timer_create(hpdl_cuda_timer *t, cudaStream_t stream) {
    if (!t) return HPDL_ERR_INVALID;
    t->stream = stream;
    HPDL_CUDA_TRY(cudaEventCreate(&t->start));
    HPDL_CUDA_TRY(cudaEventCreate(&t->stop));
    return HPDL_OK;
}

HPDL_API void hpdl_cuda_timer_destroy(hpdl_cuda_timer *t) {
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
}

HPDL_API void hpdl_cuda_timer_start(hpdl_cuda_timer *t) { cudaEventRecord(t->start, t->stream); }

/* Waits for the stop event; returns the elapsed time in milliseconds. */
HPDL_API float hpdl_cuda_timer_stop_ms(hpdl_cuda_timer *t) {
    float ms = 0.0f;
    cudaEventRecord(t->stop, t->stream);
    cudaEventSynchronize(t->stop);
    cudaEventElapsedTime(&ms, t->start, t->stop);
    return ms;
}

/* ------------------------------------------------------------------------ */
/* NVTX ranges (visible in Nsight Systems / Compute)                         */
/* ------------------------------------------------------------------------ */

#ifndef HPDL_NO_NVTX
#define HPDL_NVTX_PUSH(name) nvtxRangePushA(name)
#define HPDL_NVTX_POP() nvtxRangePop()
#else
#define HPDL_NVTX_PUSH(name) ((void)0)
#define HPDL_NVTX_POP() ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* Timing helpers for benches                                                */
/* ------------------------------------------------------------------------ */

/* Overwrites a buffer larger than L2 so the next run starts with a cold cache
   (what a kernel sees inside a real program, not the previous run's data). */
typedef struct hpdl_cuda_l2_flusher { void *buf; size_t bytes; } hpdl_cuda_l2_flusher;

HPDL_API hpdl_status hpdl_cuda_l2_flusher_create(hpdl_cuda_l2_flusher *f) {
    int device = 0, l2 = 0;
    if (!f) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    f->bytes = 2 * (size_t)l2;
    return hpdl_cuda_alloc(&f->buf, f->bytes);
}

HPDL_API void hpdl_cuda_l2_flush(hpdl_cuda_l2_flusher *f, cudaStream_t stream) {
    if (f->buf) cudaMemsetAsync(f->buf, (int)(f->bytes & 0x7f), f->bytes, stream);
}

HPDL_API void hpdl_cuda_l2_flusher_destroy(hpdl_cuda_l2_flusher *f) { hpdl_cuda_free(f->buf); f->buf = NULL; }

/* Median time in ms of `reps` runs of run(ctx) on `stream`, each between two
   events, after `warmup` untimed runs; the L2 is flushed before each run when
   a flusher is given. Event pairs are recorded back to back and read at the
   end, so there is no host synchronisation between runs. */
typedef void (*hpdl_cuda_work_fn)(void *ctx, cudaStream_t stream);

HPDL_API hpdl_status hpdl_cuda_time_median_ms(hpdl_cuda_work_fn run, void *ctx, cudaStream_t stream,
                                              int warmup, int reps, hpdl_cuda_l2_flusher *flush,
                                              double *median_ms) {
    cudaEvent_t *ev;
    double *ms;
    hpdl_stats st;
    hpdl_status s = HPDL_OK;
    int i;
    if (!run || !median_ms || reps <= 0 || warmup < 0) return HPDL_ERR_INVALID;
    ev = (cudaEvent_t *)hpdl_alloc(2 * (size_t)reps, sizeof *ev);
    ms = (double *)hpdl_alloc((size_t)reps, sizeof *ms);
    if (!ev || !ms) { HPDL_FREE(ev); HPDL_FREE(ms); return HPDL_ERR_NOMEM; }
    for (i = 0; i < 2 * reps; i++) cudaEventCreate(&ev[i]);
    for (i = 0; i < warmup; i++) run(ctx, stream);
    for (i = 0; i < reps; i++) {
        if (flush) hpdl_cuda_l2_flush(flush, stream);
        cudaEventRecord(ev[2 * i], stream);
        run(ctx, stream);
        cudaEventRecord(ev[2 * i + 1], stream);
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess || cudaGetLastError() != cudaSuccess) s = HPDL_ERR_CUDA;
    for (i = 0; i < reps && s == HPDL_OK; i++) {
        float t = 0.0f;
        cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]);
        ms[i] = t;
    }
    if (s == HPDL_OK) s = hpdl_stats_compute(ms, reps, &st);
    if (s == HPDL_OK) *median_ms = st.median;
    for (i = 0; i < 2 * reps; i++) cudaEventDestroy(ev[i]);
    HPDL_FREE(ev);
    HPDL_FREE(ms);
    return s;
}

/* ======================================================================== */
/* Kernel families                                                           */
/* ======================================================================== */
#include "parts/cuda_vecadd.cuh"
#include "parts/cuda_gemm.cuh"
#include "parts/cuda_mlp.cuh"
#include "parts/cuda_multi.cuh"

#endif /* HPDL_CUDA_CUH */
