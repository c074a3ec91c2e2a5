/* GPU tests for the convolution ladder: every rung x type x layout x pass
   (forward, backward-data, backward-filter) against the f64 CPU twin on odd
   shapes (C and K not multiples of 8, H != W, stride 2, padding 0/1/3, 1x1,
   5x5, 7x7, dilation 2, batch 1, groups, depthwise), outputs poisoned first; bad
   arguments leave the output untouched, and so does a rung that refuses a
   shape (the Winograd rung outside f32 3x3 stride 1, im2col with groups); the CUDNN
   rung's copies between NHWC and NCHW. */
#define HPDL__IM2COL_BYTES ((size_t)64 << 10) /* the im2col rung in batches of a few images, or one */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

static double to_f64(float x) { return x; }
static double to_f64(double x) { return x; }
static double to_f64(hpdl_f16 x) { return hpdl_f16_to_f32(x); }
static double to_f64(hpdl_bf16 x) { return hpdl_bf16_to_f32(x); }
static void from_f64(double v, float *x) { *x = (float)v; }
static void from_f64(double v, double *x) { *x = v; }
static void from_f64(double v, hpdl_f16 *x) { *x = hpdl_f16_from_f32((float)v); }
static void from_f64(double v, hpdl_bf16 *x) { *x = hpdl_bf16_from_f32((float)v); }

template <typename T> static double tolerance();
template <> double tolerance<float>() { return 5e-5; } /* per 10^3 products summed, in another order than the twin's */
template <> double tolerance<double>() { return 1e-12; }
template <> double tolerance<hpdl_f16>() { return 1e-2; }
template <> double tolerance<hpdl_bf16>() { return 1e-2; }

/* cuDNN's fastest algorithm depends on its timings: its f16/bf16
   backward passes may round partial sums to the type (H200, 2026-11-26:
   3.1e-2 on "more than one tile each way", 0.10-0.14 on the NCHW
   few-channel backward-filter and the dilated backward-data; H100: 0.28
   on that backward-filter), its f32 forward may be Winograd or FFT
   (1.6e-4 under compute-sanitizer, NCHW). hpdl's own rungs keep
   tolerance<T>(), which for f32 and f64 grows with the terms summed
   (f64: 1.25e-12 over the 270,000 of a 1500-image backward-filter). */
/* Winograd F(4x4, 3x3) (the winograd rung, and AUTO where it applies): its
   transforms amplify the sums' roundings; simulated on the host with its
   points and f32 sums (2026-11-26), its worst error was 1.3-1.7 times
   tolerance<float>() for C = 64..256 (6.7e-5 at C = 64): four times
   allowed. cuDNN, also Winograd here, gets 1e-3 below. */
template <typename T> static double tolerance_of(hpdl_conv_algo algo, double terms, int winograd) {
    if (sizeof(T) >= 4 && terms > 1000) /* rounding grows with the sum */
        return tolerance_of<T>(algo, 1000, winograd) * terms / 1000;
    if (winograd && algo != HPDL_CONV_CUDNN) return 4 * tolerance<T>();
    if (algo != HPDL_CONV_CUDNN) return tolerance<T>();
    return sizeof(T) == 2 ? 0.5 : sizeof(T) == 4 ? 1e-3 : tolerance<T>();
}

static hpdl_rng rng;

typedef struct conv_case {
    const char *name;
    int n, c, h, w, k, kernel, stride, pad, dilation, groups;
} conv_case;

/* A case whose filter, stride and padding differ along the width. */
typedef struct wide_case {
    conv_case square; /* the height's */
    int kernel_w, stride_w, pad_w;
} wide_case;

