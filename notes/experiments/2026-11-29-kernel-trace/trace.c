/* Every kernel's start and end on the GPU, written by CUPTI's activity API
   with no change to the program: build as a shared library and name it in
   CUDA_INJECTION64_PATH. One CSV a process (TRACE_DIR/kernels.<pid>.csv):
   device, stream, start_ns, end_ns, grid (x y z), block x, name (mangled).
     gcc -shared -fPIC -O2 -I/usr/local/cuda/include trace.c \
         -L/usr/local/cuda/lib64 -lcupti -o libtrace.so */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { BUFFER_BYTES = 16 << 20 };
static FILE *trace_out;

static void CUPTIAPI give_buffer(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = (uint8_t *)aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI take_buffer(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    CUpti_Activity *record = NULL;
    (void)ctx; (void)stream; (void)size;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
            fprintf(trace_out, "%u,%u,%llu,%llu,%d,%d,%d,%d,%s\n", k->deviceId, k->streamId,
                    (unsigned long long)k->start, (unsigned long long)k->end, k->gridX, k->gridY, k->gridZ, k->blockX,
                    k->name);
        }
    }
    free(buffer);
}

static void flush_at_exit(void) {
    cuptiActivityFlushAll(1);
    fclose(trace_out);
}

int InitializeInjection(void) {
    char path[4096];
    const char *dir = getenv("TRACE_DIR");
    snprintf(path, sizeof path, "%s/kernels.%d.csv", dir ? dir : ".", (int)getpid());
    if (!(trace_out = fopen(path, "w"))) return 0;
    fprintf(trace_out, "device,stream,start_ns,end_ns,grid_x,grid_y,grid_z,block_x,name\n");
    if (cuptiActivityRegisterCallbacks(give_buffer, take_buffer) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return 0;
    atexit(flush_at_exit);
    return 1;
}
