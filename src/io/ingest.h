/*
 * Internal interface of `graphdirect convert`: the text parsers for edge lists and OGB CSV
 * files, and the chunked (optionally gzip-compressed) file reader that feeds them.
 *
 * The parsers work on buffers so that the fuzzers can drive them directly. They consume whole
 * lines only and carry their state (line number, column count, the values parsed so far)
 * across calls, so a file of any size streams through a fixed-size buffer: the reader hands
 * them a chunk, they report how many bytes they consumed, and the unfinished last line is
 * kept for the next chunk. Every error names the file, the line (and the column for numbers)
 * and the offending text.
 */
#ifndef GD_IO_INGEST_H
#define GD_IO_INGEST_H

#include "io/dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- growable arrays (gd_malloc'd, so a finished one can be adopted by a dataset) */

typedef struct {
    int64_t *data;
    int64_t len, cap;
} gd__i64vec;

typedef struct {
    float *data;
    int64_t len, cap;
} gd__f32vec;

/* Make room for at least `more` further elements (capacity grows geometrically). */
gd_status gd__i64vec_reserve(gd__i64vec *v, int64_t more, const char *what);
gd_status gd__f32vec_reserve(gd__f32vec *v, int64_t more, const char *what);
void gd__i64vec_free(gd__i64vec *v);
void gd__f32vec_free(gd__f32vec *v);

/*
 * Scan a decimal integer (optional sign) at [p, end). Returns 0 and sets *out and *stop (the
 * first byte after the digits) on success, 1 if there are no digits, 2 if it overflows int64.
 */
int gd__scan_i64(const char *p, const char *end, int64_t *out, const char **stop);

/* Write a short printable quote of [p, p + n) into buf (for messages about malformed text). */
const char *gd__quote(const char *p, size_t n, char *buf, size_t size);

/* ---- edge lists: "src dst [more columns]" per line, '#'/'%' comments, blank lines, CRLF */

typedef struct {
    const char *what;   /* the file, for messages */
    int64_t line;       /* lines consumed so far */
    int64_t limit;      /* ids must be < limit (0: no limit) */
    int allow_negative; /* negative ids are accepted (relabelling maps them anyway) */
    gd__i64vec src, dst;
} gd__edgelist;

/*
 * Parse the complete lines of buf[0..len). Unless final, a last line without '\n' is left
 * alone and *consumed says where it starts; with final it is parsed too. Ids must be integers
 * (a leading '+' is accepted) that fit int64.
 */
gd_status gd__edgelist_parse(gd__edgelist *el, const char *buf, size_t len, int final,
                             size_t *consumed);
void gd__edgelist_free(gd__edgelist *el);

/* ---- OGB CSV: comma-separated numbers, one row per line, every row the same width */

typedef enum {
    GD__CSV_INT = 0,   /* integers (edges, splits, counts) into ints */
    GD__CSV_LABEL = 1, /* one integer per row; empty, "nan" or -1 = unlabelled (-1) */
    GD__CSV_FLOAT = 2  /* finite numbers into floats (float32) */
} gd__csv_kind;

typedef struct {
    const char *what;  /* the file, for messages */
    gd__csv_kind kind;
    int64_t line;      /* lines consumed so far */
    int64_t ncols;     /* columns per row; 0 until the first row sets it */
    int64_t rows;
    int64_t limit;     /* GD__CSV_INT: values must be in [0, limit) (0: only >= 0) */
    const char *limit_why; /* what the limit is, for messages (NULL: "the node count") */
    int64_t reserve_rows; /* if > 0, room for this many rows is made once ncols is known */
    int split2;        /* GD__CSV_INT with 2 columns: column 0 to ints, column 1 to ints2 */
    gd__i64vec ints, ints2;
    gd__f32vec floats;
} gd__csv;

/* Same contract as gd__edgelist_parse. Empty lines are rows with one empty field. */
gd_status gd__csv_parse_chunk(gd__csv *c, const char *buf, size_t len, int final,
                              size_t *consumed);
void gd__csv_free(gd__csv *c);

/* ---- streaming a file (plain or gzip, detected by content) through a parser */

/*
 * Feed each complete line of buf[0..len) (without its '\n') to fn, counting lines in *line_no.
 * An unterminated last line is fed only when final; *consumed says how far the lines went, so
 * the caller carries the rest over to the next chunk.
 */
typedef gd_status (*gd__line_fn)(void *state, const char *line, const char *end);
gd_status gd__split_lines(const char *buf, size_t len, int final, size_t *consumed,
                          int64_t *line_no, gd__line_fn fn, void *state);

typedef gd_status (*gd__chunk_parser)(void *state, const char *buf, size_t len, int final,
                                      size_t *consumed);