static const conv_case k_cases[] = {
    {"3x3 pad 1", 2, 3, 7, 5, 5, 3, 1, 1, 1, 1},
    {"3x3 stride 2 pad 0, batch 1", 1, 5, 9, 11, 7, 3, 2, 0, 1, 1},
    {"7x7 stride 2 pad 3", 2, 3, 17, 14, 6, 7, 2, 3, 1, 1},
    {"1x1", 1, 13, 5, 4, 9, 1, 1, 0, 1, 1},
    {"1x1 stride 2", 3, 9, 7, 6, 70, 1, 2, 0, 1, 1},
    {"3x3 dilation 2", 2, 4, 9, 8, 3, 3, 1, 2, 2, 1},
    {"3 groups", 1, 6, 6, 7, 9, 3, 1, 1, 1, 3},
    {"depthwise stride 2", 2, 5, 7, 6, 5, 3, 2, 1, 1, 5},
    {"more than one tile each way", 2, 37, 12, 11, 67, 3, 1, 1, 1, 1},
    /* C a multiple of 8: the mma rung's 16-byte gathers */
    {"C 16, 3x3 stride 2 pad 1", 2, 16, 9, 10, 24, 3, 2, 1, 1, 1},
    {"C 64, several tiles each way", 3, 64, 10, 10, 72, 3, 1, 1, 1, 1},
    {"C 72, K 136, dilation 2", 1, 72, 9, 7, 136, 3, 1, 2, 2, 1},
    {"4 groups of 8 channels", 2, 32, 6, 7, 16, 3, 1, 1, 1, 4},
    /* the wgmma rung's boxes: several small images per tile, a 5x5 stride-2 box of strided pixels */
    {"C 8, 1x1, five 4x3 images", 5, 8, 4, 3, 8, 1, 1, 0, 1, 1},
    {"C 24, 5x5 stride 2 pad 2", 2, 24, 11, 13, 40, 5, 2, 2, 1, 1},
    /* its strided backward-data by phases, three of the four without taps (zeros) */
    {"C 16, K 32, 1x1 stride 2, 9x8", 2, 16, 9, 8, 32, 1, 2, 0, 1, 1},
    /* its 1x1 backward-filter with 2^18 weights as one GEMM (hpdl__conv_wgrad_is_gemm) */
    {"1x1 GEMM view: C 512, K 512, 5x4", 2, 512, 5, 4, 512, 1, 1, 0, 1, 1},
    /* its backward-filter: 6 tiles of 28 k steps in tall boxes 16 wide */
    {"C 64, K 256, two 28x28 images", 2, 64, 28, 28, 256, 3, 1, 1, 1, 1},
    /* its tall x boxes (one box a filter column, 3x3 stride 1, tiles lined up on the SMs): 8 wide, K
       of one 64-row tile, C 80 in a full and a part chunk; K 136 in two 128-row tiles, H cut by the box */
    {"tall boxes: C 80, K 48, 16x16", 2, 80, 16, 16, 48, 3, 1, 1, 1, 1},
    {"tall boxes: C 48, K 136, 15x16", 2, 48, 15, 16, 136, 3, 1, 1, 1, 1},
    /* the ordinary boxes where 25 tiles do not line up on the SMs: 300 k steps over all SMs, blocks'
       runs of them crossing tiles */
    {"C 256, K 40, 5x5 pad 2, twelve 8x8 images", 12, 256, 8, 8, 40, 5, 1, 2, 1, 1},
    /* tall boxes over 7x7 images (8 wide, one column of zeros) */
    {"tall boxes: C 64, K 72, five 7x7 images", 5, 64, 7, 7, 72, 3, 1, 1, 1, 1},
    /* pairs of row tiles in clusters of two, x's pieces copied to both: 9 pairs lined up (the second
       row tile 72 of 128 rows); 18 pairs whose runs cross tiles. Pairs of 192-wide column tiles, dy's
       pieces copied to both: 3 pairs of one row tile; 9 pairs over 3 row tiles (the last 44 rows) */
    {"pairs of row tiles: C 256, K 200, three 5x6 images", 3, 256, 5, 6, 200, 3, 1, 1, 1, 1},
    {"pairs, runs across tiles: C 512, K 136, two 5x5", 2, 512, 5, 5, 136, 3, 1, 1, 1, 1},
    {"pairs of column tiles: C 128, K 96, three 6x5 images", 3, 128, 6, 5, 96, 3, 1, 1, 1, 1},
    {"pairs of column tiles: C 128, K 300, two 5x5 images", 2, 128, 5, 5, 300, 3, 1, 1, 1, 1},
    /* the few-channel kernels (also f16/bf16 where channels are not multiples of 8): the small CNN's
       layers at odd sizes; backward-filter blocks of several staged chunks (24 28x28 images: more
       chunks than two a SM), of two 4 x 4 tiles a thread (C 16, K 12: 303 tiles) */
    {"few channels: C 3, K 6, 5x5, 13x11", 3, 3, 13, 11, 6, 5, 1, 0, 1, 1},
    {"few channels: C 6, K 16, 5x5 pad 1, 9x10", 2, 6, 9, 10, 16, 5, 1, 1, 1, 1},
    {"few channels: C 3, K 6, 5x5, 24 28x28 images", 24, 3, 28, 28, 6, 5, 1, 0, 1, 1},
    {"few channels: C 16, K 12, 5x5 pad 2", 2, 16, 9, 9, 12, 5, 1, 2, 1, 1},
    /* the few-channel tensor-core rung (C <= 8): the stems at odd sizes, K past one 64-filter block
       and not a multiple of 8 (element-wise stores), more tiles than resident blocks (each block
       stages several patches) */
    {"few-mma: C 3, K 64, 7x7 stride 2 pad 3, 37x29, batch 1", 1, 3, 37, 29, 64, 7, 2, 3, 1, 1},
    {"few-mma: C 3, K 64, 3x3 pad 1, 32x32", 2, 3, 32, 32, 64, 3, 1, 1, 1, 1},
    {"few-mma: C 1, K 20, 5x5 pad 2, 23x19", 2, 1, 23, 19, 20, 5, 1, 2, 1, 1},
    {"few-mma: C 4, K 72, 3x3 pad 1, 33x17", 2, 4, 33, 17, 72, 3, 1, 1, 1, 1},
    {"few-mma: C 8, K 13, 3x3 stride 2, 19x26", 3, 8, 19, 26, 13, 3, 2, 0, 1, 1},
    {"few-mma: C 1, K 8, 3x3, 1500 18x10 images", 1500, 1, 18, 10, 8, 3, 1, 0, 1, 1},
    /* the Winograd rung's 4x4 tiles cut by the edges (outputs 11x8 and 9x14), odd C and K on its GEMM's
       checked path, and C 256 (its error grows with C) on the unchecked 128 x 64 tiles */
    {"3x3 pad 0, batch 1, C 7, K 9, 13x10", 1, 7, 13, 10, 9, 3, 1, 0, 1, 1},
    {"3x3 pad 1, C 33, K 35, 9x14", 2, 33, 9, 14, 35, 3, 1, 1, 1, 1},
    {"3x3 pad 1, C 256, K 64, 6x7", 1, 256, 6, 7, 64, 3, 1, 1, 1, 1},
};

/* Every rung on a 3x5 filter, stride 1x2, padding 1x2: a rung that mixed up the height's and the
   width's would be caught. */
static const wide_case k_wide_cases[] = {
    {{"3x5 filter, stride 1x2, pad 1x2, C 16, K 24", 5, 16, 7, 11, 24, 3, 1, 1, 1, 1}, 5, 2, 2},
};

static const hpdl_conv_algo k_algos[] = {HPDL_CONV_AUTO, HPDL_CONV_DIRECT, HPDL_CONV_IMPLICIT_GEMM, HPDL_CONV_MMA,
                                         HPDL_CONV_WGMMA, HPDL_CONV_FEW_MMA, HPDL_CONV_WINOGRAD, HPDL_CONV_IM2COL,
#ifdef HPDL_HAVE_CUDNN
                                         HPDL_CONV_CUDNN
#endif
};

enum { FORWARD, BACKWARD_DATA, BACKWARD_FILTER };
static const char *const k_pass_names[] = {"forward", "backward-data", "backward-filter"};

/* Random values in [-1, 1] as T, and the f64 copy of exactly those values. */
template <typename T> static void fill_random(T *x, double *x64, size_t n) {
    for (size_t i = 0; i < n; i++) {
        from_f64(2.0 * hpdl_rng_uniform(&rng) - 1.0, &x[i]);
        x64[i] = to_f64(x[i]);
    }
}

/* Runs one pass on the GPU: (a, b) are (x, w), (w, dy) or (x, dy). */
template <typename T>
static hpdl_status gpu_pass(int pass, hpdl_conv_algo algo, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                            const hpdl_tensor4 *yd, const T *a, const T *b, T *out) {
    if (pass == FORWARD) return hpdl_cuda_conv2d_forward_algo(algo, p, xd, a, b, yd, out);
    if (pass == BACKWARD_DATA) return hpdl_cuda_conv2d_backward_data_algo(algo, p, yd, b, a, xd, out);
    return hpdl_cuda_conv2d_backward_filter_algo(algo, p, xd, a, yd, b, out);
}

