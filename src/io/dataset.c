/*
 * Dataset directories: opening one (mapping or reading every .npy after checking it against
 * meta.json), saving one, and the builder the converters and the generator fill. A dataset is
 * the start of the data path: the sampler reads indptr/indices, the feature store reads
 * features, and the trainer reads labels and the split arrays, all trusting the sizes checked
 * here. So every reader path cross-checks meta.json against each .npy header and, when asked,
 * every index against the node count, before a single id is handed on (the checks are in
 * dataset_check.c).
 *
 * Output is all-or-nothing: files are written into "<dir>.tmp.<pid>" beside the target,
 * flushed, and the directory is renamed into place; an existing dataset being replaced is
 * first renamed away, so a failure at any step leaves the old one untouched.
 */
#include "io/dataset.h"
#include "io/stripes.h"
#include "io/meta.h"
#include "io/npy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const array_names[GD_ARRAY_COUNT] = {
    "indptr", "indices", "features", "labels", "train_idx", "valid_idx", "test_idx",
};

const char *gd_array_name(gd_array_id id) {
    return ((unsigned)id < GD_ARRAY_COUNT) ? array_names[id] : "invalid";
}

int64_t gd__array_bytes(const gd__array *a) {
    int64_t n = 0;
    if (!a || a->store == GD__STORE_NONE) return 0;
    if (gd__mul_overflow_i64(a->shape[0], a->ndim == 2 ? a->shape[1] : 1, &n) ||
        gd__mul_overflow_i64(n, (int64_t)gd_dtype_size(a->dtype), &n))
        return -1;
    return n;
}

/* ------------------------------------------------------------ directory helpers */

/*
 * Whether target may be written: absent, or (with overwrite) an existing dataset directory or
 * an empty one. Anything else is refused so that a mistyped path cannot delete unrelated data.
 */
static gd_status check_target(const char *target, int overwrite) {
    struct stat sb;
    if (lstat(target, &sb) != 0) {
        if (errno == ENOENT) return GD_OK;
        return gd__error(GD_ERR_IO, "cannot inspect '%s': %s", target, strerror(errno));
    }
    if (!overwrite)
        return gd__error(GD_ERR_INVALID_ARG,
                         "'%s' already exists; remove it, or replace it: --overwrite on the "
                         "command line, overwrite=True in Python, overwrite = 1 in C",
                         target);
    if (!S_ISDIR(sb.st_mode))
        return gd__error(GD_ERR_INVALID_ARG,
                         "refusing to replace '%s': it is not a directory", target);
    DIR *d = opendir(target);
    if (!d) return gd__error(GD_ERR_IO, "cannot read directory '%s': %s", target, strerror(errno));
    bool empty = true, has_meta = false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        empty = false;
        if (strcmp(e->d_name, "meta.json") == 0) has_meta = true;
    }
    closedir(d);
    if (!empty && !has_meta)
        return gd__error(GD_ERR_INVALID_ARG,
                         "refusing to replace '%s': it is not a graphdirect dataset directory "
                         "(no meta.json); remove it yourself if it should go",
                         target);
    return GD_OK;
}

static gd_status check_parent(const char *target) {
    gd_status st = GD_OK;
    char *parent = gd__path_dir(target);
    struct stat sb;
    GD_REQUIRE(parent, GD_ERR_NO_MEMORY, "out of memory naming the parent of '%s'", target);
    GD_REQUIRE(stat(parent, &sb) == 0 && S_ISDIR(sb.st_mode), GD_ERR_NOT_FOUND,
               "cannot write dataset '%s': its parent directory '%s' does not exist (create it "
               "first)",
               target, parent);
fail:
    gd_free(parent);
    return st;
}

/*
 * Start writing the dataset directory target: check that it may be written, then create the
 * temporary build directory beside it (*tmp, replacing a stale one of this process), which
 * publish_dir later moves into place.
 */
static gd_status make_temp_dir(const char *target, int overwrite, char **tmp) {
    gd_status st = GD_OK;
    char *t = NULL;
    GD_CHECK(check_parent(target));
    /* What a run killed before it could clean up left here goes first: it may hold gigabytes,
     * or be the dataset a killed replacement had renamed away, which goes back before the
     * target is judged. */
    gd__sweep_stale(target);
    GD_CHECK(check_target(target, overwrite));
    t = gd__path_sibling(target, "tmp");
    GD_REQUIRE(t, GD_ERR_NO_MEMORY, "out of memory naming a directory beside '%s'", target);
    gd__remove_tree(t);
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO,
               "cannot create directory '%s': injected fault", t);
    GD_REQUIRE(mkdir(t, 0755) == 0, GD_ERR_IO, "cannot create directory '%s': %s", t,
               strerror(errno));
    *tmp = t;
    return GD_OK;
