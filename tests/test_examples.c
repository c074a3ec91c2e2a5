/* The examples on bad input, run with system() from the repository root
   (where make test runs, after building them; skipped when an example is
   not built). examples/mlp_train_tp used to hard-code 784 inputs (a valid
   set of 2x2 images read past its buffers), train on with a learning rate
   of 1e30 and exit 0, and read --seed abc as 0. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

#define WORK "build/test_examples"
#define TP "build/examples/mlp_train_tp"

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static void put_be32(FILE *f, uint32_t v) {
    unsigned char b[4];
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16); b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
    fwrite(b, 1, 4, f);
}

/* WORK/<stem>-images-idx3-ubyte and -labels-idx1-ubyte: n images of 2x2. */
static void write_tiny_set(const char *stem, int n) {
    char path[256];
    FILE *f;
    int i;
    snprintf(path, sizeof path, WORK "/%s-images-idx3-ubyte", stem);
    if (!(f = fopen(path, "wb"))) exit(EXIT_FAILURE);
    put_be32(f, HPDL_IDX_IMAGES_MAGIC); put_be32(f, (uint32_t)n); put_be32(f, 2); put_be32(f, 2);
    for (i = 0; i < 4 * n; i++) fputc((i * 53) % 256, f);
    fclose(f);
    snprintf(path, sizeof path, WORK "/%s-labels-idx1-ubyte", stem);
    if (!(f = fopen(path, "wb"))) exit(EXIT_FAILURE);
    put_be32(f, HPDL_IDX_LABELS_MAGIC); put_be32(f, (uint32_t)n);
    for (i = 0; i < n; i++) fputc(i % 10, f);
    fclose(f);
}

/* Runs the example with these flags; its exit status (-1: did not run),
   stderr in WORK/err. */
static int run_tp(const char *flags) {
    char cmd[512];
    int rc;
    snprintf(cmd, sizeof cmd, TP " --data " WORK " %s >/dev/null 2>" WORK "/err", flags);
    rc = system(cmd);
    if (rc == -1) return -1;
    return rc & 0x7f ? 128 + (rc & 0x7f) : rc >> 8 & 0xff; /* POSIX wait status: a signal, else the exit code */
}

