/*
 * The .npy array format: a strict, bounded header parser and the writer. Every array of a
 * dataset directory is one .npy file, so that numpy.load(mmap_mode='r') opens it and so that
 * graphdirect can map it or read it with O_DIRECT. Large arrays get their data at a 4 KiB
 * offset (the header is padded with spaces), which keeps the data page-aligned for mmap and
 * block-aligned for O_DIRECT; numpy's own 64-byte padding rule is used below that size.
 *
 * The header is a Python dict literal. It is fuzzed, so the parser never reads past the
 * buffer, never relies on a terminating NUL and accepts only what numpy itself writes: the
 * three keys 'descr', 'fortran_order' and 'shape', little-endian dtypes, C order, and at most
 * two dimensions. numpy has no bfloat16; such arrays are stored as '<u2' and the dataset's
 * meta.json records the true dtype, so '<u2' reads back as GD_DTYPE_BFLOAT16.
 */
#include "io/npy.h"
#include "io/stripes.h"

#include "core/hugepages.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Headers longer than this are refused: numpy itself refuses anything over 10000 bytes by
 * default, and our own padding to 4 KiB stays well below it. */
#define NPY_MAX_HEADER (1 << 20)

static const struct {
    const char *descr;
    gd_dtype dtype;
} npy_dtypes[] = {
    {"<f4", GD_DTYPE_FLOAT32}, {"<f2", GD_DTYPE_FLOAT16}, {"<u2", GD_DTYPE_BFLOAT16},
    {"<f8", GD_DTYPE_FLOAT64}, {"|i1", GD_DTYPE_INT8},    {"|u1", GD_DTYPE_UINT8},
    {"<i2", GD_DTYPE_INT16},   {"<i4", GD_DTYPE_INT32},   {"<i8", GD_DTYPE_INT64},
    {"|b1", GD_DTYPE_BOOL},
};
#define NUM_NPY_DTYPES ((int)(sizeof npy_dtypes / sizeof npy_dtypes[0]))

static const char *npy_descr(gd_dtype dtype) {
    for (int i = 0; i < NUM_NPY_DTYPES; i++)
        if (npy_dtypes[i].dtype == dtype) return npy_dtypes[i].descr;
    return NULL;
}

/* Map a descr string to a dtype. One-byte types are accepted with any byte-order mark since
 * order does not apply to them; '=' (native) is little-endian on every platform we run on. */
static gd_dtype npy_dtype_of(const char *s, size_t n) {
    if (n != 3) return GD_DTYPE_INVALID;
    char order = s[0];
    for (int i = 0; i < NUM_NPY_DTYPES; i++) {
        const char *d = npy_dtypes[i].descr;
        if (s[1] != d[1] || s[2] != d[2]) continue;
        if (d[0] == '|' && (order == '|' || order == '<' || order == '=')) return npy_dtypes[i].dtype;
        if (d[0] == '<' && (order == '<' || order == '=')) return npy_dtypes[i].dtype;
    }
    return GD_DTYPE_INVALID;
}

/* ------------------------------------------------------------ header parser */

typedef struct {
    const char *p;
    const char *end;
    const char *what;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool take(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (numpy never writes any in these three fields). */
static bool parse_string(cursor *c, const char **s, size_t *n) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char quote = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != quote) {
        if (*c->p == '\\' || *c->p == '\n') return false;
        c->p++;
    }
    if (c->p >= c->end) return false;
    *s = start;
    *n = (size_t)(c->p - start);
    c->p++;
    return true;
}

/* A non-negative decimal integer that fits int64 (a Python 2 'L' suffix is allowed). */
static bool parse_dim(cursor *c, int64_t *out) {
    skip_space(c);
    int64_t v = 0;
    int digits = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (gd__mul_overflow_i64(v, 10, &v) || gd__add_overflow_i64(v, *c->p - '0', &v))
            return false;
        c->p++;
        digits++;
    }
    if (digits == 0) return false;
    if (c->p < c->end && *c->p == 'L') c->p++;
    *out = v;
    return true;
}