/*
 * Read path in chunks and feed them to parse. Progress is reported as (compressed) bytes of
 * the file read so far out of its size, under stage. A truncated or corrupt gzip stream is a
 * GD_ERR_FORMAT error naming the file.
 */
gd_status gd__read_text(const char *path, gd__chunk_parser parse, void *state,
                        gd_progress_fn progress, void *progress_user, const char *stage);

/* Adapters with the gd__chunk_parser signature. */
gd_status gd__edgelist_parse_cb(void *state, const char *buf, size_t len, int final,
                                size_t *consumed);
gd_status gd__csv_parse_cb(void *state, const char *buf, size_t len, int final,
                           size_t *consumed);

/* ---- the converters behind gd_convert (the dataset is created by the caller) */

typedef struct {
    const gd_convert_options *opt;
    const char *input;
    gd_dataset_t *ds;
} gd__convert_job;

gd_status gd__convert_edgelist(const gd__convert_job *job);
gd_status gd__convert_ogb(const gd__convert_job *job);
/* The heterogeneous layouts (convert_hetero.c): OGB's (ogbn-mag) and IGBH's .npy tree. */
gd_status gd__convert_ogb_hetero(const gd__convert_job *job);
gd_status gd__convert_igbh(const gd__convert_job *job);
/* Whether folder input holds an IGBH tree: two or more processed/<src>__<rel>__<dst> folders
 * with an edge_index.npy (IGB's homogeneous download has one, paper__cites__paper). */
int gd__is_igbh(const char *input);

/* Pieces of the OGB reader (ogb.c) that the heterogeneous one shares. */
/* Read one CSV file of the layout into c (c->what is set to the path, which must outlive c). */
gd_status gd__ogb_read_csv(const gd__convert_job *job, const char *path, gd__csv *c,
                           const char *stage);
/* A file holding one count (num-node-list, num-edge-list). */
gd_status gd__ogb_read_count(const gd__convert_job *job, const char *path, int64_t *out);
/* Whether path is a regular file / a directory (stat; 0 when it cannot be read). */
int gd__is_file(const char *path);
int gd__is_dir(const char *path);
/*
 * The sub-folders of dir (hidden ones left out) sorted by name, so that nothing depends on the
 * order in which the file system lists them; a missing dir is an empty list. Free the list with
 * gd__free_names.
 */
gd_status gd__subdirs(const char *dir, char ***out, int *count);
void gd__free_names(char **names, int n);
/*
 * The split folder under split_root: the one wanted, else the only one, else "random"; *out is
 * NULL (and the call succeeds) when split_root does not exist and none is wanted.
 */
gd_status gd__ogb_choose_split(const char *split_root, const char *wanted, char **out);

/*
 * Shared last step: build the CSC graph from src/dst (freed on return, success or not) and
 * hand indptr/indices to the dataset.
 */
gd_status gd__convert_graph(const gd__convert_job *job, int64_t num_nodes, gd__i64vec *src,
                            gd__i64vec *dst);
/*
 * Hand float32 features (rows x dim, gd_malloc'd, owned by the dataset from the call on) to
 * the dataset in the requested dtype, converting in place.
 */
gd_status gd__convert_features(const gd__convert_job *job, float *data, int64_t rows,
                               int64_t dim);
/* The same into array slot id (GD__ARRAY_TYPE_FEATURES + t for node type t's table). */
gd_status gd__convert_features_to(const gd__convert_job *job, int id, float *data, int64_t rows,
                                  int64_t dim);
/* Attach features / labels read from .npy files (edge lists and .npy folders). */
gd_status gd__convert_npy_features(const gd__convert_job *job, const char *path,
                                   int64_t num_nodes);
/*
 * The same into array slot id, the file holding `rows` rows (`whose` says whose rows they are in
 * a message: "the graph", "node type author").
 */
gd_status gd__convert_npy_features_to(const gd__convert_job *job, int id, const char *path,
                                      int64_t rows, const char *whose);
gd_status gd__convert_npy_labels(const gd__convert_job *job, const char *path,
                                 int64_t num_nodes);
/*
 * Attach n labels given as floats (NaN: unlabelled; OGB's and IGB's binary layouts) or as
 * int32/int64, as the dataset stores them: int64, -1 for unlabelled. Anything but a whole number
 * >= -1 fails, naming `what` and the position.
 */
gd_status gd__convert_number_labels(const gd__convert_job *job, const void *data, gd_dtype dtype,
                                    int64_t n, const char *what);
/* The decoding of gd__convert_number_labels into y[0..n), for a slice of a larger array. */
gd_status gd__number_labels_decode(const void *data, gd_dtype dtype, int64_t n, int64_t *y,
                                   const char *what);

#ifdef __cplusplus
}
#endif

#endif
