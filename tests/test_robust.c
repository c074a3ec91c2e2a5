/* Bad input never crashes, corrupts or lies: regression tests for defects
   found by fuzzing and probing the CPU library (hpdl.h). Each test names
   what used to go wrong. */
#define HPDL_IDX_MAX_ITEMS 1000 /* small, to test the limit */
#include "hpdl.h"
#include "tests/hpdl_test.h"

/* ---- workspaces must match the model's shape ------------------------------------------ */

/* A quantized model of widths in-h-out, trained for a few steps on random
   data so its weights and ranges are not degenerate. */
static void make_quant_mlp(hpdl_quant_mlp *q, int in, int hidden, int out) {
    int widths[3];
    hpdl_mlp_f32 m;
    float *X = (float *)hpdl_alloc((size_t)64 * in, sizeof(float));
    hpdl_rng r;
    int i;
    widths[0] = in; widths[1] = hidden; widths[2] = out;
    if (!X) exit(EXIT_FAILURE);
    hpdl_rng_seed(&r, 11);
    for (i = 0; i < 64 * in; i++) X[i] = (float)hpdl_rng_normal(&r);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_quant_mlp_build(q, &m, 64, X, 100.0));
    hpdl_mlp_destroy_f32(&m);
    HPDL_FREE(X);
}

/* Used to write 6400 bytes past a buffer: only the class count was checked. */
static void quant_mlp_refuses_a_workspace_of_another_shape(void) {
    hpdl_quant_mlp small, big;
    hpdl_quant_mlp_work w;
    float *X = (float *)hpdl_alloc(4 * 200, sizeof(float));
    double acc = -1;
    int32_t labels[4] = {0, 1, 2, 0};
    int i;
    if (!X) exit(EXIT_FAILURE);
    for (i = 0; i < 4 * 200; i++) X[i] = (float)(i % 7) - 3.0f;
    make_quant_mlp(&small, 4, 8, 3);
    make_quant_mlp(&big, 200, 100, 3);
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &small, 4));
    HPDL_EXPECT(hpdl_quant_mlp_forward(&big, HPDL_QUANT_WEIGHTS, &w, 4, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&big, HPDL_QUANT_ACTIVATIONS, &w, 4, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&big, HPDL_QUANT_INTEGER, &w, 4, X) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_accuracy(&big, HPDL_QUANT_INTEGER, &w, 4, X, labels, &acc) == HPDL_ERR_INVALID);
    HPDL_EXPECT(acc == -1);
    HPDL_EXPECT(hpdl_quant_mlp_forward(&small, HPDL_QUANT_INTEGER, &w, 4, X) == HPDL_OK);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&small);
    hpdl_quant_mlp_free(&big);
    HPDL_FREE(X);
}

/* ---- divergence is reported, and the step is undone ----------------------------------- */

enum { IN = 6, HID = 5, OUT = 3, ROWS = 8 };

static void make_mlp_problem(hpdl_mlp_f32 *m, hpdl_mlp_f32 *grad, hpdl_mlp_work_f32 *w, float *X, int32_t *y) {
    static const int widths[3] = {IN, HID, OUT};
    hpdl_rng r;
    int i;
    hpdl_rng_seed(&r, 5);
    for (i = 0; i < ROWS * IN; i++) X[i] = (float)hpdl_rng_normal(&r);
    for (i = 0; i < ROWS; i++) y[i] = i % OUT;
    HPDL_CHECK(hpdl_mlp_create_f32(m, 3, widths, HPDL_ACT_RELU, 9));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(w, m, ROWS));
}

static int same_model(const hpdl_mlp_f32 *a, const hpdl_mlp_f32 *b) {
    int l;
    for (l = 0; l < a->n_layers; l++) {
        size_t nw = (size_t)a->widths[l] * a->widths[l + 1];
        if (memcmp(a->W[l], b->W[l], nw * sizeof(float)) || memcmp(a->b[l], b->b[l], a->widths[l + 1] * sizeof(float)))
            return 0;
    }
    return 1;
}

