/* MPI tests of hpdl_mpi.h on CPU ranks: mpirun -np N build/mpi/mpi_allreduce
   for N = 1..4. Every rank runs every test; a test fails on all ranks when it
   fails on any, so rank 0's output (the only one printed) covers them all. */
#include "hpdl_mpi.h"
#include "hpdl_test_mpi.h"

/* ---- values of any element type, seen as doubles ------------------------- */

static void store_at(hpdl_mpi_dtype t, void *buf, int64_t i, double v) {
    switch (t) {
    case HPDL_MPI_F32: ((float *)buf)[i] = (float)v; break;
    case HPDL_MPI_F64: ((double *)buf)[i] = v; break;
    case HPDL_MPI_F16: ((hpdl_f16 *)buf)[i] = hpdl_f16_from_f32((float)v); break;
    case HPDL_MPI_BF16: ((hpdl_bf16 *)buf)[i] = hpdl_bf16_from_f32((float)v); break;
    }
}

static double load_at(hpdl_mpi_dtype t, const void *buf, int64_t i) {
    switch (t) {
    case HPDL_MPI_F32: return ((const float *)buf)[i];
    case HPDL_MPI_F64: return ((const double *)buf)[i];
    case HPDL_MPI_F16: return hpdl_f16_to_f32(((const hpdl_f16 *)buf)[i]);
    case HPDL_MPI_BF16: return hpdl_bf16_to_f32(((const hpdl_bf16 *)buf)[i]);
    }
    return 0.0;
}

/* Largest integer magnitude whose sums over 4 ranks stay exact in type t. */
static int exact_range(hpdl_mpi_dtype t) {
    return t == HPDL_MPI_F16 ? 200 : t == HPDL_MPI_BF16 ? 60 : 1000;
}

/* Rank r's input: integers in [-range, range] (integers: exact sums) or
   uniform in [-1, 1); any rank can regenerate any other rank's values. */
static void rank_values(double *out, int64_t n, uint64_t seed, int r, int range) {
    hpdl_rng rng;
    int64_t i;
    hpdl_rng_seed(&rng, seed * 131 + (uint64_t)r);
    for (i = 0; i < n; i++)
        out[i] = range > 0 ? (double)((int64_t)hpdl_rng_below(&rng, 2 * (uint64_t)range + 1) - range)
                           : 2.0 * hpdl_rng_uniform(&rng) - 1.0;
}

/* The serial reference: the sum over ranks 0..p-1, in rank order. */
static void serial_sum(double *out, double *scratch, int64_t n, uint64_t seed, int range) {
    int64_t i;
    int r;
    for (i = 0; i < n; i++) out[i] = 0.0;
    for (r = 0; r < hpdl_mpi_size(); r++) {
        rank_values(scratch, n, seed, r, range);
        for (i = 0; i < n; i++) out[i] += scratch[i];
    }
}

/* Calls the typed entry point of type t (what users call). */
static hpdl_status typed_allreduce(hpdl_mpi_dtype t, void *buf, int64_t n, hpdl_allreduce_algo algo, int avg) {
    switch (t) {
    case HPDL_MPI_F32:
        return avg ? hpdl_mpi_allreduce_avg_f32((float *)buf, n, algo, MPI_COMM_WORLD)
                   : hpdl_mpi_allreduce_f32((float *)buf, n, algo, MPI_COMM_WORLD);
    case HPDL_MPI_F64:
        return avg ? hpdl_mpi_allreduce_avg_f64((double *)buf, n, algo, MPI_COMM_WORLD)
                   : hpdl_mpi_allreduce_f64((double *)buf, n, algo, MPI_COMM_WORLD);
    case HPDL_MPI_F16:
        return avg ? hpdl_mpi_allreduce_avg_f16((hpdl_f16 *)buf, n, algo, MPI_COMM_WORLD)
                   : hpdl_mpi_allreduce_f16((hpdl_f16 *)buf, n, algo, MPI_COMM_WORLD);
    case HPDL_MPI_BF16:
        return avg ? hpdl_mpi_allreduce_avg_bf16((hpdl_bf16 *)buf, n, algo, MPI_COMM_WORLD)
                   : hpdl_mpi_allreduce_bf16((hpdl_bf16 *)buf, n, algo, MPI_COMM_WORLD);
    }
    return HPDL_ERR_INVALID;
}