fail:
    gd_free(t);
    return st;
}

/*
 * Move the complete temporary directory to target. An existing target is renamed away first
 * and restored if the second rename fails; it is deleted only once the new one is in place.
 */
static gd_status publish_dir(const char *tmp, const char *target, int overwrite) {
    gd_status st = GD_OK;
    char *old = NULL, *parent = NULL;
    bool moved_old = false;
    struct stat sb;
    GD_CHECK(gd__fsync_dir(tmp, false));
    GD_CHECK(check_target(target, overwrite));
    parent = gd__path_dir(target);
    GD_REQUIRE(parent, GD_ERR_NO_MEMORY, "out of memory naming the parent of '%s'", target);
    if (lstat(target, &sb) == 0) {
        old = gd__path_sibling(target, "old");
        GD_REQUIRE(old, GD_ERR_NO_MEMORY, "out of memory naming a directory beside '%s'", target);
        gd__remove_tree(old);
        GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO,
                   "cannot rename '%s' to '%s': injected fault", target, old);
        GD_REQUIRE(rename(target, old) == 0, GD_ERR_IO, "cannot rename '%s' to '%s': %s", target,
                   old, strerror(errno));
        moved_old = true;
    }
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO,
               "cannot rename '%s' to '%s': injected fault", tmp, target);
    GD_REQUIRE(rename(tmp, target) == 0, GD_ERR_IO, "cannot rename '%s' to '%s': %s", tmp,
               target, strerror(errno));
    moved_old = false;
    /* From here on the new dataset is in place; later trouble is reported but is not a failure
     * of the save, since nothing can be undone without losing the finished data. */
    if (gd__fsync_dir(parent, false) != GD_OK) GD_WARN("%s", gd_last_error());
    if (old) gd__remove_tree(old);
    gd_free(old);
    gd_free(parent);
    return GD_OK;
fail:
    if (moved_old && rename(old, target) != 0)
        GD_WARN("could not move '%s' back to '%s': %s", old, target, strerror(errno));
    gd_free(old);
    gd_free(parent);
    return st;
}

/* --------------------------------------------------------------------- open */

void gd_dataset_close(gd_dataset_t *ds) {
    if (!ds) return;
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) gd__array_release(&ds->arrays[i]);
    if (ds->build_dir && !ds->finished) gd__remove_tree(ds->build_dir);
    for (int i = 0; i < ds->num_info; i++) {
        gd_free(ds->info_key[i]);
        gd_free(ds->info_value[i]);
    }
    gd_free(ds->name);
    gd_free(ds->dir);
    gd_free(ds->build_dir);
    gd_free(ds);
}

void gd__array_shape_text(char *buf, size_t n, int ndim, const int64_t *shape) {
    if (ndim == 2)
        snprintf(buf, n, "(%lld, %lld)", (long long)shape[0], (long long)shape[1]);
    else
        snprintf(buf, n, "(%lld,)", (long long)shape[0]);
}

