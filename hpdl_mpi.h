/* hpdl_mpi.h - v0.1.0 - high-performance deep learning kernels, MPI part (in progress). */
#ifndef HPDL_MPI_H
#define HPDL_MPI_H
#include "hpdl.h"
#endif
