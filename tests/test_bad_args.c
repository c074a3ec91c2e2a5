/* The bad-argument walk: every public CPU function of hpdl.h (the
   convolution family has its own tests) called with negative and zero
   sizes, NULL pointers, short leading dimensions, mismatched workspaces,
   out-of-range and non-finite values and sizes that overflow. Each call's
   outputs point into one poisoned buffer; the call must return the expected
   status and leave every byte of it as it was ("write nothing on a bad
   argument"). */
#include "hpdl.h"
#include "tests/hpdl_test.h"

#define POISON 0x5a

static double out_storage[2048]; /* 16 KiB, aligned for any output type */
static unsigned char *const out = (unsigned char *)out_storage;

#define OUT(T) ((T *)out_storage)

static void poison(void) { memset(out, POISON, sizeof out_storage); }

static int untouched(void) {
    size_t i;
    for (i = 0; i < sizeof out_storage; i++)
        if (out[i] != POISON) return 0;
    return 1;
}

static void expect_refused(const char *call, hpdl_status got, hpdl_status want, const char *file, int line) {
    char msg[512];
    if (got != want) {
        snprintf(msg, sizeof msg, "%s: %s, not %s", call, hpdl_status_string(got), hpdl_status_string(want));
        hpdl_test__fail(file, line, msg);
    } else if (!untouched()) {
        snprintf(msg, sizeof msg, "%s: refused, but wrote into its output", call);
        hpdl_test__fail(file, line, msg);
    }
}

/* The buffer is poisoned before the call's arguments are evaluated, so
   the outputs it writes through OUT(...) can be checked after. */
#define REFUSED(want, call)                                                    \
    do {                                                                       \
        hpdl_status s_;                                                        \
        poison();                                                              \
        s_ = (call);                                                           \
        expect_refused(#call, s_, want, __FILE__, __LINE__);                   \
    } while (0)
#define INVALID(call) REFUSED(HPDL_ERR_INVALID, call)

static float ones_f[64];
static double ones_d[64];
static int8_t ones_i8[64];

static void fill_inputs(void) {
    int i;
    for (i = 0; i < 64; i++) { ones_f[i] = 1.0f; ones_d[i] = 1.0; ones_i8[i] = 1; }
}

/* ---- kernels ------------------------------------------------------------------------ */

static void walk_vectors_and_activations(void) {
    hpdl_f16 h[4];
    memset(h, 0, sizeof h);
    INVALID(hpdl_stats_compute(ones_d, 0, OUT(hpdl_stats)));
    INVALID(hpdl_stats_compute(ones_d, -1, OUT(hpdl_stats)));
    INVALID(hpdl_stats_compute(NULL, 3, OUT(hpdl_stats)));
    INVALID(hpdl_vec_add_f32(-1, ones_f, ones_f, OUT(float)));
    INVALID(hpdl_vec_add_f32(4, NULL, ones_f, OUT(float)));
    INVALID(hpdl_vec_add_f64(4, ones_d, NULL, OUT(double)));
    INVALID(hpdl_vec_add_f16(4, h, h, NULL));
    INVALID(hpdl_vec_axpy_f32(-5, 2.0f, ones_f, OUT(float)));
    INVALID(hpdl_vec_axpy_bf16(4, 2.0f, NULL, OUT(hpdl_bf16)));
    INVALID(hpdl_relu_f32(-1, ones_f, OUT(float)));
    INVALID(hpdl_relu_f64(4, NULL, OUT(double)));
    INVALID(hpdl_sigmoid_f32(-1, ones_f, OUT(float)));
    INVALID(hpdl_relu_grad_f32(-1, ones_f, ones_f, OUT(float)));
    INVALID(hpdl_sigmoid_grad_f64(4, ones_d, NULL, OUT(double)));
}

static void walk_gemm_and_matpow(void) {
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, -1, 2, 2, 1, ones_f, 2, ones_f, 2, 0, OUT(float), 2));
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, -1, 2, 1, ones_f, 2, ones_f, 2, 0, OUT(float), 2));
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 2, -1, 1, ones_f, 2, ones_f, 2, 0, OUT(float), 2));
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 3, 4, 1, ones_f, 3, ones_f, 3, 0, OUT(float), 3)); /* lda < K */
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 3, 4, 1, ones_f, 4, ones_f, 2, 0, OUT(float), 3)); /* ldb < N */
    INVALID(hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 3, 4, 1, ones_f, 4, ones_f, 3, 0, OUT(float), 2)); /* ldc < N */
    INVALID(hpdl_gemm_f32(HPDL_TRANS, HPDL_NO_TRANS, 2, 3, 4, 1, ones_f, 1, ones_f, 3, 0, OUT(float), 3));    /* A^T: lda < M */
    INVALID(hpdl_gemm_f32((hpdl_transpose)2, HPDL_NO_TRANS, 2, 2, 2, 1, ones_f, 2, ones_f, 2, 0, OUT(float), 2));
    INVALID(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 2, 2, 1, NULL, 2, ones_d, 2, 0, OUT(double), 2));
    INVALID(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_NO_TRANS, 2, 2, 2, 1, ones_d, 2, ones_d, 2, 0, NULL, 2));
    INVALID(hpdl_gemm_f64(HPDL_NO_TRANS, HPDL_NO_TRANS, INT_MAX, INT_MAX, 2, 1, ones_d, 2, ones_d, 2, 0, OUT(double), 2));
    INVALID(hpdl_matpow_f32(-1, 2, ones_f, 2, OUT(float), 2));
    INVALID(hpdl_matpow_f32(2, -1, ones_f, 2, OUT(float), 2));
    INVALID(hpdl_matpow_f32(3, 2, ones_f, 2, OUT(float), 3)); /* lda < n */
    INVALID(hpdl_matpow_f64(3, 2, ones_d, 3, OUT(double), 2)); /* ldo < n */
    INVALID(hpdl_matpow_f64(3, 2, NULL, 3, OUT(double), 3));
}