gd_status gd_dataset_open(const char *dir, const gd_dataset_open_options *options,
                          gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_dataset_open_options opts = GD_DATASET_OPEN_OPTIONS_INIT;
    gd__meta m;
    gd_dataset_t *ds = NULL;
    char *path = NULL;
    memset(&m, 0, sizeof m);
    GD_REQUIRE(dir && out, GD_ERR_INVALID_ARG, "gd_dataset_open: dir and out must not be NULL");
    *out = NULL;
    if (options)
        GD_CHECK(gd__options_in(&opts, sizeof opts, options, 1, "gd_dataset_open: options",
                                "GD_DATASET_OPEN_OPTIONS_INIT"));
    GD_REQUIRE(opts.mode == GD_OPEN_MMAP || opts.mode == GD_OPEN_LOAD, GD_ERR_INVALID_ARG,
               "gd_dataset_open: mode is %d; expected GD_OPEN_MMAP or GD_OPEN_LOAD",
               (int)opts.mode);

    /* A writer of this dataset that was killed left its temporary copy beside it. */
    gd__sweep_stale(dir);
    path = gd__path_join(dir, "meta.json");
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming '%s/meta.json'", dir);
    GD_CHECK(gd__meta_read(path, &m));
    gd_free(path);
    path = NULL;

    ds = gd_calloc(1, sizeof *ds);
    GD_REQUIRE(ds, GD_ERR_NO_MEMORY, "out of memory opening dataset '%s'", dir);
    ds->finished = 1;
    ds->name = m.name;
    m.name = NULL;
    ds->num_nodes = m.num_nodes;
    ds->num_edges = m.num_edges;
    ds->feature_dim = m.feature_dim;
    ds->num_classes = m.num_classes;
    ds->schema = m.schema;
    for (int i = 0; i < m.num_info; i++) {
        ds->info_key[i] = m.info_key[i];
        ds->info_value[i] = m.info_value[i];
        m.info_key[i] = m.info_value[i] = NULL;
    }
    ds->num_info = m.num_info;
    m.num_info = 0;
    ds->dir = gd__strdup(dir);
    GD_REQUIRE(ds->dir, GD_ERR_NO_MEMORY, "out of memory opening dataset '%s'", dir);

    for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
        const gd__meta_array *ma = &m.arrays[i];
        gd__array *a = &ds->arrays[i];
        char name[GD__TYPE_NAME_MAX + 32];
        if (!ma->present) continue;
        gd__array_slot_name(&ds->schema, i, name, sizeof name);
        path = gd__path_join(dir, ma->file);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming '%s/%s'", dir, ma->file);
        const size_t fl = strlen(ma->file);
        if (fl > 8 && strcmp(ma->file + fl - 8, ".stripes") == 0)
            GD_CHECK(gd__stripes_open(path, opts.mode == GD_OPEN_LOAD, a));
        else if (opts.mode == GD_OPEN_LOAD)
            GD_CHECK(gd__npy_load_table(path, a));
        else
            GD_CHECK(gd__npy_map(path, a));
        GD_REQUIRE(a->dtype == ma->dtype, GD_ERR_FORMAT,
                   "%s: dtype is %s%s but meta.json field 'arrays.%s.dtype' says %s", path,
                   gd_dtype_name(a->dtype), a->dtype == GD_DTYPE_BFLOAT16 ? " ('<u2')" : "",
                   name, gd_dtype_name(ma->dtype));
        if (a->ndim != ma->ndim || a->shape[0] != ma->shape[0] || a->shape[1] != ma->shape[1]) {
            char got[64], want[64];
            gd__array_shape_text(got, sizeof got, a->ndim, a->shape);
            gd__array_shape_text(want, sizeof want, ma->ndim, ma->shape);
            GD_REQUIRE(0, GD_ERR_FORMAT,
                       "%s: shape is %s but meta.json field 'arrays.%s.shape' says %s (the files "
                       "disagree: re-create the dataset)",
                       path, got, name, want);
        }
        gd_free(path);
        path = NULL;
    }
    {
        /* A full check that an earlier open recorded, on files unchanged since, is not redone
         * (validate_graph 2 always checks). */
        const char *files[GD__ARRAY_SLOTS + GD__STRIPES_MAX_FILES];
        int nf = 0;
        for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
            if (!m.arrays[i].present) continue;
            files[nf++] = m.arrays[i].file;
            if (ds->arrays[i].stripes) /* a striped table: its files too */
                nf += gd__stripes_names(ds->arrays[i].stripes, files + nf,
                                        GD__ARRAY_SLOTS + GD__STRIPES_MAX_FILES - nf);
        }
        const int cached = opts.validate_graph == 1 && gd__validated_matches(dir, files, nf);
        st = gd__dataset_check(ds, opts.validate_graph && !cached);
        if (st != GD_OK) {
            gd__error_context(st, "dataset '%s'", dir);
            goto fail;
        }
        if (cached)
            GD_INFO("dataset %s: every value was checked before (its .validated record) and the "
                    "files are unchanged: sizes checked only",
                    dir);
        else if (opts.validate_graph)
            gd__validated_write(dir, files, nf);
    }
    gd__meta_free(&m);
    *out = ds;
    return GD_OK;
fail:
    gd_free(path);
    gd__meta_free(&m);
    gd_dataset_close(ds);
    return st;
}

/* --------------------------------------------------------------------- save */

