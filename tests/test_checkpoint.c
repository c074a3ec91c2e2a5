/* Tests of the checkpoint format (hpdl_ckpt_save, hpdl_ckpt_load): round
   trips of every dtype and rank, the exact bytes the format documents, and
   every refusal (corrupted, truncated, impossible or another model's file,
   missing file, bad arguments, unwritable folder, full disk) leaving the
   caller's buffers and the old checkpoint as they were. Files go to a
   temporary folder. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include "tests/hpdl_test_files.h"
#include "tests/fuzz/checkpoint_model.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CORPUS_DIR "tests/fuzz/corpus/checkpoint"
enum { POISON = 0xA5 };

/* ---- files in the temporary folder -------------------------------------- */

static size_t read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap, f) : 0;
    if (f) fclose(f);
    return n;
}

static void write_file(const char *path, const unsigned char *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n > 0 && fwrite(buf, 1, n, f) != n) || fclose(f) != 0) { perror(path); exit(1); }
}

/* Removes every file of a folder, then the folder. */
static void remove_folder(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* The names in a folder other than . and .., joined by spaces. */
static const char *folder_listing(const char *dir) {
    static char list[1024];
    DIR *d = opendir(dir);
    struct dirent *e;
    list[0] = '\0';
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (list[0]) strncat(list, " ", sizeof list - strlen(list) - 1);
        strncat(list, e->d_name, sizeof list - strlen(list) - 1);
    }
    if (d) closedir(d);
    return list;
}

/* ---- stderr capture: each refusal prints one line saying why ------------- */

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* ---- entries ----------------------------------------------------------- */

static hpdl_ckpt_entry entry(const char *name, hpdl_dtype dtype, int rank, int64_t d0, int64_t d1, int64_t d2,
                             int64_t d3, void *data) {
    hpdl_ckpt_entry e;
    e.name = name;
    e.dtype = dtype;
    e.rank = rank;
    e.dims[0] = d0;
    e.dims[1] = d1;
    e.dims[2] = d2;
    e.dims[3] = d3;
    e.data = data;
    return e;
}

static size_t entry_bytes(const hpdl_ckpt_entry *e) {
    size_t bytes = hpdl_dtype_size(e->dtype);
    int d;
    for (d = 0; d < e->rank; d++) bytes *= (size_t)e->dims[d];
    return bytes;
}

static void poison(int n, const hpdl_ckpt_entry *e) {
    int i;
    for (i = 0; i < n; i++)
        if (entry_bytes(&e[i])) memset(e[i].data, POISON, entry_bytes(&e[i]));
}

static int poisoned(int n, const hpdl_ckpt_entry *e) {
    int i;
    size_t k;
    for (i = 0; i < n; i++)
        for (k = 0; k < entry_bytes(&e[i]); k++)
            if (((const unsigned char *)e[i].data)[k] != POISON) return 0;
    return 1;
}

static void fill_random(hpdl_rng *rng, int n, const hpdl_ckpt_entry *e) {
    int i;
    size_t k;
    for (i = 0; i < n; i++)
        for (k = 0; k < entry_bytes(&e[i]); k++) ((unsigned char *)e[i].data)[k] = (unsigned char)(1 + hpdl_rng_below(rng, 255));
}

/* A network of every dtype and rank: src holds the values, dst is loaded. */
enum { NET_TENSORS = 8 };
#define NET_MODEL "cnn small 1x28x28 f32"
typedef struct net {
    float conv_w[4 * 1 * 3 * 3];
    double conv_b[4];
    hpdl_f16 fc_w[5 * 6];
    hpdl_bf16 fc_b[6];
    int8_t embed[2 * 3 * 2];
    int32_t labels[7];
    double adam_m[4];
    int64_t step;
    hpdl_ckpt_entry e[NET_TENSORS];
} net;

