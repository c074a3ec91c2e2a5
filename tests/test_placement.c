/* Tests of the layer -> device placement math in hpdl.h. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

#define MAX_DEV 9
#define POISON (-7777)

static void poison(int *first, int n) {
    int i;
    for (i = 0; i < n; i++) first[i] = POISON;
}

static int untouched(const int *first, int n) {
    int i;
    for (i = 0; i < n; i++)
        if (first[i] != POISON) return 0;
    return 1;
}

/* A placement: first[0] = 0, first[G] = L, every device owns >= 1 layer. */
static int is_placement(const int *first, int L, int G) {
    int d;
    if (first[0] != 0 || first[G] != L) return 0;
    for (d = 0; d < G; d++)
        if (first[d + 1] <= first[d]) return 0;
    return 1;
}

static double max_load(const int *first, int G, const double *cost) {
    double worst = 0.0;
    int d, l;
    for (d = 0; d < G; d++) {
        double load = 0.0;
        for (l = first[d]; l < first[d + 1]; l++) load += cost[l];
        if (load > worst) worst = load;
    }
    return worst;
}

/* Brute force: every way to put G-1 cuts between L layers. */
static double brute_best(int L, int G, const double *cost, int *cuts, int d) {
    double best = HUGE_VAL;
    int c;
    if (d == G) return max_load(cuts, G, cost);
    for (c = cuts[d - 1] + 1; c <= L - (G - d); c++) {
        double v;
        cuts[d] = c;
        v = brute_best(L, G, cost, cuts, d + 1);
        if (v < best) best = v;
    }
    return best;
}

static void test_even_split(void) {
    int first[65], L, G;
    for (L = 1; L <= 64; L++)
        for (G = 1; G <= L && G <= 64; G++) {
            int d, lo = L, hi = 0;
            poison(first, G + 1);
            HPDL_EXPECT(hpdl_place_even(L, G, first) == HPDL_OK);
            HPDL_EXPECT(is_placement(first, L, G));
            for (d = 0; d < G; d++) {
                int size = first[d + 1] - first[d];
                if (size < lo) lo = size;
                if (size > hi) hi = size;
                HPDL_EXPECT(d == 0 || size <= first[d] - first[d - 1]); /* larger parts first */
            }
            HPDL_EXPECT(hi - lo <= 1 && hi == (L + G - 1) / G);
        }
    HPDL_EXPECT(hpdl_place_even(10, 4, first) == HPDL_OK);
    HPDL_EXPECT(first[0] == 0 && first[1] == 3 && first[2] == 6 && first[3] == 8 && first[4] == 10);
}

static void test_balanced_is_optimal(void) {
    double cost[12];
    int first[MAX_DEV + 1], cuts[MAX_DEV + 1], t;
    hpdl_rng r;
    hpdl_rng_seed(&r, 8);
    for (t = 0; t < 400; t++) {
        int L = 1 + (int)hpdl_rng_below(&r, 12), G = 1 + (int)hpdl_rng_below(&r, (uint64_t)(L < MAX_DEV ? L : MAX_DEV));
        int l;
        double want;
        for (l = 0; l < L; l++) /* mostly small, now and then a heavy layer */
            cost[l] = hpdl_rng_uniform(&r) * (hpdl_rng_below(&r, 5) == 0 ? 50.0 : 1.0) + 1e-3;
        poison(first, G + 1);
        HPDL_EXPECT(hpdl_place_balanced(L, cost, G, first) == HPDL_OK);
        HPDL_EXPECT(is_placement(first, L, G));
        cuts[0] = 0;
        cuts[G] = L;
        want = brute_best(L, G, cost, cuts, 1);
        HPDL_EXPECT_NEAR(max_load(first, G, cost), want, 1e-12);
    }
}

/* Equal costs: the balanced split's largest part is the even split's. */
static void test_balanced_equal_costs(void) {
    double cost[40];
    int first[41], even[41], L = 40, G, l;
    for (l = 0; l < L; l++) cost[l] = 2.5;
    for (G = 1; G <= L; G++) {
        HPDL_EXPECT(hpdl_place_balanced(L, cost, G, first) == HPDL_OK);
        HPDL_EXPECT(hpdl_place_even(L, G, even) == HPDL_OK);
        HPDL_EXPECT(max_load(first, G, cost) == max_load(even, G, cost));
    }
    /* one huge layer gets a device to itself */
    for (l = 0; l < 10; l++) cost[l] = 1.0;
    cost[4] = 100.0;
    HPDL_EXPECT(hpdl_place_balanced(10, cost, 3, first) == HPDL_OK);
    HPDL_EXPECT(max_load(first, 3, cost) == 100.0);
    HPDL_EXPECT(first[1] == 4 && first[2] == 5);
}

static void test_from_map(void) {
    static const int map[8] = {0, 0, 0, 1, 2, 2, 2, 3};
    static const int skips[5] = {0, 0, 2, 2, 3};   /* device 1 unused */
    static const int back[5] = {0, 1, 0, 1, 1};    /* not contiguous */
    static const int range[4] = {0, 1, 2, 4};      /* id out of range */
    static const int neg[3] = {0, -1, 1};
    static const int late[4] = {0, 1, 1, 1};       /* device 2 of 3 unused */
    int first[6];
    poison(first, 5);
    HPDL_EXPECT(hpdl_place_from_map(8, map, 4, first) == HPDL_OK);
    HPDL_EXPECT(first[0] == 0 && first[1] == 3 && first[2] == 4 && first[3] == 7 && first[4] == 8);
    poison(first, 6);
    HPDL_EXPECT(hpdl_place_from_map(5, skips, 4, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(5, back, 2, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(4, range, 4, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(4, range, 5, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(3, neg, 2, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(4, late, 3, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(8, NULL, 4, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(8, map, 4, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched(first, 6));
    /* a map made from any placement gives that placement back */
    {
        int even[6], dev[17], d, l;
        HPDL_EXPECT(hpdl_place_even(17, 5, even) == HPDL_OK);
        for (d = 0; d < 5; d++)
            for (l = even[d]; l < even[d + 1]; l++) dev[l] = d;
        HPDL_EXPECT(hpdl_place_from_map(17, dev, 5, first) == HPDL_OK);
        HPDL_EXPECT(memcmp(first, even, sizeof even) == 0);
    }
}

/* G > L, G == 0, L == 0, negatives, NULL, bad costs: HPDL_ERR_INVALID and
   nothing written. */
static void test_errors(void) {
    double cost[4] = {1.0, 2.0, 3.0, 4.0};
    int first[8];
    poison(first, 8);
    HPDL_EXPECT(hpdl_place_even(3, 4, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_even(3, 0, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_even(0, 1, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_even(-4, -2, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_even(4, 2, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_balanced(4, cost, 5, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_balanced(4, cost, 0, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_balanced(0, cost, 1, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_balanced(4, NULL, 2, first) == HPDL_ERR_INVALID);
    cost[2] = -1.0;
    HPDL_EXPECT(hpdl_place_balanced(4, cost, 2, first) == HPDL_ERR_INVALID);
    cost[2] = NAN;
    HPDL_EXPECT(hpdl_place_balanced(4, cost, 2, first) == HPDL_ERR_INVALID);
    cost[2] = INFINITY;
    HPDL_EXPECT(hpdl_place_balanced(4, cost, 2, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_place_from_map(0, NULL, 1, first) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched(first, 8));
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_even_split),
        HPDL_TEST(test_balanced_is_optimal),
        HPDL_TEST(test_balanced_equal_costs),
        HPDL_TEST(test_from_map),
        HPDL_TEST(test_errors),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