gd_status gd_dataset_save(const gd_dataset_t *ds, const char *dir, int overwrite) {
    gd_status st = GD_OK;
    char *target = NULL, *tmp = NULL, *path = NULL;
    bool made_tmp = false;
    GD_REQUIRE(ds && dir, GD_ERR_INVALID_ARG, "gd_dataset_save: ds and dir must not be NULL");
    GD_CHECK(gd__dataset_check(ds, 0));
    target = gd__path_trim(dir);
    GD_REQUIRE(target, GD_ERR_NO_MEMORY, "out of memory naming '%s'", dir);
    GD_CHECK(make_temp_dir(target, overwrite, &tmp));
    made_tmp = true;
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
        const gd__array *a = &ds->arrays[i];
        char file[GD__TYPE_NAME_MAX + 32];
        if (a->store == GD__STORE_NONE) continue;
        gd__array_slot_file(&ds->schema, i, file, sizeof file);
        path = gd__path_join(tmp, file);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'", tmp);
        /*
         * An array mapped from a .npy file as it is (convert adopts arrays that already have
         * the right dtype) is linked, not copied: no second copy on disk, no read of it. Where
         * the file systems differ, or links are refused, it is written from the mapping.
         */
        if (a->store == GD__STORE_MAP_RO && a->path && !a->stripes && link(a->path, path) == 0) {
            GD_INFO("%s: linked from %s (no copy)", path, a->path);
            gd_free(path);
            path = NULL;
            continue;
        }
        GD_CHECK(gd_npy_write(path, a->dtype, a->ndim, a->shape, a->data));
        gd_free(path);
        path = NULL;
    }
    path = gd__path_join(tmp, "meta.json");
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming '%s/meta.json'", tmp);
    GD_CHECK(gd__meta_write(path, ds));
    GD_CHECK(publish_dir(tmp, target, overwrite));
    made_tmp = false;
fail:
    if (made_tmp) gd__remove_tree(tmp);
    gd_free(path);
    gd_free(tmp);
    gd_free(target);
    return st;
}

gd_status gd__dataset_check_unchanged(const gd_dataset_t *ds) {
    if (!ds) return GD_OK;
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
        const gd__array *a = &ds->arrays[i];
        if (a->store != GD__STORE_MAP_RO || !a->path) continue;
        gd_status st = gd__file_check_unchanged(a->path, &a->file);
        if (st == GD_OK) st = gd__stripes_check_unchanged(a->stripes);
        if (st != GD_OK)
            return gd__error_context(st, "dataset '%s'", ds->dir ? ds->dir : ds->name);
    }
    return GD_OK;
}

/* ------------------------------------------------------------------ getters */

const char *gd_dataset_name(const gd_dataset_t *ds) {
    return ds && ds->name ? ds->name : "";
}
int64_t gd_dataset_num_nodes(const gd_dataset_t *ds) { return ds ? ds->num_nodes : 0; }
int64_t gd_dataset_num_edges(const gd_dataset_t *ds) { return ds ? ds->num_edges : 0; }
int64_t gd_dataset_feature_dim(const gd_dataset_t *ds) { return ds ? ds->feature_dim : 0; }
int64_t gd_dataset_num_classes(const gd_dataset_t *ds) { return ds ? ds->num_classes : 0; }

gd_status gd_dataset_array(const gd_dataset_t *ds, gd_array_id id, gd_array_view *view) {
    if (!ds || !view)
        return gd__error(GD_ERR_INVALID_ARG, "gd_dataset_array: ds and view must not be NULL");
    if ((unsigned)id >= GD_ARRAY_COUNT)
        return gd__error(GD_ERR_INVALID_ARG, "gd_dataset_array: array id %d is out of range",
                         (int)id);
    const gd__array *a = &ds->arrays[id];
    if (a->store == GD__STORE_NONE)
        return gd__error(GD_ERR_NOT_FOUND, "dataset '%s' has no %s array", gd_dataset_name(ds),
                         array_names[id]);
    view->dtype = a->dtype;
    view->ndim = a->ndim;
    view->shape[0] = a->shape[0];
    view->shape[1] = a->ndim == 2 ? a->shape[1] : 1;
    view->data = a->data;
    return GD_OK;
}

/* ------------------------------------------------------------------ builder */

