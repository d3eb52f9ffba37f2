/*
 * OGB raw layout input of `graphdirect convert`, and the CSV parser it is built on.
 *
 * OGB ships a node-property dataset as gzip CSV files: raw/edge.csv.gz ("src,dst" per line),
 * raw/num-node-list.csv.gz and raw/num-edge-list.csv.gz (one count each), raw/node-feat.csv.gz
 * (one row of features per node), raw/node-label.csv.gz (one label per node, empty or "nan" when
 * unlabelled) and split/NAME/{train,valid,test}.csv.gz (one node id per line). Each file streams
 * through gd__read_text in chunks into growable arrays that become the dataset's arrays without
 * a further copy; the edges go through gd_csc_from_coo and are freed before the features are
 * read, so the peak is the larger of (edges + CSC) and (CSC + features).
 */
#define _GNU_SOURCE /* sync_file_range: the written feature table goes to the disk early */
#include "io/ingest.h"
#include "io/npy.h"
#include "io/npz.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ CSV parsing */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int lower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

/* Case-insensitive comparison of [p, p + n) with a lower-case word. */
static int word_is(const char *p, size_t n, const char *word) {
    size_t w = strlen(word);
    if (n != w) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(p[i]) != word[i]) return 0;
    return 1;
}

/* NaN or infinity spelled in any of the ways strtod would accept. */
static int is_nan_or_inf(const char *p, size_t n) {
    if (n > 0 && (*p == '+' || *p == '-')) p++, n--;
    return word_is(p, n, "nan") || word_is(p, n, "inf") || word_is(p, n, "infinity");
}

/*
 * A decimal number into float32, correctly rounded. Short integers (the usual bag-of-words or
 * one-hot features) are converted directly; anything else goes through strtof on a
 * NUL-terminated copy, after checking that it only has the characters of a decimal number
 * (so hexadecimal floats and the words strtof knows are refused). Returns 0 on success,
 * 1 if the text is not a number, 2 for NaN/infinity, 3 if it is outside the float32 range.
 */
static int parse_float(const char *p, size_t n, float *out) {
    size_t i = (n > 0 && (*p == '-' || *p == '+')) ? 1 : 0;
    if (n > i && n - i <= 7) {
        int32_t v = 0;
        size_t j = i;
        while (j < n && p[j] >= '0' && p[j] <= '9') v = v * 10 + (p[j++] - '0');
        if (j == n) {
            *out = (float)(*p == '-' ? -v : v);
            return 0;
        }
    }
    if (is_nan_or_inf(p, n)) return 2;
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return 1;
    int digits = 0;
    for (size_t j = 0; j < n; j++) {
        char c = p[j];
        if (c >= '0' && c <= '9') digits = 1;
        else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E') return 1;
    }
    if (!digits) return 1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    char *endp = NULL;
    float v = strtof(tmp, &endp);
    if (endp != tmp + n) return 1;
    if (isinf(v)) return 3;
    *out = v;
    return 0;
}

/*
 * The error about field [f, fe) of the current line: its file, line and character, the field
 * quoted, its column (col >= 0; -1 leaves it out) and then what is wrong with it (tail).
 */
static gd_status field_error(const gd__csv *c, gd_status code, const char *line, const char *f,
                             const char *fe, int64_t col, const char *tail) {
    char q[64], where[40] = "";
    if (col >= 0) snprintf(where, sizeof where, " in column %lld", (long long)col + 1);
    return gd__error(code, "%s:%lld:%lld: '%s'%s%s", c->what, (long long)c->line,
                     (long long)(f - line + 1), gd__quote(f, (size_t)(fe - f), q, sizeof q), where,
                     tail);
}

