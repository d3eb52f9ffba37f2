/*
 * Host tensors: the feature table in host memory that GPU gathers read directly. This file
 * holds the CPU side: allocation (anonymous mmap, page-aligned so that registration pins whole
 * pages of ours), adoption of the caller's memory, POSIX shared memory that several processes
 * map (one feature table per host, one process per GPU), and the public entry points for
 * registration, which the CUDA backend implements. Registration itself lives in
 * feature_cuda.cu.
 */
#include "internal.h"

#include "core/context.h"
#include "core/hugepages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static gd_status tensor_shape(int64_t rows, int64_t cols, gd_dtype dtype, int64_t *row_bytes,
                              size_t *bytes, const char *what) {
    size_t es = gd_dtype_size(dtype);
    if (es == 0)
        return gd__error(GD_ERR_INVALID_ARG, "%s: dtype %d is not a valid gd_dtype", what,
                         (int)dtype);
    if (rows < 0 || cols <= 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "%s: shape %lld x %lld is invalid (rows >= 0 and cols >= 1 needed)",
                         what, (long long)rows, (long long)cols);
    int64_t rb, total;
    if (gd__mul_overflow_i64(cols, (int64_t)es, &rb) || gd__mul_overflow_i64(rows, rb, &total) ||
        (uint64_t)total > (uint64_t)SIZE_MAX / 2)
        return gd__error(GD_ERR_OVERFLOW, "%s: %lld x %lld %s elements overflow the address space",
                         what, (long long)rows, (long long)cols, gd_dtype_name(dtype));
    *row_bytes = rb;
    *bytes = (size_t)total;
    return GD_OK;
}

static gd_status tensor_new(int64_t rows, int64_t cols, gd_dtype dtype, unsigned flags,
                            gd__tensor_kind kind, const char *what, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    gd_host_tensor_t *t = NULL;
    int64_t row_bytes = 0;
    size_t bytes = 0;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "%s: NULL output handle", what);
    *out = NULL;
    GD_CHECK(tensor_shape(rows, cols, dtype, &row_bytes, &bytes, what));
    GD_REQUIRE((flags & ~(GD_HOST_TENSOR_READ_ONLY | GD_HOST_TENSOR_SHM_CREATE)) == 0,
               GD_ERR_INVALID_ARG, "%s: unknown flags 0x%x", what, flags);
    GD_REQUIRE(kind == GD__TENSOR_SHM || !(flags & GD_HOST_TENSOR_SHM_CREATE), GD_ERR_INVALID_ARG,
               "%s: GD_HOST_TENSOR_SHM_CREATE belongs to gd_host_tensor_open_shm", what);
    t = gd_calloc(1, sizeof *t);
    GD_REQUIRE(t, GD_ERR_NO_MEMORY, "%s: out of memory for the tensor handle", what);
    t->rows = rows;
    t->cols = cols;
    t->row_bytes = row_bytes;
    t->bytes = bytes;
    t->dtype = dtype;
    t->flags = flags;
    t->kind = kind;
    t->reg_device = -1;
    *out = t;
    return GD_OK;
fail:
    return st;
}

gd_status gd_host_tensor_create(int64_t rows, int64_t cols, gd_dtype dtype, unsigned flags,
                                gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    gd_host_tensor_t *t = NULL;
    GD_CHECK(tensor_new(rows, cols, dtype, flags, GD__TENSOR_OWNED, "gd_host_tensor_create", &t));
    /*
     * Anonymous pages are zero-filled, page-aligned (so registration pins no one else's data)
     * and only take memory when touched. A table of 2 MiB or more is 2 MiB-aligned and asks
     * for huge pages (core/hugepages.h): fewer pages for cudaHostRegister to pin, and fewer
     * translations for the GPU's zero-copy reads.
     */
    void *p = NULL;
    int advice = 0;
    char what[128];
    snprintf(what, sizeof what, "gd_host_tensor_create: %lld x %lld %s", (long long)rows,
             (long long)cols, gd_dtype_name(dtype));
    GD_CHECK(gd__table_map(t->bytes, what, &p, &t->map_len, &advice));
    t->map_base = p;
    t->data = p;
    *out = t;
    return GD_OK;
fail:
    if (t) gd_free(t);
    if (out) *out = NULL;
    return st;
}