gd_status gd__dataset_new(const char *name, const char *out_dir, int overwrite,
                          gd_dataset_t **out) {
    gd_status st = GD_OK;
    gd_dataset_t *ds = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__dataset_new: out must not be NULL");
    *out = NULL;
    ds = gd_calloc(1, sizeof *ds);
    GD_REQUIRE(ds, GD_ERR_NO_MEMORY, "out of memory creating a dataset");
    ds->overwrite = overwrite;
    if (out_dir) {
        ds->dir = gd__path_trim(out_dir);
        GD_REQUIRE(ds->dir, GD_ERR_NO_MEMORY, "out of memory naming '%s'", out_dir);
    }
    if (!name && ds->dir) {
        const char *slash = strrchr(ds->dir, '/');
        name = slash ? slash + 1 : ds->dir;
    }
    ds->name = gd__strdup(name && *name ? name : "dataset");
    GD_REQUIRE(ds->name, GD_ERR_NO_MEMORY, "out of memory creating a dataset");
    if (ds->dir) GD_CHECK(make_temp_dir(ds->dir, overwrite, &ds->build_dir));
    *out = ds;
    return GD_OK;
fail:
    gd_dataset_close(ds);
    return st;
}

/* Checks shared by alloc and adopt; returns the byte count through *bytes. */
static gd_status check_alloc_args(const gd_dataset_t *ds, int id, gd_dtype dtype,
                                  int ndim, const int64_t *shape, int64_t *bytes) {
    char name[GD__TYPE_NAME_MAX + 32];
    if (!ds || id < 0 || id >= GD__ARRAY_SLOTS || !shape ||
        (id >= GD_ARRAY_COUNT && ds->schema.num_node_types == 0) ||
        (id >= GD__ARRAY_TYPE_FEATURES &&
         id - GD__ARRAY_TYPE_FEATURES >= ds->schema.num_node_types))
        return gd__error(GD_ERR_INVALID_ARG, "dataset alloc: invalid dataset, array id %d or "
                         "shape", id);
    const char *array = gd__array_slot_name(&ds->schema, id, name, sizeof name);
    if (ds->finished)
        return gd__error(GD_ERR_INVALID_ARG, "dataset '%s' is finished; %s cannot be replaced",
                         ds->name, array);
    if (ndim != 1 && ndim != 2)
        return gd__error(GD_ERR_INVALID_ARG, "%s: ndim is %d; expected 1 or 2", array,
                         ndim);
    if (gd_dtype_size(dtype) == 0)
        return gd__error(GD_ERR_INVALID_ARG, "%s: invalid dtype %d", array, (int)dtype);
    int64_t n = (int64_t)gd_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || gd__mul_overflow_i64(n, shape[i], &n) || n > INT64_MAX / 2)
            return gd__error(GD_ERR_OVERFLOW, "%s: shape dimension %d is %lld; the array size "
                             "is negative or overflows", array, i,
                             (long long)shape[i]);
    }
    *bytes = n;
    return GD_OK;
}

static void set_shape(gd__array *a, gd_dtype dtype, int ndim, const int64_t *shape) {
    a->dtype = dtype;
    a->ndim = ndim;
    a->shape[0] = shape[0];
    a->shape[1] = ndim == 2 ? shape[1] : 1;
}

/* Create the .npy file of an on-disk build, size it and map it writable. */
static gd_status alloc_file(gd_dataset_t *ds, int id, gd_dtype dtype, int ndim,
                            const int64_t *shape, int64_t bytes) {
    gd_status st = GD_OK;
    gd__array *a = &ds->arrays[id];
    char file[GD__TYPE_NAME_MAX + 32];
    gd__array_slot_file(&ds->schema, id, file, sizeof file);
    char *path = gd__path_join(ds->build_dir, file);
    char *header = NULL;
    int fd = -1;
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'", ds->build_dir);
    int64_t hsize = gd__npy_header_size(dtype, ndim, shape);
    GD_REQUIRE(hsize > 0 && bytes <= INT64_MAX - hsize, GD_ERR_OVERFLOW,
               "%s: the array of %lld bytes is too large", path, (long long)bytes);
    GD_ALLOC(header, (size_t)hsize, "a .npy header");
    GD_CHECK(gd__npy_format_header(dtype, ndim, shape, header, hsize));
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot create '%s': injected fault",
               path);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    GD_REQUIRE(fd >= 0, GD_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot write '%s': injected fault",
               path);
    for (int64_t done = 0; done < hsize;) {
        ssize_t put = pwrite(fd, header + done, (size_t)(hsize - done), (off_t)done);
        if (put < 0 && errno == EINTR) continue;
        GD_REQUIRE(put > 0, GD_ERR_IO, "cannot write '%s': %s (is the disk full?)", path,
                   put < 0 ? strerror(errno) : "short write");
        done += put;
    }
    GD_CHECK(gd__file_reserve(fd, path, hsize + bytes));
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot map '%s': injected fault",
               path);
    size_t len = (size_t)(hsize + bytes);
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    GD_REQUIRE(base != MAP_FAILED, GD_ERR_IO, "cannot map %zu bytes of '%s' for writing: %s", len,
               path, strerror(errno));
    close(fd);
    fd = -1;
    set_shape(a, dtype, ndim, shape);
    a->store = GD__STORE_MAP_RW;
    a->map_base = base;
    a->map_len = len;
    a->data = (char *)base + hsize;
    gd_free(header);
    gd_free(path);
    return GD_OK;
