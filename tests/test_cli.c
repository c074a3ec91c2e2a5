/* hpdl_cli: the command-line parser every example and bench uses. The
   tests call hpdl_cli_scan, which returns the exit status instead of
   exiting; hpdl_cli_parse is that call and exit(). */
#include "hpdl.h"
#include "tests/hpdl_test.h"

typedef struct settings {
    int batch, check;
    int64_t seed;
    double lr;
    const char *output, *precision;
} settings;

static settings defaults(void) {
    settings s;
    s.batch = 32;
    s.check = 0;
    s.seed = 1;
    s.lr = 0.05;
    s.output = NULL;
    s.precision = "f32";
    return s;
}

#define N_OPTS 6

static void table(settings *s, hpdl_cli_option *o) {
    o[0] = hpdl_cli_positional(hpdl_cli_int("batch", 'b', &s->batch, 1, 1 << 20, "mini-batch"));
    o[1] = hpdl_cli_flag("check", 'c', &s->check, "compare with the CPU");
    o[2] = hpdl_cli_i64("seed", 0, &s->seed, 0, INT64_MAX, "random seed");
    o[3] = hpdl_cli_f64("lr", 0, &s->lr, DBL_MIN, 10, "learning rate");
    o[4] = hpdl_cli_string("output", 'o', &s->output, "DIR", "folder for CSV results");
    o[5] = hpdl_cli_choice("precision", 0, &s->precision, "f32|f64|f16", "element type");
}

/* Scans the words (argv[0] is added) into *s; the status; what was printed
   to out in printed (when not NULL). */
static int scan(settings *s, int argc, const char **words, char *printed, size_t size) {
    char *argv[16];
    hpdl_cli_option o[N_OPTS];
    FILE *out = tmpfile();
    int i, rc;
    size_t got;
    argv[0] = (char *)"prog";
    for (i = 0; i < argc && i < 15; i++) argv[i + 1] = (char *)words[i];
    table(s, o);
    rc = hpdl_cli_scan(argc + 1, argv, "prog", "Trains a model.", o, N_OPTS, out ? out : stdout);
    if (out && printed) {
        rewind(out);
        got = fread(printed, 1, size - 1, out);
        printed[got] = '\0';
    }
    if (out) fclose(out);
    return rc;
}

static void no_flags_keep_the_defaults(void) {
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 0, NULL, NULL, 0) == HPDL_CLI_RUN);
    HPDL_EXPECT(s.batch == 32 && s.check == 0 && s.seed == 1 && s.lr == 0.05 && !s.output);
    HPDL_EXPECT(!strcmp(s.precision, "f32"));
}

static void every_kind_and_spelling_is_read(void) {
    const char *w[] = {"--batch=64", "-c", "--seed", "7", "--lr", "1e-3", "-o", "/tmp/x", "--precision=f16"};
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 9, w, NULL, 0) == HPDL_CLI_RUN);
    HPDL_EXPECT(s.batch == 64 && s.check == 1 && s.seed == 7 && s.lr == 1e-3);
    HPDL_EXPECT(s.output && !strcmp(s.output, "/tmp/x"));
    HPDL_EXPECT(!strcmp(s.precision, "f16"));
}

static void a_bare_word_fills_a_positional_option(void) {
    const char *w[] = {"128"}, *two[] = {"128", "5"};
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 1, w, NULL, 0) == HPDL_CLI_RUN && s.batch == 128);
    HPDL_EXPECT(scan(&s, 2, two, NULL, 0) == 2); /* one positional option only */
}

static void help_lists_every_flag_with_its_default(void) {
    const char *w[] = {"--lr", "0.5", "--help"};
    char out[4096];
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 3, w, out, sizeof out) == 0);
    HPDL_EXPECT(strstr(out, "usage: prog") != NULL);
    HPDL_EXPECT(strstr(out, "Trains a model.") != NULL);
    HPDL_EXPECT(strstr(out, "-b, --batch N") != NULL && strstr(out, "mini-batch [32]") != NULL);
    HPDL_EXPECT(strstr(out, "--check") != NULL);
    HPDL_EXPECT(strstr(out, "random seed [1]") != NULL);
    HPDL_EXPECT(strstr(out, "learning rate [0.05]") != NULL); /* the default, not the value before --help */
    HPDL_EXPECT(strstr(out, "folder for CSV results [none]") != NULL);
    HPDL_EXPECT(strstr(out, "--precision f32|f64|f16") != NULL);
    HPDL_EXPECT(strstr(out, "--version") != NULL);
    HPDL_EXPECT(scan(&s, 1, w + 2, NULL, 0) == 0);
    w[0] = "-h";
    HPDL_EXPECT(scan(&s, 1, w, NULL, 0) == 0);
}

static void version_names_the_program_and_hpdl(void) {
    const char *w[] = {"--version"};
    char out[256];
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 1, w, out, sizeof out) == 0);
    HPDL_EXPECT(!strcmp(out, "prog hpdl " HPDL_VERSION "\n"));
}

