/* The small model that tests/fuzz/fuzz_checkpoint.c loads every input
   against, and whose checkpoints seed its corpus (tests/test_checkpoint.c
   checks that tests/fuzz/corpus/checkpoint/ holds them): tensors of several
   dtypes and ranks, a scalar included. */
#ifndef HPDL_FUZZ_CHECKPOINT_MODEL_H
#define HPDL_FUZZ_CHECKPOINT_MODEL_H

#include "hpdl.h"

#define FUZZ_CKPT_MODEL "fuzz mlp 3-2 f32"
#define FUZZ_CKPT_OTHER_MODEL "fuzz mlp 2-3 f32"
enum { FUZZ_CKPT_TENSORS = 5, FUZZ_CKPT_POISON = 0xA5 };

typedef struct fuzz_ckpt_model {
    float w[2][3];
    double b[2];
    uint16_t h[4];  /* f16 bits */
    int8_t q[2][2][2];
    int64_t step;
    hpdl_ckpt_entry entries[FUZZ_CKPT_TENSORS];
} fuzz_ckpt_model;

static inline void fuzz_ckpt_entry(hpdl_ckpt_entry *e, const char *name, hpdl_dtype dtype, int rank, int64_t d0,
                                   int64_t d1, int64_t d2, void *data) {
    e->name = name;
    e->dtype = dtype;
    e->rank = rank;
    e->dims[0] = d0;
    e->dims[1] = d1;
    e->dims[2] = d2;
    e->dims[3] = 0;
    e->data = data;
}

/* other != 0: the weight's shape is 3x2, another model of the same bytes. */
static inline void fuzz_ckpt_model_init(fuzz_ckpt_model *m, int other) {
    fuzz_ckpt_entry(&m->entries[0], "fc.w", HPDL_DTYPE_F32, 2, other ? 3 : 2, other ? 2 : 3, 0, m->w);
    fuzz_ckpt_entry(&m->entries[1], "fc.b", HPDL_DTYPE_F64, 1, 2, 0, 0, m->b);
    fuzz_ckpt_entry(&m->entries[2], "adam.m", HPDL_DTYPE_F16, 1, 4, 0, 0, m->h);
    fuzz_ckpt_entry(&m->entries[3], "q", HPDL_DTYPE_I8, 3, 2, 2, 2, m->q);
    fuzz_ckpt_entry(&m->entries[4], "step", HPDL_DTYPE_I64, 0, 0, 0, 0, &m->step);
}

/* Values that differ by seed (never zeros). */
static inline void fuzz_ckpt_model_fill(fuzz_ckpt_model *m, int seed) {
    int i;
    for (i = 0; i < 6; i++) m->w[i / 3][i % 3] = 0.25f * (float)(i + 1) * (float)seed - 1.1f;
    m->b[0] = -1.5 * seed;
    m->b[1] = 3.0e-300 * seed;
    for (i = 0; i < 4; i++) m->h[i] = hpdl_f16_from_f32((float)(i + seed) / 3.0f).bits;
    for (i = 0; i < 8; i++) m->q[i / 4][i / 2 % 2][i % 2] = (int8_t)(i * 37 * seed - 100);
    m->step = 1000003LL * seed;
}

static inline void fuzz_ckpt_model_poison(fuzz_ckpt_model *m) {
    memset(m->w, FUZZ_CKPT_POISON, sizeof m->w);
    memset(m->b, FUZZ_CKPT_POISON, sizeof m->b);
    memset(m->h, FUZZ_CKPT_POISON, sizeof m->h);
    memset(m->q, FUZZ_CKPT_POISON, sizeof m->q);
    memset(&m->step, FUZZ_CKPT_POISON, sizeof m->step);
}

/* Every byte of every tensor still FUZZ_CKPT_POISON. */
static inline int fuzz_ckpt_model_poisoned(const fuzz_ckpt_model *m) {
    const unsigned char *parts[5];
    size_t sizes[5], i, k;
    parts[0] = (const unsigned char *)m->w, sizes[0] = sizeof m->w;
    parts[1] = (const unsigned char *)m->b, sizes[1] = sizeof m->b;
    parts[2] = (const unsigned char *)m->h, sizes[2] = sizeof m->h;
    parts[3] = (const unsigned char *)m->q, sizes[3] = sizeof m->q;
    parts[4] = (const unsigned char *)&m->step, sizes[4] = sizeof m->step;
    for (i = 0; i < 5; i++)
        for (k = 0; k < sizes[i]; k++)
            if (parts[i][k] != FUZZ_CKPT_POISON) return 0;
    return 1;
}

#endif
