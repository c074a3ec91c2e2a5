/* The few-channel rung as of commit 8113027 (before the double-buffered patch and the
   asynchronous staging), its names prefixed fm_before instead of hpdl__conv_fm: ab.cu times
   it beside the header's. Made by: sed -n 5385,5803p hpdl_cuda.cuh at 8113027 | sed -e
   's/hpdl__conv_fm_/fm_before_/g; s/hpdl__conv_fm\b/fm_before/g; s/HPDL__FM_WGRAD_/FM_BEFORE_WGRAD_/g;
   s/hpdl__fm_smem/fm_before_smem_/g'. */
template <typename T> struct fm_before_args {
    const T *x, *w; /* NHWC input, KRSC filter */
    T *y;           /* NHWC output */
    int h, w_, c, p, q, k; /* x: H W C, y: P Q K (images: tiles / (tiles_h * tiles_w)) */
    int s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int tw_log2, th, tiles_h, tiles_w, tiles; /* tiles of th x 2^tw_log2 output pixels */
    int patch_h, patch_w;                     /* the input pixels a tile reads */
    int taps, kp;                             /* R*S*C, rounded up to 16 */
    int y_vec;                                /* 16-byte accesses of y or dy (K % 8 == 0, aligned) */
    const T *dy;                              /* backward-filter: NHWC dy (x, y: unused) ... */
    float *dw;                                /* ... and the f32 sums of dw, KRSC, zeroed */
};

/* Shared memory of a block: the filter (BN rows of kp + 8: ldmatrix's rows
   then fall on distinct banks), the offset table (kp ints), the patch and its
   zeroed twin, the warps' output tiles (32 rows of BN + 8). */
template <int BN> struct fm_before_smem {
    static __host__ __device__ size_t filter(int kp) { return (size_t)BN * (kp + 8) * 2; }
    static __host__ __device__ size_t patch(int patch_elems) { return ((size_t)2 * patch_elems * 2 + 15) / 16 * 16; }
    static size_t bytes(int kp, int patch_elems) {
        return filter(kp) + (size_t)kp * 4 + patch(patch_elems) + 4 * 32 * (BN + 8) * 2;
    }
};

/* The two parts of a patch offset: tap kk = (r, s, c) (past the taps: the
   start of the zeroed half, so that any pixel's part still lands in it) and
   the tile's output pixel m (its row m / TW, column m % TW). */
template <typename T> static __device__ __forceinline__ int fm_before_tap_offset(const fm_before_args<T> &a, int kk) {
    const int c = kk % a.c, r = kk / a.c / a.s, s = kk / a.c % a.s;
    return kk < a.taps ? (r * a.dil_h * a.patch_w + s * a.dil_w) * a.c + c : a.patch_h * a.patch_w * a.c;
}
template <typename T> static __device__ __forceinline__ int fm_before_pixel_offset(const fm_before_args<T> &a, int m) {
    return ((m >> a.tw_log2) * a.stride_h * a.patch_w + (m & ((1 << a.tw_log2) - 1)) * a.stride_w) * a.c;
}

/* Where index i of a run of 16-deep steps goes in a table read as one int4
   per lane t and step: i = 16 ks + 2t, +1, +8, +9 (the fragment's pairs). */
static __device__ __forceinline__ int fm_before_slot(int i) {
    const int j = i % 16;
    return i / 16 * 16 + j % 8 / 2 * 4 + j / 8 * 2 + j % 2;
}

/* Tile t's image and first output pixel. */
template <typename T>
static __device__ __forceinline__ void fm_before_tile_at(const fm_before_args<T> &a, int t, int *n, int *oh0,
                                                             int *ow0) {
    *ow0 = (t % a.tiles_w) << a.tw_log2;
    *oh0 = t / a.tiles_w % a.tiles_h * a.th;
    *n = t / a.tiles_w / a.tiles_h;
}

/* The patch buffer's second half, zeros once per block. */
template <typename T> static __device__ void fm_before_zero_half(const fm_before_args<T> &a, unsigned short *patch) {
    const int patch_elems = a.patch_h * a.patch_w * a.c;
    for (int e = patch_elems + threadIdx.x; e < 2 * patch_elems; e += blockDim.x) patch[e] = 0;
}