gd_status gd_host_tensor_adopt(void *data, int64_t rows, int64_t cols, gd_dtype dtype,
                               unsigned flags, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    gd_host_tensor_t *t = NULL;
    GD_CHECK(tensor_new(rows, cols, dtype, flags, GD__TENSOR_ADOPTED, "gd_host_tensor_adopt", &t));
    GD_REQUIRE(data || t->bytes == 0, GD_ERR_INVALID_ARG,
               "gd_host_tensor_adopt: NULL data for %zu bytes", t->bytes);
    /* The element-wise GPU path loads whole elements, so they must be naturally aligned. */
    GD_REQUIRE((uintptr_t)data % gd_dtype_size(dtype) == 0, GD_ERR_INVALID_ARG,
               "gd_host_tensor_adopt: data %p is not aligned to the %zu-byte %s element size", data,
               gd_dtype_size(dtype), gd_dtype_name(dtype));
    t->data = data;
    *out = t;
    return GD_OK;
fail:
    if (t) gd_free(t);
    if (out) *out = NULL;
    return st;
}

/* POSIX wants "/name" with no other slash; accept the name with or without the first slash. */
static gd_status shm_name_normalise(const char *name, char **out) {
    gd_status st = GD_OK;
    char *n = NULL;
    GD_REQUIRE(name && *name, GD_ERR_INVALID_ARG, "shared memory name is NULL or empty");
    const char *base = name[0] == '/' ? name + 1 : name;
    GD_REQUIRE(*base && !strchr(base, '/') && strlen(base) < 240, GD_ERR_INVALID_ARG,
               "shared memory name '%s' is invalid: use one path component such as "
               "'/graphdirect-features' (no other '/', under 240 characters)",
               name);
    size_t len = strlen(base);
    GD_ALLOC(n, len + 2, "a shared memory name");
    n[0] = '/';
    memcpy(n + 1, base, len + 1);
    *out = n;
    return GD_OK;
fail:
    return st;
}

