/* hpdl_test_mpi.h - hpdl_test.h for programs run on several MPI ranks.

   Every rank runs every test; a failure on any rank becomes a failure on
   every rank, so rank 0's output (the only one printed) covers them all:

       MPI_TEST(test_sum) { HPDL_EXPECT(...); }   registered as HPDL_TEST(test_sum)
       int main(int argc, char **argv) { ...; return hpdl_test_mpi_main(argc, argv, tests, n); } */
#ifndef HPDL_TEST_MPI_H
#define HPDL_TEST_MPI_H

#include "hpdl_mpi.h"
#include "hpdl_test.h"

/* Turns a failure on any rank into a failure on every rank. */
static void hpdl_test_mpi_agree_verdict(void) {
    int local = hpdl_test__failures > 0, any = 0;
    MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !local) hpdl_test__fail(__FILE__, __LINE__, "every rank to pass (another rank failed)");
}

/* max |a - b| / max |b| over every weight and bias of two models of one
   shape: hpdl_test_mlp_diff_f64, hpdl_test_mlp_diff_f32. */
#define HPDL_TEST_MLP_DIFF(SUFFIX)                                                                   \
    static inline double hpdl_test_mlp_diff_##SUFFIX(const hpdl_mlp_##SUFFIX *a, const hpdl_mlp_##SUFFIX *b) { \
        double diff = 0.0, scale = 0.0;                                                              \
        int l, i;                                                                                    \
        for (l = 0; l < a->n_layers; l++) {                                                          \
            int nw = a->widths[l] * a->widths[l + 1], nb = a->widths[l + 1];                         \
            for (i = 0; i < nw; i++) {                                                               \
                diff = fmax(diff, fabs((double)a->W[l][i] - b->W[l][i]));                            \
                scale = fmax(scale, fabs((double)b->W[l][i]));                                       \
            }                                                                                        \
            for (i = 0; i < nb; i++) {                                                               \
                diff = fmax(diff, fabs((double)a->b[l][i] - b->b[l][i]));                            \
                scale = fmax(scale, fabs((double)b->b[l][i]));                                       \
            }                                                                                        \
        }                                                                                            \
        return scale > 0 ? diff / scale : diff;                                                      \
    }
HPDL_TEST_MLP_DIFF(f64)
HPDL_TEST_MLP_DIFF(f32)

/* Whether this rank holds exactly rank 0's copy of m (collective). */
static inline int hpdl_test_mlp_same_on_every_rank_f64(const hpdl_mlp_f64 *m) {
    hpdl_mlp_f64 root;
    double d;
    int l;
    HPDL_EXPECT(hpdl_mlp_create_zero_f64(&root, m->n_layers + 1, m->widths, m->act) == HPDL_OK);
    HPDL_EXPECT(hpdl_mlp_copy_f64(&root, m) == HPDL_OK);
    for (l = 0; l < m->n_layers; l++) {
        HPDL_EXPECT(hpdl_mpi_bcast_f64(root.W[l], (int64_t)m->widths[l] * m->widths[l + 1], 0, MPI_COMM_WORLD) ==
                    HPDL_OK);
        HPDL_EXPECT(hpdl_mpi_bcast_f64(root.b[l], m->widths[l + 1], 0, MPI_COMM_WORLD) == HPDL_OK);
    }
    d = hpdl_test_mlp_diff_f64(m, &root);
    hpdl_mlp_destroy_f64(&root);
    return d == 0.0;
}

#ifdef __CUDACC__
/* 1 on every rank when two ranks use the same GPU (more ranks than GPUs:
   NCCL refuses them), 0 when each has its own, -1 when some rank has none.
   `gpu`: this rank's device (hpdl_mpi_select_gpu), -1 for none. */
static inline int hpdl_test_gpus_shared(int gpu) {
    char mine[32] = "", *all = (char *)calloc((size_t)hpdl_mpi_size(), 32);
    int have = gpu >= 0 && cudaDeviceGetPCIBusId(mine, 32, gpu) == cudaSuccess, all_have = 0, shared = 0, i, j;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allgather(mine, 32, MPI_CHAR, all, 32, MPI_CHAR, MPI_COMM_WORLD);
    for (i = 0; i < hpdl_mpi_size(); i++)
        for (j = 0; j < i; j++) shared |= !strcmp(all + 32 * i, all + 32 * j);
    free(all);
    return all_have ? shared : -1;
}
#endif

/* Defines test `name`: its body, then the verdict agreed across ranks. */
#define MPI_TEST(name)                                                        \
    static void name##_body(void);                                            \
    static void name(void) { name##_body(); hpdl_test_mpi_agree_verdict(); }  \
    static void name##_body(void)

/* main() of an MPI test program: only rank 0 prints; the exit code is
   rank 0's (every verdict is agreed, so all ranks return the same). */
static int hpdl_test_mpi_main(int argc, char **argv, const hpdl_test *tests, int count) {
    int rc;
    HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
    if (hpdl_mpi_rank() != 0 && !freopen("/dev/null", "w", stdout)) MPI_Abort(MPI_COMM_WORLD, 1);
    rc = hpdl_test_main(argc, argv, tests, count);
    HPDL_CHECK(hpdl_mpi_finalize());
    return rc;
}

#endif /* HPDL_TEST_MPI_H */
