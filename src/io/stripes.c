/*
 * Striped feature tables (io/stripes.h): the manifest, the side-by-side mapping of the files,
 * and gd_dataset_stripe, which writes them.
 */
#include "io/stripes.h"

#include "core/json.h"

#include "io/meta.h"
#include "io/npy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MANIFEST_MAX_BYTES (1 << 20)
/* The first bytes of a stripe file read for its .npy header (a header is a 4 KiB multiple). */
#define HEADER_READ (64 << 10)

void gd__stripe_table_free(gd__stripe_table *t) {
    if (!t) return;
    for (int f = 0; f < GD__STRIPES_MAX_FILES; f++) {
        gd_free(t->name[f]);
        gd_free(t->path[f]);
    }
    gd_free(t);
}

int64_t gd__stripes_unit_rows(int64_t rows, int64_t row_bytes, int64_t unit_bytes) {
    if (row_bytes < 1) row_bytes = 1;
    if (unit_bytes <= 0) unit_bytes = GD__STRIPES_UNIT_BYTES;
    int64_t a = row_bytes, b = 4096;
    while (b) {
        const int64_t r = a % b;
        a = b;
        b = r;
    }
    const int64_t grain = 4096 / a; /* rows whose bytes are a whole number of 4 KiB */
    int64_t u = gd__max64(1, unit_bytes / row_bytes);
    u = (u + grain - 1) / grain * grain;
    if (rows > 0 && (rows + u - 1) / u > GD__STRIPES_MAX_UNITS) {
        u = (rows + GD__STRIPES_MAX_UNITS - 1) / GD__STRIPES_MAX_UNITS;
        u = (u + grain - 1) / grain * grain;
    }
    return u;
}

int gd__stripes_names(const gd__stripe_table *t, const char **names, int max) {
    int n = 0;
    for (int f = 0; f < t->nfiles && n < max; f++) names[n++] = t->name[f];
    return n;
}

gd_status gd__stripes_check_unchanged(const gd__stripe_table *t) {
    for (int f = 0; t && f < t->nfiles; f++) {
        gd_status st = gd__file_check_unchanged(t->path[f], &t->id[f]);
        if (st != GD_OK) return st;
    }
    return GD_OK;
}

/* Whether v is an integer-valued number in [lo, GD__META_MAX_COUNT] (then *out gets it). */
static bool count_at_least(const cJSON *v, int64_t lo, int64_t *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)lo) ||
        v->valuedouble > (double)GD__META_MAX_COUNT ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