/* The f64 CPU twin of the same pass. */
static hpdl_status cpu_pass(int pass, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const hpdl_tensor4 *yd,
                            const double *a, const double *b, double *out) {
    if (pass == FORWARD) return hpdl_conv2d_forward_f64(p, xd, a, b, yd, out);
    if (pass == BACKWARD_DATA) return hpdl_conv2d_backward_data_f64(p, yd, b, a, xd, out);
    return hpdl_conv2d_backward_filter_f64(p, xd, a, yd, b, out);
}

/* A Hopper GPU (compute capability 9.0): the wgmma rung's. */
static int hopper(void) {
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major == 9;
}

/* Where the Winograd rung runs: f32, 3x3, stride 1, dilation 1, one group (every pass). */
template <typename T> static int winograd_applies(const hpdl_conv2d_params *p) {
    return sizeof(T) == 4 && p->kernel_h == 3 && p->kernel_w == 3 && p->stride_h == 1 && p->stride_w == 1 &&
           p->dilation_h == 1 && p->dilation_w == 1 && p->groups == 1;
}

/* Where a rung may answer HPDL_ERR_UNSUPPORTED: the mma rung outside f16/bf16
   in NHWC, and for backward-filter where C/groups % 8 != 0; the wgmma rung
   off Hopper, outside f16/bf16 NHWC, for backward-data both strided and
   dilated, groups and channel counts not multiples of 8; cuDNN for f64 (it
   has no algorithm for some of these shapes); the few-channel rung outside
   f16/bf16 NHWC forward and backward-filter with one group and at most 8
   input channels; the im2col rung for f16/bf16 and for groups.
   Everywhere else it must run. */
template <typename T>
static int may_refuse(hpdl_conv_algo algo, const conv_case *cc, const hpdl_conv2d_params *p, hpdl_layout layout,
                      int pass) {
    int half = sizeof(T) == 2;
    if (algo == HPDL_CONV_MMA)
        return !(half && layout == HPDL_NHWC) || (pass == BACKWARD_FILTER && cc->c / cc->groups % 8 != 0);
    if (algo == HPDL_CONV_WGMMA)
        return !(half && layout == HPDL_NHWC && hopper()) ||
               (pass == BACKWARD_DATA && (p->stride_h != 1 || p->stride_w != 1) && cc->dilation != 1) ||
               cc->groups != 1 || cc->c % 8 != 0 || cc->k % 8 != 0;
    if (algo == HPDL_CONV_FEW_MMA)
        return !(half && layout == HPDL_NHWC && pass != BACKWARD_DATA && cc->groups == 1 && cc->c <= 8);
    if (algo == HPDL_CONV_CUDNN) return sizeof(T) == 8;
    if (algo == HPDL_CONV_WINOGRAD) return !winograd_applies<T>(p);
    if (algo == HPDL_CONV_IM2COL) return cc->groups != 1; /* 16-bit through f32 copies */
    return 0;
}

/* Every byte of a device buffer still hpdl_cuda_poison's 0xff: a rung that
   refuses a shape writes nothing. */
static int still_poisoned(const void *d, size_t bytes) {
    unsigned char *h = (unsigned char *)malloc(bytes);
    int ok = 1;
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(h, d, bytes, 0));
    for (size_t i = 0; i < bytes && ok; i++) ok = h[i] == 0xff;
    free(h);
    return ok;
}

/* One case on the device: all three passes of one rung, type and layout
   (x's and the filter's; y's is y_layout), the width's filter, stride and
   padding from `wide` where given. Returns the number of mismatches
   reported. */
template <typename T>
static int check_case(const conv_case *cc, hpdl_layout layout, hpdl_conv_algo algo, hpdl_layout y_layout,
                      const wide_case *wide = NULL) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(cc->kernel, cc->stride, cc->pad, cc->dilation, cc->groups);
    if (wide) p.kernel_w = wide->kernel_w, p.stride_w = wide->stride_w, p.pad_w = wide->pad_w;
    hpdl_tensor4 xd = hpdl_tensor4_make(cc->n, cc->c, cc->h, cc->w, layout), yd, wd;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, cc->k, &yd));
    yd.layout = y_layout;
    const char *where = layout != y_layout ? (layout == HPDL_NHWC ? "x NHWC, y NCHW" : "x NCHW, y NHWC")
                        : layout == HPDL_NHWC ? "NHWC" : "NCHW";
    HPDL_CHECK(hpdl_conv2d_filter_desc(&p, &xd, cc->k, &wd));
    size_t n[3] = {hpdl_tensor4_count(&xd), hpdl_tensor4_count(&wd), hpdl_tensor4_count(&yd)}; /* x, w, y */
    size_t most = n[0] > n[1] ? (n[0] > n[2] ? n[0] : n[2]) : (n[1] > n[2] ? n[1] : n[2]);
    T *h[3], *d[3], *got = (T *)malloc(most * sizeof(T)), *d_out;
    double *h64[3], *want = (double *)malloc(most * sizeof(double));
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        h[i] = (T *)malloc(n[i] * sizeof(T));
        h64[i] = (double *)malloc(n[i] * sizeof(double));
        fill_random(h[i], h64[i], n[i]);
        HPDL_CHECK(hpdl_cuda_alloc((void **)&d[i], n[i] * sizeof(T)));
        HPDL_CHECK(hpdl_cuda_to_device(d[i], h[i], n[i] * sizeof(T), 0));
    }
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_out, most * sizeof(T)));
    for (int pass = FORWARD; pass <= BACKWARD_FILTER; pass++) {
        int ia = pass == BACKWARD_DATA ? 1 : 0, ib = pass == FORWARD ? 1 : 2, io = pass == FORWARD ? 2 : pass == BACKWARD_DATA ? 0 : 1;
        double worst = 0, terms = pass == FORWARD         ? (double)cc->c / cc->groups * p.kernel_h * p.kernel_w
                                  : pass == BACKWARD_DATA ? (double)cc->k / cc->groups * p.kernel_h * p.kernel_w
                                                          : (double)yd.n * yd.h * yd.w; /* products per output */
        HPDL_CHECK(cpu_pass(pass, &p, &xd, &yd, h64[ia], h64[ib], want));
        HPDL_CHECK(hpdl_cuda_poison(d_out, most * sizeof(T)));
        hpdl_status s = gpu_pass<T>(pass, algo, &p, &xd, &yd, d[ia], d[ib], d_out);
        if (s == HPDL_ERR_UNSUPPORTED && may_refuse<T>(algo, cc, &p, layout, pass)) {
            if (!still_poisoned(d_out, n[io] * sizeof(T))) {
                fprintf(stderr, "    %s, %s, %s, %s: refused but wrote\n", cc->name,
                        where, hpdl_conv_algo_name(algo), k_pass_names[pass]);
                bad++;
            }
            continue;
        }
        if (s != HPDL_OK)
            fprintf(stderr, "    %s, %s, %s, %s: %s\n", cc->name, where,
                    hpdl_conv_algo_name(algo), k_pass_names[pass], hpdl_status_string(s));
        HPDL_EXPECT(s == HPDL_OK);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        HPDL_CHECK(hpdl_cuda_to_host(got, d_out, n[io] * sizeof(T), 0));
        for (size_t i = 0; i < n[io]; i++) {
            double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1, e = fabs(to_f64(got[i]) - want[i]) / scale;
            if (!(e <= worst)) worst = e; /* NaN (the poison) counts as the worst */
        }
        int winograd = (algo == HPDL_CONV_WINOGRAD || algo == HPDL_CONV_AUTO) && winograd_applies<T>(&p);
        if (!(worst <= tolerance_of<T>(algo, terms, winograd))) {
            fprintf(stderr, "    %s, %s, %s, %s: error %g\n", cc->name, where,
                    hpdl_conv_algo_name(algo), k_pass_names[pass], worst);
            bad++;
        }
    }
    for (int i = 0; i < 3; i++) { free(h[i]); free(h64[i]); hpdl_cuda_free(d[i]); }
    free(got); free(want); hpdl_cuda_free(d_out);
    return bad;
}