static bool match_word(cursor *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

/* The text of the header for messages: printable characters only, cut to a short prefix. */
static void header_excerpt(const char *s, size_t n, char *out, size_t cap) {
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[j++] = (ch >= 32 && ch < 127) ? (char)ch : '?';
    }
    out[j] = '\0';
}

static gd_status parse_dict(const char *text, size_t n, const char *what, gd_npy_info *info) {
    cursor c = {text, text + n, what};
    char excerpt[96];
    header_excerpt(text, n < 80 ? n : 80, excerpt, sizeof excerpt);
    bool have_descr = false, have_order = false, have_shape = false;
    gd_dtype dtype = GD_DTYPE_INVALID;
    int ndim = 0;
    int64_t shape[2] = {1, 1};

    if (!take(&c, '{'))
        return gd__error(GD_ERR_FORMAT, "%s: .npy header is not a dict: \"%s\"", what, excerpt);
    for (;;) {
        if (take(&c, '}')) break;
        const char *key;
        size_t klen;
        if (!parse_string(&c, &key, &klen) || !take(&c, ':'))
            return gd__error(GD_ERR_FORMAT, "%s: malformed .npy header near offset %zu: \"%s\"",
                             what, (size_t)(c.p - text), excerpt);
        if (klen == 5 && memcmp(key, "descr", 5) == 0) {
            const char *d;
            size_t dlen;
            if (have_descr)
                return gd__error(GD_ERR_FORMAT, "%s: .npy header has 'descr' twice", what);
            if (!parse_string(&c, &d, &dlen))
                return gd__error(GD_ERR_FORMAT,
                                 "%s: .npy header field 'descr' is not a simple dtype string "
                                 "(structured arrays are not supported): \"%s\"",
                                 what, excerpt);
            dtype = npy_dtype_of(d, dlen);
            if (dtype == GD_DTYPE_INVALID) {
                char shown[32];
                header_excerpt(d, dlen < 16 ? dlen : 16, shown, sizeof shown);
                bool big = dlen > 0 && d[0] == '>';
                return gd__error(GD_ERR_UNSUPPORTED,
                                 "%s: .npy field 'descr' is '%s', %s; supported: <f4 <f2 <f8 "
                                 "<u2 (bfloat16) |i1 |u1 <i2 <i4 <i8 |b1 (convert with "
                                 "numpy's astype)",
                                 what, shown,
                                 big ? "big-endian data is not supported"
                                     : "an unsupported dtype");
            }
            have_descr = true;
        } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
            if (have_order)
                return gd__error(GD_ERR_FORMAT, "%s: .npy header has 'fortran_order' twice",
                                 what);
            if (match_word(&c, "True"))
                return gd__error(GD_ERR_UNSUPPORTED,
                                 "%s: .npy field 'fortran_order' is True; only C-order arrays "
                                 "are supported (save numpy.ascontiguousarray(a))",
                                 what);
            if (!match_word(&c, "False"))
                return gd__error(GD_ERR_FORMAT,
                                 "%s: .npy field 'fortran_order' is neither True nor False: "
                                 "\"%s\"",
                                 what, excerpt);
            have_order = true;
        } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
            if (have_shape)
                return gd__error(GD_ERR_FORMAT, "%s: .npy header has 'shape' twice", what);
            if (!take(&c, '('))
                return gd__error(GD_ERR_FORMAT, "%s: .npy field 'shape' is not a tuple: \"%s\"",
                                 what, excerpt);
            ndim = 0;
            for (;;) {
                if (take(&c, ')')) break;
                int64_t d;
                skip_space(&c);
                if (c.p < c.end && *c.p == '-')
                    return gd__error(GD_ERR_FORMAT, "%s: .npy field 'shape' has a negative "
                                     "dimension: \"%s\"", what, excerpt);
                if (!parse_dim(&c, &d))
                    return gd__error(GD_ERR_FORMAT,
                                     "%s: .npy field 'shape' holds a value that is not an "
                                     "integer below 2^63: \"%s\"",
                                     what, excerpt);
                if (ndim >= 2)
                    return gd__error(GD_ERR_UNSUPPORTED,
                                     "%s: .npy array has more than 2 dimensions; only 1-D and "
                                     "2-D arrays are supported (reshape it): \"%s\"",
                                     what, excerpt);
                shape[ndim++] = d;
                if (take(&c, ')')) break;
                if (!take(&c, ','))
                    return gd__error(GD_ERR_FORMAT, "%s: .npy field 'shape' is malformed: \"%s\"",
                                     what, excerpt);
            }
            /* Python writes a one-element tuple as "(n,)"; "(n)" is an integer, not a tuple,
             * but the difference does not matter for the shape it describes. */
            have_shape = true;
        } else {
            char shown[40];
            header_excerpt(key, klen < 32 ? klen : 32, shown, sizeof shown);
            return gd__error(GD_ERR_FORMAT,
                             "%s: .npy header has an unexpected key '%s' (expected descr, "
                             "fortran_order, shape)",
                             what, shown);
        }
        if (take(&c, '}')) break;
        if (!take(&c, ','))
            return gd__error(GD_ERR_FORMAT, "%s: malformed .npy header near offset %zu: \"%s\"",
                             what, (size_t)(c.p - text), excerpt);
    }
    skip_space(&c);
    if (c.p != c.end)
        return gd__error(GD_ERR_FORMAT,
                         "%s: .npy header has bytes after the dict at offset %zu: \"%s\"", what,
                         (size_t)(c.p - text), excerpt);
    if (!have_descr || !have_order || !have_shape)
        return gd__error(GD_ERR_FORMAT, "%s: .npy header lacks the key '%s': \"%s\"", what,
                         !have_descr ? "descr" : !have_order ? "fortran_order" : "shape",
                         excerpt);
    info->dtype = dtype;
    info->ndim = ndim;
    info->shape[0] = shape[0];
    info->shape[1] = shape[1];
    return GD_OK;
}