static void net_init(net *m) {
    m->e[0] = entry("conv1.w", HPDL_DTYPE_F32, 4, 4, 1, 3, 3, m->conv_w);
    m->e[1] = entry("conv1.b", HPDL_DTYPE_F64, 1, 4, 0, 0, 0, m->conv_b);
    m->e[2] = entry("fc.w", HPDL_DTYPE_F16, 2, 5, 6, 0, 0, m->fc_w);
    m->e[3] = entry("fc.b", HPDL_DTYPE_BF16, 1, 6, 0, 0, 0, m->fc_b);
    m->e[4] = entry("embed", HPDL_DTYPE_I8, 3, 2, 3, 2, 0, m->embed);
    m->e[5] = entry("labels", HPDL_DTYPE_I32, 1, 7, 0, 0, 0, m->labels);
    m->e[6] = entry("adam.m.conv1.b", HPDL_DTYPE_F64, 1, 4, 0, 0, 0, m->adam_m);
    m->e[7] = entry("step", HPDL_DTYPE_I64, 0, 0, 0, 0, 0, &m->step);
}

/* A tiny model for the refusal tests: a 2x3 f32 weight and an i64 scalar. */
#define TINY_MODEL "tiny 2x3"
typedef struct tiny {
    float w[6];
    int64_t step;
    hpdl_ckpt_entry e[2];
} tiny;

static void tiny_init(tiny *t) {
    int i;
    for (i = 0; i < 6; i++) t->w[i] = 0.5f * (float)i - 1.25f;
    t->step = 42;
    t->e[0] = entry("w", HPDL_DTYPE_F32, 2, 2, 3, 0, 0, t->w);
    t->e[1] = entry("step", HPDL_DTYPE_I64, 0, 0, 0, 0, 0, &t->step);
}

/* Saves the tiny model to tmp/name and returns its bytes in buf. */
static size_t tiny_file(const char *name, unsigned char *buf, size_t cap) {
    tiny t;
    tiny_init(&t);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path(name), TINY_MODEL, 2, t.e) == HPDL_OK);
    return read_file(tmp_path(name), buf, cap);
}

/* Loading path as the tiny model returns want, prints one line containing
   needle, and leaves the (poisoned) buffers untouched. */
static void expect_refused(const char *path, hpdl_status want, const char *needle) {
    tiny t;
    hpdl_status got;
    const char *msg;
    tiny_init(&t);
    poison(2, t.e);
    capture_stderr();
    got = hpdl_ckpt_load(path, TINY_MODEL, 2, t.e);
    msg = release_stderr();
    HPDL_EXPECT(got == want);
    HPDL_EXPECT(poisoned(2, t.e));
    HPDL_EXPECT(count_lines(msg) == 1);
    HPDL_EXPECT(strstr(msg, needle) != NULL);
    if (got != want || !strstr(msg, needle) || count_lines(msg) != 1)
        fprintf(stderr, "    (status %s, message) %s", hpdl_status_string(got), msg);
}

/* ---- files built by hand, as the format's table says --------------------- */

typedef struct bytes {
    unsigned char b[4096];
    size_t n;
} bytes;

static void put_le(bytes *o, uint64_t v, int size) {
    int i;
    for (i = 0; i < size; i++) o->b[o->n++] = (unsigned char)(v >> (8 * i));
}

static void put_raw(bytes *o, const void *p, size_t n) {
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static uint64_t fnv1a64(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void put_header(bytes *o, const char *magic, uint32_t version, const char *model, uint32_t count) {
    o->n = 0;
    put_raw(o, magic, 8);
    put_le(o, version, 4);
    put_le(o, strlen(model), 4);
    put_raw(o, model, strlen(model));
    put_le(o, count, 4);
}

/* One tensor record; data_len bytes of 0x11 follow its byte count. */
static void put_tensor(bytes *o, const char *name, uint32_t dtype, uint32_t rank, const int64_t *dims, uint64_t count,
                       size_t data_len) {
    uint32_t d;
    put_le(o, strlen(name), 4);
    put_raw(o, name, strlen(name));
    put_le(o, dtype, 4);
    put_le(o, rank, 4);
    for (d = 0; d < rank; d++) put_le(o, (uint64_t)dims[d], 8);
    put_le(o, count, 8);
    memset(o->b + o->n, 0x11, data_len);
    o->n += data_len;
}

static void put_checksum(bytes *o) { put_le(o, fnv1a64(o->b, o->n), 8); }

/* ---- tests ---------------------------------------------------------------- */

static void dtype_sizes(void) {
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_F32) == 4);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_F64) == 8);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_F16) == 2);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_BF16) == 2);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_I32) == 4);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_I64) == 8);
    HPDL_EXPECT(hpdl_dtype_size(HPDL_DTYPE_I8) == 1);
    HPDL_EXPECT(hpdl_dtype_size((hpdl_dtype)0) == 0);
    HPDL_EXPECT(hpdl_dtype_size((hpdl_dtype)8) == 0);
    HPDL_EXPECT(strcmp(hpdl_status_string(HPDL_ERR_MISMATCH), "checkpoint of another model") == 0);
}