enum { GUARD = 3 };           /* elements after the buffer that must stay as they are */
static const double SENTINEL = 77.0;

/* Allreduce of count elements; returns how many results (or guard
   elements) differ from `want` (or from the sentinel) by more than tol. */
static int64_t run_case(hpdl_mpi_dtype t, hpdl_allreduce_algo algo, int64_t count, uint64_t seed, int range,
                        int avg, double tol) {
    size_t es = hpdl_mpi_dtype_size(t);
    void *buf = hpdl_alloc((size_t)count + GUARD, es);
    double *mine = (double *)hpdl_alloc((size_t)count, sizeof(double));
    double *want = (double *)hpdl_alloc((size_t)count, sizeof(double));
    int64_t i, wrong = 0;
    if (!buf || !mine || !want) { free(buf); free(mine); free(want); return -1; }
    rank_values(mine, count, seed, hpdl_mpi_rank(), range);
    for (i = 0; i < count; i++) store_at(t, buf, i, mine[i]);
    for (i = count; i < count + GUARD; i++) store_at(t, buf, i, SENTINEL);
    serial_sum(want, mine, count, seed, range);
    if (typed_allreduce(t, buf, count, algo, avg) != HPDL_OK) wrong++;
    for (i = 0; i < count; i++) {
        double w = want[i];
        if (avg) /* the library divides in the accumulation type: float for all but f64 */
            w = t == HPDL_MPI_F64 ? want[i] / hpdl_mpi_size() : (double)((float)want[i] / (float)hpdl_mpi_size());
        if (fabs(load_at(t, buf, i) - w) > tol * (fabs(w) > 1.0 ? fabs(w) : 1.0)) wrong++;
    }
    for (i = count; i < count + GUARD; i++) wrong += load_at(t, buf, i) != SENTINEL;
    free(buf); free(mine); free(want);
    return wrong;
}

/* The counts that catch off-by-one segmenting: 0, 1, p-1, p, p+1, a big odd one. */
static void exact_counts(int64_t *c) {
    c[0] = 0; c[1] = 1; c[2] = hpdl_mpi_size() - 1; c[3] = hpdl_mpi_size(); c[4] = hpdl_mpi_size() + 1; c[5] = 1000003;
}

static void expect_exact(hpdl_mpi_dtype t, hpdl_allreduce_algo algo) {
    int64_t counts[6];
    int k;
    exact_counts(counts);
    for (k = 0; k < 6; k++) {
        int64_t wrong = run_case(t, algo, counts[k], 1000 + (uint64_t)k, exact_range(t), 0, 0.0);
        if (wrong != 0) fprintf(stderr, "    %s %s count %lld: %lld wrong\n", hpdl_mpi_dtype_name(t),
                                hpdl_allreduce_algo_name(algo), (long long)counts[k], (long long)wrong);
        HPDL_EXPECT(wrong == 0);
    }
}

MPI_TEST(test_ring_exact_f32) { expect_exact(HPDL_MPI_F32, HPDL_ALLREDUCE_RING); }
MPI_TEST(test_mpi_exact_f32) { expect_exact(HPDL_MPI_F32, HPDL_ALLREDUCE_MPI); }
MPI_TEST(test_ring_exact_f64) { expect_exact(HPDL_MPI_F64, HPDL_ALLREDUCE_RING); }
MPI_TEST(test_mpi_exact_f64) { expect_exact(HPDL_MPI_F64, HPDL_ALLREDUCE_MPI); }
MPI_TEST(test_ring_exact_f16) { expect_exact(HPDL_MPI_F16, HPDL_ALLREDUCE_RING); }
MPI_TEST(test_ring_exact_bf16) { expect_exact(HPDL_MPI_BF16, HPDL_ALLREDUCE_RING); }