static void walk_softmax_xent(void) {
    int32_t labels[4] = {0, 1, 2, 0}, bad_labels[4] = {0, 3, 1, 0}, negative[4] = {0, -1, 1, 0};
    INVALID(hpdl_softmax_xent_f32(-1, 3, ones_f, 3, labels, OUT(float), 3, OUT(double) + 100));
    INVALID(hpdl_softmax_xent_f32(4, 0, ones_f, 3, labels, OUT(float), 3, OUT(double) + 100));
    INVALID(hpdl_softmax_xent_f32(4, 3, ones_f, 2, labels, OUT(float), 3, OUT(double) + 100)); /* ld < cols */
    INVALID(hpdl_softmax_xent_f32(4, 3, ones_f, 3, labels, OUT(float), 2, OUT(double) + 100)); /* ldg < cols */
    INVALID(hpdl_softmax_xent_f32(4, 3, ones_f, 3, bad_labels, OUT(float), 3, OUT(double) + 100));
    INVALID(hpdl_softmax_xent_f64(4, 3, ones_d, 3, negative, OUT(double), 3, OUT(double) + 100));
    INVALID(hpdl_softmax_xent_f64(4, 3, ones_d, 3, NULL, OUT(double), 3, OUT(double) + 100));
    INVALID(hpdl_softmax_xent_f64(4, 3, NULL, 3, labels, OUT(double), 3, OUT(double) + 100));
}

/* ---- MLP ---------------------------------------------------------------------------------- */