/* The manifest's fields; t gets the files' names and paths (resolved against dir). */
static gd_status parse_manifest(const char *path, const char *dir, const char *text, size_t len,
                                gd_dtype *dtype, int64_t shape[2], gd__stripe_table *t) {
    gd_status st = GD_OK;
    cJSON *root = cJSON_ParseWithLength(text, len);
    GD_REQUIRE(root && cJSON_IsObject(root), GD_ERR_FORMAT,
               "%s: not a JSON object: restore it, or stripe the dataset again from its "
               "features.npy",
               path);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(root, "shape");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "unit_rows");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    GD_REQUIRE(cJSON_IsString(fmt) && strcmp(fmt->valuestring, GD__STRIPES_FORMAT) == 0,
               GD_ERR_FORMAT, "%s: field 'format' is not \"%s\"", path, GD__STRIPES_FORMAT);
    GD_REQUIRE(cJSON_IsNumber(ver) && ver->valuedouble == GD__STRIPES_VERSION, GD_ERR_FORMAT,
               "%s: field 'version' is not %d (written by a newer graphdirect? upgrade it)", path,
               GD__STRIPES_VERSION);
    GD_REQUIRE(cJSON_IsString(dt) && gd_dtype_parse(dt->valuestring, dtype) == GD_OK, GD_ERR_FORMAT,
               "%s: field 'dtype' is not a dtype name", path);
    gd_clear_error();
    GD_REQUIRE(cJSON_IsArray(sh) && cJSON_GetArraySize(sh) == 2, GD_ERR_FORMAT,
               "%s: field 'shape' is not [rows, columns]", path);
    for (int d = 0; d < 2; d++)
        GD_REQUIRE(count_at_least(cJSON_GetArrayItem(sh, d), d, &shape[d]), GD_ERR_FORMAT,
                   "%s: field 'shape' holds %s, not a count", path, d == 0 ? "rows" : "columns");
    GD_REQUIRE(count_at_least(unit, 1, &t->unit_rows), GD_ERR_FORMAT,
               "%s: field 'unit_rows' is not a positive count", path);
    GD_REQUIRE(cJSON_IsArray(files) && cJSON_GetArraySize(files) >= 1 &&
                   cJSON_GetArraySize(files) <= GD__STRIPES_MAX_FILES,
               GD_ERR_FORMAT, "%s: field 'files' is not a list of 1 to %d file names", path,
               GD__STRIPES_MAX_FILES);
    t->nfiles = cJSON_GetArraySize(files);
    for (int f = 0; f < t->nfiles; f++) {
        const cJSON *v = cJSON_GetArrayItem(files, f);
        GD_REQUIRE(cJSON_IsString(v) && v->valuestring[0], GD_ERR_FORMAT,
                   "%s: file %d of field 'files' is not a file name", path, f);
        t->name[f] = gd__strdup(v->valuestring);
        t->path[f] = v->valuestring[0] == '/' ? gd__strdup(v->valuestring)
                                              : gd__path_join(dir, v->valuestring);
        GD_REQUIRE(t->name[f] && t->path[f], GD_ERR_NO_MEMORY, "out of memory naming '%s'",
                   v->valuestring);
        for (int g = 0; g < f; g++)
            GD_REQUIRE(strcmp(t->path[g], t->path[f]) != 0, GD_ERR_FORMAT,
                       "%s: '%s' is listed twice in field 'files'", path, t->name[f]);
        t->files[f].path = t->path[f];
    }
fail:
    cJSON_Delete(root);
    return st;
}

/*
 * Whether file f's name carries its place as gd_dataset_stripe wrote it, ".<f>-of-<F>.u<unit
 * rows>.npy": a manifest edited to another unit or order would map the rows wrongly with every
 * file's share unchanged, which the headers cannot tell.
 */
static int name_says(const gd__stripe_table *t, int f) {
    char want[96];
    snprintf(want, sizeof want, ".%d-of-%d.u%lld.npy", f, t->nfiles, (long long)t->unit_rows);
    const size_t n = strlen(t->name[f]), w = strlen(want);
    return n > w && strcmp(t->name[f] + n - w, want) == 0;
}

/* File f's .npy header, checked against the manifest; fd stays open for the mapping. */
static gd_status open_file(const char *manifest, gd__stripe_table *t, int f, gd_dtype dtype,
                           const int64_t shape[2], int *fd) {
    gd_status st = GD_OK;
    int64_t size = 0;
    char *buf = NULL;
    gd_npy_info info;
    const gd__stripes geo = {t->nfiles, t->unit_rows};
    const int64_t share = gd__stripes_file_rows(&geo, shape[0], f);
    GD_REQUIRE(name_says(t, f), GD_ERR_FORMAT,
               "%s: file %d of %d in units of %lld rows is '%s', whose name says otherwise (the "
               "files disagree: restore the manifest, or stripe the dataset again)",
               manifest, f, t->nfiles, (long long)t->unit_rows, t->name[f]);
    st = gd__file_open_read(t->path[f], fd, &size);
    if (st != GD_OK)
        return gd__error_context(st,
                                 "%s: stripe file %d of %d (restore it where the manifest "
                                 "says, or stripe the dataset again)",
                                 manifest, f, t->nfiles);
    const size_t want = (size_t)gd__min64(size, HEADER_READ);
    GD_ALLOC(buf, want + 1, "a stripe file's header");
    GD_CHECK(gd__file_pread(*fd, t->path[f], buf, want, 0));
    GD_CHECK(gd__npy_parse_header(buf, want, size, t->path[f], &info));
    GD_REQUIRE(info.dtype == dtype && info.ndim == 2 && info.shape[1] == shape[1] &&
                   info.shape[0] == share,
               GD_ERR_FORMAT,
               "%s: holds %lld x %lld %s, but the manifest %s makes it stripe %d of %d: "
               "%lld x %lld %s (the files disagree: stripe the dataset again)",
               t->path[f], (long long)info.shape[0], (long long)info.shape[1],
               gd_dtype_name(info.dtype), manifest, f, t->nfiles, (long long)share,
               (long long)shape[1], gd_dtype_name(dtype));
    GD_REQUIRE(info.data_offset % sysconf(_SC_PAGESIZE) == 0, GD_ERR_FORMAT,
               "%s: its data starts at byte %lld, not on a page: write it with graphdirect "
               "stripe",
               t->path[f], (long long)info.data_offset);
    t->files[f].data_offset = info.data_offset;
    GD_CHECK(gd__file_identity(*fd, t->path[f], &t->id[f]));
fail:
    gd_free(buf);
    return st;
}

