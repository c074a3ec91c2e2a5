/* Tests of the CPU convolution family: conv2d forward (against hand-worked
   cases and an independent loop over an explicitly padded input), both
   layouts, backward-data and backward-filter by finite differences (f64),
   bias, pooling, global average pooling, batch normalization against its
   definition, every type against f64, and bad arguments refused with the
   outputs untouched. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_types.h"

#define POISON 12345.0 /* what an output holds before a call; no result is near it */

static hpdl_rng rng;

static void *xalloc(size_t count, size_t size) {
    void *p = hpdl_alloc(count, size);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

static double *doubles(size_t n) { return (double *)xalloc(n, sizeof(double)); }

static double *random_doubles(size_t n, double lo, double hi) {
    double *x = doubles(n);
    size_t i;
    for (i = 0; i < n; i++) x[i] = lo + (hi - lo) * hpdl_rng_uniform(&rng);
    return x;
}

static void fill(double *x, size_t n, double v) {
    size_t i;
    for (i = 0; i < n; i++) x[i] = v;
}

/* max over i of |got - want| / max(1, |want|); NaN counts as the worst */
static double rel_err(const double *got, const double *want, size_t n) {
    double worst = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        double e = fabs(got[i] - want[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static double dot(const double *a, const double *b, size_t n) {
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* The same tensor rewritten from NCHW to NHWC and back. */
static void nchw_to_nhwc(const double *src, int n, int c, int h, int w, double *dst) {
    int i0, i1, i2, i3;
    for (i0 = 0; i0 < n; i0++)
        for (i1 = 0; i1 < c; i1++)
            for (i2 = 0; i2 < h; i2++)
                for (i3 = 0; i3 < w; i3++)
                    dst[((i0 * h + i2) * w + i3) * c + i1] = src[((i0 * c + i1) * h + i2) * w + i3];
}

static void nhwc_to_nchw(const double *src, int n, int c, int h, int w, double *dst) {
    int i0, i1, i2, i3;
    for (i0 = 0; i0 < n; i0++)
        for (i1 = 0; i1 < c; i1++)
            for (i2 = 0; i2 < h; i2++)
                for (i3 = 0; i3 < w; i3++)
                    dst[((i0 * c + i1) * h + i2) * w + i3] = src[((i0 * h + i2) * w + i3) * c + i1];
}

/* ---- the shapes ---------------------------------------------------------- */

typedef struct conv_case {
    const char *name;
    int n, c, h, w, k;
    int kh, kw, sh, sw, ph, pw, dh, dw, groups;
} conv_case;

/* C and K not multiples of 8, H != W, stride 2, padding 0/1/3, 1x1, 7x7,
   dilation 2, batch 1, groups and depthwise, an asymmetric window. */
static const conv_case cases[] = {
    {"3x3 pad 1", 2, 3, 7, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 stride 2 pad 0, batch 1", 1, 5, 9, 11, 7, 3, 3, 2, 2, 0, 0, 1, 1, 1},
    {"7x7 stride 2 pad 3 (stem)", 2, 3, 10, 9, 6, 7, 7, 2, 2, 3, 3, 1, 1, 1},
    {"1x1", 1, 6, 5, 4, 9, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"1x1 stride 2", 1, 9, 7, 6, 10, 1, 1, 2, 2, 0, 0, 1, 1, 1},
    {"3x3 dilation 2", 2, 4, 9, 8, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1},
    {"3 groups", 1, 6, 6, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3},
    {"depthwise stride 2", 2, 5, 7, 6, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5},
    {"2x3 stride (1,2) pad (0,1) dilation (2,1)", 1, 3, 6, 9, 2, 2, 3, 1, 2, 0, 1, 2, 1, 1},
};

static hpdl_conv2d_params case_params(const conv_case *cc) {
    hpdl_conv2d_params p;
    p.kernel_h = cc->kh; p.kernel_w = cc->kw;
    p.stride_h = cc->sh; p.stride_w = cc->sw;
    p.pad_h = cc->ph; p.pad_w = cc->pw;
    p.dilation_h = cc->dh; p.dilation_w = cc->dw;
    p.groups = cc->groups;
    return p;
}

/* The descriptors of a case in one layout. */
typedef struct conv_shapes { hpdl_conv2d_params p; hpdl_tensor4 x, w, y; size_t nx, nw, ny; } conv_shapes;

static conv_shapes case_shapes(const conv_case *cc, hpdl_layout layout) {
    conv_shapes s;
    s.p = case_params(cc);
    s.x = hpdl_tensor4_make(cc->n, cc->c, cc->h, cc->w, layout);
    HPDL_CHECK(hpdl_conv2d_output_desc(&s.p, &s.x, cc->k, &s.y));
    HPDL_CHECK(hpdl_conv2d_filter_desc(&s.p, &s.x, cc->k, &s.w));
    s.nx = hpdl_tensor4_count(&s.x);
    s.nw = hpdl_tensor4_count(&s.w);
    s.ny = hpdl_tensor4_count(&s.y);
    return s;
}

/* Independent forward (NCHW, KCRS): copy x into a zero-padded buffer, then
   slide the dilated kernel over it with no bounds tests at all. */
static void naive_conv_forward(const conv_case *cc, const conv_shapes *s, const double *x, const double *w,
                               double *y) {
    int hp = cc->h + 2 * cc->ph, wp = cc->w + 2 * cc->pw;
    int cg = cc->c / cc->groups, kg = cc->k / cc->groups;
    double *xp = doubles((size_t)cc->n * cc->c * hp * wp);
    int n, c, h, w_, k, oh, ow, r, q;
    fill(xp, (size_t)cc->n * cc->c * hp * wp, 0.0);
    for (n = 0; n < cc->n; n++)
        for (c = 0; c < cc->c; c++)
            for (h = 0; h < cc->h; h++)
                for (w_ = 0; w_ < cc->w; w_++)
                    xp[((n * cc->c + c) * hp + h + cc->ph) * wp + w_ + cc->pw] =
                        x[((n * cc->c + c) * cc->h + h) * cc->w + w_];
    for (n = 0; n < cc->n; n++)
        for (k = 0; k < cc->k; k++)
            for (oh = 0; oh < s->y.h; oh++)
                for (ow = 0; ow < s->y.w; ow++) {
                    double sum = 0;
                    for (c = 0; c < cg; c++)
                        for (r = 0; r < cc->kh; r++)
                            for (q = 0; q < cc->kw; q++)
                                sum += xp[((n * cc->c + k / kg * cg + c) * hp + oh * cc->sh + r * cc->dh) * wp +
                                          ow * cc->sw + q * cc->dw] *
                                       w[((k * cg + c) * cc->kh + r) * cc->kw + q];
                    y[((n * cc->k + k) * s->y.h + oh) * s->y.w + ow] = sum;
                }
    free(xp);
}

/* ---- typed runners: double arrays in, the type's rounding, double out ---- */

#define DEFINE_TYPED(S, T, ACC)                                                \
    static T *to_##S(const double *src, size_t n) {                            \
        T *dst = (T *)xalloc(n, sizeof(T));                                    \
        size_t i;                                                              \
        for (i = 0; i < n; i++) dst[i] = TO_##S(src[i]);                       \
        return dst;                                                            \
    }                                                                          \
    static void from_##S(const T *src, double *dst, size_t n) {                \
        size_t i;                                                              \
        for (i = 0; i < n; i++) dst[i] = FROM_##S(src[i]);                     \
    }                                                                          \
    /* x becomes the values T stores for it */                                 \
    static void round_to_##S(double *x, size_t n) {                            \
        T *t = to_##S(x, n);                                                   \
        from_##S(t, x, n);                                                     \
        free(t);                                                               \
    }                                                                          \
    /* out = op(a, b) where op is forward, backward-data or backward-filter; \
       `out` is poisoned in T first and read back after. */                    \
    static hpdl_status conv_pass_##S(int pass, const conv_shapes *s, const double *a, size_t na, \
                                     const double *b, size_t nb, double *out, size_t nout) { \
        T *ta = to_##S(a, na), *tb = to_##S(b, nb), *to;                       \
        hpdl_status st;                                                        \
        fill(out, nout, POISON);                                               \
        to = to_##S(out, nout);                                                \
        st = pass == 0   ? hpdl_conv2d_forward_##S(&s->p, &s->x, ta, tb, &s->y, to) \
             : pass == 1 ? hpdl_conv2d_backward_data_##S(&s->p, &s->y, ta, tb, &s->x, to) \
                         : hpdl_conv2d_backward_filter_##S(&s->p, &s->x, ta, &s->y, tb, to); \
        from_##S(to, out, nout);                                               \
        free(ta); free(tb); free(to);                                          \
        return st;                                                             \
    }
FOR_EACH_TYPE(DEFINE_TYPED)

enum { FORWARD = 0, BACKWARD_DATA = 1, BACKWARD_FILTER = 2 };

/* ---- output size ----------------------------------------------------------- */

static void output_size(void) {
    hpdl_layer l;
    HPDL_EXPECT(hpdl_conv_output_size(7, 3, 2, 1, 1) == 4);
    HPDL_EXPECT(hpdl_conv_output_size(224, 7, 2, 3, 1) == 112);
    HPDL_EXPECT(hpdl_conv_output_size(5, 3, 1, 0, 2) == 1); /* dilated extent 5 */
    HPDL_EXPECT(hpdl_conv_output_size(4, 3, 1, 0, 2) == 0); /* extent 5 > 4 */
    HPDL_EXPECT(hpdl_conv_output_size(9, 1, 2, 0, 1) == 5);
    HPDL_EXPECT(hpdl_conv_output_size(0, 1, 1, 0, 1) == 0);
    HPDL_EXPECT(hpdl_conv_output_size(9, 3, 0, 0, 1) == 0);
    HPDL_EXPECT(hpdl_conv_output_size(9, 3, 1, -1, 1) == 0);
    HPDL_EXPECT(hpdl_conv_output_size(INT_MAX, 1, 1, INT_MAX, 1) == 0); /* out of int range */
    /* the performance models count with the same rule */
    HPDL_CHECK(hpdl_layer_conv2d(&l, "c", hpdl_shape_make(3, 11, 8), 4, 3, 2, 1, 1, 0));
    HPDL_EXPECT(l.out.h == hpdl_conv_output_size(11, 3, 2, 1, 1) && l.out.w == hpdl_conv_output_size(8, 3, 2, 1, 1));
}

static void descriptors(void) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(3, 2, 1, 1, 1);
    hpdl_tensor4 x = hpdl_tensor4_make(2, 3, 7, 5, HPDL_NHWC), y, w;
    HPDL_EXPECT(hpdl_conv2d_output_desc(&p, &x, 4, &y) == HPDL_OK);
    HPDL_EXPECT(y.n == 2 && y.c == 4 && y.h == 4 && y.w == 3 && y.layout == HPDL_NHWC);
    HPDL_EXPECT(hpdl_conv2d_filter_desc(&p, &x, 4, &w) == HPDL_OK);
    HPDL_EXPECT(w.n == 4 && w.c == 3 && w.h == 3 && w.w == 3 && w.layout == HPDL_NHWC);
    HPDL_EXPECT(hpdl_tensor4_count(&x) == 210);
    HPDL_EXPECT(hpdl_tensor4_offset(&x, 1, 2, 3, 4) == (size_t)(((1 * 7 + 3) * 5 + 4) * 3 + 2));
    x.layout = HPDL_NCHW;
    HPDL_EXPECT(hpdl_tensor4_offset(&x, 1, 2, 3, 4) == (size_t)(((1 * 3 + 2) * 7 + 3) * 5 + 4));
}

/* ---- forward ----------------------------------------------------------------- */

/* x = 1..9 (3x3): a 2x2 kernel of ones sums each 2x2 block; a 3x3 kernel of
   ones at stride 2 with padding 1 sees the same blocks through its padding. */
static void forward_by_hand(void) {
    double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, y[4];
    double want[4] = {12, 16, 24, 28};
    double x25[25], w4[4] = {1, 2, 3, 4}, y9[9];
    conv_case one = {"", 1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0, 1, 1, 1};
    conv_case strided = {"", 1, 1, 3, 3, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1};
    conv_case dilated = {"", 1, 1, 5, 5, 1, 2, 2, 1, 1, 0, 0, 2, 2, 1};
    conv_shapes s = case_shapes(&one, HPDL_NCHW);
    int i;
    HPDL_EXPECT(conv_pass_f64(FORWARD, &s, x, 9, w, 4, y, 4) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want, 4) == 0);
    s = case_shapes(&strided, HPDL_NCHW);
    HPDL_EXPECT(conv_pass_f64(FORWARD, &s, x, 9, w, 9, y, 4) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want, 4) == 0);
    /* dilation 2: y[0][0] = 1*x[0][0] + 2*x[0][2] + 3*x[2][0] + 4*x[2][2] */
    for (i = 0; i < 25; i++) x25[i] = i;
    s = case_shapes(&dilated, HPDL_NCHW);
    HPDL_EXPECT(s.y.h == 3 && s.y.w == 3);
    HPDL_EXPECT(conv_pass_f64(FORWARD, &s, x25, 25, w4, 4, y9, 9) == HPDL_OK);
    HPDL_EXPECT(y9[0] == 1 * 0 + 2 * 2 + 3 * 10 + 4 * 12);
    HPDL_EXPECT(y9[8] == 1 * 12 + 2 * 14 + 3 * 22 + 4 * 24);
}