static void round_trip_every_dtype_and_rank(void) {
    static net src, dst;
    hpdl_rng rng;
    int i;
    net_init(&src);
    net_init(&dst);
    hpdl_rng_seed(&rng, 7);
    fill_random(&rng, NET_TENSORS, src.e);
    poison(NET_TENSORS, dst.e);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("net.ckpt"), NET_MODEL, NET_TENSORS, src.e) == HPDL_OK);
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("net.ckpt"), NET_MODEL, NET_TENSORS, dst.e) == HPDL_OK);
    for (i = 0; i < NET_TENSORS; i++)
        HPDL_EXPECT(memcmp(src.e[i].data, dst.e[i].data, entry_bytes(&src.e[i])) == 0);
    remove(tmp_path("net.ckpt"));
}

/* No tensors at all, and a tensor with a zero dimension (no data, NULL is fine). */
static void round_trip_empty_model_and_empty_tensor(void) {
    float one = 3.5f, got = 0;
    hpdl_ckpt_entry e[2];
    e[0] = entry("empty", HPDL_DTYPE_F32, 2, 0, 5, 0, 0, NULL);
    e[1] = entry("one", HPDL_DTYPE_F32, 1, 1, 0, 0, 0, &one);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("empty.ckpt"), "", 0, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("empty.ckpt"), "", 0, NULL) == HPDL_OK);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("empty.ckpt"), "m", 2, e) == HPDL_OK);
    e[1].data = &got;
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("empty.ckpt"), "m", 2, e) == HPDL_OK);
    HPDL_EXPECT(got == 3.5f);
    remove(tmp_path("empty.ckpt"));
}

/* save writes exactly the bytes of the documented table (built here by hand). */
static void file_bytes_as_documented(void) {
    static unsigned char file[4096];
    bytes want;
    int64_t dims[2] = {2, 3};
    tiny t;
    size_t n = tiny_file("layout.ckpt", file, sizeof file);
    int i;
    tiny_init(&t);
    put_header(&want, "HPDLCKPT", 1, TINY_MODEL, 2);
    put_tensor(&want, "w", HPDL_DTYPE_F32, 2, dims, 24, 0);
    for (i = 0; i < 6; i++) put_le(&want, hpdl__f32_bits(t.w[i]), 4); /* little-endian whatever the host */
    put_tensor(&want, "step", HPDL_DTYPE_I64, 0, dims, 8, 0);
    put_le(&want, 42, 8);
    put_checksum(&want);
    HPDL_EXPECT(n == want.n && n == 8 + 4 + 4 + 8 + 4 + (4 + 1 + 4 + 4 + 16 + 8 + 24) + (4 + 4 + 4 + 4 + 8 + 8) + 8);
    HPDL_EXPECT(memcmp(file, want.b, want.n) == 0);
    remove(tmp_path("layout.ckpt"));
}

/* Any one byte changed, anywhere: HPDL_ERR_FORMAT (FNV-1a sees every one-byte change). */
static void changed_byte_anywhere_is_format(void) {
    static unsigned char file[4096], bad[4096];
    size_t n = tiny_file("flip.ckpt", file, sizeof file), i;
    int k, failures = 0;
    static const unsigned char flips[3] = {0x01, 0x80, 0xff};
    for (i = 0; i < n && failures == 0; i++) {
        for (k = 0; k < 3; k++) {
            int before = hpdl_test__failures;
            memcpy(bad, file, n);
            bad[i] ^= flips[k];
            write_file(tmp_path("flip-bad.ckpt"), bad, n);
            expect_refused(tmp_path("flip-bad.ckpt"), HPDL_ERR_FORMAT, "bad checkpoint");
            if (hpdl_test__failures != before) { fprintf(stderr, "    at byte %u\n", (unsigned)i); failures++; }
        }
    }
    remove(tmp_path("flip.ckpt"));
    remove(tmp_path("flip-bad.ckpt"));
}

