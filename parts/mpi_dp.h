/* ------------------------------------------------------------------------ */
/* Data-parallel MLP training (spliced into hpdl_mpi.h after the bucketer)   */
/* ------------------------------------------------------------------------ */
/* Every rank holds the whole model. One training step on P ranks:
       1. global batch s of the epoch = rows [s*P*b, (s+1)*P*b) of a
          permutation that depends only on (seed, epoch), the same on every
          rank (hpdl_mpi_epoch_permutation); rank r takes its part of it
          (hpdl_mpi_shard_range), so each sample is used once per epoch and
          the P local batches together are exactly the batch of P*b that one
          process would take;
       2. forward and backward on the local b rows (mean loss over them);
       3. the gradients are summed over the ranks (MPI, RING, NCCL; with
          overlap: in buckets started as backward produces them, last layer
          first, waited for before the update);
       4. every rank applies the same SGD step. The 1/P of the mean is folded
          into it: W -= (lr/P) * (sum + (l2*P) * W), which is lr*(mean + l2*W).
   A short last step (P*b does not divide n) gives ranks unequal rows; each
   rank then weights its mean gradient by rows*P/global_rows, so the sum is
   still the mean over the global batch (a rank with no rows adds zeros).
   Large batches: lr is scaled linearly, lr*P*b/batch_ref, and reached by a
   linear warm-up over the first warmup_epochs epochs, step by step (Goyal et
   al., 2017).

   CPU ranks: hpdl_mpi_dp_<s> (f32, f64) around hpdl_mlp_<s>. GPU ranks (nvcc
   builds): hpdl_mpi_dp_cuda_<s> (f32, f64) around hpdl_cuda_mlp_<s>, data
   resident on the device (hpdl_cuda_dataset), steps launched eagerly.
   Per epoch both report loss, running training accuracy, epoch time, compute
   and communication time (slowest rank) and the allreduce's algbw/busbw. */
#ifndef HPDL_MPI_DP_H
#define HPDL_MPI_DP_H

#ifndef HPDL_MPI_DP_BUCKET_BYTES
#define HPDL_MPI_DP_BUCKET_BYTES ((size_t)1 << 20) /* small buckets: the MLP's gradients are a few MB */
#endif
#define HPDL_MPI_DP_MAX_PIECES 64

typedef struct hpdl_mpi_dp_config {
    int batch;                /* rows per rank per step (b) */
    hpdl_allreduce_algo algo; /* MPI, RING, NCCL */
    int overlap;              /* 1: bucketed, buckets reduced during backward */
    size_t bucket_bytes;      /* overlap: bucket size (0: HPDL_MPI_DP_BUCKET_BYTES) */
    int first_layer_pieces;   /* GPU overlap: first layer's dW computed and reduced in this many row blocks (0: 1) */
    double lr, l2;            /* reference learning rate, L2 weight decay */
    int lr_scale;             /* 1: linear scaling lr * P * b / batch_ref */
    int batch_ref;            /* batch the reference lr was tuned for (0: b) */
    double warmup_epochs;     /* linear warm-up from lr to the scaled lr (0: none) */
    uint64_t seed;            /* epoch permutations */
    MPI_Comm comm;
} hpdl_mpi_dp_config;

/* What an epoch reports; times are the slowest rank's. */
typedef struct hpdl_mpi_dp_stats {
    int64_t steps, samples;
    double loss, accuracy;    /* mean training loss, running accuracy of the steps' forward passes */
    double lr_first, lr_last; /* learning rate of the first and last step */
    double epoch_s;           /* wall time of the epoch */
    double compute_s;         /* gather, forward, backward, update */
    double comm_s;            /* time the steps waited for the reduction (all of it without overlap) */
    double comm_span_s;       /* reduction time from first bucket start to last bucket end (GPU overlap),
                                 else comm_s */
    double grad_bytes;        /* bytes reduced per step */
    double algbw, busbw;      /* bytes/s of one step's reduction: grad_bytes / (comm_span_s / steps) */
} hpdl_mpi_dp_stats;