static void walk_mlp(void) {
    static const int widths[3] = {4, 3, 2}, other[3] = {4, 5, 2}, zero[3] = {4, 0, 2};
    int32_t labels[2] = {0, 1}, bad_labels[2] = {0, 2};
    hpdl_mlp_f32 m, grad, wrong;
    hpdl_mlp_work_f32 w, w_wrong;
    int n;
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&wrong, 3, other, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, 2));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w_wrong, &wrong, 2));
    INVALID(hpdl_mlp_parse_widths("5,", 4, 2, OUT(int), OUT(int) + 100));
    INVALID(hpdl_mlp_parse_widths("5", 0, 2, OUT(int), OUT(int) + 100));
    INVALID(hpdl_mlp_parse_widths("5", 4, -2, OUT(int), OUT(int) + 100));
    n = 1;
    INVALID(hpdl_mlp_create_f32(OUT(hpdl_mlp_f32), n, widths, HPDL_ACT_RELU, 1));
    INVALID(hpdl_mlp_create_f32(OUT(hpdl_mlp_f32), HPDL_MLP_MAX_LAYERS + 2, widths, HPDL_ACT_RELU, 1));
    INVALID(hpdl_mlp_create_f32(OUT(hpdl_mlp_f32), 3, zero, HPDL_ACT_RELU, 1));
    INVALID(hpdl_mlp_create_f64(OUT(hpdl_mlp_f64), 3, widths, (hpdl_activation)7, 1));
    INVALID(hpdl_mlp_create_zero_f16(OUT(hpdl_mlp_f16), 3, NULL, HPDL_ACT_RELU));
    INVALID(hpdl_mlp_work_create_f32(OUT(hpdl_mlp_work_f32), &m, 0));
    INVALID(hpdl_mlp_work_create_f32(OUT(hpdl_mlp_work_f32), NULL, 2));
    INVALID(hpdl_mlp_copy_f32(&wrong, &m));
    INVALID(hpdl_mlp_forward_f32(&m, &w_wrong, 2, ones_f));                  /* workspace of another shape */
    INVALID(hpdl_mlp_forward_f32(&m, &w, 3, ones_f));                        /* batch > max_batch */
    INVALID(hpdl_mlp_forward_f32(&m, &w, 0, ones_f));
    INVALID(hpdl_mlp_backward_f32(&m, &w, 2, ones_f, bad_labels, &grad, OUT(double)));
    INVALID(hpdl_mlp_backward_f32(&m, &w, 2, ones_f, labels, &wrong, OUT(double)));
    INVALID(hpdl_mlp_train_step_f32(&m, &w, &grad, 2, ones_f, labels, -1.0f, 0.0f, OUT(double)));
    INVALID(hpdl_mlp_train_step_f32(&m, &w, &grad, 2, ones_f, labels, 0.1f, (float)NAN, OUT(double)));
    INVALID(hpdl_mlp_train_step_f32(&m, &w, &grad, 2, ones_f, labels, (float)INFINITY, 0.0f, OUT(double)));
    INVALID(hpdl_mlp_sgd_f32(&m, &wrong, 0.1f, 0.0f));
    INVALID(hpdl_mlp_accuracy_f32(&m, &w, 0, ones_f, labels, OUT(double)));
    INVALID(hpdl_mlp_accuracy_f32(&m, &w, 2, ones_f, bad_labels, OUT(double)));
    INVALID(hpdl_mlp_accuracy_f32(&m, &w_wrong, 2, ones_f, labels, OUT(double)));
    hpdl_mlp_work_destroy_f32(&w_wrong);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&wrong);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&m);
}

/* ---- data --------------------------------------------------------------------------------- */

static void walk_data(void) {
    hpdl_dataset empty;
    memset(&empty, 0, sizeof empty);
    INVALID(hpdl_idx_load(NULL, "x", OUT(hpdl_dataset)));
    INVALID(hpdl_idx_load("x", NULL, OUT(hpdl_dataset)));
    REFUSED(HPDL_ERR_IO, hpdl_idx_load("no/such/images", "no/such/labels", OUT(hpdl_dataset)));
    REFUSED(HPDL_ERR_IO, hpdl_idx_load(".", ".", OUT(hpdl_dataset)));
    INVALID(hpdl_idx_load_dir(NULL, 1, OUT(hpdl_dataset)));
    REFUSED(HPDL_ERR_IO, hpdl_idx_load_dir("no/such/dir", 1, OUT(hpdl_dataset)));
    INVALID(hpdl_dataset_shuffle(&empty, 1));
    INVALID(hpdl_dataset_normalize(&empty, 0.5f, 0.5f));
    INVALID(hpdl_dataset_normalize(NULL, 0.5f, 0.5f));
    INVALID(hpdl_dataset_feature_stats(&empty, OUT(float), OUT(float)));
    INVALID(hpdl_dataset_standardize(&empty, OUT(float), OUT(float), 0.1f));
}

