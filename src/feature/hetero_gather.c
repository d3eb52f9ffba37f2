/*
 * The CPU side of the per-type gather (hetero_gather.h): a float32 table's rows are copied, a
 * half table's widened row by row with the conversion every path shares (widen.h), so the CPU
 * reads each row once and writes the float32 row once.
 */
#include "hetero_gather.h"

#include "widen.h"

#include <string.h>

/* Below this many output values, starting threads costs more than the copy. */
#define HG_PARALLEL_VALUES 65536

void gd__hetero_gather_cpu(const void *table, gd_dtype dtype, int64_t dim, int64_t first,
                           const int64_t *ids, int64_t n, float *out, int threads) {
    const size_t row_bytes = (size_t)dim * gd_dtype_size(dtype);
    const int half = gd__widen_dtype(dtype);
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) schedule(static) \
    if (n * dim > HG_PARALLEL_VALUES)
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *row = (const unsigned char *)table + (size_t)(ids[i] - first) * row_bytes;
        if (half)
            gd__widen_cpu((const uint16_t *)row, dtype, dim, out + i * dim);
        else
            memcpy(out + i * dim, row, row_bytes);
    }
}