/* Once per block: the filter rows n0.. (zeros past K and past the taps) and
   the tap offsets of the A fragments (fm_before_slot's table). */
template <typename T, int BN>
static __device__ void fm_before_setup(const fm_before_args<T> &a, T *ws, int *koff, int n0) {
    const int wld = a.kp + 8;
    for (int e = threadIdx.x; e < BN * a.kp; e += blockDim.x) {
        const int row = e / a.kp, kk = e - row * a.kp;
        ws[row * wld + kk] = n0 + row < a.k && kk < a.taps ? a.w[(size_t)(n0 + row) * a.taps + kk] : T(0.0f);
    }
    for (int kk = threadIdx.x; kk < a.kp; kk += blockDim.x) koff[fm_before_slot(kk)] = fm_before_tap_offset(a, kk);
}

/* The input patch of the tile whose first output pixel is (n, oh0, ow0):
   row i is x's row ih0 + i from element e0 (its pixel iw0 = ow0 * stride -
   pad), zeros outside the image. Raw 16-bit copies (the zero is 0 in both types). */
template <typename T>
static __device__ __forceinline__ void fm_before_stage(const fm_before_args<T> &a, unsigned short *patch, int n,
                                                           int oh0, int ow0) {
    const int row_len = a.patch_w * a.c, x_row = a.w_ * a.c, ih0 = oh0 * a.stride_h - a.pad_h;
    const int e0 = (ow0 * a.stride_w - a.pad_w) * a.c;
    const unsigned short *x = (const unsigned short *)a.x + (size_t)n * a.h * x_row;
#pragma unroll 4
    for (int i = 0; i < a.patch_h; i++) {
        const int ih = ih0 + i;
        const bool row_in = ih >= 0 && ih < a.h;
        for (int e = threadIdx.x; e < row_len; e += blockDim.x) {
            const int ge = e0 + e;
            patch[i * row_len + e] = row_in && ge >= 0 && ge < x_row ? __ldg(x + (size_t)ih * x_row + ge) : 0;
        }
    }
}

/* Two 16-bit patch elements as one A-fragment register (the lower k in the low half). */
static __device__ __forceinline__ unsigned fm_before_pair(const unsigned short *p, int lo, int hi) {
    return (unsigned)p[lo] | (unsigned)p[hi] << 16;
}

/* The warp's 32 pixels x BN channels of the tile: acc = A B over kp / 16
   steps. rowbase[2i], rowbase[2i + 1]: the patch offsets of this lane's rows
   g and g + 8 of the warp's 16-pixel tile i. B by ldmatrix from the filter rows. */
template <typename T, int NJ>
static __device__ __forceinline__ void fm_before_mma(const fm_before_args<T> &a, const T *ws, const int *koff,
                                                         const unsigned short *patch, const int (&rowbase)[4],
                                                         float (&acc)[2][NJ][4]) {
    const int lane = (int)threadIdx.x % 32, wld = a.kp + 8;
    const T *bp = ws + (lane / 16 * 8 + lane % 8) * wld + lane / 8 % 2 * 8;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (int ks = 0; ks < a.kp / 16; ks++) {
        const int4 o = *(const int4 *)(koff + ks * 16 + lane % 4 * 4);
        unsigned af[2][4], bf[NJ][2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const unsigned short *p0 = patch + rowbase[2 * i], *p1 = patch + rowbase[2 * i + 1];
            af[i][0] = fm_before_pair(p0, o.x, o.y);
            af[i][1] = fm_before_pair(p1, o.x, o.y);
            af[i][2] = fm_before_pair(p0, o.z, o.w);
            af[i][3] = fm_before_pair(p1, o.z, o.w);
        }
#pragma unroll
        for (int j = 0; j < NJ; j += 2) { /* channels 8j..8j+15: two n8 fragments */
            unsigned r[4];
            hpdl__ldmatrix_x4<false>(r, bp + j * 8 * wld + ks * 16);
            bf[j][0] = r[0]; bf[j][1] = r[1]; bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++) hpdl__mma16816(T(), acc[i][j], af[i], bf[j]);
    }
}

/* The warp's results: fragments into its shared tile (rows = pixels), then
   each lane writes 8 channels of a pixel (16 bytes where y_vec), pixels
   outside y skipped. */
