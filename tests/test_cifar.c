/* Tests of the CIFAR-10 binary loader on small files written to a temporary
   folder, valid and corrupted: values, labels, channel order, several files
   one after the other, the folder layout, every refusal (with the data set
   untouched), and shuffle/normalize on three-channel images. */
#define HPDL_IDX_MAX_ITEMS (8ull * 3072) /* a 9-image set is over the cap */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_files.h"

#include <sys/stat.h>
#include <unistd.h>

enum { SIDE = 32, PLANE = SIDE * SIDE, PIXELS = 3 * PLANE, RECORD = 1 + PIXELS, MAX_RECORDS = 9 };

static hpdl_rng rng;
static char written[32][64]; /* names written under tmp_dir, removed at the end */
static int n_written;

static void remember(const char *name) {
    int i;
    for (i = 0; i < n_written; i++)
        if (!strcmp(written[i], name)) return;
    if (n_written < 32) snprintf(written[n_written++], sizeof written[0], "%s", name);
}

static void write_bytes(const char *name, const unsigned char *bytes, size_t n) {
    FILE *f = fopen(tmp_path(name), "wb");
    if (!f || (n && fwrite(bytes, 1, n, f) != n) || fclose(f) != 0) { perror(name); exit(1); }
    remember(name);
}

/* ---- records -------------------------------------------------------------- */

/* Random records: labels[i] in 0..9, pixels random. */
static void random_records(unsigned char *rec, int n) {
    int i, k;
    for (i = 0; i < n; i++) {
        rec[i * RECORD] = (unsigned char)hpdl_rng_below(&rng, 10);
        for (k = 1; k < RECORD; k++) rec[i * RECORD + k] = (unsigned char)hpdl_rng_below(&rng, 256);
    }
}

/* Image i of d holds the pixels of record rec, and its label. */
static int image_matches(const hpdl_dataset *d, int64_t i, const unsigned char *rec) {
    int k;
    if (d->labels[i] != rec[0]) return 0;
    for (k = 0; k < PIXELS; k++)
        if (d->images[i * PIXELS + k] != rec[1 + k] / 255.0f) return 0;
    return 1;
}

static void expect_shape(const hpdl_dataset *d, int64_t n) {
    HPDL_EXPECT(d->n == n && d->channels == 3 && d->rows == SIDE && d->cols == SIDE && d->images && d->labels);
    HPDL_EXPECT(hpdl_dataset_features(d) == PIXELS);
}

/* Loads the listed files of tmp_dir. */
static hpdl_status load(int n, const char *name0, const char *name1, hpdl_dataset *out) {
    const char *paths[2];
    paths[0] = tmp_path(name0);
    paths[1] = name1 ? tmp_path(name1) : NULL;
    return hpdl_cifar10_load(n, paths, out);
}

/* ---- valid files ------------------------------------------------------------ */

static void one_file_values_and_labels(void) {
    static unsigned char rec[3 * RECORD];
    hpdl_dataset d;
    int i;
    random_records(rec, 3);
    rec[0] = 0; rec[RECORD] = 9; /* both ends of the label range */
    write_bytes("three.bin", rec, sizeof rec);
    HPDL_EXPECT(load(1, "three.bin", NULL, &d) == HPDL_OK);
    expect_shape(&d, 3);
    if (d.n != 3) return;
    for (i = 0; i < 3; i++) HPDL_EXPECT(image_matches(&d, i, rec + i * RECORD));
    HPDL_EXPECT(d.labels[0] == 0 && d.labels[1] == 9);
    hpdl_dataset_free(&d);
}

/* Red plane, then green, then blue, each row-major: pixel (c, y, x) of the
   file lands at images[c*1024 + y*32 + x]. */