template <typename T> static void test_type(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    for (int a = 0; a < HPDL_COUNT(k_algos); a++)
        for (int c = 0; c < HPDL_COUNT(k_cases); c++)
            for (int layout = HPDL_NCHW; layout <= HPDL_NHWC; layout++)
                HPDL_EXPECT(check_case<T>(&k_cases[c], (hpdl_layout)layout, k_algos[a], (hpdl_layout)layout) == 0);
    for (int a = 0; a < HPDL_COUNT(k_algos); a++)
        for (int c = 0; c < HPDL_COUNT(k_wide_cases); c++)
            for (int layout = HPDL_NCHW; layout <= HPDL_NHWC; layout++)
                HPDL_EXPECT(check_case<T>(&k_wide_cases[c].square, (hpdl_layout)layout, k_algos[a],
                                          (hpdl_layout)layout, &k_wide_cases[c]) == 0);
}

/* x and y in different layouts: the im2col rung copies only its NCHW
   operands into NHWC (and AUTO, which takes it for these f32 and f64 shapes). */
template <typename T> static void test_mixed_layouts(void) {
    const conv_case cases[] = {{"1x1 stride 2", 3, 9, 7, 6, 70, 1, 2, 0, 1, 1},
                               {"C 16, 3x3 stride 2 pad 1", 2, 16, 9, 10, 24, 3, 2, 1, 1, 1},
                               {"C 8, 1x1, five 4x3 images", 5, 8, 4, 3, 8, 1, 1, 0, 1, 1}};
    const hpdl_conv_algo algos[] = {HPDL_CONV_IM2COL, HPDL_CONV_AUTO};
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    for (int a = 0; a < HPDL_COUNT(algos); a++)
        for (int c = 0; c < HPDL_COUNT(cases); c++) {
            HPDL_EXPECT(check_case<T>(&cases[c], HPDL_NCHW, algos[a], HPDL_NHWC) == 0);
            HPDL_EXPECT(check_case<T>(&cases[c], HPDL_NHWC, algos[a], HPDL_NCHW) == 0);
        }
}

static void test_mixed_layouts_f32(void) { test_mixed_layouts<float>(); }
static void test_mixed_layouts_f64(void) { test_mixed_layouts<double>(); }

static void test_conv_f32(void) { test_type<float>(); }
static void test_conv_f64(void) { test_type<double>(); }
static void test_conv_f16(void) { test_type<hpdl_f16>(); }
static void test_conv_bf16(void) { test_type<hpdl_bf16>(); }

/* ---- bias, pooling, global average pooling, batch normalization ---------- */

/* A device copy of n host values. */
template <typename T> static T *upload(const T *h, size_t n) {
    T *d;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, n * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_to_device(d, h, n * sizeof(T), 0));
    return d;
}

/* A poisoned device buffer of n values. */
template <typename T> static T *poisoned(size_t n) {
    T *d;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, n * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_poison(d, n * sizeof(T)));
    return d;
}

/* Random T values in [lo, hi] on the host, their f64 copies, and a device copy. */
template <typename T> struct operand {
    size_t n;
    T *h, *d;
    double *h64;
};

template <typename T> static operand<T> make_operand(size_t n, double lo, double hi) {
    operand<T> o;
    o.n = n;
    o.h = (T *)malloc(n * sizeof(T));
    o.h64 = (double *)malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        from_f64(lo + (hi - lo) * hpdl_rng_uniform(&rng), &o.h[i]);
        o.h64[i] = to_f64(o.h[i]);
    }
    o.d = upload(o.h, n);
    return o;
}

template <typename T> static void free_operand(operand<T> *o) {
    free(o->h); free(o->h64); hpdl_cuda_free(o->d);
}

/* Copies a device result back, frees it, and compares it with the f64 twin's
   (max |got - want| / max(1, |want|) within the type's tolerance). */