static uint32_t read_le(const unsigned char *p, int bytes) {
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Size of the whole header (prefix + dict) from its first 12 bytes, or an error. */
static gd_status header_total(const unsigned char *b, size_t len, const char *what,
                              int64_t *total) {
    if (len < 10 || memcmp(b, npy_magic, 6) != 0) {
        if (len >= 6 && memcmp(b, npy_magic, 6) != 0)
            return gd__error(GD_ERR_FORMAT,
                             "%s: not a .npy file (the magic string \\x93NUMPY is missing; "
                             "first bytes %02x %02x %02x %02x)",
                             what, b[0], b[1], b[2], b[3]);
        return gd__error(GD_ERR_FORMAT, "%s: truncated .npy file: %zu bytes, shorter than the "
                         "10-byte preamble", what, len);
    }
    int major = b[6], minor = b[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return gd__error(GD_ERR_UNSUPPORTED,
                         "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)",
                         what, major, minor);
    int prefix = major == 1 ? 10 : 12;
    if (len < (size_t)prefix)
        return gd__error(GD_ERR_FORMAT, "%s: truncated .npy file: %zu bytes, shorter than the "
                         "%d-byte preamble", what, len, prefix);
    int64_t hlen = (int64_t)read_le(b + 8, major == 1 ? 2 : 4);
    if (hlen > NPY_MAX_HEADER)
        return gd__error(GD_ERR_FORMAT,
                         "%s: .npy header length %lld is over the %d-byte limit (corrupt file?)",
                         what, (long long)hlen, NPY_MAX_HEADER);
    *total = prefix + hlen;
    return GD_OK;
}

gd_status gd__npy_parse_header(const void *buf, size_t len, int64_t file_size, const char *what,
                               gd_npy_info *info) {
    const unsigned char *b = buf;
    int64_t total = 0;
    if (!what) what = ".npy";
    if (!buf || !info) return gd__error(GD_ERR_INVALID_ARG, "%s: NULL header buffer", what);
    gd_status st = header_total(b, len, what, &total);
    if (st != GD_OK) return st;
    int prefix = b[6] == 1 ? 10 : 12;
    if ((int64_t)len < total || file_size < total)
        return gd__error(GD_ERR_FORMAT,
                         "%s: truncated .npy file: the header needs %lld bytes, the file has "
                         "%lld",
                         what, (long long)total, (long long)(file_size < (int64_t)len ? file_size
                                                                               : (int64_t)len));
    gd_npy_info r;
    memset(&r, 0, sizeof r);
    st = parse_dict((const char *)b + prefix, (size_t)(total - prefix), what, &r);
    if (st != GD_OK) return st;

    int64_t elems = 0, bytes = 0;
    if (gd__mul_overflow_i64(r.shape[0], r.shape[1], &elems) ||
        gd__mul_overflow_i64(elems, (int64_t)gd_dtype_size(r.dtype), &bytes) ||
        bytes > INT64_MAX - total)
        return gd__error(GD_ERR_OVERFLOW,
                         "%s: .npy shape (%lld, %lld) of %s overflows a 64-bit byte count", what,
                         (long long)r.shape[0], (long long)r.shape[1], gd_dtype_name(r.dtype));
    if (total % (int64_t)gd_dtype_size(r.dtype) != 0)
        return gd__error(GD_ERR_FORMAT,
                         "%s: .npy data offset %lld is not a multiple of the %zu-byte element "
                         "size (rewrite the file with numpy.save)",
                         what, (long long)total, gd_dtype_size(r.dtype));
    if (file_size - total < bytes)
        return gd__error(GD_ERR_FORMAT,
                         "%s: truncated .npy file: shape (%lld, %lld) of %s needs %lld data "
                         "bytes at offset %lld, the file has %lld",
                         what, (long long)r.shape[0], (long long)r.shape[1],
                         gd_dtype_name(r.dtype), (long long)bytes, (long long)total,
                         (long long)(file_size - total));
    if (file_size - total > bytes)
        return gd__error(GD_ERR_FORMAT,
                         "%s: .npy file is %lld bytes longer than its header's shape (%lld, "
                         "%lld) of %s implies (corrupt or wrong header)",
                         what, (long long)(file_size - total - bytes), (long long)r.shape[0],
                         (long long)r.shape[1], gd_dtype_name(r.dtype));
    r.data_offset = total;
    r.data_bytes = bytes;
    *info = r;
    return GD_OK;
}

/* ------------------------------------------------------------ header writer */

static int format_dict(gd_dtype dtype, int ndim, const int64_t *shape, char *buf, size_t cap) {
    const char *descr = npy_descr(dtype);
    if (ndim == 0)
        return snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (), }", descr);
    if (ndim == 1)
        return snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                        descr, (long long)shape[0]);
    return snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %lld), }",
                    descr, (long long)shape[0], (long long)shape[1]);
}

