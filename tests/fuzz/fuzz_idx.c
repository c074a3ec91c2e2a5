/* libFuzzer target: the IDX loader (hpdl_idx_load) on arbitrary files.

   An input is an images file and a labels file in one buffer: the first
   two bytes (little-endian) give the images file's length, the labels file
   is the rest, so the fuzzer can grow, cut and corrupt either. The loader must refuse
   what is wrong with a status (never crash, read out of bounds or leak),
   and what it accepts must be consistent: counts equal, shapes positive,
   pixels in [0, 1], labels in [0, 255].

       make fuzz                      # every target, 60 s each
       build/fuzz/fuzz_idx tests/fuzz/corpus/idx   # by hand */
#include "hpdl.h"

#include <unistd.h>

#include "tests/fuzz/fuzz_files.h"

static char images_path[64], labels_path[64];

static void remove_files(void) {
    remove(images_path);
    remove(labels_path);
}

static void check_dataset(const hpdl_dataset *d) {
    int64_t i, pixels;
    if (d->n < 1 || d->channels != 1 || d->rows < 1 || d->cols < 1 || !d->images || !d->labels) abort();
    pixels = d->n * hpdl_dataset_features(d);
    for (i = 0; i < pixels; i++)
        if (!(d->images[i] >= 0.0f && d->images[i] <= 1.0f)) abort();
    for (i = 0; i < d->n; i++)
        if (d->labels[i] < 0 || d->labels[i] > 255) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpdl_dataset d;
    size_t split;
    if (size < 2) return 0;
    if (!images_path[0]) { /* one pair of files per process: fuzzers may run side by side */
        snprintf(images_path, sizeof images_path, "%s/hpdl_fuzz_idx_%ld_images", fuzz_dir(), (long)getpid());
        snprintf(labels_path, sizeof labels_path, "%s/hpdl_fuzz_idx_%ld_labels", fuzz_dir(), (long)getpid());
    }
    split = (size_t)data[0] | (size_t)data[1] << 8;
    if (split > size - 2) split = size - 2;
    write_file(images_path, data + 2, split);
    write_file(labels_path, data + 2 + split, size - 2 - split);
    if (hpdl_idx_load(images_path, labels_path, &d) == HPDL_OK) {
        check_dataset(&d);
        hpdl_dataset_free(&d);
    }
    remove_files(); /* nothing left behind when the run ends */
    return 0;
}
