/* fuzz_files.h - where the file-parser fuzz targets write their inputs.
   Memory-backed /dev/shm when there is one (/tmp on disk is 20x slower). */
#ifndef HPDL_FUZZ_FILES_H
#define HPDL_FUZZ_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The folder for the fuzz inputs: /dev/shm when it can be written, else /tmp. */
static const char *fuzz_dir(void) {
    char probe[64];
    FILE *f;
    snprintf(probe, sizeof probe, "/dev/shm/hpdl_fuzz_probe_%ld", (long)getpid());
    if (!(f = fopen(probe, "wb"))) return "/tmp";
    fclose(f);
    remove(probe);
    return "/dev/shm";
}

/* path holds exactly data[0..n); anything else ends the run. */
static void write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n > 0 && fwrite(data, 1, n, f) != n) || fclose(f) != 0) abort();
}

#endif /* HPDL_FUZZ_FILES_H */
