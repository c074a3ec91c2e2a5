/* scripts/data.sh on bad sources: a corrupt .gz used to pass ("IDX files
   ready", exit 0) and leave a .tmp behind. Now the script fails, names the
   file and leaves nothing partial. Runs the script with system(), from the
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

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(corrupt_gz_fails_and_leaves_nothing),
        HPDL_TEST(truncated_gz_fails_and_leaves_nothing),
        HPDL_TEST(good_sources_are_copied),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