static gd_status csv_value(gd__csv *c, const char *line, const char *f, const char *fe,
                           int64_t col) {
    char q[64];
    long long ln = (long long)c->line, cn = (long long)(f - line + 1);
    const char *stop = NULL;
    int64_t v = 0;
    if (c->kind == GD__CSV_FLOAT) {
        float x = 0.0f;
        int r = parse_float(f, (size_t)(fe - f), &x);
        if (r == 2)
            return field_error(c, GD_ERR_FORMAT, line, f, fe, col,
                               ": NaN and infinity are not allowed in features; replace them "
                               "(e.g. with 0) before converting");
        if (r == 3)
            return field_error(c, GD_ERR_RANGE, line, f, fe, -1, " is outside the float32 range");
        if (r != 0)
            return field_error(c, GD_ERR_FORMAT, line, f, fe, col,
                               " is not a number (expected comma-separated decimal numbers)");
        c->floats.data[c->floats.len++] = x;
        return GD_OK;
    }
    if (c->kind == GD__CSV_LABEL) {
        if (f == fe || word_is(f, (size_t)(fe - f), "nan")) {
            v = -1;
        } else if (gd__scan_i64(f, fe, &v, &stop) != 0 || stop != fe) {
            /* Labels written by pandas from a float column look like "3.0". */
            float x = 0.0f;
            int r = parse_float(f, (size_t)(fe - f), &x);
            if (r != 0 || x != floorf(x) || fabsf(x) > 16777216.0f)
                return gd__error(GD_ERR_FORMAT,
                                 "%s:%lld:%lld: label '%s' is not an integer class id (or "
                                 "empty/nan for unlabelled)",
                                 c->what, ln, cn, gd__quote(f, (size_t)(fe - f), q, sizeof q));
            v = (int64_t)x;
        }
        if (v < -1 || v > INT32_MAX)
            return gd__error(GD_ERR_RANGE,
                             "%s:%lld: label %lld is out of range: a label is a class id in "
                             "[0, %d], or -1, empty or nan for an unlabelled node",
                             c->what, ln, (long long)v, INT32_MAX);
        c->ints.data[c->ints.len++] = v;
        return GD_OK;
    }
    int r = gd__scan_i64(f, fe, &v, &stop);
    if (r == 0 && stop != fe) r = 1;
    if (r == 1)
        return field_error(c, GD_ERR_FORMAT, line, f, fe, col,
                           " is not an integer (expected comma-separated non-negative integers)");
    if (r == 2) return field_error(c, GD_ERR_RANGE, line, f, fe, -1, " does not fit in 64 bits");
    if (v < 0)
        return gd__error(GD_ERR_RANGE, "%s:%lld:%lld: %lld is negative: node ids and counts "
                         "must be >= 0", c->what, ln, cn, (long long)v);
    if (c->limit > 0 && v >= c->limit)
        return gd__error(GD_ERR_RANGE, "%s:%lld:%lld: node id %lld is outside [0, %lld) (%s)",
                         c->what, ln, cn, (long long)v, (long long)c->limit,
                         c->limit_why ? c->limit_why : "the node count");
    if (c->split2 && col == 1) c->ints2.data[c->ints2.len++] = v;
    else c->ints.data[c->ints.len++] = v;
    return GD_OK;
}

static gd_status csv_row(gd__csv *c, const char *p, const char *end) {
    gd_status st = GD_OK;
    const char *line = p;
    if (end > p && end[-1] == '\r') end--;
    if (c->kind != GD__CSV_LABEL) { /* blank lines carry no row, except as missing labels */
        const char *b = p;
        while (b < end && is_blank(*b)) b++;
        if (b == end) return GD_OK;
    }
    int64_t cols = 1;
    for (const char *s = p; (s = memchr(s, ',', (size_t)(end - s))) != NULL; s++) cols++;
    if (c->ncols == 0) {
        GD_REQUIRE(!(c->split2 && cols != 2), GD_ERR_FORMAT,
                   "%s:%lld: %lld columns, expected 2 ('src,dst')", c->what, (long long)c->line,
                   (long long)cols);
        c->ncols = cols;
        if (c->reserve_rows > 0 && !gd__mul_overflow_i64(c->reserve_rows, cols, &(int64_t){0})) {
            int64_t per = c->split2 ? 1 : cols;
            gd__i64vec *v = &c->ints;
            if (c->kind == GD__CSV_FLOAT)
                GD_CHECK(gd__f32vec_reserve(&c->floats, c->reserve_rows * per, c->what));
            else GD_CHECK(gd__i64vec_reserve(v, c->reserve_rows * per, c->what));
            if (c->split2) GD_CHECK(gd__i64vec_reserve(&c->ints2, c->reserve_rows, c->what));
        }
    }
    GD_REQUIRE(cols == c->ncols, GD_ERR_FORMAT,
               "%s:%lld: the row has %lld columns, expected %lld like the rows before: the file "
               "is truncated or malformed",
               c->what, (long long)c->line, (long long)cols, (long long)c->ncols);
    GD_REQUIRE(c->kind != GD__CSV_LABEL || cols == 1, GD_ERR_FORMAT,
               "%s:%lld: %lld columns; a label file has one label per line", c->what,
               (long long)c->line, (long long)cols);
    if (c->kind == GD__CSV_FLOAT) GD_CHECK(gd__f32vec_reserve(&c->floats, cols, c->what));
    else if (c->split2) {
        GD_CHECK(gd__i64vec_reserve(&c->ints, 1, c->what));
        GD_CHECK(gd__i64vec_reserve(&c->ints2, 1, c->what));
    } else GD_CHECK(gd__i64vec_reserve(&c->ints, cols, c->what));
    for (int64_t col = 0; col < cols; col++) {
        const char *fe = memchr(p, ',', (size_t)(end - p));
        if (!fe) fe = end;
        const char *f = p, *g = fe;
        while (f < g && is_blank(*f)) f++;
        while (g > f && is_blank(g[-1])) g--;
        GD_CHECK(csv_value(c, line, f, g, col));
        p = fe + 1;
    }
    c->rows++;
fail:
    return st;
}

