/*
 * What test_disk_rows (the cpu path) and test_disk_tier (the GPU's) share: a table written
 * again as stripe files (src/io/ioeng.h, gd__stripes), every row where gd__stripes_locate puts
 * it, each file behind a header of its own length so that the data offsets differ.
 */
#ifndef GD_TESTS_STRIPE_UTIL_H
#define GD_TESTS_STRIPE_UTIL_H

#include "io/ioeng.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

#define STRIPE_MAX_FILES 4

typedef struct {
    gd__stripes geo; /* nfiles 0: no stripes (the table's one file) */
    char path[STRIPE_MAX_FILES][4300];
    gd__ioeng_file files[STRIPE_MAX_FILES]; /* path and data offset, for the engine */
} stripe_set;

/*
 * rows x row_bytes of table as s->geo's files dir/stripeK.bin, file k's data after a header
 * of head_unit x (k + 1) bytes; each file's rows are checked to be its share, back to back.
 */
static inline void stripe_write(stripe_set *s, const char *dir, const unsigned char *table,
                                int64_t rows, int64_t row_bytes, int nfiles, int64_t unit_rows,
                                int64_t head_unit) {
    T_ASSERT(nfiles >= 1 && nfiles <= STRIPE_MAX_FILES);
    s->geo = (gd__stripes){nfiles, unit_rows};
    for (int k = 0; k < nfiles; k++) {
        snprintf(s->path[k], sizeof s->path[k], "%s/stripe%d.bin", dir, k);
        const int64_t head = head_unit * (k + 1), n = gd__stripes_file_rows(&s->geo, rows, k);
        unsigned char *buf = (unsigned char *)gd_malloc((size_t)(head + n * row_bytes));
        T_ASSERT(buf);
        memset(buf, 's', (size_t)head);
        int64_t placed = 0;
        for (int64_t r = 0; r < rows; r++) {
            int file;
            int64_t local;
            gd__stripes_locate(&s->geo, r, &file, &local);
            if (file != k) continue;
            T_ASSERT(local >= 0 && local < n);
            memcpy(buf + head + local * row_bytes, table + r * row_bytes, (size_t)row_bytes);
            placed++;
        }
        T_EQ_INT(placed, n);
        FILE *f = fopen(s->path[k], "wb");
        T_ASSERT(f);
        T_ASSERT(fwrite(buf, 1, (size_t)(head + n * row_bytes), f) ==
                 (size_t)(head + n * row_bytes));
        T_ASSERT(fclose(f) == 0);
        gd_free(buf);
        s->files[k] = (gd__ioeng_file){s->path[k], head};
    }
}

#endif /* GD_TESTS_STRIPE_UTIL_H */
