/*
 * The CPU side of the per-type gather (hetero_gather.h): a float32 table's rows are copied, a
 * half table's widened row by row with the conversion every path shares (widen.h), so the CPU
 * reads each row once and writes the float32 row once. Each row is read where the view's map
 * says (its home, or a cache slot): the reference of the kernel's cache lookup.
 */
#include "hetero_gather.h"

#include "widen.h"

#include <string.h>

/* Below this many output values, starting threads costs more than the copy. */
#define HG_PARALLEL_VALUES 65536

gd__hetero_rows gd__hetero_rows_table(const void *table) {
    gd__hetero_rows v;
    memset(&v, 0, sizeof v);
    v.bases.home = GD__TIER_HOST;
    v.bases.base[GD__TIER_HOST] = table;
    return v;
}

gd__hetero_rows gd__hetero_rows_store(const gd__tier_store *s) {
    gd__hetero_rows v;
    v.bases = gd__tier_store_bases(s);
    v.loc = s ? s->loc : NULL;
    return v;
}

void gd__hetero_gather_cpu(const gd__hetero_rows *rows, gd_dtype dtype, int64_t dim,
                           int64_t first, const int64_t *ids, int64_t n, float *out, int threads) {
    const int64_t row_bytes = dim * (int64_t)gd_dtype_size(dtype);
    const int half = gd__widen_dtype(dtype);
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) schedule(static) \
    if (n * dim > HG_PARALLEL_VALUES)
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *row = gd__hetero_row_at(*rows, ids[i] - first, row_bytes);
        if (half)
            gd__widen_cpu((const uint16_t *)row, dtype, dim, out + i * dim);
        else
            memcpy(out + i * dim, row, (size_t)row_bytes);
    }
}