static gd_status csv_row_fn(void *state, const char *p, const char *end) {
    return csv_row(state, p, end);
}

gd_status gd__csv_parse_chunk(gd__csv *c, const char *buf, size_t len, int final,
                              size_t *consumed) {
    return gd__split_lines(buf, len, final, consumed, &c->line, csv_row_fn, c);
}

gd_status gd__csv_parse_cb(void *state, const char *buf, size_t len, int final,
                           size_t *consumed) {
    return gd__csv_parse_chunk(state, buf, len, final, consumed);
}

void gd__csv_free(gd__csv *c) {
    gd__i64vec_free(&c->ints);
    gd__i64vec_free(&c->ints2);
    gd__f32vec_free(&c->floats);
}

/* ------------------------------------------------------------ the OGB folder */

int gd__is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int gd__is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void gd__free_names(char **names, int n) {
    for (int i = 0; i < n; i++) gd_free(names[i]);
    gd_free(names);
}

/*
 * The sub-folders of dir (hidden ones left out) sorted by name, so that nothing depends on the
 * order in which the file system lists them. A missing dir is an empty list.
 */
gd_status gd__subdirs(const char *dir, char ***out, int *count) {
    gd_status st = GD_OK;
    DIR *d = NULL;
    char **names = NULL, *path = NULL;
    int n = 0, cap = 0;
    *out = NULL;
    *count = 0;
    if (!gd__is_dir(dir)) return GD_OK;
    d = opendir(dir);
    GD_REQUIRE(d, GD_ERR_IO, "cannot list '%s'", dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        gd_free(path);
        path = gd__path_join(dir, de->d_name);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory listing '%s'", dir);
        if (!gd__is_dir(path)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = gd_realloc(names, (size_t)cap * sizeof *names);
            GD_REQUIRE(grown, GD_ERR_NO_MEMORY, "out of memory listing '%s'", dir);
            names = grown;
        }
        names[n] = gd__strdup(de->d_name);
        GD_REQUIRE(names[n], GD_ERR_NO_MEMORY, "out of memory listing '%s'", dir);
        n++;
    }
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_names);
    *out = names;
    *count = n;
    names = NULL;
    n = 0;
fail:
    if (d) closedir(d);
    gd__free_names(names, n);
    gd_free(path);
    return st;
}

/* Read one CSV file of the layout into c (c->what is set to the path, which must outlive c). */
gd_status gd__ogb_read_csv(const gd__convert_job *job, const char *path, gd__csv *c,
                           const char *stage) {
    c->what = path;
    return gd__read_text(path, gd__csv_parse_cb, c, job->opt->progress, job->opt->progress_user,
                         stage);
}

/* A file holding one count (num-node-list, num-edge-list). */
gd_status gd__ogb_read_count(const gd__convert_job *job, const char *path, int64_t *out) {
    gd_status st = GD_OK;
    gd__csv c;
    memset(&c, 0, sizeof c);
    c.kind = GD__CSV_INT;
    GD_CHECK(gd__ogb_read_csv(job, path, &c, "convert: counts"));
    GD_REQUIRE(c.rows == 1 && c.ncols == 1, GD_ERR_UNSUPPORTED,
               "%s holds %lld rows of %lld columns: graphdirect converts single-graph (node "
               "property) datasets, whose count files hold one number",
               path, (long long)c.rows, (long long)c.ncols);
    *out = c.ints.data[0];
fail:
    gd__csv_free(&c);
    return st;
}