/* ---- layers, networks and performance models ------------------------------------------- */

static void walk_layers_and_models(void) {
    hpdl_shape in = hpdl_shape_make(3, 8, 8), flat = hpdl_shape_make(3, 8, 1), two[2];
    hpdl_layer fc;
    hpdl_device_model dev;
    double costs[3] = {1, -1, 2};
    int map[4] = {0, 2, 1, 1};
    two[0] = in;
    two[1] = flat;
    HPDL_CHECK(hpdl_layer_fc(&fc, "fc", in, 10, 1));
    HPDL_CHECK(hpdl_paleo_device(HPDL_DEVICE_V100, &dev));
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 0, 1, 0, 1, 1));       /* k = 0 */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 3, 0, 0, 1, 1));       /* stride 0 */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 3, 1, -1, 1, 1));      /* pad < 0 */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 3, 1, 1, 2, 1));       /* groups do not divide 3 */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 11, 1, 1, 1, 1));      /* window > padded input */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", in, 4, 3, 1, INT_MAX, 1, 1)); /* n + 2p overflows */
    INVALID(hpdl_layer_conv2d(OUT(hpdl_layer), "c", hpdl_shape_make(0, 8, 8), 4, 3, 1, 1, 1, 1));
    INVALID(hpdl_layer_pool(OUT(hpdl_layer), "p", HPDL_LAYER_FC, in, 2, 2, 0, 0));
    INVALID(hpdl_layer_pool(OUT(hpdl_layer), "p", HPDL_LAYER_MAXPOOL, in, 2, 2, 2, 0)); /* pad > k/2 */
    INVALID(hpdl_layer_fc(OUT(hpdl_layer), "f", in, 0, 1));
    INVALID(hpdl_layer_elementwise(OUT(hpdl_layer), "e", HPDL_LAYER_CONV2D, in));
    INVALID(hpdl_layer_concat(OUT(hpdl_layer), "cat", 0, two));
    INVALID(hpdl_layer_concat(OUT(hpdl_layer), "cat", 2, two)); /* h/w differ */
    INVALID(hpdl_layer_add(OUT(hpdl_layer), "add", in, flat));
    INVALID(hpdl_paleo_device_custom("d", -1, 1, 1, OUT(hpdl_device_model)));
    INVALID(hpdl_paleo_device_custom("d", 1, 1, NAN, OUT(hpdl_device_model)));
    INVALID(hpdl_paleo_device((hpdl_device_id)999, OUT(hpdl_device_model)));
    INVALID(hpdl_paleo_estimate(-1, 1, 1, 1, 1, OUT(hpdl_paleo_time)));
    INVALID(hpdl_paleo_estimate(1, 1, 0, 1, 1, OUT(hpdl_paleo_time)));
    INVALID(hpdl_paleo_estimate(1, 1, 1, 1, INFINITY, OUT(hpdl_paleo_time)));
    INVALID(hpdl_paleo_layer_time(&fc, 0, &dev, HPDL_PREC_F32, 1, OUT(hpdl_paleo_time)));
    INVALID(hpdl_paleo_layer_time(NULL, 1, &dev, HPDL_PREC_F32, 1, OUT(hpdl_paleo_time)));
    INVALID(hpdl_paleo_ppp_from_measured(1, 0, 1, OUT(double)));
    INVALID(hpdl_paleo_ppp_from_measured(NAN, 1, 1, OUT(double)));
    INVALID(hpdl_roofline_attainable(-1, 1, 1, OUT(double)));
    INVALID(hpdl_roofline_ridge(1, 0, OUT(double)));
    INVALID(hpdl_roofline_combined(1, 1, -1, 1, OUT(double)));
    INVALID(hpdl_cost_allreduce_ring(1e6, 0, 1e-6, 1e-9, OUT(double)));
    INVALID(hpdl_cost_allreduce_tree(-1, 4, 1e-6, 1e-9, OUT(double)));
    INVALID(hpdl_cost_allreduce_one_to_all(1e6, 4, NAN, 1e-9, OUT(double)));
    INVALID(hpdl_cost_allreduce_utilisation(1e6, 4, 0, 1e9, OUT(hpdl_bw_report)));
    INVALID(hpdl_place_even(3, 4, OUT(int)));  /* more devices than layers */
    INVALID(hpdl_place_even(3, 0, OUT(int)));
    INVALID(hpdl_place_even(-1, 1, OUT(int)));
    INVALID(hpdl_place_balanced(3, costs, 2, OUT(int))); /* a negative cost */
    INVALID(hpdl_place_balanced(3, NULL, 2, OUT(int)));
    INVALID(hpdl_place_from_map(4, map, 3, OUT(int)));   /* goes back from device 2 to 1 */
}