template <typename T> static void expect_close(T *d, const double *want, size_t n, double tol, const char *what,
                                               const char *shape) {
    T *got = (T *)malloc(n * sizeof(T));
    double worst = 0;
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(got, d, n * sizeof(T), 0));
    for (size_t i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1, e = fabs(to_f64(got[i]) - want[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    if (!(worst <= tol)) fprintf(stderr, "    %s (%s): error %g\n", what, shape, worst);
    HPDL_EXPECT(worst <= tol);
    free(got);
    hpdl_cuda_free(d);
}

typedef struct layer_case { const char *name; int n, c, h, w, kernel, stride, pad; hpdl_layout layout; } layer_case;

static const layer_case k_layer_cases[] = {
    {"3x3/2 pad 1, NCHW", 2, 3, 7, 6, 3, 2, 1, HPDL_NCHW},
    {"2x2/2, NHWC, batch 1", 1, 5, 9, 11, 2, 2, 0, HPDL_NHWC},
    {"3x3/1 pad 1, NHWC", 2, 2, 5, 8, 3, 1, 1, HPDL_NHWC},
    {"4x4/3 pad 2, NCHW", 3, 19, 8, 7, 4, 3, 2, HPDL_NCHW},
    {"more values per channel than threads, NHWC", 4, 3, 17, 13, 3, 2, 1, HPDL_NHWC},
    {"16 channels, 16-byte packs, NHWC", 3, 16, 6, 5, 3, 1, 1, HPDL_NHWC},
};

/* Bias, pooling and global average pooling of one case. */
template <typename T> static void check_bias_and_pooling(const layer_case *lc) {
    hpdl_tensor4 xd = hpdl_tensor4_make(lc->n, lc->c, lc->h, lc->w, lc->layout), yd;
    hpdl_pool2d_params p = hpdl_pool2d_params_make(lc->kernel, lc->stride, lc->pad);
    HPDL_CHECK(hpdl_pool2d_output_desc(&p, &xd, &yd));
    size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nc = (size_t)lc->n * lc->c;
    operand<T> x = make_operand<T>(nx, -2, 2), dy = make_operand<T>(ny, -1, 1), bias = make_operand<T>(lc->c, -1, 1);
    operand<T> gdy = make_operand<T>(nc, -1, 1);
    double *want = (double *)malloc(nx * sizeof(double)), tol = tolerance<T>();
    T *d;
    /* bias on x's shape: in place on a copy of x */
    d = upload(x.h, nx);
    HPDL_EXPECT(hpdl_cuda_conv2d_bias_add(&xd, d, bias.d) == HPDL_OK);
    memcpy(want, x.h64, nx * sizeof(double));
    HPDL_CHECK(hpdl_conv2d_bias_add_f64(&xd, want, bias.h64));
    expect_close(d, want, nx, tol, "bias add", lc->name);
    d = poisoned<T>(lc->c);
    HPDL_EXPECT(hpdl_cuda_conv2d_bias_grad(&xd, x.d, d) == HPDL_OK);
    HPDL_CHECK(hpdl_conv2d_bias_grad_f64(&xd, x.h64, want));
    expect_close(d, want, lc->c, tol, "bias grad", lc->name);
    /* max and average pooling */
    d = poisoned<T>(ny);
    HPDL_EXPECT(hpdl_cuda_maxpool2d_forward(&p, &xd, x.d, &yd, d) == HPDL_OK);
    HPDL_CHECK(hpdl_maxpool2d_forward_f64(&p, &xd, x.h64, &yd, want));
    expect_close(d, want, ny, tol, "maxpool forward", lc->name);
    d = poisoned<T>(nx);
    HPDL_EXPECT(hpdl_cuda_maxpool2d_backward(&p, &xd, x.d, &yd, dy.d, d) == HPDL_OK);
    HPDL_CHECK(hpdl_maxpool2d_backward_f64(&p, &xd, x.h64, &yd, dy.h64, want));
    expect_close(d, want, nx, tol, "maxpool backward", lc->name);
    d = poisoned<T>(ny);
    HPDL_EXPECT(hpdl_cuda_avgpool2d_forward(&p, &xd, x.d, &yd, d) == HPDL_OK);
    HPDL_CHECK(hpdl_avgpool2d_forward_f64(&p, &xd, x.h64, &yd, want));
    expect_close(d, want, ny, tol, "avgpool forward", lc->name);
    d = poisoned<T>(nx);
    HPDL_EXPECT(hpdl_cuda_avgpool2d_backward(&p, &yd, dy.d, &xd, d) == HPDL_OK);
    HPDL_CHECK(hpdl_avgpool2d_backward_f64(&p, &yd, dy.h64, &xd, want));
    expect_close(d, want, nx, tol, "avgpool backward", lc->name);
    /* global average pooling */
    d = poisoned<T>(nc);
    HPDL_EXPECT(hpdl_cuda_global_avgpool_forward(&xd, x.d, d) == HPDL_OK);
    HPDL_CHECK(hpdl_global_avgpool_forward_f64(&xd, x.h64, want));
    expect_close(d, want, nc, tol, "global avgpool forward", lc->name);
    d = poisoned<T>(nx);
    HPDL_EXPECT(hpdl_cuda_global_avgpool_backward(&xd, gdy.d, d) == HPDL_OK);
    HPDL_CHECK(hpdl_global_avgpool_backward_f64(&xd, gdy.h64, want));
    expect_close(d, want, nx, tol, "global avgpool backward", lc->name);
    free_operand(&x); free_operand(&dy); free_operand(&bias); free_operand(&gdy);
    free(want);
}

/* Batch normalization of one case: training forward (y, running and saved
   statistics), inference, backward from the saved statistics. */
template <typename T> static void check_batchnorm(const layer_case *lc) {
    typedef typename hpdl__acc<T>::type ACC;
    hpdl_tensor4 xd = hpdl_tensor4_make(lc->n, lc->c, lc->h, lc->w, lc->layout);
    size_t nx = hpdl_tensor4_count(&xd), c = (size_t)lc->c;
    operand<T> x = make_operand<T>(nx, -2, 3), dy = make_operand<T>(nx, -1, 1);
    operand<ACC> gamma = make_operand<ACC>(c, 0.5, 2), beta = make_operand<ACC>(c, -1, 1);
    operand<ACC> rm = make_operand<ACC>(c, -1, 1), rv = make_operand<ACC>(c, 0.5, 2);
    double *want = (double *)malloc(nx * sizeof(double)), *rm64 = (double *)malloc(c * sizeof(double));
    double *rv64 = (double *)malloc(c * sizeof(double)), *sm64 = (double *)malloc(c * sizeof(double));
    double *si64 = (double *)malloc(c * sizeof(double)), *dg64 = (double *)malloc(c * sizeof(double));
    double *db64 = (double *)malloc(c * sizeof(double)), tol = tolerance<T>();
    ACC *sm = poisoned<ACC>(c), *si = poisoned<ACC>(c);
    T *d = poisoned<T>(nx);
    memcpy(rm64, rm.h64, c * sizeof(double));
    memcpy(rv64, rv.h64, c * sizeof(double));
    HPDL_EXPECT(hpdl_cuda_batchnorm_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm.d, rv.d, d, sm, si) == HPDL_OK);
    HPDL_CHECK(hpdl_batchnorm_forward_training_f64(&xd, x.h64, gamma.h64, beta.h64, 0.1, 1e-5, rm64, rv64, want, sm64, si64));
    expect_close(d, want, nx, tol, "batchnorm training y", lc->name);
    expect_close(rm.d, rm64, c, tolerance<ACC>(), "batchnorm running mean", lc->name);
    expect_close(rv.d, rv64, c, tolerance<ACC>(), "batchnorm running variance", lc->name);
    rm.d = upload(rm.h, c); /* expect_close freed them: inference reads the originals */
    rv.d = upload(rv.h, c);
    d = poisoned<T>(nx);
    HPDL_EXPECT(hpdl_cuda_batchnorm_forward_inference(&xd, x.d, gamma.d, beta.d, rm.d, rv.d, 1e-5, d) == HPDL_OK);
    HPDL_CHECK(hpdl_batchnorm_forward_inference_f64(&xd, x.h64, gamma.h64, beta.h64, rm.h64, rv.h64, 1e-5, want));
    expect_close(d, want, nx, tol, "batchnorm inference", lc->name);
    /* backward from the device's saved statistics; the twin from its own */
    ACC *dg = poisoned<ACC>(c), *db = poisoned<ACC>(c);
    d = poisoned<T>(nx);
    HPDL_EXPECT(hpdl_cuda_batchnorm_backward(&xd, x.d, dy.d, gamma.d, sm, si, d, dg, db) == HPDL_OK);
    HPDL_CHECK(hpdl_batchnorm_backward_f64(&xd, x.h64, dy.h64, gamma.h64, sm64, si64, want, dg64, db64));
    expect_close(d, want, nx, tol, "batchnorm backward dx", lc->name);
    expect_close(dg, dg64, c, tol, "batchnorm backward dgamma", lc->name);
    expect_close(db, db64, c, tol, "batchnorm backward dbeta", lc->name);
    expect_close(sm, sm64, c, tolerance<ACC>(), "batchnorm saved mean", lc->name);
    expect_close(si, si64, c, tolerance<ACC>(), "batchnorm saved 1/std", lc->name);
    free_operand(&x); free_operand(&dy); free_operand(&gamma); free_operand(&beta); free_operand(&rm); free_operand(&rv);
    free(want); free(rm64); free(rv64); free(sm64); free(si64); free(dg64); free(db64);
}

/* d (freed) and e (kept) hold the same n values within tol, relative to max(1, |e|). */
template <typename T> static void expect_same(T *d, const T *e, size_t n, double tol, const char *what,
                                              const char *shape) {
    double *want = (double *)malloc(n * sizeof(double));
    T *h = (T *)malloc(n * sizeof(T));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(h, e, n * sizeof(T), 0));
    for (size_t i = 0; i < n; i++) want[i] = to_f64(h[i]);
    expect_close(d, want, n, tol, what, shape);
    free(want); free(h);
}

