/*
 * libFuzzer target for the .npy header parser: the input is the start of a .npy file and also
 * stands for the whole file, so the parser's checks of header length, dtype, shape and data
 * size all see hostile values. It must never crash, read out of bounds or leak.
 */
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gd_npy_info info;
    /* Once as a whole file, once as a header of a file claimed to be much larger. */
    gd__npy_parse_header(data, size, (int64_t)size, "fuzz.npy", &info);
    if (gd__npy_parse_header(data, size, INT64_MAX / 2, "fuzz.npy", &info) == GD_OK) {
        if (info.data_bytes < 0 || info.data_offset < 10 || info.ndim < 0 || info.ndim > 2)
            __builtin_trap();
    }
    return 0;
}