/* Map the files side by side: unit u at base + u x unit bytes, from its file (one file: the
 * whole table is its one unit). */
static gd_status map_units(const gd__stripe_table *t, const int *fd, int64_t rows,
                           int64_t row_bytes, void *base) {
    const int64_t per = t->nfiles == 1 ? gd__max64(rows, 1) : t->unit_rows;
    const int64_t total = rows * row_bytes, unit = per * row_bytes, units = (rows + per - 1) / per;
    for (int64_t u = 0; u < units; u++) {
        const int f = (int)(u % t->nfiles);
        const int64_t at = u * unit, len = gd__min64(unit, total - at);
        const int64_t off = t->files[f].data_offset + u / t->nfiles * unit;
        void *p = mmap((char *)base + at, (size_t)len, PROT_READ, MAP_SHARED | MAP_FIXED, fd[f],
                       (off_t)off);
        if (p == MAP_FAILED)
            return gd__error(GD_ERR_IO, "cannot map %lld bytes of '%s' at offset %lld: %s",
                             (long long)len, t->path[f], (long long)off, strerror(errno));
    }
    return GD_OK;
}

gd_status gd__stripes_open(const char *path, int load, gd__array *a) {
    gd_status st = GD_OK;
    char *text = NULL, *dir = NULL, *name = NULL;
    size_t len = 0, map_len = 0;
    int fd[GD__STRIPES_MAX_FILES];
    int mfd = -1;
    void *base = MAP_FAILED;
    gd_dtype dtype = GD_DTYPE_INVALID;
    int64_t shape[2] = {0, 0};
    gd__file_id mid;
    for (int f = 0; f < GD__STRIPES_MAX_FILES; f++) fd[f] = -1;
    gd__stripe_table *t = gd_calloc(1, sizeof *t);
    GD_REQUIRE(t, GD_ERR_NO_MEMORY, "out of memory opening '%s'", path);
    {
        int64_t msize = 0;
        GD_CHECK(gd__file_open_read(path, &mfd, &msize));
        GD_CHECK(gd__file_identity(mfd, path, &mid));
        close(mfd);
        mfd = -1;
    }
    GD_CHECK(gd__file_read_all(path, MANIFEST_MAX_BYTES, &text, &len));
    dir = gd__strdup(path);
    GD_REQUIRE(dir, GD_ERR_NO_MEMORY, "out of memory naming '%s'", path);
    {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            strcpy(dir, ".");
    }
    GD_CHECK(parse_manifest(path, dir, text, len, &dtype, shape, t));
    const int64_t rb = shape[1] * (int64_t)gd_dtype_size(dtype);
    GD_REQUIRE(shape[0] <= INT64_MAX / gd__max64(rb, 1), GD_ERR_FORMAT,
               "%s: %lld rows of %lld bytes overflow", path, (long long)shape[0], (long long)rb);
    const long page = sysconf(_SC_PAGESIZE);
    if (t->nfiles > 1) {
        GD_REQUIRE((t->unit_rows * rb) % page == 0, GD_ERR_FORMAT,
                   "%s: a unit of %lld rows is %lld bytes, not a whole number of pages: stripe "
                   "the dataset again",
                   path, (long long)t->unit_rows, (long long)(t->unit_rows * rb));
        const int64_t units = (shape[0] + t->unit_rows - 1) / t->unit_rows;
        GD_REQUIRE(units <= GD__STRIPES_MAX_UNITS, GD_ERR_FORMAT,
                   "%s: %lld units of %lld rows, more than the %d mappings allowed: stripe the "
                   "dataset again with a larger --unit",
                   path, (long long)units, (long long)t->unit_rows, GD__STRIPES_MAX_UNITS);
    }
    for (int f = 0; f < t->nfiles; f++) GD_CHECK(open_file(path, t, f, dtype, shape, &fd[f]));
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_READ), GD_ERR_IO, "cannot map '%s': injected fault", path);
    const int64_t total = shape[0] * rb;
    map_len = (size_t)((total + page - 1) / page * page);
    if (map_len == 0) map_len = (size_t)page;
    base = mmap(NULL, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    GD_REQUIRE(base != MAP_FAILED, GD_ERR_NO_MEMORY,
               "cannot reserve %zu bytes of address space for '%s': %s", map_len, path,
               strerror(errno));
    GD_CHECK(map_units(t, fd, shape[0], rb, base));
    name = gd__strdup(path);
    GD_REQUIRE(name, GD_ERR_NO_MEMORY, "out of memory naming '%s'", path);
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->ndim = 2;
    a->shape[0] = shape[0];
    a->shape[1] = shape[1];
    if (load) {
        GD_CHECK(gd__array_own(a, (size_t)gd__max64(total, 1), path));
        if (total > 0) memcpy(a->data, base, (size_t)total);
        munmap(base, map_len);
        gd__stripe_table_free(t);
        gd_free(name);
    } else {
        a->data = base;
        a->store = GD__STORE_MAP_RO;
        a->map_base = base;
        a->map_len = map_len;
        a->path = name;
        a->file = mid;
        a->stripes = t;
    }
    base = MAP_FAILED;
    t = NULL;
    name = NULL;
fail:
    if (base != MAP_FAILED) munmap(base, map_len);
    if (st != GD_OK && load) gd__array_release(a);
    for (int f = 0; f < GD__STRIPES_MAX_FILES; f++)
        if (fd[f] >= 0) close(fd[f]);
    if (mfd >= 0) close(mfd);
    gd__stripe_table_free(t);
    gd_free(name);
    gd_free(text);
    gd_free(dir);
    return st;
}