static void channel_order(void) {
    static unsigned char rec[RECORD];
    hpdl_dataset d;
    int y, x, wrong = 0;
    rec[0] = 4;
    for (y = 0; y < SIDE; y++)
        for (x = 0; x < SIDE; x++) {
            rec[1 + 0 * PLANE + y * SIDE + x] = (unsigned char)y;         /* red: the row */
            rec[1 + 1 * PLANE + y * SIDE + x] = (unsigned char)(100 + x); /* green: the column */
            rec[1 + 2 * PLANE + y * SIDE + x] = 255;                      /* blue: full */
        }
    write_bytes("order.bin", rec, sizeof rec);
    HPDL_EXPECT(load(1, "order.bin", NULL, &d) == HPDL_OK);
    expect_shape(&d, 1);
    if (d.n != 1) return;
    for (y = 0; y < SIDE; y++)
        for (x = 0; x < SIDE; x++) {
            wrong += d.images[0 * PLANE + y * SIDE + x] != y / 255.0f;
            wrong += d.images[1 * PLANE + y * SIDE + x] != (100 + x) / 255.0f;
            wrong += d.images[2 * PLANE + y * SIDE + x] != 1.0f;
        }
    HPDL_EXPECT(wrong == 0);
    HPDL_EXPECT(d.labels[0] == 4);
    hpdl_dataset_free(&d);
}

/* Files are concatenated in the order given. */
static void files_concatenate_in_order(void) {
    static unsigned char a[2 * RECORD], b[3 * RECORD];
    hpdl_dataset d;
    int i;
    random_records(a, 2);
    random_records(b, 3);
    write_bytes("a.bin", a, sizeof a);
    write_bytes("b.bin", b, sizeof b);
    HPDL_EXPECT(load(2, "a.bin", "b.bin", &d) == HPDL_OK);
    expect_shape(&d, 5);
    if (d.n != 5) return;
    for (i = 0; i < 2; i++) HPDL_EXPECT(image_matches(&d, i, a + i * RECORD));
    for (i = 0; i < 3; i++) HPDL_EXPECT(image_matches(&d, 2 + i, b + i * RECORD));
    hpdl_dataset_free(&d);
    HPDL_EXPECT(load(2, "b.bin", "a.bin", &d) == HPDL_OK);
    expect_shape(&d, 5);
    if (d.n != 5) return;
    for (i = 0; i < 3; i++) HPDL_EXPECT(image_matches(&d, i, b + i * RECORD));
    for (i = 0; i < 2; i++) HPDL_EXPECT(image_matches(&d, 3 + i, a + i * RECORD));
    hpdl_dataset_free(&d);
}

/* load_dir: data_batch_1..5.bin for training, test_batch.bin for test. */
static void dir_names_the_batches(void) {
    static unsigned char batch[5][RECORD], test[2 * RECORD];
    char name[32];
    hpdl_dataset d;
    int i;
    for (i = 0; i < 5; i++) {
        random_records(batch[i], 1);
        batch[i][0] = (unsigned char)(i + 1); /* the label tells the file */
        snprintf(name, sizeof name, "data_batch_%d.bin", i + 1);
        write_bytes(name, batch[i], RECORD);
    }
    random_records(test, 2);
    write_bytes("test_batch.bin", test, sizeof test);
    HPDL_EXPECT(hpdl_cifar10_load_dir(tmp_dir, 1, &d) == HPDL_OK);
    expect_shape(&d, 5);
    if (d.n != 5) return;
    for (i = 0; i < 5; i++) HPDL_EXPECT(image_matches(&d, i, batch[i]));
    hpdl_dataset_free(&d);
    HPDL_EXPECT(hpdl_cifar10_load_dir(tmp_dir, 0, &d) == HPDL_OK);
    expect_shape(&d, 2);
    if (d.n != 2) return;
    for (i = 0; i < 2; i++) HPDL_EXPECT(image_matches(&d, i, test + i * RECORD));
    hpdl_dataset_free(&d);
    HPDL_EXPECT(d.images == NULL && d.labels == NULL && d.n == 0 && d.channels == 0);
}

/* ---- refusals: a status, a message naming the file, the output untouched -- */

