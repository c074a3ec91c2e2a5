/* hpdl.h - v0.1.0 - high-performance deep learning kernels, portable C99 part.

   hpdl is three headers: hpdl.h (this one: portable C99, libc only),
   hpdl_cuda.cuh (CUDA kernels, built on this one) and hpdl_mpi.h (MPI and
   NCCL helpers). Copy them next to your code and include what you need.

   USAGE (C)
       #include "hpdl.h"
       float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, c[3];
       if (hpdl_vec_add_f32(3, a, b, c) != HPDL_OK) { ... }
       cc -std=c99 -O2 prog.c -lm

   USAGE (CUDA)
       #include "hpdl_cuda.cuh"            // includes hpdl.h
       HPDL_CUDA_CHECK(cudaMalloc(&d_a, bytes));
       hpdl_cuda_gemm_f32(...);            // see hpdl_cuda.cuh
       nvcc -O3 -arch=native prog.cu -lcublas

   USAGE (MPI)
       #include "hpdl_mpi.h"               // includes hpdl.h (+ hpdl_cuda.cuh under nvcc)
       hpdl_mpi_init(&argc, &argv);
       hpdl_mpi_allreduce_f32(buf, n, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD);
       mpicc -std=c99 -O2 prog.c -lm && mpirun -np 4 ./a.out

   OPTIONS (define before including)
       HPDL_MALLOC(n) / HPDL_FREE(p)  replace malloc/free (define both or neither)
       HPDL_API                       linkage of every function (default: static inline)
       HPDL_NO_NVTX                   compile NVTX ranges out of hpdl_cuda.cuh
       HPDL_USE_NCCL                  enable the NCCL allreduce in hpdl_mpi.h

   The timer uses POSIX clock_gettime: include hpdl.h before other headers, or
   compile with -D_POSIX_C_SOURCE=200809L, so libc declares it under -std=c99.

   CHANGELOG
       2026-11-22  v0.1.0  status codes, allocation hooks, f16/bf16, RNG, timer,
                           statistics, matrix views, CPU reference kernels.
*/
#ifndef HPDL_H
#define HPDL_H

#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HPDL_VERSION "0.1.0"

/* ------------------------------------------------------------------------ */
/* Linkage, restrict, host/device                                            */
/* ------------------------------------------------------------------------ */

/* static inline: each translation unit gets its own copy, so including the
   header from two files of one program links, and unused functions do not
   warn under -Wall. */
#ifndef HPDL_API
#define HPDL_API static inline
#endif

#if defined(__cplusplus) || defined(__CUDACC__)
#define HPDL_RESTRICT __restrict__
#else
#define HPDL_RESTRICT restrict
#endif

/* Functions that CUDA kernels also call (conversions) are host+device. */
#ifdef __CUDACC__
#define HPDL_HD __host__ __device__
#else
#define HPDL_HD
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef enum hpdl_status {
    HPDL_OK = 0,
    HPDL_ERR_INVALID,     /* bad argument: NULL, negative size, ld < cols, ... */
    HPDL_ERR_NOMEM,       /* allocation failed */
    HPDL_ERR_IO,          /* a file could not be opened or read */
    HPDL_ERR_FORMAT,      /* a file's content is not what was expected */
    HPDL_ERR_CUDA,        /* a CUDA runtime or library call failed */
    HPDL_ERR_MPI,         /* an MPI call failed */
    HPDL_ERR_NCCL,        /* an NCCL call failed */
    HPDL_ERR_UNSUPPORTED, /* valid request that this build or device cannot do */
    HPDL_ERR_NUMERIC      /* a result is not finite (NaN or inf) */
} hpdl_status;

HPDL_API const char *hpdl_status_string(hpdl_status s) {
    switch (s) {
    case HPDL_OK: return "ok";
    case HPDL_ERR_INVALID: return "invalid argument";
    case HPDL_ERR_NOMEM: return "out of memory";
    case HPDL_ERR_IO: return "input/output error";
    case HPDL_ERR_FORMAT: return "bad file format";
    case HPDL_ERR_CUDA: return "CUDA error";
    case HPDL_ERR_MPI: return "MPI error";
    case HPDL_ERR_NCCL: return "NCCL error";
    case HPDL_ERR_UNSUPPORTED: return "unsupported";
    case HPDL_ERR_NUMERIC: return "non-finite value";
    }
    return "unknown status";
}

