/*
 * Internal helpers shared by every module: error reporting, the check macros with their single
 * cleanup path, logging, overflow-checked size arithmetic, and file I/O wrappers that take part
 * in fault injection. Nothing here is exported from the shared library (names start with gd__).
 */
#ifndef GD_CORE_INTERNAL_H
#define GD_CORE_INTERNAL_H

#include "graphdirect.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define GD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GD_PRINTF(f, a)
#define GD_UNLIKELY(x) (x)
#endif

/* Record status and a formatted message as this thread's last error; returns status. */
gd_status gd__error(gd_status status, const char *fmt, ...) GD_PRINTF(2, 3);
/*
 * This thread's last error, kept across cleanup that may set or clear it (a destroy that syncs
 * streams after a failure): the caller's message is what gd_last_error() still says after.
 */
typedef struct {
    char text[1024];
} gd__error_kept;
void gd__error_keep(gd__error_kept *k);
void gd__error_put_back(const gd__error_kept *k);
/* Prefix the current last-error text with more context ("opening X: <old text>"). */
gd_status gd__error_context(gd_status status, const char *fmt, ...) GD_PRINTF(2, 3);
/* The locked-memory limit (ulimit -l) as text: "unlimited", "65536 KiB" or "unknown". */
void gd__memlock_text(char *buf, size_t n);
/*
 * Sized public structs (first member: size_t size). gd__options_in copies a caller's options
 * into *dst, which holds the defaults: min(src size, dst_size) bytes, then dst's size field is
 * set to dst_size. A size below sizeof(size_t), or above dst_size unless larger_ok (the caller
 * was built against a newer header; its extra fields are ignored), fails with
 * GD_ERR_INVALID_ARG naming `what` ("gd_graph_create: options") and the _INIT macro.
 * gd__info_out copies a filled info struct (src_size bytes) into the caller's, as many bytes as
 * the caller's size field says, which must lie in [sizeof(size_t), src_size].
 */
gd_status gd__options_in(void *dst, size_t dst_size, const void *src, int larger_ok,
                         const char *what, const char *init);
gd_status gd__info_out(void *dst, const void *src, size_t src_size, const char *what,
                       const char *init);
/*
 * Exclusive prefix sum of a[0..n) in place with up to `threads` threads; returns the total
 * (which must fit the element type for the int32 version's entries).
 */
#define GD__SCAN_MAX_THREADS 1024
int64_t gd__exclusive_scan_i64(int64_t *a, int64_t n, int threads);
int64_t gd__exclusive_scan_i32(int32_t *a, int64_t n, int threads);
/* Sort a[0..n) ascending in place (an introsort: O(n log n) whatever the order). */
void gd__sort_i64(int64_t *a, int64_t n);
void gd__sort_i32(int32_t *a, int64_t n);

/*
 * The check macros. A function that uses them declares `gd_status st = GD_OK;` and ends with a
 * `fail:` label that releases what it took and returns st. The first error is kept: cleanup
 * code must not call checked functions that overwrite st.
 */
#define GD_CHECK(expr)                                                                    \
    do {                                                                                  \
        st = (expr);                                                                      \
        if (GD_UNLIKELY(st != GD_OK)) goto fail;                                          \
    } while (0)

/* Fail with a message unless cond holds. */
#define GD_REQUIRE(cond, status, ...)                                                     \
    do {                                                                                  \
        if (GD_UNLIKELY(!(cond))) {                                                       \
            st = gd__error((status), __VA_ARGS__);                                        \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* Allocate with gd_malloc or fail with GD_ERR_NO_MEMORY naming what was being allocated. */
#define GD_ALLOC(ptr, bytes, what)                                                        \
    do {                                                                                  \
        size_t gd_alloc_bytes_ = (bytes);                                                 \
        (ptr) = gd_malloc(gd_alloc_bytes_ ? gd_alloc_bytes_ : 1);                         \
        if (GD_UNLIKELY(!(ptr))) {                                                        \
            st = gd__error(GD_ERR_NO_MEMORY, "out of memory allocating %zu bytes for %s", \
                           gd_alloc_bytes_, (what));                                      \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

/* ---- logging: the level is checked before anything is formatted */
extern gd_log_level gd__log_threshold;
void gd__log_write(gd_log_level level, const char *fmt, ...) GD_PRINTF(2, 3);
#define GD_LOG(level, ...)                                                                \
    do {                                                                                  \
        if ((level) <= gd__log_threshold) gd__log_write((level), __VA_ARGS__);            \
    } while (0)
#define GD_WARN(...) GD_LOG(GD_LOG_WARN, __VA_ARGS__)
#define GD_INFO(...) GD_LOG(GD_LOG_INFO, __VA_ARGS__)
#define GD_DEBUG(...) GD_LOG(GD_LOG_DEBUG, __VA_ARGS__)

/*
 * ---- parameters: 1 if the GD_* parameter `name` was given (gd_param_set, or a non-empty
 * environment variable), 0 if it holds its default. For defaults that depend on the situation
 * (the gather's SM budget), so that a value the user gave, through either route, wins.
 */
int gd__param_given(const char *name);

/* The smaller and the larger of two int64 values. */
static inline int64_t gd__min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static inline int64_t gd__max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* ---- overflow-checked arithmetic on sizes */
static inline bool gd__mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out);
}
static inline bool gd__add_overflow_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out);
}

/* ---- fault injection: returns true if this call of the kind must fail */
bool gd__fault_hit(gd_fault_kind kind);