/* Non-integer data: a different summation order than the serial one, so a
   tolerance by precision. */
MPI_TEST(test_random_sums_match_serial) {
    HPDL_EXPECT(run_case(HPDL_MPI_F64, HPDL_ALLREDUCE_RING, 100003, 7, 0, 0, 1e-12) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F64, HPDL_ALLREDUCE_MPI, 100003, 8, 0, 0, 1e-12) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F32, HPDL_ALLREDUCE_RING, 100003, 9, 0, 0, 1e-5) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F32, HPDL_ALLREDUCE_MPI, 100003, 10, 0, 0, 1e-5) == 0);
}

MPI_TEST(test_avg_divides_by_ranks) {
    HPDL_EXPECT(run_case(HPDL_MPI_F64, HPDL_ALLREDUCE_RING, 1001, 11, 1000, 1, 0.0) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F64, HPDL_ALLREDUCE_MPI, 1001, 12, 1000, 1, 0.0) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F32, HPDL_ALLREDUCE_RING, 1001, 13, 1000, 1, 0.0) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F16, HPDL_ALLREDUCE_RING, 1001, 14, 200, 1, 1e-3) == 0);
}

/* Buffers filled with 0xff bytes (NaN in every float type) must come back
   bit for bit after a call that fails. */
static void *poisoned(size_t bytes) {
    void *p = hpdl_alloc(bytes, 1);
    if (p) memset(p, 0xff, bytes);
    return p;
}

static int untouched(const void *p, size_t bytes) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < bytes; i++)
        if (c[i] != 0xff) return 0;
    return 1;
}