/* Examples and benches stop on the first error; library code returns it. */
#define HPDL_CHECK(call)                                                      \
    do {                                                                      \
        hpdl_status hpdl__s = (call);                                         \
        if (hpdl__s != HPDL_OK) {                                             \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,     \
                    #call, hpdl_status_string(hpdl__s));                      \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Allocation hooks                                                          */
/* ------------------------------------------------------------------------ */

#if defined(HPDL_MALLOC) && !defined(HPDL_FREE)
#error "hpdl: define HPDL_FREE together with HPDL_MALLOC"
#elif !defined(HPDL_MALLOC) && defined(HPDL_FREE)
#error "hpdl: define HPDL_MALLOC together with HPDL_FREE"
#elif !defined(HPDL_MALLOC)
#define HPDL_MALLOC(n) malloc(n)
#define HPDL_FREE(p) free(p)
#endif

/* Allocates count*size bytes, refusing sizes that overflow size_t. */
HPDL_API void *hpdl_alloc(size_t count, size_t size) {
    if (size != 0 && count > (size_t)-1 / size) return NULL;
    return HPDL_MALLOC(count * size > 0 ? count * size : 1);
}

/* ------------------------------------------------------------------------ */
/* Half precision storage types                                              */
/* ------------------------------------------------------------------------ */

/* 16-bit storage; arithmetic converts to float. A struct, not a bare
   uint16_t, so that the compiler refuses to mix f16, bf16 and integers.
   hpdl_cuda.cuh reinterprets these as __half / __nv_bfloat16 (same bits). */
typedef struct hpdl_f16 { uint16_t bits; } hpdl_f16;
typedef struct hpdl_bf16 { uint16_t bits; } hpdl_bf16;

HPDL_HD static inline uint32_t hpdl__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

HPDL_HD static inline float hpdl__f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds the integer m right by s bits, to nearest, ties to even. */
HPDL_HD static inline uint32_t hpdl__shift_rne(uint32_t m, unsigned s) {
    uint32_t kept, rest, half;
    if (s == 0) return m;
    if (s > 31) return 0;
    kept = m >> s;
    rest = m & ((1u << s) - 1u);
    half = 1u << (s - 1u);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return kept;
}

HPDL_HD static inline hpdl_f16 hpdl_f16_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xffu);
    uint32_t man = u & 0x7fffffu;
    hpdl_f16 h;
    if (exp == 0xff) { /* inf stays inf; NaN stays a quiet NaN */
        h.bits = (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
        return h;
    }
    exp -= 127 - 15; /* rebias */
    if (exp >= 0x1f) { h.bits = (uint16_t)(sign | 0x7c00u); return h; }
    if (exp <= 0) {
        /* subnormal half (or zero): value = m * 2^-24, with the implicit 1 */
        if (exp < -10) { h.bits = (uint16_t)sign; return h; }
        h.bits = (uint16_t)(sign | hpdl__shift_rne(man | 0x800000u, (unsigned)(14 - exp)));
        return h;
    }
    /* normal: rounding may carry into the exponent, which is still right
       (and turns the largest values into inf, as it should) */
    h.bits = (uint16_t)(sign | (((uint32_t)exp << 10) + hpdl__shift_rne(man, 13)));
    return h;
}

HPDL_HD static inline float hpdl_f16_to_f32(hpdl_f16 h) {
    uint32_t sign = ((uint32_t)h.bits & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)h.bits >> 10) & 0x1fu;
    uint32_t man = (uint32_t)h.bits & 0x3ffu;
    if (exp == 0x1f) return hpdl__f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: exact in float */
        float v = (float)man * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    return hpdl__f32_from_bits(sign | ((exp + 127u - 15u) << 23) | (man << 13));
}

