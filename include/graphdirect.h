/*
 * graphdirect: GPU-centric data access for training graph neural networks on graphs larger
 * than GPU memory.
 *
 * This is the one public header. Every exported symbol starts with gd_; handles are opaque;
 * every function that can fail returns a gd_status and leaves a thread-local message in
 * gd_last_error() naming what failed, the value involved and what the caller can do. The
 * library never aborts or exits the process.
 *
 * Options structs start with a size field so that they can grow without breaking the ABI:
 * initialise them with their *_INIT macro and change only the fields you need. Each such
 * struct gd_<name> also has a function gd_<name>_init(&o) that fills o with the same defaults,
 * for callers that cannot expand a C macro (the Python binding, other foreign-function
 * interfaces); the defaults are stated once, in the macro.
 */
#ifndef GRAPHDIRECT_H
#define GRAPHDIRECT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#define GD_VERSION_MAJOR 0
#define GD_VERSION_MINOR 2
#define GD_VERSION_PATCH 0
#define GD_VERSION_HEX ((GD_VERSION_MAJOR << 16) | (GD_VERSION_MINOR << 8) | GD_VERSION_PATCH)

/* The version of the library actually loaded, as "MAJOR.MINOR.PATCH". */
const char *gd_version(void);
/* The same as GD_VERSION_HEX, for comparing the header with the loaded library. */
unsigned gd_version_hex(void);

/* ----------------------------------------------------------------- status */

/* X(name, value, text): the single source of the status codes and their strings. */
#define GD_STATUS_MAP(X)                                                                  \
    X(GD_OK, 0, "success")                                                                \
    X(GD_ERR_INVALID_ARG, 1, "invalid argument")                                          \
    X(GD_ERR_NO_MEMORY, 2, "out of memory")                                               \
    X(GD_ERR_IO, 3, "input/output error")                                                 \
    X(GD_ERR_FORMAT, 4, "malformed or corrupt input")                                     \
    X(GD_ERR_RANGE, 5, "value out of range")                                              \
    X(GD_ERR_OVERFLOW, 6, "size overflow")                                                \
    X(GD_ERR_UNSUPPORTED, 7, "unsupported")                                               \
    X(GD_ERR_NOT_FOUND, 8, "not found")                                                   \
    X(GD_ERR_NO_DEVICE, 9, "no usable GPU")                                               \
    X(GD_ERR_CUDA, 10, "CUDA error")                                                      \
    X(GD_ERR_PIN, 11, "cannot pin host memory")                                           \
    X(GD_ERR_INTERRUPTED, 12, "interrupted")                                              \
    X(GD_ERR_INTERNAL, 13, "internal error")                                              \
    X(GD_ERR_ALREADY_REGISTERED, 14, "host memory already registered")                    \
    X(GD_ERR_COMM, 15, "another rank failed or the communicator was aborted")

typedef enum {
#define GD_STATUS_ENUM_(name, value, text) name = value,
    GD_STATUS_MAP(GD_STATUS_ENUM_)
#undef GD_STATUS_ENUM_
} gd_status;

/* A static string describing a status code ("unknown status" for values outside the enum). */
const char *gd_status_string(gd_status status);
/* The code's name as written here ("GD_ERR_INVALID_ARG"); NULL for values outside the enum. */
const char *gd_status_name(gd_status status);
/* The message left by the last failing gd_ call on this thread ("" if none). */
const char *gd_last_error(void);
/* Forget the last error of this thread. */
void gd_clear_error(void);

/* ---------------------------------------------------------------- logging */

typedef enum {
    GD_LOG_NONE = 0,
    GD_LOG_ERROR = 1,
    GD_LOG_WARN = 2,
    GD_LOG_INFO = 3,
    GD_LOG_DEBUG = 4,
    GD_LOG_TRACE = 5
} gd_log_level;

/* A log sink. The message has no trailing newline and is valid only during the call. */
typedef void (*gd_log_fn)(gd_log_level level, const char *message, void *user);

/* Route log messages to fn (NULL restores the default: stderr). */
void gd_log_set(gd_log_fn fn, void *user);
/* The current threshold; it starts from the GD_LOG_LEVEL parameter (default: warn). */
gd_log_level gd_log_level_get(void);
void gd_log_level_set(gd_log_level level);
/* Parse "none|error|warn|info|debug|trace" or a digit 0-5. */
gd_status gd_log_level_parse(const char *text, gd_log_level *out);

/* -------------------------------------------------- environment parameters */

/*
 * Every GD_* environment variable the library reads is declared once in a registry with its
 * default and help text; gd_param_* lists and reads them. A value set with gd_param_set()
 * overrides the environment for this process.
 */
int gd_param_count(void);
gd_status gd_param_describe(int index, const char **name, const char **default_value,
                            const char **help);
/* The effective value: set > environment > default. Returns GD_ERR_NOT_FOUND if unknown. */
gd_status gd_param_get(const char *name, const char **value);
gd_status gd_param_get_int(const char *name, int64_t *value);
/* Override a parameter; NULL value removes the override. */
gd_status gd_param_set(const char *name, const char *value);

/* ------------------------------------------------------------- allocation */

/*
 * Every host allocation of the library goes through these wrappers. They keep a count of live
 * blocks and bytes (so tests can check for leaks) and take part in fault injection.
 */
void *gd_malloc(size_t bytes);
void *gd_calloc(size_t count, size_t size);
void *gd_realloc(void *ptr, size_t bytes);
void gd_free(void *ptr);
/* Live allocations made through gd_malloc & co, and the bytes they hold. */
void gd_alloc_stats(int64_t *live_blocks, int64_t *live_bytes);

/*
 * Remove what killed graphdirect writers left beside path: "<path>.tmp.<pid>" files or folders
 * (and a dataset's "<path>.old.<pid>", which goes back to path if path is missing) whose process
 * no longer runs, each with a warning in the log. The library's writers do this themselves;
 * this is for programs that write their own outputs the same way (a temporary file named
 * "<path>.tmp.<pid>", renamed over path when complete). Never fails: what cannot be removed is
 * only logged. A pid of another host or PID namespace (a shared file system) looks gone.
 */
void gd_sweep_stale_temporaries(const char *path);

/*
 * Fault injection, for tests: after gd_fault_set(kind, n), the n-th call (1-based) of that kind
 * fails as if the resource were exhausted, and only that one. n = 0 disables it.
 * gd_fault_calls() counts the calls of a kind since the last gd_fault_set() of that kind, so a
 * test can run an operation once, read the count and then walk n over every call.
 */
typedef enum {
    GD_FAULT_ALLOC = 0, /* gd_malloc, gd_calloc, gd_realloc */
    GD_FAULT_READ = 1,  /* file open, read and map */
    GD_FAULT_WRITE = 2, /* file create, write, sync and rename */
    GD_FAULT_PIN = 3,   /* page-locking host memory for the GPU */
    GD_FAULT_KIND_COUNT = 4
} gd_fault_kind;
void gd_fault_set(gd_fault_kind kind, int64_t n);
int64_t gd_fault_calls(gd_fault_kind kind);

/* ----------------------------------------------------------------- dtypes */

typedef enum {
    GD_DTYPE_INVALID = 0,
    GD_DTYPE_FLOAT32 = 1,
    GD_DTYPE_FLOAT16 = 2,
    GD_DTYPE_BFLOAT16 = 3,
    GD_DTYPE_FLOAT64 = 4,
    GD_DTYPE_INT8 = 5,
    GD_DTYPE_UINT8 = 6,
    GD_DTYPE_INT16 = 7,
    GD_DTYPE_INT32 = 8,
    GD_DTYPE_INT64 = 9,
    GD_DTYPE_BOOL = 10
} gd_dtype;

size_t gd_dtype_size(gd_dtype dtype);
/* "float32", "float16", "bfloat16", "int64" ... */
const char *gd_dtype_name(gd_dtype dtype);
gd_status gd_dtype_parse(const char *name, gd_dtype *out);

/* Bit-exact conversions used by readers, writers and the CPU reference paths. */
uint16_t gd_float_to_half(float value);
float gd_half_to_float(uint16_t value);
uint16_t gd_float_to_bfloat16(float value);
float gd_bfloat16_to_float(uint16_t value);

/* A borrowed view of an array owned by someone else (row-major, at most 2-D here). */
typedef struct {
    gd_dtype dtype;
    int ndim;
    int64_t shape[2];
    void *data;
} gd_array_view;

/* ----------------------------------------------------------- progress */

/*
 * Long operations (generate, convert, CSC build) report progress through this callback:
 * stage names the step, done/total count its work units (total 0 = unknown). Returning
 * non-zero asks the operation to stop; it then fails with GD_ERR_INTERRUPTED and cleans up.
 */