/* Pick the split folder: the one asked for, else the only one, else "random". */
gd_status gd__ogb_choose_split(const char *split_root, const char *wanted, char **out) {
    gd_status st = GD_OK;
    char names[512] = "", **dirs = NULL, *path = NULL;
    int count = 0, has_random = 0;
    *out = NULL;
    if (!gd__is_dir(split_root)) {
        GD_REQUIRE(!wanted, GD_ERR_NOT_FOUND,
                   "split '%s' asked for, but '%s' does not exist", wanted, split_root);
        return GD_OK;
    }
    GD_CHECK(gd__subdirs(split_root, &dirs, &count));
    for (int k = 0; k < count; k++) {
        if (strcmp(dirs[k], "random") == 0) has_random = 1;
        size_t used = strlen(names);
        if (used + strlen(dirs[k]) + 3 < sizeof names)
            snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", dirs[k]);
    }
    if (wanted) {
        path = gd__path_join(split_root, wanted);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a split");
        GD_REQUIRE(strchr(wanted, '/') == NULL && gd__is_dir(path), GD_ERR_NOT_FOUND,
                   "split '%s' not found in '%s' (it has: %s)", wanted, split_root,
                   count ? names : "no splits");
        *out = path;
        path = NULL;
    } else if (count == 1 || has_random) {
        *out = gd__path_join(split_root, count == 1 ? dirs[0] : "random");
        GD_REQUIRE(*out, GD_ERR_NO_MEMORY, "out of memory naming a split");
    } else {
        GD_REQUIRE(count == 0, GD_ERR_INVALID_ARG,
                   "'%s' has several splits (%s): choose one with --split", split_root, names);
    }
fail:
    gd__free_names(dirs, count);
    gd_free(path);
    return st;
}

/*
 * The three id lists of a split folder, each id below n (why says where n comes from), adopted
 * as the dataset's train, valid and test arrays.
 */
static gd_status read_splits(const gd__convert_job *job, const char *split_dir, int64_t n,
                             const char *why) {
    static const char *const split_file[3] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
    static const gd_array_id split_id[3] = {GD_ARRAY_TRAIN_IDX, GD_ARRAY_VALID_IDX,
                                            GD_ARRAY_TEST_IDX};
    gd_status st = GD_OK;
    char *split_path = NULL;
    gd__csv c;
    memset(&c, 0, sizeof c);
    GD_CHECK(gd__dataset_set_info(job->ds, "split", split_dir));
    for (int k = 0; k < 3; k++) {
        gd_free(split_path);
        split_path = gd__path_join(split_dir, split_file[k]);
        GD_REQUIRE(split_path, GD_ERR_NO_MEMORY, "out of memory naming a split file");
        GD_REQUIRE(gd__is_file(split_path), GD_ERR_NOT_FOUND,
                   "%s is missing: a split folder holds train.csv.gz, valid.csv.gz and "
                   "test.csv.gz",
                   split_path);
        memset(&c, 0, sizeof c);
        c.kind = GD__CSV_INT;
        c.ncols = 1;
        c.limit = n;
        c.limit_why = why;
        GD_CHECK(gd__ogb_read_csv(job, split_path, &c, "convert: split"));
        int64_t shape[1] = {c.rows};
        void *data = c.ints.data;
        c.ints.data = NULL;
        gd__csv_free(&c);
        GD_CHECK(gd__dataset_adopt(job->ds, split_id[k], GD_DTYPE_INT64, 1, shape, data));
    }
fail:
    gd__csv_free(&c);
    gd_free(split_path);
    return st;
}

/* ------------------------------------------------ the binary layout (papers100M-bin) */

/* A whole .npz member into a gd_malloc'd buffer, streamed (chunks land at their offsets). */
typedef struct {
    const gd_npy_info *info;
    unsigned char *buf;
    const char *what;
} whole;

static gd_status whole_sink(void *user, const void *data, size_t n, uint64_t offset) {
    gd_status st = GD_OK;
    whole *w = user;
    if (!w->buf) GD_ALLOC(w->buf, (size_t)w->info->data_bytes, w->what);
    memcpy(w->buf + offset, data, n);
fail:
    return st;
}