/* Byte count of the data, or -1 for an invalid dtype, ndim or shape. */
static int64_t data_bytes_of(gd_dtype dtype, int ndim, const int64_t *shape) {
    if (!npy_descr(dtype) || ndim < 0 || ndim > 2 || (ndim > 0 && !shape)) return -1;
    int64_t n = (int64_t)gd_dtype_size(dtype);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || gd__mul_overflow_i64(n, shape[i], &n)) return -1;
    return n;
}

int64_t gd__npy_header_size(gd_dtype dtype, int ndim, const int64_t *shape) {
    int64_t bytes = data_bytes_of(dtype, ndim, shape);
    if (bytes < 0) return -1;
    char dict[160];
    int n = format_dict(dtype, ndim, shape, dict, sizeof dict);
    int64_t align = bytes >= GD__NPY_ALIGN ? GD__NPY_ALIGN : 64;
    int64_t total = 10 + n + 1;
    total = (total + align - 1) / align * align;
    /* A header whose length does not fit the 16-bit field needs version 2.0 and a 12-byte
     * preamble; that only happens with an alignment far above ours, but stays correct. */
    if (total - 10 > 65535) total = (12 + n + 1 + align - 1) / align * align;
    return total;
}

gd_status gd__npy_format_header(gd_dtype dtype, int ndim, const int64_t *shape, char *buf,
                                int64_t header_size) {
    if (data_bytes_of(dtype, ndim, shape) < 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "cannot write a .npy header for dtype %s with %d dimensions",
                         gd_dtype_name(dtype), ndim);
    char dict[160];
    int n = format_dict(dtype, ndim, shape, dict, sizeof dict);
    int v2 = header_size - 10 > 65535;
    int prefix = v2 ? 12 : 10;
    if (header_size < prefix + n + 1 || header_size > NPY_MAX_HEADER)
        return gd__error(GD_ERR_INVALID_ARG, ".npy header size %lld cannot hold the header",
                         (long long)header_size);
    unsigned char *b = (unsigned char *)buf;
    memcpy(b, npy_magic, 6);
    b[6] = v2 ? 2 : 1;
    b[7] = 0;
    uint32_t hlen = (uint32_t)(header_size - prefix);
    for (int i = 0; i < (v2 ? 4 : 2); i++) b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + prefix, dict, (size_t)n);
    memset(b + prefix + n, ' ', (size_t)(header_size - prefix - n - 1));
    b[header_size - 1] = '\n';
    return GD_OK;
}

