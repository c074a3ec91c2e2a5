/* kernel_trace.c - a GPU timeline without Nsight Systems: loaded into any
   CUDA program by the driver (CUDA_INJECTION64_PATH), it asks CUPTI's
   activity API for every kernel's start and end on the GPU, every CUDA
   runtime and driver call's start and end on the host (a kernel's launch
   is the call with its correlation id), and every NVTX range pushed and
   popped (with NVTX_INJECTION64_PATH naming the CUPTI library). One CSV a
   process, TRACE_DIR/trace.<pid>.csv, one record a line:

     kernel,device,stream,start_ns,end_ns,correlation,name (mangled)
     call,thread,start_ns,end_ns,correlation
     mark,thread,time_ns,start|end,id,name (start only)

   scripts/kernel_trace.sh builds it, runs a command under it, and
   scripts/kernel_trace.py sums the records (time per kernel, and the GPU
   time of the kernels launched inside each NVTX range). All times are on
   CUPTI's clock, one for every process of a machine. */
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

static void write_record(const CUpti_Activity *record) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
        fprintf(trace_out, "kernel,%u,%u,%llu,%llu,%u,%s\n", k->deviceId, k->streamId, (unsigned long long)k->start,
                (unsigned long long)k->end, k->correlationId, k->name);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME || record->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
        const CUpti_ActivityAPI *c = (const CUpti_ActivityAPI *)record;
        fprintf(trace_out, "call,%u,%llu,%llu,%u\n", c->threadId, (unsigned long long)c->start,
                (unsigned long long)c->end, c->correlationId);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MARKER) {
        const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)record;
        const int start = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
        if (start || (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END))
            fprintf(trace_out, "mark,%u,%llu,%s,%u,%s\n", m->objectId.pt.threadId, (unsigned long long)m->timestamp,
                    start ? "start" : "end", m->id, start && m->name ? m->name : "");
    }
}

static void CUPTIAPI take_buffer(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    CUpti_Activity *record = NULL;
    (void)context; (void)stream; (void)size;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) write_record(record);
    free(buffer);
}

static void flush_at_exit(void) {
    cuptiActivityFlushAll(1);
    fclose(trace_out);
}

/* Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH). */
int InitializeInjection(void) {
    static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER};
    char path[4096];
    const char *dir = getenv("TRACE_DIR");
    size_t i;
    snprintf(path, sizeof path, "%s/trace.%d.csv", dir ? dir : ".", (int)getpid());
    if (!(trace_out = fopen(path, "w"))) {
        fprintf(stderr, "kernel_trace: cannot write %s\n", path);
        return 0;
    }
    if (cuptiActivityRegisterCallbacks(give_buffer, take_buffer) != CUPTI_SUCCESS) return 0;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS) fprintf(stderr, "kernel_trace: activity %d off\n", (int)kinds[i]);
    atexit(flush_at_exit);
    return 1;
}
