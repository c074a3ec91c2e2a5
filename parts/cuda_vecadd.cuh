/* ------------------------------------------------------------------------ */
/* Vector add c = a + b: the four launch configurations of the CUDA workflow */
/* (spliced into hpdl_cuda.cuh; CPU twin: hpdl_vec_add_<type> in hpdl.h)     */
/* ------------------------------------------------------------------------ */

/* From one thread doing all the work to a grid that fills every SM. All four
   give the same result; only the speed differs (bench/vecadd measures it). */
typedef enum hpdl_vecadd_config {
    HPDL_VECADD_ONE_THREAD = 0, /* (a) 1 block x 1 thread: a plain loop on the GPU */
    HPDL_VECADD_ONE_BLOCK,      /* (b) 1 block x 256 threads: one SM at work */
    HPDL_VECADD_MANY_BLOCKS,    /* (c) ceil(n/256) blocks x 256: one element a thread */
    HPDL_VECADD_GRID_STRIDE     /* (d) a grid sized from the SM count (see
                                   HPDL_VECADD_WAVES); each thread loops over
                                   the array, moving 16 bytes per load */
} hpdl_vecadd_config;

#define HPDL_VECADD_CONFIG_COUNT 4
#define HPDL_VECADD_THREADS 256 /* threads per block of (b), (c) and (d) */

/* (d) launches at most this many waves of the blocks that fit on all SMs at
   once (fewer when n needs fewer). On an H100 at 100M floats, 1 wave (the
   textbook persistent grid) moved 2.89 TB/s, 4 waves 2.91, 16 2.96, 32 2.99,
   64 3.01 and 128 (one 16-byte pack per thread there) 3.02, against 2.94 for
   a device-to-device copy: short-lived blocks, started in address order,
   seem to keep DRAM accesses together (notes/vecadd.md). Define it before
   including to change it; any value gives the same result. */
#ifndef HPDL_VECADD_WAVES
#define HPDL_VECADD_WAVES 128
#endif

HPDL_API const char *hpdl_vecadd_config_name(hpdl_vecadd_config c) {
    switch (c) {
    case HPDL_VECADD_ONE_THREAD: return "one-thread";
    case HPDL_VECADD_ONE_BLOCK: return "one-block";
    case HPDL_VECADD_MANY_BLOCKS: return "many-blocks";
    case HPDL_VECADD_GRID_STRIDE: return "grid-stride";
    }
    return "unknown";
}

/* An "Op" is what HPDL_DEFINE_CUDA_VECADD generates per type: a struct with
   value_type (the device element type) and a static __device__ add(). */

/* Grid-stride loop over elements, 64-bit indices. The scalar configurations
   differ only in the grid they launch it with: (a) 1x1 walks the whole
   array, (b) 1x256 strides by 256, (c) one element a thread (one trip). */
template <class Op>
__global__ void hpdl__vecadd_scalar_kernel(int64_t n, const typename Op::value_type *HPDL_RESTRICT a,
                                           const typename Op::value_type *HPDL_RESTRICT b,
                                           typename Op::value_type *HPDL_RESTRICT c) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = Op::add(a[i], b[i]);
}

/* Adds two 16-byte packs element by element. The packs travel as uint4 so
   that each load and store is one 128-bit instruction; memcpy reinterprets
   them (the compiler keeps it all in registers). */
template <class Op>
__device__ __forceinline__ uint4 hpdl__vecadd_pack_add(uint4 x, uint4 y) {
    typedef typename Op::value_type V;
    enum { per_pack = 16 / sizeof(V) };
    V xs[per_pack], ys[per_pack], zs[per_pack];
    uint4 z;
    memcpy(xs, &x, 16);
    memcpy(ys, &y, 16);
#pragma unroll
    for (int k = 0; k < per_pack; k++) zs[k] = Op::add(xs[k], ys[k]);
    memcpy(&z, zs, 16);
    return z;
}

/* (d) on 16-byte-aligned a, b, c: grid-stride over 16-byte packs, then the
   last n % (elements per pack) elements one per thread (fewer than a block). */
