/* Quantized MLP inference on the CPU (spliced into hpdl.h after the int8
   quantization section of parts/cpu_models.h; needs hpdl_mlp_f32).

   A trained hpdl_mlp_f32 plus calibration batches become a hpdl_quant_mlp,
   which runs in three steps of the course's quantization lab:

       HPDL_QUANT_WEIGHTS      int8 weights (symmetric, one scale per output
                               channel), dequantized at run time; float
                               activations and biases
       HPDL_QUANT_ACTIVATIONS  + int8 activations: every layer input is
                               quantized at its calibrated range (asymmetric)
                               and dequantized (simulated quantization)
       HPDL_QUANT_INTEGER      + int32 biases at scale s_x * s_w[j]: integer-
                               only layers (hpdl_quant_gemm_requant_i8 with a
                               fused ReLU), the only float step being the
                               quantization of the network input

   Integer-only logits. The last layer's channels have different weight
   scales, so raw int32 accumulators are not comparable across classes. They
   are rescaled by fixed-point multipliers M_j = s_w[j] / (2 max_k s_w[k])
   (in (0, 1/2], so hpdl_quant_multiplier can represent them) to one common
   scale, logit_scale = 2 s_x max_k s_w[k]: int32 logits whose argmax is the
   prediction, and logit * logit_scale the real logit.

       hpdl_quant_mlp q;
       hpdl_quant_mlp_work w;
       HPDL_CHECK(hpdl_quant_mlp_build(&q, &model, n_calib, X_calib, 100.0));
       HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 256));
       HPDL_CHECK(hpdl_quant_mlp_accuracy(&q, HPDL_QUANT_INTEGER, &w, n, X, y, &acc));

   Integer-only inference needs ReLU hidden layers (a sigmoid model builds,
   and runs the first two steps; HPDL_QUANT_INTEGER says HPDL_ERR_UNSUPPORTED). */
#ifndef HPDL_CPU_QUANT_MLP_H
#define HPDL_CPU_QUANT_MLP_H

typedef enum hpdl_quant_mode {
    HPDL_QUANT_WEIGHTS = 1,
    HPDL_QUANT_ACTIVATIONS = 2,
    HPDL_QUANT_INTEGER = 3
} hpdl_quant_mode;

HPDL_API const char *hpdl_quant_mode_name(hpdl_quant_mode mode) {
    switch (mode) {
    case HPDL_QUANT_WEIGHTS: return "int8 weights";
    case HPDL_QUANT_ACTIVATIONS: return "+ int8 activations";
    case HPDL_QUANT_INTEGER: return "+ int32 biases (integer-only)";
    }
    return "unknown";
}

/* Calibration histograms: bins over [-R, R] (see hpdl_quant_calib). */
#define HPDL_QUANT_CALIB_BINS 4096

typedef struct hpdl_quant_mlp {
    int n_layers;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    hpdl_activation act;
    int8_t *W[HPDL_MLP_MAX_LAYERS];               /* widths[l] x widths[l+1], row-major like the float model */
    hpdl_quant_params *w_params[HPDL_MLP_MAX_LAYERS]; /* widths[l+1]: symmetric, per output channel (column) */
    hpdl_quant_params x_params[HPDL_MLP_MAX_LAYERS];  /* input of layer l: asymmetric, calibrated */
    hpdl_mlp_f32 dequant;                          /* float model with the dequantized weights */
    int integer;                                   /* the integer-only arrays below exist (ReLU) */
    int32_t *bias32[HPDL_MLP_MAX_LAYERS];          /* widths[l+1] at scale s_x * s_w[j] */
    int32_t *m0[HPDL_MLP_MAX_LAYERS];              /* widths[l+1] fixed-point multipliers ... */
    int *shift[HPDL_MLP_MAX_LAYERS];               /* ... to x_params[l+1] (hidden) or logit_scale (last) */
    double logit_scale;                            /* real value of one int32 logit */
} hpdl_quant_mlp;

HPDL_API void hpdl_quant_mlp_free(hpdl_quant_mlp *q) {
    int l;
    if (!q) return;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) {
        HPDL_FREE(q->W[l]);
        HPDL_FREE(q->w_params[l]);
        HPDL_FREE(q->bias32[l]);
        HPDL_FREE(q->m0[l]);
        HPDL_FREE(q->shift[l]);
    }
    hpdl_mlp_destroy_f32(&q->dequant);
    memset(q, 0, sizeof *q);
}