fail:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    gd_free(header);
    gd_free(path);
    return st;
}

gd_status gd__dataset_alloc(gd_dataset_t *ds, int id, gd_dtype dtype, int ndim,
                            const int64_t *shape, void **data) {
    gd_status st = GD_OK;
    int64_t bytes = 0;
    char name[GD__TYPE_NAME_MAX + 32];
    GD_REQUIRE(data, GD_ERR_INVALID_ARG, "gd__dataset_alloc: data must not be NULL");
    *data = NULL;
    GD_CHECK(check_alloc_args(ds, id, dtype, ndim, shape, &bytes));
    gd__array_release(&ds->arrays[id]);
    if (ds->build_dir) {
        GD_CHECK(alloc_file(ds, id, dtype, ndim, shape, bytes));
    } else {
        gd__array_slot_name(&ds->schema, id, name, sizeof name);
        GD_REQUIRE((uint64_t)bytes <= SIZE_MAX, GD_ERR_OVERFLOW, "%s: %lld bytes do not fit "
                   "in memory", name, (long long)bytes);
        gd__array *a = &ds->arrays[id];
        GD_CHECK(gd__array_own(a, (size_t)bytes, name));
        set_shape(a, dtype, ndim, shape);
    }
    *data = ds->arrays[id].data;
fail:
    return st;
}

gd_status gd__dataset_adopt(gd_dataset_t *ds, int id, gd_dtype dtype, int ndim,
                            const int64_t *shape, void *data) {
    gd_status st = GD_OK;
    int64_t bytes = 0;
    char *path = NULL, file[GD__TYPE_NAME_MAX + 32];
    GD_CHECK(check_alloc_args(ds, id, dtype, ndim, shape, &bytes));
    gd__array_slot_file(&ds->schema, id, file, sizeof file);
    GD_REQUIRE(data || bytes == 0, GD_ERR_INVALID_ARG, "%s: data is NULL", file);
    gd__array_release(&ds->arrays[id]);
    if (ds->build_dir) {
        int64_t dims[2] = {shape[0], ndim == 2 ? shape[1] : 1};
        path = gd__path_join(ds->build_dir, file);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'", ds->build_dir);
        GD_CHECK(gd_npy_write(path, dtype, ndim, dims, data));
        gd_free(data);
        data = NULL;
        /* Keep the array readable until the dataset is finished and closed. */
        st = gd__npy_map(path, &ds->arrays[id]);
        if (st != GD_OK) {
            unlink(path);
            goto fail;
        }
        gd_free(path);
        return GD_OK;
    }
    gd__array *a = &ds->arrays[id];
    set_shape(a, dtype, ndim, shape);
    a->store = GD__STORE_HEAP;
    a->data = data;
    return GD_OK;
fail:
    gd_free(data);
    gd_free(path);
    return st;
}