gd_status gd_host_tensor_open_shm(const char *name, int64_t rows, int64_t cols, gd_dtype dtype,
                                  unsigned flags, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    gd_host_tensor_t *t = NULL;
    int fd = -1;
    int created = 0;
    void *p = MAP_FAILED;
    const int create = (flags & GD_HOST_TENSOR_SHM_CREATE) != 0;
    const int read_only = (flags & GD_HOST_TENSOR_READ_ONLY) != 0;
    GD_CHECK(tensor_new(rows, cols, dtype, flags, GD__TENSOR_SHM, "gd_host_tensor_open_shm", &t));
    GD_CHECK(shm_name_normalise(name, &t->shm_name));
    GD_REQUIRE(!(create && read_only), GD_ERR_INVALID_ARG,
               "gd_host_tensor_open_shm(%s): a segment cannot be created read-only", t->shm_name);

    if (create) {
        fd = gd__fault_hit(GD_FAULT_ALLOC) ? (errno = ENOMEM, -1)
                                           : shm_open(t->shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
        GD_REQUIRE(fd >= 0,
                   errno == EEXIST   ? GD_ERR_INVALID_ARG
                   : errno == ENOMEM ? GD_ERR_NO_MEMORY
                                     : GD_ERR_IO,
                   "shm_open(%s) to create a %zu-byte feature table failed: %s%s", t->shm_name,
                   t->bytes, strerror(errno),
                   errno == EEXIST ? " (a segment of that name exists: remove it with "
                                     "gd_host_tensor_shm_unlink or rm /dev/shm/<name>)"
                                   : "");
        created = 1;
        GD_REQUIRE(ftruncate(fd, (off_t)t->bytes) == 0, GD_ERR_IO,
                   "ftruncate(%s, %zu) failed: %s", t->shm_name, t->bytes, strerror(errno));
        /*
         * tmpfs hands out pages only when they are first written; a full /dev/shm would then
         * kill the process with SIGBUS in the middle of a run. Reserving them now turns that
         * into an error with a remedy.
         */
        if (t->bytes > 0) {
            int e = posix_fallocate(fd, 0, (off_t)t->bytes);
            GD_REQUIRE(e == 0 || e == EOPNOTSUPP || e == EINVAL, GD_ERR_NO_MEMORY,
                       "reserving %zu bytes of shared memory for %s failed: %s; /dev/shm is too "
                       "small: check `df -h /dev/shm` and enlarge it (mount -o "
                       "remount,size=<bytes> /dev/shm, or docker --shm-size)",
                       t->bytes, t->shm_name, strerror(e));
        }
    } else {
        fd = gd__fault_hit(GD_FAULT_ALLOC)
                 ? (errno = ENOMEM, -1)
                 : shm_open(t->shm_name, read_only ? O_RDONLY : O_RDWR, 0);
        GD_REQUIRE(fd >= 0,
                   errno == ENOENT   ? GD_ERR_NOT_FOUND
                   : errno == ENOMEM ? GD_ERR_NO_MEMORY
                                     : GD_ERR_IO,
                   "shm_open(%s) failed: %s%s", t->shm_name, strerror(errno),
                   errno == ENOENT ? " (the process that owns the feature table must create it "
                                     "first, with GD_HOST_TENSOR_SHM_CREATE)"
                                   : "");
        struct stat sb;
        GD_REQUIRE(fstat(fd, &sb) == 0, GD_ERR_IO, "fstat(%s) failed: %s", t->shm_name,
                   strerror(errno));
        GD_REQUIRE((uint64_t)sb.st_size == (uint64_t)t->bytes, GD_ERR_FORMAT,
                   "shared memory %s holds %lld bytes, but %lld x %lld %s needs %zu: open it "
                   "with the shape it was created with",
                   t->shm_name, (long long)sb.st_size, (long long)rows, (long long)cols,
                   gd_dtype_name(dtype), t->bytes);
    }
    t->map_len = t->bytes ? t->bytes : 1;
    if (t->bytes > 0) {
        p = mmap(NULL, t->map_len, read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
        GD_REQUIRE(p != MAP_FAILED, GD_ERR_NO_MEMORY, "mmap of shared memory %s (%zu bytes): %s",
                   t->shm_name, t->bytes, strerror(errno));
    } else {
        /* An empty table still gets a distinct address so data is never NULL. */
        p = mmap(NULL, t->map_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        GD_REQUIRE(p != MAP_FAILED, GD_ERR_NO_MEMORY, "mmap of one page failed: %s",
                   strerror(errno));
    }
    close(fd);
    fd = -1;
    t->map_base = p;
    t->data = p;
    *out = t;
    return GD_OK;
fail:
    if (fd >= 0) close(fd);
    if (created) shm_unlink(t->shm_name);
    if (t) {
        gd_free(t->shm_name);
        gd_free(t);
    }
    if (out) *out = NULL;
    return st;
}

gd_status gd_host_tensor_shm_unlink(const char *name) {
    gd_status st = GD_OK;
    char *n = NULL;
    GD_CHECK(shm_name_normalise(name, &n));
    GD_REQUIRE(shm_unlink(n) == 0, errno == ENOENT ? GD_ERR_NOT_FOUND : GD_ERR_IO,
               "shm_unlink(%s) failed: %s", n, strerror(errno));
fail:
    gd_free(n);
    return st;
}

void gd_host_tensor_destroy(gd_host_tensor_t *t) {
    if (!t) return;
    /* Unregistering can only fail if the CUDA context is gone; the memory is released anyway. */
    if ((t->reg_context || t->reg_chunks > 0) && gd_host_tensor_unregister(t) != GD_OK)
        GD_WARN("destroying a host tensor: unregistering it failed: %s", gd_last_error());
    if (t->kind != GD__TENSOR_ADOPTED && t->map_base) munmap(t->map_base, t->map_len);
    gd_free(t->shm_name);
    gd_free(t);
}

gd_status gd__host_tensor_holder(const gd_host_tensor_t *t, gd_host_tensor_t **out) {
    gd_host_tensor_t *h = gd_calloc(1, sizeof *h);
    *out = NULL;
    if (!h)
        return gd__error(GD_ERR_NO_MEMORY, "registering a host tensor: out of memory for the "
                                           "handle of its registration");
    h->data = t->data;
    h->rows = t->rows;
    h->cols = t->cols;
    h->row_bytes = t->row_bytes;
    h->bytes = t->bytes;
    h->dtype = t->dtype;
    h->flags = t->flags & GD_HOST_TENSOR_READ_ONLY;
    h->kind = t->kind; /* with no mapping of its own (map_base NULL), so nothing is unmapped */
    h->reg_device = -1;
    *out = h;
    return GD_OK;
}

void *gd_host_tensor_data(const gd_host_tensor_t *t) { return t ? t->data : NULL; }
int64_t gd_host_tensor_rows(const gd_host_tensor_t *t) { return t ? t->rows : 0; }
int64_t gd_host_tensor_cols(const gd_host_tensor_t *t) { return t ? t->cols : 0; }
int64_t gd_host_tensor_row_bytes(const gd_host_tensor_t *t) { return t ? t->row_bytes : 0; }
gd_dtype gd_host_tensor_dtype(const gd_host_tensor_t *t) {
    return t ? t->dtype : GD_DTYPE_INVALID;
}

gd_status gd_host_tensor_register(gd_host_tensor_t *t, gd_context_t *context) {
    gd_status st = GD_OK;
    gd_context_t *ctx = NULL;
    gd_host_tensor_t *h = NULL;
    int device = 0;
    GD_REQUIRE(t, GD_ERR_INVALID_ARG, "gd_host_tensor_register: NULL tensor");
    if (t->registered) {
        if (context && context != t->reg_context)
            GD_DEBUG("host tensor already registered through GPU %d; it is portable, so GPU %d "
                     "can read it too",
                     t->reg_device, gd_context_device(context));
        return GD_OK;
    }
    GD_CHECK(gd__context_acquire(context, &device, &ctx));
    GD_CHECK(gd__context_pin(ctx, t, &h));
    /* The registry's registration covers exactly this memory: its chunks are this tensor's. */
    t->reg_context = ctx;
    t->reg_holder = h;
    t->reg_device = device;
    t->reg_chunks = h->reg_chunks;
    t->chunk_bytes = h->chunk_bytes;
    t->device_ptr = h->device_ptr;
    t->registered = 1;
    return GD_OK;
fail:
    gd__context_unref(ctx);
    return st;
}

gd_status gd_host_tensor_unregister(gd_host_tensor_t *t) {
    gd_status st = GD_OK;
    if (!t) return gd__error(GD_ERR_INVALID_ARG, "gd_host_tensor_unregister: NULL tensor");
    if (t->reg_context) {
        gd_context_t *ctx = t->reg_context;
        st = gd__context_unpin(ctx, t->reg_holder);
        gd__context_unref(ctx);
        t->reg_context = NULL;
        t->reg_holder = NULL;
        t->reg_chunks = 0;
        t->registered = 0;
        t->device_ptr = NULL;
        return st;
    }
    /* A registry's own registration (a holder), registered by the backend directly. */
    if (t->reg_chunks == 0 && !t->registered) return GD_OK;
    return gd__feature_backend_for(GD_GATHER_ZEROCOPY)->tensor_unregister(t);
}

int gd_host_tensor_is_registered(const gd_host_tensor_t *t) { return t && t->registered; }
