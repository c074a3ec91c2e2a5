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