gd_status gd__dataset_take(gd_dataset_t *ds, int id, gd__array *a) {
    gd_status st = GD_OK;
    int64_t bytes = 0;
    char *path = NULL;
    GD_CHECK(check_alloc_args(ds, id, a->dtype, a->ndim, a->shape, &bytes));
    if (ds->build_dir) {
        /*
         * An on-disk build (gd_convert with out_dir) links a mapped .npy file into its directory
         * as gd_dataset_save does (no copy), or writes it there from the mapping, and reads it
         * back from there, as every array of the build.
         */
        char file[GD__TYPE_NAME_MAX + 32];
        gd__array_slot_file(&ds->schema, id, file, sizeof file);
        path = gd__path_join(ds->build_dir, file);
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'", ds->build_dir);
        if (a->store == GD__STORE_MAP_RO && a->path && !a->stripes && link(a->path, path) == 0) {
            GD_INFO("%s: linked from %s (no copy)", path, a->path);
        } else {
            const int64_t dims[2] = {a->shape[0], a->ndim == 2 ? a->shape[1] : 1};
            GD_CHECK(gd_npy_write(path, a->dtype, a->ndim, dims, a->data));
        }
        gd__array_release(a);
        gd__array_release(&ds->arrays[id]);
        st = gd__npy_map(path, &ds->arrays[id]);
        if (st != GD_OK) unlink(path);
        gd_free(path);
        return st;
    }
    gd__array_release(&ds->arrays[id]);
    ds->arrays[id] = *a;
    memset(a, 0, sizeof *a);
fail:
    if (st != GD_OK) gd__array_release(a);
    gd_free(path);
    return st;
}

gd_status gd__dataset_borrow(gd_dataset_t *ds, gd_array_id id, gd_dtype dtype, int ndim,
                             const int64_t *shape, const void *data) {
    gd_status st = GD_OK;
    int64_t bytes = 0;
    GD_CHECK(check_alloc_args(ds, id, dtype, ndim, shape, &bytes));
    GD_REQUIRE(data || bytes == 0, GD_ERR_INVALID_ARG, "%s: data is NULL", array_names[id]);
    GD_REQUIRE(!ds->build_dir, GD_ERR_INTERNAL, "%s: an on-disk build cannot borrow memory",
               array_names[id]);
    gd__array_release(&ds->arrays[id]);
    gd__array *a = &ds->arrays[id];
    set_shape(a, dtype, ndim, shape);
    a->store = GD__STORE_BORROWED;
    a->data = (void *)data; /* read only: the library never writes a dataset's arrays */
fail:
    return st;
}

gd_status gd__dataset_set_info(gd_dataset_t *ds, const char *key, const char *value) {
    if (!ds || !key || !value)
        return gd__error(GD_ERR_INVALID_ARG, "gd__dataset_set_info: NULL argument");
    char *v = gd__strdup(value);
    if (!v) return gd__error(GD_ERR_NO_MEMORY, "out of memory recording info '%s'", key);
    for (int i = 0; i < ds->num_info; i++) {
        if (strcmp(ds->info_key[i], key) == 0) {
            gd_free(ds->info_value[i]);
            ds->info_value[i] = v;
            return GD_OK;
        }
    }
    if (ds->num_info >= GD__DATASET_MAX_INFO) {
        gd_free(v);
        return gd__error(GD_ERR_RANGE, "dataset '%s': more than %d info entries (adding '%s')",
                         ds->name, GD__DATASET_MAX_INFO, key);
    }
    char *k = gd__strdup(key);
    if (!k) {
        gd_free(v);
        return gd__error(GD_ERR_NO_MEMORY, "out of memory recording info '%s'", key);
    }
    ds->info_key[ds->num_info] = k;
    ds->info_value[ds->num_info] = v;
    ds->num_info++;
    return GD_OK;
}

gd_status gd__dataset_set_infof(gd_dataset_t *ds, const char *key, const char *fmt, ...) {
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return gd__dataset_set_info(ds, key, text);
}

/* Set a count derived from the arrays; a value set earlier by the builder must agree. */
static gd_status derive(gd_dataset_t *ds, int64_t *field, int64_t value, const char *name) {
    if (*field != 0 && *field != value)
        return gd__error(GD_ERR_INVALID_ARG, "dataset '%s': %s was set to %lld but the arrays "
                         "give %lld", ds->name, name, (long long)*field, (long long)value);
    *field = value;
    return GD_OK;
}

/* Flush a writable mapping and its file's size to disk. */
static gd_status flush_file(const gd_dataset_t *ds, int id) {
    gd_status st = GD_OK;
    const gd__array *a = &ds->arrays[id];
    char file[GD__TYPE_NAME_MAX + 32];
    gd__array_slot_file(&ds->schema, id, file, sizeof file);
    char *path = gd__path_join(ds->build_dir, file);
    int fd = -1;
    GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'", ds->build_dir);
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_WRITE), GD_ERR_IO, "cannot flush '%s': injected fault",
               path);
    GD_REQUIRE(msync(a->map_base, a->map_len, MS_SYNC) == 0, GD_ERR_IO,
               "cannot flush '%s' to disk: %s", path, strerror(errno));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    GD_REQUIRE(fd >= 0 && fsync(fd) == 0, GD_ERR_IO, "cannot flush '%s' to disk: %s", path,
               strerror(errno));