/* Each refused line exits 2. */
static void bad_lines_exit_2(void) {
    static const char *lines[][2] = {
        {"--batch", "12x"}, {"--batch", "abc"}, {"--batch", "0"}, {"--batch", "9999999999"}, {"--batch", ""},
        {"--seed", "-1"},   {"--lr", "fast"},   {"--lr", "nan"},   {"--lr", "0"},   {"--precision", "f8"},
        {"--bogus-flag", "1"}, {"-x", "1"},     {"--check=1", "-c"}, {"--batc", "8"}, {"--batch=", "-c"},
    };
    int i;
    for (i = 0; i < HPDL_COUNT(lines); i++) {
        settings s = defaults();
        int rc = scan(&s, 2, lines[i], NULL, 0);
        if (rc != 2) fprintf(stderr, "    '%s %s' gave %d\n", lines[i][0], lines[i][1], rc);
        HPDL_EXPECT(rc == 2);
    }
}

static void a_missing_value_exits_2(void) {
    const char *w[] = {"--check", "--batch"};
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 2, w, NULL, 0) == 2);
    w[1] = "-o";
    HPDL_EXPECT(scan(&s, 2, w, NULL, 0) == 2);
}

static void a_bad_number_leaves_its_variable(void) {
    const char *w[] = {"--batch", "12x"};
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 2, w, NULL, 0) == 2 && s.batch == 32);
}

static void values_may_start_with_a_dash(void) {
    const char *w[] = {"--output", "-", "--seed", "0"};
    settings s = defaults();
    HPDL_EXPECT(scan(&s, 4, w, NULL, 0) == HPDL_CLI_RUN && !strcmp(s.output, "-") && s.seed == 0);
}

static void a_bad_table_or_call_exits_2(void) {
    char *argv[2];
    int v = 0;
    hpdl_cli_option o = hpdl_cli_int("n", 0, &v, 0, 9, "a number");
    argv[0] = (char *)"prog";
    argv[1] = NULL;
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, &o, 1, stdout) == HPDL_CLI_RUN);
    HPDL_EXPECT(hpdl_cli_scan(1, NULL, "prog", NULL, &o, 1, stdout) == 2);
    HPDL_EXPECT(hpdl_cli_scan(1, argv, NULL, NULL, &o, 1, stdout) == 2);
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, &o, 1, NULL) == 2);
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, NULL, 1, stdout) == 2);
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, &o, -1, stdout) == 2);
    o.value = NULL;
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, &o, 1, stdout) == 2);
    o = hpdl_cli_choice("c", 0, (const char **)&argv[1], NULL, "no words");
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, &o, 1, stdout) == 2);
    HPDL_EXPECT(hpdl_cli_scan(1, argv, "prog", NULL, NULL, 0, stdout) == HPDL_CLI_RUN);
}

static void csv_set_dir_comes_before_the_environment(void) {
    char path[256];
    hpdl_csv_set_dir("build");
    HPDL_EXPECT(hpdl__csv_path(".", "x", path, sizeof path) && !strcmp(path, "build/x.csv"));
    hpdl_csv_set_dir(NULL);
    HPDL_EXPECT(hpdl__csv_path("def", "x", path, sizeof path));
    HPDL_EXPECT(!strcmp(path, getenv("HPDL_RESULTS") && *getenv("HPDL_RESULTS") ? path : "def/x.csv"));
}

/* --output DIR may name a folder that does not exist yet: the CSV's
   folders are made (a run once lost its CSVs to a missing folder). */
static void csv_create_makes_its_folder(void) {
    char dir[128], path[256];
    hpdl_csv_file c;
    FILE *f;
    unsigned long tag = (unsigned long)(hpdl_time_now() * 1e6) ^ (unsigned long)(size_t)&c; /* this run's own */
    snprintf(dir, sizeof dir, "build/csv-folder-%lx/a/b", tag);
    hpdl_csv_set_dir(dir);
    HPDL_EXPECT(hpdl_csv_create(&c, ".", "made", "x,y") == HPDL_OK);
    fprintf(c.f, "1,2\n");
    HPDL_EXPECT(hpdl_csv_commit(&c) == HPDL_OK);
    hpdl_csv_set_dir(NULL);
    snprintf(path, sizeof path, "%s/made.csv", dir);
    HPDL_EXPECT((f = fopen(path, "r")) != NULL);
    if (f) fclose(f);
    remove(path);
    remove(dir); /* the folders, empty again: b, a, then the run's own */
    *strrchr(dir, '/') = '\0';
    remove(dir);
    *strrchr(dir, '/') = '\0';
    remove(dir);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(no_flags_keep_the_defaults),
        HPDL_TEST(every_kind_and_spelling_is_read),
        HPDL_TEST(a_bare_word_fills_a_positional_option),
        HPDL_TEST(help_lists_every_flag_with_its_default),
        HPDL_TEST(version_names_the_program_and_hpdl),
        HPDL_TEST(bad_lines_exit_2),
        HPDL_TEST(a_missing_value_exits_2),
        HPDL_TEST(a_bad_number_leaves_its_variable),
        HPDL_TEST(values_may_start_with_a_dash),
        HPDL_TEST(a_bad_table_or_call_exits_2),
        HPDL_TEST(csv_set_dir_comes_before_the_environment),
        HPDL_TEST(csv_create_makes_its_folder),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