HPDL_HD static inline hpdl_bf16 hpdl_bf16_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f);
    hpdl_bf16 b;
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) {
        b.bits = (uint16_t)((u >> 16) | 0x40u); /* keep NaN a (quiet) NaN */
        return b;
    }
    /* bf16 is the top half of a float: round the low 16 bits away */
    b.bits = (uint16_t)(hpdl__shift_rne(u, 16));
    return b;
}

HPDL_HD static inline float hpdl_bf16_to_f32(hpdl_bf16 b) {
    return hpdl__f32_from_bits((uint32_t)b.bits << 16);
}

/* Load/store adapters the kernel templates take: storage type <-> compute. */
#define HPDL_LOAD_SELF(x) (x)
#define HPDL_STORE_F32(v) ((float)(v))
#define HPDL_STORE_F64(v) ((double)(v))
#define HPDL_LOAD_F16(x) hpdl_f16_to_f32(x)
#define HPDL_STORE_F16(v) hpdl_f16_from_f32((float)(v))
#define HPDL_LOAD_BF16(x) hpdl_bf16_to_f32(x)
#define HPDL_STORE_BF16(v) hpdl_bf16_from_f32((float)(v))

/* ------------------------------------------------------------------------ */
/* Random numbers: xoshiro256** seeded by splitmix64 (reproducible anywhere) */
/* ------------------------------------------------------------------------ */

typedef struct hpdl_rng { uint64_t s[4]; } hpdl_rng;

static inline uint64_t hpdl__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

HPDL_API void hpdl_rng_seed(hpdl_rng *r, uint64_t seed) {
    int i;
    for (i = 0; i < 4; i++) { /* splitmix64: spreads any seed over 256 bits */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r->s[i] = z ^ (z >> 31);
    }
}