static int err_says(const char *needle) {
    char line[1024];
    int found = 0;
    FILE *f = fopen(WORK "/err", "r");
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static int ready(void) {
    if (!exists(TP)) return 0;
    if (system("mkdir -p " WORK) != 0) return 0;
    write_tiny_set("train", 200);
    write_tiny_set("t10k", 50);
    return 1;
}

static void tp_takes_its_input_width_from_the_data(void) {
    if (!ready()) HPDL_SKIP(TP " not built (make examples)");
    HPDL_EXPECT(run_tp("--hidden 8 --epochs 1 --dp-epochs 1") == 0);
}

static void tp_stops_when_training_diverges(void) {
    if (!ready()) HPDL_SKIP(TP " not built (make examples)");
    HPDL_EXPECT(run_tp("--hidden 8 --epochs 3 --dp-epochs 0 --lr 1e30") == 1);
    HPDL_EXPECT(err_says("diverged"));
}

static void tp_refuses_malformed_numbers(void) {
    if (!ready()) HPDL_SKIP(TP " not built (make examples)");
    HPDL_EXPECT(run_tp("--seed abc") == 2);
    HPDL_EXPECT(err_says("--seed"));
    HPDL_EXPECT(run_tp("--hidden 16abc") == 2);
    HPDL_EXPECT(err_says("--hidden"));
    HPDL_EXPECT(run_tp("--lr fast") == 2);
    HPDL_EXPECT(err_says("--lr"));
}

/* Every example and bench, and one of its flags with a bad value (a
   number where it has one, else a word that is not one of its choices):
   each parses its command line before it touches a GPU or MPI, so the
   checks below run without either. Programs not built are skipped. */
static const char *const programs[][2] = {
    {"build/examples/cnn_train", "--batch 12x"},      {"build/examples/matpow", "--n 12x"},
    {"build/examples/mlp_sweep", "--batch 12x"},      {"build/examples/mlp_train", "--batch 12x"},
    {"build/examples/mlp_train_cpu", "--batch 12x"},  {"build/examples/mlp_train_dp", "--batch 12x"},
    {"build/examples/mlp_train_tp", "--batch 12x"},   {"build/examples/model_parallel", "--batch 12x"},
    {"build/examples/mlp_large_batch", "--batch 12x"},
    {"build/examples/paleo", "--ppp 12x"},            {"build/examples/paleo_gpu", "--batch 12x"},
    {"build/examples/quantize", "--batch 12x"},       {"build/examples/quantize_cnn", "--batch 12x"},
    {"build/examples/vecadd", "--n 12x"},
    {"build/bench/allreduce", "-n 12x"},              {"build/bench/cnn", "--seed 12x"},
    {"build/bench/conv", "--precision f8"},           {"build/bench/dp_scaling", "--reps 12x"},
    {"build/bench/gemm", "--shape 12ax4x4"},          {"build/bench/matpow", "--n 12x"},
    {"build/bench/mlp", "--seed 12x"},                {"build/bench/model_parallel", "--batch 12x"},
    {"build/bench/quantize", "--max-size 12x"},       {"build/bench/vecadd", "--seed 12x"},
    {"bench/compile", "--arch"}, /* a script: no number to get wrong, a missing value instead */
};

/* WORK/cli-<n>.out and .err: names of this run's own (the C and the
   sanitizer build of this test may run at once). */
static char cli_out[128], cli_err[128];

static void name_cli_files(void) {
    unsigned long n = (unsigned long)(hpdl_time_now() * 1e6) ^ (unsigned long)(size_t)&n;
    snprintf(cli_out, sizeof cli_out, WORK "/cli-%lx.out", n);
    snprintf(cli_err, sizeof cli_err, WORK "/cli-%lx.err", n);
}

/* The exit status of `program flags` (stdout in cli_out, stderr in cli_err). */
static int run_program(const char *program, const char *flags) {
    char cmd[512];
    int rc;
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", program, flags, cli_out, cli_err);
    rc = system(cmd);
    if (rc == -1) return -1;
    return rc & 0x7f ? 128 + (rc & 0x7f) : rc >> 8 & 0xff;
}

static int file_says(const char *path, const char *needle) {
    char line[1024];
    int found = 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* One program against the shared convention; 1 when it keeps it. */
static int keeps_the_convention(const char *program, const char *bad_value) {
    int help = run_program(program, "--help") == 0 && file_says(cli_out, "usage");
    int h = run_program(program, "-h") == 0 && file_says(cli_out, "usage");
    int version = run_program(program, "--version") == 0 && file_says(cli_out, "hpdl " HPDL_VERSION);
    int bogus = run_program(program, "--bogus-flag") == 2 && file_says(cli_err, "usage");
    int bad = run_program(program, bad_value) == 2;
    if (!(help && h && version && bogus && bad))
        fprintf(stderr, "    %s: --help %s, -h %s, --version %s, --bogus-flag %s, %s %s\n", program, help ? "ok" : "FAILS",
                h ? "ok" : "FAILS", version ? "ok" : "FAILS", bogus ? "ok" : "FAILS", bad_value, bad ? "ok" : "FAILS");
    return help && h && version && bogus && bad;
}

static void every_program_keeps_the_command_line_convention(void) {
    int i, built = 0;
    if (system("mkdir -p " WORK) != 0) HPDL_SKIP("cannot make " WORK);
    name_cli_files();
    for (i = 0; i < HPDL_COUNT(programs); i++) {
        if (!exists(programs[i][0])) continue;
        built++;
        HPDL_EXPECT(keeps_the_convention(programs[i][0], programs[i][1]));
    }
    remove(cli_out);
    remove(cli_err);
    if (!built) HPDL_SKIP("no example or bench built (make)");
}

/* cnn_train's time-to-accuracy and utilisation flags are checked before
   it looks for a GPU: a target above 1, no runs, a negative time limit,
   several runs that would share one checkpoint, each a usage error naming
   the flag. */
#define CNN "build/examples/cnn_train"

static void cnn_train_checks_its_study_flags(void) {
    if (!exists(CNN)) HPDL_SKIP(CNN " not built (make examples)");
    if (system("mkdir -p " WORK) != 0) HPDL_SKIP("cannot make " WORK);
    name_cli_files();
    HPDL_EXPECT(run_program(CNN, "--target-acc 1.5") == 2 && file_says(cli_err, "--target-acc"));
    HPDL_EXPECT(run_program(CNN, "--target-acc 0.9x") == 2 && file_says(cli_err, "--target-acc"));
    HPDL_EXPECT(run_program(CNN, "--runs 0") == 2 && file_says(cli_err, "--runs"));
    HPDL_EXPECT(run_program(CNN, "--time-limit -5") == 2 && file_says(cli_err, "--time-limit"));
    HPDL_EXPECT(run_program(CNN, "--runs 2 --save " WORK "/never.ckpt") == 2 && file_says(cli_err, "--save"));
    HPDL_EXPECT(run_program(CNN, "--util-csv") == 2 && file_says(cli_err, "usage"));
    HPDL_EXPECT(run_program(CNN, "--help") == 0 && file_says(cli_out, "--target-acc") && file_says(cli_out, "--eager") &&
                file_says(cli_out, "--util-csv"));
    HPDL_EXPECT(!exists(WORK "/never.ckpt"));
    remove(cli_out);
    remove(cli_err);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(tp_takes_its_input_width_from_the_data),
        HPDL_TEST(tp_stops_when_training_diverges),
        HPDL_TEST(tp_refuses_malformed_numbers),
        HPDL_TEST(every_program_keeps_the_command_line_convention),
        HPDL_TEST(cnn_train_checks_its_study_flags),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