/* Roofline inputs of the course's model (hpdl_roofline_combined). */
typedef struct hpdl_mpi_dp_roofline {
    double p_flops; /* measured GEMM rate, FLOP/s */
    double p_pci;   /* measured host->device bandwidth, bytes/s (0 on CPU ranks) */
    double p_mpi;   /* measured allreduce bus bandwidth for the gradient's size, bytes/s */
    double p_mpi_algbw;
} hpdl_mpi_dp_roofline;

HPDL_API void hpdl_mpi_dp_config_default(hpdl_mpi_dp_config *c) {
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->batch = 128;
    c->algo = HPDL_ALLREDUCE_MPI;
    c->first_layer_pieces = 1;
    c->lr = 0.05;
    c->seed = 1;
    c->comm = MPI_COMM_WORLD;
}

HPDL_API int hpdl__dp_config_ok(const hpdl_mpi_dp_config *c) {
    return c && c->batch >= 1 && hpdl__mpi_algo_valid(c->algo) && hpdl__hyper_ok(c->lr, c->l2) && c->batch_ref >= 0 &&
           c->warmup_epochs >= 0 && c->warmup_epochs <= 1e9 && c->first_layer_pieces >= 0 &&
           c->first_layer_pieces <= HPDL_MPI_DP_MAX_PIECES && c->comm != MPI_COMM_NULL;
}

/* Collective: the worst status over the ranks, so a bad argument on one rank
   makes every rank return before any of them enters a collective. */
HPDL_API hpdl_status hpdl__dp_agree(hpdl_status s, MPI_Comm comm) {
    int mine = (int)s, worst = 0;
    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return HPDL_ERR_MPI;
    return (hpdl_status)worst;
}

/* ---- learning-rate schedule ----------------------------------------------- */

/* The learning rate `progress` epochs into training (epoch + fraction of it
   done) on `ranks` ranks: target = lr * (lr_scale ? ranks*b/batch_ref : 1);
   during warm-up lr + (target - lr) * progress / warmup_epochs, then target. */
HPDL_API hpdl_status hpdl_mpi_dp_lr(const hpdl_mpi_dp_config *c, int ranks, double progress, double *lr) {
    double target, ref;
    if (!c || !lr || ranks < 1 || c->batch < 1 || c->batch_ref < 0 || !hpdl__hyper_ok(c->lr, 0) ||
        !(c->warmup_epochs >= 0) || !(progress >= 0) || progress > 1e12)
        return HPDL_ERR_INVALID;
    ref = c->batch_ref ? c->batch_ref : c->batch;
    target = c->lr_scale ? c->lr * ranks * c->batch / ref : c->lr;
    *lr = progress < c->warmup_epochs ? c->lr + (target - c->lr) * progress / c->warmup_epochs : target;
    return HPDL_OK;
}

/* ---- epoch plan: which rows each rank takes at each step ------------------ */

typedef struct hpdl_mpi_dp_plan {
    int64_t n;      /* samples per epoch */
    int batch;      /* per rank */
    int rank, size;
    int64_t steps;  /* ceil(n / (size * batch)) */
    int64_t local;  /* this rank's samples per epoch */
    int32_t *perm;  /* the epoch's permutation of [0, n) */
    int32_t *order; /* this rank's samples, step after step: step s starts at s * batch */
} hpdl_mpi_dp_plan;

HPDL_API void hpdl_mpi_dp_plan_destroy(hpdl_mpi_dp_plan *p) {
    if (!p) return;
    HPDL_FREE(p->perm);
    HPDL_FREE(p->order);
    memset(p, 0, sizeof *p);
}

/* Global batch s (rows [s*size*batch, ...) of the permutation) and this
   rank's part of it: [*begin, *end) of the permutation. */