template <typename T, int NJ>
static __device__ __forceinline__ void fm_before_store(const fm_before_args<T> &a, const float (&acc)[2][NJ][4],
                                                           T *tile, int n, int oh0, int ow0, int n0) {
    enum { BN = 8 * NJ, LD = BN + 8, CHUNKS = BN / 8 };
    const int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4, m0 = (int)threadIdx.x / 32 * 32;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            T *p = tile + (i * 16 + g) * LD + j * 8 + 2 * t;
            *(unsigned *)p = hpdl__wg_pair(acc[i][j][0], acc[i][j][1], T());
            *(unsigned *)(p + 8 * LD) = hpdl__wg_pair(acc[i][j][2], acc[i][j][3], T());
        }
    __syncwarp();
    for (int u = lane; u < 32 * CHUNKS; u += 32) {
        const int row = u / CHUNKS, col = u % CHUNKS * 8, m = m0 + row;
        const int oh = oh0 + (m >> a.tw_log2), ow = ow0 + (m & ((1 << a.tw_log2) - 1));
        if (oh >= a.p || ow >= a.q || n0 + col >= a.k) continue;
        T *dst = a.y + (((size_t)n * a.p + oh) * a.q + ow) * a.k + n0 + col;
        const T *src = tile + row * LD + col;
        if (a.y_vec && n0 + col + 8 <= a.k) *(uint4 *)dst = *(const uint4 *)src;
        else
            for (int e = 0; e < 8 && n0 + col + e < a.k; e++) dst[e] = src[e];
    }
    __syncwarp(); /* the tile is read before the next one overwrites it */
}

/* Persistent blocks of 128 threads: blockIdx.y picks the BN = 8 NJ filters,
   blockIdx.x strides over the pixel tiles. */