typedef int (*gd_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

/* ------------------------------------------------------------------ .npy */

typedef struct {
    gd_dtype dtype;
    int ndim;           /* 0, 1 or 2 */
    int64_t shape[2];   /* unused dimensions are 1 */
    int64_t data_offset; /* byte offset of the data in the file */
    int64_t data_bytes;
} gd_npy_info;

/* Read and validate the header of a .npy file (format 1.0/2.0/3.0, C order, little-endian). */
gd_status gd_npy_read_info(const char *path, gd_npy_info *info);
/*
 * Write a whole array as a .npy file, atomically: a temporary file beside path is written,
 * flushed to disk and renamed over path, so a failure leaves no partial file. Arrays of 4 KiB
 * or more get their data at a 4 KiB-aligned offset (for mmap and O_DIRECT).
 */
gd_status gd_npy_write(const char *path, gd_dtype dtype, int ndim, const int64_t *shape,
                       const void *data);

/* --------------------------------------------------------------- dataset */

/*
 * A dataset directory: meta.json plus indptr.npy, indices.npy (the CSC graph: for each
 * destination node its in-neighbours), features.npy, labels.npy, train_idx.npy, valid_idx.npy
 * and test_idx.npy. See docs/formats.md.
 */
typedef struct gd_dataset gd_dataset_t;

typedef enum {
    GD_ARRAY_INDPTR = 0,
    GD_ARRAY_INDICES = 1,
    GD_ARRAY_FEATURES = 2,
    GD_ARRAY_LABELS = 3,
    GD_ARRAY_TRAIN_IDX = 4,
    GD_ARRAY_VALID_IDX = 5,
    GD_ARRAY_TEST_IDX = 6,
    GD_ARRAY_COUNT = 7
} gd_array_id;

/* "indptr", "indices", ... (the file stem). */
const char *gd_array_name(gd_array_id id);

typedef enum {
    GD_OPEN_MMAP = 0, /* map the files read-only; pages are read on demand */
    GD_OPEN_LOAD = 1  /* read the arrays into private memory */
} gd_open_mode;

typedef struct {
    size_t size;        /* sizeof(gd_dataset_open_options) */
    gd_open_mode mode;
    /*
     * 1: check every index, label and feature value (O(E + N x dim)), unless an earlier full
     * check recorded in the directory (.validated: every file's size, times and inode) still
     * matches the files; 2: always; 0: sizes only.
     */
    int validate_graph;
} gd_dataset_open_options;
#define GD_DATASET_OPEN_OPTIONS_INIT {sizeof(gd_dataset_open_options), GD_OPEN_MMAP, 1}
void gd_dataset_open_options_init(gd_dataset_open_options *o);

gd_status gd_dataset_open(const char *dir, const gd_dataset_open_options *options,
                          gd_dataset_t **out);
void gd_dataset_close(gd_dataset_t *ds);

/*
 * A dataset from arrays the caller has (numpy, torch, a PyG Data, its own loader). The graph is
 * given either as CSC (indptr: num_nodes + 1 int64; indices: num_edges int32 or int64, the
 * in-neighbours of each node, sorted or not) or as COO edges src[i] -> dst[i] (PyG's
 * edge_index rows 0 and 1; int64), from which a CSC is built (duplicates removed, reverse
 * edges added with symmetrize). features (num_nodes x feature_dim, row-major, float32, float16
 * or bfloat16), labels (num_nodes int64, -1 = unlabelled) and the splits (int64 node ids) are
 * optional. With borrow the dataset reads the caller's CSC arrays, features and labels in place
 * (no copy; they must stay alive and unchanged until the dataset is closed, and a zero-copy
 * trainer or loader page-locks them where they are); without it they are copied. Everything is
 * checked as gd_dataset_open checks a directory (validate: every index and feature value too),
 * and a failure names the array, the position and the value.
 */
typedef struct {
    size_t size;         /* sizeof(gd_dataset_arrays) */
    const char *name;    /* NULL: "arrays" */
    int64_t num_nodes;   /* COO: 0 = 1 + the largest id of the edges and splits */
    const int64_t *indptr;  /* CSC ... */
    const void *indices;    /* ... */
    gd_dtype indices_dtype; /* ... GD_DTYPE_INT32 or GD_DTYPE_INT64 */
    const int64_t *src, *dst; /* or COO */
    int64_t num_edges;        /* CSC: indptr[num_nodes]; COO: the edges given */
    int symmetrize;           /* COO: add the reverse of every edge */
    const void *features;
    gd_dtype feature_dtype;
    int64_t feature_dim;
    const int64_t *labels;
    int64_t num_classes;      /* 0: the largest label + 1 */
    const int64_t *train_idx, *valid_idx, *test_idx;
    int64_t num_train, num_valid, num_test;
    int borrow;               /* 1: read the caller's arrays in place */
    int validate;             /* 1: check every index and feature value (O(E + N x dim)) */
} gd_dataset_arrays;
#define GD_DATASET_ARRAYS_INIT                                                                     \
    {sizeof(gd_dataset_arrays), NULL, 0, NULL, NULL, GD_DTYPE_INVALID, NULL, NULL, 0, 0, NULL,     \
     GD_DTYPE_FLOAT32, 0, NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, 1}
void gd_dataset_arrays_init(gd_dataset_arrays *o);
gd_status gd_dataset_from_arrays(const gd_dataset_arrays *arrays, gd_dataset_t **out);

/*
 * Write ds as a dataset directory at dir. The arrays go to a temporary directory beside dir,
 * are flushed and the directory is renamed into place, so dir is either complete or absent.
 * Fails if dir exists unless overwrite is set.
 */
gd_status gd_dataset_save(const gd_dataset_t *ds, const char *dir, int overwrite);

const char *gd_dataset_name(const gd_dataset_t *ds);
int64_t gd_dataset_num_nodes(const gd_dataset_t *ds);
int64_t gd_dataset_num_edges(const gd_dataset_t *ds);
int64_t gd_dataset_feature_dim(const gd_dataset_t *ds);
int64_t gd_dataset_num_classes(const gd_dataset_t *ds);
/* Fails with GD_ERR_NOT_FOUND for an optional array the dataset does not have. */
gd_status gd_dataset_array(const gd_dataset_t *ds, gd_array_id id, gd_array_view *view);

/*
 * Heterogeneous graphs (docs/formats.md, "Heterogeneous graphs"): node ids are contiguous per
 * node type, every CSC edge has an edge type (source type, relation, destination type), each
 * node type has a feature table of its own width (or none), and labels and splits belong to one
 * target type. A homogeneous dataset has 0 node types.
 */
#define GD_MAX_NODE_TYPES 16
#define GD_MAX_EDGE_TYPES 32
int gd_dataset_num_node_types(const gd_dataset_t *ds);
int gd_dataset_num_edge_types(const gd_dataset_t *ds);
/* The node type whose nodes the labels and splits name (-1 for a homogeneous dataset). */
int gd_dataset_target_type(const gd_dataset_t *ds);

typedef struct {
    size_t size;          /* sizeof(gd_node_type_info) */
    const char *name;     /* "paper"; valid while the dataset is open */
    int64_t offset;       /* the type's first node id */
    int64_t count;        /* its nodes: ids [offset, offset + count) */
    int64_t feature_dim;  /* 0: the type has no features */
    gd_dtype feature_dtype;
} gd_node_type_info;
#define GD_NODE_TYPE_INFO_INIT {sizeof(gd_node_type_info), NULL, 0, 0, 0, GD_DTYPE_INVALID}
void gd_node_type_info_init(gd_node_type_info *o);
gd_status gd_dataset_node_type(const gd_dataset_t *ds, int type, gd_node_type_info *info);

typedef struct {
    size_t size;      /* sizeof(gd_edge_type_info) */
    const char *name; /* the relation, "cites" */
    int src_type;     /* the node types it joins: messages flow src -> dst */
    int dst_type;
} gd_edge_type_info;
#define GD_EDGE_TYPE_INFO_INIT {sizeof(gd_edge_type_info), NULL, -1, -1}
void gd_edge_type_info_init(gd_edge_type_info *o);
gd_status gd_dataset_edge_type(const gd_dataset_t *ds, int type, gd_edge_type_info *info);
/*
 * The arrays of a heterogeneous dataset: the node type offsets (int64, node types + 1), the
 * edge type of every CSC edge (int8, uint8 or int16, num_edges), and node type t's features
 * (count x feature_dim; GD_ERR_NOT_FOUND for a type without features). GD_ERR_NOT_FOUND for a
 * homogeneous dataset.
 */
gd_status gd_dataset_node_type_offsets(const gd_dataset_t *ds, gd_array_view *view);
gd_status gd_dataset_edge_types(const gd_dataset_t *ds, gd_array_view *view);
gd_status gd_dataset_type_features(const gd_dataset_t *ds, int type, gd_array_view *view);

/* ----------------------------------------------------------------- graph */

typedef struct {
    size_t size;           /* sizeof(gd_csc_options) */
    int symmetrize;        /* add the reverse of every edge */
    int remove_self_loops; /* drop (v, v) */
    gd_dtype index_dtype;  /* GD_DTYPE_INT32, GD_DTYPE_INT64, or GD_DTYPE_INVALID = smallest */
    gd_progress_fn progress;
    void *progress_user;
} gd_csc_options;
#define GD_CSC_OPTIONS_INIT {sizeof(gd_csc_options), 0, 0, GD_DTYPE_INVALID, NULL, NULL}
void gd_csc_options_init(gd_csc_options *o);

/*
 * Build CSC arrays from a COO edge list (src[i] -> dst[i]), sorting each node's in-neighbours
 * and removing duplicate edges. indptr (num_nodes + 1 int64) and indices (dtype per options)
 * are allocated with gd_malloc and returned; the caller frees them with gd_free.
 */
gd_status gd_csc_from_coo(int64_t num_nodes, int64_t num_edges, const int64_t *src,
                          const int64_t *dst, const gd_csc_options *options, int64_t **indptr,
                          void **indices, gd_dtype *indices_dtype, int64_t *num_csc_edges);

/*
 * Check a CSC graph: indptr[0] == 0, monotone, indptr[n] == num_edges, every index in
 * [0, num_nodes). The message of a failure names the first bad position and value.
 */
gd_status gd_csc_validate(int64_t num_nodes, const int64_t *indptr, const void *indices,
                          gd_dtype indices_dtype, int64_t num_edges);

typedef struct {
    int64_t num_nodes;
    int64_t num_edges;
    int64_t min_degree, max_degree;
    double mean_degree;
    int64_t median_degree, p90_degree, p99_degree;
    int64_t isolated;      /* nodes with in-degree 0 */
    double top1pct_share;  /* fraction of edges into the 1% nodes of highest in-degree */
    int64_t log2_hist[64]; /* nodes with degree 0, 1, 2-3, 4-7, ... */
} gd_degree_stats;

gd_status gd_csc_degree_stats(int64_t num_nodes, const int64_t *indptr, gd_degree_stats *out);

/* ------------------------------------------------------------- generator */

typedef struct {
    size_t size;            /* sizeof(gd_generate_options) */
    const char *preset;     /* "tiny", "small", "products", "papers" (NULL: "tiny") */
    uint64_t seed;
    int64_t num_nodes;      /* 0 = the preset's */
    double avg_degree;      /* 0 = the preset's */
    int64_t feature_dim;    /* 0 = the preset's */
    int64_t num_classes;    /* 0 = the preset's */
    gd_dtype feature_dtype; /* GD_DTYPE_INVALID = float32 */
    const char *out_dir;    /* NULL: build in memory; else write straight to this directory */
    int overwrite;          /* replace out_dir if it exists */
    int threads;            /* 0 = all cores */
    gd_progress_fn progress;
    void *progress_user;
} gd_generate_options;
#define GD_GENERATE_OPTIONS_INIT                                                          \
    {sizeof(gd_generate_options), NULL, 0, 0, 0.0, 0, 0, GD_DTYPE_INVALID, NULL, 0, 0, NULL, \
     NULL}
void gd_generate_options_init(gd_generate_options *o);

/*
 * Generate a synthetic dataset: power-law in-degrees, planted communities that are the labels,
 * features = class signal + noise so that averaging neighbours helps. Deterministic in seed
 * (and independent of the thread count). With out_dir set, arrays are written straight into
 * memory-mapped files there (no second copy) and *out is the dataset opened from them (may be
 * NULL if the caller does not want it).
 */
gd_status gd_generate(const gd_generate_options *options, gd_dataset_t **out);
/* Sizes a preset would produce, without generating it. */
gd_status gd_generate_preset_sizes(const char *preset, int64_t *num_nodes, double *avg_degree,
                                   int64_t *feature_dim, int64_t *num_classes);

/* ---------------------------------------------------------------- ingest */

typedef enum {
    GD_INPUT_AUTO = 0,     /* guess from the path */
    GD_INPUT_EDGELIST = 1, /* text "src dst" per line, '#' or '%' comments */
    GD_INPUT_NPY = 2,      /* directory with edge_index.npy (2 x E) or src.npy + dst.npy */
    GD_INPUT_OGB = 3,      /* OGB raw layout: raw/edge.csv.gz (or raw/data.npz) ... split/... */
    GD_INPUT_IGB = 4,      /* IGB: processed/paper/node_feat.npy, paper__cites__paper/... */
    /* OGB's heterogeneous raw layout (ogbn-mag): raw/num-node-dict.csv.gz, raw/relations/... */
    GD_INPUT_OGB_HETERO = 5,
    GD_INPUT_IGBH = 6      /* IGBH: processed/<type>/node_feat.npy, <src>__<rel>__<dst>/... */
} gd_input_format;

typedef struct {
    size_t size;              /* sizeof(gd_convert_options) */
    gd_input_format format;
    const char *name;         /* dataset name in meta.json (NULL: from the input path) */
    int symmetrize;           /* add the reverse of every edge (heterogeneous: see gd_convert) */
    int remove_self_loops;
    int relabel;              /* edge lists: map arbitrary ids to 0..n-1 in order of appearance */
    int64_t num_nodes;        /* 0: from the input (max id + 1, or the OGB node count);
                                 heterogeneous inputs take the counts per type from the input */
    const char *split;        /* OGB split folder name (NULL: the only one, or "random") */
    gd_dtype feature_dtype;   /* GD_DTYPE_INVALID: float32 */
    const char *features;     /* edge lists: optional features .npy */
    const char *labels;       /* edge lists: optional labels .npy */
    gd_progress_fn progress;
    void *progress_user;
    /*
     * NULL: build the dataset in memory (gd_dataset_save writes it). Else write it straight to
     * this directory as it is read (a temporary "<out_dir>.tmp.<pid>" renamed into place once
     * complete, as gd_generate does): the large arrays are written while the input is still
     * being read, and *out is the finished dataset, opened from its files.
     */
    const char *out_dir;
    int overwrite; /* with out_dir: replace it if it exists */
} gd_convert_options;
#define GD_CONVERT_OPTIONS_INIT                                                          \
    {sizeof(gd_convert_options), GD_INPUT_AUTO, NULL, 0, 0, 0, 0, NULL, GD_DTYPE_INVALID, \
     NULL, NULL, NULL, NULL, NULL, 0}
void gd_convert_options_init(gd_convert_options *o);

/*
 * Read a graph in one of the input formats and build a dataset, in memory or (out_dir) on disk.
 * The heterogeneous
 * layouts (GD_INPUT_OGB_HETERO, GD_INPUT_IGBH; docs/formats.md, "Converting heterogeneous
 * graphs") give a dataset with node and edge types: edge types sorted by (source type,
 * relation, destination type) names, and with symmetrize reverse relations as PyG's
 * ToUndirected adds them: (dst, "rev_<rel>", src) for a relation between two node types, the
 * reverse edges in the relation itself for one within a type.
 */
gd_status gd_convert(const char *input, const gd_convert_options *options, gd_dataset_t **out);

/*
 * Striped features (docs/formats.md, "Striped features"): the feature table of the dataset
 * directory dir rewritten as ntargets .npy files, one in each directory of targets (one a disk:
 * random rows then spread over the disks, which the SSD tier reads side by side). Unit u of the
 * table (unit_bytes, whole rows on 4 KiB) goes to file u mod ntargets. The files are written and
 * flushed first, then the manifest features.stripes beside meta.json, then meta.json, which
 * names it instead of features.npy; only then is the old table (features.npy, or the files of
 * an earlier striping) removed. A failure or an interruption (progress) before meta.json leaves
 * the dataset as it was, and no new file. Every mode opens a striped dataset as before (the
 * files mapped side by side). Homogeneous datasets with features only.
 */
typedef struct {
    size_t size;        /* sizeof(gd_stripe_options) */
    int64_t unit_bytes; /* 0: 64 MiB (more when the table has more than 32768 units) */
    gd_progress_fn progress;
    void *progress_user;
} gd_stripe_options;
#define GD_STRIPE_OPTIONS_INIT                                                                     \
    { sizeof(gd_stripe_options), 0, NULL, NULL }
void gd_stripe_options_init(gd_stripe_options *o);
gd_status gd_dataset_stripe(const char *dir, const char *const *targets, int ntargets,
                            const gd_stripe_options *options);
/*
 * The files that hold an opened dataset's feature table: their number (0: none, the table is in
 * memory; 1: features.npy; more: striped), with up to max paths in paths (valid while ds is
 * open) and, striped, the rows of a unit in *unit_rows (else 0; either pointer may be NULL).
 */
int gd_dataset_feature_files(const gd_dataset_t *ds, const char **paths, int max,
                             int64_t *unit_rows);

/* ---------------------------------------------------------------- devices */

typedef struct {
    char name[128];
    int major, minor;         /* compute capability */
    int multiprocessors;
    int64_t total_memory;     /* bytes */
    int64_t free_memory;      /* bytes, at the time of the call */
    int pci_bus;
    int can_map_host_memory;
} gd_device_info;

/* 1 if the library was built with CUDA, else 0. */
int gd_has_cuda(void);
/* Number of usable GPUs (0 without CUDA or without a driver; never an error). */
int gd_device_count(void);
gd_status gd_device_info_get(int device, gd_device_info *info);

/* ---------------------------------------------------------------- context */

/*
 * A context: the GPU its objects use and what they share on it, instead of process-wide state.
 * Host memory registered for the GPU (a zero-copy feature table, a graph's pinned lists) is
 * registered once per context, in its registry, and shared by every object of the context that
 * registers the same memory (host tensors, graphs, trainers, loaders): it is unregistered when
 * the last of them lets go. Two contexts share nothing; CUDA registers a range of memory once
 * per process, so a second context that asks for a range the first one holds is refused with
 * GD_ERR_ALREADY_REGISTERED (trainers and loaders then pin a copy). Objects created with a
 * context keep a reference to it, so gd_context_destroy may come before theirs: the context goes
 * when its last object does. Objects created without one (NULL) use a default context: one per
 * device per process, made on first use (gd_context_default); a NULL context argument means
 * the default context of device 0, and the trainer's and the loader's options name the device
 * of theirs. A context is usable without a GPU (cpu mode).
 */
typedef struct gd_context gd_context_t;
/*
 * Data parallelism: several processes (ranks), one GPU each, train one model together. Each
 * creates its context with its rank, the world size and the same communicator id, which rank 0
 * makes with gd_comm_id_create and hands to the others (graphdirect train --gpus does it through
 * pipes, under mpirun through MPI_Bcast): every trainer of such a context takes its share of
 * each global minibatch and all-reduces the gradients with NCCL (docs/multi_gpu.md). The
 * communicator is created without blocking and watched: a collective that does not finish within
 * comm_timeout_s, an asynchronous NCCL error, or *abort_flag becoming non-zero (set it from a
 * signal handler) aborts it, and every wait on it returns GD_ERR_COMM naming the cause instead of
 * hanging.
 */
#define GD_COMM_ID_BYTES 128
typedef struct {
    size_t size;                  /* sizeof(gd_context_options) */
    int device;                   /* the GPU ordinal */
    int rank;                     /* this process among world_size (0) */
    int world_size;               /* processes training together (1: alone, no communicator) */
    const unsigned char *comm_id; /* world_size > 1: GD_COMM_ID_BYTES, the same on every rank */
    double comm_timeout_s;        /* 0: GD_COMM_TIMEOUT from the environment, else 600 */
    volatile const int *abort_flag; /* optional: non-zero aborts the communicator */
} gd_context_options;
#define GD_CONTEXT_OPTIONS_INIT {sizeof(gd_context_options), 0, 0, 1, NULL, 0, NULL}
void gd_context_options_init(gd_context_options *o);
gd_status gd_context_create(const gd_context_options *options, gd_context_t **out);
/*
 * The default context of device (what objects created with a NULL context use), with a
 * reference for the caller: give it back with gd_context_destroy. Every call for one device
 * gives the same context while any reference to it lives.
 */
gd_status gd_context_default(int device, gd_context_t **out);
/* Give back the caller's reference (NULL is ignored). */
void gd_context_destroy(gd_context_t *ctx);
/* The GPU of the context (-1 for NULL). */
int gd_context_device(const gd_context_t *ctx);
/*
 * n contexts of one process that train together, ctxs[r] for rank r, each used by its own thread:
 * over NCCL on devices[0..n) (distinct GPUs), or, with devices NULL, CPU ranks summing through
 * shared memory (cpu mode; the reference the GPU runs are tested against). Each is destroyed
 * with gd_context_destroy, on its thread.
 */
gd_status gd_context_create_group(int n, const int *devices, gd_context_t **ctxs);
/*
 * ctx uses with's registry of registered host memory from now on, so that a table registered
 * through either (a trainer's, a loader's or gd_host_tensor_register's) is page-locked once and
 * shared, and stays registered while any user of either context holds it. CUDA registers host
 * memory once per process for every GPU, so contexts of different GPUs may share. ctx must hold
 * no registration yet; call it before ctx is used by other threads. Keeping one registration
 * of a large table alive across trainers saves its page-locking (tens of seconds for 50 GB).
 */
gd_status gd_context_share_registry(gd_context_t *ctx, gd_context_t *with);
/* 1 if this build can train on several GPUs (it has NCCL), else 0. */
int gd_comm_available(void);
/*
 * A new communicator id for the ranks of one run (NCCL's unique id; its maker must stay alive
 * until every rank has created its context). Without NCCL: GD_ERR_UNSUPPORTED.
 */
gd_status gd_comm_id_create(unsigned char id[GD_COMM_ID_BYTES]);
/*
 * Abort the communicator of ctx (a no-op without one): collectives in flight stop, and every
 * wait on them, in any rank, fails with GD_ERR_COMM. why (optional) is named in the errors.
 */
void gd_context_abort(gd_context_t *ctx, const char *why);

/* What a context holds now, for reports and tests. */
typedef struct {
    size_t size;            /* sizeof(gd_context_info) */
    int device;             /* its GPU */
    int is_default;         /* 1: the default context of device */
    int64_t pinned_ranges;  /* ranges of host memory its registry holds registered */
    int64_t pinned_bytes;   /* their bytes */
    int64_t pinned_users;   /* registrations sharing them (host tensors, a graph's lists) */
    int rank, world_size;   /* its place among the ranks training together (0 of 1: alone) */
} gd_context_info;
#define GD_CONTEXT_INFO_INIT {sizeof(gd_context_info), 0, 0, 0, 0, 0, 0, 1}
void gd_context_info_init(gd_context_info *o);
gd_status gd_context_get_info(const gd_context_t *ctx, gd_context_info *info);

/* ---------------------------------------------------------- feature store */

/*
 * Host tensors: a table of rows (node features) in host memory that GPUs read directly.
 *
 * A host tensor holds rows x row_bytes bytes, row_bytes = cols * gd_dtype_size(dtype). Its
 * memory is allocated by the library (page-aligned, zero-filled), adopted from the caller
 * (malloc'd memory, a memory-mapped dataset file) or mapped from POSIX shared memory so that
 * several processes share one copy. gd_host_tensor_register() page-locks and maps it for a
 * GPU (cudaHostRegister, in chunks of GD_PIN_CHUNK_MB), after which gather kernels read it
 * over PCIe with no CPU work and no staging copy. Each process registers its own mapping.
 */
typedef struct gd_host_tensor gd_host_tensor_t;

/* Flags of gd_host_tensor_create, gd_host_tensor_adopt and gd_host_tensor_open_shm. */
#define GD_HOST_TENSOR_READ_ONLY 0x1u  /* the memory is read-only (e.g. a PROT_READ file map) */
#define GD_HOST_TENSOR_SHM_CREATE 0x2u /* open_shm: create the segment (fails if it exists) */

/* Allocate a zero-filled tensor of rows x cols elements of dtype (rows may be 0). */
gd_status gd_host_tensor_create(int64_t rows, int64_t cols, gd_dtype dtype, unsigned flags,
                                gd_host_tensor_t **out);
/*
 * Wrap memory the caller owns: data holds rows x cols elements of dtype, aligned to the
 * element size. The caller keeps ownership and must keep data alive until the tensor is
 * destroyed (destroying it unregisters the memory but never frees it).
 */
gd_status gd_host_tensor_adopt(void *data, int64_t rows, int64_t cols, gd_dtype dtype,
                               unsigned flags, gd_host_tensor_t **out);
/*
 * Map the POSIX shared memory segment `name` ("/graphdirect-x" or "graphdirect-x") as a
 * tensor. With GD_HOST_TENSOR_SHM_CREATE the segment is created with exactly the tensor's
 * size and its pages are reserved (a full /dev/shm fails here, not later with SIGBUS);
 * without it an existing segment is opened and must have that size. The segment outlives
 * the tensor until gd_host_tensor_shm_unlink(name) removes its name.
 */
gd_status gd_host_tensor_open_shm(const char *name, int64_t rows, int64_t cols, gd_dtype dtype,
                                  unsigned flags, gd_host_tensor_t **out);
gd_status gd_host_tensor_shm_unlink(const char *name);
/* Unregister (if registered) and release the tensor; NULL is ignored. */
void gd_host_tensor_destroy(gd_host_tensor_t *t);

void *gd_host_tensor_data(const gd_host_tensor_t *t);
int64_t gd_host_tensor_rows(const gd_host_tensor_t *t);
int64_t gd_host_tensor_cols(const gd_host_tensor_t *t);
int64_t gd_host_tensor_row_bytes(const gd_host_tensor_t *t);
gd_dtype gd_host_tensor_dtype(const gd_host_tensor_t *t);

/*
 * Page-lock the tensor and map it into the address space of the GPUs of this process
 * (cudaHostRegisterMapped | Portable; ReadOnly as well for GD_HOST_TENSOR_READ_ONLY), through
 * the registry of context (NULL: the default context of device 0; gd_context_default gives
 * another device's). Memory the context holds registered already (the same data and size,
 * registered by another tensor or a graph of the context) is shared, not registered twice; it
 * is unregistered when its last user is unregistered or destroyed. Registering an already
 * registered tensor again is a no-op. Memory registered outside the context (another context,
 * a direct cudaHostRegister) fails with GD_ERR_ALREADY_REGISTERED; any other failure says how
 * to raise the locked-memory limit (ulimit -l). Without CUDA: GD_ERR_NO_DEVICE.
 */
gd_status gd_host_tensor_register(gd_host_tensor_t *t, gd_context_t *context);
/* Give the registration back to its context (a no-op for a tensor that is not registered). */
gd_status gd_host_tensor_unregister(gd_host_tensor_t *t);
/* 1 if the tensor is registered in this process, else 0. */
int gd_host_tensor_is_registered(const gd_host_tensor_t *t);

/* How a gatherer moves the rows of a minibatch to their destination. */
typedef enum {
    GD_GATHER_ZEROCOPY = 0,       /* "zerocopy": aligned warp-per-row reads of pinned host rows */
    GD_GATHER_NAIVE_ZEROCOPY = 1, /* "naive-zerocopy": one GPU thread per element, for comparison */
    GD_GATHER_CPU_DMA = 2,        /* "cpu-dma": CPU threads gather into pinned memory, one copy */
    GD_GATHER_GPU = 3,            /* "gpu": the table is copied to GPU memory (upper bound) */
    GD_GATHER_CPU = 4,            /* "cpu": CPU threads, host ids, host output (CPU backend) */
    GD_GATHER_MODE_COUNT = 5
} gd_gather_mode;

/* "zerocopy", "naive-zerocopy", "cpu-dma", "gpu", "cpu"; NULL for a value outside the enum. */
const char *gd_gather_mode_name(gd_gather_mode mode);
gd_status gd_gather_mode_parse(const char *name, gd_gather_mode *out);

typedef struct gd_gatherer gd_gatherer_t;

typedef struct {
    size_t size;           /* sizeof(gd_gatherer_options) */
    int64_t max_ids;       /* GPU modes: most ids per gd_gather call; sizes the buffers
                              (0: 65536) */
    int sort_ids;          /* zerocopy and gpu: sort the ids first (a radix sort on the GPU), so
                              that the reads walk the table in address order; the output stays
                              in the given order. 0: default (on for zerocopy rows under
                              2 KiB, where random reads over a large table run at a fraction of
                              the link; otherwise off), 1: on, -1: off */
    const char *sm_budget; /* GPU modes: SMs the kernel may use, "0" all, "N", "N%" (NULL:
                              the GD_GATHER_SMS parameter); a grid cap, not a partition */
    int threads;           /* cpu and cpu-dma: CPU threads (0: the GD_THREADS parameter) */
    /*
     * zerocopy: the hot-row GPU cache. The rows with the highest cache_scores (one score per
     * row of the tensor: in-degree, sampled access counts, ...; see gd_hot_rows_select) are
     * copied into GPU memory, as many as fit in cache_bytes, and a node -> location map (one
     * int64 per row, in GPU memory) lets each gather launch read cached rows from GPU memory
     * and the others from host memory. 0: no cache. Other modes reject a cache.
     */
    int64_t cache_bytes;
    const int64_t *cache_scores; /* host memory, tensor rows entries; needed if cache_bytes > 0 */
    /*
     * GPU modes: how the SM budget is enforced. 0 (default): a CUDA green context holding
     * that many SMs where the driver supports it, else a grid cap; 1: grid cap only.
     */
    int sm_grid_cap_only;
    /*
     * zerocopy: how the rows that are not in the GPU cache reach the GPU. 0 (default): the
     * gather kernel reads them from the registered table (zero-copy loads). 1: the GPU lists
     * them, CPU threads (`threads`) copy them into pinned staging and one copy moves them to
     * GPU memory, where the kernel reads them (faster where random reads of a large table are
     * bound by the GPU's address translation; docs/feature_store.md). gd_gather then returns
     * once the CPU has copied the rows: the host waits for the GPU's list, not for the ids.
     * The output is the same either way. Other modes reject 1.
     */
    int host_gather;
} gd_gatherer_options;
#define GD_GATHERER_OPTIONS_INIT {sizeof(gd_gatherer_options), 0, 0, NULL, 0, 0, NULL, 0, 0}
void gd_gatherer_options_init(gd_gatherer_options *o);

/*
 * Create a gatherer of rows of t for the GPU of context (NULL: the default context of device
 * 0; GD_GATHER_CPU uses no GPU). Every buffer a gather needs is allocated here, so gd_gather
 * allocates nothing. zerocopy and naive-zerocopy need t registered (gd_host_tensor_register);
 * gpu copies t into GPU memory once, now. t must outlive the gatherer; the gatherer keeps a
 * reference to the context. A GPU mode without CUDA or without a GPU fails with
 * GD_ERR_NO_DEVICE.
 */
gd_status gd_gatherer_create(gd_host_tensor_t *t, gd_context_t *context, gd_gather_mode mode,
                             const gd_gatherer_options *options, gd_gatherer_t **out);
void gd_gatherer_destroy(gd_gatherer_t *g);

/*
 * Write rows ids[0..n) of the tensor to out (n x row_bytes bytes, row i = row ids[i]).
 *
 * GPU modes: out is device memory and the work is queued on stream (a cudaStream_t; NULL is
 * the default stream) with no host synchronisation, except that ids on the host are first
 * copied into a pinned buffer which waits for the previous call's copy of it, and cpu-dma
 * with device ids reads them back (it is the CPU-centric baseline). Ids on the host are
 * checked before anything is queued: an out-of-range id fails with GD_ERR_RANGE naming it and
 * its position. Ids on the device (ids_on_device = 1) are checked by the kernel, which zeroes
 * the row of a bad id and records it; gd_gatherer_check_errors() reports it.
 * GD_GATHER_CPU: ids and out are host memory, ids_on_device must be 0, stream is ignored, and
 * the call returns when the rows are written.
 */
gd_status gd_gather(gd_gatherer_t *g, const int64_t *ids, int64_t n, int ids_on_device,
                    void *out, void *stream);
/*
 * Wait for the last gd_gather call of g to finish (and so for the calls queued before it on
 * that stream) and report an out-of-range device id any earlier call met since the previous
 * check (GD_ERR_RANGE, naming the id and its position), or a CUDA error of the gather. The
 * record is cleared. This synchronises the host: call it once per epoch, or in tests.
 */
gd_status gd_gatherer_check_errors(gd_gatherer_t *g);

/* What a gatherer holds, for reports and benchmarks. */
typedef struct {
    size_t size;              /* sizeof(gd_gatherer_info) */
    int64_t cached_rows;      /* rows in the GPU cache */
    int64_t cache_bytes;      /* GPU memory of the cached rows */
    int64_t map_bytes;        /* GPU memory of the node -> location map (0 without a cache) */
    int sms;                  /* SMs the gather kernel may use */
    int green_context;        /* 1 if the SM budget is a green context, 0 if a grid cap */
    int group_lanes;          /* lanes that copy one row (zerocopy and gpu) */
} gd_gatherer_info;
#define GD_GATHERER_INFO_INIT {sizeof(gd_gatherer_info), 0, 0, 0, 0, 0, 0}
void gd_gatherer_info_init(gd_gatherer_info *o);
gd_status gd_gatherer_get_info(const gd_gatherer_t *g, gd_gatherer_info *info);
/* 1 if row id is in g's GPU cache, 0 if not (or no cache, or id out of range). */
int gd_gatherer_is_cached(const gd_gatherer_t *g, int64_t id);

/*
 * Hot rows. A score per row ranks the rows for the GPU cache, higher = read more often.
 * gd_csc_degree_scores gives each node's in-degree (GD_DEGREE_IN: indptr[v+1] - indptr[v]) or
 * the number of times it appears as an in-neighbour (GD_DEGREE_OUT: its out-degree, which is
 * how often uniform neighbour sampling reaches it). gd_access_counts_add counts how often each
 * node is an input node over pre-sampled minibatches (counts[id] += 1 for each of ids; ids are
 * checked). gd_hot_rows_select writes the up to max_rows rows of highest score, hottest first
 * (ties: lower id first), and their number (min(max_rows, num_rows)).
 */
typedef enum { GD_DEGREE_IN = 0, GD_DEGREE_OUT = 1 } gd_degree_kind;
gd_status gd_csc_degree_scores(int64_t num_nodes, const int64_t *indptr, const void *indices,
                               gd_dtype indices_dtype, gd_degree_kind kind, int64_t *scores);
gd_status gd_access_counts_add(int64_t *counts, int64_t num_nodes, const int64_t *ids,
                               int64_t n);
gd_status gd_hot_rows_select(const int64_t *scores, int64_t num_rows, int64_t max_rows,
                             int64_t *rows, int64_t *count);

/* ---------------------------------------------------------------- sampler */

/*
 * Neighbour sampling (docs/sampling.md). A graph handle places the two CSC arrays where the
 * sampler reads them; a sampler draws, for a minibatch of seed nodes, up to fanouts[h]
 * in-neighbours of every node of hop h, from the seeds outward, and writes one block per layer
 * plus the input node ids into a minibatch buffer that was allocated once for the worst case.
 * The draws come from Philox keyed by (seed, epoch, minibatch, hop, node, draw), so the CPU
 * sampler and the CUDA sampler (graph in GPU memory or in pinned host memory) return the same
 * blocks, bit for bit, whatever the thread count.
 */
typedef enum {
    GD_PLACE_HOST = 0,   /* "host": host memory, read by CPU threads (CPU sampler only) */
    GD_PLACE_GPU = 1,    /* "gpu": copied into GPU memory */
    GD_PLACE_PINNED = 2, /* "pinned": page-locked host memory that GPU kernels read over PCIe
                            (UVA); CPU threads read it too */
    GD_PLACE_COUNT = 3
} gd_placement;

/* "host", "gpu", "pinned"; NULL for a value outside the enum. */
const char *gd_placement_name(gd_placement placement);
gd_status gd_placement_parse(const char *name, gd_placement *out);

typedef struct gd_graph gd_graph_t;

typedef struct {
    size_t size;                    /* sizeof(gd_graph_options) */
    gd_placement indptr_placement;  /* where indptr lives (default host) */
    gd_placement indices_placement; /* where indices live (default host) */
    /*
     * The context of gpu and pinned placements (NULL: the default context of device 0): its
     * GPU, and the registry through which pinned arrays are registered (so that a graph and a
     * host tensor over the same memory register it once). The graph keeps a reference.
     */
    gd_context_t *context;
    /*
     * pinned: 0 = page-lock the caller's arrays in place (they must stay alive and unmoved);
     * 1 = copy them into library-owned memory first. A read-only file mapping (a dataset
     * opened with GD_OPEN_MMAP) is always copied.
     */
    int copy_host;
    /* Copies (gpu, pinned with a copy): store int64 indices as int32 when the nodes fit. */
    int narrow_indices;
    /*
     * Pinned indices: the hot neighbour-list GPU cache (docs/sampling.md). The lists of the nodes
     * the CUDA sampler reads most (highest out-degree, gd_csc_degree_scores GD_DEGREE_OUT) are
     * copied whole into GPU memory, hottest first, as many as fit in gpu_cache_bytes (a list
     * that does not fit is skipped), and the CUDA sampler reads them there and every other list
     * over PCIe. With a cache, indptr is also copied to GPU memory, and a node -> list location
     * map (8 bytes a node) is added; neither counts against the budget. The host arrays stay as
     * placed (the CPU sampler reads them). 0: no cache; other placements of indices reject one.
     */
    int64_t gpu_cache_bytes;
    /*
     * Optional, with a cache: the graph's out-degrees (gd_csc_degree_scores, GD_DEGREE_OUT),
     * by which the lists are ranked; NULL computes them here (one pass over the edges, by the
     * GPU over the pinned indices). A caller that ranks a feature cache by the same scores
     * passes them.
     */
    const int64_t *out_degrees;
} gd_graph_options;
#define GD_GRAPH_OPTIONS_INIT                                                                      \
    {sizeof(gd_graph_options), GD_PLACE_HOST, GD_PLACE_HOST, NULL, 0, 1, 0, NULL}
void gd_graph_options_init(gd_graph_options *o);

/*
 * A CSC graph (indptr: num_nodes + 1 int64; indices: int32 or int64 in-neighbour ids) placed
 * per options. host arrays, and pinned ones without a copy, are borrowed: the caller keeps them
 * alive until gd_graph_destroy. indptr is checked (starts at 0, never decreases) and its
 * maximum degree recorded; indices are trusted (gd_csc_validate checks them).
 */
gd_status gd_graph_create(int64_t num_nodes, const int64_t *indptr, const void *indices,
                          gd_dtype indices_dtype, const gd_graph_options *options,
                          gd_graph_t **out);
/* The same from a dataset's indptr and indices; ds must outlive the graph. */
gd_status gd_graph_create_from_dataset(const gd_dataset_t *ds, const gd_graph_options *options,
                                       gd_graph_t **out);
void gd_graph_destroy(gd_graph_t *g);

typedef struct {
    size_t size; /* sizeof(gd_graph_info) */
    int64_t num_nodes;
    int64_t num_edges;
    int64_t max_degree;
    gd_dtype indices_dtype; /* as stored (int32 after narrowing) */
    gd_placement indptr_placement;
    gd_placement indices_placement;
    int64_t device_bytes; /* GPU memory the graph holds */
    int64_t pinned_bytes; /* host memory page-locked for it */
    int64_t cache_nodes;  /* nodes whose lists the GPU cache holds */
    int64_t cache_edges;  /* list entries it holds */
    int64_t cache_bytes;  /* their bytes (within gpu_cache_bytes) */
} gd_graph_info;
#define GD_GRAPH_INFO_INIT {sizeof(gd_graph_info), 0, 0, 0, GD_DTYPE_INVALID, GD_PLACE_HOST, \
                            GD_PLACE_HOST, 0, 0, 0, 0, 0}
