/* Tests of the IDX loader on the real Fashion-MNIST (data/fashion-mnist,
   from `make data`) and on small files written to a temporary folder, valid
   and corrupted; and of shuffle and normalize. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_files.h"

#include <sys/stat.h>
#include <unistd.h>

#define DATA_DIR "data/fashion-mnist"

static hpdl_rng rng;

/* ---- files in the temporary folder -------------------------------------- */

static int mkdir_ok(const char *path) { return mkdir(path, 0700) == 0; }

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

/* Writes an IDX file: magic, dims, data; the last `cut` bytes left off. */
static void write_idx(const char *name, uint32_t magic, const uint32_t *dims, int n_dims, const unsigned char *data,
                      size_t len, size_t cut) {
    unsigned char header[16];
    size_t header_len = 4 * (size_t)(n_dims + 1), total = header_len + len - cut;
    FILE *f = fopen(tmp_path(name), "wb");
    int i;
    if (!f) { perror(name); exit(1); }
    put_be32(header, magic);
    for (i = 0; i < n_dims; i++) put_be32(header + 4 * (i + 1), dims[i]);
    fwrite(header, 1, total < header_len ? total : header_len, f);
    if (total > header_len) fwrite(data, 1, total - header_len, f);
    fclose(f);
}

/* A valid small data set: 7 images of 5x4 random bytes, random labels. */
enum { N_SMALL = 7, ROWS_SMALL = 5, COLS_SMALL = 4, PIX_SMALL = N_SMALL * ROWS_SMALL * COLS_SMALL };
static unsigned char small_pixels[PIX_SMALL], small_labels[N_SMALL];
static const uint32_t small_dims[3] = {N_SMALL, ROWS_SMALL, COLS_SMALL};

static void write_small(const char *images, const char *labels) {
    write_idx(images, 2051, small_dims, 3, small_pixels, PIX_SMALL, 0);
    write_idx(labels, 2049, small_dims, 1, small_labels, N_SMALL, 0);
}

/* ---- real Fashion-MNIST ------------------------------------------------- */

