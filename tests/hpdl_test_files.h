/* hpdl_test_files.h - a temporary folder and a captured stderr, for the
   tests of file parsers (IDX, CIFAR-10, checkpoints; POSIX).

   main() makes the folder, tests name files in it with tmp_path(), and a
   refusal's message is read back with capture_stderr() ... release_stderr():

       strcpy(tmp_dir, "/tmp/hpdl_xxx_XXXXXX");
       if (!mkdtemp(tmp_dir)) { perror("mkdtemp"); return 1; }
       capture_stderr(); st = load(tmp_path("bad.bin")); msg = release_stderr(); */
#ifndef HPDL_TEST_FILES_H
#define HPDL_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[64];

/* tmp_dir/name, in a rotating set of buffers (a few are alive at once). */
static inline const char *tmp_path(const char *name) {
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    if ((size_t)snprintf(p, sizeof paths[0], "%s/%s", tmp_dir, name) >= sizeof paths[0]) exit(1);
    return p;
}

/* stderr goes to tmp_dir/stderr.txt until release_stderr(). */
static char hpdl_test__captured[8192];
static int hpdl_test__saved_stderr = -1;

static inline void capture_stderr(void) {
    FILE *f = fopen(tmp_path("stderr.txt"), "w");
    fflush(stderr);
    hpdl_test__saved_stderr = dup(2);
    if (!f || hpdl_test__saved_stderr < 0 || dup2(fileno(f), 2) < 0) { perror("capture"); exit(1); }
    fclose(f);
}

/* Restores stderr; returns what was written meanwhile. */
static inline const char *release_stderr(void) {
    FILE *f;
    size_t n;
    fflush(stderr);
    dup2(hpdl_test__saved_stderr, 2);
    close(hpdl_test__saved_stderr);
    f = fopen(tmp_path("stderr.txt"), "r");
    n = f ? fread(hpdl_test__captured, 1, sizeof hpdl_test__captured - 1, f) : 0;
    hpdl_test__captured[n] = '\0';
    if (f) fclose(f);
    return hpdl_test__captured;
}

#ifdef HPDL_H
/* A data-set load returned want, printed a message containing both
   needles (shown), and left the sentinel-filled data set untouched. */
static inline void expect_load_error(hpdl_status got, hpdl_status want, const hpdl_dataset *out, const char *needle1,
                                     const char *needle2) {
    hpdl_dataset sentinel;
    const char *msg = release_stderr();
    fprintf(stderr, "    (message) %s", msg);
    memset(&sentinel, 0x5a, sizeof sentinel);
    HPDL_EXPECT(got == want);
    HPDL_EXPECT(strstr(msg, needle1) != NULL);
    HPDL_EXPECT(strstr(msg, needle2) != NULL);
    HPDL_EXPECT(memcmp(out, &sentinel, sizeof sentinel) == 0);
}

/* Runs a data-set load with stderr captured, into a sentinel-filled `out`. */
#define LOAD_FAILS(call, want, needle1, needle2)                               \
    do {                                                                       \
        hpdl_dataset out;                                                      \
        hpdl_status got;                                                       \
        memset(&out, 0x5a, sizeof out);                                        \
        capture_stderr();                                                      \
        got = (call);                                                          \
        expect_load_error(got, want, &out, needle1, needle2);                  \
    } while (0)
#endif

#endif /* HPDL_TEST_FILES_H */