static gd_status read_whole(const gd__npz *z, const char *name, gd_npy_info *info, void **out) {
    gd_status st = GD_OK;
    whole w = {info, NULL, name};
    memset(info, 0, sizeof *info);
    *out = NULL;
    GD_CHECK(gd__npz_read(z, name, info, whole_sink, &w));
    if (!w.buf) GD_ALLOC(w.buf, 1, name); /* an empty array */
    *out = w.buf;
    return GD_OK;
fail:
    gd_free(w.buf);
    return st;
}

/* The written range of the output file goes to the disk now (a hint; errors are ignored). */
typedef struct {
    int fd;
    int64_t base;
} writeback;

static void start_writeback(void *user, int part, int64_t offset, int64_t n) {
    const writeback *w = user;
    (void)part;
    if (w->fd >= 0) (void)sync_file_range(w->fd, w->base + offset, n, SYNC_FILE_RANGE_WRITE);
}

/*
 * node_feat, stored as float32, read by every core straight into the features.npy of an
 * on-disk build (its shared mapping). Each chunk's pages are handed to the disk as soon as
 * they land, so the output is written while the rest of the archive is still being read:
 * with 512 GB of memory the kernel would otherwise start writing only past its dirty limit
 * (10 % of memory), and the final flush would write the whole 57 GB table after the read.
 */
static gd_status features_to_file(const gd__convert_job *job, const gd__npz *z,
                                  const char *data_path, gd_npy_info *info, int64_t n,
                                  int64_t dim) {
    gd_status st = GD_OK;
    const int64_t shape[2] = {n, dim};
    void *out = NULL;
    char *path = NULL;
    writeback wb = {-1, gd__npy_header_size(GD_DTYPE_FLOAT32, 2, shape)};
    GD_CHECK(gd__dataset_alloc(job->ds, GD_ARRAY_FEATURES, GD_DTYPE_FLOAT32, 2, shape, &out));
    path = gd__path_join(job->ds->build_dir, "features.npy");
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming '%s/features.npy'",
               job->ds->build_dir);
    wb.fd = open(path, O_RDWR | O_CLOEXEC);
    {
        void *const parts[1] = {out};
        const int64_t bytes[1] = {info->data_bytes};
        GD_CHECK(gd__npz_read_into(z, "node_feat", info, parts, bytes, 1, start_writeback, &wb));
    }
    GD_REQUIRE(info->ndim == 2 && info->shape[0] == n && info->shape[1] == dim, GD_ERR_FORMAT,
               "%s: node_feat changed shape while it was read", data_path);
fail:
    if (wb.fd >= 0) close(wb.fd);
    gd_free(path);
    return st;
}

/*
 * OGB's binary raw layout (ogbn-papers100M ships as papers100M-bin): raw/data.npz with
 * edge_index (2, E), node_feat (N, dim), num_nodes_list and num_edges_list (one graph);
 * raw/node-label.npz with node_label (N, 1), floats with NaN for unlabelled nodes; the splits
 * as in the CSV layout (split/<name>/train.csv.gz ...).
 */