int gd_dataset_feature_files(const gd_dataset_t *ds, const char **paths, int max,
                             int64_t *unit_rows) {
    if (unit_rows) *unit_rows = 0;
    if (!ds) return 0;
    const gd__array *a = &ds->arrays[GD_ARRAY_FEATURES];
    if (a->store != GD__STORE_MAP_RO || !a->path) return 0;
    if (!a->stripes) {
        if (paths && max > 0) paths[0] = a->path;
        return 1;
    }
    for (int f = 0; paths && f < a->stripes->nfiles && f < max; f++) paths[f] = a->stripes->path[f];
    if (unit_rows && a->stripes->nfiles > 1) *unit_rows = a->stripes->unit_rows;
    return a->stripes->nfiles;
}

/* ------------------------------------------------------------------ writing */

/* The manifest's text for table t of shape x dtype (gd_malloc'd), or NULL out of memory. */
static char *manifest_text(const gd__stripe_table *t, gd_dtype dtype, const int64_t shape[2]) {
    cJSON *root = cJSON_CreateObject(), *sh = NULL, *files = NULL;
    char *text = NULL, *copy = NULL;
    int ok = root && cJSON_AddStringToObject(root, "format", GD__STRIPES_FORMAT) &&
             cJSON_AddNumberToObject(root, "version", GD__STRIPES_VERSION) &&
             cJSON_AddStringToObject(root, "dtype", gd_dtype_name(dtype)) &&
             (sh = cJSON_AddArrayToObject(root, "shape")) != NULL;
    for (int d = 0; ok && d < 2; d++) ok = gd__json_push_int(sh, shape[d]);
    ok = ok && gd__json_add_int(root, "unit_rows", t->unit_rows) &&
         (files = cJSON_AddArrayToObject(root, "files")) != NULL;
    for (int f = 0; ok && f < t->nfiles; f++) {
        cJSON *s = cJSON_CreateString(t->name[f]);
        ok = s && cJSON_AddItemToArray(files, s);
    }
    if (ok) text = cJSON_Print(root);
    if (text) {
        copy = gd__strdup(text);
        cJSON_free(text);
    }
    cJSON_Delete(root);
    return copy;
}

