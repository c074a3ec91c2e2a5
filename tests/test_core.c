/* Tests of hpdl.h's core: status strings, allocation, f16/bf16 conversion,
   RNG, statistics, matrix views, CSV output. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

/* ---- half precision ------------------------------------------------------ */

/* Exact value of an IEEE binary16 bit pattern, computed independently of the
   code under test with ldexp. */
static double f16_value(uint16_t bits) {
    int exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
    double sign = (bits & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f) return man ? NAN : sign * INFINITY;
    if (exp == 0) return sign * ldexp((double)man, -24);
    return sign * ldexp((double)(man | 0x400), exp - 25);
}

static void test_f16_decode_all_patterns(void) {
    uint32_t b;
    for (b = 0; b < 0x10000u; b++) {
        hpdl_f16 h;
        double want = f16_value((uint16_t)b);
        float got;
        h.bits = (uint16_t)b;
        got = hpdl_f16_to_f32(h);
        if (isnan(want)) HPDL_EXPECT(isnan(got));
        else HPDL_EXPECT((double)got == want && !signbit(got) == !signbit(want));
    }
}

/* Every half round-trips; the midpoint between neighbours rounds to the even
   one, and a hair either side of it rounds to the nearer one. */
static void test_f16_encode_all_patterns(void) {
    uint32_t b;
    for (b = 0; b < 0x10000u; b++) {
        hpdl_f16 h;
        float x;
        h.bits = (uint16_t)b;
        x = hpdl_f16_to_f32(h);
        if (isnan(x)) {
            HPDL_EXPECT(isnan(hpdl_f16_to_f32(hpdl_f16_from_f32(x))));
            continue;
        }
        HPDL_EXPECT(hpdl_f16_from_f32(x).bits == b);
        if ((b & 0x7fffu) < 0x7bffu) { /* has a finite upper neighbour */
            uint16_t up = (uint16_t)(b + 1);
            double mid = 0.5 * (f16_value((uint16_t)b) + f16_value(up));
            uint16_t even = (b & 1u) ? up : (uint16_t)b;
            HPDL_EXPECT(hpdl_f16_from_f32((float)mid).bits == even);
            HPDL_EXPECT(hpdl_f16_from_f32(nextafterf((float)mid, 0.0f)).bits == b);
            HPDL_EXPECT(hpdl_f16_from_f32(nextafterf((float)mid, (b & 0x8000u) ? -INFINITY : INFINITY)).bits == up);
        }
    }
}

static void test_f16_special_values(void) {
    HPDL_EXPECT(hpdl_f16_from_f32(65504.0f).bits == 0x7bff);
    HPDL_EXPECT(hpdl_f16_from_f32(65520.0f).bits == 0x7c00); /* halfway to 2^16 rounds up to inf */
    HPDL_EXPECT(hpdl_f16_from_f32(65519.99f).bits == 0x7bff);
    HPDL_EXPECT(hpdl_f16_from_f32(1e10f).bits == 0x7c00);
    HPDL_EXPECT(hpdl_f16_from_f32(-INFINITY).bits == 0xfc00);
    HPDL_EXPECT(hpdl_f16_from_f32(5.9604644775390625e-8f).bits == 0x0001); /* smallest subnormal */
    HPDL_EXPECT(hpdl_f16_from_f32(2.98023223876953125e-8f).bits == 0x0000); /* half of it: ties to even (0) */
    HPDL_EXPECT(hpdl_f16_from_f32(2.99e-8f).bits == 0x0001);
    HPDL_EXPECT(hpdl_f16_from_f32(-0.0f).bits == 0x8000);
    HPDL_EXPECT(hpdl_f16_from_f32(1e-30f).bits == 0x0000);
    HPDL_EXPECT((hpdl_f16_from_f32(NAN).bits & 0x7c00) == 0x7c00 && (hpdl_f16_from_f32(NAN).bits & 0x3ff));
}