HPDL_API uint64_t hpdl_rng_u64(hpdl_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = hpdl__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = hpdl__rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
HPDL_API double hpdl_rng_uniform(hpdl_rng *r) {
    return (double)(hpdl_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), without modulo bias (Lemire's rejection). */
HPDL_API uint64_t hpdl_rng_below(hpdl_rng *r, uint64_t n) {
    uint64_t x, limit;
    if (n == 0) return 0;
    limit = (uint64_t)0 - ((uint64_t)0 - n) % n; /* largest multiple of n, mod 2^64 */
    do x = hpdl_rng_u64(r); while (limit != 0 && x >= limit);
    return x % n;
}

/* Standard normal by Box-Muller (one value per call, so the stream is simple). */
HPDL_API double hpdl_rng_normal(hpdl_rng *r) {
    double u1 = 1.0 - hpdl_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = hpdl_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Fisher-Yates shuffle of an index array. */
HPDL_API void hpdl_rng_shuffle_index(hpdl_rng *r, int32_t *idx, int64_t n) {
    int64_t i;
    for (i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)hpdl_rng_below(r, (uint64_t)i + 1);
        int32_t t = idx[i]; idx[i] = idx[j]; idx[j] = t;
    }
}

/* ------------------------------------------------------------------------ */
/* Monotonic timer                                                           */
/* ------------------------------------------------------------------------ */

/* Seconds since an arbitrary fixed point; only differences mean anything. */
HPDL_API double hpdl_time_now(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else /* no POSIX clock: processor time is the best C99 offers */
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* ------------------------------------------------------------------------ */
/* Statistics over repeated measurements                                     */
/* ------------------------------------------------------------------------ */

typedef struct hpdl_stats {
    int64_t n;
    double mean, stddev, cv, median, min, max; /* stddev: sample (n-1) */
} hpdl_stats;

HPDL_API int hpdl__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Summarises x[0..n); x is left untouched (the median sorts a copy). */
HPDL_API hpdl_status hpdl_stats_compute(const double *x, int64_t n, hpdl_stats *out) {
    double *sorted, sum = 0.0, sq = 0.0;
    int64_t i;
    if (!x || !out || n <= 0) return HPDL_ERR_INVALID;
    sorted = (double *)hpdl_alloc((size_t)n, sizeof *sorted);
    if (!sorted) return HPDL_ERR_NOMEM;
    memcpy(sorted, x, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, hpdl__cmp_double);
    for (i = 0; i < n; i++) sum += x[i];
    out->n = n;
    out->mean = sum / (double)n;
    for (i = 0; i < n; i++) sq += (x[i] - out->mean) * (x[i] - out->mean);
    out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    out->cv = out->mean != 0.0 ? out->stddev / fabs(out->mean) : 0.0;
    out->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    HPDL_FREE(sorted);
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Row-major matrix views                                                    */
/* ------------------------------------------------------------------------ */

/* Element (i, j) of a view lives at data[i * ld + j]; ld >= cols lets a view
   name a block of a larger matrix without copying. */
#define HPDL_DEFINE_MATRIX(SUFFIX, T)                                          \
    typedef struct hpdl_mat_##SUFFIX { T *data; int rows, cols, ld; } hpdl_mat_##SUFFIX; \
    HPDL_API hpdl_mat_##SUFFIX hpdl_mat_view_##SUFFIX(T *data, int rows, int cols, int ld) { \
        hpdl_mat_##SUFFIX m;                                                   \
        m.data = data; m.rows = rows; m.cols = cols; m.ld = ld;                \
        return m;                                                              \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mat_check_##SUFFIX(hpdl_mat_##SUFFIX m) {        \
        return hpdl__check_matrix(m.data, m.rows, m.cols, m.ld);               \
    }

/* A valid view: non-negative sizes, ld >= cols (and >= 1), data unless empty. */
HPDL_API hpdl_status hpdl__check_matrix(const void *data, int rows, int cols, int ld) {
    if (rows < 0 || cols < 0 || ld < cols || ld < 1) return HPDL_ERR_INVALID;
    if (!data && rows > 0 && cols > 0) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

HPDL_DEFINE_MATRIX(f32, float)
HPDL_DEFINE_MATRIX(f64, double)
HPDL_DEFINE_MATRIX(f16, hpdl_f16)
HPDL_DEFINE_MATRIX(bf16, hpdl_bf16)

/* ------------------------------------------------------------------------ */
/* CSV output for benches                                                    */
/* ------------------------------------------------------------------------ */

/* Opens <dir>/<name>.csv for writing and writes `header` as its first line.
   dir comes from the environment variable HPDL_RESULTS when set (make bench
   sets it to bench/results/<gpu>), else the given default. The caller
   fcloses it. */
HPDL_API FILE *hpdl_csv_open_with_header(const char *default_dir, const char *name, const char *header) {
    char path[1024];
    const char *dir = getenv("HPDL_RESULTS");
    FILE *f;
    if (!dir || !*dir) dir = default_dir;
    if (!name || !header) return NULL;
    snprintf(path, sizeof path, "%s/%s.csv", dir ? dir : ".", name);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "hpdl: cannot write %s: %s\n", path, strerror(errno)); return NULL; }
    fprintf(f, "%s\n", header);
    return f;
}

/* The headline CSV every bench writes, read by the README and by CI. */
HPDL_API FILE *hpdl_csv_open(const char *default_dir, const char *name) {
    return hpdl_csv_open_with_header(default_dir, name, "metric,value,unit,anchor,anchor_value,ratio");
}

/* One CSV row. higher_is_better: ratio = value/anchor (rates), otherwise
   anchor/value (times), so a ratio above 1 always means "better". */
HPDL_API void hpdl_csv_row(FILE *f, const char *metric, double value, const char *unit,
                           const char *anchor, double anchor_value, int higher_is_better) {
    double ratio = higher_is_better ? (anchor_value != 0.0 ? value / anchor_value : 0.0)
                                    : (value != 0.0 ? anchor_value / value : 0.0);
    if (!f) return;
    fprintf(f, "%s,%.6g,%s,%s,%.6g,%.4f\n", metric, value, unit, anchor ? anchor : "", anchor_value, ratio);
}

/* ======================================================================== */
/* CPU reference kernels                                                     */
/* ======================================================================== */
#include "parts/cpu_kernels.h"

/* ======================================================================== */
/* Performance models, placement, quantization                               */
/* ======================================================================== */
#include "parts/cpu_models.h"

#endif /* HPDL_H */