static void truncated_at_every_length_is_format(void) {
    static unsigned char file[4096];
    size_t n = tiny_file("cut.ckpt", file, sizeof file), len;
    int before = hpdl_test__failures;
    for (len = 0; len < n && hpdl_test__failures == before; len++) {
        write_file(tmp_path("cut-bad.ckpt"), file, len);
        expect_refused(tmp_path("cut-bad.ckpt"), HPDL_ERR_FORMAT, len >= 8 ? "truncated" : "bad checkpoint");
        if (hpdl_test__failures != before) fprintf(stderr, "    at length %u\n", (unsigned)len);
    }
    remove(tmp_path("cut.ckpt"));
    remove(tmp_path("cut-bad.ckpt"));
}

static void trailing_bytes_are_format(void) {
    static unsigned char file[4096];
    size_t n = tiny_file("trail.ckpt", file, sizeof file);
    file[n] = 0;
    write_file(tmp_path("trail.ckpt"), file, n + 1);
    expect_refused(tmp_path("trail.ckpt"), HPDL_ERR_FORMAT, "trailing bytes");
    remove(tmp_path("trail.ckpt"));
}

/* A hand-built file with a valid checksum and one impossible thing in it. */
static void expect_impossible(const bytes *file, const char *needle) {
    write_file(tmp_path("craft.ckpt"), file->b, file->n);
    expect_refused(tmp_path("craft.ckpt"), HPDL_ERR_FORMAT, needle);
}

static void wrong_magic_and_version_are_format(void) {
    bytes f;
    int64_t dims[2] = {2, 3};
    put_header(&f, "HPDLCKPX", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "expected magic HPDLCKPT, found HPDLCKPX");
    put_header(&f, "HPDLCKPT", 2, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "unknown version (this reader knows 1): 2");
    remove(tmp_path("craft.ckpt"));
}

static void impossible_headers_are_format(void) {
    bytes f;
    int64_t dims[5] = {2, 3, 1, 1, 1}, negative[2] = {2, -3}, huge[4] = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
    char long_model[300];
    /* one case per block: header, then the impossible tensor */
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 5, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "rank outside 0..4");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", 9, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "unknown dtype");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", 0, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "unknown dtype");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, negative, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "f32[2,-3]): negative dimension");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 4, huge, 0, 0);
    put_checksum(&f);
    expect_impossible(&f, "more bytes than HPDL_CKPT_MAX_BYTES");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 20, 20);
    put_checksum(&f);
    expect_impossible(&f, "byte count not product(dims) * dtype size");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 2);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "tensor name appears twice: w");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "name length outside 1..63");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "a_name_of_64_bytes_is_one_too_long_for_a_checkpoint_file_0123456", HPDL_DTYPE_F32, 2, dims, 24, 24);
    put_checksum(&f);
    expect_impossible(&f, "name length outside 1..63");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 1);
    put_tensor(&f, "w", HPDL_DTYPE_F32, 2, dims, 24, 24);
    f.b[8 + 4 + 4 + strlen(TINY_MODEL) + 4 + 4] = 0; /* the name's one byte becomes NUL */
    put_checksum(&f);
    expect_impossible(&f, "NUL byte in the name");
    memset(long_model, 'm', 256);
    long_model[256] = '\0';
    put_header(&f, "HPDLCKPT", 1, long_model, 0);
    put_checksum(&f);
    expect_impossible(&f, "model string longer than 255 bytes");
    put_header(&f, "HPDLCKPT", 1, TINY_MODEL, 4000000000u);
    put_checksum(&f);
    expect_impossible(&f, "too many for the file");
    remove(tmp_path("craft.ckpt"));
}

/* A valid checkpoint of another model: HPDL_ERR_MISMATCH, naming the difference. */
static void another_model_is_mismatch(void) {
    tiny t;
    double w64[6] = {1, 2, 3, 4, 5, 6};
    tiny_init(&t);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), "tiny 3x2", 2, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "expected model 'tiny 2x3', found 'tiny 3x2'");
    t.e[0].dims[0] = 3;
    t.e[0].dims[1] = 2;
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), TINY_MODEL, 2, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "tensor 0 ('w'): expected f32[2,3], found f32[3,2]");
    tiny_init(&t);
    t.e[0].name = "W";
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), TINY_MODEL, 2, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "tensor 0: expected name 'w', found 'W'");
    tiny_init(&t);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), TINY_MODEL, 1, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "expected 2 tensors, found 1");
    t.e[0] = entry("w", HPDL_DTYPE_F64, 2, 2, 3, 0, 0, w64);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), TINY_MODEL, 2, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "expected f32[2,3], found f64[2,3]");
    tiny_init(&t);
    t.e[1].rank = 1;
    t.e[1].dims[0] = 1;
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("other.ckpt"), TINY_MODEL, 2, t.e) == HPDL_OK);
    expect_refused(tmp_path("other.ckpt"), HPDL_ERR_MISMATCH, "tensor 1 ('step'): expected i64[], found i64[1]");
    remove(tmp_path("other.ckpt"));
}