HPDL_API void hpdl__dp_plan_part(const hpdl_mpi_dp_plan *p, int64_t s, int64_t *global_begin, int64_t *global_rows,
                                 int64_t *begin, int64_t *end) {
    int64_t big = (int64_t)p->size * p->batch, g0 = s * big, rows = p->n - g0 < big ? p->n - g0 : big;
    hpdl_mpi_shard_range(rows, p->rank, p->size, begin, end);
    *begin += g0;
    *end += g0;
    *global_begin = g0;
    *global_rows = rows;
}

HPDL_API hpdl_status hpdl_mpi_dp_plan_create(hpdl_mpi_dp_plan *p, int64_t n, int batch, int rank, int size) {
    hpdl_mpi_dp_plan made;
    int64_t gb, rows, b, e;
    if (!p || n < 1 || n > INT32_MAX || batch < 1 || size < 1 || rank < 0 || rank >= size ||
        (int64_t)batch * size > INT32_MAX)
        return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n = n;
    made.batch = batch;
    made.rank = rank;
    made.size = size;
    made.steps = (n + (int64_t)batch * size - 1) / ((int64_t)batch * size);
    hpdl__dp_plan_part(&made, made.steps - 1, &gb, &rows, &b, &e);
    made.local = (made.steps - 1) * batch + (e - b);
    made.perm = (int32_t *)hpdl_alloc((size_t)n, sizeof(int32_t));
    made.order = (int32_t *)hpdl_alloc((size_t)made.local, sizeof(int32_t));
    if (!made.perm || !made.order) { hpdl_mpi_dp_plan_destroy(&made); return HPDL_ERR_NOMEM; }
    *p = made;
    return HPDL_OK;
}

/* Draws epoch `epoch`'s permutation and this rank's order (same on every
   rank for the same seed and epoch: no communication). */
HPDL_API hpdl_status hpdl_mpi_dp_plan_epoch(hpdl_mpi_dp_plan *p, uint64_t seed, int epoch) {
    int64_t s, gb, rows, b, e, o = 0;
    if (!p || !p->perm || !p->order || epoch < 0) return HPDL_ERR_INVALID;
    hpdl_mpi_epoch_permutation(p->perm, p->n, seed, epoch);
    for (s = 0; s < p->steps; s++) {
        hpdl__dp_plan_part(p, s, &gb, &rows, &b, &e);
        memcpy(p->order + o, p->perm + b, (size_t)(e - b) * sizeof(int32_t));
        o += e - b;
    }
    return HPDL_OK;
}

/* Step s: this rank's rows are order[*first .. *first + *rows), the global
   batch has *global_rows rows (rows may be 0 on the short last step). */
HPDL_API hpdl_status hpdl_mpi_dp_plan_step(const hpdl_mpi_dp_plan *p, int64_t s, int64_t *first, int *rows,
                                           int *global_rows) {
    int64_t gb, grows, b, e;
    if (!p || !p->order || s < 0 || s >= p->steps || !first || !rows || !global_rows) return HPDL_ERR_INVALID;
    hpdl__dp_plan_part(p, s, &gb, &grows, &b, &e);
    *first = s * p->batch;
    *rows = (int)(e - b);
    *global_rows = (int)grows;
    return HPDL_OK;
}

/* The factor on a rank's mean gradient that makes the ranks' sum, divided by
   P, the global batch's mean: rows * P / global_rows (1 on full steps). */
HPDL_API double hpdl__dp_grad_weight(int rows, int global_rows, int size) {
    return (double)rows * size / (double)global_rows;
}

/* Fills the cross-rank parts of an epoch's stats. local[] = {loss_sum, hits,
   samples} summed, times[] = {epoch, compute, comm, span} maxed. */