fail:
    if (fd >= 0) close(fd);
    gd_free(path);
    return st;
}

gd_status gd__dataset_finish(gd_dataset_t *ds, int validate_graph) {
    gd_status st = GD_OK;
    char *path = NULL, *final_name[GD__ARRAY_SLOTS] = {NULL};
    gd__array ro[GD__ARRAY_SLOTS];
    memset(ro, 0, sizeof ro);
    GD_REQUIRE(ds, GD_ERR_INVALID_ARG, "gd__dataset_finish: ds must not be NULL");
    GD_REQUIRE(!ds->finished, GD_ERR_INVALID_ARG, "dataset '%s' is already finished", ds->name);
    const gd__array *ip = &ds->arrays[GD_ARRAY_INDPTR], *ix = &ds->arrays[GD_ARRAY_INDICES];
    GD_REQUIRE(ip->store != GD__STORE_NONE && ix->store != GD__STORE_NONE, GD_ERR_INVALID_ARG,
               "dataset '%s' has no %s array; every dataset needs indptr and indices", ds->name,
               ip->store == GD__STORE_NONE ? "indptr" : "indices");
    GD_REQUIRE(ip->shape[0] >= 1, GD_ERR_FORMAT,
               "indptr.npy: shape is (0,); it needs num_nodes + 1 >= 1 elements");
    GD_CHECK(derive(ds, &ds->num_nodes, ip->shape[0] - 1, "num_nodes"));
    GD_CHECK(derive(ds, &ds->num_edges, ix->shape[0], "num_edges"));
    const gd__array *f = &ds->arrays[GD_ARRAY_FEATURES];
    if (f->store != GD__STORE_NONE)
        GD_CHECK(derive(ds, &ds->feature_dim, f->ndim == 2 ? f->shape[1] : 1, "feature_dim"));
    const gd__array *l = &ds->arrays[GD_ARRAY_LABELS];
    if (l->store != GD__STORE_NONE && ds->num_classes == 0) ds->num_classes = gd__array_max_label(l) + 1;
    GD_CHECK(gd__dataset_check(ds, validate_graph));
    if (ds->build_dir) {
        for (int i = 0; i < GD__ARRAY_SLOTS; i++)
            if (ds->arrays[i].store == GD__STORE_MAP_RW) GD_CHECK(flush_file(ds, i));
        path = gd__path_join(ds->build_dir, "meta.json");
        GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming '%s/meta.json'", ds->build_dir);
        GD_CHECK(gd__meta_write(path, ds));
        /*
         * The finished dataset reads its files as an opened one does: read-only mappings of
         * its files. The writable mappings of the build are file-backed shared memory, which
         * CUDA refuses to page-lock, so a GPU mode over the dataset that gd_generate or
         * gd_convert had just returned failed to register its arrays in place. Everything that
         * can fail (the mappings, the final names) happens before the directory is published;
         * the mappings survive its rename, and only their names change after it.
         */
        for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
            if (ds->arrays[i].store != GD__STORE_MAP_RW) continue;
            char file[GD__TYPE_NAME_MAX + 32];
            gd__array_slot_file(&ds->schema, i, file, sizeof file);
            gd_free(path);
            path = gd__path_join(ds->build_dir, file);
            GD_REQUIRE(path, GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'",
                       ds->build_dir);
            GD_CHECK(gd__npy_map(path, &ro[i]));
            final_name[i] = gd__path_join(ds->dir, file);
            GD_REQUIRE(final_name[i], GD_ERR_NO_MEMORY, "out of memory naming a file in '%s'",
                       ds->dir);
        }
        GD_CHECK(publish_dir(ds->build_dir, ds->dir, ds->overwrite));
        gd_free(ds->build_dir);
        ds->build_dir = NULL;
        for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
            if (ro[i].store != GD__STORE_MAP_RO) continue;
            gd__array_release(&ds->arrays[i]);
            gd_free(ro[i].path);
            ro[i].path = final_name[i];
            final_name[i] = NULL;
            ds->arrays[i] = ro[i];
            memset(&ro[i], 0, sizeof ro[i]);
        }
    }
    ds->finished = 1;
fail:
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
        gd__array_release(&ro[i]);
        gd_free(final_name[i]);
    }
    gd_free(path);
    return st;
}