static void missing_file_is_io(void) {
    expect_refused(tmp_path("no-such.ckpt"), HPDL_ERR_IO, "cannot open checkpoint");
    expect_refused(tmp_dir, HPDL_ERR_IO, "cannot read checkpoint"); /* a folder */
}

/* A refused save creates nothing; a refused load writes nothing. */
static void expect_invalid(const char *model, int n, const hpdl_ckpt_entry *e) {
    hpdl_ckpt_entry copy[3];
    hpdl_status saved, loaded;
    int i;
    capture_stderr();
    saved = hpdl_ckpt_save(tmp_path("invalid.ckpt"), model, n, e);
    if (e && n > 0 && n <= 3) {
        for (i = 0; i < n; i++) copy[i] = e[i];
        loaded = hpdl_ckpt_load(tmp_path("invalid.ckpt"), model, n, copy);
    } else {
        loaded = hpdl_ckpt_load(tmp_path("invalid.ckpt"), model, n, e);
    }
    release_stderr();
    HPDL_EXPECT(saved == HPDL_ERR_INVALID);
    HPDL_EXPECT(loaded == HPDL_ERR_INVALID);
    HPDL_EXPECT(count_lines(hpdl_test__captured) == 2);
    HPDL_EXPECT(strcmp(folder_listing(tmp_dir), "stderr.txt") == 0);
}