/* ---- file I/O wrappers (errors name the path and errno text) */
gd_status gd__file_open_read(const char *path, int *fd, int64_t *size);
/* Read exactly bytes at offset; a short read is a GD_ERR_FORMAT "truncated" error. */
gd_status gd__file_pread(int fd, const char *path, void *buf, size_t bytes, int64_t offset);
/* Read a whole (small) file into a NUL-terminated gd_malloc'd buffer of at most max_bytes. */
gd_status gd__file_read_all(const char *path, int64_t max_bytes, char **buf, size_t *len);
/* Map a range of a file read-only (PROT_READ, MAP_SHARED). */
gd_status gd__file_map(int fd, const char *path, int64_t offset, int64_t bytes, void **base,
                       void **data, size_t *map_len);
void gd__file_unmap(void *base, size_t map_len);

/*
 * Give a file being written through a mapping its size, bytes, and allocate its blocks now
 * (posix_fallocate): a full disk is then this error, naming the file, the bytes and the free
 * space, instead of SIGBUS at the first page the file system cannot allocate.
 */
gd_status gd__file_reserve(int fd, const char *path, int64_t bytes);
/*
 * What a mapped input was when it was opened, so that a change in place while it is in use
 * (which can kill the process with SIGBUS, or feed it garbage) is found and reported.
 */
typedef struct {
    uint64_t dev, ino;
    int64_t size, mtime_ns;
} gd__file_id;
gd_status gd__file_identity(int fd, const char *path, gd__file_id *id);
/* GD_ERR_IO naming path if the file opened as id was since truncated or written in place;
 * GD_OK if it is unchanged, or was replaced (renamed over, removed): the mapping holds the
 * file opened, which stays intact. */
gd_status gd__file_check_unchanged(const char *path, const gd__file_id *id);

/*
 * Atomic output files: create "<path>.tmp.<pid>", write, then commit (fsync + rename over path)
 * or abort (unlink). The temporary file is never left behind by either.
 */
typedef struct {
    int fd;
    char *path;
    char *tmp_path;
} gd__outfile;
gd_status gd__outfile_create(gd__outfile *f, const char *path);
gd_status gd__outfile_write(gd__outfile *f, const void *data, size_t bytes);
/* Size the file (for writing through a mapping). */
gd_status gd__outfile_truncate(gd__outfile *f, int64_t bytes);
gd_status gd__outfile_commit(gd__outfile *f);
void gd__outfile_abort(gd__outfile *f);

/*
 * fsync a directory so that renames inside it are durable. With fault set the call takes part
 * in write-fault injection (GD_FAULT_WRITE); a caller for whom a failed flush is only a warning
 * passes 0, so that every injected write fault still fails its operation.
 */
gd_status gd__fsync_dir(const char *dir, bool fault);

/*
 * Temporary files of a process that was killed (SIGKILL, a crash) before it could remove them.
 * gd__sweep_stale(path) removes "<path>.tmp.<pid>" beside path whose process pid is gone
 * (kill(pid, 0) == ESRCH), and "<path>.old.<pid>" (a dataset renamed away while being
 * replaced), which goes back to path if path is missing; each with a warning in the log.
 * gd__sweep_stale_beside(path, ext) does the same for every "<name><ext>.tmp.<pid>" in the
 * directory that holds path (a checkpoint directory, when one checkpoint in it is read).
 * Both use no gd_malloc and never fail: a name that cannot be removed is only logged. A pid
 * of another host or PID namespace (a shared file system) cannot be told from a dead one.
 */
void gd__sweep_stale(const char *path);
void gd__sweep_stale_beside(const char *path, const char *ext);
/* Remove a file or a directory tree (no gd_malloc: it works under allocation faults). */
void gd__remove_tree(const char *path);

/* ---- path names (path.c); each returns a gd_malloc'd string, or NULL when out of memory */
/* dir and name joined by one slash. */
char *gd__path_join(const char *dir, const char *name);
/* The directory holding path: "." for a bare name, "/" for a name in the root. */
char *gd__path_dir(const char *path);
/* path without trailing slashes, so that a sibling of "d/" lands beside d, not inside it. */
char *gd__path_trim(const char *path);
/* "<path>.<tag>.<pid>": a temporary name beside path, private to this process. */
char *gd__path_sibling(const char *path, const char *tag);
char *gd__strdup(const char *s);

/*
 * GD_ERR_NO_DEVICE for `what`, which needs a GPU: none is visible, or (without GD_WITH_CUDA)
 * the build has no CUDA; the message ends with "or <instead>", the way out without a GPU.
 */
gd_status gd__no_device(const char *what, const char *instead);

/* The index of name in names[0..count), or -1 (also for a NULL name): enum names to values. */
int gd__name_index(const char *const *names, int count, const char *name);

/* Number of threads for parallel loops (GD_THREADS, else all cores). */
int gd__num_threads(void);
/* The most threads a caller may ask for (GD_THREADS is clamped to it too). */
#define GD__MAX_THREADS 1024
/*
 * threads as an argument of `who`: 0 (GD_THREADS, else all cores) up to GD__MAX_THREADS, or
 * GD_ERR_INVALID_ARG naming the value and the range (a huge count made OpenMP crash).
 */
gd_status gd__threads_check(int threads, const char *who);

/* Reporting progress: returns GD_ERR_INTERRUPTED if the callback asked to stop. */
gd_status gd__progress(gd_progress_fn fn, void *user, const char *stage, uint64_t done,
                       uint64_t total);

/* Wall-clock seconds from a monotonic clock. */
double gd__now(void);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_INTERNAL_H */