static gd_status convert_ogb_bin(const gd__convert_job *job, const char *data_path,
                                 const char *label_path, const char *split_root) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    gd__npz *z = NULL, *zl = NULL;
    void *buf = NULL;
    gd__i64vec src = {0}, dst = {0};
    char *split_dir = NULL, why[700];
    gd_npy_info info;
    GD_CHECK(gd__npz_open(data_path, &z));
    int64_t n = opt->num_nodes;
    if (gd__npz_has(z, "num_nodes_list")) {
        GD_CHECK(read_whole(z, "num_nodes_list", &info, &buf));
        GD_REQUIRE((info.dtype == GD_DTYPE_INT64 || info.dtype == GD_DTYPE_INT32) &&
                       info.shape[0] * (info.ndim == 2 ? info.shape[1] : 1) == 1,
                   GD_ERR_UNSUPPORTED,
                   "%s: num_nodes_list holds %lld graphs (%s); one graph is converted", data_path,
                   (long long)info.shape[0], gd_dtype_name(info.dtype));
        const int64_t listed = gd__int_at(buf, info.dtype, 0);
        GD_REQUIRE(n == 0 || n == listed, GD_ERR_INVALID_ARG,
                   "--num-nodes %lld disagrees with %s, whose num_nodes_list says %lld",
                   (long long)n, data_path, (long long)listed);
        n = listed;
        gd_free(buf);
        buf = NULL;
        snprintf(why, sizeof why, "%s says %lld nodes", data_path, (long long)n);
    } else {
        snprintf(why, sizeof why, "the node count");
    }

    /*
     * An on-disk build takes float32 features first, straight into its file: their write-back
     * (57 GB on papers) then runs while the edges are read and the graph is built. In memory
     * they come after the graph, so that the peak is the larger of (edges + CSC) and
     * (CSC + features).
     */
    int features_done = 0;
    const gd_dtype want =
        opt->feature_dtype == GD_DTYPE_INVALID ? GD_DTYPE_FLOAT32 : opt->feature_dtype;
    if (job->ds->build_dir && want == GD_DTYPE_FLOAT32 && gd__npz_has(z, "node_feat")) {
        const double tf = gd__now();
        GD_CHECK(gd__npz_info(z, "node_feat", &info));
        if (info.dtype == GD_DTYPE_FLOAT32 && info.ndim == 2 && (n == 0 || info.shape[0] == n)) {
            if (n == 0) {
                n = info.shape[0];
                snprintf(why, sizeof why, "%s's node_feat has %lld rows", data_path,
                         (long long)n);
            }
            GD_CHECK(features_to_file(job, z, data_path, &info, n, info.shape[1]));
            const double s = gd__now() - tf;
            GD_INFO("convert: %s: node_feat (%.2f GB) read and written in %.2f s (%.2f GB/s)",
                    data_path, (double)info.data_bytes / 1e9, s, (double)info.data_bytes / 1e9 / s);
            features_done = 1;
        }
    }

    /*
     * The edges: (2, E), sources then destinations. int64 rows are read by every core straight
     * into the two arrays the graph is built from (papers100M: 26 GB, no second copy).
     */
    double t0 = gd__now();
    GD_CHECK(gd__npz_info(z, "edge_index", &info));
    GD_REQUIRE(info.ndim == 2 && info.shape[0] == 2 &&
                   (info.dtype == GD_DTYPE_INT64 || info.dtype == GD_DTYPE_INT32),
               GD_ERR_FORMAT, "%s: edge_index is %s of %lld x %lld; expected int64 of (2, E)",
               data_path, gd_dtype_name(info.dtype), (long long)info.shape[0],
               (long long)info.shape[1]);
    const int64_t e = info.shape[1];
    GD_CHECK(gd__i64vec_reserve(&src, e, "the edge sources"));
    GD_CHECK(gd__i64vec_reserve(&dst, e, "the edge destinations"));
    if (info.dtype == GD_DTYPE_INT64) {
        void *const parts[2] = {src.data, dst.data};
        const int64_t bytes[2] = {e * 8, e * 8};
        GD_CHECK(gd__npz_read_into(z, "edge_index", &info, parts, bytes, 2, NULL, NULL));
    } else {
        GD_CHECK(read_whole(z, "edge_index", &info, &buf));
        const int32_t *w = buf;
#pragma omp parallel for schedule(static) num_threads(gd__num_threads()) if (e > 65536)
        for (int64_t i = 0; i < e; i++) {
            src.data[i] = w[i];
            dst.data[i] = w[e + i];
        }
        gd_free(buf);
        buf = NULL;
    }
    int64_t mx = -1;