/* ---- int8 quantization ------------------------------------------------------------------------ */

static void walk_quant(void) {
    hpdl_quant_params p, bad_p;
    hpdl_quant_output o;
    hpdl_quant_calib cal;
    float with_nan[3] = {1.0f, NAN, 2.0f}, with_inf[2] = {1.0f, INFINITY};
    int32_t m0 = 1 << 30;
    int shift = 0;
    p.scale = 0.1f;
    p.zero_point = 0;
    bad_p.scale = 0.0f;
    bad_p.zero_point = 0;
    o.bias = NULL; o.multiplier = &m0; o.shift = &shift; o.per_channel = 0; o.zero_point = 0; o.relu = 0;
    INVALID(hpdl_quant_params_from_range(2, 1, 0, OUT(hpdl_quant_params)));
    INVALID(hpdl_quant_params_from_range(NAN, 1, 0, OUT(hpdl_quant_params)));
    INVALID(hpdl_quant_params_from_range(0, INFINITY, 1, OUT(hpdl_quant_params)));
    INVALID(hpdl_quant_params_from_range(0, 0, 0, OUT(hpdl_quant_params)));
    INVALID(hpdl_quant_params_f32(ones_f, 0, 0, OUT(hpdl_quant_params)));
    REFUSED(HPDL_ERR_NUMERIC, hpdl_quant_params_f32(with_nan, 3, 0, OUT(hpdl_quant_params)));
    INVALID(hpdl_quant_params_per_channel_f32(ones_f, 2, 3, 3, 2, 1, OUT(hpdl_quant_params)));  /* axis 2 */
    INVALID(hpdl_quant_params_per_channel_f32(ones_f, 2, 3, 2, 0, 1, OUT(hpdl_quant_params)));  /* ld < cols */
    INVALID(hpdl_quant_quantize_f32(ones_f, -1, p, OUT(int8_t)));
    INVALID(hpdl_quant_quantize_f32(ones_f, 3, bad_p, OUT(int8_t)));
    REFUSED(HPDL_ERR_NUMERIC, hpdl_quant_quantize_f32(with_nan, 3, p, OUT(int8_t)));
    INVALID(hpdl_quant_dequantize_i8(ones_i8, 3, bad_p, OUT(float)));
    INVALID(hpdl_quant_quantize_channels_f32(ones_f, 2, 3, 3, 0, &p, OUT(int8_t), 2)); /* ldq < cols */
    INVALID(hpdl_quant_multiplier(0.0, OUT(int32_t), OUT(int) + 10));
    INVALID(hpdl_quant_multiplier(1.0, OUT(int32_t), OUT(int) + 10));
    INVALID(hpdl_quant_multiplier(NAN, OUT(int32_t), OUT(int) + 10));
    INVALID(hpdl_quant_multiplier(1e-20, OUT(int32_t), OUT(int) + 10)); /* shift > 31 */
    INVALID(hpdl_quant_requantize(5, 1 << 29, 3, 0, OUT(int8_t)));      /* M0 < 2^30 */
    INVALID(hpdl_quant_requantize(5, 1 << 30, 32, 0, OUT(int8_t)));
    INVALID(hpdl_quant_requantize(5, 1 << 30, 3, 128, OUT(int8_t)));
    INVALID(hpdl_quant_layer_multipliers(0.1f, &bad_p, 1, 0.1f, OUT(int32_t), OUT(int) + 10));
    INVALID(hpdl_quant_layer_multipliers(0.1f, &p, 1, 0.0f, OUT(int32_t), OUT(int) + 10));
    REFUSED(HPDL_ERR_NUMERIC, hpdl_quant_bias_f32(with_nan, 3, 0.1f, &p, 0, OUT(int32_t)));
    INVALID(hpdl_quant_bias_f32(ones_f, 3, -0.1f, &p, 0, OUT(int32_t)));
    INVALID(hpdl_quant_gemm_i8(2, 2, HPDL_QUANT_MAX_K + 1, ones_i8, HPDL_QUANT_MAX_K + 1, 0, ones_i8, 2, 0, OUT(int32_t), 2));
    INVALID(hpdl_quant_gemm_i8(2, 2, 2, ones_i8, 1, 0, ones_i8, 2, 0, OUT(int32_t), 2)); /* lda < K */
    INVALID(hpdl_quant_gemm_i8(2, 2, 2, ones_i8, 2, 200, ones_i8, 2, 0, OUT(int32_t), 2)); /* zero point */
    INVALID(hpdl_quant_gemm_i8(-2, 2, 2, ones_i8, 2, 0, ones_i8, 2, 0, OUT(int32_t), 2));
    INVALID(hpdl_quant_gemm_requant_i8(2, 2, 2, ones_i8, 2, 0, ones_i8, 2, 0, NULL, OUT(int8_t), 2));
    shift = 40;
    INVALID(hpdl_quant_gemm_requant_i8(2, 2, 2, ones_i8, 2, 0, ones_i8, 2, 0, &o, OUT(int8_t), 2));
    INVALID(hpdl_quant_gemm_requant_i32(2, 2, 2, ones_i8, 2, 0, ones_i8, 2, 0, &o, OUT(int32_t), 2));
    INVALID(hpdl_quant_calib_init(OUT(hpdl_quant_calib), 3));
    INVALID(hpdl_quant_calib_init(OUT(hpdl_quant_calib), 0));
    HPDL_CHECK(hpdl_quant_calib_init(&cal, 8));
    REFUSED(HPDL_ERR_NUMERIC, hpdl_quant_calib_observe_f32(&cal, with_inf, 2));
    INVALID(hpdl_quant_calib_minmax(&cal, OUT(double), OUT(double) + 1)); /* nothing observed */
    INVALID(hpdl_quant_calib_percentile(&cal, 99.0, OUT(double), OUT(double) + 1));
    HPDL_CHECK(hpdl_quant_calib_observe_f32(&cal, ones_f, 4));
    INVALID(hpdl_quant_calib_percentile(&cal, 40.0, OUT(double), OUT(double) + 1));
    hpdl_quant_calib_free(&cal);
    INVALID(hpdl_quant_hist_init(OUT(hpdl_quant_hist), 0, 0, 1));
    INVALID(hpdl_quant_hist_init(OUT(hpdl_quant_hist), 4, 1, 1));
    INVALID(hpdl_quant_hist_init(OUT(hpdl_quant_hist), 4, -INFINITY, 1));
}