/* ---- CPU twin of the GPU's int32 logits -------------------------------------------- */

/* C (M x N, int32) = clamp(zero_point + RDBPOT(SRDHM(sat32((A - za)(B - zb)
   + bias), M0), shift), lo, INT32_MAX) with lo = INT32_MIN, or zero_point
   with o->relu: hpdl_quant_gemm_requant_i8 without the int8 clamp, for
   logits at a chosen scale. */
HPDL_API hpdl_status hpdl_quant_gemm_requant_i32(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                                 const int8_t *B, int ldb, int32_t zb, const hpdl_quant_output *o,
                                                 int32_t *C, int ldc) {
    int i, j;
    if (!hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc) || !hpdl__quant_output_valid(o, N))
        return HPDL_ERR_INVALID;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            int64_t acc = hpdl__dot_i8(K, A + (int64_t)i * lda, za, B + j, ldb, zb), v;
            int c = o->per_channel ? j : 0;
            if (o->bias) acc += o->bias[j];
            acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
            v = (int64_t)hpdl_quant_rounding_divide_by_pot(
                    hpdl_quant_sat_rounding_doubling_high_mul((int32_t)acc, o->multiplier[c]), o->shift[c]) +
                o->zero_point;
            if (o->relu && v < o->zero_point) v = o->zero_point;
            C[(int64_t)i * ldc + j] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
        }
    return HPDL_OK;
}

/* ---- building ---------------------------------------------------------------------- */

/* Calibrates the input range of every layer on n rows of X (float forward
   passes in chunks): min/max when pct is 100, else the percentile range. */
static inline hpdl_status hpdl__quant_mlp_calibrate(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int64_t n,
                                                    const float *X, double pct) {
    hpdl_quant_calib cal[HPDL_MLP_MAX_LAYERS];
    hpdl_mlp_work_f32 w;
    hpdl_status st;
    int64_t i0;
    int l, made = 0;
    memset(&w, 0, sizeof w);
    st = hpdl_mlp_work_create_f32(&w, m, 256);
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++)
        if ((st = hpdl_quant_calib_init(&cal[l], HPDL_QUANT_CALIB_BINS)) == HPDL_OK) made++;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w.max_batch) {
        int batch = (int)(n - i0 < w.max_batch ? n - i0 : w.max_batch);
        const float *x = X + (size_t)i0 * m->widths[0];
        st = hpdl_mlp_forward_f32(m, &w, batch, x);
        for (l = 0; st == HPDL_OK && l < m->n_layers; l++)
            st = hpdl_quant_calib_observe_f32(&cal[l], l ? w.act[l] : x, (int64_t)batch * m->widths[l]);
    }
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        double lo, hi;
        st = pct >= 100.0 ? hpdl_quant_calib_minmax(&cal[l], &lo, &hi) : hpdl_quant_calib_percentile(&cal[l], pct, &lo, &hi);
        if (st == HPDL_OK) st = hpdl_quant_params_from_range(lo, hi, 0, &q->x_params[l]);
    }
    for (l = 0; l < made; l++) hpdl_quant_calib_free(&cal[l]);
    hpdl_mlp_work_destroy_f32(&w);
    return st;
}

/* Layer l's int8 weights (per output channel, symmetric) and the float
   model's copy with them dequantized. */
static inline hpdl_status hpdl__quant_mlp_weights(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int l) {
    int n_in = m->widths[l], n_out = m->widths[l + 1], i, j;
    hpdl_status st;
    q->W[l] = (int8_t *)hpdl_alloc((size_t)n_in * n_out, 1);
    q->w_params[l] = (hpdl_quant_params *)hpdl_alloc((size_t)n_out, sizeof(hpdl_quant_params));
    if (!q->W[l] || !q->w_params[l]) return HPDL_ERR_NOMEM;
    st = hpdl_quant_params_per_channel_f32(m->W[l], n_in, n_out, n_out, 1, 1, q->w_params[l]);
    if (st == HPDL_OK) st = hpdl_quant_quantize_channels_f32(m->W[l], n_in, n_out, n_out, 1, q->w_params[l], q->W[l], n_out);
    for (i = 0; st == HPDL_OK && i < n_in; i++)
        for (j = 0; j < n_out; j++)
            q->dequant.W[l][(size_t)i * n_out + j] = (float)((double)q->w_params[l][j].scale * q->W[l][(size_t)i * n_out + j]);
    return st;
}