void gd_graph_info_init(gd_graph_info *o);
gd_status gd_graph_get_info(const gd_graph_t *g, gd_graph_info *info);
/*
 * 1 if the hot neighbour-list GPU cache (gpu_cache_bytes) holds node's list, so that the CUDA
 * sampler reads it from GPU memory; 0 if not (or no cache, or node out of range).
 */
int gd_graph_is_cached(const gd_graph_t *g, int64_t node);

typedef enum {
    GD_SAMPLER_CPU = 0, /* CPU threads; both arrays in host memory (host or pinned) */
    GD_SAMPLER_CUDA = 1 /* GPU kernels; both arrays GPU-readable (gpu or pinned) */
} gd_sampler_backend;

#define GD_SAMPLER_MAX_LAYERS 8

typedef struct gd_sampler gd_sampler_t;

typedef struct {
    size_t size;                /* sizeof(gd_sampler_options) */
    gd_sampler_backend backend; /* default CPU */
    int64_t max_batch;          /* most seeds per gd_sample; sizes every buffer (0: 1024) */
    int replace;                /* 1: draw fanout neighbours with replacement */
    uint64_t seed;              /* the Philox key of every draw */
    int threads;                /* CPU: threads per gd_sample (0: the GD_THREADS parameter) */
    /*
     * CUDA: the read schedule (docs/sampling.md, "Reading in address order"), a
     * gd_sample_reads. Only the order of the graph reads changes, never the minibatch, so this
     * is for benchmarks and tests that compare the schedules; the default picks by placement.
     */
    int sort_reads;
    /*
     * Locality-aware sampling (docs/sampling.md, "Biased sampling"): a neighbour whose bit is set
     * in bias_bitmap (bit v of byte v / 8, least significant bit first, one bit per node: the
     * rows the GPU's feature cache holds) is bias_factor times as likely to be drawn as one whose
     * bit is clear. bias_factor 0 or 1: off (uniform draws, the bitmap is ignored); 2 to
     * GD_SAMPLER_MAX_BIAS needs the bitmap, host memory of (num_nodes + 7) / 8 bytes, which
     * gd_sampler_create copies (to GPU memory for a CUDA sampler): the caller may free it then.
     * Deterministic and equal on every backend, but every list of a frontier node is read whole.
     */
    const uint8_t *bias_bitmap;
    int bias_factor;
} gd_sampler_options;
#define GD_SAMPLER_OPTIONS_INIT {sizeof(gd_sampler_options), GD_SAMPLER_CPU, 0, 0, 0, 0, 0, NULL, 0}
/* The largest bias_factor: buffered neighbours at most this many times as likely. */
#define GD_SAMPLER_MAX_BIAS 65536