/* The quantized MLP: bad builds, and workspaces and layers that do not belong. */
static void walk_quant_mlp(void) {
    static const int small[3] = {4, 6, 3}, big[3] = {40, 30, 3};
    float X[8 * 40];
    hpdl_mlp_f32 m_small, m_big;
    hpdl_quant_mlp q_small, q_big;
    hpdl_quant_mlp_work w_small;
    int32_t labels[2] = {0, 1};
    int i;
    for (i = 0; i < 8 * 40; i++) X[i] = (float)(i % 9) - 4.0f;
    HPDL_CHECK(hpdl_mlp_create_f32(&m_small, 3, small, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_create_f32(&m_big, 3, big, HPDL_ACT_RELU, 1));
    INVALID(hpdl_quant_mlp_build(OUT(hpdl_quant_mlp), &m_small, 0, X, 100.0));
    INVALID(hpdl_quant_mlp_build(OUT(hpdl_quant_mlp), &m_small, 8, X, 30.0));
    INVALID(hpdl_quant_mlp_build(OUT(hpdl_quant_mlp), NULL, 8, X, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_build(&q_small, &m_small, 8, X, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_build(&q_big, &m_big, 8, X, 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w_small, &q_small, 2));
    INVALID(hpdl_quant_mlp_work_create(OUT(hpdl_quant_mlp_work), &q_small, 0));
    INVALID(hpdl_quant_mlp_layer_output(&q_small, 2, OUT(hpdl_quant_output)));
    INVALID(hpdl_quant_mlp_layer_output(&q_small, -1, OUT(hpdl_quant_output)));
    INVALID(hpdl_quant_mlp_forward(&q_big, HPDL_QUANT_INTEGER, &w_small, 2, X));  /* workspace of another shape */
    INVALID(hpdl_quant_mlp_forward(&q_small, HPDL_QUANT_INTEGER, &w_small, 3, X)); /* batch > max_batch */
    INVALID(hpdl_quant_mlp_accuracy(&q_big, HPDL_QUANT_WEIGHTS, &w_small, 2, X, labels, OUT(double)));
    hpdl_quant_mlp_work_destroy(&w_small);
    hpdl_quant_mlp_free(&q_big);
    hpdl_quant_mlp_free(&q_small);
    hpdl_mlp_destroy_f32(&m_big);
    hpdl_mlp_destroy_f32(&m_small);
}

/* ---- outside input: flags and file names ---------------------------------------------------- */

static void walk_flags_and_files(void) {
    INVALID(hpdl_arg_int("--n", "12x", 0, 100, OUT(int)));
    INVALID(hpdl_arg_int("--n", NULL, 0, 100, OUT(int)));
    INVALID(hpdl_arg_i64("--seed", "", 0, 100, OUT(int64_t)));
    INVALID(hpdl_arg_f64("--lr", "inf", 0, 100, OUT(double)));
    INVALID(hpdl_arg_int_list("--batch", "32,", 1, 100, OUT(int), 4, OUT(int) + 4));
    INVALID(hpdl_arg_int_list("--batch", "1,2,3", 1, 100, OUT(int), 2, OUT(int) + 4));
    INVALID(hpdl_csv_create(OUT(hpdl_csv_file), ".", "../x", "a"));
    INVALID(hpdl_csv_create(OUT(hpdl_csv_file), ".", NULL, "a"));
    INVALID(hpdl_csv_commit(NULL));
}

/* The CNN checkpoint's layout: a refusal fills no entry and writes no name. */
static void walk_cnn_checkpoint(void) {
    hpdl_cnn net;
    int64_t steps = 0;
    HPDL_CHECK(hpdl_cnn_small(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC));
    INVALID(hpdl_cnn_ckpt_model("small", &net, "nhwc", "f32", OUT(char), 8));
    INVALID(hpdl_cnn_ckpt_model(NULL, &net, "nhwc", "f32", OUT(char), 64));
    INVALID(hpdl_cnn_ckpt_model("small", NULL, "nhwc", "f32", OUT(char), 64));
    INVALID(hpdl_cnn_ckpt_model("small", &net, "nhwc", NULL, OUT(char), 64));
    poison();
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 1, HPDL_DTYPE_F32, out, out, out, NULL, &steps, OUT(hpdl_ckpt_entry)) == 0);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 0, HPDL_DTYPE_F16, out, out, out, NULL, &steps, OUT(hpdl_ckpt_entry)) == 0);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 0, HPDL_DTYPE_F32, NULL, out, out, NULL, &steps, OUT(hpdl_ckpt_entry)) == 0);
    HPDL_EXPECT(untouched());
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(walk_vectors_and_activations), HPDL_TEST(walk_gemm_and_matpow), HPDL_TEST(walk_softmax_xent),
        HPDL_TEST(walk_mlp),  HPDL_TEST(walk_data),  HPDL_TEST(walk_layers_and_models), HPDL_TEST(walk_quant),
        HPDL_TEST(walk_quant_mlp), HPDL_TEST(walk_flags_and_files), HPDL_TEST(walk_cnn_checkpoint),
    };
    fill_inputs();
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
