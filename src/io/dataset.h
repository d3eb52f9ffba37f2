/*
 * Internal view of a dataset, shared by the readers, the writer, the converters and the
 * generator. A dataset is built in one of two places:
 *   - in memory: arrays are gd_malloc'd;
 *   - on disk: arrays are .npy files created in a temporary directory beside the target,
 *     sized and memory-mapped writable, so a generator fills them in parallel with no second
 *     copy; gd__dataset_finish() flushes them, writes meta.json and renames the directory into
 *     place. Until then nothing exists under the final name; closing an unfinished dataset
 *     removes the temporary directory.
 * An opened dataset maps (GD_OPEN_MMAP) or reads (GD_OPEN_LOAD) the files of an existing one.
 */
#ifndef GD_IO_DATASET_H
#define GD_IO_DATASET_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GD__STORE_NONE = 0,   /* no array */
    GD__STORE_HEAP = 1,   /* gd_malloc'd, owned */
    GD__STORE_MAP_RO = 2, /* read-only mapping of an existing file */
    GD__STORE_MAP_RW = 3, /* writable mapping of a file being built (on-disk builder) */
    GD__STORE_BORROWED = 4, /* the caller's memory (gd_dataset_from_arrays with borrow) */
    GD__STORE_ANON = 5      /* an owned anonymous mapping (core/hugepages.h), map_base/len */
} gd__store;

typedef struct {
    gd_dtype dtype;
    int ndim;         /* 1 or 2 */
    int64_t shape[2]; /* shape[1] == 1 for 1-D arrays */
    void *data;
    gd__store store;
    void *map_base; /* for mappings */
    size_t map_len;
    /* A read-only mapping's file and what it was when opened (gd__dataset_check_unchanged). */
    char *path;
    gd__file_id file;
    /* A striped table (io/stripes.h): path is its manifest, the files are these. */
    struct gd__stripe_table *stripes;
} gd__array;

/* Element i of an int32 or int64 array (the integer arrays of a dataset: indices, labels,
 * splits, node ids of the input formats), as int64. */
static inline int64_t gd__int_at(const void *data, gd_dtype dtype, int64_t i) {
    return dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)data)[i]
                                   : ((const int64_t *)data)[i];
}
static inline int64_t gd__array_int(const gd__array *a, int64_t i) {
    return gd__int_at(a->data, a->dtype, i);
}
/* The node type of node v from the T + 1 type offsets (T <= 16: a linear scan). */
static inline int gd__node_type_of(const int64_t *off, int T, int64_t v) {
    int t = 0;
    while (t + 1 < T && v >= off[t + 1]) t++;
    return t;
}
/* Element i of a heterogeneous dataset's edge_type array (int8, uint8 or int16). */
static inline int gd__edge_type_at(const void *data, gd_dtype dtype, int64_t i) {
    switch (dtype) {
    case GD_DTYPE_INT8:
        return ((const int8_t *)data)[i];
    case GD_DTYPE_UINT8:
        return ((const uint8_t *)data)[i];
    default:
        return ((const int16_t *)data)[i];
    }
}
/*
 * The first position of [lo, hi) whose edge type is at least r, in a list sorted by edge type
 * (every node's CSC list of a heterogeneous dataset): a node's run of edge type r is
 * [lower(r), lower(r + 1)), found in O(log degree) reads.
 */