/*
 * The CUDA sampler's read schedules. AUTO sorts the frontier of every hop after the first by
 * node id when indptr or indices is pinned (the reads then go in address order); FRONTIER
 * reads every hop in frontier order; SORTED sorts every hop, the seeds' included, whatever the
 * placement. Hops whose worst-case frontier is far above the expected one are never sorted.
 */
typedef enum {
    GD_SAMPLE_READS_AUTO = 0,
    GD_SAMPLE_READS_FRONTIER = -1,
    GD_SAMPLE_READS_SORTED = 1
} gd_sample_reads;
void gd_sampler_options_init(gd_sampler_options *o);

/*
 * A sampler of num_layers hops (1..GD_SAMPLER_MAX_LAYERS) over g. fanouts[h] is the number of
 * in-neighbours drawn for each node of hop h, from the seeds outward (fanouts[0] applies to the
 * seeds: {15, 10, 5} draws 15 neighbours per seed); -1 takes all neighbours; without
 * replacement a fanout >= degree takes all. Every working buffer is allocated here, from
 * max_batch and the fanouts (the worst case, bounded by the node and edge counts), so
 * gd_sample allocates nothing. g must outlive the sampler.
 */
gd_status gd_sampler_create(gd_graph_t *g, const int *fanouts, int num_layers,
                            const gd_sampler_options *options, gd_sampler_t **out);