template <typename T, int NJ>
__global__ void __launch_bounds__(128, 4) fm_before(fm_before_args<T> a) {
#ifdef HPDL__GEMM_SM80
    typedef fm_before_smem<8 * NJ> SM;
    extern __shared__ uint4 fm_before_smem_[];
    const int n0 = blockIdx.y * 8 * NJ, warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const int patch_elems = a.patch_h * a.patch_w * a.c;
    unsigned char *base = (unsigned char *)fm_before_smem_;
    T *ws = (T *)base;
    int *koff = (int *)(base + SM::filter(a.kp));
    unsigned short *patch = (unsigned short *)(koff + a.kp);
    T *tile = (T *)((unsigned char *)patch + SM::patch(patch_elems)) + warp * 32 * (8 * NJ + 8);
    int rowbase[4];
#pragma unroll
    for (int u = 0; u < 4; u++) /* rows g, g + 8, g + 16, g + 24 of the warp's 32 pixels */
        rowbase[u] = fm_before_pixel_offset(a, warp * 32 + u / 2 * 16 + u % 2 * 8 + lane / 4);
    fm_before_setup<T, 8 * NJ>(a, ws, koff, n0);
    fm_before_zero_half(a, patch);
    for (int t = blockIdx.x; t < a.tiles; t += gridDim.x) {
        int n, oh0, ow0;
        float acc[2][NJ][4];
        fm_before_tile_at(a, t, &n, &oh0, &ow0);
        __syncthreads(); /* the previous tile's patch is read */
        fm_before_stage(a, patch, n, oh0, ow0);
        __syncthreads();
        fm_before_mma<T, NJ>(a, ws, koff, patch, rowbase, acc);
        fm_before_store<T, NJ>(a, acc, tile, n, oh0, ow0, n0);
    }
#else
    (void)a; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

template <typename T, int NJ>
static inline hpdl_status fm_before_launch(const fm_before_args<T> &a, cudaStream_t stream) {
    const size_t smem = fm_before_smem<8 * NJ>::bytes(a.kp, a.patch_h * a.patch_w * a.c);
    void (*kernel)(fm_before_args<T>) = fm_before<T, NJ>;
    cudaFuncAttributes fa;
    int per_sm = 0, sms = 0;
    if (cudaFuncGetAttributes(&fa, (const void *)kernel) != cudaSuccess || fa.ptxVersion < 80 ||
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, smem) != cudaSuccess || per_sm == 0) {
        cudaGetLastError();
        return HPDL_ERR_UNSUPPORTED;
    }
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    const int blocks = a.tiles < sms * per_sm ? a.tiles : sms * per_sm;
    kernel<<<dim3((unsigned)blocks, (unsigned)((a.k + 8 * NJ - 1) / (8 * NJ))), 128, smem, stream>>>(a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ---- backward-filter on the few-channel rung ----
   dW[k, kk] = sum over pixels of dY[pixel, k] X~[pixel, kk]: a GEMM with rows k, columns kk =
   (r, s, c) and the 128 pixels of a tile as its depth, on the forward pass's tiles and patch.
   For each tile the block stages the patch and dY's 128 x 64 slice (zeros for pixels outside y
   and channels past K); A = dY^T comes by ldmatrix.trans, B is read from the patch as the
   forward pass reads its A, with the roles swapped: the pixels' offsets per 16-deep step from a
   table (an int4 per lane and step), the taps' offsets per fragment column in registers. Warp w
   sums all 64 filters for the n8 column fragments w, w + 4, ..., NT of them, of this block's
   column group (blockIdx.z); the sums stay in registers over all the block's tiles and are added
   into dw (f32) by atomics at the end. */
enum { FM_BEFORE_WGRAD_BN = 64, FM_BEFORE_WGRAD_LD = FM_BEFORE_WGRAD_BN + 8 };

struct fm_before_wgrad_smem { /* dY's tile, the pixel offsets, the patch and its zero half */
    static __host__ __device__ size_t dys() { return (size_t)128 * FM_BEFORE_WGRAD_LD * 2; }
    static __host__ __device__ size_t bytes(int patch_elems) {
        return dys() + 8 * 16 * 4 + fm_before_smem<16>::patch(patch_elems);
    }
};

/* dY's rows for the tile's 128 pixels (zeros outside y), channels n0..n0+63 (zeros past K). */
template <typename T>
static __device__ __forceinline__ void fm_before_stage_dy(const fm_before_args<T> &a, T *dys, int n, int oh0,
                                                              int ow0, int n0) {
    enum { CHUNKS = FM_BEFORE_WGRAD_BN / 8 };
    for (int u = threadIdx.x; u < 128 * CHUNKS; u += blockDim.x) {
        const int m = u / CHUNKS, col = u % CHUNKS * 8;
        const int oh = oh0 + (m >> a.tw_log2), ow = ow0 + (m & ((1 << a.tw_log2) - 1));
        const bool in = oh < a.p && ow < a.q;
        const T *src = a.dy + (((size_t)n * a.p + (in ? oh : 0)) * a.q + (in ? ow : 0)) * a.k + n0 + col;
        T *dst = dys + m * FM_BEFORE_WGRAD_LD + col;
        if (in && a.y_vec && n0 + col + 8 <= a.k) {
            *(uint4 *)dst = __ldg((const uint4 *)src);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) dst[e] = in && n0 + col + e < a.k ? src[e] : T(0.0f);
        }
    }
}

/* One tile's contribution to the warp's sums: 8 steps of 16 pixels. koff[j]: the patch offset
   of tap column g of the warp's fragment j. */
template <typename T, int NT>
static __device__ __forceinline__ void fm_before_wgrad_mma(const T *dys, const int *pixoff,
                                                               const unsigned short *patch, const int (&koff)[NT],
                                                               float (&acc)[4][NT][4]) {
    const int lane = (int)threadIdx.x % 32;
    const T *ap = dys + (lane / 16 * 8 + lane % 8) * FM_BEFORE_WGRAD_LD + lane / 8 % 2 * 8;
#pragma unroll 2
    for (int ks = 0; ks < 8; ks++) {
        const int4 o = *(const int4 *)(pixoff + ks * 16 + lane % 4 * 4);
        unsigned af[4][4], bf[NT][2];
#pragma unroll
        for (int i = 0; i < 4; i++) hpdl__ldmatrix_x4<true>(af[i], ap + ks * 16 * FM_BEFORE_WGRAD_LD + i * 16);
#pragma unroll
        for (int j = 0; j < NT; j++) {
            const unsigned short *p = patch + koff[j];
            bf[j][0] = fm_before_pair(p, o.x, o.y);
            bf[j][1] = fm_before_pair(p, o.z, o.w);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) hpdl__mma16816(T(), acc[i][j], af[i], bf[j]);
    }
}