MPI_TEST(test_unsupported_combinations) {
    hpdl_f16 *h = (hpdl_f16 *)poisoned(64 * sizeof *h);
    float *f = (float *)poisoned(64 * sizeof *f);
    HPDL_EXPECT(h && f);
    if (!h || !f) { free(h); free(f); return; }
    /* MPI has no half type */
    HPDL_EXPECT(hpdl_mpi_allreduce_f16(h, 64, HPDL_ALLREDUCE_MPI, MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
    /* NCCL needs device buffers (and an nvcc build with HPDL_USE_NCCL) */
    HPDL_EXPECT(hpdl_mpi_allreduce_f32(f, 64, HPDL_ALLREDUCE_NCCL, MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(untouched(h, 64 * sizeof *h) && untouched(f, 64 * sizeof *f));
    free(h); free(f);
}

MPI_TEST(test_bad_arguments_are_invalid) {
    double *d = (double *)poisoned(16 * sizeof *d);
    HPDL_EXPECT(d != NULL);
    if (!d) return;
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(NULL, 5, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(NULL, 5, HPDL_ALLREDUCE_MPI, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_avg_f64(NULL, 5, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(d, -1, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(d, -1, HPDL_ALLREDUCE_MPI, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(d, 16, (hpdl_allreduce_algo)7, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce(d, 16, (hpdl_mpi_dtype)9, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(d, 16, HPDL_ALLREDUCE_RING, MPI_COMM_NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bcast_f64(NULL, 5, 0, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bcast_f64(d, -2, 0, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bcast_f64(d, 16, hpdl_mpi_size(), MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bcast_f64(d, 16, -1, MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched(d, 16 * sizeof *d));
    /* empty is fine, with or without a pointer */
    HPDL_EXPECT(hpdl_mpi_allreduce_f64(NULL, 0, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_bcast_f64(NULL, 0, 0, MPI_COMM_WORLD) == HPDL_OK);
    free(d);
}

/* With the comparison off, the collectives still work (what benches use). */
MPI_TEST(test_checks_can_be_turned_off) {
    int old = hpdl_mpi_set_checks(0);
    HPDL_EXPECT(old == 1);
    HPDL_EXPECT(run_case(HPDL_MPI_F32, HPDL_ALLREDUCE_RING, 1003, 15, 1000, 0, 0.0) == 0);
    HPDL_EXPECT(run_case(HPDL_MPI_F32, HPDL_ALLREDUCE_MPI, 1003, 16, 1000, 0, 0.0) == 0);
    HPDL_EXPECT(hpdl_mpi_set_checks(old) == 0);
}

/* The comparison itself (a real mismatch aborts the job, so it is shown on
   synthetic reductions: MAX over ranks of (v, -v)). */
MPI_TEST(test_mismatch_is_detected) {
    int64_t agree[4] = {5, 2, -5, -2};     /* two fields, every rank has (5, 2) */
    int64_t counts[4] = {6, 2, -5, -2};    /* count ranges 5..6 */
    int64_t types[4] = {5, 3, -5, -1};     /* type ranges 1..3 */
    HPDL_EXPECT(hpdl__mpi_first_mismatch(agree, 2) == -1);
    HPDL_EXPECT(hpdl__mpi_first_mismatch(counts, 2) == 0);
    HPDL_EXPECT(hpdl__mpi_first_mismatch(types, 2) == 1);
}

/* ---- bucketer ---------------------------------------------------------------- */

enum { NT = 8 };
static const int64_t bucket_counts[NT] = {1, 100, 5000, 3, 20000, 17, 999, 0};

/* Fills tensor i of rank r with integers and a copy for the reference. */
static void fill_tensors(float **t, float **ref, uint64_t seed) {
    double *v = (double *)hpdl_alloc(20000, sizeof(double));
    int i;
    int64_t j;
    if (!v) return;
    for (i = 0; i < NT; i++) {
        rank_values(v, bucket_counts[i], seed + (uint64_t)i, hpdl_mpi_rank(), 1000);
        for (j = 0; j < bucket_counts[i]; j++) t[i][j] = ref[i][j] = (float)v[j];
    }
    free(v);
}

/* One step through the bucketer must equal one plain allreduce per tensor. */
static int64_t bucketer_step(hpdl_mpi_bucketer *b, float **t, float **ref, uint64_t seed, int shuffled,
                             hpdl_allreduce_algo algo, int avg) {
    int order[NT], i;
    int64_t j, wrong = 0;
    hpdl_rng rng;
    fill_tensors(t, ref, seed);
    for (i = 0; i < NT; i++) order[i] = NT - 1 - i; /* backward: last layer first */
    if (shuffled) { /* any order, same on every rank; tensor 2 left for wait() */
        hpdl_rng_seed(&rng, seed);
        hpdl_rng_shuffle_index(&rng, order, NT);
    }
    for (i = 0; i < NT; i++)
        if (!(shuffled && order[i] == 2)) wrong += hpdl_mpi_bucketer_ready(b, order[i]) != HPDL_OK;
    wrong += hpdl_mpi_bucketer_wait(b) != HPDL_OK;
    for (i = 0; i < NT; i++) {
        wrong += (avg ? hpdl_mpi_allreduce_avg_f32(ref[i], bucket_counts[i], algo, MPI_COMM_WORLD)
                      : hpdl_mpi_allreduce_f32(ref[i], bucket_counts[i], algo, MPI_COMM_WORLD)) != HPDL_OK;
        for (j = 0; j < bucket_counts[i]; j++) wrong += t[i][j] != ref[i][j];
    }
    return wrong;
}

static void expect_bucketer_matches(hpdl_allreduce_algo algo, int avg) {
    float *t[NT], *ref[NT];
    void *tv[NT];
    hpdl_mpi_bucketer b;
    int i, ok = 1;
    for (i = 0; i < NT; i++) {
        t[i] = (float *)hpdl_alloc((size_t)bucket_counts[i], sizeof(float));
        ref[i] = (float *)hpdl_alloc((size_t)bucket_counts[i], sizeof(float));
        tv[i] = t[i];
        ok = ok && t[i] && ref[i];
    }
    HPDL_EXPECT(ok);
    /* 16 KiB buckets: several buckets, one tensor larger than a bucket */
    if (ok && hpdl_mpi_bucketer_create(&b, tv, bucket_counts, NT, HPDL_MPI_F32, 16384, avg, algo,
                                       MPI_COMM_WORLD) == HPDL_OK) {
        HPDL_EXPECT(b.nbuckets >= 3);
        HPDL_EXPECT(bucketer_step(&b, t, ref, 20, 0, algo, avg) == 0);
        HPDL_EXPECT(bucketer_step(&b, t, ref, 30, 1, algo, avg) == 0); /* reusable */
        HPDL_EXPECT(b.steps == 2);
        hpdl_mpi_bucketer_destroy(&b);
    } else {
        HPDL_EXPECT(!"bucketer created");
    }
    for (i = 0; i < NT; i++) { free(t[i]); free(ref[i]); }
}

MPI_TEST(test_bucketer_mpi_equals_allreduce) { expect_bucketer_matches(HPDL_ALLREDUCE_MPI, 0); }
MPI_TEST(test_bucketer_mpi_avg_equals_allreduce_avg) { expect_bucketer_matches(HPDL_ALLREDUCE_MPI, 1); }
MPI_TEST(test_bucketer_ring_equals_allreduce) { expect_bucketer_matches(HPDL_ALLREDUCE_RING, 1); }

MPI_TEST(test_bucketer_bad_arguments) {
    float x[4] = {1, 2, 3, 4}, y[3] = {5, 6, 7};
    void *tv[2];
    int64_t counts[2] = {4, 3};
    hpdl_mpi_bucketer b, poison;
    memset(&poison, 0xab, sizeof poison);
    b = poison;
    tv[0] = x;
    tv[1] = NULL; /* NULL with a count */
    HPDL_EXPECT(hpdl_mpi_bucketer_create(&b, tv, counts, 2, HPDL_MPI_F32, 0, 0, HPDL_ALLREDUCE_MPI,
                                         MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    counts[1] = -1;
    tv[1] = y;
    HPDL_EXPECT(hpdl_mpi_bucketer_create(&b, tv, counts, 2, HPDL_MPI_F32, 0, 0, HPDL_ALLREDUCE_MPI,
                                         MPI_COMM_WORLD) == HPDL_ERR_INVALID);
    counts[1] = 3;
    HPDL_EXPECT(hpdl_mpi_bucketer_create(&b, tv, counts, 2, HPDL_MPI_F32, 0, 0, HPDL_ALLREDUCE_NCCL,
                                         MPI_COMM_WORLD) == HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(memcmp(&b, &poison, sizeof b) == 0);
    HPDL_EXPECT(hpdl_mpi_bucketer_create(&b, tv, counts, 2, HPDL_MPI_F32, 0, 0, HPDL_ALLREDUCE_MPI,
                                         MPI_COMM_WORLD) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_bucketer_ready(&b, 2) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bucketer_ready(&b, -1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_bucketer_ready(&b, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_bucketer_ready(&b, 1) == HPDL_ERR_INVALID); /* twice in one step */
    HPDL_EXPECT(hpdl_mpi_bucketer_wait(&b) == HPDL_OK);
    HPDL_EXPECT(x[3] == 4.0f * (float)hpdl_mpi_size() && y[2] == 7.0f * (float)hpdl_mpi_size());
    hpdl_mpi_bucketer_destroy(&b);
}

/* ---- broadcast ----------------------------------------------------------------- */

static void expect_bcast(hpdl_mpi_dtype t, int root, int64_t count) {
    size_t es = hpdl_mpi_dtype_size(t);
    void *buf = poisoned((size_t)count * es + 1);
    double *v = (double *)hpdl_alloc((size_t)count, sizeof(double));
    int64_t i, wrong = 0;
    HPDL_EXPECT(buf && v);
    if (!buf || !v) { free(buf); free(v); return; }
    rank_values(v, count, 40, root, exact_range(t)); /* root's data, known everywhere */
    if (hpdl_mpi_rank() == root)
        for (i = 0; i < count; i++) store_at(t, buf, i, v[i]);
    switch (t) {
    case HPDL_MPI_F32: HPDL_EXPECT(hpdl_mpi_bcast_f32((float *)buf, count, root, MPI_COMM_WORLD) == HPDL_OK); break;
    case HPDL_MPI_F64: HPDL_EXPECT(hpdl_mpi_bcast_f64((double *)buf, count, root, MPI_COMM_WORLD) == HPDL_OK); break;
    case HPDL_MPI_F16: HPDL_EXPECT(hpdl_mpi_bcast_f16((hpdl_f16 *)buf, count, root, MPI_COMM_WORLD) == HPDL_OK); break;
    case HPDL_MPI_BF16: HPDL_EXPECT(hpdl_mpi_bcast_bf16((hpdl_bf16 *)buf, count, root, MPI_COMM_WORLD) == HPDL_OK); break;
    }
    for (i = 0; i < count; i++) wrong += load_at(t, buf, i) != v[i];
    HPDL_EXPECT(wrong == 0);
    HPDL_EXPECT(((unsigned char *)buf)[(size_t)count * es] == 0xff); /* nothing past the end */
    free(buf); free(v);
}

MPI_TEST(test_bcast_from_any_root) {
    expect_bcast(HPDL_MPI_F32, 0, 100003);
    expect_bcast(HPDL_MPI_F64, hpdl_mpi_size() - 1, 100003);
    expect_bcast(HPDL_MPI_F16, hpdl_mpi_size() / 2, 1001);
    expect_bcast(HPDL_MPI_BF16, 0, 7);
    expect_bcast(HPDL_MPI_F32, 0, 0);
}

/* ---- sharding and epoch permutations -------------------------------------------- */

MPI_TEST(test_shard_ranges_cover_once) {
    int64_t ns[7] = {0, 1, 0, 0, 0, 10, 1000003};
    int k, r;
    ns[2] = hpdl_mpi_size() - 1; ns[3] = hpdl_mpi_size(); ns[4] = hpdl_mpi_size() + 1;
    for (k = 0; k < 7; k++) {
        int64_t n = ns[k], prev_end = 0, b = -1, e = -1, mine = 0, total = 0, lo, hi, size_min, size_max;
        lo = n; hi = 0;
        for (r = 0; r < hpdl_mpi_size(); r++) { /* every rank's range, as each rank computes it */
            HPDL_EXPECT(hpdl_mpi_shard_range(n, r, hpdl_mpi_size(), &b, &e) == HPDL_OK);
            HPDL_EXPECT(b == prev_end && e >= b);
            if (e - b < lo) lo = e - b;
            if (e - b > hi) hi = e - b;
            prev_end = e;
        }
        HPDL_EXPECT(prev_end == n && hi - lo <= 1);
        /* and across ranks: the sizes add up to n */
        HPDL_EXPECT(hpdl_mpi_shard_range(n, hpdl_mpi_rank(), hpdl_mpi_size(), &b, &e) == HPDL_OK);
        mine = e - b;
        MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &size_min, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &size_max, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        HPDL_EXPECT(total == n && size_max - size_min <= 1);
    }
}

MPI_TEST(test_shard_range_bad_arguments) {
    int64_t b = -7, e = -7;
    HPDL_EXPECT(hpdl_mpi_shard_range(10, 2, 2, &b, &e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_shard_range(10, -1, 2, &b, &e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_shard_range(10, 0, 0, &b, &e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_shard_range(-1, 0, 2, &b, &e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_shard_range(10, 0, 2, NULL, &e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(b == -7 && e == -7);
}

static int is_permutation(const int32_t *idx, int64_t n) {
    unsigned char *seen = (unsigned char *)calloc((size_t)n + 1, 1);
    int64_t i;
    int ok = seen != NULL;
    for (i = 0; i < n && ok; i++) {
        ok = idx[i] >= 0 && idx[i] < n && !seen[idx[i]];
        if (ok) seen[idx[i]] = 1;
    }
    free(seen);
    return ok;
}

static int same(const int32_t *a, const int32_t *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

MPI_TEST(test_epoch_permutation) {
    enum { N = 1000 };
    static int32_t e0[N], e1[N], again[N], other_seed[N], from_root[N];
    int32_t one = -1, untouched_idx = -5;
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(e0, N, 42, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(e1, N, 42, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(again, N, 42, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(other_seed, N, 43, 0) == HPDL_OK);
    HPDL_EXPECT(is_permutation(e0, N) && is_permutation(e1, N));
    HPDL_EXPECT(same(e0, again, N));       /* reproducible */
    HPDL_EXPECT(!same(e0, e1, N));         /* a new order each epoch */
    HPDL_EXPECT(!same(e0, other_seed, N)); /* and per seed */
    /* identical on every rank: compare with rank 0's */
    memcpy(from_root, e1, sizeof from_root);
    MPI_Bcast(from_root, N, MPI_INT, 0, MPI_COMM_WORLD);
    HPDL_EXPECT(same(from_root, e1, N));
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(&one, 1, 42, 3) == HPDL_OK && one == 0);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(NULL, 0, 42, 3) == HPDL_OK);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(NULL, 5, 42, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_mpi_epoch_permutation(&untouched_idx, -1, 42, 3) == HPDL_ERR_INVALID);
    HPDL_EXPECT(untouched_idx == -5);
}

/* ---- odds and ends --------------------------------------------------------------- */

MPI_TEST(test_busbw_is_nccl_tests_definition) {
    HPDL_EXPECT_NEAR(hpdl_mpi_algbw(1e9, 0.5), 2e9, 1e-12);
    HPDL_EXPECT_NEAR(hpdl_mpi_busbw(1e9, 0.5, 2), 2e9, 1e-12);    /* 2(p-1)/p = 1 */
    HPDL_EXPECT_NEAR(hpdl_mpi_busbw(1e9, 0.5, 4), 3e9, 1e-12);    /* 1.5 */
    HPDL_EXPECT_NEAR(hpdl_mpi_busbw(1e9, 0.5, 8), 3.5e9, 1e-12);  /* 1.75 */
    HPDL_EXPECT(hpdl_mpi_busbw(1e9, 0.5, 1) == 0.0);
    HPDL_EXPECT(hpdl_mpi_busbw(1e9, 0.0, 4) == 0.0);
}

MPI_TEST(test_ranks_and_gpu_choice) {
    int local = hpdl_mpi_local_rank(), leaders = 0, is_leader;
    HPDL_EXPECT(hpdl_mpi_rank() == hpdl_mpi_rank() && hpdl_mpi_size() == hpdl_mpi_size());
    HPDL_EXPECT(local >= 0 && local < hpdl_mpi_size());
    is_leader = local == 0;
    MPI_Allreduce(&is_leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    HPDL_EXPECT(leaders >= 1); /* one local rank 0 per node */
    HPDL_EXPECT(hpdl_mpi_select_gpu() == -1); /* a C build has no GPU path */
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_ring_exact_f32),
        HPDL_TEST(test_mpi_exact_f32),
        HPDL_TEST(test_ring_exact_f64),
        HPDL_TEST(test_mpi_exact_f64),
        HPDL_TEST(test_ring_exact_f16),
        HPDL_TEST(test_ring_exact_bf16),
        HPDL_TEST(test_random_sums_match_serial),
        HPDL_TEST(test_avg_divides_by_ranks),
        HPDL_TEST(test_unsupported_combinations),
        HPDL_TEST(test_bad_arguments_are_invalid),
        HPDL_TEST(test_checks_can_be_turned_off),
        HPDL_TEST(test_mismatch_is_detected),
        HPDL_TEST(test_bucketer_mpi_equals_allreduce),
        HPDL_TEST(test_bucketer_mpi_avg_equals_allreduce_avg),
        HPDL_TEST(test_bucketer_ring_equals_allreduce),
        HPDL_TEST(test_bucketer_bad_arguments),
        HPDL_TEST(test_bcast_from_any_root),
        HPDL_TEST(test_shard_ranges_cover_once),
        HPDL_TEST(test_shard_range_bad_arguments),
        HPDL_TEST(test_epoch_permutation),
        HPDL_TEST(test_busbw_is_nccl_tests_definition),
        HPDL_TEST(test_ranks_and_gpu_choice),
    };
    return hpdl_test_mpi_main(argc, argv, tests, HPDL_COUNT(tests));
}