void gd_sampler_destroy(gd_sampler_t *s);

typedef struct {
    size_t size;             /* sizeof(gd_sampler_info) */
    int num_layers;
    int64_t max_input_nodes; /* most input nodes a minibatch can have */
    int64_t max_edges;       /* most edges a minibatch can have, over all layers */
    int64_t minibatch_bytes; /* memory of one minibatch buffer (GPU memory for CUDA) */
    int64_t scratch_bytes;   /* the sampler's own working memory */
} gd_sampler_info;
#define GD_SAMPLER_INFO_INIT {sizeof(gd_sampler_info), 0, 0, 0, 0, 0}
void gd_sampler_info_init(gd_sampler_info *o);
gd_status gd_sampler_get_info(const gd_sampler_t *s, gd_sampler_info *info);

/*
 * A minibatch buffer: the output of gd_sample, sized for s's worst case. CUDA samplers keep it
 * in GPU memory (plus a few pinned bytes for the sizes). Create two or more to pipeline: a
 * buffer may be rewritten only when its consumer is done with it.
 */
typedef struct gd_minibatch gd_minibatch_t;
gd_status gd_minibatch_create(const gd_sampler_t *s, gd_minibatch_t **out);
void gd_minibatch_destroy(gd_minibatch_t *mb);

/*
 * Sample the neighbourhood of seeds[0..n) (n <= max_batch, distinct node ids) into mb, which
 * must come from gd_minibatch_create(s). epoch and batch select the draws: the same (seed,
 * epoch, batch, seeds) give the same minibatch on every backend.
 * CUDA: the work is queued on stream (a cudaStream_t; NULL = the default stream) and nothing
 * waits for it; seeds are host memory (seeds_on_device = 0; checked for range now) or device
 * memory (checked by the kernels). A repeated seed, or a bad device seed, is recorded on the
 * device and reported by gd_sampler_check_errors. The sizes of the blocks are copied back with
 * one small copy, which gd_minibatch_block and gd_minibatch_input_nodes wait for.
 * CPU: seeds are host memory, stream is ignored, and the call returns when mb is written; a
 * bad seed fails with GD_ERR_RANGE, a repeated one with GD_ERR_INVALID_ARG.
 */
gd_status gd_sample(gd_sampler_t *s, const int64_t *seeds, int64_t n, int seeds_on_device,
                    int64_t epoch, int64_t batch, void *stream, gd_minibatch_t *mb);
/*
 * Wait for the gd_sample calls of s queued so far and report a device-side seed error met since
 * the previous check (GD_ERR_RANGE or GD_ERR_INVALID_ARG naming the seed and its position), or
 * a CUDA error. The record is cleared. This synchronises the host: call it once per epoch.
 */
gd_status gd_sampler_check_errors(gd_sampler_t *s);

/*
 * One layer of a minibatch, in DGL's block layout: a CSC of num_dst destination nodes over
 * num_src source nodes in local ids, where the destination nodes are the first num_dst source
 * nodes. Local id i is input node i (gd_minibatch_input_nodes) in every layer.
 */
typedef struct {
    int64_t num_dst;
    int64_t num_src;
    int64_t num_edges;
    const int32_t *indptr;  /* num_dst + 1 offsets */
    const int32_t *indices; /* num_edges local source ids */
} gd_block;