gd_status gd_npy_write(const char *path, gd_dtype dtype, int ndim, const int64_t *shape,
                       const void *data) {
    gd_status st = GD_OK;
    char *header = NULL;
    gd__outfile f = {-1, NULL, NULL};
    GD_REQUIRE(path, GD_ERR_INVALID_ARG, "gd_npy_write: path is NULL");
    int64_t bytes = data_bytes_of(dtype, ndim, shape);
    GD_REQUIRE(npy_descr(dtype), GD_ERR_INVALID_ARG, "%s: cannot write dtype %s to .npy", path,
               gd_dtype_name(dtype));
    GD_REQUIRE(ndim >= 0 && ndim <= 2, GD_ERR_INVALID_ARG,
               "%s: ndim is %d; .npy arrays of 0, 1 or 2 dimensions are supported", path, ndim);
    GD_REQUIRE(bytes >= 0, GD_ERR_OVERFLOW, "%s: shape (%lld, %lld) is negative or overflows",
               path, (long long)(ndim > 0 ? shape[0] : 0), (long long)(ndim > 1 ? shape[1] : 0));
    GD_REQUIRE(bytes == 0 || data, GD_ERR_INVALID_ARG, "%s: data is NULL", path);
    int64_t hsize = gd__npy_header_size(dtype, ndim, shape);
    GD_ALLOC(header, (size_t)hsize, "a .npy header");
    GD_CHECK(gd__npy_format_header(dtype, ndim, shape, header, hsize));
    GD_CHECK(gd__outfile_create(&f, path));
    GD_CHECK(gd__outfile_write(&f, header, (size_t)hsize));
    if (bytes > 0) GD_CHECK(gd__outfile_write(&f, data, (size_t)bytes));
    GD_CHECK(gd__outfile_commit(&f));
    gd_free(header);
    return GD_OK;
fail:
    gd__outfile_abort(&f);
    gd_free(header);
    return st;
}

/* ------------------------------------------------------------ file readers */

/* Open path and parse its header; on success the caller owns *fd. */
static gd_status npy_open(const char *path, int *fd, gd_npy_info *info) {
    gd_status st = GD_OK;
    unsigned char pre[12];
    char *head = NULL;
    int64_t size = 0, total = 0;
    *fd = -1;
    GD_CHECK(gd__file_open_read(path, fd, &size));
    size_t first = size < 12 ? (size_t)size : 12;
    GD_CHECK(gd__file_pread(*fd, path, pre, first, 0));
    GD_CHECK(header_total(pre, first, path, &total));
    GD_REQUIRE(total <= size, GD_ERR_FORMAT,
               "%s: truncated .npy file: the header needs %lld bytes, the file has %lld", path,
               (long long)total, (long long)size);
    GD_ALLOC(head, (size_t)total, "a .npy header");
    GD_CHECK(gd__file_pread(*fd, path, head, (size_t)total, 0));
    GD_CHECK(gd__npy_parse_header(head, (size_t)total, size, path, info));
    gd_free(head);
    return GD_OK;
fail:
    gd_free(head);
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return st;
}

gd_status gd_npy_read_info(const char *path, gd_npy_info *info) {
    if (!path || !info) return gd__error(GD_ERR_INVALID_ARG, "gd_npy_read_info: NULL argument");
    int fd;
    gd_status st = npy_open(path, &fd, info);
    if (st == GD_OK) close(fd);
    return st;
}