/* Layer l's int32 biases and requantization multipliers: to the next
   layer's input scale (hidden), or to the common logit scale (last). */
static inline hpdl_status hpdl__quant_mlp_integer(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int l) {
    int n_out = m->widths[l + 1], j, last = l == m->n_layers - 1;
    float s_x = q->x_params[l].scale, out_scale;
    hpdl_status st;
    q->bias32[l] = (int32_t *)hpdl_alloc((size_t)n_out, sizeof(int32_t));
    q->m0[l] = (int32_t *)hpdl_alloc((size_t)n_out, sizeof(int32_t));
    q->shift[l] = (int *)hpdl_alloc((size_t)n_out, sizeof(int));
    if (!q->bias32[l] || !q->m0[l] || !q->shift[l]) return HPDL_ERR_NOMEM;
    st = hpdl_quant_bias_f32(m->b[l], n_out, s_x, q->w_params[l], 1, q->bias32[l]);
    if (last) {
        float s_max = 0.0f;
        for (j = 0; j < n_out; j++) s_max = q->w_params[l][j].scale > s_max ? q->w_params[l][j].scale : s_max;
        out_scale = 2.0f * s_x * s_max;
        q->logit_scale = out_scale;
    } else {
        out_scale = q->x_params[l + 1].scale;
    }
    if (st == HPDL_OK) st = hpdl_quant_layer_multipliers(s_x, q->w_params[l], n_out, out_scale, q->m0[l], q->shift[l]);
    return st;
}

/* Builds *q from a trained model and n calibration rows X (n x widths[0]).
   pct: 100 for min/max activation ranges, else a percentile in [50, 100).
   Errors: bad arguments or n < 1 (HPDL_ERR_INVALID); a weight column or an
   activation range that is all zero, or a requantization multiplier that is
   not in (0, 1) (HPDL_ERR_INVALID); NaN in X or the weights (HPDL_ERR_NUMERIC). */
HPDL_API hpdl_status hpdl_quant_mlp_build(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int64_t n, const float *X,
                                          double pct) {
    hpdl_quant_mlp made;
    hpdl_status st;
    int l;
    if (!q || !hpdl__mlp_ok_f32(m) || n < 1 || !X || !(pct >= 50.0 && pct <= 100.0)) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n_layers = m->n_layers;
    made.act = m->act;
    made.integer = m->act == HPDL_ACT_RELU;
    memcpy(made.widths, m->widths, sizeof made.widths);
    st = hpdl_mlp_create_zero_f32(&made.dequant, m->n_layers + 1, m->widths, m->act);
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        memcpy(made.dequant.b[l], m->b[l], (size_t)m->widths[l + 1] * sizeof(float));
        st = hpdl__quant_mlp_weights(&made, m, l);
    }
    if (st == HPDL_OK) st = hpdl__quant_mlp_calibrate(&made, m, n, X, pct);
    for (l = 0; st == HPDL_OK && made.integer && l < m->n_layers; l++) st = hpdl__quant_mlp_integer(&made, m, l);
    if (st != HPDL_OK) {
        hpdl_quant_mlp_free(&made);
        return st;
    }
    *q = made;
    return HPDL_OK;
}

/* The requantization of layer l as hpdl_quant_gemm_requant_i8/_i32 take it
   (pointers into q): fused ReLU onto the next input's zero point when
   hidden, plain int32 logits when last. */
HPDL_API hpdl_quant_output hpdl_quant_mlp_layer_output(const hpdl_quant_mlp *q, int l) {
    hpdl_quant_output o;
    int last = l == q->n_layers - 1;
    o.bias = q->bias32[l];
    o.multiplier = q->m0[l];
    o.shift = q->shift[l];
    o.per_channel = 1;
    o.zero_point = last ? 0 : q->x_params[l + 1].zero_point;
    o.relu = !last;
    return o;
}

/* ---- running ----------------------------------------------------------------------- */

/* Buffers for batches of up to max_batch rows. */
typedef struct hpdl_quant_mlp_work {
    int max_batch, max_width, classes;
    float *f[2];     /* float activations, ping-pong */
    int8_t *q[2];    /* int8 activations, ping-pong */
    int32_t *logits; /* max_batch x classes (HPDL_QUANT_INTEGER) */
    float *out;      /* max_batch x classes: the real logits of the last forward */
} hpdl_quant_mlp_work;