int gd_minibatch_num_layers(const gd_minibatch_t *mb);
/* 1 if the arrays of mb are GPU memory (CUDA samplers), 0 if host memory. */
int gd_minibatch_on_device(const gd_minibatch_t *mb);
/*
 * Layer `layer` of the last minibatch sampled into mb, in the order training consumes them:
 * layer 0 is the input layer (the outermost hop, sampled with fanouts[num_layers - 1]) and
 * layer num_layers - 1 has the seeds as its destination nodes. Waits for the sizes (CUDA).
 */
gd_status gd_minibatch_block(gd_minibatch_t *mb, int layer, gd_block *out);
/*
 * The global ids of the input nodes (the source nodes of layer 0), seeds first: the rows to
 * gather, and what gd_access_counts_add counts. Waits for the sizes (CUDA).
 */
gd_status gd_minibatch_input_nodes(gd_minibatch_t *mb, const int64_t **ids, int64_t *n);

/*
 * Typed (heterogeneous) sampling, docs/sampling.md "Typed sampling". A minibatch keeps one
 * local id space per node type (the seeds, of the dataset's target type, first) and one block
 * per (layer, edge type): a gd_block whose destinations are local ids of the edge type's
 * destination type (the first num_dst nodes of that type in the layer above) and whose sources
 * are local ids of its source type. fanouts has num_layers x num_edge_types entries, hop-major
 * from the seeds outward: fanouts[h * R + r] neighbours of edge type r for each node of hop h
 * (-1 all, 0 none). Draws are keyed as gd_sample's plus the edge type, so a minibatch depends
 * on (seed, epoch, batch, seeds) only, and is the same on both backends. GD_SAMPLER_CPU reads
 * the dataset's CSC and edge types in host memory (options: max_batch, replace, seed, threads).
 * GD_SAMPLER_CUDA runs on the GPU current at create, to whose memory create copies indptr,
 * indices and edge types (GD_ERR_NO_MEMORY if they do not fit); its minibatch arrays are GPU
 * memory (gd_hetero_minibatch_on_device) and gd_hetero_sample returns once they are written.
 * Biased draws are not offered. Every buffer is sized at create; gd_hetero_sample allocates
 * nothing.
 */
typedef struct gd_hetero_sampler gd_hetero_sampler_t;
typedef struct gd_hetero_minibatch gd_hetero_minibatch_t;
gd_status gd_hetero_sampler_create(const gd_dataset_t *ds, const int *fanouts, int num_layers,
                                   const gd_sampler_options *options, gd_hetero_sampler_t **out);
void gd_hetero_sampler_destroy(gd_hetero_sampler_t *s);
gd_status gd_hetero_minibatch_create(const gd_hetero_sampler_t *s, gd_hetero_minibatch_t **out);
void gd_hetero_minibatch_destroy(gd_hetero_minibatch_t *mb);
/* Seeds: distinct nodes of the target type (else GD_ERR_RANGE / GD_ERR_INVALID_ARG). */
gd_status gd_hetero_sample(gd_hetero_sampler_t *s, const int64_t *seeds, int64_t n, int64_t epoch,
                           int64_t batch, gd_hetero_minibatch_t *mb);
/* 1 if the arrays of mb (blocks and node ids) are GPU memory (a CUDA sampler's), 0 if host. */
int gd_hetero_minibatch_on_device(const gd_hetero_minibatch_t *mb);
/* Layer `layer`'s block of edge type r (layer 0 = the input layer, as gd_minibatch_block). */
gd_status gd_hetero_minibatch_block(const gd_hetero_minibatch_t *mb, int layer, int edge_type,
                                    gd_block *out);
/*
 * The global ids of the nodes of type t at layer `layer` (0: the input nodes, whose rows are
 * gathered from the type's feature table; num_layers: the seeds), local id i first at ids[i].
 * The nodes of a layer are a prefix of those of the layer below.
 */
gd_status gd_hetero_minibatch_nodes(const gd_hetero_minibatch_t *mb, int layer, int node_type,
                                    const int64_t **ids, int64_t *n);

/*
 * Epoch iteration: write into order a permutation of ids[0..n) shuffled by Philox keyed by
 * (seed, epoch), the same on every machine; batch b is order[b * batch_size ..] with
 * min(batch_size, n - b * batch_size) seeds. *num_batches is n / batch_size with drop_last
 * (the short last batch is dropped), else ceil(n / batch_size).
 */
gd_status gd_seed_batches(const int64_t *ids, int64_t n, int64_t batch_size, uint64_t seed,
                          int64_t epoch, int drop_last, int64_t *order, int64_t *num_batches);

/* ---------------------------------------------------------------- loader */

/*
 * A minibatch loader: the trainer's data path (sample -> gather, pipelined on the GPU) without
 * the model, for callers that train with their own code (PyTorch, DGL, PyG through the Python
 * binding). Each minibatch holds, in GPU memory (all-gpu, zero-copy) or host memory (cpu): the
 * global ids of its input nodes (seeds first), their gathered feature rows (float32), the
 * labels of its seeds, and one block per layer (gd_block). The loader owns a ring of `depth`
 * buffer sets: a batch keeps its set until it is released and every tensor exported from it is
 * deleted. The GPU samples ahead into the sets that are free, so holding fewer keeps the
 * pipeline full. A batch held when its set comes round again keeps that memory and the ring
 * takes another set (max_held_bytes bounds that memory).
 */
typedef struct gd_loader gd_loader_t;
typedef struct gd_batch gd_batch_t;
struct DLManagedTensor; /* <dlpack/dlpack.h> */

typedef struct {
    size_t size;                        /* sizeof(gd_loader_options) */
    const char *mode;                   /* "cpu", "all-gpu", "zero-copy" or "auto" (NULL) */
    int num_layers;                     /* 1..GD_SAMPLER_MAX_LAYERS */
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* from the seeds outward; -1 = all neighbours */
    int64_t batch_size;                 /* seeds per minibatch */
    gd_array_id split;                  /* the seeds: GD_ARRAY_TRAIN_IDX, _VALID_IDX or _TEST_IDX */
    int shuffle;                        /* 1: shuffled by (seed, epoch); 0: in order */
    int drop_last;                      /* 1: drop the short last minibatch */
    uint64_t seed;                      /* shuffling and neighbour draws */
    int device;                         /* the GPU of the GPU modes (without a context) */
    int threads;                        /* CPU threads (0: GD_THREADS) */
    int depth;                          /* buffer sets in the ring, 2..8 */
    int64_t gpu_cache_bytes;            /* zero-copy feature cache (-1: what the budget leaves) */
    int64_t graph_cache_bytes;          /* zero-copy neighbour-list cache (-1: auto) */
    int64_t gpu_mem_budget;             /* GPU memory the loader may use (0: what is free) */
    const char *gather_sms;             /* the gather's SM budget (NULL: the default) */
    gd_context_t *context;              /* NULL: the default context of `device` */
    /*
     * Seed sharding for data parallelism (torch DDP): with world_size > 1, minibatch b of an
     * epoch is this rank's share of global minibatch b (world_size * batch_size seeds, shuffled
     * and drawn as on one GPU): its seeds [rank * batch_size, (rank + 1) * batch_size), possibly
     * fewer or none in the last one. Every rank sees the same number of minibatches. world_size
     * 0: the context's (1 without a communicator).
     */
    int rank;
    int world_size;
    /*
     * Host memory the loader may take (0: GD_HOST_MEM_MB, else what is available). A feature
     * table larger than it is read from its file (the SSD tier; docs/feature_store.md).
     */
    int64_t host_mem_budget;
    /*
     * Any seeds instead of a split (seeds non-NULL): num_seeds distinct node ids (copied and
     * checked at create), e.g. every node for an all-node inference.
     * Their labels are the dataset's (-1 where it has none); `split` is then ignored.
     */
    const int64_t *seeds;
    int64_t num_seeds;
    /*
     * Memory for batches kept past their turn (bytes). When the set a minibatch needs is still
     * held (its batch not released, or a tensor exported from it alive: ys.append(y) in
     * PyTorch), the held batch keeps that memory and the ring gets another set: a released
     * held batch's memory, else a new one, while the sets outside the ring take at most this
     * many bytes. 0: a quarter of the memory free at create (the GPU's in the GPU modes, the
     * host's in cpu mode); -1: none (gd_loader_next fails on a held set).
     */
    int64_t max_held_bytes;
    /* zero-copy: how the rows outside the GPU cache come; as gd_train_options.host_gather. */
    const char *host_gather;
} gd_loader_options;
#define GD_LOADER_OPTIONS_INIT                                                                     \
    {sizeof(gd_loader_options), NULL, 2, {10, 5}, 1024, GD_ARRAY_TRAIN_IDX, 1, 0, 0, 0, 0, 3, -1, -1, \
     0, NULL, NULL, 0, 0, 0, NULL, 0, 0, NULL}
void gd_loader_options_init(gd_loader_options *o);

/*
 * A loader over ds (which must outlive it). ds needs float32 features and the split; labels are
 * optional (a batch without them has no labels field). Everything is allocated here.
 */
gd_status gd_loader_create(const gd_dataset_t *ds, const gd_loader_options *options,
                           gd_loader_t **out);
/*
 * Destroy the loader. Batches not yet released become invalid (gd_batch_* on them fail); the
 * memory behind tensors exported from them stays valid until their deleters run.
 */
void gd_loader_destroy(gd_loader_t *l);

typedef struct {
    size_t size;                  /* sizeof(gd_loader_info) */
    const char *mode;             /* the mode it runs in (auto resolved) */
    int on_device;                /* 1: batches live in GPU memory */
    int device;                   /* their GPU (on_device) */
    int64_t num_seeds;            /* nodes of the split */
    int64_t batches_per_epoch;    /* minibatches of an epoch */
    int64_t feature_dim;          /* columns of the features */
    int64_t max_input_nodes;      /* most input nodes of a minibatch */
    char plan[512];               /* where everything lives and why */
    int64_t set_bytes;            /* about the memory of one buffer set */
    int64_t max_held_bytes;       /* the bound on sets outside the ring (resolved) */
    int64_t sets_outside;         /* sets outside the ring now: held batches' and spares */
} gd_loader_info;
#define GD_LOADER_INFO_INIT {sizeof(gd_loader_info), NULL, 0, 0, 0, 0, 0, 0, {0}, 0, 0, 0}
void gd_loader_info_init(gd_loader_info *o);
gd_status gd_loader_get_info(const gd_loader_t *l, gd_loader_info *info);

/*
 * Start epoch `epoch` (any number >= 0: the shuffle and the draws are functions of it), ending
 * the one in progress. Its batches still held stay valid (they keep their memory).
 */
gd_status gd_loader_start_epoch(gd_loader_t *l, int64_t epoch);
/*
 * The next minibatch of the epoch; *out is NULL after the last one. On the GPU its work may
 * still be running when this returns: read it on a stream ordered after it (gd_batch_wait, or
 * gd_batch_export, which orders its stream itself). Fails with GD_ERR_INVALID_ARG when the set
 * it needs is still held and another would pass max_held_bytes (the message names the batches
 * that hold memory), and when no epoch was started.
 */