/* Persistent blocks of 128 threads: blockIdx.y picks 64 filters, blockIdx.z a group of 32 NT
   tap columns, blockIdx.x strides over the pixel tiles. */
template <typename T, int NT>
__global__ void __launch_bounds__(128, 3) fm_before_wgrad(fm_before_args<T> a) {
#ifdef HPDL__GEMM_SM80
    typedef fm_before_wgrad_smem SM;
    extern __shared__ uint4 fm_before_smem_[];
    const int n0 = blockIdx.y * FM_BEFORE_WGRAD_BN, warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    unsigned char *base = (unsigned char *)fm_before_smem_;
    T *dys = (T *)base;
    int *pixoff = (int *)(base + SM::dys());
    unsigned short *patch = (unsigned short *)(pixoff + 8 * 16);
    int koff[NT], col0[NT];
    float acc[4][NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) { /* the warp's fragment j: tap columns col0[j] .. + 7 */
        col0[j] = ((int)blockIdx.z * 4 * NT + warp + 4 * j) * 8;
        koff[j] = fm_before_tap_offset(a, col0[j] + lane / 4);
#pragma unroll
        for (int i = 0; i < 4; i++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    }
    for (int m = threadIdx.x; m < 128; m += blockDim.x) pixoff[fm_before_slot(m)] = fm_before_pixel_offset(a, m);
    fm_before_zero_half(a, patch);
    for (int t = blockIdx.x; t < a.tiles; t += gridDim.x) {
        int n, oh0, ow0;
        fm_before_tile_at(a, t, &n, &oh0, &ow0);
        __syncthreads(); /* the previous tile's patch and dY are read */
        fm_before_stage(a, patch, n, oh0, ow0);
        fm_before_stage_dy(a, dys, n, oh0, ow0, n0);
        __syncthreads();
        fm_before_wgrad_mma<T, NT>(dys, pixoff, patch, koff, acc);
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k = n0 + i * 16 + lane / 4 + e / 2 * 8, kk = col0[j] + lane % 4 * 2 + e % 2;
                if (k < a.k && kk < a.taps) atomicAdd(a.dw + (size_t)k * a.taps + kk, acc[i][j][e]);
            }
#else
    (void)a; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* Zeroed f32 sums, the kernel (NT column fragments a warp: 1, 2, 3 or 5, the fewest covering
   the taps, else 5 in several column groups), then dw rounded to T. */
template <typename T, int NT>
static inline hpdl_status fm_before_wgrad_launch(fm_before_args<T> a, T *dw, cudaStream_t stream) {
    const size_t smem = fm_before_wgrad_smem::bytes(a.patch_h * a.patch_w * a.c);
    const size_t count = (size_t)a.k * a.taps;
    const int groups_k = (a.k + FM_BEFORE_WGRAD_BN - 1) / FM_BEFORE_WGRAD_BN, groups_col = (a.kp / 8 + 4 * NT - 1) / (4 * NT);
    void (*kernel)(fm_before_args<T>) = fm_before_wgrad<T, NT>;
    cudaFuncAttributes fa;
    int per_sm = 0, sms = 0;
    hpdl_status s;
    if (cudaFuncGetAttributes(&fa, (const void *)kernel) != cudaSuccess || fa.ptxVersion < 80 ||
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, smem) != cudaSuccess || per_sm == 0) {
        cudaGetLastError();
        return HPDL_ERR_UNSUPPORTED;
    }
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if ((s = hpdl__conv_workspace(count * sizeof(float), &a.dw)) != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemsetAsync(a.dw, 0, count * sizeof(float), stream));
    int blocks = sms * per_sm / (groups_k * groups_col);
    blocks = blocks < 1 ? 1 : blocks < a.tiles ? blocks : a.tiles;
    kernel<<<dim3((unsigned)blocks, (unsigned)groups_k, (unsigned)groups_col), 128, smem, stream>>>(a);
    HPDL_CUDA_TRY_LAUNCH();
    hpdl__conv_round<<<(unsigned)((count + 255) / 256 < 65536 ? (count + 255) / 256 : 65536), 256, 0, stream>>>(a.dw, dw, count);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The tile's width (a power of two, 8 to 64, its height 128 / width) that
   pads the output least, then reads the smallest patch, then is widest
   (longer runs of x per patch row). */
static inline void fm_before_tile_shape(const hpdl__conv_geom &g, int *tw_log2) {
    int64_t best = -1, best_patch = 0;
    for (int l = 6; l >= 3; l--) {
        const int tw = 1 << l, th = 128 / tw;
        const int64_t padded = (int64_t)(g.y.h + th - 1) / th * th * ((g.y.w + tw - 1) / tw * tw);
        const int64_t patch = (int64_t)((th - 1) * g.p.stride_h + (g.p.kernel_h - 1) * g.p.dilation_h + 1) *
                              ((tw - 1) * g.p.stride_w + (g.p.kernel_w - 1) * g.p.dilation_w + 1);
        if (best < 0 || padded < best || (padded == best && patch < best_patch)) {
            best = padded;
            best_patch = patch;
            *tw_log2 = l;
        }
    }
}

/* The rung where it applies (forward or backward-filter, x and y NHWC, one
   group, at most 8 input channels), else HPDL_ERR_UNSUPPORTED. a, b, out as
   hpdl__cuda_conv2d takes them: (x, w, y) or (x, dy, dw). Forward: BN, the
   fewest of 16, 32, 64 filters that cover K (64 past it, blocks side by side
   along K). */
template <typename T>
static inline hpdl_status fm_before_run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *x, const T *b,
                                            T *out, cudaStream_t stream) {
    const bool wgrad = pass == HPDL__CONV_FILTER_GRAD;
    fm_before_args<T> a;
    if (pass == HPDL__CONV_INPUT_GRAD || g.x.layout != HPDL_NHWC || g.y.layout != HPDL_NHWC || g.p.groups != 1 ||
        g.x.c > 8)
        return HPDL_ERR_UNSUPPORTED;
    a.x = x;
    a.w = wgrad ? NULL : b;
    a.y = wgrad ? NULL : out;
    a.dy = wgrad ? b : NULL;
    a.dw = NULL;
    a.h = g.x.h; a.w_ = g.x.w; a.c = g.x.c;
    a.p = g.y.h; a.q = g.y.w; a.k = g.y.c;
    a.s = g.p.kernel_w;
    a.stride_h = g.p.stride_h; a.stride_w = g.p.stride_w;
    a.pad_h = g.p.pad_h; a.pad_w = g.p.pad_w;
    a.dil_h = g.p.dilation_h; a.dil_w = g.p.dilation_w;
    fm_before_tile_shape(g, &a.tw_log2);
    a.th = 128 >> a.tw_log2;
    a.tiles_h = (a.p + a.th - 1) / a.th;
    a.tiles_w = (a.q + (1 << a.tw_log2) - 1) >> a.tw_log2;
    a.patch_h = (a.th - 1) * a.stride_h + (g.p.kernel_h - 1) * a.dil_h + 1;
    a.patch_w = ((1 << a.tw_log2) - 1) * a.stride_w + (a.s - 1) * a.dil_w + 1;
    a.taps = g.p.kernel_h * a.s * a.c;
    a.kp = (a.taps + 15) / 16 * 16;
    a.y_vec = a.k % 8 == 0 && (uintptr_t)(wgrad ? b : out) % 16 == 0;
    const int64_t tiles = (int64_t)g.y.n * a.tiles_h * a.tiles_w, patch = (int64_t)a.patch_h * a.patch_w * a.c;
    if (tiles > INT_MAX || patch > 32768 || a.kp > 1024) return HPDL_ERR_UNSUPPORTED;
    a.tiles = (int)tiles;
    if (wgrad)
        return a.kp <= 32   ? fm_before_wgrad_launch<T, 1>(a, out, stream)
               : a.kp <= 64 ? fm_before_wgrad_launch<T, 2>(a, out, stream)
               : a.kp <= 96 ? fm_before_wgrad_launch<T, 3>(a, out, stream)
                            : fm_before_wgrad_launch<T, 5>(a, out, stream);
    return a.k <= 16 ? fm_before_launch<T, 2>(a, stream)
           : a.k <= 32 ? fm_before_launch<T, 4>(a, stream)
                       : fm_before_launch<T, 8>(a, stream);
}
