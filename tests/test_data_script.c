/* scripts/data.sh on bad sources: a corrupt .gz used to pass ("IDX files
   ready", exit 0) and leave a .tmp behind. Now the script fails, names the
   file and leaves nothing partial; so does its CIFAR-10 part (--cifar10). Runs the script with system(), from the
   repository root (where make test runs); skipped elsewhere. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

#define WORK "build/test_data_script"

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static void write_bytes(const char *path, const char *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) exit(EXIT_FAILURE);
}

/* Runs data.sh from WORK/src into WORK/dst; its exit status (-1 if it did
   not run), its stderr in WORK/err. */
static int run_data_sh(void) {
    int rc = system("MNIST_DIR=" WORK "/src scripts/data.sh " WORK "/dst 2>" WORK "/err >/dev/null");
    return rc == -1 ? -1 : rc != 0;
}

/* A line of the script's own messages ("data: ...") in WORK/err contains needle. */
static int error_says(const char *needle) {
    char line[1024];
    int found = 0;
    FILE *f = fopen(WORK "/err", "r");
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) found = !strncmp(line, "data: ", 6) && strstr(line, needle);
    fclose(f);
    return found;
}

static int fresh_work_dir(void) {
    if (!exists("scripts/data.sh")) return 0;
    return system("rm -rf " WORK " && mkdir -p " WORK "/src " WORK "/dst") == 0;
}

static void corrupt_gz_fails_and_leaves_nothing(void) {
    static const char not_gzip[] = "this is not a gzip stream";
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    write_bytes(WORK "/src/train-images-idx3-ubyte.gz", not_gzip, sizeof not_gzip);
    HPDL_EXPECT(run_data_sh() == 1);
    HPDL_EXPECT(error_says("train-images-idx3-ubyte.gz"));
    HPDL_EXPECT(!exists(WORK "/dst/train-images-idx3-ubyte.tmp"));
    HPDL_EXPECT(!exists(WORK "/dst/train-images-idx3-ubyte"));
}

/* A .gz cut short: gzip writes part of the data, then fails. */
static void truncated_gz_fails_and_leaves_nothing(void) {
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    HPDL_EXPECT(system("head -c 20000 /dev/urandom | gzip -c | head -c 1000 > " WORK "/src/train-images-idx3-ubyte.gz") == 0);
    HPDL_EXPECT(run_data_sh() == 1);
    HPDL_EXPECT(error_says("train-images-idx3-ubyte.gz"));
    HPDL_EXPECT(!exists(WORK "/dst/train-images-idx3-ubyte.tmp"));
    HPDL_EXPECT(!exists(WORK "/dst/train-images-idx3-ubyte"));
}

/* Good files still go through (plain and compressed). */
static void good_sources_are_copied(void) {
    static const char *names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                   "t10k-labels-idx1-ubyte"};
    char path[256];
    int i;
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    for (i = 0; i < 4; i++) {
        snprintf(path, sizeof path, WORK "/src/%s", names[i]);
        write_bytes(path, "idx", 3);
    }
    HPDL_EXPECT(system("gzip " WORK "/src/train-images-idx3-ubyte") == 0);
    HPDL_EXPECT(run_data_sh() == 0);
    for (i = 0; i < 4; i++) {
        snprintf(path, sizeof path, WORK "/dst/%s", names[i]);
        HPDL_EXPECT(exists(path));
    }
    system("rm -rf " WORK);
}

/* ---- CIFAR-10 (scripts/data.sh --cifar10) ---------------------------------------------- */