/* The CNN walk's fused batch norm and ReLU against the layers run one
   after the other, alone and with a residual sum between them. The
   backward of the two layers takes the fused forward's output and
   statistics, so both sides see the same ReLU mask: the fused backward
   must find it again from x. Unsupported (the walk then runs the layers)
   where the NHWC kernels do not run. */
template <typename T> static void check_bn_relu(const layer_case *lc) {
    typedef typename hpdl__acc<T>::type ACC;
    typedef typename hpdl__dev<T>::type D;
    hpdl_tensor4 xd = hpdl_tensor4_make(lc->n, lc->c, lc->h, lc->w, lc->layout);
    size_t nx = hpdl_tensor4_count(&xd), c = (size_t)lc->c;
    operand<T> x = make_operand<T>(nx, -2, 3), dy = make_operand<T>(nx, -1, 1), res = make_operand<T>(nx, -1, 1);
    operand<ACC> gamma = make_operand<ACC>(c, 0.5, 2), beta = make_operand<ACC>(c, -1, 1);
    operand<ACC> rm = make_operand<ACC>(c, -1, 1), rv = make_operand<ACC>(c, 0.5, 2);
    ACC *rm2 = upload(rm.h, c), *rv2 = upload(rv.h, c), *sm = poisoned<ACC>(c), *si = poisoned<ACC>(c);
    ACC *sm2 = poisoned<ACC>(c), *si2 = poisoned<ACC>(c), *dg = poisoned<ACC>(c), *db = poisoned<ACC>(c);
    ACC *dg2 = poisoned<ACC>(c), *db2 = poisoned<ACC>(c);
    T *y = poisoned<T>(nx), *z = poisoned<T>(nx), *y2 = poisoned<T>(nx), *y3 = poisoned<T>(nx), *z3 = poisoned<T>(nx);
    T *dz = poisoned<T>(nx), *dx = poisoned<T>(nx), *dx2 = poisoned<T>(nx);
    const double tol = tolerance<T>();
    const D *none = NULL;
    hpdl_status s = hpdl__cuda_bn_relu_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm.d, rv.d, (const T *)NULL,
                                                        y, sm, si, 0);
    HPDL_EXPECT(s == (lc->layout == HPDL_NHWC && sizeof(T) < 8 ? HPDL_OK : HPDL_ERR_UNSUPPORTED));
    if (s == HPDL_OK) {
        HPDL_CHECK(hpdl_cuda_batchnorm_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm2, rv2, z, sm2, si2));
        HPDL_CHECK(hpdl__elementwise((int64_t)nx, 1, (const D *)z, none, (D *)y2, hpdl__cnn_relu_op(), 0));
        expect_same(y2, y, nx, tol, "batchnorm + relu y", lc->name);
        expect_same(rm2, rm.d, c, tolerance<ACC>(), "batchnorm + relu running mean", lc->name);
        expect_same(rv2, rv.d, c, tolerance<ACC>(), "batchnorm + relu running variance", lc->name);
        /* with the residual: max(bn(x) + res, 0) */
        HPDL_EXPECT(hpdl__cuda_bn_relu_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm.d, rv.d, res.d, y3, sm2,
                                                        si2, 0) == HPDL_OK);
        HPDL_CHECK(hpdl__elementwise((int64_t)nx, 1, (const D *)z, (const D *)res.d, (D *)z3, hpdl__cnn_add_op(), 0));
        HPDL_CHECK(hpdl__elementwise((int64_t)nx, 1, (const D *)z3, none, (D *)z3, hpdl__cnn_relu_op(), 0));
        expect_same(z3, y3, nx, tol, "batchnorm + residual + relu y", lc->name);
        /* backward from the first forward's output and statistics */
        HPDL_EXPECT(hpdl__cuda_bn_relu_backward(&xd, x.d, dy.d, gamma.d, beta.d, sm, si, dx, dg, db, 0) == HPDL_OK);
        HPDL_CHECK(hpdl__elementwise((int64_t)nx, 1, (const D *)y, (const D *)dy.d, (D *)dz, hpdl__cnn_relu_grad_op(), 0));
        HPDL_CHECK(hpdl_cuda_batchnorm_backward(&xd, x.d, dz, gamma.d, sm, si, dx2, dg2, db2));
        expect_same(dx2, dx, nx, tol, "batchnorm + relu dx", lc->name);
        expect_same(dg2, dg, c, tol, "batchnorm + relu dgamma", lc->name);
        expect_same(db2, db, c, tol, "batchnorm + relu dbeta", lc->name);
    } else {
        hpdl_cuda_free(rm2); hpdl_cuda_free(rv2); hpdl_cuda_free(y2); hpdl_cuda_free(z3);
        hpdl_cuda_free(dx2); hpdl_cuda_free(dg2); hpdl_cuda_free(db2);
    }
    hpdl_cuda_free(sm); hpdl_cuda_free(si); hpdl_cuda_free(sm2); hpdl_cuda_free(si2); hpdl_cuda_free(dg);
    hpdl_cuda_free(db); hpdl_cuda_free(y); hpdl_cuda_free(z); hpdl_cuda_free(y3); hpdl_cuda_free(dz); hpdl_cuda_free(dx);
    free_operand(&x); free_operand(&dy); free_operand(&res); free_operand(&gamma); free_operand(&beta);
    free_operand(&rm); free_operand(&rv);
}

