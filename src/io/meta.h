/*
 * meta.json of a dataset directory: its counts, the list of array files with their dtype and
 * shape, and free-form provenance. The parser works on a buffer so the fuzzer can drive it;
 * the exact format is documented at the top of meta.c.
 */
#ifndef GD_IO_META_H
#define GD_IO_META_H

#include "io/dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__META_FORMAT "graphdirect-dataset"
#define GD__META_VERSION 1
/* meta.json files larger than this are refused before parsing. */
#define GD__META_MAX_BYTES (1 << 20)
/* Largest count or dimension accepted: integers beyond 2^53 are not exact in JSON doubles. */
#define GD__META_MAX_COUNT (INT64_C(1) << 53)

typedef struct {
    int present;
    char *file; /* a plain file name inside the dataset directory */
    gd_dtype dtype;
    int ndim;         /* 1 or 2 */
    int64_t shape[2]; /* shape[1] == 1 for 1-D arrays */
} gd__meta_array;

typedef struct {
    char *name;
    int64_t num_nodes;
    int64_t num_edges;
    int64_t feature_dim;
    int64_t num_classes;
    gd__meta_array arrays[GD__ARRAY_SLOTS];
    gd__schema schema; /* num_node_types 0: homogeneous */
    int num_info;
    char *info_key[GD__DATASET_MAX_INFO];
    char *info_value[GD__DATASET_MAX_INFO];
} gd__meta;

/*
 * Parse and validate meta.json text held in text[0..len) (no terminating NUL needed). what
 * names the file in messages. On success *out owns gd_malloc'd strings: release with
 * gd__meta_free. On failure *out is left empty.
 */
gd_status gd__meta_parse(const char *text, size_t len, const char *what, gd__meta *out);
/* Read and parse dir/meta.json. */
gd_status gd__meta_read(const char *path, gd__meta *out);
void gd__meta_free(gd__meta *m);
/* The default file name of an array: "<gd_array_name(id)>.npy". */
const char *gd__meta_default_file(gd_array_id id);
/* Whether dtype is allowed for array slot id; *expected gets the allowed names for a message. */
bool gd__array_dtype_ok(int id, gd_dtype dtype, const char **expected);
/* Write the meta.json of ds (its counts, present arrays under their default file names and
 * info) to path, atomically. */
gd_status gd__meta_write(const char *path, const gd_dataset_t *ds);

#ifdef __cplusplus
}
#endif

#endif