HPDL_API void hpdl_quant_mlp_work_destroy(hpdl_quant_mlp_work *w) {
    int i;
    if (!w) return;
    for (i = 0; i < 2; i++) { HPDL_FREE(w->f[i]); HPDL_FREE(w->q[i]); }
    HPDL_FREE(w->logits);
    HPDL_FREE(w->out);
    memset(w, 0, sizeof *w);
}

HPDL_API hpdl_status hpdl_quant_mlp_work_create(hpdl_quant_mlp_work *w, const hpdl_quant_mlp *q, int max_batch) {
    hpdl_quant_mlp_work made;
    size_t big;
    int l, i;
    if (!w || !q || q->n_layers < 1 || max_batch < 1) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.max_batch = max_batch;
    made.classes = q->widths[q->n_layers];
    for (l = 0; l <= q->n_layers; l++) made.max_width = q->widths[l] > made.max_width ? q->widths[l] : made.max_width;
    big = (size_t)max_batch * made.max_width;
    for (i = 0; i < 2; i++) {
        made.f[i] = (float *)hpdl_alloc(big, sizeof(float));
        made.q[i] = (int8_t *)hpdl_alloc(big, 1);
    }
    made.logits = (int32_t *)hpdl_alloc((size_t)max_batch * made.classes, sizeof(int32_t));
    made.out = (float *)hpdl_alloc((size_t)max_batch * made.classes, sizeof(float));
    if (!made.f[0] || !made.f[1] || !made.q[0] || !made.q[1] || !made.logits || !made.out) {
        hpdl_quant_mlp_work_destroy(&made);
        return HPDL_ERR_NOMEM;
    }
    *w = made;
    return HPDL_OK;
}

/* x (n values) = dequantize(quantize(x)) at p, in place through q8. */
static inline hpdl_status hpdl__fake_quantize(float *x, int64_t n, hpdl_quant_params p, int8_t *q8) {
    hpdl_status st = hpdl_quant_quantize_f32(x, n, p, q8);
    return st == HPDL_OK ? hpdl_quant_dequantize_i8(q8, n, p, x) : st;
}

/* Float forward with the dequantized weights; with fake_act, each layer's
   input is quantized at its calibrated range first. Logits into w->out. */
static inline hpdl_status hpdl__quant_mlp_forward_float(const hpdl_quant_mlp *q, int fake_act, hpdl_quant_mlp_work *w,
                                                        int batch, const float *X) {
    const hpdl_mlp_f32 *m = &q->dequant;
    hpdl_status st = HPDL_OK;
    int l, r;
    memcpy(w->f[0], X, (size_t)batch * q->widths[0] * sizeof(float));
    for (l = 0; st == HPDL_OK && l < q->n_layers; l++) {
        int n_in = q->widths[l], n_out = q->widths[l + 1], last = l == q->n_layers - 1;
        float *in = w->f[l % 2], *out = last ? w->out : w->f[(l + 1) % 2];
        int64_t n = (int64_t)batch * n_out;
        if (fake_act) st = hpdl__fake_quantize(in, (int64_t)batch * n_in, q->x_params[l], w->q[0]);
        if (st == HPDL_OK)
            st = hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n_out, n_in, 1.0f, in, n_in, m->W[l], n_out, 0.0f,
                               out, n_out);
        for (r = 0; st == HPDL_OK && r < batch; r++)
            st = hpdl_vec_add_f32(n_out, out + (size_t)r * n_out, m->b[l], out + (size_t)r * n_out);
        if (st == HPDL_OK && !last)
            st = q->act == HPDL_ACT_RELU ? hpdl_relu_f32(n, out, out) : hpdl_sigmoid_f32(n, out, out);
    }
    return st;
}