/* A NaN pixel used to train "successfully": status OK, loss NaN, weights NaN. */
static void train_step_refuses_a_nan_input(void) {
    hpdl_mlp_f32 m, grad, before;
    hpdl_mlp_work_f32 w;
    float X[ROWS * IN];
    int32_t y[ROWS];
    double loss = 0;
    make_mlp_problem(&m, &grad, &w, X, y);
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&before, 3, m.widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_copy_f32(&before, &m));
    X[3] = (float)NAN;
    HPDL_EXPECT(hpdl_mlp_train_step_f32(&m, &w, &grad, ROWS, X, y, 0.1f, 0.0f, &loss) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(same_model(&m, &before));
    X[3] = 0.5f;
    HPDL_EXPECT(hpdl_mlp_train_step_f32(&m, &w, &grad, ROWS, X, y, 0.1f, 0.0f, &loss) == HPDL_OK);
    HPDL_EXPECT(!same_model(&m, &before) && loss == loss);
    hpdl_mlp_destroy_f32(&before);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&m);
}

/* lr = 1e30 used to train on with NaN losses. Now some step says
   HPDL_ERR_NUMERIC, and the weights it leaves are the finite ones from
   before that step. */
static void train_step_stops_when_it_diverges(void) {
    hpdl_mlp_f32 m, grad, before;
    hpdl_mlp_work_f32 w;
    float X[ROWS * IN];
    int32_t y[ROWS];
    double loss = 0;
    hpdl_status st = HPDL_OK;
    int step, l;
    size_t i;
    make_mlp_problem(&m, &grad, &w, X, y);
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&before, 3, m.widths, HPDL_ACT_RELU));
    for (step = 0; step < 10 && st == HPDL_OK; step++) {
        HPDL_CHECK(hpdl_mlp_copy_f32(&before, &m));
        st = hpdl_mlp_train_step_f32(&m, &w, &grad, ROWS, X, y, 1e30f, 0.0f, &loss);
    }
    HPDL_EXPECT(st == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(same_model(&m, &before));
    for (l = 0; l < m.n_layers; l++)
        for (i = 0; i < (size_t)m.widths[l] * m.widths[l + 1]; i++) HPDL_EXPECT(isfinite(m.W[l][i]));
    hpdl_mlp_destroy_f32(&before);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&grad);
    hpdl_mlp_destroy_f32(&m);
}

/* An update that would overflow (here f16's 65504) is refused whole. */
static void sgd_refuses_an_update_that_overflows(void) {
    static const int widths[2] = {2, 2};
    hpdl_mlp_f16 m, grad;
    hpdl_f16 keep[4];
    int i;
    HPDL_CHECK(hpdl_mlp_create_f16(&m, 2, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_create_zero_f16(&grad, 2, widths, HPDL_ACT_RELU));
    for (i = 0; i < 4; i++) grad.W[0][i] = hpdl_f16_from_f32(1.0f);
    grad.W[0][3] = hpdl_f16_from_f32(-60000.0f);
    memcpy(keep, m.W[0], sizeof keep);
    HPDL_EXPECT(hpdl_mlp_sgd_f16(&m, &grad, 10.0f, 0.0f) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(memcmp(keep, m.W[0], sizeof keep) == 0);
    HPDL_EXPECT(hpdl_mlp_sgd_f16(&m, &grad, 0.5f, 0.0f) == HPDL_OK);
    HPDL_EXPECT(memcmp(keep, m.W[0], sizeof keep) != 0);
    hpdl_mlp_destroy_f16(&grad);
    hpdl_mlp_destroy_f16(&m);
}

/* ---- edge values have defined results --------------------------------------------------- */

static void quant_edge_values(void) {
    hpdl_quant_params p;
    hpdl_quant_hist h;
    float x[3] = {0.0f, 1e-45f, 3.0f};
    p.scale = -1.0f;
    p.zero_point = 99;
    /* a zero range: the scale would be 0 and 0/0 converted to int */
    HPDL_EXPECT(hpdl_quant_params_from_range(0, 0, 0, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(0, 0, 1, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(-1e-300, 1e-300, 0, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(p.scale == -1.0f && p.zero_point == 99);
    /* a range so narrow that bins / (hi - lo) is infinite */
    HPDL_EXPECT(hpdl_quant_hist_init(&h, 10, 0.0, 5e-324) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_hist_add_f32(&h, x, 3) == HPDL_OK);
    HPDL_EXPECT(h.total == 3 && h.counts[0] + h.counts[9] == 3);
    hpdl_quant_hist_free(&h);
    /* shifts of 32 and more, and of less than 0 */
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(5, 0) == 5);
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(-5, 1) == -3); /* -2.5: away from zero */
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(INT32_MAX, 31) == 1);
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(INT32_MAX, 32) == 0);
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(INT32_MIN, 40) == 0);
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(7, -1) == 7);
}

