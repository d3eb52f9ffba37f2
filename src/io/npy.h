/*
 * Internal .npy helpers. The header parser works on a buffer so the fuzzer can drive it
 * directly; the file functions build on it.
 */
#ifndef GD_IO_NPY_H
#define GD_IO_NPY_H

#include "io/dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of the data of arrays of at least this many bytes. */
#define GD__NPY_ALIGN 4096

/*
 * Parse a .npy header held in buf[0..len) (len may be the whole file or just its start).
 * file_size is the size of the whole file (to check that the data fits); what names the file
 * in messages. Rejects: wrong magic, unknown version, header longer than the buffer, malformed
 * dict, Fortran order, big-endian or unknown dtypes, more than 2 dimensions, negative or
 * overflowing shapes, and data that does not fit the file.
 */
gd_status gd__npy_parse_header(const void *buf, size_t len, int64_t file_size, const char *what,
                               gd_npy_info *info);

/* Size of the header gd__npy_write_header would produce for this array (its data offset). */
int64_t gd__npy_header_size(gd_dtype dtype, int ndim, const int64_t *shape);
/* Format a version-1.0 header of exactly header_size bytes into buf. */
gd_status gd__npy_format_header(gd_dtype dtype, int ndim, const int64_t *shape, char *buf,
                                int64_t header_size);

/* Read a whole .npy file into a gd_malloc'd array (GD__STORE_HEAP: its data may be taken). */
gd_status gd__npy_load(const char *path, gd__array *out);
/* The same into memory for a table (gd__array_own: huge pages from 2 MiB; not to be taken). */
gd_status gd__npy_load_table(const char *path, gd__array *out);
/*
 * Memory of bytes for a's data, owned by a: a table of 2 MiB or more mapped for huge pages
 * (core/hugepages.h; GD__STORE_ANON), a smaller one gd_malloc'd (GD__STORE_HEAP). Sets data,
 * store and the mapping; the shape is the caller's. GD_ERR_NO_MEMORY naming what.
 */
gd_status gd__array_own(gd__array *a, size_t bytes, const char *what);
/* Map a .npy file read-only (GD__STORE_MAP_RO). */
gd_status gd__npy_map(const char *path, gd__array *out);
/* Release an array of any store kind (unmap or free) and reset it to GD__STORE_NONE. */
void gd__array_release(gd__array *a);

#ifdef __cplusplus
}
#endif

#endif