static void bad_arguments_are_invalid(void) {
    tiny t;
    hpdl_ckpt_entry e[3];
    char long_model[300], long_name[80];
    memset(long_model, 'm', 256);
    long_model[256] = '\0';
    memset(long_name, 'n', 64);
    long_name[64] = '\0';
    tiny_init(&t);
    capture_stderr();
    HPDL_EXPECT(hpdl_ckpt_save(NULL, TINY_MODEL, 2, t.e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_ckpt_load(NULL, TINY_MODEL, 2, t.e) == HPDL_ERR_INVALID);
    HPDL_EXPECT(count_lines(release_stderr()) == 2);
    expect_invalid(NULL, 2, t.e);
    expect_invalid(TINY_MODEL, -1, t.e);
    expect_invalid(TINY_MODEL, 2, NULL);
    expect_invalid(long_model, 2, t.e);
    e[0] = t.e[0];
    e[1] = t.e[1];
    e[2] = entry(NULL, HPDL_DTYPE_F32, 0, 0, 0, 0, 0, t.w);
    expect_invalid(TINY_MODEL, 3, e);
    e[2].name = "";
    expect_invalid(TINY_MODEL, 3, e);
    e[2].name = long_name;
    expect_invalid(TINY_MODEL, 3, e);
    e[2].name = "w"; /* a duplicate */
    expect_invalid(TINY_MODEL, 3, e);
    e[2] = entry("x", HPDL_DTYPE_F32, 5, 1, 1, 1, 1, t.w);
    expect_invalid(TINY_MODEL, 3, e);
    e[2].rank = -1;
    expect_invalid(TINY_MODEL, 3, e);
    e[2] = entry("x", HPDL_DTYPE_F32, 2, 1, -1, 0, 0, t.w);
    expect_invalid(TINY_MODEL, 3, e);
    e[2] = entry("x", (hpdl_dtype)0, 1, 1, 0, 0, 0, t.w);
    expect_invalid(TINY_MODEL, 3, e);
    e[2] = entry("x", HPDL_DTYPE_F32, 1, 1, 0, 0, 0, NULL); /* no data */
    expect_invalid(TINY_MODEL, 3, e);
    e[2] = entry("x", HPDL_DTYPE_I8, 4, 1 << 20, 1 << 20, 1 << 20, 1 << 20, t.w); /* 2^80 bytes */
    expect_invalid(TINY_MODEL, 3, e);
    remove(tmp_path("stderr.txt"));
}

/* Saving over a checkpoint replaces it and leaves nothing else in the folder. */
static void save_replaces_and_leaves_no_temporary_file(void) {
    const char *dir = tmp_path("replace");
    char path[300];
    tiny a, b;
    tiny_init(&a);
    tiny_init(&b);
    b.step = 43;
    HPDL_EXPECT(mkdir(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    HPDL_EXPECT(hpdl_ckpt_save(path, TINY_MODEL, 2, a.e) == HPDL_OK);
    HPDL_EXPECT(hpdl_ckpt_save(path, TINY_MODEL, 2, b.e) == HPDL_OK);
    HPDL_EXPECT(strcmp(folder_listing(dir), "model.ckpt") == 0);
    poison(2, a.e);
    HPDL_EXPECT(hpdl_ckpt_load(path, TINY_MODEL, 2, a.e) == HPDL_OK);
    HPDL_EXPECT(a.step == 43);
    remove_folder(dir);
}

/* Runs a save as a process without write permission on its folder: a user
   other than root loses it by chmod; root (who writes anyway) forks a child
   that becomes nobody. -1 when that cannot be arranged. */
static int save_without_permission(const char *dir, const char *path, const tiny *t) {
    pid_t pid;
    int status;
    chmod(dir, 0500);
    if (geteuid() != 0) {
        hpdl_status st = hpdl_ckpt_save(path, TINY_MODEL, 2, t->e);
        chmod(dir, 0700);
        return (int)st;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) _exit(setgid(65534) == 0 && setuid(65534) == 0 ? (int)hpdl_ckpt_save(path, TINY_MODEL, 2, t->e) : 99);
    status = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    chmod(dir, 0700);
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) != 99 ? WEXITSTATUS(status) : -1;
}

static void save_into_unwritable_folder_keeps_old_file(void) {
    static unsigned char before[4096], after[4096];
    const char *dir = tmp_path("readonly");
    char path[300];
    size_t n;
    int st;
    tiny t;
    tiny_init(&t);
    HPDL_EXPECT(mkdir(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    HPDL_EXPECT(hpdl_ckpt_save(path, TINY_MODEL, 2, t.e) == HPDL_OK);
    n = read_file(path, before, sizeof before);
    t.step = 43;
    capture_stderr();
    st = save_without_permission(dir, path, &t);
    release_stderr();
    if (st == -1) { remove_folder(dir); HPDL_SKIP("cannot drop write permission here"); }
    HPDL_EXPECT(st == HPDL_ERR_IO);
    HPDL_EXPECT(strstr(hpdl_test__captured, "cannot create") != NULL);
    HPDL_EXPECT(read_file(path, after, sizeof after) == n && memcmp(before, after, n) == 0);
    HPDL_EXPECT(strcmp(folder_listing(dir), "model.ckpt") == 0);
    remove_folder(dir);
}

/* A write that fails part way (a file size limit stands in for a full
   disk): HPDL_ERR_IO, the old checkpoint intact, no temporary file left. */
static void save_on_full_disk_keeps_old_file(void) {
    static float big[1024];
    static unsigned char before[8192], after[8192];
    const char *dir = tmp_path("full");
    char path[300];
    hpdl_ckpt_entry e[1];
    struct rlimit old_limit, limit;
    hpdl_status st;
    size_t n;
    e[0] = entry("big", HPDL_DTYPE_F32, 1, 1024, 0, 0, 0, big);
    HPDL_EXPECT(mkdir(dir, 0700) == 0);
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    HPDL_EXPECT(hpdl_ckpt_save(path, "big", 1, e) == HPDL_OK);
    n = read_file(path, before, sizeof before);
    big[0] = 1.0f;
    HPDL_EXPECT(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    limit = old_limit;
    limit.rlim_cur = 2048;
    signal(SIGXFSZ, SIG_IGN); /* write fails with EFBIG instead of a signal */
    capture_stderr();
    HPDL_EXPECT(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    st = hpdl_ckpt_save(path, "big", 1, e);
    setrlimit(RLIMIT_FSIZE, &old_limit);
    release_stderr();
    signal(SIGXFSZ, SIG_DFL);
    HPDL_EXPECT(st == HPDL_ERR_IO);
    HPDL_EXPECT(strstr(hpdl_test__captured, "cannot write checkpoint") != NULL);
    HPDL_EXPECT(read_file(path, after, sizeof after) == n && memcmp(before, after, n) == 0);
    HPDL_EXPECT(strcmp(folder_listing(dir), "model.ckpt") == 0);
    remove_folder(dir);
}

/* The element copy a big-endian host uses: each element's bytes reversed. */
static void byte_swap_for_big_endian_hosts(void) {
    static const unsigned char src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    static const unsigned char by2[16] = {2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15};
    static const unsigned char by4[16] = {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13};
    static const unsigned char by8[16] = {8, 7, 6, 5, 4, 3, 2, 1, 16, 15, 14, 13, 12, 11, 10, 9};
    unsigned char dst[16];
    hpdl__ckpt_copy_elements(dst, src, 16, 2, 1);
    HPDL_EXPECT(memcmp(dst, by2, 16) == 0);
    hpdl__ckpt_copy_elements(dst, src, 16, 4, 1);
    HPDL_EXPECT(memcmp(dst, by4, 16) == 0);
    hpdl__ckpt_copy_elements(dst, src, 16, 8, 1);
    HPDL_EXPECT(memcmp(dst, by8, 16) == 0);
    hpdl__ckpt_copy_elements(dst, src, 16, 1, 1);
    HPDL_EXPECT(memcmp(dst, src, 16) == 0);
    hpdl__ckpt_copy_elements(dst, src, 16, 8, 0);
    HPDL_EXPECT(memcmp(dst, src, 16) == 0);
    {
        uint32_t one = 1;
        memcpy(dst, &one, 4);
        HPDL_EXPECT(hpdl__host_little_endian() == (dst[0] == 1));
    }
}

/* The fuzz target's seed corpus is what save writes for its model today
   (HPDL_WRITE_CORPUS=1 rewrites it). */
static void fuzz_seed_corpus_is_current(void) {
    static const char *names[2] = {CORPUS_DIR "/valid_model", CORPUS_DIR "/valid_other_model"};
    static unsigned char want[4096], got[4096];
    static fuzz_ckpt_model m;
    int i, rewrite = getenv("HPDL_WRITE_CORPUS") != NULL;
    for (i = 0; i < 2; i++) {
        const char *out = rewrite ? names[i] : tmp_path("seed.ckpt");
        size_t n;
        fuzz_ckpt_model_init(&m, i);
        fuzz_ckpt_model_fill(&m, i + 1);
        HPDL_EXPECT(hpdl_ckpt_save(out, i ? FUZZ_CKPT_OTHER_MODEL : FUZZ_CKPT_MODEL, FUZZ_CKPT_TENSORS, m.entries) ==
                    HPDL_OK);
        n = read_file(out, want, sizeof want);
        HPDL_EXPECT(n > 0 && read_file(names[i], got, sizeof got) == n && memcmp(want, got, n) == 0);
    }
    remove(tmp_path("seed.ckpt"));
}

/* The CNN training checkpoint's layout (hpdl_cnn_ckpt_entries/_model, what
   cnn_train writes and quantize_cnn reads): a ResNet-18 with AdamW moments
   round-trips exactly; read as SGD, or under another precision's model
   string, it is refused with the buffers untouched; bad arguments. */
static void cnn_checkpoint_layout(void) {
    hpdl_cnn net;
    hpdl_ckpt_entry out[5], in[5];
    float *src, *dst;
    int64_t steps = 1234, steps_in = 0, i, P, S;
    char model[HPDL_CKPT_MAX_MODEL + 1], other[HPDL_CKPT_MAX_MODEL + 1];
    HPDL_CHECK(hpdl_cnn_resnet18(&net, hpdl_shape_make(1, 28, 28), 10, HPDL_NHWC));
    P = net.param_count, S = net.state_count;
    src = (float *)malloc((size_t)(3 * P + S) * sizeof *src);
    dst = (float *)malloc((size_t)(3 * P + S) * sizeof *dst);
    HPDL_EXPECT(src && dst);
    for (i = 0; i < 3 * P + S; i++) src[i] = (float)i * 0.5f - 7.0f;
    memset(dst, POISON, (size_t)(3 * P + S) * sizeof *dst);
    HPDL_EXPECT(hpdl_cnn_ckpt_model("resnet18", &net, "nhwc", "bf16", model, sizeof model) == HPDL_OK);
    HPDL_EXPECT(strcmp(model, "cnn resnet18 1x28x28 nhwc bf16") == 0);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 1, HPDL_DTYPE_F32, src, src + P, src + P + S, src + 2 * P + S, &steps,
                                      out) == 5);
    HPDL_EXPECT(hpdl_ckpt_save(tmp_path("resnet18.ckpt"), model, 5, out) == HPDL_OK);
    /* read as an SGD run (no moment2): refused, nothing written */
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 0, HPDL_DTYPE_F32, dst, dst + P, dst + P + S, NULL, &steps_in, in) == 4);
    capture_stderr();
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("resnet18.ckpt"), model, 4, in) == HPDL_ERR_MISMATCH);
    HPDL_EXPECT(strstr(release_stderr(), "expected 4 tensors, found 5") != NULL);
    /* read under another precision's model string: refused */
    HPDL_EXPECT(hpdl_cnn_ckpt_model("resnet18", &net, "nhwc", "f32", other, sizeof other) == HPDL_OK);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 1, HPDL_DTYPE_F32, dst, dst + P, dst + P + S, dst + 2 * P + S, &steps_in,
                                      in) == 5);
    capture_stderr();
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("resnet18.ckpt"), other, 5, in) == HPDL_ERR_MISMATCH);
    HPDL_EXPECT(strstr(release_stderr(), "found 'cnn resnet18 1x28x28 nhwc bf16'") != NULL);
    HPDL_EXPECT(steps_in == 0 && ((unsigned char *)dst)[0] == POISON);
    /* the same layout: every value back */
    HPDL_EXPECT(hpdl_ckpt_load(tmp_path("resnet18.ckpt"), model, 5, in) == HPDL_OK);
    HPDL_EXPECT(steps_in == steps && memcmp(src, dst, (size_t)(3 * P + S) * sizeof *src) == 0);
    /* bad arguments */
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 1, HPDL_DTYPE_F32, dst, dst, dst, NULL, &steps_in, in) == 0);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(&net, 0, HPDL_DTYPE_I64, dst, dst, dst, NULL, &steps_in, in) == 0);
    HPDL_EXPECT(hpdl_cnn_ckpt_entries(NULL, 0, HPDL_DTYPE_F32, dst, dst, dst, NULL, &steps_in, in) == 0);
    memset(other, POISON, sizeof other);
    HPDL_EXPECT(hpdl_cnn_ckpt_model("resnet18", &net, "nhwc", "f32", other, strlen(model) / 3) == HPDL_ERR_INVALID &&
                (unsigned char)other[0] == POISON); /* too short a buffer: nothing written */
    HPDL_EXPECT(hpdl_cnn_ckpt_model(NULL, &net, "nhwc", "f32", other, sizeof other) == HPDL_ERR_INVALID);
    remove(tmp_path("resnet18.ckpt"));
    free(src);
    free(dst);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(dtype_sizes),
        HPDL_TEST(round_trip_every_dtype_and_rank),
        HPDL_TEST(round_trip_empty_model_and_empty_tensor),
        HPDL_TEST(file_bytes_as_documented),
        HPDL_TEST(changed_byte_anywhere_is_format),
        HPDL_TEST(truncated_at_every_length_is_format),
        HPDL_TEST(trailing_bytes_are_format),
        HPDL_TEST(wrong_magic_and_version_are_format),
        HPDL_TEST(impossible_headers_are_format),
        HPDL_TEST(another_model_is_mismatch),
        HPDL_TEST(missing_file_is_io),
        HPDL_TEST(bad_arguments_are_invalid),
        HPDL_TEST(save_replaces_and_leaves_no_temporary_file),
        HPDL_TEST(save_into_unwritable_folder_keeps_old_file),
        HPDL_TEST(save_on_full_disk_keeps_old_file),
        HPDL_TEST(byte_swap_for_big_endian_hosts),
        HPDL_TEST(fuzz_seed_corpus_is_current),
        HPDL_TEST(cnn_checkpoint_layout),
    };
    int rc;
    strcpy(tmp_dir, "/tmp/hpdl_ckpt_XXXXXX");
    if (!mkdtemp(tmp_dir)) { perror("mkdtemp"); return 1; }
    rc = hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
    remove_folder(tmp_dir);
    return rc;
}
