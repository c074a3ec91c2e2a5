/* Tests of hpdl_cuda.cuh's check macros: the failing call, file:line, and
   "no CUDA GPU (or no driver)" where the error means there is no GPU to run
   on. Each check runs in a child process (HPDL_CUDA_CHECK exits) whose
   stderr comes back through a pipe. The first two tests need no GPU. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

#include <sys/wait.h>
#include <unistd.h>

#define NO_GPU_WORDS "no CUDA GPU (or no driver)"

/* Runs fn in a child; returns its exit status (-1 if it did not exit) and
   what it wrote to stderr in out. */
static int run_in_child(void (*fn)(void), char *out, size_t size) {
    int fd[2], status = 0;
    size_t got = 0;
    ssize_t n;
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) return -1;
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn();
        exit(0);
    }
    close(fd[1]);
    while (got + 1 < size && (n = read(fd[0], out + got, size - 1 - got)) > 0) got += (size_t)n;
    out[got] = '\0';
    close(fd[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static void check_invalid_value(void) { HPDL_CUDA_CHECK(cudaErrorInvalidValue); }
static void check_no_device(void) { HPDL_CUDA_CHECK(cudaErrorNoDevice); }
static void check_malloc(void) {
    void *p = NULL;
    HPDL_CUDA_CHECK(cudaMalloc(&p, 256));
    HPDL_CUDA_CHECK(cudaFree(p));
}
static hpdl_status try_malloc(void) {
    void *p = NULL;
    HPDL_CUDA_TRY(cudaMalloc(&p, 256));
    HPDL_CUDA_TRY(cudaFree(p));
    return HPDL_OK;
}
static void try_malloc_exit(void) { exit(try_malloc() == HPDL_ERR_CUDA ? 3 : 0); }
static void exit_gpu_present(void) { exit(hpdl_cuda_available() ? 1 : 0); }

/* An ordinary error: its name, the call and file:line, no "no GPU" words. */
static void test_check_names_call_and_line(void) {
    char out[1024];
    HPDL_EXPECT(run_in_child(check_invalid_value, out, sizeof out) == EXIT_FAILURE);
    HPDL_EXPECT(strstr(out, "cudaErrorInvalidValue") != NULL);
    HPDL_EXPECT(strstr(out, "in cudaErrorInvalidValue") != NULL);
    HPDL_EXPECT(strstr(out, "gpu_checks.cu:") != NULL);
    HPDL_EXPECT(strstr(out, NO_GPU_WORDS) == NULL);
}

/* The errors of a machine without a GPU or a driver read as such. */
static void test_no_gpu_errors_say_so(void) {
    char out[1024];
    HPDL_EXPECT(run_in_child(check_no_device, out, sizeof out) == EXIT_FAILURE);
    HPDL_EXPECT(strstr(out, NO_GPU_WORDS) != NULL);
    HPDL_EXPECT(strstr(hpdl__cuda_error_hint(cudaErrorInsufficientDriver), NO_GPU_WORDS) != NULL);
    HPDL_EXPECT(strstr(hpdl__cuda_error_hint(cudaErrorStubLibrary), NO_GPU_WORDS) != NULL);
    HPDL_EXPECT(strcmp(hpdl__cuda_error_hint(cudaErrorMemoryAllocation), "") == 0);
}

/* What a program's first cudaMalloc says on this machine: nothing with a GPU,
   the "no GPU" words without one (CHECK exits, TRY returns HPDL_ERR_CUDA). */
static void test_first_call_without_gpu(void) {
    char out[1024];
    /* asked in a child: a CUDA runtime started here would not survive the forks below */
    if (run_in_child(exit_gpu_present, out, sizeof out) == 1) {
        HPDL_EXPECT(run_in_child(check_malloc, out, sizeof out) == 0);
        HPDL_EXPECT(run_in_child(try_malloc_exit, out, sizeof out) == 0);
        HPDL_SKIP("a GPU is present: the no-GPU words are checked only without one");
    }
    HPDL_EXPECT(run_in_child(check_malloc, out, sizeof out) == EXIT_FAILURE);
    HPDL_EXPECT(strstr(out, NO_GPU_WORDS) != NULL && strstr(out, "cudaMalloc(&p, 256)") != NULL);
    HPDL_EXPECT(run_in_child(try_malloc_exit, out, sizeof out) == 3);
    HPDL_EXPECT(strstr(out, NO_GPU_WORDS) != NULL && strstr(out, "cudaMalloc(&p, 256)") != NULL);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {HPDL_TEST(test_check_names_call_and_line),
                                      HPDL_TEST(test_no_gpu_errors_say_so),
                                      HPDL_TEST(test_first_call_without_gpu)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