static const char *cifar_files[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                     "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

/* WORK/src/cifar-10-batches-bin/ with the six files, one record each
   (label i), data_batch_3.bin cut to `cut_3` bytes when non-zero; the
   file numbered `leave_out` (0..5) is missing, none when -1. */
static void write_cifar_source(size_t cut_3, int leave_out) {
    static char record[3073];
    char path[256];
    int i;
    HPDL_EXPECT(system("mkdir -p " WORK "/src/cifar-10-batches-bin") == 0);
    for (i = 0; i < 6; i++) {
        if (i == leave_out) continue;
        memset(record, 17 * i, sizeof record);
        record[0] = (char)i;
        snprintf(path, sizeof path, WORK "/src/cifar-10-batches-bin/%s", cifar_files[i]);
        write_bytes(path, record, i == 2 && cut_3 ? cut_3 : sizeof record);
    }
}

/* Runs data.sh --cifar10 from `src` into WORK/dst/cifar; as run_data_sh. */
static int run_cifar_sh(const char *src) {
    char cmd[512];
    int rc;
    snprintf(cmd, sizeof cmd, "CIFAR_DIR=%s scripts/data.sh --cifar10 " WORK "/dst/cifar 2>" WORK "/err >/dev/null", src);
    rc = system(cmd);
    return rc == -1 ? -1 : rc != 0;
}

/* Nothing of the six in WORK/dst/cifar, and no scratch folder beside it. */
static int cifar_nothing_written(void) {
    char path[256];
    int i, any = 0;
    for (i = 0; i < 6; i++) {
        snprintf(path, sizeof path, WORK "/dst/cifar/%s", cifar_files[i]);
        any |= exists(path);
    }
    return !any && system("ls -d " WORK "/dst/cifar.tmp.* >/dev/null 2>&1") != 0;
}

/* A folder, the folder above it and a .tar.gz all work, and the loader reads the result. */
static void cifar_sources_are_copied(void) {
    static const char *sources[3] = {WORK "/src", WORK "/src/cifar-10-batches-bin", WORK "/cifar-10-binary.tar.gz"};
    hpdl_dataset d;
    int k, i;
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    write_cifar_source(0, -1);
    HPDL_EXPECT(system("tar -czf " WORK "/cifar-10-binary.tar.gz -C " WORK "/src cifar-10-batches-bin") == 0);
    for (k = 0; k < 3; k++) {
        HPDL_EXPECT(system("rm -rf " WORK "/dst/cifar") == 0);
        HPDL_EXPECT(run_cifar_sh(sources[k]) == 0);
        HPDL_EXPECT(hpdl_cifar10_load_dir(WORK "/dst/cifar", 1, &d) == HPDL_OK);
        HPDL_EXPECT(d.n == 5 && d.channels == 3);
        for (i = 0; i < 5 && i < d.n; i++) HPDL_EXPECT(d.labels[i] == i);
        hpdl_dataset_free(&d);
        HPDL_EXPECT(hpdl_cifar10_load_dir(WORK "/dst/cifar", 0, &d) == HPDL_OK);
        HPDL_EXPECT(d.n == 1 && d.labels[0] == 5);
        hpdl_dataset_free(&d);
    }
    system("rm -rf " WORK);
}

/* A file that is not a whole number of records: named, nothing written (folder and archive). */
static void cifar_truncated_file_fails_and_leaves_nothing(void) {
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    write_cifar_source(3000, -1);
    HPDL_EXPECT(system("tar -czf " WORK "/cifar.tar.gz -C " WORK "/src cifar-10-batches-bin") == 0);
    HPDL_EXPECT(run_cifar_sh(WORK "/src") == 1);
    HPDL_EXPECT(error_says("data_batch_3.bin: 3000 bytes"));
    HPDL_EXPECT(cifar_nothing_written());
    HPDL_EXPECT(run_cifar_sh(WORK "/cifar.tar.gz") == 1);
    HPDL_EXPECT(error_says("cifar.tar.gz: cifar-10-batches-bin/data_batch_3.bin: 3000 bytes"));
    HPDL_EXPECT(cifar_nothing_written());
}

/* A missing file, a cut archive, no CIFAR_DIR: each named, nothing written. */
static void cifar_bad_sources_fail_and_leave_nothing(void) {
    if (!fresh_work_dir()) HPDL_SKIP("not run from the repository root");
    write_cifar_source(0, 5);
    HPDL_EXPECT(run_cifar_sh(WORK "/src") == 1);
    HPDL_EXPECT(error_says("no " WORK "/src/cifar-10-batches-bin/test_batch.bin"));
    HPDL_EXPECT(cifar_nothing_written());
    write_cifar_source(0, -1);
    HPDL_EXPECT(system("tar -czf " WORK "/whole.tar.gz -C " WORK "/src cifar-10-batches-bin && head -c "
                       "$(($(wc -c < " WORK "/whole.tar.gz) / 2)) " WORK "/whole.tar.gz > " WORK "/cut.tar.gz") == 0);
    HPDL_EXPECT(run_cifar_sh(WORK "/cut.tar.gz") == 1);
    HPDL_EXPECT(error_says("cannot unpack " WORK "/cut.tar.gz"));
    HPDL_EXPECT(cifar_nothing_written());
    HPDL_EXPECT(run_cifar_sh("") == 1);
    HPDL_EXPECT(error_says("set CIFAR_DIR"));
    HPDL_EXPECT(run_cifar_sh(WORK "/no-such-copy") == 1);
    HPDL_EXPECT(error_says("no-such-copy: no such file or folder"));
    HPDL_EXPECT(cifar_nothing_written());
    system("rm -rf " WORK);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(corrupt_gz_fails_and_leaves_nothing),
        HPDL_TEST(truncated_gz_fails_and_leaves_nothing),
        HPDL_TEST(good_sources_are_copied),
        HPDL_TEST(cifar_sources_are_copied),
        HPDL_TEST(cifar_truncated_file_fails_and_leaves_nothing),
        HPDL_TEST(cifar_bad_sources_fail_and_leave_nothing),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
