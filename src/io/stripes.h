/*
 * Striped feature tables (issue 16 item 1; docs/formats.md, "Striped features"): a dataset's
 * feature table kept as several .npy files, each in a directory of its own (a disk of its own),
 * listed by the manifest features.stripes that meta.json names instead of features.npy. Unit u
 * of the table, rows [u x unit_rows, (u + 1) x unit_rows), is unit u / F of file u mod F
 * (gd__stripes, io/ioeng.h), so that random rows spread evenly over the disks.
 *
 * Opened, the files are mapped side by side into one reserved address range (MAP_FIXED, one
 * mapping a unit), so that the in-memory modes see one table at a->data as with features.npy,
 * while the SSD tier reads the files themselves (gd__stripe_table's files, with io_uring).
 */
#ifndef GD_IO_STRIPES_H
#define GD_IO_STRIPES_H

#include "io/dataset.h"
#include "io/ioeng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__STRIPES_FORMAT "graphdirect-stripes"
#define GD__STRIPES_VERSION 1
/* Files of one table, at most. */
#define GD__STRIPES_MAX_FILES 64
/* Units (mappings) of one table, at most: below Linux's default vm.max_map_count of 65530. */
#define GD__STRIPES_MAX_UNITS 32768
/* The unit asked when none is: 64 MiB (more when the table has more units than the maximum). */
#define GD__STRIPES_UNIT_BYTES ((int64_t)64 << 20)

typedef struct gd__stripe_table {
    int nfiles;
    int64_t unit_rows;
    /* Each file as the manifest names it (relative to the dataset directory, or absolute). */
    char *name[GD__STRIPES_MAX_FILES];
    char *path[GD__STRIPES_MAX_FILES];           /* the name resolved: what is opened */
    gd__ioeng_file files[GD__STRIPES_MAX_FILES]; /* path and data offset, for the engine */
    gd__file_id id[GD__STRIPES_MAX_FILES];       /* each file when opened */
} gd__stripe_table;

/*
 * Open the table of the manifest at path (a dataset's features.stripes) into a: every file's
 * .npy header is checked against the manifest (dtype, columns, its share of the rows, a data
 * offset on a page), and the files are mapped side by side (load: copied into memory a owns,
 * as gd__npy_load_table). a->store is GD__STORE_MAP_RO (or the load's), a->path the manifest,
 * a->stripes the files. GD_ERR_FORMAT / GD_ERR_IO / GD_ERR_NOT_FOUND name the file and the fix.
 */
gd_status gd__stripes_open(const char *path, int load, gd__array *a);
/* The files' names for the .validated record (the manifest's names): names[0..n). */
int gd__stripes_names(const gd__stripe_table *t, const char **names, int max);
/* GD_ERR_IO naming the file if one of them changed in place since the open. */
gd_status gd__stripes_check_unchanged(const gd__stripe_table *t);
void gd__stripe_table_free(gd__stripe_table *t);

/* The unit of a table of rows of row_bytes for unit_bytes asked (0: the default): whole rows,
 * a multiple of 4 KiB, and no more than GD__STRIPES_MAX_UNITS units. */
int64_t gd__stripes_unit_rows(int64_t rows, int64_t row_bytes, int64_t unit_bytes);

#ifdef __cplusplus
}
#endif
#endif
