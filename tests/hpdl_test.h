/* hpdl_test.h - the smallest test harness that does the job.

   Each test is a void function; main() lists them explicitly:

       static void test_add(void) { HPDL_EXPECT(1 + 1 == 2); }
       int main(int argc, char **argv) {
           static const hpdl_test tests[] = { HPDL_TEST(test_add) };
           return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
       }

   A test fails if any expectation fails, and is skipped if it calls
   HPDL_SKIP (say, without a GPU). The last line printed is
   "N passed, N failed, N skipped"; the exit code is non-zero on any failure.
   An optional argument runs only the tests whose names contain it. */
#ifndef HPDL_TEST_H
#define HPDL_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct hpdl_test {
    const char *name;
    void (*fn)(void);
} hpdl_test;

#define HPDL_TEST(fn) { #fn, fn }
#define HPDL_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int hpdl_test__failures; /* expectations failed in the current test */
static int hpdl_test__skipped;  /* the current test asked to be skipped */

static void hpdl_test__fail(const char *file, int line, const char *what) {
    if (hpdl_test__failures < 10) fprintf(stderr, "    %s:%d: expected %s\n", file, line, what);
    hpdl_test__failures++;
}

/* Records a failure and goes on, so one run shows every broken expectation. */
#define HPDL_EXPECT(cond)                                                     \
    do { if (!(cond)) hpdl_test__fail(__FILE__, __LINE__, #cond); } while (0)

/* |got - want| <= tol * max(1, |want|): relative for large, absolute for small. */
#define HPDL_EXPECT_NEAR(got, want, tol)                                      \
    do {                                                                      \
        double hpdl__g = (double)(got), hpdl__w = (double)(want);            \
        double hpdl__scale = fabs(hpdl__w) > 1.0 ? fabs(hpdl__w) : 1.0;      \
        if (!(fabs(hpdl__g - hpdl__w) <= (tol) * hpdl__scale)) {             \
            char hpdl__msg[256];                                              \
            snprintf(hpdl__msg, sizeof hpdl__msg, "%s ~ %s (got %.17g, want %.17g, tol %g)", \
                     #got, #want, hpdl__g, hpdl__w, (double)(tol));           \
            hpdl_test__fail(__FILE__, __LINE__, hpdl__msg);                   \
        }                                                                     \
    } while (0)

/* Ends the test as skipped; say why. */
#define HPDL_SKIP(reason)                                                     \
    do { fprintf(stderr, "    skipped: %s\n", reason); hpdl_test__skipped = 1; return; } while (0)

static int hpdl_test_main(int argc, char **argv, const hpdl_test *tests, int count) {
    int i, passed = 0, failed = 0, skipped = 0;
    const char *filter = argc > 1 ? argv[1] : NULL;
    for (i = 0; i < count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        hpdl_test__failures = 0;
        hpdl_test__skipped = 0;
        tests[i].fn();
        if (hpdl_test__failures) { failed++; printf("FAIL %s\n", tests[i].name); }
        else if (hpdl_test__skipped) { skipped++; printf("skip %s\n", tests[i].name); }
        else { passed++; printf("ok   %s\n", tests[i].name); }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

#endif /* HPDL_TEST_H */