#pragma omp parallel for schedule(static) reduction(max : mx) num_threads(gd__num_threads()) \
    if (e > 65536)
    for (int64_t i = 0; i < e; i++) {
        const int64_t a = src.data[i] > dst.data[i] ? src.data[i] : dst.data[i];
        if (a > mx) mx = a;
    }
    src.len = dst.len = e;
    const double t1 = gd__now();
    GD_INFO("convert: %s: edge_index (%.2f GB) read in %.2f s (%.2f GB/s)", data_path,
            (double)info.data_bytes / 1e9, t1 - t0, (double)info.data_bytes / 1e9 / (t1 - t0));
    if (n == 0) n = mx + 1;
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "OGB binary raw layout (data.npz)"));
    GD_CHECK(gd__convert_graph(job, n, &src, &dst));
    gd__i64vec_free(&src);
    gd__i64vec_free(&dst);
    const double t2 = gd__now();
    GD_INFO("convert: the CSC graph built in %.2f s", t2 - t1);

    if (!features_done && gd__npz_has(z, "node_feat")) {
        GD_CHECK(gd__npz_info(z, "node_feat", &info));
        GD_REQUIRE(info.ndim == 2 && info.shape[0] == n &&
                       (info.dtype == GD_DTYPE_FLOAT32 || info.dtype == GD_DTYPE_FLOAT16),
                   GD_ERR_FORMAT,
                   "%s: node_feat is %s of %lld x %lld; expected float32 or float16 of (%lld, "
                   "dim), a row per node",
                   data_path, gd_dtype_name(info.dtype), (long long)info.shape[0],
                   (long long)info.shape[1], (long long)n);
        const int64_t dim = info.shape[1], count = n * dim;
        GD_ALLOC(buf, (size_t)(info.data_bytes ? info.data_bytes : 1), "the features");
        {
            void *const parts[1] = {buf};
            const int64_t bytes[1] = {info.data_bytes};
            GD_CHECK(gd__npz_read_into(z, "node_feat", &info, parts, bytes, 1, NULL, NULL));
        }
        if (info.dtype == GD_DTYPE_FLOAT16) {
            float *f = NULL;
            GD_ALLOC(f, (size_t)(count ? count : 1) * sizeof(float), "the features");
            const uint16_t *h = buf;
#pragma omp parallel for schedule(static) num_threads(gd__num_threads()) if (count > 65536)
            for (int64_t i = 0; i < count; i++) f[i] = gd_half_to_float(h[i]);
            gd_free(buf);
            buf = f;
        }
        float *data = buf;
        buf = NULL;
        GD_CHECK(gd__convert_features(job, data, n, dim));
        const double t3 = gd__now();
        GD_INFO("convert: %s: node_feat (%.2f GB) read in %.2f s (%.2f GB/s)", data_path,
                (double)info.data_bytes / 1e9, t3 - t2, (double)info.data_bytes / 1e9 / (t3 - t2));
    }
    if (label_path && gd__is_file(label_path)) {
        GD_CHECK(gd__npz_open(label_path, &zl));
        GD_CHECK(read_whole(zl, "node_label", &info, &buf));
        GD_REQUIRE(info.shape[0] == n && (info.ndim == 1 || info.shape[1] == 1), GD_ERR_FORMAT,
                   "%s: node_label has shape (%lld, %lld); expected one label per node (%lld)",
                   label_path, (long long)info.shape[0], (long long)info.shape[1], (long long)n);
        /* NaN: unlabelled (papers100M labels 1.5M of its 111M nodes). */
        char what[4200];
        snprintf(what, sizeof what, "%s: node_label", label_path);
        GD_CHECK(gd__convert_number_labels(job, buf, info.dtype, n, what));
        gd_free(buf);
        buf = NULL;
    }
    GD_CHECK(gd__ogb_choose_split(split_root, opt->split, &split_dir));
    if (split_dir) GD_CHECK(read_splits(job, split_dir, n, why));
fail:
    gd__npz_close(z);
    gd__npz_close(zl);
    gd_free(buf);
    gd__i64vec_free(&src);
    gd__i64vec_free(&dst);
    gd_free(split_dir);
    return st;
}