template <typename T> static void test_layers(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    for (int i = 0; i < HPDL_COUNT(k_layer_cases); i++) {
        check_bias_and_pooling<T>(&k_layer_cases[i]);
        check_batchnorm<T>(&k_layer_cases[i]);
        check_bn_relu<T>(&k_layer_cases[i]);
    }
}

static void test_layers_f32(void) { test_layers<float>(); }
static void test_layers_f64(void) { test_layers<double>(); }
static void test_layers_f16(void) { test_layers<hpdl_f16>(); }
static void test_layers_bf16(void) { test_layers<hpdl_bf16>(); }

/* Bad arguments return INVALID and leave the poisoned output as it was. */
static void test_conv_bad_args(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_conv2d_params p = hpdl_conv2d_params_make(3, 1, 1, 1, 1), bad;
    hpdl_tensor4 xd = hpdl_tensor4_make(1, 3, 5, 4, HPDL_NHWC), yd, wrong;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, 4, &yd));
    const size_t bytes = 1024 * sizeof(float);
    float *d_x, *d_w, *d_out, *before = (float *)malloc(bytes), *after = (float *)malloc(bytes);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_x, bytes));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_w, bytes));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_out, bytes));
    HPDL_CHECK(hpdl_cuda_poison(d_out, bytes));
    HPDL_CHECK(hpdl_cuda_to_host(before, d_out, bytes, 0));
    bad = p;
    bad.stride_h = 0;
    wrong = yd;
    wrong.w += 1;
    for (int a = 0; a < HPDL_COUNT(k_algos); a++) {
        hpdl_conv_algo algo = k_algos[a];
        HPDL_EXPECT(hpdl_cuda_conv2d_forward_algo_f32(algo, &bad, &xd, d_x, d_w, &yd, d_out, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_conv2d_forward_algo_f32(algo, &p, &xd, d_x, d_w, &wrong, d_out, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_conv2d_forward_algo_f32(algo, &p, &xd, NULL, d_w, &yd, d_out, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_conv2d_backward_data_algo_f32(algo, &p, &wrong, d_x, d_w, &xd, d_out, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_conv2d_backward_filter_algo_f32(algo, &p, &xd, d_x, &yd, NULL, d_out, 0) == HPDL_ERR_INVALID);
    }
    HPDL_EXPECT(hpdl_cuda_conv2d_forward_algo_f32((hpdl_conv_algo)99, &p, &xd, d_x, d_w, &yd, d_out, 0) == HPDL_ERR_INVALID);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(after, d_out, bytes, 0));
    HPDL_EXPECT(memcmp(before, after, bytes) == 0);
    hpdl_cuda_free(d_x); hpdl_cuda_free(d_w); hpdl_cuda_free(d_out);
    free(before); free(after);
}

/* Host logic, no GPU needed: the Winograd rung's backward-filter slices
   cover every tile once, in whole 128-tile chunks, none empty, at least
   512 tiles deep when there are several, within the GEMM batch's 65535;
   ResNet-18's first stage at batch 128 (8192 tiles, 64 channels) is cut.
   One slice is the forward's layout (chunk = cols). */
static void test_winograd_slices(void) {
    static const int shapes[][5] = {/* n, p, q, c, k */
                                    {128, 32, 32, 64, 64}, {128, 16, 16, 128, 128}, {128, 4, 4, 512, 512},
                                    {1, 13, 10, 7, 9},     {1500, 18, 10, 1, 8},    {128, 56, 56, 64, 64},
                                    {32, 224, 224, 64, 64}, {2, 9, 14, 33, 35}};
    for (int i = 0; i < HPDL_COUNT(shapes); i++) {
        const int *sh = shapes[i];
        const hpdl_tensor4 y = hpdl_tensor4_make(sh[0], sh[4], sh[1], sh[2], HPDL_NHWC);
        const int tiles = sh[0] * ((sh[1] + 3) / 4) * ((sh[2] + 3) / 4);
        const int wanted = hpdl__wino_slices(tiles, sh[3], sh[4], 132);
        const hpdl__wino_plan plan = hpdl__wino_plan_for(y, wanted), one = hpdl__wino_plan_for(y, 1);
        HPDL_EXPECT(plan.tiles == tiles && plan.chunk % 128 == 0 && plan.slices >= 1 && plan.slices <= wanted);
        HPDL_EXPECT((int64_t)(plan.slices - 1) * plan.chunk < tiles && (int64_t)plan.slices * plan.chunk >= tiles);
        HPDL_EXPECT(plan.cols == plan.slices * plan.chunk && 36 * plan.slices <= 65535);
        HPDL_EXPECT(plan.slices == 1 || plan.chunk >= 512);
        HPDL_EXPECT(one.slices == 1 && one.chunk == one.cols && one.cols % 128 == 0 && one.cols - tiles < 128);
    }
    HPDL_EXPECT(hpdl__wino_slices(8192, 64, 64, 132) > 1);
}

/* Host logic: where the im2col rung applies (f32/f64, one group, NHWC or
   NCHW), and where it reads x as its columns (1x1, stride 1, no padding). */
static void test_im2col_applies(void) {
    float dummy[1];
    const hpdl_tensor4 x = hpdl_tensor4_make(2, 8, 9, 7, HPDL_NHWC), xn = hpdl_tensor4_make(2, 8, 9, 7, HPDL_NCHW);
    const hpdl_conv2d_params one = hpdl_conv2d_params_make(1, 1, 0, 1, 1), strided = hpdl_conv2d_params_make(1, 2, 0, 1, 1);
    const hpdl_conv2d_params padded = hpdl_conv2d_params_make(3, 1, 1, 1, 1), grouped = hpdl_conv2d_params_make(3, 1, 1, 1, 2);
    const hpdl_conv2d_params *ps[] = {&one, &strided, &padded, &grouped};
    for (int i = 0; i < HPDL_COUNT(ps); i++)
        for (int layout = 0; layout < 2; layout++) {
            const hpdl_tensor4 *xd = layout ? &x : &xn;
            hpdl_tensor4 yd;
            hpdl__conv_geom g;
            HPDL_CHECK(hpdl_conv2d_output_desc(ps[i], xd, 16, &yd));
            HPDL_CHECK(hpdl__conv_geom_make(ps[i], xd, &yd, dummy, dummy, dummy, &g));
            const int runs = ps[i] != &grouped;
            HPDL_EXPECT(hpdl__im2col_applies(g, 4) == runs && hpdl__im2col_applies(g, 8) == runs);
            HPDL_EXPECT(!hpdl__im2col_applies(g, 2));
            HPDL_EXPECT(hpdl__im2col_is_x(g) == (ps[i] == &one));
        }
}

/* The im2col rung's NCHW operands and the CUDNN rung's f32 NCHW route are
   copies between the layouts (hpdl__relayout): each element where its
   layout puts it, and back to the start, for a tensor whose sizes are not
   multiples of the 32 x 32 tiles. */
static void test_relayout(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    const hpdl_tensor4 t = hpdl_tensor4_make(3, 37, 5, 9, HPDL_NHWC), tn = hpdl_tensor4_make(3, 37, 5, 9, HPDL_NCHW);
    const size_t n = hpdl_tensor4_count(&t), bytes = n * sizeof(float);
    float *h = (float *)malloc(bytes), *got = (float *)malloc(bytes), *d_in, *d_out;
    int bad = 0;
    for (size_t i = 0; i < n; i++) h[i] = (float)i;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_in, bytes));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_out, bytes));
    HPDL_CHECK(hpdl_cuda_to_device(d_in, h, bytes, 0));
    HPDL_CHECK(hpdl__relayout<float>(t, d_in, d_out, 1, 0));
    HPDL_CHECK(hpdl_cuda_to_host(got, d_out, bytes, 0));
    for (int b = 0; b < t.n; b++)
        for (int c = 0; c < t.c; c++)
            for (int y = 0; y < t.h; y++)
                for (int x = 0; x < t.w; x++)
                    bad += got[hpdl_tensor4_offset(&tn, b, c, y, x)] != h[hpdl_tensor4_offset(&t, b, c, y, x)];
    HPDL_EXPECT(bad == 0);
    HPDL_CHECK(hpdl__relayout<float>(t, d_out, d_in, 0, 0));
    HPDL_CHECK(hpdl_cuda_to_host(got, d_in, bytes, 0));
    HPDL_EXPECT(memcmp(got, h, bytes) == 0);
    hpdl_cuda_free(d_in); hpdl_cuda_free(d_out);
    free(h); free(got);
}

