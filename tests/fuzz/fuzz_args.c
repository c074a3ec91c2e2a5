/* libFuzzer target: the strict command-line numbers (hpdl_arg_int,
   hpdl_arg_i64, hpdl_arg_f64) every example and bench reads its flags with.

   The first byte picks the parser and its range; the rest is the text.
   Accepted values must lie in the range (finite, for doubles) and come from
   text with no space, sign or junk around the number; refused ones leave
   the output untouched. */
#include "hpdl.h"

static int has_space(const char *s) {
    for (; *s; s++)
        if (*s == ' ' || (*s >= '\t' && *s <= '\r')) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char text[128];
    int v = -7;
    int64_t big = -7;
    double d = -7.0;
    if (size < 1 || size > sizeof text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 3) {
    case 0:
        if (hpdl_arg_int("--n", text, -5, 1 << 20, &v) == HPDL_OK) {
            if (v < -5 || v > 1 << 20 || has_space(text) || text[0] == '+') abort();
        } else if (v != -7) abort();
        break;
    case 1:
        if (hpdl_arg_i64("--seed", text, 0, INT64_MAX, &big) == HPDL_OK) {
            if (big < 0 || has_space(text) || text[0] == '+') abort();
        } else if (big != -7) abort();
        break;
    default:
        if (hpdl_arg_f64("--lr", text, 0.0, 1e30, &d) == HPDL_OK) {
            if (!(d >= 0.0 && d <= 1e30) || has_space(text)) abort();
        } else if (d != -7.0) abort();
    }
    return 0;
}