static void truncated_record(void) {
    static unsigned char rec[2 * RECORD];
    char found[64];
    random_records(rec, 2);
    write_bytes("good.bin", rec, sizeof rec);
    write_bytes("cut.bin", rec, sizeof rec - 1);
    write_bytes("long.bin", rec, RECORD + 1);
    snprintf(found, sizeof found, "multiple of %d bytes (records), found %d", RECORD, 2 * RECORD - 1);
    LOAD_FAILS(load(1, "cut.bin", NULL, &out), HPDL_ERR_FORMAT, "cut.bin: truncated record", found);
    LOAD_FAILS(load(2, "good.bin", "cut.bin", &out), HPDL_ERR_FORMAT, "cut.bin: truncated record", found);
    snprintf(found, sizeof found, "found %d", RECORD + 1);
    LOAD_FAILS(load(1, "long.bin", NULL, &out), HPDL_ERR_FORMAT, "long.bin", found);
}

static void bad_label(void) {
    static unsigned char rec[3 * RECORD];
    random_records(rec, 3);
    rec[RECORD] = 10;
    write_bytes("label10.bin", rec, sizeof rec);
    LOAD_FAILS(load(1, "label10.bin", NULL, &out), HPDL_ERR_FORMAT, "label10.bin: bad label in record 1",
               "expected 0..9, found 10");
    rec[RECORD] = 3;
    rec[2 * RECORD] = 255;
    write_bytes("label255.bin", rec, sizeof rec);
    /* found in the second file, after the first was read: nothing kept */
    LOAD_FAILS(load(2, "three.bin", "label255.bin", &out), HPDL_ERR_FORMAT, "label255.bin: bad label in record 2",
               "found 255");
}

static void empty_file(void) {
    write_bytes("empty.bin", NULL, 0);
    LOAD_FAILS(load(1, "empty.bin", NULL, &out), HPDL_ERR_FORMAT, "empty.bin: empty", "found 0");
    LOAD_FAILS(load(2, "three.bin", "empty.bin", &out), HPDL_ERR_FORMAT, "empty.bin: empty", "found 0");
}

static void missing_file(void) {
    static unsigned char rec[RECORD];
    char dir[128];
    random_records(rec, 1);
    write_bytes("one.bin", rec, sizeof rec);
    LOAD_FAILS(load(1, "nothing-here.bin", NULL, &out), HPDL_ERR_IO, "nothing-here.bin", strerror(ENOENT));
    LOAD_FAILS(load(2, "one.bin", "nothing-here.bin", &out), HPDL_ERR_IO, "nothing-here.bin", strerror(ENOENT));
    LOAD_FAILS(hpdl_cifar10_load_dir(tmp_path("no-such-folder"), 0, &out), HPDL_ERR_IO, "no-such-folder/test_batch.bin",
               strerror(ENOENT));
    /* a folder with only data_batch_1.bin: the second is named */
    snprintf(dir, sizeof dir, "%s", tmp_path("partial"));
    HPDL_EXPECT(mkdir(dir, 0700) == 0);
    write_bytes("partial/data_batch_1.bin", rec, sizeof rec);
    LOAD_FAILS(hpdl_cifar10_load_dir(dir, 1, &out), HPDL_ERR_IO, "data_batch_2.bin", strerror(ENOENT));
    remove(tmp_path("partial/data_batch_1.bin"));
    remove(dir);
    /* a folder where a file should be: opens, then cannot be read */
    HPDL_EXPECT(mkdir(tmp_path("folder.bin"), 0700) == 0);
    LOAD_FAILS(load(1, "folder.bin", NULL, &out), HPDL_ERR_IO, "folder.bin: cannot read", strerror(EISDIR));
    remove(tmp_path("folder.bin"));
}

/* More than HPDL_IDX_MAX_ITEMS pixels (8 images here) in all is refused
   before anything is allocated; 8 images load. */