static void test_bf16_all_patterns(void) {
    uint32_t b;
    for (b = 0; b < 0x10000u; b++) {
        hpdl_bf16 h;
        float x;
        h.bits = (uint16_t)b;
        x = hpdl_bf16_to_f32(h);
        if (isnan(x)) {
            HPDL_EXPECT(isnan(hpdl_bf16_to_f32(hpdl_bf16_from_f32(x))));
            continue;
        }
        HPDL_EXPECT(hpdl_bf16_from_f32(x).bits == b);
        if ((b & 0x7fffu) < 0x7f7fu) { /* finite upper neighbour */
            uint16_t up = (uint16_t)(b + 1);
            hpdl_bf16 hu;
            double mid;
            uint16_t even = (b & 1u) ? up : (uint16_t)b;
            hu.bits = up;
            mid = 0.5 * ((double)x + (double)hpdl_bf16_to_f32(hu)); /* exact in float: 8-bit mantissa + 1 */
            HPDL_EXPECT(hpdl_bf16_from_f32((float)mid).bits == even);
            HPDL_EXPECT(hpdl_bf16_from_f32(nextafterf((float)mid, 0.0f)).bits == b);
            HPDL_EXPECT(hpdl_bf16_from_f32(nextafterf((float)mid, (b & 0x8000u) ? -INFINITY : INFINITY)).bits == up);
        }
    }
    HPDL_EXPECT(hpdl_bf16_from_f32(3.4e38f).bits == 0x7f80); /* rounds past the largest bf16 */
    HPDL_EXPECT(isnan(hpdl_bf16_to_f32(hpdl_bf16_from_f32(NAN))));
}

/* ---- RNG ------------------------------------------------------------------- */

static void test_rng_reproducible_and_seed_dependent(void) {
    hpdl_rng a, b, c;
    int i, same_as_c = 0;
    hpdl_rng_seed(&a, 42);
    hpdl_rng_seed(&b, 42);
    hpdl_rng_seed(&c, 43);
    for (i = 0; i < 1000; i++) {
        uint64_t x = hpdl_rng_u64(&a);
        HPDL_EXPECT(x == hpdl_rng_u64(&b));
        same_as_c += x == hpdl_rng_u64(&c);
    }
    HPDL_EXPECT(same_as_c == 0);
}