/* A file name part from the dataset's name: letters, digits, '-', '_' and '.' kept. */
static void name_part(const char *name, char *buf, size_t n) {
    size_t j = 0;
    for (size_t i = 0; name && name[i] && j + 1 < n && j < 64; i++) {
        const char c = name[i];
        const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || (c == '.' && j > 0);
        buf[j++] = ok ? c : '_';
    }
    buf[j] = '\0';
    if (j == 0) snprintf(buf, n, "dataset");
}

gd_status gd_dataset_stripe(const char *dir, const char *const *targets, int ntargets,
                            const gd_stripe_options *options) {
    gd_status st = GD_OK;
    gd_stripe_options opt = GD_STRIPE_OPTIONS_INIT;
    gd_dataset_t *ds = NULL;
    gd__outfile out[GD__STRIPES_MAX_FILES];
    char *written[GD__STRIPES_MAX_FILES + 1]; /* committed new files, removed on failure */
    char *old[GD__STRIPES_MAX_FILES]; /* the old table's files (owned), removed at the end */
    char *manifest = NULL, *meta = NULL, *text = NULL, *real_dir = NULL, *header = NULL;
    char *real[GD__STRIPES_MAX_FILES]; /* the targets resolved */
    int nout = 0, nwritten = 0, nold = 0, switched = 0;
    gd__stripe_table *nt = NULL;
    memset(out, 0, sizeof out);
    memset(written, 0, sizeof written);
    memset(old, 0, sizeof old);
    memset(real, 0, sizeof real);
    if (options) /* NULL: the defaults */
        GD_CHECK(gd__options_in(&opt, sizeof opt, options, 0, "gd_dataset_stripe: options",
                                "GD_STRIPE_OPTIONS_INIT"));
    GD_REQUIRE(dir && dir[0], GD_ERR_INVALID_ARG, "gd_dataset_stripe: no dataset directory");
    GD_REQUIRE(targets && ntargets >= 1 && ntargets <= GD__STRIPES_MAX_FILES, GD_ERR_INVALID_ARG,
               "gd_dataset_stripe: %d target directories; give 1 to %d (one a disk)", ntargets,
               GD__STRIPES_MAX_FILES);
    GD_REQUIRE(opt.unit_bytes >= 0, GD_ERR_INVALID_ARG,
               "gd_dataset_stripe: unit_bytes %lld is negative; use 0 for 64 MiB",
               (long long)opt.unit_bytes);
    for (int k = 0; k < ntargets; k++) {
        struct stat sb;
        GD_REQUIRE(targets[k] && targets[k][0], GD_ERR_INVALID_ARG,
                   "gd_dataset_stripe: target directory %d is empty", k);
        GD_REQUIRE(stat(targets[k], &sb) == 0 && S_ISDIR(sb.st_mode), GD_ERR_NOT_FOUND,
                   "stripe: '%s' is not a directory (%s): create it first", targets[k],
                   errno ? strerror(errno) : "not a directory");
    }
    {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        oo.validate_graph = 0; /* the bytes are copied, not read as values */
        GD_CHECK(gd_dataset_open(dir, &oo, &ds));
    }
    GD_REQUIRE(ds->schema.num_node_types == 0, GD_ERR_UNSUPPORTED,
               "stripe: dataset '%s' is heterogeneous; striping covers the features of a "
               "homogeneous dataset",
               dir);
    gd__array *a = &ds->arrays[GD_ARRAY_FEATURES];
    GD_REQUIRE(a->store != GD__STORE_NONE, GD_ERR_NOT_FOUND,
               "stripe: dataset '%s' has no features to stripe", dir);
    const int64_t rows = a->shape[0], cols = a->shape[1];
    const int64_t rb = cols * (int64_t)gd_dtype_size(a->dtype);
    nt = gd_calloc(1, sizeof *nt);
    GD_REQUIRE(nt, GD_ERR_NO_MEMORY, "out of memory striping '%s'", dir);
    nt->nfiles = ntargets;
    nt->unit_rows = gd__stripes_unit_rows(rows, rb, opt.unit_bytes);
    const gd__stripes geo = {ntargets, nt->unit_rows};
    real_dir = realpath(dir, NULL);
    GD_REQUIRE(real_dir, GD_ERR_IO, "stripe: cannot resolve '%s': %s", dir, strerror(errno));
    {
        char part[80], tag[48];
        name_part(ds->name, part, sizeof part);
        snprintf(tag, sizeof tag, "%llx%lx", (unsigned long long)time(NULL), (long)getpid());
        for (int k = 0; k < ntargets; k++) {
            char file[200];
            snprintf(file, sizeof file, "%s.features.%s.%d-of-%d.u%lld.npy", part, tag, k, ntargets,
                     (long long)nt->unit_rows);
            real[k] = realpath(targets[k], NULL);
            GD_REQUIRE(real[k], GD_ERR_IO, "stripe: cannot resolve '%s': %s", targets[k],
                       strerror(errno));
            for (int j = 0; j < k; j++)
                GD_REQUIRE(strcmp(real[j], real[k]) != 0, GD_ERR_INVALID_ARG,
                           "stripe: '%s' is given twice; give each directory (disk) once",
                           targets[k]);
            nt->path[k] = gd__path_join(real[k], file);
            GD_REQUIRE(nt->path[k], GD_ERR_NO_MEMORY, "out of memory naming '%s'", file);
            /* Inside the dataset directory: named relative to it, so that it can move. */
            nt->name[k] =
                strcmp(real[k], real_dir) == 0 ? gd__strdup(file) : gd__strdup(nt->path[k]);
            GD_REQUIRE(nt->name[k], GD_ERR_NO_MEMORY, "out of memory naming '%s'", file);
        }
    }
    /* The files: a .npy header of each one's share, then its units in order. */
    for (int k = 0; k < ntargets; k++) {
        const int64_t shape[2] = {gd__stripes_file_rows(&geo, rows, k), cols};
        /* The data on a page whatever the file's size (a small share gets no alignment from
         * gd__npy_header_size): the files are mapped side by side. */
        const int64_t hs = (gd__npy_header_size(a->dtype, 2, shape) + 4095) / 4096 * 4096;
        /* A stripe killed mid-write (SIGKILL) left its temporaries: any .npy being written in
         * this directory by a process that is gone. */
        gd__sweep_stale_beside(nt->path[k], ".npy");
        GD_CHECK(gd__outfile_create(&out[k], nt->path[k]));
        nout = k + 1;
        GD_CHECK(gd__file_reserve(out[k].fd, out[k].tmp_path, hs + shape[0] * rb));
        gd_free(header);
        GD_ALLOC(header, (size_t)hs, "a stripe file's header");
        GD_CHECK(gd__npy_format_header(a->dtype, 2, shape, header, hs));
        GD_CHECK(gd__outfile_write(&out[k], header, (size_t)hs));
    }
    const int64_t units = rows > 0 ? (rows + nt->unit_rows - 1) / nt->unit_rows : 0;
    for (int64_t u = 0; u < units; u++) {
        const int64_t at = u * nt->unit_rows, k = gd__min64(nt->unit_rows, rows - at);
        GD_CHECK(gd__outfile_write(&out[u % ntargets], (const char *)a->data + at * rb,
                                   (size_t)(k * rb)));
        GD_REQUIRE(!opt.progress || opt.progress(opt.progress_user, "stripe", (uint64_t)(u + 1),
                                                 (uint64_t)units) == 0,
                   GD_ERR_INTERRUPTED, "stripe: interrupted; dataset '%s' is as it was", dir);
    }
    for (int k = 0; k < ntargets; k++) {
        GD_CHECK(gd__outfile_commit(&out[k]));
        written[nwritten++] = nt->path[k];
        GD_CHECK(gd__fsync_dir(targets[k], true));
    }
    /* The old table's files, named before the switch: nothing is allocated after it. */
    if (a->stripes) {
        for (int f = 0; f < a->stripes->nfiles; f++) {
            old[nold] = gd__strdup(a->stripes->path[f]);
            GD_REQUIRE(old[nold++], GD_ERR_NO_MEMORY, "out of memory striping '%s'", dir);
        }
    } else if (a->path) {
        old[nold] = gd__strdup(a->path);
        GD_REQUIRE(old[nold++], GD_ERR_NO_MEMORY, "out of memory striping '%s'", dir);
    }
    manifest = gd__path_join(dir, "features.stripes");
    meta = gd__path_join(dir, "meta.json");
    text = manifest_text(nt, a->dtype, (const int64_t[2]){rows, cols});
    GD_REQUIRE(manifest && meta && text, GD_ERR_NO_MEMORY, "out of memory striping '%s'", dir);
    {
        gd__outfile mf = {-1, NULL, NULL};
        GD_CHECK(gd__outfile_create(&mf, manifest));
        st = gd__outfile_write(&mf, text, strlen(text));
        if (st == GD_OK)
            st = gd__outfile_commit(&mf);
        else
            gd__outfile_abort(&mf);
        GD_CHECK(st);
    }
    if (a->stripes) {
        switched = 1; /* meta.json names features.stripes already: the manifest was the switch */
    } else {
        written[nwritten++] = manifest;
        struct gd__stripe_table *keep = a->stripes;
        a->stripes = nt; /* meta.json names "features.stripes" for a striped table */
        st = gd__meta_write(meta, ds);
        a->stripes = keep;
        GD_CHECK(st);
        switched = 1;
    }
    /* Switched: the rename is made; a failed flush of the directory is only a warning. */
    if (gd__fsync_dir(dir, false) != GD_OK)
        GD_WARN("stripe: %s (the dataset is striped; only the flush of its directory failed)",
                gd_last_error());
fail:
    for (int k = 0; k < nout; k++)
        if (out[k].tmp_path) gd__outfile_abort(&out[k]);
    if (!switched)
        for (int i = 0; i < nwritten; i++) unlink(written[i]);
    if (switched) {
        /* The dataset is the new files' now: the old ones go (a failure only leaves them). */
        gd_dataset_close(ds);
        ds = NULL;
        for (int i = 0; i < nold; i++)
            if (unlink(old[i]) != 0)
                GD_WARN("stripe: could not remove the old table's '%s': %s", old[i],
                        strerror(errno));
    }
    for (int i = 0; i < nold; i++) gd_free(old[i]);
    gd_dataset_close(ds);
    gd__stripe_table_free(nt);
    free(real_dir);
    for (int k = 0; k < GD__STRIPES_MAX_FILES; k++) free(real[k]);
    gd_free(header);
    gd_free(manifest);
    gd_free(meta);
    gd_free(text);
    return st;
}