/* Integer-only forward: int32 logits into w->logits, real ones into w->out. */
static inline hpdl_status hpdl__quant_mlp_forward_integer(const hpdl_quant_mlp *q, hpdl_quant_mlp_work *w, int batch,
                                                          const float *X) {
    hpdl_status st = hpdl_quant_quantize_f32(X, (int64_t)batch * q->widths[0], q->x_params[0], w->q[0]);
    int l, L = q->n_layers, classes = q->widths[L];
    int64_t i;
    for (l = 0; st == HPDL_OK && l < L; l++) {
        int n_in = q->widths[l], n_out = q->widths[l + 1];
        hpdl_quant_output o = hpdl_quant_mlp_layer_output(q, l);
        if (l < L - 1)
            st = hpdl_quant_gemm_requant_i8(batch, n_out, n_in, w->q[l % 2], n_in, q->x_params[l].zero_point, q->W[l],
                                            n_out, 0, &o, w->q[(l + 1) % 2], n_out);
        else
            st = hpdl_quant_gemm_requant_i32(batch, n_out, n_in, w->q[l % 2], n_in, q->x_params[l].zero_point, q->W[l],
                                             n_out, 0, &o, w->logits, classes);
    }
    for (i = 0; st == HPDL_OK && i < (int64_t)batch * classes; i++) w->out[i] = (float)(w->logits[i] * q->logit_scale);
    return st;
}

static inline int hpdl__quant_mlp_run_ok(const hpdl_quant_mlp *q, hpdl_quant_mode mode, const hpdl_quant_mlp_work *w,
                                         int batch, const float *X) {
    return q && q->n_layers >= 1 && q->W[0] && w && w->out && X && batch >= 1 && batch <= w->max_batch &&
           w->classes == q->widths[q->n_layers] && mode >= HPDL_QUANT_WEIGHTS && mode <= HPDL_QUANT_INTEGER;
}

/* Logits of a batch (batch x widths[0] floats) in the given mode: real
   logits in w->out; for HPDL_QUANT_INTEGER also the int32 ones in
   w->logits. NaN inputs: HPDL_ERR_NUMERIC in the quantized modes. */
HPDL_API hpdl_status hpdl_quant_mlp_forward(const hpdl_quant_mlp *q, hpdl_quant_mode mode, hpdl_quant_mlp_work *w,
                                            int batch, const float *X) {
    if (!hpdl__quant_mlp_run_ok(q, mode, w, batch, X)) return HPDL_ERR_INVALID;
    if (mode == HPDL_QUANT_INTEGER)
        return q->integer ? hpdl__quant_mlp_forward_integer(q, w, batch, X) : HPDL_ERR_UNSUPPORTED;
    return hpdl__quant_mlp_forward_float(q, mode == HPDL_QUANT_ACTIVATIONS, w, batch, X);
}

/* How many rows' largest int32 logit (first on ties) is at their label. */
static inline int64_t hpdl__argmax_hits_i32(int rows, int cols, const int32_t *logits, const int32_t *labels) {
    int64_t hits = 0;
    int r, c, best;
    for (r = 0; r < rows; r++) {
        const int32_t *x = logits + (size_t)r * cols;
        for (c = 1, best = 0; c < cols; c++) best = x[c] > x[best] ? c : best;
        hits += best == labels[r];
    }
    return hits;
}

/* Fraction of n rows classified as their label (largest logit, first on
   ties; the int32 logits in HPDL_QUANT_INTEGER, so no float rounding can
   merge two of them). */
HPDL_API hpdl_status hpdl_quant_mlp_accuracy(const hpdl_quant_mlp *q, hpdl_quant_mode mode, hpdl_quant_mlp_work *w,
                                             int64_t n, const float *X, const int32_t *labels, double *accuracy) {
    int64_t i0, hits = 0;
    hpdl_status st = HPDL_OK;
    if (n < 1 || !accuracy || !hpdl__quant_mlp_run_ok(q, mode, w, 1, X) || !hpdl__labels_ok(n, labels, w->classes))
        return HPDL_ERR_INVALID;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w->max_batch) {
        int batch = (int)(n - i0 < w->max_batch ? n - i0 : w->max_batch);
        st = hpdl_quant_mlp_forward(q, mode, w, batch, X + (size_t)i0 * q->widths[0]);
        if (st == HPDL_OK)
            hits += mode == HPDL_QUANT_INTEGER ? hpdl__argmax_hits_i32(batch, w->classes, w->logits, labels + i0)
                                               : hpdl__argmax_hits_f32(batch, w->classes, w->out, labels + i0);
    }
    if (st == HPDL_OK) *accuracy = (double)hits / (double)n;
    return st;
}

#endif /* HPDL_CPU_QUANT_MLP_H */