HPDL_API hpdl_status hpdl__dp_finish_stats(hpdl_mpi_dp_stats *out, const double *local, const double *times,
                                           int64_t steps, double grad_bytes, int size, MPI_Comm comm) {
    double sums[3], maxes[4];
    HPDL__MPI_TRY(MPI_Allreduce((void *)local, sums, 3, MPI_DOUBLE, MPI_SUM, comm));
    HPDL__MPI_TRY(MPI_Allreduce((void *)times, maxes, 4, MPI_DOUBLE, MPI_MAX, comm));
    out->steps = steps;
    out->samples = (int64_t)sums[2];
    out->loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
    out->accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
    out->epoch_s = maxes[0];
    out->compute_s = maxes[1];
    out->comm_s = maxes[2];
    out->comm_span_s = maxes[3];
    out->grad_bytes = grad_bytes;
    out->algbw = size > 1 && steps > 0 ? hpdl_mpi_algbw(grad_bytes, maxes[3] / (double)steps) : 0.0;
    out->busbw = size > 1 && steps > 0 ? hpdl_mpi_busbw(grad_bytes, maxes[3] / (double)steps, size) : 0.0;
    return HPDL_OK;
}

/* ======================================================================== */
/* CPU ranks                                                                 */
/* ======================================================================== */

/* hpdl_mpi_dp_<s>: trains a hpdl_mlp_<s> in place. The gradient model's
   arrays are views of one flat buffer [W0 b0 W1 b1 ...], so one allreduce
   (or one bucketer) covers them all. */