static inline int64_t gd__edge_type_lower(const void *data, gd_dtype dtype, int64_t lo,
                                          int64_t hi, int r) {
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (gd__edge_type_at(data, dtype, mid) < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
/* A heterogeneous dataset's CSC as its typed readers use it (the typed sampler, exact inference). */
typedef struct {
    const int64_t *indptr, *offsets; /* the CSC's list starts; the T + 1 node type offsets */
    const void *indices;             /* int32 (is32) or int64 */
    int is32;
    gd_array_view etype; /* each edge's type, sorted within each list */
} gd__typed_csc;
/* ds's typed CSC (views into ds, valid while it is open). */
static inline gd_status gd__dataset_typed_csc(const gd_dataset_t *ds, gd__typed_csc *g) {
    gd_status st = GD_OK;
    gd_array_view v;
    if ((st = gd_dataset_array(ds, GD_ARRAY_INDPTR, &v)) != GD_OK) return st;
    g->indptr = v.data;
    if ((st = gd_dataset_array(ds, GD_ARRAY_INDICES, &v)) != GD_OK) return st;
    g->indices = v.data;
    g->is32 = v.dtype == GD_DTYPE_INT32;
    if ((st = gd_dataset_node_type_offsets(ds, &v)) != GD_OK) return st;
    g->offsets = v.data;
    return gd_dataset_edge_types(ds, &g->etype);
}
/* Element i of a feature table (float32, float16 or bfloat16), widened to float. */
static inline float gd__feature_at(const void *data, gd_dtype dtype, int64_t i) {
    switch (dtype) {
    case GD_DTYPE_FLOAT16:
        return gd_half_to_float(((const uint16_t *)data)[i]);
    case GD_DTYPE_BFLOAT16:
        return gd_bfloat16_to_float(((const uint16_t *)data)[i]);
    default:
        return ((const float *)data)[i];
    }
}

#define GD__DATASET_MAX_INFO 16

/*
 * The array slots of a dataset: the public gd_array_id ones, then those of a heterogeneous
 * graph (docs/formats.md, "Heterogeneous graphs"): the node type offsets, the edge type of
 * every CSC edge, and one feature table per node type (slot GD__ARRAY_TYPE_FEATURES + t).
 * Every loop over a dataset's files runs over all GD__ARRAY_SLOTS.
 */
enum {
    GD__ARRAY_NODE_TYPE_OFFSET = GD_ARRAY_COUNT,
    GD__ARRAY_EDGE_TYPE,
    GD__ARRAY_TYPE_FEATURES,
    GD__ARRAY_SLOTS = GD__ARRAY_TYPE_FEATURES + GD_MAX_NODE_TYPES
};
/* Longest node or edge type name (letters, digits, '_', '-'; it becomes part of a file name). */
#define GD__TYPE_NAME_MAX 64

/*
 * The types of a heterogeneous graph; num_node_types 0 means a homogeneous one. Node type t owns
 * the ids [offset[t], offset[t + 1]) of the node_type_offset array; edge type r goes from nodes
 * of edge_src[r] to nodes of edge_dst[r]; labels and splits belong to target_type.
 */
typedef struct {
    int num_node_types;
    int num_edge_types;
    int target_type;
    char node_type[GD_MAX_NODE_TYPES][GD__TYPE_NAME_MAX + 1];
    char edge_type[GD_MAX_EDGE_TYPES][GD__TYPE_NAME_MAX + 1];
    int edge_src[GD_MAX_EDGE_TYPES];
    int edge_dst[GD_MAX_EDGE_TYPES];
} gd__schema;

/*
 * The name of array slot id in meta.json's "arrays" and in messages: gd_array_name for the
 * public ones, "node_type_offset", "edge_type", and "features.<type>" for a type's table
 * (written into buf, n bytes). The default file is that name with '.' as '_' plus ".npy".
 */
const char *gd__array_slot_name(const gd__schema *sc, int id, char *buf, size_t n);
void gd__array_slot_file(const gd__schema *sc, int id, char *buf, size_t n);

struct gd_dataset {
    char *name;
    int64_t num_nodes;
    int64_t num_edges;
    int64_t feature_dim; /* 0 without features */
    int64_t num_classes; /* 0 without labels */
    gd__array arrays[GD__ARRAY_SLOTS];
    gd__schema schema;
    char *dir;       /* the directory it was opened from, or finished into; NULL in memory */
    char *build_dir; /* temporary directory of an unfinished on-disk build */
    int overwrite;
    int finished;
    /* Free-form provenance written to meta.json "info" (string key -> string value). */
    int num_info;
    char *info_key[GD__DATASET_MAX_INFO];
    char *info_value[GD__DATASET_MAX_INFO];
};

/*
 * Start a dataset. out_dir NULL builds in memory. Otherwise the final directory must not exist
 * (unless overwrite) and its parent must; the temporary "<out_dir>.tmp.<pid>" is created now.
 */
gd_status gd__dataset_new(const char *name, const char *out_dir, int overwrite,
                          gd_dataset_t **out);
/*
 * Allocate array id with the given dtype and shape (ndim 1: shape[1] ignored) and return a
 * writable pointer to its elements: heap memory, or a writable mapping of the .npy file being
 * built. Contents are unspecified (zero for files).
 */
gd_status gd__dataset_alloc(gd_dataset_t *ds, int id, gd_dtype dtype, int ndim,
                            const int64_t *shape, void **data);
/*
 * Make ds heterogeneous with the types of sc (checked: names, counts, every edge type's node
 * types in range); the arrays of the slots above GD_ARRAY_COUNT are then allocated as usual.
 */
gd_status gd__dataset_set_schema(gd_dataset_t *ds, const gd__schema *sc);
/* Whether s is a valid type name (1 to GD__TYPE_NAME_MAX letters, digits, '_' or '-'). */
int gd__type_name_ok(const char *s);
/* The checks of gd__dataset_set_schema, for meta.json's reader too. what names the source. */
gd_status gd__schema_check(const gd__schema *sc, const char *what);
/*
 * Hand a gd_malloc'd buffer to the dataset. In memory it is kept as is; on disk it is written to
 * the file and freed. The dataset owns data from the call on, also when the call fails.
 */
gd_status gd__dataset_adopt(gd_dataset_t *ds, int id, gd_dtype dtype, int ndim,
                            const int64_t *shape, void *data);
/*
 * The record of a full validation in a dataset directory (validated.c): 1 if `.validated` lists
 * meta.json and files[0..n) exactly as they are now (size, times, inode); written after a full
 * check, best effort.
 */
int gd__validated_matches(const char *dir, const char *const *files, int n);
void gd__validated_write(const char *dir, const char *const *files, int n);
/* A file's identity (size, modification and change times in ns, inode, device) as one line of
 * text; -1 when it cannot be stat'ed. */
int gd__path_identity(const char *path, char *buf, size_t n);
/*
 * The out-degree record of a dataset directory (outdeg_cache.c): load fills deg[0..num_nodes)
 * and returns 1 when `.outdeg` was written from indptr and indices exactly as they are now
 * (else 0, deg unspecified); save writes it, best effort (1: written). Datasets not mapped from files, and
 * GD_DEGREE_CACHE=0, have none.
 */
int gd__outdeg_cache_load(const gd_dataset_t *ds, int64_t *deg);
/* 1 when the record's header and size match ds's files (its values are read by load only). */
int gd__outdeg_cache_matches(const gd_dataset_t *ds);
int gd__outdeg_cache_save(const gd_dataset_t *ds, const int64_t *deg);
/*
 * Move a (a mapped .npy file, GD__STORE_MAP_RO) into array id; a is reset, also on failure. An
 * on-disk build links the file into its directory (or writes it there) and maps that.
 */
gd_status gd__dataset_take(gd_dataset_t *ds, int id, gd__array *a);
/* Point array id at the caller's memory (in memory only; never freed or written). */
gd_status gd__dataset_borrow(gd_dataset_t *ds, gd_array_id id, gd_dtype dtype, int ndim,
                             const int64_t *shape, const void *data);
/* Record a provenance entry for meta.json "info" (both strings are copied). */
gd_status gd__dataset_set_info(gd_dataset_t *ds, const char *key, const char *value);
/* The same with the value formatted as printf does (at most 255 bytes). */
gd_status gd__dataset_set_infof(gd_dataset_t *ds, const char *key, const char *fmt, ...)
    GD_PRINTF(3, 4);
/*
 * Complete the dataset: derive and check the counts (num_nodes from indptr, num_edges, feature
 * dim, num_classes = max label + 1 unless already set), run gd__dataset_check, and for an
 * on-disk build flush every file, write meta.json and rename the directory into place. The
 * dataset stays usable afterwards.
 */
gd_status gd__dataset_finish(gd_dataset_t *ds, int validate_graph);
/*
 * Consistency of the arrays: indptr/indices present and valid (every index when
 * validate_graph), features (num_nodes x dim, float32/float16/bfloat16, no NaN or Inf when
 * validate_graph), labels (num_nodes, integer, -1 = unlabelled, else < num_classes), split
 * arrays (integer, ids in range). Messages name the array, the position and the value.
 */
gd_status gd__dataset_check(const gd_dataset_t *ds, int validate_graph);
/*
 * A dataset of these sizes built in host memory (indptr, indices, features of dtype_bytes,
 * labels, splits) plus scratch bytes must fit the host memory budget (core/hostmem.h), else
 * GD_ERR_NO_MEMORY naming what, both sizes and the fixes (writing to disk, a smaller size).
 */
gd_status gd__dataset_memory_check(int64_t nodes, int64_t edges, int64_t dim, int64_t dtype_bytes,
                                   int64_t scratch, const char *what);

/*
 * Whether the files the dataset maps are as they were when it was opened: GD_ERR_IO naming the
 * first one truncated or written in place since (training reads it through the mapping, so it
 * would fault or read garbage). Arrays read into memory are not checked. Called by the trainer
 * at every epoch boundary.
 */
gd_status gd__dataset_check_unchanged(const gd_dataset_t *ds);

/* The heterogeneous presets of gd_generate (generate_hetero.c), which it hands them to. */
int gd__generate_is_hetero(const char *preset);
const char *gd__generate_hetero_names(void);
gd_status gd__generate_hetero(const gd_generate_options *o, gd_dataset_t **out);

/* Bytes of one array (elements x dtype size). */
int64_t gd__array_bytes(const gd__array *a);
/* The largest value of an integer array (the labels), or -1 when there is none. */
int64_t gd__array_max_label(const gd__array *a);
/* An array's shape as numpy prints it, "(n, d)" or "(n,)", into buf. */
void gd__array_shape_text(char *buf, size_t n, int ndim, const int64_t *shape);

#ifdef __cplusplus
}
#endif

#endif