/* The scratch pool keeps what a call reserved when the program
   synchronises, so the next call does not reserve it again (the point of
   it: ~40 us a call in eager loops otherwise), and gives all of it back
   when asked. The NHWC batch norm takes its sums from the pool. */
static void test_scratch_pool(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_tensor4 xd = hpdl_tensor4_make(8, 64, 16, 16, HPDL_NHWC);
    size_t nx = hpdl_tensor4_count(&xd), c = 64, kept;
    operand<float> x = make_operand<float>(nx, -2, 3), gamma = make_operand<float>(c, 0.5, 2);
    operand<float> beta = make_operand<float>(c, -1, 1), rm = make_operand<float>(c, -1, 1);
    operand<float> rv = make_operand<float>(c, 0.5, 2);
    float *y = poisoned<float>(nx), *sm = poisoned<float>(c), *si = poisoned<float>(c);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_EXPECT(hpdl_cuda_scratch_release() == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_scratch_reserved() == 0);
    HPDL_EXPECT(hpdl_cuda_batchnorm_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm.d, rv.d, y, sm, si) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    kept = hpdl_cuda_scratch_reserved();
    HPDL_EXPECT(kept > 0);
    HPDL_EXPECT(hpdl_cuda_batchnorm_forward_training(&xd, x.d, gamma.d, beta.d, 0.1, 1e-5, rm.d, rv.d, y, sm, si) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_EXPECT(hpdl_cuda_scratch_reserved() == kept);
    HPDL_EXPECT(hpdl_cuda_scratch_release() == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_scratch_reserved() == 0);
    free_operand(&x); free_operand(&gamma); free_operand(&beta); free_operand(&rm); free_operand(&rv);
    hpdl_cuda_free(y); hpdl_cuda_free(sm); hpdl_cuda_free(si);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
                                      HPDL_TEST(test_relayout), HPDL_TEST(test_scratch_pool), HPDL_TEST(test_winograd_slices), HPDL_TEST(test_im2col_applies),
                                      HPDL_TEST(test_conv_bad_args), HPDL_TEST(test_conv_f32), HPDL_TEST(test_conv_f64),
                                      HPDL_TEST(test_conv_f16),     HPDL_TEST(test_conv_bf16), HPDL_TEST(test_mixed_layouts_f32),
                                      HPDL_TEST(test_mixed_layouts_f64), HPDL_TEST(test_layers_f32),
                                      HPDL_TEST(test_layers_f64),   HPDL_TEST(test_layers_f16), HPDL_TEST(test_layers_bf16)};
    hpdl_rng_seed(&rng, 20261126);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