#define HPDL_DEFINE_MPI_DP(SUFFIX, T, DTYPE)                                                                          \
    typedef struct hpdl_mpi_dp_##SUFFIX {                                                                             \
        hpdl_mpi_dp_config cfg;                                                                                       \
        int rank, size;                                                                                               \
        hpdl_mlp_##SUFFIX *model;  /* not owned */                                                                    \
        hpdl_mlp_##SUFFIX grad;    /* views of flat */                                                                \
        T *flat;                                                                                                      \
        int64_t n_grad;                                                                                               \
        hpdl_mlp_work_##SUFFIX work;                                                                                  \
        hpdl_mpi_dp_plan plan;                                                                                        \
        hpdl_mpi_bucketer bucketer; /* overlap only; tensor 2l = W[l], 2l+1 = b[l] */                                 \
        T *X;                       /* the step's rows */                                                             \
        int32_t *y;                                                                                                   \
        double ready_s;             /* time inside bucketer_ready this step */                                        \
    } hpdl_mpi_dp_##SUFFIX;                                                                                           \
    HPDL_API void hpdl_mpi_dp_destroy_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp) {                                            \
        if (!dp) return;                                                                                              \
        hpdl_mpi_bucketer_destroy(&dp->bucketer);                                                                     \
        hpdl_mlp_work_destroy_##SUFFIX(&dp->work);                                                                    \
        hpdl_mpi_dp_plan_destroy(&dp->plan);                                                                          \
        HPDL_FREE(dp->flat); HPDL_FREE(dp->X); HPDL_FREE(dp->y);                                                      \
        memset(dp, 0, sizeof *dp);                                                                                    \
    }                                                                                                                 \
    static inline void hpdl__dp_grad_views_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp) {                                       \
        T *p = dp->flat;                                                                                              \
        int l;                                                                                                        \
        for (l = 0; l < dp->grad.n_layers; l++) {                                                                     \
            dp->grad.W[l] = p;                                                                                        \
            p += (size_t)dp->grad.widths[l] * dp->grad.widths[l + 1];                                                 \
            dp->grad.b[l] = p;                                                                                        \
            p += dp->grad.widths[l + 1];                                                                              \
        }                                                                                                             \
    }                                                                                                                 \
    static inline hpdl_status hpdl__dp_alloc_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, int64_t n) {                          \
        const hpdl_mlp_##SUFFIX *m = dp->model;                                                                       \
        int l;                                                                                                        \
        hpdl_status s = hpdl_mpi_dp_plan_create(&dp->plan, n, dp->cfg.batch, dp->rank, dp->size);                     \
        if (s == HPDL_OK) s = hpdl_mlp_work_create_##SUFFIX(&dp->work, m, dp->cfg.batch);                             \
        if (s != HPDL_OK) return s;                                                                                   \
        dp->grad.n_layers = m->n_layers;                                                                              \
        dp->grad.act = m->act;                                                                                        \
        memcpy(dp->grad.widths, m->widths, sizeof m->widths);                                                         \
        for (l = 0; l < m->n_layers; l++) dp->n_grad += (int64_t)(m->widths[l] + 1) * m->widths[l + 1];              \
        dp->flat = (T *)hpdl_alloc((size_t)dp->n_grad, sizeof(T));                                                    \
        dp->X = (T *)hpdl_alloc((size_t)dp->cfg.batch * m->widths[0], sizeof(T));                                     \
        dp->y = (int32_t *)hpdl_alloc((size_t)dp->cfg.batch, sizeof(int32_t));                                        \
        if (!dp->flat || !dp->X || !dp->y) return HPDL_ERR_NOMEM;                                                     \
        hpdl__dp_grad_views_##SUFFIX(dp);                                                                             \
        return HPDL_OK;                                                                                               \
    }                                                                                                                 \
    /* Parameters from rank 0 to all, layer by layer. */                                                              \
    static inline hpdl_status hpdl__dp_bcast_model_##SUFFIX(hpdl_mlp_##SUFFIX *m, MPI_Comm comm) {                    \
        int l;                                                                                                        \
        hpdl_status s = HPDL_OK;                                                                                      \
        for (l = 0; s == HPDL_OK && l < m->n_layers; l++) {                                                           \
            s = hpdl_mpi_bcast(m->W[l], (int64_t)m->widths[l] * m->widths[l + 1], DTYPE, 0, comm);                    \
            if (s == HPDL_OK) s = hpdl_mpi_bcast(m->b[l], m->widths[l + 1], DTYPE, 0, comm);                          \
        }                                                                                                             \
        return s;                                                                                                     \
    }                                                                                                                 \
    static inline hpdl_status hpdl__dp_bucketer_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp) {                                  \
        void *tensors[2 * HPDL_MLP_MAX_LAYERS];                                                                       \
        int64_t counts[2 * HPDL_MLP_MAX_LAYERS];                                                                      \
        int l;                                                                                                        \
        for (l = 0; l < dp->grad.n_layers; l++) {                                                                     \
            tensors[2 * l] = dp->grad.W[l];                                                                           \
            counts[2 * l] = (int64_t)dp->grad.widths[l] * dp->grad.widths[l + 1];                                     \
            tensors[2 * l + 1] = dp->grad.b[l];                                                                       \
            counts[2 * l + 1] = dp->grad.widths[l + 1];                                                               \
        }                                                                                                             \
        return hpdl_mpi_bucketer_create(&dp->bucketer, tensors, counts, 2 * dp->grad.n_layers, DTYPE,                 \
                                        dp->cfg.bucket_bytes ? dp->cfg.bucket_bytes : HPDL_MPI_DP_BUCKET_BYTES, 0,    \
                                        dp->cfg.algo, dp->cfg.comm);                                                  \
    }                                                                                                                 \
    /* Collective. Trains *model (kept by the caller) on n_train samples per  \
       epoch; rank 0's parameters are copied to every rank first. A bad      \
       argument on any rank gives every rank HPDL_ERR_INVALID; *dp is       \
       written only on success. */                                                                                    \
    HPDL_API hpdl_status hpdl_mpi_dp_create_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, hpdl_mlp_##SUFFIX *model,              \
                                                     int64_t n_train, const hpdl_mpi_dp_config *cfg) {                \
        hpdl_mpi_dp_##SUFFIX made;                                                                                    \
        hpdl_status s = HPDL_OK;                                                                                      \
        if (!cfg || cfg->comm == MPI_COMM_NULL) return HPDL_ERR_INVALID; /* nobody to agree with */                   \
        if (!dp || !hpdl__mlp_ok_##SUFFIX(model) || !hpdl__dp_config_ok(cfg) || n_train < 1 || n_train > INT32_MAX)   \
            s = HPDL_ERR_INVALID;                                                                                     \
        else if (cfg->algo == HPDL_ALLREDUCE_NCCL)                                                                    \
            s = HPDL_ERR_UNSUPPORTED; /* host buffers */                                                              \
        s = hpdl__dp_agree(s, cfg->comm);                                                                             \
        if (s != HPDL_OK) return s;                                                                                   \
        memset(&made, 0, sizeof made);                                                                                \
        made.cfg = *cfg;                                                                                              \
        made.model = model;                                                                                           \
        MPI_Comm_rank(cfg->comm, &made.rank);                                                                         \
        MPI_Comm_size(cfg->comm, &made.size);                                                                         \
        s = hpdl__dp_agree(hpdl__dp_alloc_##SUFFIX(&made, n_train), cfg->comm);                                       \
        if (s == HPDL_OK) s = hpdl__dp_bcast_model_##SUFFIX(model, cfg->comm);                                        \
        if (s == HPDL_OK && cfg->overlap) s = hpdl__dp_bucketer_##SUFFIX(&made);                                      \
        if (s != HPDL_OK) { hpdl_mpi_dp_destroy_##SUFFIX(&made); return s; }                                          \
        *dp = made;                                                                                                   \
        return HPDL_OK;                                                                                               \
    }                                                                                                                 \
    static inline hpdl_status hpdl__dp_ready_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, int tensor) {                         \
        double t0 = hpdl_time_now();                                                                                  \
        hpdl_status s = hpdl_mpi_bucketer_ready(&dp->bucketer, tensor);                                               \
        dp->ready_s += hpdl_time_now() - t0;                                                                          \
        return s;                                                                                                     \
    }                                                                                                                 \
    /* hpdl_mlp_backward_<s>, layer by layer so that each layer's gradient   \
       can go to the bucketer as soon as it exists (mark). */                                                         \
    static inline hpdl_status hpdl__dp_backward_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, int rows, int mark, double *loss,  \
                                                         int64_t *hits) {                                             \
        hpdl_mlp_##SUFFIX *m = dp->model;                                                                             \
        hpdl_mlp_work_##SUFFIX *w = &dp->work;                                                                        \
        int L = m->n_layers, classes = m->widths[L], l;                                                               \
        hpdl_status s = hpdl_mlp_forward_##SUFFIX(m, w, rows, dp->X);                                                 \
        if (s != HPDL_OK) return s;                                                                                   \
        *hits = hpdl__argmax_hits_##SUFFIX(rows, classes, w->act[L], dp->y);                                          \
        s = hpdl_softmax_xent_##SUFFIX(rows, classes, w->act[L], classes, dp->y, w->delta[L], classes, loss);         \
        for (l = L - 1; s == HPDL_OK && l >= 0; l--) {                                                                \
            s = hpdl__mlp_layer_back_##SUFFIX(m, w, l, rows, l ? w->act[l] : dp->X, &dp->grad);                       \
            if (s == HPDL_OK && mark) s = hpdl__dp_ready_##SUFFIX(dp, 2 * l + 1);                                     \
            if (s == HPDL_OK && mark) s = hpdl__dp_ready_##SUFFIX(dp, 2 * l);                                         \
        }                                                                                                             \
        return s;                                                                                                     \
    }                                                                                                                 \
    /* This rank's gradient for a step: backward on its rows, weighted for a \
       short last step; zeros when it has no rows. */                                                                 \
    static inline hpdl_status hpdl__dp_local_grad_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, int rows, int global_rows,       \
                                                           double *loss, int64_t *hits) {                             \
        double weight = hpdl__dp_grad_weight(rows, global_rows, dp->size);                                            \
        int64_t i;                                                                                                    \
        hpdl_status s;                                                                                                \
        *loss = 0.0;                                                                                                  \
        *hits = 0;                                                                                                    \
        if (rows == 0) { memset(dp->flat, 0, (size_t)dp->n_grad * sizeof(T)); return HPDL_OK; }                       \
        s = hpdl__dp_backward_##SUFFIX(dp, rows, dp->cfg.overlap && weight == 1.0, loss, hits);                       \
        for (i = 0; s == HPDL_OK && weight != 1.0 && i < dp->n_grad; i++) dp->flat[i] = (T)(dp->flat[i] * weight);    \
        return s;                                                                                                     \
    }                                                                                                                 \
    /* One step on the rows already in dp->X / dp->y. times[1] += compute,   \
       times[2] += communication. */                                                                                  \
    static inline hpdl_status hpdl__dp_step_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, int rows, int global_rows, double lr,  \
                                                     double *loss, int64_t *hits, double *times) {                    \
        double t0 = hpdl_time_now(), t1, t2;                                                                          \
        int P = dp->size;                                                                                             \
        hpdl_status s;                                                                                                \
        dp->ready_s = 0.0;                                                                                            \
        s = hpdl__dp_local_grad_##SUFFIX(dp, rows, global_rows, loss, hits);                                          \
        t1 = hpdl_time_now();                                                                                         \
        if (s == HPDL_OK)                                                                                             \
            s = dp->cfg.overlap ? hpdl_mpi_bucketer_wait(&dp->bucketer)                                               \
                                : hpdl_mpi_allreduce(dp->flat, dp->n_grad, DTYPE, dp->cfg.algo, dp->cfg.comm);        \
        t2 = hpdl_time_now();                                                                                         \
        if (s == HPDL_OK) s = hpdl_mlp_sgd_##SUFFIX(dp->model, &dp->grad, (T)(lr / P), (T)(dp->cfg.l2 * P));          \
        times[1] += (t1 - t0 - dp->ready_s) + (hpdl_time_now() - t2);                                                 \
        times[2] += (t2 - t1) + dp->ready_s;                                                                          \
        return s;                                                                                                     \
    }                                                                                                                 \
    /* Collective: one epoch (index `epoch`, from 0: it keys the shuffle and \
       the lr schedule) over X (n_train x widths[0]) and labels, the same    \
       data on every rank. out (optional) gets the epoch's stats. */                                                  \
    HPDL_API hpdl_status hpdl_mpi_dp_epoch_##SUFFIX(hpdl_mpi_dp_##SUFFIX *dp, const T *X, const int32_t *labels,      \
                                                    int epoch, hpdl_mpi_dp_stats *out) {                              \
        hpdl_mpi_dp_stats st;                                                                                         \
        double local[3] = {0, 0, 0}, times[4] = {0, 0, 0, 0}, t0, lr = 0;                                             \
        int64_t s, first, i;                                                                                          \
        int rows, global_rows, in;                                                                                    \
        hpdl_status status = HPDL_OK;                                                                                 \
        if (!dp || !dp->flat) return HPDL_ERR_INVALID;                                                                \
        in = dp->model->widths[0];                                                                                    \
        if (!X || epoch < 0 || !hpdl__labels_ok(dp->plan.n, labels, dp->model->widths[dp->model->n_layers]))          \
            status = HPDL_ERR_INVALID;                                                                                \
        status = hpdl__dp_agree(status, dp->cfg.comm);                                                                \
        if (status != HPDL_OK) return status;                                                                         \
        memset(&st, 0, sizeof st);                                                                                    \
        t0 = hpdl_time_now();                                                                                         \
        hpdl_mpi_dp_plan_epoch(&dp->plan, dp->cfg.seed, epoch);                                                       \
        for (s = 0; status == HPDL_OK && s < dp->plan.steps; s++) {                                                   \
            double loss;                                                                                              \
            int64_t hits;                                                                                             \
            hpdl_mpi_dp_plan_step(&dp->plan, s, &first, &rows, &global_rows);                                         \
            hpdl_mpi_dp_lr(&dp->cfg, dp->size, epoch + (double)s / (double)dp->plan.steps, &lr);                      \
            if (s == 0) st.lr_first = lr;                                                                             \
            for (i = 0; i < rows; i++) {                                                                              \
                int32_t r = dp->plan.order[first + i];                                                                \
                memcpy(dp->X + (size_t)i * in, X + (size_t)r * in, (size_t)in * sizeof(T));                           \
                dp->y[i] = labels[r];                                                                                 \
            }                                                                                                         \
            status = hpdl__dp_step_##SUFFIX(dp, rows, global_rows, lr, &loss, &hits, times);                          \
            local[0] += loss * rows;                                                                                  \
            local[1] += (double)hits;                                                                                 \
            local[2] += rows;                                                                                         \
        }                                                                                                             \
        st.lr_last = lr;                                                                                              \
        times[0] = hpdl_time_now() - t0;                                                                              \
        times[3] = times[2];                                                                                          \
        if (status == HPDL_OK)                                                                                        \
            status = hpdl__dp_finish_stats(&st, local, times, dp->plan.steps, (double)dp->n_grad * sizeof(T),         \
                                           dp->size, dp->cfg.comm);                                                   \
        if (status == HPDL_OK && out) *out = st;                                                                      \
        return status;                                                                                                \
    }