gd_status gd_loader_next(gd_loader_t *l, gd_batch_t **out);
/* Give the batch back (NULL is ignored); its set is reused once its exported tensors are gone. */
void gd_batch_release(gd_batch_t *b);
/*
 * Order stream (a cudaStream_t; NULL = the legacy default stream) after the batch's work on the
 * GPU, with no host wait: whatever is queued on stream afterwards sees every field written. Call
 * it before reading the views of gd_batch_array / gd_batch_block on a stream of your own. The
 * batch's set is then not reused before the work queued on stream up to the batch's release
 * (up to 4 streams per batch are tracked this way, exports' streams included; a fifth fails
 * with GD_ERR_UNSUPPORTED). stream must outlive the batch's release. Batches in host memory (cpu mode) are ready when gd_loader_next
 * returns: this does nothing for them.
 */
gd_status gd_batch_wait(gd_batch_t *b, void *stream);

typedef enum {
    GD_BATCH_INPUT_NODES = 0, /* int64 [num_input]: global ids, seeds first */
    GD_BATCH_FEATURES = 1,    /* float32 [num_input, feature_dim] */
    GD_BATCH_LABELS = 2,      /* int64 [num_seeds] (-1: unlabelled) */
    GD_BATCH_INDPTR = 3,      /* int32 [num_dst + 1] of a layer's block */
    GD_BATCH_INDICES = 4,     /* int32 [num_edges] of a layer's block: local source ids */
    GD_BATCH_FIELD_COUNT = 5
} gd_batch_field;

/* The batch's sizes: its index in the epoch, seeds, input nodes, layers. */
typedef struct {
    size_t size; /* sizeof(gd_batch_info) */
    int64_t index;
    int64_t num_seeds;
    int64_t num_input;
    int num_layers;
    int on_device;
    int device;
} gd_batch_info;
#define GD_BATCH_INFO_INIT {sizeof(gd_batch_info), 0, 0, 0, 0, 0, 0}
void gd_batch_info_init(gd_batch_info *o);
gd_status gd_batch_get_info(const gd_batch_t *b, gd_batch_info *info);
/* Layer `layer` (0 = input layer, as gd_minibatch_block) with the batch's own arrays. */
gd_status gd_batch_block(const gd_batch_t *b, int layer, gd_block *out);
/* A view of one field (layer: the block's, for INDPTR and INDICES; else ignored). */
gd_status gd_batch_array(const gd_batch_t *b, gd_batch_field field, int layer, gd_array_view *out);
/*
 * Export one field as a DLPack tensor (DLPack 0.6 DLManagedTensor; kDLCUDA or kDLCPU), sharing
 * the batch's memory: no copy. stream (GPU batches) is the CUDA stream the consumer will read it
 * on (NULL: the legacy default stream): it is made to wait for the batch on the GPU, with no
 * host wait, and the batch's set is not reused before the work queued on it up to the batch's
 * release. The tensor keeps the batch, and the loader's memory, alive until its deleter runs.
 * Without DLPack headers at build time: GD_ERR_UNSUPPORTED.
 */
gd_status gd_batch_export(gd_batch_t *b, gd_batch_field field, int layer, void *stream,
                          struct DLManagedTensor **out);
/*
 * Every field at once (one call per batch for a binding): out[0..3 + 2 x num_layers) gets
 * INPUT_NODES, FEATURES, LABELS (NULL when the dataset has no labels), then INDPTR and INDICES
 * of layer 0, of layer 1, ... n is the room in out. On failure nothing stays exported.
 */
gd_status gd_batch_export_all(gd_batch_t *b, void *stream, struct DLManagedTensor **out, int n);

/* --------------------------------------------------------------- trainer */

/*
 * A trainer: graphdirect's own models (GraphSAGE today, "sage") trained on the loader's data
 * path (sample -> gather -> forward, loss, backward, Adam; pipelined on the GPU), in one of the
 * modes of docs/train.md: "cpu", "all-gpu", "zero-copy", "cpu-centric" or "auto". Every buffer
 * is allocated by gd_trainer_create, so an epoch allocates nothing. gd_trainer_fit runs the
 * whole run policy of `graphdirect train`: epochs with the valid accuracy after each, the model
 * of the best valid epoch kept, checkpoints every N epochs, resuming from them, and the test
 * accuracy at the end, by sampled inference and exactly (layer-wise inference over every
 * neighbour of every node). Randomness is keyed by (seed, epoch, minibatch), so a run resumed
 * from a checkpoint gives exactly the losses of the uninterrupted run.
 */
typedef struct gd_trainer gd_trainer_t;

typedef struct {
    size_t size;                        /* sizeof(gd_train_options) */
    const char *mode;                   /* cpu, all-gpu, zero-copy, cpu-centric, auto (NULL) */
    const char *model;                  /* the model's kind: "sage" (NULL: the default kind) */
    int num_layers;                     /* 1..GD_SAMPLER_MAX_LAYERS */
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* from the seeds outward; -1 = all neighbours */
    /*
     * Seeds per minibatch (training and evaluation) on this GPU. A context of several ranks
     * trains on global minibatches of world_size * batch_size seeds, each rank its share.
     */
    int64_t batch_size;
    int64_t hidden;                     /* width of the hidden layers */
    double dropout;                     /* after every hidden layer, training only; [0, 1) */
    double lr;                          /* Adam's learning rate */
    double weight_decay;                /* Adam's L2 term, 0 = none */
    uint64_t seed;                      /* parameters, shuffling, neighbour draws, dropout */
    int threads;                        /* CPU threads of sampling and gathering (0: GD_THREADS) */
    int device;                         /* the GPU of the GPU modes (without a context) */
    gd_context_t *context;              /* NULL: the default context of `device` */
    int64_t gpu_cache_bytes;            /* zero-copy feature cache (-1: what the budget leaves) */
    int64_t graph_cache_bytes;          /* zero-copy neighbour-list cache (-1: auto) */
    int64_t gpu_mem_budget;             /* GPU memory the trainer may use (0: what is free) */
    const char *gather_sms;             /* the gather's SM budget, "N" or "N%" (NULL: default) */
    int depth;                          /* buffer sets in the pipeline ring, 2..8 */
    /*
     * 1: the baseline with the graph removed. Every hop is sampled with fanout 0, so only each
     * node's own features count: an MLP of num_layers layers with the same widths.
     */
    int mlp;
    /*
     * Host memory the trainer may take beyond the dataset (0: GD_HOST_MEM_MB, else what is
     * available). A mode whose model and buffers need more is refused at create (and by
     * gd_trainer_plan), naming both sizes.
     */
    int64_t host_mem_budget;
    /*
     * Several ranks in zero-copy mode: where the hot feature rows live over the GPUs of the
     * host. "replicate": every GPU caches the hottest rows its budget holds. "partition": the
     * hottest rows, each cached once, split over the GPUs, which read each other's over
     * NVLink. "auto" (NULL): the cost model of docs/multi_gpu.md, partly replicated, partly
     * partitioned, from read costs measured at start-up. partition needs peer access between
     * every pair of GPUs; auto falls back to replicate without it. One rank: ignored.
     */
    const char *placement;
    /*
     * Locality-aware sampling in training (zero-copy with a feature cache; docs/sampling.md):
     * a neighbour whose row is in GPU memory is drawn `locality` times as likely as one read
     * from host memory. 0 (default): off, uniform draws. 2..GD_SAMPLER_MAX_BIAS: that factor.
     * -1: adapted after each epoch to its gather / train time ratio (uniform in the first).
     * It changes the distribution the model trains on; evaluation always samples uniformly.
     */
    int locality;
    /* model "gat": attention heads (0: 1); hidden layers are heads x hidden wide. */
    int heads;
    /*
     * model "gat": the dropout on the attention weights in training (PyG's GATConv dropout),
     * in [0, 1). Each edge's mask is keyed by its two nodes' ids, so it does not depend on how
     * the minibatch is split over GPUs.
     */
    double attn_dropout;
    /*
     * Heterogeneous datasets: fanouts per (hop, edge type), hops from the seeds outward
     * separated by ';', each a comma list of EDGE=COUNT, where EDGE is an edge type's relation
     * name ("cites") or, where several share it, "src:relation:dst"; e.g.
     * "cites=10,writes=5;cites=5". An edge type a hop does not name draws that hop's fanouts[]
     * value; COUNT -1 takes all, 0 none. NULL: fanouts[] for every edge type.
     */
    const char *relation_fanouts;
    /*
     * zero-copy: how the feature rows outside the GPU cache reach the GPU. "zero-copy" (NULL):
     * the gather kernel reads them from pinned host memory. "cpu": the GPU lists them after
     * sampling, CPU threads (`threads`) copy them into pinned staging while the GPU trains the
     * previous minibatch, and one copy moves them. "split" or "split=F": both at once, CPU
     * threads copying the fraction F of them (F in [0, 1]; without "=F": GD_HOST_SPLIT, else
     * cpu / (cpu + zero-copy) of a start-up probe's rates) while the gather kernel reads the
     * rest from pinned memory. "auto": chosen in the run itself: the first training
     * minibatches try eight ways in turn, CPU fractions 1 (cpu), 0.95, 0.9, 0.8, 0.6, 0.4, 0.2
     * and 0 (zero-copy), GD_HOST_TRIAL minibatches each (default 20), and the way of the
     * shortest median time between minibatches is kept; the plan says which once it is. The
     * minibatches are the same every way. Other modes ignore it.
     */
    const char *host_gather;
    /*
     * Start-up progress (NULL: none): gd_trainer_create calls it as each long phase of its
     * build begins (placing the graph, counting out-degrees, filling the neighbour-list cache,
     * registering or copying the feature table, filling the feature cache), with stage = a line
     * saying what it does and about how long it and the rest of the start-up will take, done =
     * the phase's number from 1 and total = the number of phases. The times are estimated from
     * the sizes and reference rates (docs/train.md, "Start-up"), corrected by how long this
     * build's earlier phases took against their estimates. Returning non-zero is ignored.
     */
    gd_progress_fn startup_progress;
    void *startup_progress_user;
} gd_train_options;
#define GD_TRAIN_OPTIONS_INIT                                                                      \
    {sizeof(gd_train_options), NULL, NULL, 2, {10, 5}, 1024, 128, 0.5, 3e-3, 0.0, 0, 0, 0, NULL, \
     -1, -1, 0, NULL, 3, 0, 0, NULL, 0, 0, 0.0, NULL, NULL, NULL, NULL}
void gd_train_options_init(gd_train_options *o);

/* GD_OK if name is a training mode (cpu, all-gpu, zero-copy, cpu-centric, auto), else
   GD_ERR_INVALID_ARG with a message listing them: for checking a command line early. */
gd_status gd_train_mode_check(const char *name);

/* A model kind, for reports: its names, and whether it has an exact (layer-wise) inference. */
typedef struct {
    size_t size;             /* sizeof(gd_model_info) */
    const char *name;        /* "sage": gd_train_options.model, checkpoints */
    const char *label;       /* "graphsage": metrics records */
    const char *title;       /* "GraphSAGE": the kind in text for people */
    const char *description; /* "GraphSAGE (mean)": the kind and its variant */
    int exact_inference;     /* 1: gd_trainer_evaluate(..., exact = 1) computes it */
} gd_model_info;
#define GD_MODEL_INFO_INIT {sizeof(gd_model_info), NULL, NULL, NULL, NULL, 0}
void gd_model_info_init(gd_model_info *o);
/* The kind named kind (NULL: the default kind); GD_ERR_INVALID_ARG naming the known ones. */
gd_status gd_model_get_info(const char *kind, gd_model_info *info);