template <class Op>
__global__ void hpdl__vecadd_vector_kernel(int64_t n, const typename Op::value_type *HPDL_RESTRICT a,
                                           const typename Op::value_type *HPDL_RESTRICT b,
                                           typename Op::value_type *HPDL_RESTRICT c) {
    const int64_t per_pack = (int64_t)(16 / sizeof(typename Op::value_type));
    const uint4 *pa = reinterpret_cast<const uint4 *>(a);
    const uint4 *pb = reinterpret_cast<const uint4 *>(b);
    uint4 *pc = reinterpret_cast<uint4 *>(c);
    int64_t packs = n / per_pack, stride = (int64_t)gridDim.x * blockDim.x;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, i;
    for (i = t; i < packs; i += stride) pc[i] = hpdl__vecadd_pack_add<Op>(pa[i], pb[i]);
    i = packs * per_pack + t;
    if (i < n) c[i] = Op::add(a[i], b[i]);
}

HPDL_API int hpdl__aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

HPDL_API hpdl_status hpdl__vecadd_check(hpdl_vecadd_config cfg, int64_t n, const void *a, const void *b,
                                        const void *c) {
    if (n < 0 || (int)cfg < 0 || (int)cfg >= HPDL_VECADD_CONFIG_COUNT) return HPDL_ERR_INVALID;
    if (n > 0 && (!a || !b || !c)) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* Grid of (d) for `kernel`: HPDL_VECADD_WAVES times the blocks of
   HPDL_VECADD_THREADS that fit on all SMs at once, but no more than `items`
   needs (one item per thread). */
HPDL_API hpdl_status hpdl__grid_stride_blocks(const void *kernel, int64_t items, int *blocks) {
    int device = 0, sms = 0, per_sm = 0;
    int64_t needed = (items + HPDL_VECADD_THREADS - 1) / HPDL_VECADD_THREADS, most;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    HPDL_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, HPDL_VECADD_THREADS, 0));
    most = (int64_t)sms * per_sm * HPDL_VECADD_WAVES;
    *blocks = (int)(needed < most ? needed : most);
    if (*blocks < 1) *blocks = 1;
    return HPDL_OK;
}

/* Launch geometry of the scalar kernel for each configuration. */
template <class Op>
static inline hpdl_status hpdl__vecadd_scalar_grid(hpdl_vecadd_config cfg, int64_t n, int *blocks, int *threads) {
    int64_t many = (n + HPDL_VECADD_THREADS - 1) / HPDL_VECADD_THREADS;
    *blocks = 1;
    *threads = cfg == HPDL_VECADD_ONE_THREAD ? 1 : HPDL_VECADD_THREADS;
    if (cfg == HPDL_VECADD_MANY_BLOCKS) {
        if (many > 2147483647) return HPDL_ERR_UNSUPPORTED; /* past the grid's x limit */
        *blocks = (int)many;
    }
    if (cfg == HPDL_VECADD_GRID_STRIDE) /* misaligned pointers: scalar loads, same grid rule */
        return hpdl__grid_stride_blocks((const void *)hpdl__vecadd_scalar_kernel<Op>, n, blocks);
    return HPDL_OK;
}

template <class Op>
static inline hpdl_status hpdl__cuda_vecadd(hpdl_vecadd_config cfg, int64_t n, const typename Op::value_type *a,
                                           const typename Op::value_type *b, typename Op::value_type *c,
                                           cudaStream_t stream) {
    const int64_t per_pack = (int64_t)(16 / sizeof(typename Op::value_type));
    int blocks = 1, threads = HPDL_VECADD_THREADS;
    hpdl_status s = hpdl__vecadd_check(cfg, n, a, b, c);
    if (s != HPDL_OK || n == 0) return s;
    if (cfg == HPDL_VECADD_GRID_STRIDE && hpdl__aligned16(a) && hpdl__aligned16(b) && hpdl__aligned16(c)) {
        s = hpdl__grid_stride_blocks((const void *)hpdl__vecadd_vector_kernel<Op>, n / per_pack, &blocks);
        if (s != HPDL_OK) return s;
        hpdl__vecadd_vector_kernel<Op><<<blocks, threads, 0, stream>>>(n, a, b, c);
    } else {
        s = hpdl__vecadd_scalar_grid<Op>(cfg, n, &blocks, &threads);
        if (s != HPDL_OK) return s;
        hpdl__vecadd_scalar_kernel<Op><<<blocks, threads, 0, stream>>>(n, a, b, c);
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* hpdl_cuda_vec_add_<SUFFIX>(cfg, n, a, b, c, stream): c[i] = a[i] + b[i] on
   device (or managed) pointers, asynchronously on `stream`. T is the host
   type, DEV_T the CUDA type with the same bits; the sum is computed in ACC_T
   (LOAD: DEV_T -> ACC_T, STORE: ACC_T -> DEV_T, rounding to nearest even),
   exactly like the CPU twin. c may be a or b (in place); no partial overlap.
   HPDL_ERR_INVALID (nothing launched) for n < 0, a bad cfg, or a NULL
   pointer with n > 0. */
#define HPDL_DEFINE_CUDA_VECADD(SUFFIX, T, DEV_T, ACC_T, LOAD, STORE)                                  \
    struct hpdl__vecadd_op_##SUFFIX {                                                                  \
        typedef DEV_T value_type;                                                                      \
        static __device__ __forceinline__ DEV_T add(DEV_T x, DEV_T y) {                                \
            return STORE((ACC_T)LOAD(x) + (ACC_T)LOAD(y));                                             \
        }                                                                                              \
    };                                                                                                 \
    static_assert(sizeof(T) == sizeof(DEV_T), "hpdl: host and device element types differ in size"); \
    HPDL_API hpdl_status hpdl_cuda_vec_add_##SUFFIX(hpdl_vecadd_config cfg, int64_t n, const T *a,     \
                                                    const T *b, T *c, cudaStream_t stream) {           \
        return hpdl__cuda_vecadd<hpdl__vecadd_op_##SUFFIX>(cfg, n, (const DEV_T *)a, (const DEV_T *)b, \
                                                           (DEV_T *)c, stream);                        \
    }

