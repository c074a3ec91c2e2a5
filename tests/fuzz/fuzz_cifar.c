/* libFuzzer target: the CIFAR-10 loader (hpdl_cifar10_load) on arbitrary files.

   An input is one or two files in one buffer: the first two bytes
   (little-endian) give the first file's length, the second file is the rest
   (none when the rest is empty), so the fuzzer can grow, cut and corrupt
   either, and the two are loaded one after the other. The loader must
   refuse what is wrong with a status (never crash, read out of bounds or
   leak), and what it accepts must be consistent: one image per 3073 bytes,
   3x32x32, pixels in [0, 1], labels in [0, 9].

       make fuzz                                        # every target, 60 s each
       build/fuzz/fuzz_cifar tests/fuzz/corpus/cifar   # by hand */
#include "hpdl.h"

#include <unistd.h>

#include "tests/fuzz/fuzz_files.h"

static char first_path[64], second_path[64];

static void check_dataset(const hpdl_dataset *d, size_t bytes) {
    int64_t i, pixels;
    if (d->n < 1 || (uint64_t)d->n * 3073 != bytes || !d->images || !d->labels) abort();
    if (d->channels != 3 || d->rows != 32 || d->cols != 32 || hpdl_dataset_features(d) != 3072) abort();
    pixels = d->n * hpdl_dataset_features(d);
    for (i = 0; i < pixels; i++)
        if (!(d->images[i] >= 0.0f && d->images[i] <= 1.0f)) abort();
    for (i = 0; i < d->n; i++)
        if (d->labels[i] < 0 || d->labels[i] > 9) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *paths[2];
    hpdl_dataset d;
    size_t split;
    int n_files;
    if (size < 2) return 0;
    if (!first_path[0]) { /* one pair of files per process: fuzzers may run side by side */
        snprintf(first_path, sizeof first_path, "%s/hpdl_fuzz_cifar_%ld_1", fuzz_dir(), (long)getpid());
        snprintf(second_path, sizeof second_path, "%s/hpdl_fuzz_cifar_%ld_2", fuzz_dir(), (long)getpid());
    }
    split = (size_t)data[0] | (size_t)data[1] << 8;
    if (split > size - 2) split = size - 2;
    n_files = split < size - 2 ? 2 : 1;
    write_file(first_path, data + 2, split);
    if (n_files == 2) write_file(second_path, data + 2 + split, size - 2 - split);
    paths[0] = first_path;
    paths[1] = second_path;
    if (hpdl_cifar10_load(n_files, paths, &d) == HPDL_OK) {
        check_dataset(&d, size - 2);
        hpdl_dataset_free(&d);
    }
    remove(first_path); /* nothing left behind when the run ends */
    remove(second_path);
    return 0;
}