gd_status gd__convert_ogb(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    enum { P_NODES, P_EDGES_N, P_EDGES, P_FEAT, P_LABEL, P_SPLIT, P_COUNT };
    static const char *const rel[P_COUNT] = {
        "raw/num-node-list.csv.gz", "raw/num-edge-list.csv.gz", "raw/edge.csv.gz",
        "raw/node-feat.csv.gz",     "raw/node-label.csv.gz",    "split"};
    char *path[P_COUNT] = {0};
    char *split_dir = NULL, why[600];
    gd__csv c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < P_COUNT; i++) {
        path[i] = gd__path_join(job->input, rel[i]);
        GD_REQUIRE(path[i], GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
    }
    if (!gd__is_file(path[P_EDGES])) {
        /* The binary layout instead of the CSV one? */
        char *npz = gd__path_join(job->input, "raw/data.npz");
        char *labels = gd__path_join(job->input, "raw/node-label.npz");
        if (npz && labels && gd__is_file(npz))
            st = convert_ogb_bin(job, npz, labels, path[P_SPLIT]);
        else if (!npz || !labels)
            st = gd__error(GD_ERR_NO_MEMORY, "out of memory naming files of '%s'", job->input);
        else
            st = gd__error(GD_ERR_NOT_FOUND,
                           "'%s' is not an OGB raw folder: it has neither %s (the CSV layout) "
                           "nor %s (the binary layout)",
                           job->input, path[P_EDGES], npz);
        gd_free(npz);
        gd_free(labels);
        goto fail;
    }

    /* The node count bounds every id read after it. */
    int64_t n = 0, expect_edges = -1;
    if (gd__is_file(path[P_NODES])) {
        GD_CHECK(gd__ogb_read_count(job, path[P_NODES], &n));
        GD_REQUIRE(opt->num_nodes == 0 || opt->num_nodes == n, GD_ERR_INVALID_ARG,
                   "--num-nodes %lld disagrees with %s, which says %lld", (long long)opt->num_nodes,
                   path[P_NODES], (long long)n);
        snprintf(why, sizeof why, "%s says %lld nodes", path[P_NODES], (long long)n);
    } else {
        n = opt->num_nodes;
        snprintf(why, sizeof why, "the node count given");
    }
    if (gd__is_file(path[P_EDGES_N]))
        GD_CHECK(gd__ogb_read_count(job, path[P_EDGES_N], &expect_edges));

    c.kind = GD__CSV_INT;
    c.split2 = 1;
    c.ncols = 2;
    c.limit = n;
    c.limit_why = why;
    if (expect_edges > 0) {
        GD_CHECK(gd__i64vec_reserve(&c.ints, expect_edges, "the edge sources"));
        GD_CHECK(gd__i64vec_reserve(&c.ints2, expect_edges, "the edge destinations"));
    }
    GD_CHECK(gd__ogb_read_csv(job, path[P_EDGES], &c, "convert: edges"));
    GD_REQUIRE(expect_edges < 0 || c.rows == expect_edges, GD_ERR_FORMAT,
               "%s has %lld edges but %s says %lld: one of them is truncated or corrupt",
               path[P_EDGES], (long long)c.rows, path[P_EDGES_N], (long long)expect_edges);
    if (n == 0) {
        for (int64_t i = 0; i < c.rows; i++) {
            if (c.ints.data[i] >= n) n = c.ints.data[i] + 1;
            if (c.ints2.data[i] >= n) n = c.ints2.data[i] + 1;
        }
    }
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "OGB raw layout"));
    GD_CHECK(gd__convert_graph(job, n, &c.ints, &c.ints2));
    gd__csv_free(&c);

    if (gd__is_file(path[P_FEAT])) {
        memset(&c, 0, sizeof c);
        c.kind = GD__CSV_FLOAT;
        c.reserve_rows = n;
        GD_CHECK(gd__ogb_read_csv(job, path[P_FEAT], &c, "convert: features"));
        GD_REQUIRE(c.rows == n, GD_ERR_FORMAT,
                   "%s has %lld rows, expected one per node (%lld): the file is truncated or "
                   "belongs to another graph",
                   path[P_FEAT], (long long)c.rows, (long long)n);
        float *data = c.floats.data;
        int64_t dim = c.ncols;
        c.floats.data = NULL;
        gd__csv_free(&c);
        GD_CHECK(gd__convert_features(job, data, n, dim));
    }
    if (gd__is_file(path[P_LABEL])) {
        memset(&c, 0, sizeof c);
        c.kind = GD__CSV_LABEL;
        c.ncols = 1;
        c.reserve_rows = n;
        GD_CHECK(gd__ogb_read_csv(job, path[P_LABEL], &c, "convert: labels"));
        GD_REQUIRE(c.rows == n, GD_ERR_FORMAT,
                   "%s has %lld rows, expected one label per node (%lld): the file is truncated "
                   "or belongs to another graph",
                   path[P_LABEL], (long long)c.rows, (long long)n);
        int64_t shape[1] = {n};
        void *data = c.ints.data;
        c.ints.data = NULL;
        gd__csv_free(&c);
        GD_CHECK(gd__dataset_adopt(job->ds, GD_ARRAY_LABELS, GD_DTYPE_INT64, 1, shape, data));
    }
    GD_CHECK(gd__ogb_choose_split(path[P_SPLIT], opt->split, &split_dir));
    if (split_dir) GD_CHECK(read_splits(job, split_dir, n, why));
fail:
    gd__csv_free(&c);
    for (int i = 0; i < P_COUNT; i++) gd_free(path[i]);
    gd_free(split_dir);
    return st;
}