HPDL_DEFINE_MPI_DP(f32, float, HPDL_MPI_F32)
HPDL_DEFINE_MPI_DP(f64, double, HPDL_MPI_F64)

/* Roofline inputs on CPU ranks: P_flops from a 256^3 f32 GEMM, P_mpi from
   allreducing grad_bytes of f32 with algo (median of 5). Collective. */
HPDL_API hpdl_status hpdl_mpi_dp_roofline_cpu(int64_t grad_count, hpdl_allreduce_algo algo, MPI_Comm comm,
                                              hpdl_mpi_dp_roofline *out) {
    const int n = 256, reps = 5;
    float *a = (float *)hpdl_alloc((size_t)n * n, sizeof(float)), *c = (float *)hpdl_alloc((size_t)n * n, sizeof(float));
    float *g = (float *)hpdl_alloc((size_t)(grad_count > 0 ? grad_count : 1), sizeof(float));
    double gemm_s[5], comm_s[5];
    hpdl_stats sg, sc;
    int64_t i;
    int p = 1, r;
    hpdl_status s = HPDL_OK;
    if (!out || grad_count < 1) s = HPDL_ERR_INVALID;
    else if (!a || !c || !g) s = HPDL_ERR_NOMEM;
    s = hpdl__dp_agree(s, comm);
    if (s != HPDL_OK) { HPDL_FREE(a); HPDL_FREE(c); HPDL_FREE(g); return s; }
    for (i = 0; i < (int64_t)n * n; i++) a[i] = (float)(i % 7) * 0.25f;
    for (i = 0; i < grad_count; i++) g[i] = 1.0f;
    MPI_Comm_size(comm, &p);
    for (r = 0; r < reps && s == HPDL_OK; r++) {
        double t0 = hpdl_time_now();
        s = hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, 1.0f, a, n, a, n, 0.0f, c, n);
        gemm_s[r] = hpdl_time_now() - t0;
        MPI_Barrier(comm);
        t0 = hpdl_time_now();
        if (s == HPDL_OK) s = hpdl_mpi_allreduce_f32(g, grad_count, algo, comm);
        comm_s[r] = hpdl_time_now() - t0;
    }
    if (s == HPDL_OK) s = hpdl_stats_compute(gemm_s, reps, &sg);
    if (s == HPDL_OK) s = hpdl_stats_compute(comm_s, reps, &sc);
    if (s == HPDL_OK) {
        out->p_flops = 2.0 * n * n * n / sg.median;
        out->p_pci = 0.0;
        out->p_mpi = hpdl_mpi_busbw(4.0 * grad_count, sc.median, p);
        out->p_mpi_algbw = p > 1 ? hpdl_mpi_algbw(4.0 * grad_count, sc.median) : 0.0;
    }
    HPDL_FREE(a); HPDL_FREE(c); HPDL_FREE(g);
    return s;
}

#endif /* HPDL_MPI_DP_H */