static gd_status to_array(const char *path, const gd_npy_info *info, gd__array *out) {
    if (info->ndim == 0)
        return gd__error(GD_ERR_FORMAT, "%s: .npy array is 0-dimensional; expected 1-D or 2-D",
                         path);
    memset(out, 0, sizeof *out);
    out->dtype = info->dtype;
    out->ndim = info->ndim;
    out->shape[0] = info->shape[0];
    out->shape[1] = info->ndim == 2 ? info->shape[1] : 1;
    return GD_OK;
}

/* gd__npy_load (table 0) and gd__npy_load_table (1). */
static gd_status npy_load(const char *path, gd__array *out, int table) {
    gd_status st = GD_OK;
    int fd = -1;
    gd_npy_info info;
    void *data = NULL;
    GD_CHECK(npy_open(path, &fd, &info));
    GD_CHECK(to_array(path, &info, out));
    GD_REQUIRE((uint64_t)info.data_bytes <= SIZE_MAX, GD_ERR_OVERFLOW,
               "%s: %lld bytes do not fit in memory", path, (long long)info.data_bytes);
    if (table) {
        GD_CHECK(gd__array_own(out, (size_t)info.data_bytes, path));
    } else {
        GD_ALLOC(out->data, (size_t)info.data_bytes, path);
        out->store = GD__STORE_HEAP;
    }
    data = out->data;
    if (info.data_bytes > 0)
        GD_CHECK(gd__file_pread(fd, path, data, (size_t)info.data_bytes, info.data_offset));
    close(fd);
    return GD_OK;
fail:
    if (data) gd__array_release(out);
    if (fd >= 0) close(fd);
    return st;
}

gd_status gd__npy_load(const char *path, gd__array *out) { return npy_load(path, out, 0); }

gd_status gd__npy_load_table(const char *path, gd__array *out) {
    return npy_load(path, out, 1);
}

gd_status gd__array_own(gd__array *a, size_t bytes, const char *what) {
    gd_status st = GD_OK;
    if (bytes >= GD__HUGE_PAGE_BYTES) {
        int advice = 0;
        GD_CHECK(gd__table_map(bytes, what, &a->map_base, &a->map_len, &advice));
        a->data = a->map_base;
        a->store = GD__STORE_ANON;
        return GD_OK;
    }
    GD_ALLOC(a->data, bytes, what);
    a->store = GD__STORE_HEAP;
fail:
    return st;
}

gd_status gd__npy_map(const char *path, gd__array *out) {
    gd_status st = GD_OK;
    int fd = -1;
    gd_npy_info info;
    void *base = NULL, *data = NULL;
    char *name = NULL;
    size_t len = 0;
    GD_CHECK(npy_open(path, &fd, &info));
    GD_CHECK(to_array(path, &info, out));
    GD_CHECK(gd__file_identity(fd, path, &out->file));
    name = gd__strdup(path);
    GD_REQUIRE(name, GD_ERR_NO_MEMORY, "out of memory naming '%s'", path);
    GD_CHECK(gd__file_map(fd, path, info.data_offset, info.data_bytes, &base, &data, &len));
    close(fd);
    out->path = name;
    out->data = data;
    out->store = GD__STORE_MAP_RO;
    out->map_base = base;
    out->map_len = len;
    return GD_OK;
fail:
    gd_free(name);
    if (fd >= 0) close(fd);
    return st;
}

void gd__array_release(gd__array *a) {
    if (!a) return;
    switch (a->store) {
    case GD__STORE_HEAP:
        gd_free(a->data);
        break;
    case GD__STORE_MAP_RO:
    case GD__STORE_MAP_RW:
        gd__file_unmap(a->map_base, a->map_len);
        break;
    case GD__STORE_ANON:
        gd__table_unmap(a->map_base, a->map_len);
        break;
    case GD__STORE_NONE:
    case GD__STORE_BORROWED:
        break;
    }
    gd_free(a->path);
    gd__stripe_table_free(a->stripes);
    memset(a, 0, sizeof *a);
}