/* Every case and type against the independent loop on the stored values. */
#define DEFINE_FORWARD_TEST(S, T, ACC)                                         \
    static void forward_##S(void) {                                            \
        int i;                                                                 \
        for (i = 0; i < HPDL_COUNT(cases); i++) {                              \
            conv_shapes s = case_shapes(&cases[i], HPDL_NCHW);                 \
            double *x = random_doubles(s.nx, -1, 1), *w = random_doubles(s.nw, -1, 1); \
            double *y = doubles(s.ny), *want = doubles(s.ny), err;             \
            round_to_##S(x, s.nx);                                             \
            round_to_##S(w, s.nw);                                             \
            naive_conv_forward(&cases[i], &s, x, w, want);                     \
            HPDL_EXPECT(conv_pass_##S(FORWARD, &s, x, s.nx, w, s.nw, y, s.ny) == HPDL_OK); \
            err = rel_err(y, want, s.ny);                                      \
            if (!(err <= TOL_##S)) fprintf(stderr, "    %s: error %g\n", cases[i].name, err); \
            HPDL_EXPECT(err <= TOL_##S);                                       \
            free(x); free(w); free(y); free(want);                             \
        }                                                                      \
    }
FOR_EACH_TYPE(DEFINE_FORWARD_TEST)

/* NHWC (filter KRSC) gives the NCHW result exactly: same sums, same order. */
static void layouts_agree(void) {
    int i, pass;
    for (i = 0; i < HPDL_COUNT(cases); i++) {
        const conv_case *cc = &cases[i];
        conv_shapes a = case_shapes(cc, HPDL_NCHW), b = case_shapes(cc, HPDL_NHWC);
        double *x = random_doubles(a.nx, -1, 1), *w = random_doubles(a.nw, -1, 1), *dy = random_doubles(a.ny, -1, 1);
        double *xb = doubles(a.nx), *wb = doubles(a.nw), *dyb = doubles(a.ny);
        size_t nmax = a.nx > a.nw ? (a.nx > a.ny ? a.nx : a.ny) : (a.nw > a.ny ? a.nw : a.ny);
        double *out_a = doubles(nmax), *out_b = doubles(nmax), *back = doubles(nmax);
        nchw_to_nhwc(x, cc->n, cc->c, cc->h, cc->w, xb);
        nchw_to_nhwc(w, cc->k, cc->c / cc->groups, cc->kh, cc->kw, wb);
        nchw_to_nhwc(dy, cc->n, cc->k, a.y.h, a.y.w, dyb);
        for (pass = FORWARD; pass <= BACKWARD_FILTER; pass++) {
            const hpdl_tensor4 *od = pass == FORWARD ? &a.y : pass == BACKWARD_DATA ? &a.x : &a.w;
            size_t n = hpdl_tensor4_count(od);
            if (pass == FORWARD) {
                HPDL_EXPECT(conv_pass_f64(pass, &a, x, a.nx, w, a.nw, out_a, n) == HPDL_OK);
                HPDL_EXPECT(conv_pass_f64(pass, &b, xb, a.nx, wb, a.nw, out_b, n) == HPDL_OK);
            } else if (pass == BACKWARD_DATA) {
                HPDL_EXPECT(conv_pass_f64(pass, &a, dy, a.ny, w, a.nw, out_a, n) == HPDL_OK);
                HPDL_EXPECT(conv_pass_f64(pass, &b, dyb, a.ny, wb, a.nw, out_b, n) == HPDL_OK);
            } else {
                HPDL_EXPECT(conv_pass_f64(pass, &a, x, a.nx, dy, a.ny, out_a, n) == HPDL_OK);
                HPDL_EXPECT(conv_pass_f64(pass, &b, xb, a.nx, dyb, a.ny, out_b, n) == HPDL_OK);
            }
            nhwc_to_nchw(out_b, od->n, od->c, od->h, od->w, back);
            HPDL_EXPECT(memcmp(out_a, back, n * sizeof(double)) == 0);
        }
        free(x); free(w); free(dy); free(xb); free(wb); free(dyb); free(out_a); free(out_b); free(back);
    }
}

/* ---- backward by finite differences --------------------------------------------- */

/* L(x, w) = sum of y .* g: dL/dx is backward-data of g, dL/dw backward-filter.
   L is linear in each, so a central difference is exact up to rounding. */
static double conv_loss(const conv_shapes *s, const double *x, const double *w, const double *g) {
    double *y = doubles(s->ny), l;
    HPDL_CHECK(conv_pass_f64(FORWARD, s, x, s->nx, w, s->nw, y, s->ny));
    l = dot(y, g, s->ny);
    free(y);
    return l;
}

/* grad[i] ~ (L(v + h e_i) - L(v - h e_i)) / 2h, v being x (which 0) or w. */
static void conv_numeric_grad(const conv_shapes *s, double *x, double *w, const double *g, int which,
                              double *grad) {
    const double h = 1e-3;
    double *v = which == 0 ? x : w;
    size_t i, n = which == 0 ? s->nx : s->nw;
    for (i = 0; i < n; i++) {
        double keep = v[i], up, down;
        v[i] = keep + h;
        up = conv_loss(s, x, w, g);
        v[i] = keep - h;
        down = conv_loss(s, x, w, g);
        v[i] = keep;
        grad[i] = (up - down) / (2 * h);
    }
}

static void backward_finite_differences(void) {
    int i, layout;
    for (i = 0; i < HPDL_COUNT(cases); i++)
        for (layout = HPDL_NCHW; layout <= HPDL_NHWC; layout++) {
            conv_shapes s = case_shapes(&cases[i], (hpdl_layout)layout);
            double *x = random_doubles(s.nx, -1, 1), *w = random_doubles(s.nw, -1, 1), *g = random_doubles(s.ny, -1, 1);
            double *dx = doubles(s.nx), *dw = doubles(s.nw), *num_dx = doubles(s.nx), *num_dw = doubles(s.nw);
            double ex, ew;
            HPDL_EXPECT(conv_pass_f64(BACKWARD_DATA, &s, g, s.ny, w, s.nw, dx, s.nx) == HPDL_OK);
            HPDL_EXPECT(conv_pass_f64(BACKWARD_FILTER, &s, x, s.nx, g, s.ny, dw, s.nw) == HPDL_OK);
            conv_numeric_grad(&s, x, w, g, 0, num_dx);
            conv_numeric_grad(&s, x, w, g, 1, num_dw);
            ex = rel_err(dx, num_dx, s.nx);
            ew = rel_err(dw, num_dw, s.nw);
            if (!(ex <= 1e-8 && ew <= 1e-8))
                fprintf(stderr, "    %s (%s): dx error %g, dw error %g\n", cases[i].name, layout ? "NHWC" : "NCHW",
                        ex, ew);
            HPDL_EXPECT(ex <= 1e-8);
            HPDL_EXPECT(ew <= 1e-8);
            free(x); free(w); free(g); free(dx); free(dw); free(num_dx); free(num_dw);
        }
}

/* The backward passes of every type against f64 on the stored values. */
#define DEFINE_BACKWARD_TYPE_TEST(S, T, ACC)                                   \
    static void backward_##S(void) {                                           \
        int i;                                                                 \
        for (i = 0; i < HPDL_COUNT(cases); i++) {                              \
            conv_shapes s = case_shapes(&cases[i], HPDL_NHWC);                 \
            double *x = random_doubles(s.nx, -1, 1), *w = random_doubles(s.nw, -1, 1), *g = random_doubles(s.ny, -1, 1); \
            double *dx = doubles(s.nx), *dw = doubles(s.nw), *want_dx = doubles(s.nx), *want_dw = doubles(s.nw); \
            round_to_##S(x, s.nx); round_to_##S(w, s.nw); round_to_##S(g, s.ny); \
            HPDL_CHECK(conv_pass_f64(BACKWARD_DATA, &s, g, s.ny, w, s.nw, want_dx, s.nx)); \
            HPDL_CHECK(conv_pass_f64(BACKWARD_FILTER, &s, x, s.nx, g, s.ny, want_dw, s.nw)); \
            HPDL_EXPECT(conv_pass_##S(BACKWARD_DATA, &s, g, s.ny, w, s.nw, dx, s.nx) == HPDL_OK); \
            HPDL_EXPECT(conv_pass_##S(BACKWARD_FILTER, &s, x, s.nx, g, s.ny, dw, s.nw) == HPDL_OK); \
            HPDL_EXPECT(rel_err(dx, want_dx, s.nx) <= TOL_##S);                \
            HPDL_EXPECT(rel_err(dw, want_dw, s.nw) <= TOL_##S);                \
            free(x); free(w); free(g); free(dx); free(dw); free(want_dx); free(want_dw); \
        }                                                                      \
    }
FOR_EACH_TYPE(DEFINE_BACKWARD_TYPE_TEST)

/* ---- bias ------------------------------------------------------------------------ */

static void bias(void) {
    hpdl_tensor4 d = hpdl_tensor4_make(2, 3, 4, 5, HPDL_NHWC);
    size_t n = hpdl_tensor4_count(&d);
    double *y = random_doubles(n, -1, 1), *keep = doubles(n), *b = random_doubles(3, -1, 1), db[3], want[3];
    int i0, c, h, w;
    memcpy(keep, y, n * sizeof(double));
    HPDL_EXPECT(hpdl_conv2d_bias_add_f64(&d, y, b) == HPDL_OK);
    fill(want, 3, 0.0);
    for (i0 = 0; i0 < 2; i0++)
        for (c = 0; c < 3; c++)
            for (h = 0; h < 4; h++)
                for (w = 0; w < 5; w++) {
                    size_t i = (size_t)((i0 * 4 + h) * 5 + w) * 3 + c; /* NHWC, written out */
                    HPDL_EXPECT(y[i] == keep[i] + b[c]);
                    want[c] += keep[i];
                }
    HPDL_EXPECT(hpdl_conv2d_bias_grad_f64(&d, keep, db) == HPDL_OK);
    HPDL_EXPECT(rel_err(db, want, 3) <= 1e-14);
    free(y); free(keep); free(b);
}

/* ---- pooling ---------------------------------------------------------------------- */

static void pooling_by_hand(void) {
    /* 4x4 = 0..15 with a 2x2 window at stride 2: maxima 5 7 13 15, means 2.5 4.5 10.5 12.5 */
    double x[16], y[4], want_max[4] = {5, 7, 13, 15}, want_avg[4] = {2.5, 4.5, 10.5, 12.5};
    double x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y9[9];
    hpdl_pool2d_params p = hpdl_pool2d_params_make(2, 2, 0), q = hpdl_pool2d_params_make(3, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(1, 1, 4, 4, HPDL_NCHW), yd, x9d = hpdl_tensor4_make(1, 1, 3, 3, HPDL_NCHW);
    int i;
    for (i = 0; i < 16; i++) x[i] = i;
    HPDL_CHECK(hpdl_pool2d_output_desc(&p, &xd, &yd));
    HPDL_EXPECT(yd.h == 2 && yd.w == 2);
    HPDL_EXPECT(hpdl_maxpool2d_forward_f64(&p, &xd, x, &yd, y) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want_max, 4) == 0);
    HPDL_EXPECT(hpdl_avgpool2d_forward_f64(&p, &xd, x, &yd, y) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want_avg, 4) == 0);
    /* 3x3 window, stride 1, padding 1 over 1..9: a corner averages its 4
       input neighbours (padding excluded), the centre all 9 */
    HPDL_EXPECT(hpdl_avgpool2d_forward_f64(&q, &x9d, x9, &x9d, y9) == HPDL_OK);
    HPDL_EXPECT(y9[0] == 3.0 && y9[4] == 5.0 && y9[8] == 7.0 && y9[1] == 3.5);
    HPDL_EXPECT(hpdl_maxpool2d_forward_f64(&q, &x9d, x9, &x9d, y9) == HPDL_OK);
    HPDL_EXPECT(y9[0] == 5.0 && y9[4] == 9.0 && y9[2] == 6.0);
}

typedef struct pool_case { int n, c, h, w, k, stride, pad; } pool_case;

static const pool_case pool_cases[] = {
    {2, 3, 7, 6, 3, 2, 1}, /* ResNet's stem pooling shape, overlapping windows */
    {1, 5, 9, 11, 2, 2, 0},
    {2, 2, 5, 8, 3, 1, 1},
    {1, 3, 8, 7, 4, 3, 2},
};

/* out = pooling (is_max or average) forward of x, or backward of dy. */
static hpdl_status pool_forward(int is_max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const double *x,
                                const hpdl_tensor4 *yd, double *y) {
    return is_max ? hpdl_maxpool2d_forward_f64(p, xd, x, yd, y) : hpdl_avgpool2d_forward_f64(p, xd, x, yd, y);
}

static hpdl_status pool_backward(int is_max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const double *x,
                                 const hpdl_tensor4 *yd, const double *dy, double *dx) {
    return is_max ? hpdl_maxpool2d_backward_f64(p, xd, x, yd, dy, dx)
                  : hpdl_avgpool2d_backward_f64(p, yd, dy, xd, dx);
}

static double pool_loss(int is_max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const double *x,
                        const hpdl_tensor4 *yd, const double *g) {
    size_t ny = hpdl_tensor4_count(yd);
    double *y = doubles(ny), l;
    HPDL_CHECK(pool_forward(is_max, p, xd, x, yd, y));
    l = dot(y, g, ny);
    free(y);
    return l;
}

/* Backward against central differences of sum(y .* g) (random x has no
   ties, so max pooling is differentiable there), and NHWC against NCHW. */
static void pooling_finite_differences(void) {
    int i, is_max;
    const double step = 1e-6;
    for (i = 0; i < HPDL_COUNT(pool_cases); i++)
        for (is_max = 0; is_max <= 1; is_max++) {
            const pool_case *pc = &pool_cases[i];
            hpdl_pool2d_params p = hpdl_pool2d_params_make(pc->k, pc->stride, pc->pad);
            hpdl_tensor4 xd = hpdl_tensor4_make(pc->n, pc->c, pc->h, pc->w, HPDL_NCHW), yd, xb, yb;
            size_t nx = hpdl_tensor4_count(&xd), ny, j;
            double *x, *g, *dx, *num, *xt, *yt, *y, *back;
            HPDL_CHECK(hpdl_pool2d_output_desc(&p, &xd, &yd));
            ny = hpdl_tensor4_count(&yd);
            x = random_doubles(nx, -1, 1); g = random_doubles(ny, -1, 1);
            dx = doubles(nx); num = doubles(nx);
            fill(dx, nx, POISON);
            HPDL_EXPECT(pool_backward(is_max, &p, &xd, x, &yd, g, dx) == HPDL_OK);
            for (j = 0; j < nx; j++) {
                double keep = x[j], up, down;
                x[j] = keep + step; up = pool_loss(is_max, &p, &xd, x, &yd, g);
                x[j] = keep - step; down = pool_loss(is_max, &p, &xd, x, &yd, g);
                x[j] = keep;
                num[j] = (up - down) / (2 * step);
            }
            HPDL_EXPECT(rel_err(dx, num, nx) <= 1e-8);
            /* NHWC: the same outputs, rearranged */
            xb = xd; xb.layout = HPDL_NHWC;
            yb = yd; yb.layout = HPDL_NHWC;
            xt = doubles(nx); yt = doubles(ny); y = doubles(ny); back = doubles(nx > ny ? nx : ny);
            nchw_to_nhwc(x, pc->n, pc->c, pc->h, pc->w, xt);
            HPDL_CHECK(pool_forward(is_max, &p, &xd, x, &yd, y));
            HPDL_EXPECT(pool_forward(is_max, &p, &xb, xt, &yb, yt) == HPDL_OK);
            nhwc_to_nchw(yt, yd.n, yd.c, yd.h, yd.w, back);
            HPDL_EXPECT(memcmp(back, y, ny * sizeof(double)) == 0);
            free(x); free(g); free(dx); free(num); free(xt); free(yt); free(y); free(back);
        }
}

static void global_avgpool(void) {
    hpdl_tensor4 xd = hpdl_tensor4_make(2, 3, 5, 4, HPDL_NHWC);
    size_t nx = hpdl_tensor4_count(&xd);
    double *x = random_doubles(nx, -1, 1), y[6], want[6], dy[6] = {1, -2, 3, 0.5, 4, -1}, *dx = doubles(nx);
    int n, c, h, w;
    fill(want, 6, 0.0);
    for (n = 0; n < 2; n++)
        for (h = 0; h < 5; h++)
            for (w = 0; w < 4; w++)
                for (c = 0; c < 3; c++) want[n * 3 + c] += x[((n * 5 + h) * 4 + w) * 3 + c] / 20;
    HPDL_EXPECT(hpdl_global_avgpool_forward_f64(&xd, x, y) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want, 6) <= 1e-14);
    HPDL_EXPECT(hpdl_global_avgpool_backward_f64(&xd, dy, dx) == HPDL_OK);
    for (n = 0; n < 2; n++)
        for (h = 0; h < 5; h++)
            for (w = 0; w < 4; w++)
                for (c = 0; c < 3; c++) HPDL_EXPECT(dx[((n * 5 + h) * 4 + w) * 3 + c] == dy[n * 3 + c] / 20);
    free(x); free(dx);
}

/* ---- batch normalization ------------------------------------------------------------ */

#define BN_C 3

/* The definition, channel by channel, on an NCHW tensor. */
static void bn_by_definition(const hpdl_tensor4 *d, const double *x, const double *gamma, const double *beta,
                             double eps, double *y, double *mean, double *var) {
    int n, c, i, hw = d->h * d->w;
    double m = (double)d->n * hw;
    for (c = 0; c < d->c; c++) {
        mean[c] = var[c] = 0;
        for (n = 0; n < d->n; n++)
            for (i = 0; i < hw; i++) mean[c] += x[(n * d->c + c) * hw + i] / m;
        for (n = 0; n < d->n; n++)
            for (i = 0; i < hw; i++) var[c] += pow(x[(n * d->c + c) * hw + i] - mean[c], 2) / m;
        for (n = 0; n < d->n; n++)
            for (i = 0; i < hw; i++)
                y[(n * d->c + c) * hw + i] = gamma[c] * (x[(n * d->c + c) * hw + i] - mean[c]) / sqrt(var[c] + eps) + beta[c];
    }
}

static void batchnorm_forward(void) {
    hpdl_tensor4 d = hpdl_tensor4_make(3, BN_C, 5, 4, HPDL_NCHW), dn = d;
    size_t nx = hpdl_tensor4_count(&d);
    double *x = random_doubles(nx, -2, 3), *y = doubles(nx), *want = doubles(nx), *xt = doubles(nx), *yt = doubles(nx);
    double *back = doubles(nx);
    double gamma[BN_C] = {1.5, -0.5, 2}, beta[BN_C] = {0.25, 1, -3}, rm[BN_C] = {0.5, -1, 2}, rv[BN_C] = {1, 2, 0.5};
    double rm0[BN_C], rv0[BN_C], mean[BN_C], var[BN_C], smean[BN_C], sinv[BN_C], rm2[BN_C], rv2[BN_C];
    const double eps = 1e-5, momentum = 0.1, m = 60;
    int c;
    memcpy(rm0, rm, sizeof rm); memcpy(rv0, rv, sizeof rv);
    memcpy(rm2, rm, sizeof rm); memcpy(rv2, rv, sizeof rv);
    bn_by_definition(&d, x, gamma, beta, eps, want, mean, var);
    fill(y, nx, POISON);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, momentum, eps, rm, rv, y, smean, sinv) == HPDL_OK);
    HPDL_EXPECT(rel_err(y, want, nx) <= 1e-12);
    for (c = 0; c < BN_C; c++) {
        HPDL_EXPECT_NEAR(smean[c], mean[c], 1e-13);
        HPDL_EXPECT_NEAR(sinv[c], 1 / sqrt(var[c] + eps), 1e-12);
        HPDL_EXPECT_NEAR(rm[c], 0.9 * rm0[c] + 0.1 * mean[c], 1e-13);
        HPDL_EXPECT_NEAR(rv[c], 0.9 * rv0[c] + 0.1 * var[c] * m / (m - 1), 1e-13);
    }
    /* NHWC gives the same, and y may be x (in place) */
    dn.layout = HPDL_NHWC;
    nchw_to_nhwc(x, 3, BN_C, 5, 4, xt);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&dn, xt, gamma, beta, momentum, eps, rm2, rv2, xt, NULL, NULL) == HPDL_OK);
    nhwc_to_nchw(xt, 3, BN_C, 5, 4, back);
    HPDL_EXPECT(rel_err(back, want, nx) <= 1e-12);
    HPDL_EXPECT(memcmp(rm, rm2, sizeof rm) == 0 && memcmp(rv, rv2, sizeof rv) == 0);
    /* inference uses the running statistics */
    HPDL_EXPECT(hpdl_batchnorm_forward_inference_f64(&d, x, gamma, beta, rm, rv, eps, yt) == HPDL_OK);
    for (c = 0; c < BN_C; c++) {
        size_t i = (size_t)(2 * BN_C + c) * 20 + 7; /* n = 2, h = 1, w = 3 */
        HPDL_EXPECT_NEAR(yt[i], gamma[c] * (x[i] - rm[c]) / sqrt(rv[c] + eps) + beta[c], 1e-13);
    }
    free(x); free(y); free(want); free(xt); free(yt); free(back);
}