HPDL_DEFINE_CUDA_VECADD(f32, float, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)
HPDL_DEFINE_CUDA_VECADD(f64, double, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)
HPDL_DEFINE_CUDA_VECADD(f16, hpdl_f16, __half, float, __half2float, __float2half_rn)
HPDL_DEFINE_CUDA_VECADD(bf16, hpdl_bf16, __nv_bfloat16, float, __bfloat162float, __float2bfloat16_rn)

/* ------------------------------------------------------------------------ */
/* Unified (managed) memory                                                  */
/* ------------------------------------------------------------------------ */

/* cudaMallocManaged: one pointer valid on host and device; pages move to
   whoever touches them (or ahead of time, with hpdl_cuda_prefetch). Free
   with hpdl_cuda_free. Refuses (HPDL_ERR_NOMEM, with a message) more than
   the device has free minus a margin (1/20 of its memory, at least 512 MiB):
   oversubscribed managed memory can hang the GPU, not only the program. The
   check sees one request at a time, and managed pages count as used only
   once they reach the GPU: a caller that needs several buffers at once should
   ask for their sum in one call, or check the sum against free memory first. */
HPDL_API hpdl_status hpdl_cuda_alloc_managed(void **ptr, size_t bytes) {
    size_t free_b = 0, total_b = 0, margin;
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    margin = total_b / 20 > ((size_t)512 << 20) ? total_b / 20 : ((size_t)512 << 20);
    if (free_b < margin || bytes > free_b - margin) {
        fprintf(stderr, "hpdl_cuda_alloc_managed: refusing %zu bytes: the device has %zu bytes free "
                        "and keeps %zu spare\n", bytes, free_b, margin);
        return HPDL_ERR_NOMEM;
    }
    if (cudaMallocManaged(ptr, bytes, cudaMemAttachGlobal) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* Moves managed pages ahead of use, asynchronously on `stream`: to GPU
   `device`, or to the host for cudaCpuDeviceId. HPDL_ERR_UNSUPPORTED where
   the GPU cannot (no concurrent managed access: Windows, some older GPUs);
   pages then still move on first touch. */
HPDL_API hpdl_status hpdl_cuda_prefetch(const void *ptr, size_t bytes, int device, cudaStream_t stream) {
    int count = 0, current = 0, concurrent = 0;
    HPDL_CUDA_TRY(cudaGetDeviceCount(&count));
    if ((!ptr && bytes) || device < cudaCpuDeviceId || device >= count) return HPDL_ERR_INVALID;
    if (bytes == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess,
                                         device == cudaCpuDeviceId ? current : device));
    if (!concurrent) return HPDL_ERR_UNSUPPORTED;
#if CUDART_VERSION >= 13000 /* CUDA 13 names the destination with a cudaMemLocation */
    {
        cudaMemLocation where;
        where.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
        where.id = device == cudaCpuDeviceId ? 0 : device;
        HPDL_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, where, 0, stream));
    }
#else
    HPDL_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, device, stream));
#endif
    return HPDL_OK;
}