static void total_is_capped(void) {
    static unsigned char rec[MAX_RECORDS * RECORD];
    hpdl_dataset d;
    random_records(rec, MAX_RECORDS);
    write_bytes("eight.bin", rec, 8 * RECORD);
    write_bytes("nine.bin", rec, 9 * RECORD);
    write_bytes("one.bin", rec, RECORD);
    HPDL_EXPECT(load(1, "eight.bin", NULL, &d) == HPDL_OK);
    expect_shape(&d, 8);
    hpdl_dataset_free(&d);
    LOAD_FAILS(load(1, "nine.bin", NULL, &out), HPDL_ERR_FORMAT, "nine.bin: 9 images", "HPDL_IDX_MAX_ITEMS");
    LOAD_FAILS(load(2, "eight.bin", "one.bin", &out), HPDL_ERR_FORMAT, "one.bin: 9 images", "HPDL_IDX_MAX_ITEMS");
}

static void bad_arguments(void) {
    hpdl_dataset out, sentinel;
    const char *paths[2];
    paths[0] = tmp_path("three.bin");
    paths[1] = NULL;
    memset(&out, 0x5a, sizeof out);
    memcpy(&sentinel, &out, sizeof out);
    HPDL_EXPECT(hpdl_cifar10_load(0, paths, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cifar10_load(-1, paths, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cifar10_load(1, NULL, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cifar10_load(2, paths, &out) == HPDL_ERR_INVALID); /* paths[1] is NULL */
    HPDL_EXPECT(hpdl_cifar10_load(1, paths, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cifar10_load_dir(NULL, 1, &out) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cifar10_load_dir(tmp_dir, 1, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&out, &sentinel, sizeof out) == 0);
    HPDL_EXPECT(hpdl_dataset_features(NULL) == 0);
}

/* ---- shuffle and normalize move and scale whole three-channel images -------- */

static void shuffle_moves_whole_images(void) {
    static unsigned char rec[8 * RECORD];
    hpdl_dataset d;
    int i, j, matched = 0, moved = 0;
    random_records(rec, 8);
    for (i = 0; i < 8; i++) rec[i * RECORD] = (unsigned char)i; /* one label per image */
    write_bytes("eight.bin", rec, sizeof rec);
    HPDL_EXPECT(load(1, "eight.bin", NULL, &d) == HPDL_OK);
    if (d.n != 8) return;
    HPDL_EXPECT(hpdl_dataset_shuffle(&d, 7) == HPDL_OK);
    for (i = 0; i < 8; i++) {
        j = d.labels[i];
        moved += j != i;
        matched += j >= 0 && j < 8 && image_matches(&d, i, rec + j * RECORD);
    }
    HPDL_EXPECT(matched == 8);
    HPDL_EXPECT(moved > 0);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.5f, 0.25f) == HPDL_OK);
    j = d.labels[7];
    /* the last float of the last image (blue, bottom right) was scaled too */
    HPDL_EXPECT(d.images[8 * PIXELS - 1] == (rec[j * RECORD + PIXELS] / 255.0f - 0.5f) / 0.25f);
    d.channels = 0; /* not a data set */
    HPDL_EXPECT(hpdl_dataset_shuffle(&d, 7) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_dataset_normalize(&d, 0.5f, 0.25f) == HPDL_ERR_INVALID);
    hpdl_dataset_free(&d);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(one_file_values_and_labels), HPDL_TEST(channel_order),   HPDL_TEST(files_concatenate_in_order),
        HPDL_TEST(dir_names_the_batches),      HPDL_TEST(truncated_record), HPDL_TEST(bad_label),
        HPDL_TEST(empty_file),                 HPDL_TEST(missing_file),    HPDL_TEST(total_is_capped),
        HPDL_TEST(bad_arguments),              HPDL_TEST(shuffle_moves_whole_images),
    };
    int i, rc;
    hpdl_rng_seed(&rng, 3073);
    strcpy(tmp_dir, "/tmp/hpdl_cifar_XXXXXX");
    if (!mkdtemp(tmp_dir)) { perror("mkdtemp"); return 1; }
    { /* three.bin: a valid file that other tests pair with a broken one */
        static unsigned char rec[3 * RECORD];
        random_records(rec, 3);
        write_bytes("three.bin", rec, sizeof rec);
    }
    rc = hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
    for (i = 0; i < n_written; i++) remove(tmp_path(written[i]));
    remove(tmp_path("stderr.txt")); /* capture_stderr's */
    remove(tmp_dir);
    return rc;
}