/* L(x, gamma, beta) = sum of bn_training(x) .* g, by central differences. */
static double bn_loss(const hpdl_tensor4 *d, const double *x, const double *gamma, const double *beta,
                      const double *g) {
    size_t n = hpdl_tensor4_count(d);
    double *y = doubles(n), rm[BN_C] = {0, 0, 0}, rv[BN_C] = {1, 1, 1}, l;
    HPDL_CHECK(hpdl_batchnorm_forward_training_f64(d, x, gamma, beta, 0.1, 1e-5, rm, rv, y, NULL, NULL));
    l = dot(y, g, n);
    free(y);
    return l;
}

static void numeric_grad(double *v, size_t n, const hpdl_tensor4 *d, double *x, double *gamma, double *beta,
                         const double *g, double *out) {
    const double h = 1e-5;
    size_t i;
    for (i = 0; i < n; i++) {
        double keep = v[i], up, down;
        v[i] = keep + h; up = bn_loss(d, x, gamma, beta, g);
        v[i] = keep - h; down = bn_loss(d, x, gamma, beta, g);
        v[i] = keep;
        out[i] = (up - down) / (2 * h);
    }
}

static void batchnorm_backward(void) {
    int layout;
    for (layout = HPDL_NCHW; layout <= HPDL_NHWC; layout++) {
        hpdl_tensor4 d = hpdl_tensor4_make(2, BN_C, 3, 5, (hpdl_layout)layout);
        size_t nx = hpdl_tensor4_count(&d);
        double *x = random_doubles(nx, -2, 2), *g = random_doubles(nx, -1, 1), *y = doubles(nx);
        double *dx = doubles(nx), *num_dx = doubles(nx);
        double gamma[BN_C] = {1.5, -0.5, 2}, beta[BN_C] = {0.25, 1, -3}, rm[BN_C] = {0, 0, 0}, rv[BN_C] = {1, 1, 1};
        double smean[BN_C], sinv[BN_C], dgamma[BN_C], dbeta[BN_C], num_dgamma[BN_C], num_dbeta[BN_C];
        HPDL_CHECK(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, 0.1, 1e-5, rm, rv, y, smean, sinv));
        HPDL_EXPECT(hpdl_batchnorm_backward_f64(&d, x, g, gamma, smean, sinv, dx, dgamma, dbeta) == HPDL_OK);
        numeric_grad(x, nx, &d, x, gamma, beta, g, num_dx);
        numeric_grad(gamma, BN_C, &d, x, gamma, beta, g, num_dgamma);
        numeric_grad(beta, BN_C, &d, x, gamma, beta, g, num_dbeta);
        HPDL_EXPECT(rel_err(dx, num_dx, nx) <= 1e-7);
        HPDL_EXPECT(rel_err(dgamma, num_dgamma, BN_C) <= 1e-7);
        HPDL_EXPECT(rel_err(dbeta, num_dbeta, BN_C) <= 1e-7);
        free(x); free(g); free(y); free(dx); free(num_dx);
    }
}

