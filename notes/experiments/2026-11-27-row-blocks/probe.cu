/* Two ranks, one GPU each: what the row-block exchange costs on its own.
     1. copy: cudaMemcpyAsync of B bytes from this GPU into the peer's IPC-mapped
        buffer (both ranks at once), alone and beside an f32 cuBLAS GEMM of the
        first layer's forward (rows x 2048 x 784) on another stream;
     2. the GEMM alone and beside the copy;
     3. ping-pong of stream memory operations: rank 0 writes i into rank 1's word
        and waits for i in its own; rank 1 the other way round.
   mpirun -np 2 probe [rows] */
#include "hpdl_mpi.h"

#define REPS 50

/* One thread: *peer = v, visible to the peer's GPU (a release at system scope). */
__global__ void signal_kernel(uint32_t *peer, uint32_t v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(peer), "r"(v) : "memory");
}

/* One thread: spins until *own >= v (acquire at system scope). */
__global__ void wait_kernel(const uint32_t *own, uint32_t v) {
    uint32_t x;
    do asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(x) : "l"(own) : "memory");
    while ((int32_t)(x - v) < 0);
}

/* 16-byte stores from this GPU into the peer's buffer. */
__global__ void push_kernel(int4 *to, const int4 *from, size_t n) {
    size_t i;
    for (i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) to[i] = from[i];
}

static float ms_between(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms;
}

