/* libFuzzer target: hidden-layer width lists (hpdl_mlp_parse_widths), as a
   user types them after --hidden.

   Accepted lists must be exactly digits and single commas, and give
   in-h1-...-out with every width in [1, 2^20]; refused ones must leave the
   outputs untouched. */
#include "hpdl.h"

/* Digits, and commas only between them. */
static int well_formed(const char *s) {
    int digits = 0;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9') digits++;
        else if (*s == ',' && digits > 0) digits = 0;
        else return 0;
    }
    return digits > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char text[256];
    int widths[HPDL_MLP_MAX_LAYERS + 1], n = -1, i;
    hpdl_status st;
    if (size >= sizeof text) return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* an embedded NUL just ends the list early */
    widths[0] = -1;
    st = hpdl_mlp_parse_widths(text, 784, 10, widths, &n);
    if (st != HPDL_OK) {
        if (st != HPDL_ERR_INVALID || n != -1 || widths[0] != -1) abort();
        return 0;
    }
    if (!well_formed(text) || n < 3 || n > HPDL_MLP_MAX_LAYERS + 1 || widths[0] != 784 || widths[n - 1] != 10) abort();
    for (i = 1; i < n - 1; i++)
        if (widths[i] < 1 || widths[i] > 1 << 20) abort();
    return 0;
}