/* Training forward of every type against f64 on the stored values; the
   parameters are in the accumulation type. */
#define DEFINE_BN_TYPE_TEST(S, T, ACC)                                         \
    static void batchnorm_##S(void) {                                          \
        hpdl_tensor4 d = hpdl_tensor4_make(2, BN_C, 7, 6, HPDL_NHWC);          \
        size_t nx = hpdl_tensor4_count(&d);                                    \
        double *x = random_doubles(nx, -2, 3), *y = doubles(nx), *want = doubles(nx); \
        double g64[BN_C] = {1.5, -0.5, 2}, b64[BN_C] = {0.25, 1, -3}, rm64[BN_C] = {0, 0, 0}, rv64[BN_C] = {1, 1, 1}; \
        ACC g[BN_C] = {1.5, -0.5, 2}, b[BN_C] = {0.25, 1, -3}, rm[BN_C] = {0, 0, 0}, rv[BN_C] = {1, 1, 1}; \
        T *xt, *yt;                                                            \
        int c;                                                                 \
        round_to_##S(x, nx);                                                   \
        xt = to_##S(x, nx);                                                    \
        fill(y, nx, POISON);                                                   \
        yt = to_##S(y, nx);                                                    \
        HPDL_CHECK(hpdl_batchnorm_forward_training_f64(&d, x, g64, b64, 0.1, 1e-5, rm64, rv64, want, NULL, NULL)); \
        HPDL_EXPECT(hpdl_batchnorm_forward_training_##S(&d, xt, g, b, 0.1, 1e-5, rm, rv, yt, NULL, NULL) == HPDL_OK); \
        from_##S(yt, y, nx);                                                   \
        HPDL_EXPECT(rel_err(y, want, nx) <= TOL_##S);                          \
        for (c = 0; c < BN_C; c++) HPDL_EXPECT_NEAR(rv[c], rv64[c], TOL_f32);  \
        free(x); free(y); free(want); free(xt); free(yt);                      \
    }
FOR_EACH_TYPE(DEFINE_BN_TYPE_TEST)

/* ---- bad arguments ----------------------------------------------------------------- */

/* Each bad call returns INVALID and leaves the poisoned output as it was. */
static void conv_bad_arguments(void) {
    const conv_case *cc = &cases[0];
    conv_shapes good = case_shapes(cc, HPDL_NCHW), s;
    double *x = random_doubles(good.nx, -1, 1), *w = random_doubles(good.nw, -1, 1), *dy = random_doubles(good.ny, -1, 1);
    size_t nout = good.nx + good.nw + good.ny;
    double *out = doubles(nout), *keep = doubles(nout);
    int i;
    fill(out, nout, POISON);
    memcpy(keep, out, nout * sizeof(double));
    for (i = 0; i < 11; i++) {
        s = good;
        switch (i) {
        case 0: s.p.stride_h = 0; break;
        case 1: s.p.pad_w = -1; break;
        case 2: s.p.dilation_h = 0; break;
        case 3: s.p.groups = 2; break;          /* does not divide C = 3 */
        case 4: s.y.h += 1; break;              /* output shape does not match */
        case 5: s.y.n = 1; break;               /* batch differs */
        case 6: s.x.layout = (hpdl_layout)7; break;
        case 7: s.p.kernel_h = 10; break;       /* larger than the padded input */
        case 8: s.x.c = -3; break;
        case 9: s.p.pad_h = INT_MAX / 2; break; /* padded size overflows an int */
        default: s.p.kernel_w = 0; break;
        }
        HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, &s.x, x, w, &s.y, out) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_conv2d_backward_data_f64(&s.p, &s.y, dy, w, &s.x, out) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_conv2d_backward_filter_f64(&s.p, &s.x, x, &s.y, dy, out) == HPDL_ERR_INVALID);
    }
    s = good;
    HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, &s.x, NULL, w, &s.y, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, &s.x, x, NULL, &s.y, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_forward_f64(NULL, &s.x, x, w, &s.y, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, NULL, x, w, &s.y, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, &s.x, x, w, NULL, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_forward_f64(&s.p, &s.x, x, w, &s.y, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_backward_data_f64(&s.p, &s.y, dy, NULL, &s.x, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_backward_filter_f64(&s.p, &s.x, x, &s.y, NULL, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_bias_add_f64(&s.y, out, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_bias_grad_f64(&s.y, NULL, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_conv2d_output_desc(&s.p, &s.x, 0, &s.y) == HPDL_ERR_INVALID);
    s.p.groups = 3;
    s.x.c = 6;
    HPDL_EXPECT(hpdl_conv2d_filter_desc(&s.p, &s.x, 4, &s.w) == HPDL_ERR_INVALID); /* K = 4 not a multiple of 3 */
    HPDL_EXPECT(memcmp(out, keep, nout * sizeof(double)) == 0);
    free(x); free(w); free(dy); free(out); free(keep);
}

static void pool_bad_arguments(void) {
    hpdl_pool2d_params p = hpdl_pool2d_params_make(3, 2, 1), bad;
    hpdl_tensor4 xd = hpdl_tensor4_make(1, 2, 7, 6, HPDL_NCHW), yd, wrong;
    double *x = random_doubles(84, -1, 1), *dy = random_doubles(84, -1, 1), out[84], keep[84];
    int i;
    HPDL_CHECK(hpdl_pool2d_output_desc(&p, &xd, &yd));
    fill(out, 84, POISON);
    memcpy(keep, out, sizeof out);
    for (i = 0; i < 4; i++) {
        bad = p;
        wrong = yd;
        if (i == 0) bad.pad_h = 2;       /* more than half the window */
        else if (i == 1) bad.stride_w = 0;
        else if (i == 2) bad.kernel_h = 0;
        else wrong.w += 1;
        HPDL_EXPECT(hpdl_maxpool2d_forward_f64(&bad, &xd, x, &wrong, out) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_avgpool2d_forward_f64(&bad, &xd, x, &wrong, out) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_maxpool2d_backward_f64(&bad, &xd, x, &wrong, dy, out) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_avgpool2d_backward_f64(&bad, &wrong, dy, &xd, out) == HPDL_ERR_INVALID);
    }
    HPDL_EXPECT(hpdl_maxpool2d_backward_f64(&p, &xd, NULL, &yd, dy, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_avgpool2d_forward_f64(&p, &xd, NULL, &yd, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_global_avgpool_forward_f64(&xd, NULL, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_global_avgpool_backward_f64(NULL, dy, out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(out, keep, sizeof out) == 0);
    free(x); free(dy);
}

static void batchnorm_bad_arguments(void) {
    hpdl_tensor4 d = hpdl_tensor4_make(2, BN_C, 3, 2, HPDL_NCHW), single = hpdl_tensor4_make(1, BN_C, 1, 1, HPDL_NCHW);
    double *x = random_doubles(36, -1, 1), y[36], keep_y[36];
    double gamma[BN_C] = {1, 2, 3}, beta[BN_C] = {0, 1, 2}, rm[BN_C] = {0.5, 0.5, 0.5}, rv[BN_C] = {2, 2, 2};
    double bad_rv[BN_C] = {1, -1, 1}, sm[BN_C], si[BN_C], keep_rm[BN_C], keep_rv[BN_C], keep_s[BN_C];
    fill(y, 36, POISON); fill(sm, BN_C, POISON); fill(si, BN_C, POISON);
    memcpy(keep_y, y, sizeof y); memcpy(keep_rm, rm, sizeof rm); memcpy(keep_rv, rv, sizeof rv);
    memcpy(keep_s, sm, sizeof sm);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, 0.1, 0.0, rm, rv, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, 1.5, 1e-5, rm, rv, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, NAN, 1e-5, rm, rv, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&single, x, gamma, beta, 0.1, 1e-5, rm, rv, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, NULL, beta, 0.1, 1e-5, rm, rv, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_training_f64(&d, x, gamma, beta, 0.1, 1e-5, rm, NULL, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_inference_f64(&d, x, gamma, beta, rm, bad_rv, 1e-5, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_forward_inference_f64(&d, x, gamma, beta, rm, rv, -1.0, y) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_batchnorm_backward_f64(&d, x, x, gamma, NULL, si, y, sm, si) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(y, keep_y, sizeof y) == 0);
    HPDL_EXPECT(memcmp(rm, keep_rm, sizeof rm) == 0 && memcmp(rv, keep_rv, sizeof rv) == 0);
    HPDL_EXPECT(memcmp(sm, keep_s, sizeof sm) == 0 && memcmp(si, keep_s, sizeof si) == 0);
    free(x);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(output_size),
        HPDL_TEST(descriptors),
        HPDL_TEST(forward_by_hand),
        HPDL_TEST(forward_f32),
        HPDL_TEST(forward_f64),
        HPDL_TEST(forward_f16),
        HPDL_TEST(forward_bf16),
        HPDL_TEST(layouts_agree),
        HPDL_TEST(backward_finite_differences),
        HPDL_TEST(backward_f32),
        HPDL_TEST(backward_f64),
        HPDL_TEST(backward_f16),
        HPDL_TEST(backward_bf16),
        HPDL_TEST(bias),
        HPDL_TEST(pooling_by_hand),
        HPDL_TEST(pooling_finite_differences),
        HPDL_TEST(global_avgpool),
        HPDL_TEST(batchnorm_forward),
        HPDL_TEST(batchnorm_backward),
        HPDL_TEST(batchnorm_f32),
        HPDL_TEST(batchnorm_f64),
        HPDL_TEST(batchnorm_f16),
        HPDL_TEST(batchnorm_bf16),
        HPDL_TEST(conv_bad_arguments),
        HPDL_TEST(pool_bad_arguments),
        HPDL_TEST(batchnorm_bad_arguments),
    };
    hpdl_rng_seed(&rng, 20261126);
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
