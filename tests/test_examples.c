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

/* DIR/<stem>-images-idx3-ubyte and -labels-idx1-ubyte: n images of side x side. */
static void write_set(const char *dir, const char *stem, int n, int side) {
    char path[256];
    FILE *f;
    int i;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, stem);
    if (!(f = fopen(path, "wb"))) exit(EXIT_FAILURE);
    put_be32(f, HPDL_IDX_IMAGES_MAGIC); put_be32(f, (uint32_t)n); put_be32(f, (uint32_t)side); put_be32(f, (uint32_t)side);
    for (i = 0; i < side * side * n; i++) fputc((i * 53) % 256, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, stem);
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
    write_set(WORK, "train", 200, 2);
    write_set(WORK, "t10k", 50, 2);
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

/* mlp_sweep --fp8 trains the f32 model and its FP8 twin on a tiny set and
   writes mlp_sweep_fp8.csv: its header and one row per epoch. */
#define SWEEP "build/examples/mlp_sweep"
#define SDIR WORK "/sweep_fp8"

static void mlp_sweep_fp8_writes_a_row_per_epoch(void) {
    char line[512];
    int rows = -1;
    FILE *f;
    if (!exists(SWEEP)) HPDL_SKIP(SWEEP " not built (make examples)");
    if (system("mkdir -p " SDIR) != 0) HPDL_SKIP("cannot make " SDIR);
    write_set(SDIR, "train", 200, 4);
    write_set(SDIR, "t10k", 50, 4);
    name_cli_files();
    HPDL_EXPECT(run_program(SWEEP, "--fp8 --epochs 2 --batch 16 --sweep-hidden 8 --data " SDIR " --output " SDIR) == 0);
    HPDL_EXPECT(file_says(cli_out, "fp8: epoch 2: f32 loss"));
    f = fopen(SDIR "/mlp_sweep_fp8.csv", "r");
    HPDL_EXPECT(f != NULL);
    while (f && fgets(line, sizeof line, f)) rows++;
    if (f) fclose(f);
    HPDL_EXPECT(rows == 2);
    HPDL_EXPECT(file_says(SDIR "/mlp_sweep_fp8.csv", "epoch,f32_loss,f32_test_acc,fp8_loss,fp8_test_acc"));
    remove(cli_out);
    remove(cli_err);
}

/* quantize_cnn on a ResNet-18 checkpoint as cnn_train --precision bf16
   writes it (f32 master parameters; fresh weights, 8x8 images, so the CPU
   twin runs it in seconds): its integer-only logits are the same split
   over 1 or 3 threads (equal digests), and it refuses a --device it
   cannot use (a C build: any; a CUDA build: here no GPU or no data). */
#define QCNN "build/examples/quantize_cnn"
#define QDIR WORK "/qcnn"

static int write_resnet18_checkpoint(const char *path) {
    hpdl_cnn net;
    hpdl_ckpt_entry e[5];
    char model[HPDL_CKPT_MAX_MODEL + 1];
    int64_t steps = 7, j;
    double *p64, *s64;
    float *p, *state, *m1;
    hpdl_status st;
    HPDL_CHECK(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 8, 8), 10, HPDL_NHWC));
    p64 = (double *)malloc((size_t)net.param_count * sizeof *p64);
    s64 = (double *)malloc((size_t)net.state_count * sizeof *s64);
    p = (float *)malloc((size_t)net.param_count * sizeof *p);
    m1 = (float *)calloc((size_t)net.param_count, sizeof *m1);
    state = (float *)malloc((size_t)net.state_count * sizeof *state);
    if (!p64 || !s64 || !p || !m1 || !state) exit(EXIT_FAILURE);
    HPDL_CHECK(hpdl_cnn_init(&net, 3, p64, s64));
    for (j = 0; j < net.param_count; j++) p[j] = (float)p64[j];
    for (j = 0; j < net.state_count; j++) state[j] = (float)s64[j];
    HPDL_CHECK(hpdl_cnn_ckpt_model("resnet18", &net, "nhwc", "bf16", model, sizeof model));
    st = hpdl_ckpt_save(path, model, hpdl_cnn_ckpt_entries(&net, 0, HPDL_DTYPE_F32, p, state, m1, NULL, &steps, e), e);
    free(p64); free(s64); free(p); free(m1); free(state);
    return st == HPDL_OK;
}

/* The digest quantize_cnn printed for `step` in cli_out ("" when none). */
static const char *digest_of(const char *step, char *out, size_t size) {
    char line[1024];
    const char *at;
    FILE *f = fopen(cli_out, "r");
    out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, step, strlen(step)) == 0 && line[strlen(step)] == ':' && (at = strstr(line, "digest ")))
            snprintf(out, size, "%.16s", at + 7);
    if (f) fclose(f);
    return out;
}

static void quantize_cnn_threads_agree(void) {
    const char *flags = "--net resnet18 --load " QDIR "/r18.ckpt --precision bf16 --data " QDIR
                        " --test-images 6 --calib 4 --output " QDIR;
    char cmd[512], one[2][32], three[2][32];
    if (!exists(QCNN)) HPDL_SKIP(QCNN " not built (make examples)");
    if (system("mkdir -p " QDIR) != 0) HPDL_SKIP("cannot make " QDIR);
    write_set(QDIR, "train", 8, 8);
    write_set(QDIR, "t10k", 6, 8);
    HPDL_EXPECT(write_resnet18_checkpoint(QDIR "/r18.ckpt"));
    name_cli_files();
    snprintf(cmd, sizeof cmd, "%s --threads 1", flags);
    HPDL_EXPECT(run_program(QCNN, cmd) == 0);
    digest_of("int8_minmax", one[0], sizeof one[0]);
    digest_of("int8_pct", one[1], sizeof one[1]);
    snprintf(cmd, sizeof cmd, "%s --threads 3", flags);
    HPDL_EXPECT(run_program(QCNN, cmd) == 0);
    digest_of("int8_minmax", three[0], sizeof three[0]);
    digest_of("int8_pct", three[1], sizeof three[1]);
    HPDL_EXPECT(strlen(one[0]) == 16 && strlen(one[1]) == 16);
    HPDL_EXPECT(strcmp(one[0], three[0]) == 0 && strcmp(one[1], three[1]) == 0);
    HPDL_EXPECT(file_says(cli_out, "loaded " QDIR "/r18.ckpt (7 steps)"));
    HPDL_EXPECT(file_says(QDIR "/quantize_cnn.csv", "quant_cnn_resnet18_int8_pct_accuracy"));
    remove(cli_out);
    remove(cli_err);
}

static void quantize_cnn_refuses_a_device_it_cannot_use(void) {
    int rc;
    if (!exists(QCNN)) HPDL_SKIP(QCNN " not built (make examples)");
    if (system("mkdir -p " WORK) != 0) HPDL_SKIP("cannot make " WORK);
    name_cli_files();
    HPDL_EXPECT(run_program(QCNN, "--device -2") == 2 && file_says(cli_err, "--device"));
    rc = run_program(QCNN, "--device 0 --data " WORK "/no-such-folder");
    HPDL_EXPECT((rc == 2 && file_says(cli_err, "--device needs the CUDA build")) || rc == 1);
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
        HPDL_TEST(mlp_sweep_fp8_writes_a_row_per_epoch),
        HPDL_TEST(quantize_cnn_threads_agree),
        HPDL_TEST(quantize_cnn_refuses_a_device_it_cannot_use),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
