/* CPU reference kernels (owned by the cpu-kernels work; spliced into hpdl.h). */