/* Layer 16 of a 2-layer model used to read past q's arrays. */
static void quant_layer_output_out_of_range(void) {
    hpdl_quant_mlp q;
    hpdl_quant_output o;
    make_quant_mlp(&q, 4, 8, 3);
    memset(&o, 0x5a, sizeof o);
    HPDL_EXPECT(hpdl_quant_mlp_layer_output(&q, 16, &o) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_layer_output(&q, -1, &o) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_layer_output(&q, 2, &o) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_mlp_layer_output(NULL, 0, &o) == HPDL_ERR_INVALID);
    HPDL_EXPECT(o.per_channel != 1);
    HPDL_EXPECT(hpdl_quant_mlp_layer_output(&q, 1, &o) == HPDL_OK);
    HPDL_EXPECT(o.per_channel == 1 && o.relu == 0 && o.multiplier == q.m0[1]);
    hpdl_quant_mlp_free(&q);
}

/* ceil_mode with a huge stride used to overflow int. */
static void pool_with_a_huge_stride(void) {
    hpdl_layer l;
    hpdl_status st;
    memset(&l, 0x5a, sizeof l);
    st = hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, hpdl_shape_make(3, 8, 8), 2, INT32_MAX, 0, 1);
    HPDL_EXPECT(st == HPDL_OK || st == HPDL_ERR_INVALID);
    if (st == HPDL_OK) HPDL_EXPECT(l.out.h == 1 && l.out.w == 1);
}

/* ---- parsers of outside input are strict ------------------------------------------------ */

static void widths_lists_are_strict(void) {
    static const char *bad[] = {"5,", " 5", "+5", "5,,6", ",5", "5 ", "5,-6", "", "0x10", "99999999999999999999"};
    int w[HPDL_MLP_MAX_LAYERS + 1], n = -1, i;
    w[0] = -5;
    for (i = 0; i < HPDL_COUNT(bad); i++) {
        hpdl_status st = hpdl_mlp_parse_widths(bad[i], 784, 10, w, &n);
        HPDL_EXPECT(st == HPDL_ERR_INVALID);
        if (st != HPDL_ERR_INVALID) fprintf(stderr, "    accepted '%s'\n", bad[i]);
    }
    HPDL_EXPECT(n == -1 && w[0] == -5);
    HPDL_EXPECT(hpdl_mlp_parse_widths("5,6", 784, 10, w, &n) == HPDL_OK && n == 4 && w[1] == 5 && w[2] == 6);
}