static void test_rng_uniform_and_normal_moments(void) {
    hpdl_rng r;
    const int n = 200000;
    double su = 0, su2 = 0, sn = 0, sn2 = 0, lo = 1, hi = 0;
    int i;
    hpdl_rng_seed(&r, 7);
    for (i = 0; i < n; i++) {
        double u = hpdl_rng_uniform(&r), z = hpdl_rng_normal(&r);
        su += u; su2 += u * u; sn += z; sn2 += z * z;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    HPDL_EXPECT(lo >= 0.0 && hi < 1.0);
    HPDL_EXPECT_NEAR(su / n, 0.5, 0.005);
    HPDL_EXPECT_NEAR(su2 / n - (su / n) * (su / n), 1.0 / 12.0, 0.002);
    HPDL_EXPECT_NEAR(sn / n, 0.0, 0.01);
    HPDL_EXPECT_NEAR(sn2 / n, 1.0, 0.02);
}

static void test_rng_below_and_shuffle(void) {
    hpdl_rng r;
    int32_t idx[1000];
    int seen[1000] = {0}, counts[7] = {0}, i, moved = 0;
    hpdl_rng_seed(&r, 3);
    for (i = 0; i < 70000; i++) counts[hpdl_rng_below(&r, 7)]++;
    for (i = 0; i < 7; i++) HPDL_EXPECT(counts[i] > 9500 && counts[i] < 10500);
    for (i = 0; i < 1000; i++) idx[i] = i;
    hpdl_rng_shuffle_index(&r, idx, 1000);
    for (i = 0; i < 1000; i++) {
        HPDL_EXPECT(idx[i] >= 0 && idx[i] < 1000);
        if (idx[i] >= 0 && idx[i] < 1000) seen[idx[i]]++;
        moved += idx[i] != i;
    }
    for (i = 0; i < 1000; i++) HPDL_EXPECT(seen[i] == 1);
    HPDL_EXPECT(moved > 900);
}

/* ---- timer and statistics ---------------------------------------------------- */

static void test_timer_monotonic(void) {
    double t0 = hpdl_time_now(), t1;
    volatile double sink = 0;
    int i;
    for (i = 0; i < 1000000; i++) sink += i;
    t1 = hpdl_time_now();
    HPDL_EXPECT(t1 > t0 && t1 - t0 < 10.0 && sink > 0);
}

static void test_stats_known_values(void) {
    const double x[] = {4, 1, 3, 2, 10};
    const double even[] = {5, 1, 3, 2};
    hpdl_stats s;
    memset(&s, 0, sizeof s);
    HPDL_EXPECT(hpdl_stats_compute(x, 5, &s) == HPDL_OK);
    HPDL_EXPECT_NEAR(s.mean, 4.0, 1e-15);
    HPDL_EXPECT_NEAR(s.stddev, sqrt(12.5), 1e-15); /* squares of deviations sum to 50; 50/4 */
    HPDL_EXPECT_NEAR(s.cv, sqrt(12.5) / 4.0, 1e-15);
    HPDL_EXPECT(s.median == 3.0 && s.min == 1.0 && s.max == 10.0 && s.n == 5);
    HPDL_EXPECT(x[0] == 4 && x[4] == 10); /* input untouched */
    HPDL_EXPECT(hpdl_stats_compute(even, 4, &s) == HPDL_OK);
    HPDL_EXPECT(s.median == 2.5);
}

static void test_stats_bad_input(void) {
    const double x[] = {1, 2};
    hpdl_stats s;
    s.n = -7;
    HPDL_EXPECT(hpdl_stats_compute(NULL, 2, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_stats_compute(x, 0, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_stats_compute(x, -1, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_stats_compute(x, 2, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(s.n == -7);
}

/* Five seeds, one that missed the target: the summary is over the other four. */
static void test_tta_summary_and_rows(void) {
    static const hpdl_tta_run runs[5] = {{1, 1, 15, 7.0, 0.901}, {2, 1, 16, 8.0, 0.903}, {3, 0, 20, 10.0, 0.897},
                                         {4, 1, 14, 6.0, 0.900}, {5, 1, 15, 9.0, 0.905}};
    const double mean_s = 7.5, std_s = sqrt(5.0 / 3.0); /* deviations 0.25+0.25+2.25+2.25 = 5, over n-1 = 3 */
    char line[256];
    hpdl_stats e, s;
    int reached = -1;
    FILE *f = tmpfile();
    HPDL_EXPECT(hpdl_tta_summary(runs, 5, &reached, &e, &s) == HPDL_OK);
    HPDL_EXPECT(reached == 4 && e.n == 4 && s.n == 4);
    HPDL_EXPECT_NEAR(e.mean, 15.0, 1e-15);
    HPDL_EXPECT_NEAR(s.mean, mean_s, 1e-15);
    HPDL_EXPECT_NEAR(s.stddev, std_s, 1e-15);
    HPDL_EXPECT_NEAR(s.cv, std_s / mean_s, 1e-15);
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(hpdl_tta_csv_rows(f, runs, 5) == HPDL_OK);
    rewind(f);
    HPDL_EXPECT(fgets(line, sizeof line, f) && !strcmp(line, "0,1,1,15,7.0000,0.9010\n"));
    HPDL_EXPECT(fgets(line, sizeof line, f) && fgets(line, sizeof line, f) && !strcmp(line, "2,3,0,20,10.0000,0.8970\n"));
    HPDL_EXPECT(fgets(line, sizeof line, f) && fgets(line, sizeof line, f) && fgets(line, sizeof line, f) &&
                !strcmp(line, "mean,,4,15.0000,7.5000,\n"));
    HPDL_EXPECT(fgets(line, sizeof line, f) && !strcmp(line, "std,,4,0.8165,1.2910,\n"));
    HPDL_EXPECT(fgets(line, sizeof line, f) && !strcmp(line, "cv,,4,0.0544,0.1721,\n"));
    HPDL_EXPECT(!fgets(line, sizeof line, f));
    fclose(f);
}

/* No run reached the target: zero stats, no summary rows; bad arguments. */
static void test_tta_none_reached_and_bad_input(void) {
    static const hpdl_tta_run missed[2] = {{7, 0, 20, 10.0, 0.88}, {8, 0, 20, 11.0, 0.89}};
    char line[256];
    hpdl_stats e, s;
    int reached = -1, lines = 0;
    FILE *f = tmpfile();
    HPDL_EXPECT(hpdl_tta_summary(missed, 2, &reached, &e, &s) == HPDL_OK);
    HPDL_EXPECT(reached == 0 && e.n == 0 && s.mean == 0.0);
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(hpdl_tta_csv_rows(f, missed, 2) == HPDL_OK);
    rewind(f);
    while (fgets(line, sizeof line, f)) lines++;
    HPDL_EXPECT(lines == 2);
    reached = -1;
    HPDL_EXPECT(hpdl_tta_summary(NULL, 2, &reached, &e, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_tta_summary(missed, 0, &reached, &e, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_tta_summary(missed, 2, &reached, NULL, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(reached == -1);
    HPDL_EXPECT(hpdl_tta_csv_rows(NULL, missed, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_tta_csv_rows(f, missed, -1) == HPDL_ERR_INVALID);
    fclose(f);
}

/* ---- status, allocation, views, CSV ------------------------------------------ */

/* strcmp(x, y) == 0 without strcmp: g++ -O2 folds strcmp over the unrolled
   loop below and warns that strings of different lengths differ. */
static int same_text(const char *x, const char *y) {
    while (*x && *x == *y) x++, y++;
    return *x == *y;
}

static void test_status_strings_distinct(void) {
    int a, b;
    for (a = HPDL_OK; a <= HPDL_ERR_MISMATCH; a++) {
        HPDL_EXPECT(!same_text(hpdl_status_string((hpdl_status)a), "unknown status"));
        for (b = a + 1; b <= HPDL_ERR_MISMATCH; b++)
            HPDL_EXPECT(!same_text(hpdl_status_string((hpdl_status)a), hpdl_status_string((hpdl_status)b)));
    }
}

static void test_alloc_refuses_overflow(void) {
    void *p = hpdl_alloc((size_t)-1 / 2, 4);
    HPDL_EXPECT(p == NULL);
    p = hpdl_alloc(10, sizeof(double));
    HPDL_EXPECT(p != NULL);
    HPDL_FREE(p);
}

static void test_matrix_views(void) {
    float data[6 * 8];
    hpdl_mat_f32 m = hpdl_mat_view_f32(data, 6, 5, 8);
    HPDL_EXPECT(m.data == data && m.rows == 6 && m.cols == 5 && m.ld == 8);
    HPDL_EXPECT(hpdl_mat_check_f32(m) == HPDL_OK);
    HPDL_EXPECT(hpdl_mat_check_f32(hpdl_mat_view_f32(data, 6, 9, 8)) == HPDL_ERR_INVALID); /* ld < cols */
    HPDL_EXPECT(hpdl_mat_check_f32(hpdl_mat_view_f32(data, -1, 5, 8)) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mat_check_f32(hpdl_mat_view_f32(NULL, 6, 5, 8)) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mat_check_f32(hpdl_mat_view_f32(NULL, 0, 5, 8)) == HPDL_OK); /* empty */
}

static void test_csv_rows(void) {
    char line[256];
    FILE *f = hpdl_csv_open("/tmp", "hpdl_test_core");
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    hpdl_csv_row(f, "gflops", 50.0, "TFLOP/s", "cublas", 40.0, 1);
    hpdl_csv_row(f, "epoch", 2.0, "s", "pytorch", 20.0, 0);
    fclose(f);
    f = fopen("/tmp/hpdl_test_core.csv", "r");
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(fgets(line, sizeof line, f) && strcmp(line, "metric,value,unit,anchor,anchor_value,ratio\n") == 0);
    HPDL_EXPECT(fgets(line, sizeof line, f) && strcmp(line, "gflops,50,TFLOP/s,cublas,40,1.2500\n") == 0);
    HPDL_EXPECT(fgets(line, sizeof line, f) && strcmp(line, "epoch,2,s,pytorch,20,10.0000\n") == 0);
    fclose(f);
    remove("/tmp/hpdl_test_core.csv");
}

/* With a context set, each CSV gets <name>.context beside it; without, none. */
static void test_csv_context(void) {
    char text[512], line[512];
    char *argv[] = {(char *)"bench", (char *)"--batch", (char *)"32"};
    hpdl_csv_file c;
    FILE *f;
    int found = 0;
    HPDL_EXPECT(hpdl_csv_context_make(3, argv, "a test device", text, sizeof text) == HPDL_OK);
    HPDL_EXPECT(strstr(text, "device: a test device\n") && strstr(text, "command: bench --batch 32\n"));
    HPDL_EXPECT(strstr(text, "hpdl: " HPDL_VERSION "\n") && strstr(text, "date: 20"));
    hpdl_csv_set_context(text);
    HPDL_EXPECT(hpdl_csv_create(&c, "/tmp", "hpdl_test_context", "a,b") == HPDL_OK);
    HPDL_EXPECT(hpdl_csv_commit(&c) == HPDL_OK);
    f = fopen("/tmp/hpdl_test_context.context", "r");
    while (f && fgets(line, sizeof line, f)) found += !strcmp(line, "command: bench --batch 32\n");
    if (f) fclose(f);
    HPDL_EXPECT(found == 1);
    remove("/tmp/hpdl_test_context.context");
    hpdl_csv_set_context(NULL);
    HPDL_EXPECT(hpdl_csv_create(&c, "/tmp", "hpdl_test_context", "a,b") == HPDL_OK);
    HPDL_EXPECT(hpdl_csv_commit(&c) == HPDL_OK);
    f = fopen("/tmp/hpdl_test_context.context", "r");
    HPDL_EXPECT(f == NULL);
    if (f) fclose(f);
    remove("/tmp/hpdl_test_context.csv");
    HPDL_EXPECT(hpdl_csv_context_make(3, NULL, "x", text, sizeof text) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_csv_context_make(3, argv, "x", text, 1) == HPDL_ERR_INVALID);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_f16_decode_all_patterns),
        HPDL_TEST(test_f16_encode_all_patterns),
        HPDL_TEST(test_f16_special_values),
        HPDL_TEST(test_bf16_all_patterns),
        HPDL_TEST(test_rng_reproducible_and_seed_dependent),
        HPDL_TEST(test_rng_uniform_and_normal_moments),
        HPDL_TEST(test_rng_below_and_shuffle),
        HPDL_TEST(test_timer_monotonic),
        HPDL_TEST(test_stats_known_values),
        HPDL_TEST(test_stats_bad_input),
        HPDL_TEST(test_tta_summary_and_rows),
        HPDL_TEST(test_tta_none_reached_and_bad_input),
        HPDL_TEST(test_status_strings_distinct),
        HPDL_TEST(test_alloc_refuses_overflow),
        HPDL_TEST(test_matrix_views),
        HPDL_TEST(test_csv_rows),
        HPDL_TEST(test_csv_context),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