static int have_data(void) {
    FILE *f = fopen(DATA_DIR "/t10k-labels-idx1-ubyte", "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The pixels of image i against the raw file bytes. */
static void expect_image_matches_file(const hpdl_dataset *d, const char *path, int64_t i) {
    unsigned char raw[28 * 28];
    FILE *f = fopen(path, "rb");
    int k;
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(fseek(f, 16 + (long)i * 784, SEEK_SET) == 0 && fread(raw, 1, 784, f) == 784);
    fclose(f);
    for (k = 0; k < 784; k++) HPDL_EXPECT(d->images[i * 784 + k] == raw[k] / 255.0f);
}

static void real_split(int train, int64_t n) {
    hpdl_dataset d;
    int64_t count[10] = {0}, i;
    float lo = 1, hi = 0;
    int c, bad_labels = 0;
    const char *images = train ? DATA_DIR "/train-images-idx3-ubyte" : DATA_DIR "/t10k-images-idx3-ubyte";
    HPDL_EXPECT(hpdl_idx_load_dir(DATA_DIR, train, &d) == HPDL_OK);
    HPDL_EXPECT(d.n == n && d.channels == 1 && d.rows == 28 && d.cols == 28 && d.images && d.labels);
    if (d.n != n || d.rows != 28 || d.cols != 28) return;
    for (i = 0; i < n; i++) {
        if (d.labels[i] < 0 || d.labels[i] > 9) bad_labels++;
        else count[d.labels[i]]++;
    }
    HPDL_EXPECT(bad_labels == 0);
    for (c = 0; c < 10; c++) HPDL_EXPECT(count[c] > 0);
    for (i = 0; i < n * 784; i++) {
        lo = d.images[i] < lo ? d.images[i] : lo;
        hi = d.images[i] > hi ? d.images[i] : hi;
    }
    HPDL_EXPECT(lo == 0.0f && hi == 1.0f);
    expect_image_matches_file(&d, images, 0);
    expect_image_matches_file(&d, images, n - 1);
    hpdl_dataset_free(&d);
    HPDL_EXPECT(d.images == NULL && d.labels == NULL && d.n == 0);
}

static void fashion_mnist_train(void) {
    if (!have_data()) HPDL_SKIP("no " DATA_DIR ": run `make data`");
    real_split(1, 60000);
}

static void fashion_mnist_test(void) {
    if (!have_data()) HPDL_SKIP("no " DATA_DIR ": run `make data`");
    real_split(0, 10000);
}

/* A truncated copy of the real test images (header says 10000, 100 present). */
static void fashion_mnist_truncated_copy(void) {
    static unsigned char head[16 + 100 * 784];
    char expected[64];
    FILE *f;
    if (!have_data()) HPDL_SKIP("no " DATA_DIR ": run `make data`");
    f = fopen(DATA_DIR "/t10k-images-idx3-ubyte", "rb");
    HPDL_EXPECT(f && fread(head, 1, sizeof head, f) == sizeof head);
    if (f) fclose(f);
    f = fopen(tmp_path("cut-images"), "wb");
    HPDL_EXPECT(f && fwrite(head, 1, sizeof head, f) == sizeof head);
    if (f) fclose(f);
    snprintf(expected, sizeof expected, "expected %d bytes, found %d", 16 + 10000 * 784, (int)sizeof head);
    LOAD_FAILS(hpdl_idx_load(tmp_path("cut-images"), DATA_DIR "/t10k-labels-idx1-ubyte", &out), HPDL_ERR_FORMAT,
               "truncated", expected);
}

/* ---- small files, valid and corrupted ------------------------------------ */

static void small_valid_loads(void) {
    hpdl_dataset d;
    int i;
    memset(&d, 0, sizeof d);
    write_small("ok-images", "ok-labels");
    HPDL_EXPECT(hpdl_idx_load(tmp_path("ok-images"), tmp_path("ok-labels"), &d) == HPDL_OK);
    HPDL_EXPECT(d.n == N_SMALL && d.channels == 1 && d.rows == ROWS_SMALL && d.cols == COLS_SMALL);
    HPDL_EXPECT(hpdl_dataset_features(&d) == ROWS_SMALL * COLS_SMALL);
    if (d.n != N_SMALL) return;
    for (i = 0; i < PIX_SMALL; i++) HPDL_EXPECT(d.images[i] == small_pixels[i] / 255.0f);
    for (i = 0; i < N_SMALL; i++) HPDL_EXPECT(d.labels[i] == small_labels[i]);
    hpdl_dataset_free(&d);
}

/* load_dir finds both spellings: train-images-idx3-ubyte and train-images.idx3-ubyte. */
static void dir_spellings(void) {
    hpdl_dataset d;
    memset(&d, 0, sizeof d);
    write_small("train-images.idx3-ubyte", "train-labels.idx1-ubyte");
    write_small("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
    HPDL_EXPECT(hpdl_idx_load_dir(tmp_dir, 1, &d) == HPDL_OK);
    HPDL_EXPECT(d.n == N_SMALL && d.labels[N_SMALL - 1] == small_labels[N_SMALL - 1]);
    hpdl_dataset_free(&d);
    HPDL_EXPECT(hpdl_idx_load_dir(tmp_dir, 0, &d) == HPDL_OK);
    HPDL_EXPECT(d.n == N_SMALL && d.images[PIX_SMALL - 1] == small_pixels[PIX_SMALL - 1] / 255.0f);
    hpdl_dataset_free(&d);
    remove(tmp_path("train-images.idx3-ubyte"));
    remove(tmp_path("train-labels.idx1-ubyte"));
    remove(tmp_path("t10k-images-idx3-ubyte"));
    remove(tmp_path("t10k-labels-idx1-ubyte"));
}

static void bad_magic(void) {
    write_small("ok-images", "ok-labels");
    write_idx("magic-images", 2049, small_dims, 3, small_pixels, PIX_SMALL, 0);
    write_idx("magic-labels", 2051, small_dims, 1, small_labels, N_SMALL, 0);
    LOAD_FAILS(hpdl_idx_load(tmp_path("magic-images"), tmp_path("ok-labels"), &out), HPDL_ERR_FORMAT,
               "magic-images: bad magic", "expected 2051 (images), found 2049");
    LOAD_FAILS(hpdl_idx_load(tmp_path("ok-images"), tmp_path("magic-labels"), &out), HPDL_ERR_FORMAT,
               "magic-labels: bad magic", "expected 2049 (labels), found 2051");
    /* the two files swapped */
    LOAD_FAILS(hpdl_idx_load(tmp_path("ok-labels"), tmp_path("ok-images"), &out), HPDL_ERR_FORMAT, "bad magic",
               "found 2049");
}

static void truncated_files(void) {
    char expected[64];
    write_small("ok-images", "ok-labels");
    write_idx("cut-images", 2051, small_dims, 3, small_pixels, PIX_SMALL, 3);
    write_idx("cut-labels", 2049, small_dims, 1, small_labels, N_SMALL, 1);
    write_idx("cut-header", 2051, small_dims, 3, small_pixels, PIX_SMALL, PIX_SMALL + 6);
    snprintf(expected, sizeof expected, "expected %d bytes, found %d", 16 + PIX_SMALL, 16 + PIX_SMALL - 3);
    LOAD_FAILS(hpdl_idx_load(tmp_path("cut-images"), tmp_path("ok-labels"), &out), HPDL_ERR_FORMAT, "truncated",
               expected);
    snprintf(expected, sizeof expected, "expected %d bytes, found %d", 8 + N_SMALL, 8 + N_SMALL - 1);
    LOAD_FAILS(hpdl_idx_load(tmp_path("ok-images"), tmp_path("cut-labels"), &out), HPDL_ERR_FORMAT, "truncated",
               expected);
    LOAD_FAILS(hpdl_idx_load(tmp_path("cut-header"), tmp_path("ok-labels"), &out), HPDL_ERR_FORMAT,
               "truncated header", "expected 16 bytes, found 10");
}

static void count_mismatch(void) {
    static const uint32_t six[1] = {N_SMALL - 1};
    write_small("ok-images", "ok-labels");
    write_idx("six-labels", 2049, six, 1, small_labels, N_SMALL - 1, 0);
    LOAD_FAILS(hpdl_idx_load(tmp_path("ok-images"), tmp_path("six-labels"), &out), HPDL_ERR_FORMAT,
               "count mismatch", "has 7 images");
}

static void zero_dimension(void) {
    static const uint32_t zero_rows[3] = {N_SMALL, 0, COLS_SMALL};
    write_small("ok-images", "ok-labels");
    write_idx("zero-images", 2051, zero_rows, 3, small_pixels, 0, 0);
    LOAD_FAILS(hpdl_idx_load(tmp_path("zero-images"), tmp_path("ok-labels"), &out), HPDL_ERR_FORMAT,
               "bad dimension", "found 0");
}

static void missing_files(void) {
    char gz_dir[128];
    FILE *f;
    write_small("ok-images", "ok-labels");
    LOAD_FAILS(hpdl_idx_load(tmp_path("nothing-here"), tmp_path("ok-labels"), &out), HPDL_ERR_IO, "nothing-here",
               strerror(ENOENT));
    LOAD_FAILS(hpdl_idx_load(tmp_path("ok-images"), tmp_path("nothing-here"), &out), HPDL_ERR_IO,
               "cannot open labels", strerror(ENOENT));
    LOAD_FAILS(hpdl_idx_load_dir(tmp_path("no-such-folder"), 1, &out), HPDL_ERR_IO, "train-images-idx3-ubyte",
               strerror(ENOENT));
    /* a folder with only the .gz originals: told to run make data */
    snprintf(gz_dir, sizeof gz_dir, "%s", tmp_path("gz"));
    HPDL_EXPECT(mkdir_ok(gz_dir));
    f = fopen(tmp_path("gz/train-images-idx3-ubyte.gz"), "wb");
    if (f) fclose(f);
    LOAD_FAILS(hpdl_idx_load_dir(gz_dir, 1, &out), HPDL_ERR_IO, "train-images-idx3-ubyte.gz", "make data");
    remove(tmp_path("gz/train-images-idx3-ubyte.gz"));
    remove(gz_dir);
}

static void bad_arguments(void) {
    hpdl_dataset out, sentinel;
    memset(&out, 0x5a, sizeof out);
    memcpy(&sentinel, &out, sizeof out);
    HPDL_EXPECT(hpdl_idx_load(NULL, "x", &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_idx_load("x", NULL, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_idx_load("x", "y", NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_idx_load_dir(NULL, 1, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&out, &sentinel, sizeof out) == 0);
}

/* ---- shuffle and normalize ---------------------------------------------- */

enum { N_SYN = 1000, ROWS_SYN = 3, COLS_SYN = 5, DIM_SYN = ROWS_SYN * COLS_SYN };

/* Image i holds i*DIM + k at pixel k; label i % 10 (so each row tells where it came from). */
static void make_synthetic(hpdl_dataset *d) {
    int i, k;
    d->n = N_SYN; d->channels = 1; d->rows = ROWS_SYN; d->cols = COLS_SYN;
    d->images = (float *)hpdl_alloc(N_SYN * DIM_SYN, sizeof(float));
    d->labels = (int32_t *)hpdl_alloc(N_SYN, sizeof(int32_t));
    if (!d->images || !d->labels) exit(1);
    for (i = 0; i < N_SYN; i++) {
        d->labels[i] = i % 10;
        for (k = 0; k < DIM_SYN; k++) d->images[i * DIM_SYN + k] = (float)(i * DIM_SYN + k);
    }
}

/* Row i is the old row perm[i] (perm from hpdl_rng_shuffle_index with the
   same seed), pixels and label together; same seed, same order. */
static void shuffle_keeps_pairs(void) {
    hpdl_dataset a, b, c;
    int32_t perm[N_SYN];
    hpdl_rng r;
    int i, k, moved = 0;
    make_synthetic(&a); make_synthetic(&b); make_synthetic(&c);
    HPDL_EXPECT(hpdl_dataset_shuffle(&a, 99) == HPDL_OK);
    HPDL_EXPECT(hpdl_dataset_shuffle(&b, 99) == HPDL_OK);
    HPDL_EXPECT(hpdl_dataset_shuffle(&c, 100) == HPDL_OK);
    for (i = 0; i < N_SYN; i++) perm[i] = i;
    hpdl_rng_seed(&r, 99);
    hpdl_rng_shuffle_index(&r, perm, N_SYN);
    for (i = 0; i < N_SYN; i++) {
        moved += perm[i] != i;
        HPDL_EXPECT(a.labels[i] == perm[i] % 10);
        for (k = 0; k < DIM_SYN; k++) HPDL_EXPECT(a.images[i * DIM_SYN + k] == (float)(perm[i] * DIM_SYN + k));
    }
    HPDL_EXPECT(moved > N_SYN / 2);
    HPDL_EXPECT(memcmp(a.images, b.images, N_SYN * DIM_SYN * sizeof(float)) == 0);
    HPDL_EXPECT(memcmp(a.labels, b.labels, N_SYN * sizeof(int32_t)) == 0);
    HPDL_EXPECT(memcmp(a.images, c.images, N_SYN * DIM_SYN * sizeof(float)) != 0);
    hpdl_dataset_free(&a); hpdl_dataset_free(&b); hpdl_dataset_free(&c);
    HPDL_EXPECT(hpdl_dataset_shuffle(&a, 1) == HPDL_ERR_INVALID); /* freed: empty */
    HPDL_EXPECT(hpdl_dataset_shuffle(NULL, 1) == HPDL_ERR_INVALID);
}

/* On real data: the label counts are unchanged and sampled rows still carry
   the label of an identical image of the original order. */
static void shuffle_real(void) {
    hpdl_dataset orig, d;
    int64_t before[10] = {0}, after[10] = {0}, i, j;
    int c;
    if (!have_data()) HPDL_SKIP("no " DATA_DIR ": run `make data`");
    HPDL_CHECK(hpdl_idx_load_dir(DATA_DIR, 0, &orig));
    HPDL_CHECK(hpdl_idx_load_dir(DATA_DIR, 0, &d));
    HPDL_EXPECT(hpdl_dataset_shuffle(&d, 2026) == HPDL_OK);
    for (i = 0; i < d.n; i++) {
        if ((uint32_t)orig.labels[i] < 10) before[orig.labels[i]]++;
        if ((uint32_t)d.labels[i] < 10) after[d.labels[i]]++;
    }
    for (c = 0; c < 10; c++) HPDL_EXPECT(before[c] == after[c]);
    HPDL_EXPECT(memcmp(orig.labels, d.labels, (size_t)d.n * sizeof(int32_t)) != 0);
    for (i = 0; i < 20; i++) {
        int found = 0;
        for (j = 0; j < orig.n && !found; j++)
            found = orig.labels[j] == d.labels[i] && memcmp(orig.images + j * 784, d.images + i * 784, 784 * 4) == 0;
        HPDL_EXPECT(found);
    }
    hpdl_dataset_free(&orig);
    hpdl_dataset_free(&d);
}

static void normalize(void) {
    hpdl_dataset d;
    float keep[DIM_SYN];
    int i;
    make_synthetic(&d);
    for (i = 0; i < N_SYN * DIM_SYN; i++) d.images[i] = (float)hpdl_rng_uniform(&rng);
    memcpy(keep, d.images, sizeof keep);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.2860f, 0.3530f) == HPDL_OK);
    for (i = 0; i < DIM_SYN; i++) HPDL_EXPECT(d.images[i] == (keep[i] - 0.2860f) / 0.3530f);
    memcpy(keep, d.images, sizeof keep);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.5f, 0.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.5f, -1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.5f, NAN) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, INFINITY, 1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_normalize(NULL, 0.5f, 1.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(keep, d.images, sizeof keep) == 0);
    hpdl_dataset_free(&d);
}

/* Per-pixel standardisation: the statistics match a direct computation,
   the standardised pixels have mean 0 and deviation 1, a constant pixel
   (std 0) and a nearly constant one are divided by min_std instead, and a
   bad argument changes nothing. */
static void standardize(void) {
    enum { CONSTANT = 3, NARROW = 7 };
    hpdl_dataset d;
    float mean[DIM_SYN], std[DIM_SYN], keep[N_SYN * DIM_SYN];
    const float min_std = 0.05f;
    int i, k;
    make_synthetic(&d);
    for (i = 0; i < N_SYN; i++)
        for (k = 0; k < DIM_SYN; k++)
            d.images[i * DIM_SYN + k] = k == CONSTANT ? 0.75f
                                        : k == NARROW ? 0.5f + 0.01f * (float)hpdl_rng_uniform(&rng)
                                                      : 100.0f + (float)(k + 1) * (float)hpdl_rng_uniform(&rng);
    HPDL_EXPECT(hpdl_dataset_feature_stats(&d, mean, std) == HPDL_OK);
    for (k = 0; k < DIM_SYN; k++) {
        double m = 0, v = 0;
        for (i = 0; i < N_SYN; i++) m += d.images[i * DIM_SYN + k];
        m /= N_SYN;
        for (i = 0; i < N_SYN; i++) v += (d.images[i * DIM_SYN + k] - m) * (d.images[i * DIM_SYN + k] - m);
        HPDL_EXPECT_NEAR(mean[k], m, 1e-5 * fabs(m));
        HPDL_EXPECT_NEAR(std[k], sqrt(v / N_SYN), 1e-5 * sqrt(v / N_SYN) + 1e-12);
    }
    HPDL_EXPECT(std[CONSTANT] == 0.0f && std[NARROW] < min_std);
    memcpy(keep, d.images, sizeof keep);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, min_std) == HPDL_OK);
    for (k = 0; k < DIM_SYN; k++) {
        double m = 0, v = 0;
        for (i = 0; i < N_SYN; i++) m += d.images[i * DIM_SYN + k];
        m /= N_SYN;
        for (i = 0; i < N_SYN; i++) v += (d.images[i * DIM_SYN + k] - m) * (d.images[i * DIM_SYN + k] - m);
        HPDL_EXPECT_NEAR(m, 0.0, 1e-4);
        if (k != CONSTANT && k != NARROW) HPDL_EXPECT_NEAR(sqrt(v / N_SYN), 1.0, 1e-4);
    }
    HPDL_EXPECT(d.images[DIM_SYN + CONSTANT] == 0.0f);
    HPDL_EXPECT(d.images[DIM_SYN + NARROW] == (keep[DIM_SYN + NARROW] - mean[NARROW]) / min_std);
    memcpy(keep, d.images, sizeof keep);
    HPDL_EXPECT(hpdl_dataset_feature_stats(NULL, mean, std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_feature_stats(&d, NULL, std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_feature_stats(&d, mean, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(NULL, mean, std, min_std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, NULL, std, min_std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, NULL, min_std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, 0.0f) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, NAN) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, INFINITY) == HPDL_ERR_INVALID);
    std[DIM_SYN - 1] = -1.0f; /* the last feature: every check must reach it before a write */
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, min_std) == HPDL_ERR_INVALID);
    std[DIM_SYN - 1] = INFINITY;
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, min_std) == HPDL_ERR_INVALID);
    std[DIM_SYN - 1] = 1.0f;
    mean[DIM_SYN - 1] = NAN;
    HPDL_EXPECT(hpdl_dataset_standardize(&d, mean, std, min_std) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(keep, d.images, sizeof keep) == 0);
    hpdl_dataset_free(&d);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(fashion_mnist_train), HPDL_TEST(fashion_mnist_test), HPDL_TEST(fashion_mnist_truncated_copy),
        HPDL_TEST(small_valid_loads),   HPDL_TEST(dir_spellings),      HPDL_TEST(bad_magic),
        HPDL_TEST(truncated_files),     HPDL_TEST(count_mismatch),     HPDL_TEST(zero_dimension),
        HPDL_TEST(missing_files),       HPDL_TEST(bad_arguments),      HPDL_TEST(shuffle_keeps_pairs),
        HPDL_TEST(shuffle_real),        HPDL_TEST(normalize),          HPDL_TEST(standardize),
    };
    static const char *files[] = {"ok-images", "ok-labels", "magic-images", "magic-labels", "cut-images",
                                  "cut-labels", "cut-header", "six-labels", "zero-images", "stderr.txt"};
    int i, rc;
    hpdl_rng_seed(&rng, 60000);
    for (i = 0; i < PIX_SMALL; i++) small_pixels[i] = (unsigned char)hpdl_rng_below(&rng, 256);
    for (i = 0; i < N_SMALL; i++) small_labels[i] = (unsigned char)hpdl_rng_below(&rng, 10);
    strcpy(tmp_dir, "/tmp/hpdl_idx_XXXXXX");
    if (!mkdtemp(tmp_dir)) { perror("mkdtemp"); return 1; }
    rc = hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
    for (i = 0; i < HPDL_COUNT(files); i++) remove(tmp_path(files[i]));
    remove(tmp_dir);
    return rc;
}
