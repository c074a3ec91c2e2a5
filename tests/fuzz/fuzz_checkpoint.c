/* libFuzzer target: the checkpoint loader (hpdl_ckpt_load) on arbitrary files.

   Each input is written to a file and loaded against a fixed small model
   (tests/fuzz/checkpoint_model.h: five tensors of f32, f64, f16, i8 and
   i64, ranks 0 to 3) into poisoned buffers. A refusal (HPDL_ERR_FORMAT or
   HPDL_ERR_MISMATCH; nothing else can happen to a file that exists) must
   leave every buffer poisoned. A file it accepts must be exactly what
   hpdl_ckpt_save writes for the values loaded: a model has one encoding.

       make fuzz                                               # every target, 60 s each
       build/fuzz/fuzz_checkpoint tests/fuzz/corpus/checkpoint # by hand */
#include "hpdl.h"
#include "tests/fuzz/checkpoint_model.h"

#include <unistd.h>

#include "tests/fuzz/fuzz_files.h"

static char input_path[64], saved_path[64];

/* The file at path holds exactly data[0..n). */
static int file_equals(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "rb");
    size_t i;
    int c, same = f != NULL;
    for (i = 0; same && i < n; i++) same = (c = fgetc(f)) == data[i];
    if (same) same = fgetc(f) == EOF;
    if (f) fclose(f);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fuzz_ckpt_model m;
    hpdl_status st;
    if (!input_path[0]) { /* one pair of files per process: fuzzers may run side by side */
        snprintf(input_path, sizeof input_path, "%s/hpdl_fuzz_ckpt_%ld_in", fuzz_dir(), (long)getpid());
        snprintf(saved_path, sizeof saved_path, "%s/hpdl_fuzz_ckpt_%ld_saved", fuzz_dir(), (long)getpid());
        fuzz_ckpt_model_init(&m, 0);
    }
    write_file(input_path, data, size);
    fuzz_ckpt_model_poison(&m);
    st = hpdl_ckpt_load(input_path, FUZZ_CKPT_MODEL, FUZZ_CKPT_TENSORS, m.entries);
    if (st == HPDL_OK) {
        if (hpdl_ckpt_save(saved_path, FUZZ_CKPT_MODEL, FUZZ_CKPT_TENSORS, m.entries) != HPDL_OK) abort();
        if (!file_equals(saved_path, data, size)) abort();
        remove(saved_path);
    } else if ((st != HPDL_ERR_FORMAT && st != HPDL_ERR_MISMATCH) || !fuzz_ckpt_model_poisoned(&m)) {
        abort();
    }
    remove(input_path); /* nothing left behind when the run ends */
    return 0;
}