/* --seed abc and --hidden 16abc used to read as 0 and 16. */
static void flag_numbers_are_strict(void) {
    static const char *bad_int[] = {"abc", "16abc", "", " 16", "16 ", "1e3", "99999999999999999999", "0x10"};
    static const char *bad_f64[] = {"abc", "0.1x", "", " 0.1", "nan", "inf", "-inf", "1e999"};
    int v = -7, i;
    int64_t big = -7;
    double d = -7;
    for (i = 0; i < HPDL_COUNT(bad_int); i++) HPDL_EXPECT(hpdl_arg_int("--hidden", bad_int[i], 1, 1 << 20, &v) == HPDL_ERR_INVALID);
    for (i = 0; i < HPDL_COUNT(bad_f64); i++) HPDL_EXPECT(hpdl_arg_f64("--lr", bad_f64[i], 0, DBL_MAX, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_arg_int("--hidden", "0", 1, 1 << 20, &v) == HPDL_ERR_INVALID);       /* below min */
    HPDL_EXPECT(hpdl_arg_int("--hidden", "3000000000", 1, INT32_MAX, &v) == HPDL_ERR_INVALID); /* above max */
    HPDL_EXPECT(hpdl_arg_f64("--lr", "-0.5", 0, DBL_MAX, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_arg_i64("--seed", "-1", 0, INT64_MAX, &big) == HPDL_ERR_INVALID);
    HPDL_EXPECT(v == -7 && d == -7 && big == -7);
    HPDL_EXPECT(hpdl_arg_int("--hidden", "16", 1, 1 << 20, &v) == HPDL_OK && v == 16);
    HPDL_EXPECT(hpdl_arg_int("--shift", "-3", -5, 5, &v) == HPDL_OK && v == -3);
    HPDL_EXPECT(hpdl_arg_f64("--lr", "1e30", 0, DBL_MAX, &d) == HPDL_OK && d == 1e30);
    HPDL_EXPECT(hpdl_arg_i64("--seed", "9223372036854775807", 0, INT64_MAX, &big) == HPDL_OK && big == INT64_MAX);
}

/* Comma lists: every item an integer by hpdl_arg_int's rules, 1 to
   capacity of them; a refused list writes nothing. */
static void flag_lists_are_strict(void) {
    static const char *bad[] = {"", ",", "32,", ",32", "32,,128", "32, 128", "32,abc", "32,0", "1,2,3,4,5", "32;128"};
    int got[4] = {-7, -7, -7, -7}, n = -7, i;
    for (i = 0; i < HPDL_COUNT(bad); i++) {
        HPDL_EXPECT(hpdl_arg_int_list("--batch", bad[i], 1, 4096, got, 4, &n) == HPDL_ERR_INVALID);
        HPDL_EXPECT(n == -7 && got[0] == -7 && got[3] == -7);
    }
    HPDL_EXPECT(hpdl_arg_int_list("--batch", "32", 1, 4096, got, 4, &n) == HPDL_OK && n == 1 && got[0] == 32);
    HPDL_EXPECT(hpdl_arg_int_list("--batch", "32,128,512,4096", 1, 4096, got, 4, &n) == HPDL_OK && n == 4 &&
                got[0] == 32 && got[1] == 128 && got[2] == 512 && got[3] == 4096);
    HPDL_EXPECT(hpdl_arg_int_list("--shift", "-1,0,1", -1, 1, got, 4, &n) == HPDL_OK && n == 3 && got[0] == -1);
    HPDL_EXPECT(hpdl_arg_int_list("--batch", NULL, 1, 4096, got, 4, &n) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_arg_int_list("--batch", "32", 1, 4096, got, 0, &n) == HPDL_ERR_INVALID);
}

static void write_idx(const char *path, uint32_t magic, const uint32_t *dims, int n_dims) {
    FILE *f = fopen(path, "wb");
    unsigned char be[4];
    uint64_t items = 1, i;
    int d;
    if (!f) exit(EXIT_FAILURE);
    for (d = -1; d < n_dims; d++) {
        uint32_t v = d < 0 ? magic : dims[d];
        be[0] = (unsigned char)(v >> 24); be[1] = (unsigned char)(v >> 16); be[2] = (unsigned char)(v >> 8); be[3] = (unsigned char)v;
        fwrite(be, 1, 4, f);
        if (d >= 0) items *= dims[d];
    }
    for (i = 0; i < items; i++) fputc((int)(i % 10), f);
    fclose(f);
}

/* A directory used to be reported as a bad format. */
static void idx_directory_is_an_io_error(void) {
    hpdl_dataset d;
    memset(&d, 0x5a, sizeof d);
    HPDL_EXPECT(hpdl_idx_load(".", ".", &d) == HPDL_ERR_IO);
    HPDL_EXPECT(d.rows == 0x5a5a5a5a);
}

/* Allocation is bounded by HPDL_IDX_MAX_ITEMS (1000 here), not by 4x the file. */
static void idx_size_is_capped(void) {
    static const uint32_t small[3] = {10, 10, 10}, big[3] = {11, 10, 10}, n10[1] = {10}, n11[1] = {11};
    hpdl_dataset d;
    write_idx("test_robust_small.idx", HPDL_IDX_IMAGES_MAGIC, small, 3);
    write_idx("test_robust_small_labels.idx", HPDL_IDX_LABELS_MAGIC, n10, 1);
    write_idx("test_robust_big.idx", HPDL_IDX_IMAGES_MAGIC, big, 3);
    write_idx("test_robust_big_labels.idx", HPDL_IDX_LABELS_MAGIC, n11, 1);
    memset(&d, 0x5a, sizeof d);
    HPDL_EXPECT(hpdl_idx_load("test_robust_big.idx", "test_robust_big_labels.idx", &d) == HPDL_ERR_FORMAT);
    HPDL_EXPECT(d.rows == 0x5a5a5a5a);
    HPDL_EXPECT(hpdl_idx_load("test_robust_small.idx", "test_robust_small_labels.idx", &d) == HPDL_OK);
    HPDL_EXPECT(d.n == 10 && d.rows == 10 && d.cols == 10);
    hpdl_dataset_free(&d);
    remove("test_robust_small.idx");
    remove("test_robust_small_labels.idx");
    remove("test_robust_big.idx");
    remove("test_robust_big_labels.idx");
}

/* ---- output files: whole or not at all, inside their folder ----------------------------- */

static int file_exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

/* A name like ../x used to write outside the results folder; a long path
   was silently cut to "result." */
static void csv_names_stay_in_their_folder(void) {
    static const char *bad[] = {"../x", "a/b", "", ".", "..", "/etc/x"};
    char long_dir[1100];
    hpdl_csv_file c, poison;
    int i;
    memset(&c, 0x5a, sizeof c);
    for (i = 0; i < HPDL_COUNT(bad); i++) {
        HPDL_EXPECT(hpdl_csv_create(&c, ".", bad[i], "a,b") == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_csv_open_with_header(".", bad[i], "a,b") == NULL);
    }
    HPDL_EXPECT(!file_exists("../x.csv") && !file_exists("a/b.csv"));
    if (getenv("HPDL_RESULTS")) HPDL_SKIP("HPDL_RESULTS is set: it overrides the folder");
    memset(long_dir, 'd', sizeof long_dir - 1);
    long_dir[sizeof long_dir - 1] = '\0';
    HPDL_EXPECT(hpdl_csv_create(&c, long_dir, "result", "a,b") == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_csv_open_with_header(long_dir, "result", "a,b") == NULL);
    memset(&poison, 0x5a, sizeof poison);
    HPDL_EXPECT(memcmp(&c, &poison, sizeof c) == 0); /* nothing written */
}

/* Written whole: the .tmp is renamed into place, and a failed rename
   (the target is a folder) leaves no .tmp behind. */
static void csv_and_histogram_files_are_written_whole(void) {
    hpdl_csv_file c;
    hpdl_quant_hist h;
    float x[4] = {0.1f, 0.2f, 0.7f, 0.9f};
    remove("test_robust_out.csv");
    HPDL_CHECK(hpdl_csv_create(&c, ".", "test_robust_out", "metric,value"));
    HPDL_EXPECT(file_exists("test_robust_out.csv.tmp") && !file_exists("test_robust_out.csv"));
    hpdl_csv_row(c.f, "m", 1.0, "s", "a", 2.0, 0);
    HPDL_EXPECT(hpdl_csv_commit(&c) == HPDL_OK);
    HPDL_EXPECT(file_exists("test_robust_out.csv") && !file_exists("test_robust_out.csv.tmp"));
    HPDL_EXPECT(hpdl_csv_commit(&c) == HPDL_ERR_INVALID); /* already closed */
    remove("test_robust_out.csv");

    HPDL_CHECK(hpdl_quant_hist_init(&h, 4, 0.0, 1.0));
    HPDL_CHECK(hpdl_quant_hist_add_f32(&h, x, 4));
    HPDL_EXPECT(hpdl_quant_hist_write_csv(&h, "test_robust_hist.csv") == HPDL_OK);
    HPDL_EXPECT(file_exists("test_robust_hist.csv") && !file_exists("test_robust_hist.csv.tmp"));
    remove("test_robust_hist.csv");
    HPDL_EXPECT(hpdl_quant_hist_write_csv(&h, ".") == HPDL_ERR_IO); /* rename onto a folder fails */
    HPDL_EXPECT(!file_exists("..tmp"));
    hpdl_quant_hist_free(&h);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(quant_mlp_refuses_a_workspace_of_another_shape),
        HPDL_TEST(train_step_refuses_a_nan_input),
        HPDL_TEST(train_step_stops_when_it_diverges),
        HPDL_TEST(sgd_refuses_an_update_that_overflows),
        HPDL_TEST(quant_edge_values),
        HPDL_TEST(quant_layer_output_out_of_range),
        HPDL_TEST(pool_with_a_huge_stride),
        HPDL_TEST(widths_lists_are_strict),
        HPDL_TEST(flag_numbers_are_strict), HPDL_TEST(flag_lists_are_strict),
        HPDL_TEST(idx_directory_is_an_io_error),
        HPDL_TEST(idx_size_is_capped),
        HPDL_TEST(csv_names_stay_in_their_folder),
        HPDL_TEST(csv_and_histogram_files_are_written_whole),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