int main(int argc, char **argv) {
    int rank, size, rows = argc > 1 ? atoi(argv[1]) : 512, i, r;
    const size_t bytes = (size_t)392 * 2048 * 4;
    char *mine, *all[2];
    float *A, *W, *C, one = 1, zero = 0;
    cudaStream_t s_copy, s_gemm;
    cudaEvent_t e[4];
    cublasHandle_t h;
    hpdl__dp_memop wait = hpdl__dp_memop_fn("cuStreamWaitValue32"), write = hpdl__dp_memop_fn("cuStreamWriteValue32");
    double t_copy = 0, t_gemm = 0, t_both_copy = 0, t_both_gemm = 0, t0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 1);
    cudaSetDevice(rank);
    cudaMalloc((void **)&mine, 2 * bytes + 256);
    cudaMemset(mine, 0, 2 * bytes + 256);
    cudaDeviceSynchronize();
    if (hpdl__mpi_ipc_open_all(mine, all, MPI_COMM_WORLD, rank, 2) != HPDL__IPC_OK) MPI_Abort(MPI_COMM_WORLD, 2);
    cudaMalloc((void **)&A, (size_t)rows * 784 * 4);
    cudaMalloc((void **)&W, (size_t)784 * 2048 * 4);
    cudaMalloc((void **)&C, (size_t)rows * 2048 * 4);
    cudaMemset(A, 0, (size_t)rows * 784 * 4);
    cudaMemset(W, 0, (size_t)784 * 2048 * 4);
    cudaStreamCreateWithFlags(&s_copy, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s_gemm, cudaStreamNonBlocking);
    for (i = 0; i < 4; i++) cudaEventCreate(&e[i]);
    cublasCreate(&h);
    cublasSetStream(h, s_gemm);
    for (r = -3; r < REPS; r++) {
        int mode;
        for (mode = 0; mode < 3; mode++) { /* 0: copy alone, 1: GEMM alone, 2: both */
            MPI_Barrier(MPI_COMM_WORLD);
            if (mode != 1) {
                cudaEventRecord(e[0], s_copy);
                cudaMemcpyAsync(all[1 - rank] + 256, mine + 256 + bytes, bytes, cudaMemcpyDefault, s_copy);
                cudaEventRecord(e[1], s_copy);
            }
            if (mode != 0) {
                cudaEventRecord(e[2], s_gemm);
                cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2048, rows, 784, &one, W, 2048, A, 784, &zero, C, 2048);
                cudaEventRecord(e[3], s_gemm);
            }
            cudaDeviceSynchronize();
            if (r < 0) continue;
            if (mode == 0) t_copy += ms_between(e[0], e[1]);
            if (mode == 1) t_gemm += ms_between(e[2], e[3]);
            if (mode == 2) { t_both_copy += ms_between(e[0], e[1]); t_both_gemm += ms_between(e[2], e[3]); }
        }
    }
    if (rank == 0)
        printf("rows %d, %.2f MB a copy: copy alone %.2f us (%.0f GB/s), GEMM alone %.2f us; together: copy %.2f us, "
               "GEMM %.2f us\n",
               rows, bytes * 1e-6, 1e3 * t_copy / REPS, bytes / (1e-3 * t_copy / REPS) * 1e-9, 1e3 * t_gemm / REPS,
               1e3 * t_both_copy / REPS, 1e3 * t_both_gemm / REPS);
    /* ping-pong: 0 memop write + memop wait, 2 kernel store + memop wait, 3 kernel store + kernel wait;
       1000 round trips each, the counter going on from one to the next. (1, the memop write without its
       memory barrier, hung on two H200s: never run.) */
    {
        static const char *names[4] = {"memop write + memop wait", "memop write (no barrier) + memop wait",
                                       "kernel store + memop wait", "kernel store + kernel wait"};
        uint32_t *peer = (uint32_t *)(void *)all[1 - rank], *own = (uint32_t *)(void *)mine;
        int v, k = 0;
        for (v = 0; v < 4; v++) {
            if (v == 1) continue;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (i = 0; i < 1000; i++) {
                int turn;
                k++;
                for (turn = 0; turn < 2; turn++) {
                    int send = (turn == 0) == (rank == 0);
                    if (send && v < 2)
                        write((CUstream)s_copy, (CUdeviceptr)peer, (cuuint32_t)k,
                              v == 1 ? CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : CU_STREAM_WRITE_VALUE_DEFAULT);
                    else if (send)
                        signal_kernel<<<1, 1, 0, s_copy>>>(peer, (uint32_t)k);
                    else if (v < 3)
                        wait((CUstream)s_copy, (CUdeviceptr)own, (cuuint32_t)k, CU_STREAM_WAIT_VALUE_GEQ);
                    else
                        wait_kernel<<<1, 1, 0, s_copy>>>(own, (uint32_t)k);
                }
            }
            cudaStreamSynchronize(s_copy);
            t0 = MPI_Wtime() - t0;
            if (rank == 0) printf("  round trip, %s: %.2f us\n", names[v], t0 / 1000 * 1e6);
        }
    }
    /* SM push of the same bytes with 8..132 blocks of 512 threads, alone and beside the GEMM */
    {
        int grids[4] = {8, 16, 32, 132}, gi;
        for (gi = 0; gi < 4; gi++) {
            double tp = 0, tpb = 0, tgb = 0;
            for (r = -3; r < REPS; r++) {
                int mode;
                for (mode = 0; mode < 2; mode++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    cudaEventRecord(e[0], s_copy);
                    push_kernel<<<grids[gi], 512, 0, s_copy>>>((int4 *)(void *)(all[1 - rank] + 256),
                                                                (const int4 *)(void *)(mine + 256 + bytes), bytes / 16);
                    cudaEventRecord(e[1], s_copy);
                    if (mode == 1) {
                        cudaEventRecord(e[2], s_gemm);
                        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2048, rows, 784, &one, W, 2048, A, 784, &zero, C, 2048);
                        cudaEventRecord(e[3], s_gemm);
                    }
                    cudaDeviceSynchronize();
                    if (r < 0) continue;
                    if (mode == 0) tp += ms_between(e[0], e[1]);
                    else { tpb += ms_between(e[0], e[1]); tgb += ms_between(e[2], e[3]); }
                }
            }
            if (rank == 0)
                printf("  SM push, %3d blocks: alone %.2f us (%.0f GB/s); beside the GEMM: push %.2f us, GEMM %.2f us\n",
                       grids[gi], 1e3 * tp / REPS, bytes / (1e-3 * tp / REPS) * 1e-9, 1e3 * tpb / REPS, 1e3 * tgb / REPS);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    hpdl__mpi_ipc_close_all(all, rank, 2);
    MPI_Finalize();
    return 0;
}