/*
 * The placement plan a trainer of these options would follow over ds on this machine now, as
 * text: one line per structure (indptr, indices, the caches, the features, the buffers) with
 * where it lives (gpu, gpu cache, pinned host, host) and its bytes, then the mode and why (what
 * auto picks). Nothing is placed or allocated on the GPU. text gets at most n bytes.
 */
gd_status gd_trainer_plan(const gd_dataset_t *ds, const gd_train_options *options, char *text,
                          size_t n);
/*
 * A trainer of options->model on ds (which must outlive it), with its parameters initialised
 * from options->seed. ds needs float32 features, labels of at least 2 classes and a non-empty
 * train_idx; valid_idx and test_idx are optional. options NULL: GD_TRAIN_OPTIONS_INIT.
 */
gd_status gd_trainer_create(const gd_dataset_t *ds, const gd_train_options *options,
                            gd_trainer_t **out);
void gd_trainer_destroy(gd_trainer_t *t);

typedef struct {
    size_t size;             /* sizeof(gd_trainer_info) */
    const char *mode;        /* the mode it runs in (auto resolved) */
    char plan[512];          /* where everything lives and, for auto, why */
    const char *model;       /* the model's kind ("sage"; gd_model_get_info describes it) */
    int mlp;                 /* 1: the MLP baseline */
    int on_device;           /* 1: the model lives in GPU memory */
    int device;              /* its GPU (on_device) */
    int64_t num_params;      /* model parameters (the flat buffer, padding included) */
    int64_t max_input_nodes; /* most input nodes of a minibatch */
    int64_t max_edges;       /* most edges of a minibatch, all layers */
    int64_t feature_bytes;   /* the gathered-feature buffer of one buffer set */
    int64_t train_nodes, valid_nodes, test_nodes;
    int64_t gpu_bytes;       /* GPU memory the trainer took at create */
    int64_t feature_cache_rows, feature_cache_bytes;
    int64_t graph_cache_bytes;
    int64_t epochs_done;     /* epochs trained (after a resume: the checkpoint's) */
    int64_t adam_step;       /* Adam steps taken */
    double best_valid;       /* best valid accuracy of gd_trainer_fit so far (NaN: none) */
    int64_t best_epoch;      /* its epoch, 0-based (-1: none) */
    char startup[256];       /* where gd_trainer_create's time went, phase by phase */
} gd_trainer_info;
#define GD_TRAINER_INFO_INIT                                                                       \
    {sizeof(gd_trainer_info), NULL, {0}, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
     -1, {0}}
void gd_trainer_info_init(gd_trainer_info *o);
gd_status gd_trainer_get_info(const gd_trainer_t *t, gd_trainer_info *info);

/* One epoch of gd_trainer_fit, as its on_epoch callback sees it. */
typedef struct {
    size_t size;       /* sizeof(gd_epoch_stats) */
    int64_t epoch;     /* 0-based */
    int64_t batches;   /* minibatches trained */
    double loss;       /* mean over the minibatches of their mean loss */
    double train_acc;  /* correct / labelled seeds over the epoch's minibatches */
    double valid_acc;  /* by sampled inference after the epoch (NaN: no valid split, or off) */
    double seconds;    /* the epoch's training, evaluation excluded */
    /*
     * Its parts: cpu mode, the wall time of each stage; GPU modes, the busy time of each
     * stage's stream (the stages overlap); wait_s is the time training waited for data.
     */
    double sample_s, gather_s, train_s, wait_s;
    double cpu_core_s;     /* CPU time of the process in the epoch (all threads) */
    int64_t gpu_mem_bytes; /* GPU memory in use at its end (0 without a GPU) */
    int improved;          /* 1: the best valid accuracy so far (its model is kept) */
    double best_valid;     /* the best valid accuracy so far (NaN: none) */
    int64_t best_epoch;    /* its epoch (-1: none) */
    double allreduce_s;    /* several ranks: busy time of the gradients' all-reduce stage */
    /* Features on disk (the plan says so): rows and bytes the epoch read from the file. */
    int64_t disk_rows_read, disk_bytes_read;
    /*
     * zero-copy with --host-gather cpu or split: the host rows (and bytes) CPU threads copied
     * into pinned staging in the epoch (with cpu, every row the GPU cache did not hold; with
     * split, the CPU's share); 0 otherwise.
     */
    int64_t host_rows_copied, host_bytes_copied;
} gd_epoch_stats;

/*
 * Per-minibatch progress of an epoch: done of total minibatches issued, the loss of the latest
 * minibatch known to have finished (NaN if none yet: the GPU modes never wait for it). A
 * non-zero return stops the run with GD_ERR_INTERRUPTED after the minibatches in flight.
 */
typedef int (*gd_train_progress_fn)(void *user, int64_t epoch, int64_t done, int64_t total,
                                    double loss);
/*
 * Called after every epoch, once its valid accuracy is known and its checkpoint is written.
 * 0: go on. > 0: stop here as if the last epoch were reached (the best model is restored and
 * tested). < 0: stop at once with GD_ERR_INTERRUPTED (no test).
 */
typedef int (*gd_epoch_fn)(void *user, const gd_epoch_stats *stats);

typedef struct {
    size_t size;                /* sizeof(gd_fit_options) */
    int64_t epochs;             /* train until this many epochs are done (default 1) */
    int validate;               /* 1: the valid accuracy after every epoch (default 1) */
    int keep_best;              /* 1: at the end, the best valid model (with validate; default 1) */
    int test;                   /* 1: the test accuracy at the end, sampled (default 1) */
    int exact_test;             /* 1: also exactly, layer-wise over all neighbours (default 1) */
    const char *checkpoint_dir; /* checkpoint.gdc and best.gdc go here (NULL: none) */
    int checkpoint_every;       /* epochs between checkpoints (the last is always saved) */
    int resume;                 /* 1: go on from checkpoint_dir (gd_trainer_resume) */
    int64_t max_batches;        /* train only this many minibatches of each epoch (0: all) */
    gd_epoch_fn on_epoch;
    void *on_epoch_user;
    gd_train_progress_fn progress;
    void *progress_user;
    int64_t report_every; /* minibatches between progress calls (0: 20) */
    /*
     * Without resume, a checkpoint_dir that holds an earlier run (checkpoint.gdc or best.gdc
     * that this trainer did not write or resume) is refused, naming the run; overwrite = 1
     * removes its files and starts again.
     */
    int overwrite;
} gd_fit_options;
#define GD_FIT_OPTIONS_INIT                                                                        \
    {sizeof(gd_fit_options), 1, 1, 1, 1, 1, NULL, 1, 0, 0, NULL, NULL, NULL, NULL, 0, 0}
void gd_fit_options_init(gd_fit_options *o);

typedef struct {
    size_t size;          /* sizeof(gd_fit_result) */
    int64_t start_epoch;  /* the first epoch this call trained */
    int64_t epochs_done;  /* epochs done at the end */
    int64_t best_epoch;   /* the best valid epoch (-1: none); with keep_best, the model held */
    double best_valid;    /* its valid accuracy (NaN: none) */
    double mean_epoch_s;  /* mean training time of the epochs this call ran (0: none) */
    double test_acc;      /* sampled test accuracy at the end (NaN: not asked, or no test split) */
    int64_t test_count;   /* labelled test nodes */
    double test_exact;    /* exact test accuracy (NaN: not asked); the MLP's sampled one is */
    double exact_seconds; /* the time of the exact inference */
    int stopped;          /* 1: on_epoch stopped the run before the last epoch */
} gd_fit_result;
#define GD_FIT_RESULT_INIT {sizeof(gd_fit_result), 0, 0, -1, 0, 0, 0, 0, 0, 0, 0}
void gd_fit_result_init(gd_fit_result *o);

/*
 * Train from the epochs done (0, or a checkpoint's) up to options->epochs: each epoch over
 * train_idx shuffled by (seed, epoch), then the valid accuracy; the best valid model is kept in
 * host memory (the first epoch counts even without a valid split); with a checkpoint_dir,
 * checkpoint.gdc (model, optimizer, epochs, best so far) every checkpoint_every epochs and at
 * the last, and best.gdc (the model, for gd_trainer_load) whenever the valid accuracy
 * improves. At the end the best model is restored and tested. result is optional.
 *
 * A checkpoint_dir is held by one trainer at a time: the first fit or resume on it takes an
 * exclusive lock (flock on checkpoint_dir/train.lock) that the trainer keeps until it is
 * destroyed or turns to another directory; another trainer, in this process or another, is
 * refused at once naming the process that holds it. A directory holding an earlier run is
 * refused unless options->resume or options->overwrite says what to do with it.
 */
gd_status gd_trainer_fit(gd_trainer_t *t, const gd_fit_options *options, gd_fit_result *result);
/*
 * Load dir/checkpoint.gdc, written by gd_trainer_fit with the same settings (the mode may
 * differ; a difference is refused naming it): parameters, optimizer, epochs done and the best
 * valid so far, whose model comes from dir/best.gdc. The next fit goes on from there. The
 * trainer takes dir's lock (see gd_trainer_fit) and keeps it.
 */
gd_status gd_trainer_resume(gd_trainer_t *t, const char *dir);
/*
 * Accuracy of the current model on split (GD_ARRAY_TRAIN_IDX, _VALID_IDX or _TEST_IDX):
 * correct / labelled nodes, NaN for an absent split or one without labelled nodes; count
 * (optional) gets the labelled nodes. exact = 0: sampled inference (minibatches of the split
 * with the training fanouts under a fixed key, no dropout: the same answer at every call).
 * exact = 1: layer-wise inference over every neighbour of every node; its predictions are kept
 * until the parameters change, so the other splits then cost nothing.
 */
gd_status gd_trainer_evaluate(gd_trainer_t *t, gd_array_id split, int exact, double *accuracy,
                              int64_t *count);
/* Save the current model (no optimizer) to path atomically: a model file for gd_trainer_load. */
gd_status gd_trainer_save(gd_trainer_t *t, const char *path);
/*
 * Load the parameters of a model file or a checkpoint of a model of the same kind and shape
 * (layers, widths, classes; refused naming what differs). The optimizer and the epoch count
 * are left as they are: gd_trainer_resume goes on with a run.
 */
gd_status gd_trainer_load(gd_trainer_t *t, const char *path);

/* What a model file or checkpoint holds, read without loading it (the file is checked). */
typedef struct {
    size_t size;        /* sizeof(gd_checkpoint_info) */
    char model[32];     /* the model's kind */
    int num_layers;
    int64_t in_dim, hidden, num_classes;
    int fanouts[GD_SAMPLER_MAX_LAYERS]; /* training fanouts (0 for the MLP baseline) */
    uint64_t seed;
    int64_t epochs_done, adam_step;
    double best_valid;  /* NaN: none */
    int64_t best_epoch; /* -1: none */
    int has_state;      /* 1: a checkpoint with the optimizer (resumable) */
    char dataset[256];  /* the dataset's name and sizes */
    char config[1024];  /* the other settings, as text */
    int heads;          /* GAT's attention heads (1 for other kinds) */
} gd_checkpoint_info;
#define GD_CHECKPOINT_INFO_INIT                                                                    \
    {sizeof(gd_checkpoint_info), {0}, 0, 0, 0, 0, {0}, 0, 0, 0, 0, -1, 0, {0}, {0}, 1}
void gd_checkpoint_info_init(gd_checkpoint_info *o);
gd_status gd_checkpoint_read_info(const char *path, gd_checkpoint_info *info);

#ifdef __cplusplus
}
#endif

#endif /* GRAPHDIRECT_H */
