/*
 * The host I/O engine of the SSD tier (ioeng.h): opening the files (O_DIRECT where allowed, the
 * logical block of each), the worker threads and the hand-over of a batch to them, how a request
 * is cut into reads and how a finished read is judged (the same for both backends), and the
 * pread backend. The io_uring backend's loop is in ioeng_uring.c.
 *
 * A batch is a generation: submit publishes the request array and wakes every worker; each
 * takes requests through one atomic counter until none is left, keeps its reads in flight, and
 * reports its counters when its last read has ended; wait returns when every worker has. The
 * first error stops the batch (no new request is taken) but wait still waits for every read in
 * flight, so that nothing lands in the caller's memory after it returns.
 */
#define _GNU_SOURCE
#include "io/ioeng_impl.h"

#include "core/philox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The block assumed when neither the device nor the file system says (and the bounce slots'
 * alignment: a multiple of every logical block the engine accepts). */
#define DEFAULT_BLOCK 4096
/* The longest single read: a request longer than this is read in pieces (io_uring's result is
 * an int, and Linux caps one read near 2 GiB). */
#define MAX_READ ((int64_t)1 << 30)
/* Stack of a worker thread: small, since the thread backend may start a thousand of them. */
#define WORKER_STACK (256 * 1024)

static const char *const backend_names[GD__IOENG_BACKEND_COUNT] = {"auto", "io_uring", "threads"};

const char *gd__ioeng_backend_name(gd__ioeng_backend backend) {
    return (unsigned)backend < GD__IOENG_BACKEND_COUNT ? backend_names[backend] : NULL;
}

int gd__ioeng_backend_parse(const char *name) {
    return gd__name_index(backend_names, GD__IOENG_BACKEND_COUNT, name);
}

static int64_t align_down(int64_t x, int64_t a) { return x - x % a; }
static int64_t align_up(int64_t x, int64_t a) { return align_down(x + a - 1, a); }
static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* ------------------------------------------------------------------ files */

/*
 * The logical block and the destination alignment of an open file: the device's logical sector
 * for a block device; for a file, what statx says O_DIRECT needs (Linux 6.1 and later), else its
 * preferred I/O size; 4096 when nothing says.
 */
static void file_alignment(int fd, const struct stat *sb, int64_t *block, int64_t *mem_align) {
    *block = DEFAULT_BLOCK;
    *mem_align = 0;
    if (S_ISBLK(sb->st_mode)) {
        int lbs = 0;
        if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) *block = lbs;
    } else {
#ifdef STATX_DIOALIGN
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
            (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0) {
            *block = sx.stx_dio_offset_align;
            *mem_align = sx.stx_dio_mem_align;
        } else
#endif
            if (sb->st_blksize > 0) {
            *block = sb->st_blksize;
        }
    }
    if (*mem_align <= 0 || *mem_align > *block) *mem_align = *block;
}

/*
 * Open fd for path, with O_DIRECT when asked and allowed; *direct says which it got, *refused
 * whether O_DIRECT was asked for and refused (EINVAL: the file system cannot do it).
 */
static gd_status open_fd(const char *path, const gd__ioeng_options *o, int *fd, int *direct,
                         int *refused) {
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    *direct = *refused = 0;
    if (o->direct) {
        errno = EINVAL;
        *fd = (o->test_faults & GD__IOENG_TEST_NO_DIRECT) ? -1 : open(path, flags | O_DIRECT);
        if (*fd >= 0) {
            *direct = 1;
            return GD_OK;
        }
        if (errno != EINVAL) goto fail;
        *refused = 1;
    }
    *fd = open(path, flags);
    if (*fd >= 0) return GD_OK;
fail:
    return gd__error(errno == ENOENT ? GD_ERR_NOT_FOUND : GD_ERR_IO, "cannot open '%s': %s", path,
                     strerror(errno));
}

static gd_status open_file(gd__ioeng_fileinfo *f, const gd__ioeng_file *in,
                           const gd__ioeng_options *o) {
    gd_status st = GD_OK;
    GD_REQUIRE(in->path && *in->path, GD_ERR_INVALID_ARG, "gd__ioeng_open: a file without a path");
    f->path = gd__strdup(in->path);
    GD_REQUIRE(f->path, GD_ERR_NO_MEMORY, "out of memory copying the path '%s'", in->path);
    GD_REQUIRE(!gd__fault_hit(GD_FAULT_READ), GD_ERR_IO, "cannot open '%s': injected fault",
               in->path);
    int refused = 0;
    GD_CHECK(open_fd(in->path, o, &f->fd, &f->direct, &refused));
    struct stat sb;
    GD_REQUIRE(fstat(f->fd, &sb) == 0, GD_ERR_IO, "cannot stat '%s': %s", in->path,
               strerror(errno));
    GD_REQUIRE(S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode), GD_ERR_IO,
               "'%s' is neither a regular file nor a block device: the SSD tier reads features "
               "only from those",
               in->path);
    if (refused)
        GD_WARN("'%s': the file system refuses O_DIRECT; the SSD tier reads it through the page "
                "cache (slower, and it uses host memory)",
                in->path);
    /* O_NONBLOCK only kept a FIFO from blocking the open; reads of a file ignore it. */
    int fl = fcntl(f->fd, F_GETFL);
    if (fl >= 0) (void)fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK);
    int64_t bytes = (int64_t)sb.st_size;
    if (S_ISBLK(sb.st_mode)) {
        uint64_t dev_bytes = 0;
        GD_REQUIRE(ioctl(f->fd, BLKGETSIZE64, &dev_bytes) == 0, GD_ERR_IO,
                   "cannot read the size of the block device '%s': %s", in->path, strerror(errno));
        bytes = (int64_t)dev_bytes;
    }
    GD_REQUIRE(in->data_offset >= 0 && in->data_offset <= bytes, GD_ERR_RANGE,
               "'%s': data offset %lld is outside the file (%lld bytes)", in->path,
               (long long)in->data_offset, (long long)bytes);
    f->data_offset = in->data_offset;
    f->size = bytes - in->data_offset;
    file_alignment(f->fd, &sb, &f->block, &f->mem_align);
    if (f->direct && (!is_pow2(f->block) || f->block > GD__IOENG_BOUNCE_BYTES)) {
        /* The bounce slots hold whole blocks up to 64 KiB; no device has a larger sector. */
        GD_WARN("'%s': logical block %lld is not a power of two up to %d; reading it through the "
                "page cache",
                in->path, (long long)f->block, GD__IOENG_BOUNCE_BYTES);
        close(f->fd);
        f->fd = -1;
        gd__ioeng_options buffered = *o;
        buffered.direct = 0;
        GD_CHECK(open_fd(in->path, &buffered, &f->fd, &f->direct, &refused));
    }
fail:
    return st;
}

/* ------------------------------------------------------------ batch errors */

void gd__ioeng_fail(gd__ioeng *e, gd_status st, const char *fmt, ...) {
    char msg[sizeof e->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&e->mu);
    if (e->err_status == GD_OK) {
        e->err_status = st;
        memcpy(e->err, msg, sizeof msg);
    }
    pthread_mutex_unlock(&e->mu);
    atomic_store(&e->stop, 1);
}

/* ------------------------------------------------- requests into reads */

/* The aligned bounce slot `slot` of w, allocated at its first use. */
static unsigned char *bounce_slot(gd__ioeng_worker *w, int slot) {
    if (!w->bounce_raw[slot]) {
        w->bounce_raw[slot] = gd_malloc(GD__IOENG_BOUNCE_BYTES + DEFAULT_BLOCK);
        if (!w->bounce_raw[slot]) return NULL;
    }
    uintptr_t p = (uintptr_t)w->bounce_raw[slot];
    return (unsigned char *)(p + (DEFAULT_BLOCK - p % DEFAULT_BLOCK) % DEFAULT_BLOCK);
}

bool gd__ioeng_next_op(gd__ioeng_worker *w, int slot) {
    gd__ioeng *e = w->e;
    if (atomic_load(&e->stop)) return false;
    if (w->cur_req < 0 || w->cur_next >= e->reqs[w->cur_req].length) {
        do {
            int64_t i = atomic_fetch_add(&e->next_req, 1);
            if (i >= e->nreqs) return false;
            w->cur_req = i;
            w->cur_next = 0;
        } while (e->reqs[w->cur_req].length == 0);
    }
    const gd__ioeng_request *r = &e->reqs[w->cur_req];
    const gd__ioeng_fileinfo *f = &e->files[r->file];
    gd__ioeng_op *op = &w->ops[slot];
    int64_t start = f->data_offset + r->offset + w->cur_next;
    int64_t rest = r->length - w->cur_next;
    unsigned char *dst = (unsigned char *)r->dst + w->cur_next;
    *op = (gd__ioeng_op){.req = w->cur_req, .file = r->file, .pos = start};
    if (!f->direct || (start % f->block == 0 && rest % f->block == 0 &&
                       (uintptr_t)dst % (uintptr_t)f->mem_align == 0)) {
        /* Straight into the destination, in pieces of at most MAX_READ (a multiple of every
         * block, so each piece stays aligned). */
        op->len = op->need = gd__min64(rest, MAX_READ);
        op->buf = dst;
        w->cur_next += op->len;
        return true;
    }
    /* The covering aligned span, one bounce slot at a time. */
    int64_t span = align_down(start, f->block);
    int64_t want_end = gd__min64(start + rest, span + GD__IOENG_BOUNCE_BYTES);
    op->buf = bounce_slot(w, slot);
    if (!op->buf) {
        gd__ioeng_fail(e, GD_ERR_NO_MEMORY, "out of memory allocating a %d-byte bounce buffer "
                       "for unaligned reads of '%s'",
                       GD__IOENG_BOUNCE_BYTES + DEFAULT_BLOCK, f->path);
        return false;
    }
    op->pos = span;
    op->need = want_end - span;
    op->len = align_up(op->need, f->block);
    op->copy_dst = dst;
    op->copy_from = start - span;
    op->copy_len = want_end - start;
    w->cur_next += op->copy_len;
    w->bounced++;
    return true;
}

/* The test hooks' version of a completion (GD__IOENG_TEST_SHORT, _EAGAIN). */
static int64_t test_alter(const gd__ioeng *e, const gd__ioeng_fileinfo *f, gd__ioeng_op *op,
                          int64_t res) {
    int t = e->opts.test_faults;
    if ((t & GD__IOENG_TEST_EAGAIN) && op->faults < 2) return op->faults++ == 0 ? -EAGAIN : -EINTR;
    int64_t unit = f->direct ? f->block : 1;
    if ((t & GD__IOENG_TEST_SHORT) && res > unit) {
        /* What came beyond the shortened count is read again by the continuation. */
        op->faults++;
        return gd__max64(unit, align_down(res / 2, unit));
    }
    return res;
}

int gd__ioeng_complete(gd__ioeng_worker *w, gd__ioeng_op *op, int64_t res) {
    gd__ioeng *e = w->e;
    const gd__ioeng_fileinfo *f = &e->files[op->file];
    const gd__ioeng_request *r = &e->reqs[op->req];
    int64_t at = op->pos + op->done;
    if (e->opts.test_faults) res = test_alter(e, f, op, res);
    bool injected = res >= 0 && gd__fault_hit(GD_FAULT_READ);
    if (injected) res = -EIO;
    if (res == -EAGAIN || res == -EINTR) {
        w->retries++;
        return GD__OP_AGAIN;
    }
    if (res < 0) {
        gd__ioeng_fail(e, GD_ERR_IO,
                       "cannot read '%s' at byte %lld (%lld bytes, for request %lld of the "
                       "batch: offset %lld, %lld bytes): %s%s",
                       f->path, (long long)at, (long long)(op->len - op->done), (long long)op->req,
                       (long long)r->offset, (long long)r->length, strerror((int)-res),
                       injected ? " (injected fault)" : "");
        return GD__OP_FAILED;
    }
    w->bytes_read += res;
    op->done += res;
    if (op->done >= op->need) {
        if (op->copy_dst) memcpy(op->copy_dst, op->buf + op->copy_from, (size_t)op->copy_len);
        return GD__OP_DONE;
    }
    /*
     * Short. Under O_DIRECT a read stops short of its length only at the end of the file or on
     * a block boundary; only the second is continued (an unaligned continuation would fail).
     */
    int64_t unit = f->direct ? f->block : 1;
    if (res == 0 || (op->pos + op->done) % unit != 0) {
        gd__ioeng_fail(e, GD_ERR_IO,
                       "'%s' ends at byte %lld, before the %lld bytes that request %lld of the "
                       "batch reads at offset %lld (byte %lld of the file): the file was "
                       "truncated or replaced since it was opened (it had %lld bytes then)",
                       f->path, (long long)(op->pos + op->done), (long long)r->length,
                       (long long)op->req, (long long)r->offset,
                       (long long)(f->data_offset + r->offset),
                       (long long)(f->data_offset + f->size));
        return GD__OP_FAILED;
    }
    w->retries++;
    return GD__OP_AGAIN;
}

/* ---------------------------------------------------------- pread backend */

/* One read at a time: this thread's queue depth is one, the pool's is its thread count. */
static void threads_run(gd__ioeng_worker *w) {
    gd__ioeng_op *op = &w->ops[0];
    while (gd__ioeng_next_op(w, 0)) {
        int fd = w->e->files[op->file].fd;
        int c;
        do {
            w->reads++;
            ssize_t n = pread(fd, op->buf + op->done, (size_t)(op->len - op->done),
                              (off_t)(op->pos + op->done));
            c = gd__ioeng_complete(w, op, n < 0 ? -(int64_t)errno : (int64_t)n);
        } while (c == GD__OP_AGAIN);
        if (c == GD__OP_FAILED) return;
    }
}

/* ------------------------------------------------------------ the workers */

static void *worker_main(void *arg) {
    gd__ioeng_worker *w = arg;
    gd__ioeng *e = w->e;
    uint64_t seen = 0;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->quit && e->generation == seen) pthread_cond_wait(&e->go, &e->mu);
        if (e->quit) break;
        seen = e->generation;
        pthread_mutex_unlock(&e->mu);
        w->cur_req = -1;
        if (e->backend == GD__IOENG_URING)
            gd__ioeng_uring_run(w);
        else
            threads_run(w);
        pthread_mutex_lock(&e->mu);
        e->stats.reads += w->reads;
        e->stats.retries += w->retries;
        e->stats.bytes_read += w->bytes_read;
        e->stats.bounced += w->bounced;
        w->reads = w->retries = w->bytes_read = w->bounced = 0;
        if (--e->active == 0) pthread_cond_broadcast(&e->done);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* The backend's workers: rings for io_uring (NULL-free on failure), slots for both. */
static gd_status workers_alloc(gd__ioeng *e, int nworkers, int nslots) {
    gd_status st = GD_OK;
    GD_ALLOC(e->workers, (size_t)nworkers * sizeof *e->workers, "the I/O engine's workers");
    memset(e->workers, 0, (size_t)nworkers * sizeof *e->workers);
    e->nworkers = nworkers;
    for (int i = 0; i < nworkers; i++) {
        gd__ioeng_worker *w = &e->workers[i];
        w->e = e;
        w->nslots = nslots;
        w->ops = gd_calloc((size_t)nslots, sizeof *w->ops);
        w->bounce_raw = gd_calloc((size_t)nslots, sizeof *w->bounce_raw);
        w->free_slots = gd_calloc((size_t)nslots, sizeof *w->free_slots);
        GD_REQUIRE(w->ops && w->bounce_raw && w->free_slots, GD_ERR_NO_MEMORY,
                   "out of memory allocating %d read slots of the I/O engine", nslots);
    }
fail:
    return st;
}

static void workers_free(gd__ioeng *e) {
    for (int i = 0; i < e->nworkers; i++) {
        gd__ioeng_worker *w = &e->workers[i];
        gd__ioeng_uring_fini(w);
        for (int s = 0; w->bounce_raw && s < w->nslots; s++) gd_free(w->bounce_raw[s]);
        gd_free(w->ops);
        gd_free(w->bounce_raw);
        gd_free(w->free_slots);
    }
    gd_free(e->workers);
    e->workers = NULL;
    e->nworkers = 0;
}

/*
 * Pick the backend: io_uring rings when asked for or on auto (auto falls back to the pread
 * threads, with a log line, when the kernel refuses rings), else instances x queue_depth pread
 * threads (at most GD__IOENG_MAX_THREADS).
 */
static gd_status choose_backend(gd__ioeng *e) {
    gd_status st = GD_OK;
    const gd__ioeng_options *o = &e->opts;
    if (o->backend != GD__IOENG_THREADS) {
        GD_CHECK(workers_alloc(e, o->instances, o->queue_depth));
        for (int i = 0; i < e->nworkers && st == GD_OK; i++)
            st = gd__ioeng_uring_init(&e->workers[i], o->queue_depth);
        if (st == GD_OK) {
            e->backend = GD__IOENG_URING;
            return GD_OK;
        }
        workers_free(e);
        if (o->backend == GD__IOENG_URING || st != GD_ERR_UNSUPPORTED) goto fail;
        GD_INFO("I/O engine: %s; reading with pread threads instead", gd_last_error());
        gd_clear_error();
        st = GD_OK;
    }
    int64_t threads = (int64_t)o->instances * o->queue_depth;
    if (threads > GD__IOENG_MAX_THREADS) {
        GD_INFO("I/O engine: %lld pread threads asked for (%d instances x queue depth %d); "
                "starting %d",
                (long long)threads, o->instances, o->queue_depth, GD__IOENG_MAX_THREADS);
        threads = GD__IOENG_MAX_THREADS;
    }
    GD_CHECK(workers_alloc(e, (int)threads, 1));
    e->backend = GD__IOENG_THREADS;
fail:
    return st;
}

static gd_status workers_start(gd__ioeng *e) {
    gd_status st = GD_OK;
    pthread_attr_t attr;
    GD_REQUIRE(pthread_attr_init(&attr) == 0, GD_ERR_INTERNAL, "pthread_attr_init failed");
    (void)pthread_attr_setstacksize(&attr, WORKER_STACK);
    for (int i = 0; i < e->nworkers && st == GD_OK; i++) {
        int rc = pthread_create(&e->workers[i].thread, &attr, worker_main, &e->workers[i]);
        if (rc == 0)
            e->workers[i].started = 1;
        else
            st = gd__error(GD_ERR_NO_MEMORY, "cannot start I/O thread %d of %d: %s", i + 1,
                           e->nworkers, strerror(rc));
    }
    pthread_attr_destroy(&attr);
fail:
    return st;
}

/* ------------------------------------------------------------- open/close */

static gd_status check_options(const gd__ioeng_options *o) {
    gd_status st = GD_OK;
    GD_REQUIRE(o->queue_depth >= 1 && o->queue_depth <= GD__IOENG_MAX_DEPTH, GD_ERR_INVALID_ARG,
               "I/O engine: queue depth %d is outside [1, %d]", o->queue_depth,
               GD__IOENG_MAX_DEPTH);
    GD_REQUIRE(o->instances >= 1 && o->instances <= GD__IOENG_MAX_INSTANCES, GD_ERR_INVALID_ARG,
               "I/O engine: %d instances is outside [1, %d]", o->instances,
               GD__IOENG_MAX_INSTANCES);
    GD_REQUIRE((unsigned)o->backend < GD__IOENG_BACKEND_COUNT, GD_ERR_INVALID_ARG,
               "I/O engine: unknown backend %d", (int)o->backend);
fail:
    return st;
}

gd_status gd__ioeng_open(const gd__ioeng_file *files, int nfiles, const gd__ioeng_options *opts,
                         gd__ioeng **out) {
    gd_status st = GD_OK;
    gd__ioeng *e = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__ioeng_open: out is NULL");
    *out = NULL;
    GD_REQUIRE(files && nfiles > 0, GD_ERR_INVALID_ARG, "gd__ioeng_open: no files");
    e = gd_calloc(1, sizeof *e);
    GD_REQUIRE(e, GD_ERR_NO_MEMORY, "out of memory allocating the I/O engine");
    GD_REQUIRE(pthread_mutex_init(&e->mu, NULL) == 0, GD_ERR_INTERNAL,
               "I/O engine: cannot create its mutex");
    e->sync_ready = 1;
    GD_REQUIRE(pthread_cond_init(&e->go, NULL) == 0 && pthread_cond_init(&e->done, NULL) == 0,
               GD_ERR_INTERNAL, "I/O engine: cannot create its condition variables");
    e->sync_ready = 2;
    e->opts = (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
    if (opts)
        GD_CHECK(gd__options_in(&e->opts, sizeof e->opts, opts, 0, "gd__ioeng_open: options",
                                "GD__IOENG_OPTIONS_INIT"));
    GD_CHECK(check_options(&e->opts));
    e->stats = (gd__ioeng_stats)GD__IOENG_STATS_INIT;
    e->files = gd_calloc((size_t)nfiles, sizeof *e->files);
    GD_REQUIRE(e->files, GD_ERR_NO_MEMORY, "out of memory allocating %d files", nfiles);
    for (int i = 0; i < nfiles; i++) e->files[i].fd = -1;
    e->nfiles = nfiles;
    for (int i = 0; i < nfiles; i++) GD_CHECK(open_file(&e->files[i], &files[i], &e->opts));
    GD_CHECK(choose_backend(e));
    GD_CHECK(workers_start(e));
    GD_DEBUG("I/O engine: %d files, backend %s, %d workers, queue depth %d", nfiles,
             gd__ioeng_backend_name(e->backend), e->nworkers, e->opts.queue_depth);
    *out = e;
    return GD_OK;
fail:
    gd__ioeng_close(e);
    return st;
}

void gd__ioeng_close(gd__ioeng *e) {
    if (!e) return;
    bool any = false;
    for (int i = 0; i < e->nworkers; i++) any |= e->workers[i].started != 0;
    if (any) {
        (void)gd__ioeng_wait(e);
        pthread_mutex_lock(&e->mu);
        e->quit = 1;
        pthread_cond_broadcast(&e->go);
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < e->nworkers; i++)
            if (e->workers[i].started) pthread_join(e->workers[i].thread, NULL);
    }
    workers_free(e);
    if (e->sync_ready >= 1) pthread_mutex_destroy(&e->mu);
    if (e->sync_ready >= 2) {
        pthread_cond_destroy(&e->go);
        pthread_cond_destroy(&e->done);
    }
    for (int i = 0; e->files && i < e->nfiles; i++) {
        if (e->files[i].fd >= 0) close(e->files[i].fd);
        gd_free(e->files[i].path);
    }
    gd_free(e->files);
    gd_free(e);
}

gd__ioeng_backend gd__ioeng_backend_of(const gd__ioeng *e) { return e->backend; }

int64_t gd__ioeng_file_size(const gd__ioeng *e, int file) {
    return file >= 0 && file < e->nfiles ? e->files[file].size : -1;
}

int64_t gd__ioeng_file_block(const gd__ioeng *e, int file) {
    return file >= 0 && file < e->nfiles ? e->files[file].block : -1;
}

int gd__ioeng_file_direct(const gd__ioeng *e, int file) {
    return file >= 0 && file < e->nfiles ? e->files[file].direct : 0;
}

/* ---------------------------------------------------------------- batches */

static gd_status check_requests(const gd__ioeng *e, const gd__ioeng_request *reqs, int64_t n,
                                int64_t *bytes) {
    gd_status st = GD_OK;
    *bytes = 0;
    for (int64_t i = 0; i < n; i++) {
        const gd__ioeng_request *r = &reqs[i];
        GD_REQUIRE(r->file >= 0 && r->file < e->nfiles, GD_ERR_INVALID_ARG,
                   "I/O request %lld: file %d, but the engine has %d", (long long)i, (int)r->file,
                   e->nfiles);
        const gd__ioeng_fileinfo *f = &e->files[r->file];
        int64_t end;
        GD_REQUIRE(r->offset >= 0 && r->length >= 0 &&
                       !gd__add_overflow_i64(r->offset, r->length, &end) && end <= f->size,
                   GD_ERR_RANGE,
                   "I/O request %lld: bytes [%lld, +%lld) of '%s', which holds %lld bytes from "
                   "its data offset %lld",
                   (long long)i, (long long)r->offset, (long long)r->length, f->path,
                   (long long)f->size, (long long)f->data_offset);
        GD_REQUIRE(r->dst || r->length == 0, GD_ERR_INVALID_ARG,
                   "I/O request %lld: no destination for %lld bytes", (long long)i,
                   (long long)r->length);
        *bytes += r->length;
    }
fail:
    return st;
}

gd_status gd__ioeng_submit(gd__ioeng *e, const gd__ioeng_request *reqs, int64_t n) {
    gd_status st = GD_OK;
    int64_t bytes = 0;
    GD_REQUIRE(e && (reqs || n == 0) && n >= 0, GD_ERR_INVALID_ARG,
               "gd__ioeng_submit: no engine or no requests");
    GD_REQUIRE(!e->pending, GD_ERR_INVALID_ARG,
               "gd__ioeng_submit: the previous batch was not waited for");
    GD_CHECK(check_requests(e, reqs, n, &bytes));
    pthread_mutex_lock(&e->mu);
    e->reqs = reqs;
    e->nreqs = n;
    atomic_store(&e->next_req, 0);
    atomic_store(&e->stop, 0);
    e->err_status = GD_OK;
    e->err[0] = '\0';
    e->pending = 1;
    e->stats.batches++;
    e->stats.requests += n;
    e->stats.bytes_requested += bytes;
    if (n > 0) {
        e->active = e->nworkers;
        e->generation++;
        pthread_cond_broadcast(&e->go);
    }
    pthread_mutex_unlock(&e->mu);
fail:
    return st;
}

gd_status gd__ioeng_wait(gd__ioeng *e) {
    if (!e || !e->pending) return GD_OK;
    double t0 = gd__now();
    char msg[sizeof e->err];
    pthread_mutex_lock(&e->mu);
    while (e->active > 0) pthread_cond_wait(&e->done, &e->mu);
    e->pending = 0;
    e->reqs = NULL;
    gd_status st = e->err_status;
    memcpy(msg, e->err, sizeof msg);
    e->stats.wait_s += gd__now() - t0;
    pthread_mutex_unlock(&e->mu);
    return st == GD_OK ? GD_OK : gd__error(st, "%s", msg);
}

gd_status gd__ioeng_read(gd__ioeng *e, const gd__ioeng_request *reqs, int64_t n) {
    gd_status st = gd__ioeng_submit(e, reqs, n);
    return st == GD_OK ? gd__ioeng_wait(e) : st;
}

gd_status gd__ioeng_open_table(const char *path, int64_t data_offset,
                               const gd__ioeng_file *stripes, int num_stripes, int64_t stripe_rows,
                               int64_t rows, int64_t row_bytes, const gd__ioeng_options *opts,
                               const char *who, gd__stripes *geo, gd__ioeng **out) {
    gd_status st = GD_OK;
    gd__ioeng *e = NULL;
    *out = NULL;
    GD_REQUIRE((num_stripes > 0 ? stripes != NULL : path != NULL) && num_stripes >= 0 &&
                   (num_stripes <= 1 || stripe_rows > 0) && rows >= 0 && row_bytes > 0,
               GD_ERR_INVALID_ARG,
               "%s: a path (or stripes with rows per unit > 0), rows >= 0 and row bytes > 0 are "
               "needed",
               who);
    if (num_stripes > 0) {
        *geo = (gd__stripes){num_stripes, stripe_rows};
        GD_CHECK(gd__ioeng_open(stripes, num_stripes, opts, &e));
    } else {
        *geo = (gd__stripes){1, 0};
        const gd__ioeng_file f = {path, data_offset};
        GD_CHECK(gd__ioeng_open(&f, 1, opts, &e));
    }
    for (int k = 0; k < geo->nfiles; k++) {
        const int64_t need = gd__stripes_file_rows(geo, rows, k) * row_bytes;
        GD_REQUIRE(e->files[k].size >= need, GD_ERR_FORMAT,
                   "%s: '%s' holds %lld bytes from its data offset, too few for its %lld bytes "
                   "of the %lld rows of %lld bytes: the file is truncated or not this table",
                   who, e->files[k].path, (long long)e->files[k].size, (long long)need,
                   (long long)rows, (long long)row_bytes);
    }
    *out = e;
    return GD_OK;
fail:
    gd__ioeng_close(e);
    return st;
}

/* ---- rows by covering spans (gd__ioeng_read_rows) */

/* One span of a gd__ioeng_read_rows batch: rows[lo..hi) in one read. */
typedef struct {
    int64_t lo, hi;
} rows_span;

/*
 * The next span from rows[*next]: whole blocks from the first row's, grown over each next row
 * whose gap is small and that keeps the span within span_max; its request reads into at.
 */
static void rows_next_span(const gd__ioeng_fileinfo *f, int file, const int64_t *rows, int64_t n,
                           int64_t rb, int64_t span_max, int64_t *next, rows_span *sp,
                           gd__ioeng_request *rq, unsigned char *at) {
    const int64_t lo = *next, first = f->data_offset + rows[lo] * rb;
    const int64_t a = align_down(first, f->block);
    int64_t hi = lo + 1, end = first + rb;
    while (hi < n) {
        const int64_t s = f->data_offset + rows[hi] * rb;
        if (s - end > GD__IOENG_ROWS_GAP_BYTES || align_up(s + rb, f->block) - a > span_max) break;
        end = s + rb;
        hi++;
    }
    /* From the data offset on, and within the file: an unaligned end goes through the bounce
     * buffer, as any unaligned request does. */
    const int64_t start = a - f->data_offset < 0 ? 0 : a - f->data_offset;
    int64_t stop = align_up(end, f->block) - f->data_offset;
    if (stop > f->size) stop = f->size;
    *sp = (rows_span){lo, hi};
    *rq = (gd__ioeng_request){file, start, stop - start, at};
    *next = hi;
}

gd_status gd__ioeng_read_rows(gd__ioeng *e, int file, const int64_t *rows, int64_t n,
                              int64_t row_bytes, void *dst) {
    gd_status st = GD_OK;
    unsigned char *raw[2] = {NULL, NULL}, *buf[2], *out = dst;
    gd__ioeng_request reqs[2][GD__IOENG_ROWS_SPANS];
    rows_span spans[2][GD__IOENG_ROWS_SPANS];
    int count[2] = {0, 0}, cur = 0, pending = -1, in_flight = 0;
    int64_t next = 0;
    GD_REQUIRE(e && file >= 0 && file < e->nfiles && row_bytes > 0 && n >= 0 && (rows || n == 0) &&
                   (dst || n == 0),
               GD_ERR_INVALID_ARG,
               "gd__ioeng_read_rows: an engine, a file of it, row bytes > 0, rows and a "
               "destination are needed");
    if (n == 0) return GD_OK;
    const gd__ioeng_fileinfo *f = &e->files[file];
    const int64_t rb = row_bytes, have = f->size / rb;
    for (int64_t i = 0; i < n; i++)
        GD_REQUIRE(rows[i] >= 0 && rows[i] < have && (i == 0 || rows[i] > rows[i - 1]),
                   GD_ERR_INVALID_ARG, "reading rows of '%s': row %lld (position %lld) is %s",
                   f->path, (long long)rows[i], (long long)i,
                   rows[i] < 0 || rows[i] >= have ? "outside the file's rows"
                                                  : "not above the row before it (the rows "
                                                    "must be increasing and distinct)");
    {
        /* Spans hold one row at least; buffers are aligned for O_DIRECT. */
        int64_t align = DEFAULT_BLOCK;
        if (f->block > align) align = f->block;
        if (f->mem_align > align) align = f->mem_align;
        int64_t span_max = align_up(rb, f->block) + f->block;
        if (span_max < GD__IOENG_ROWS_SPAN_BYTES) span_max = GD__IOENG_ROWS_SPAN_BYTES;
        const int64_t stride = align_up(span_max, align);
        for (int k = 0; k < 2; k++) {
            GD_ALLOC(raw[k], (size_t)(GD__IOENG_ROWS_SPANS * stride + align), "row spans");
            const uintptr_t p = (uintptr_t)raw[k];
            buf[k] = raw[k] + (align - (int64_t)(p % (uintptr_t)align)) % align;
        }
        while (next < n || pending >= 0) {
            count[cur] = 0;
            while (next < n && count[cur] < GD__IOENG_ROWS_SPANS) {
                const int c = count[cur]++;
                rows_next_span(f, file, rows, n, rb, span_max, &next, &spans[cur][c], &reqs[cur][c],
                               buf[cur] + c * stride);
            }
            if (in_flight) {
                in_flight = 0;
                GD_CHECK(gd__ioeng_wait(e));
            }
            if (count[cur] > 0) {
                GD_CHECK(gd__ioeng_submit(e, reqs[cur], count[cur]));
                in_flight = 1;
            }
            /* The finished batch's rows, while the next one is read. */
            if (pending >= 0)
                for (int c = 0; c < count[pending]; c++) {
                    const gd__ioeng_request *q = &reqs[pending][c];
                    for (int64_t r = spans[pending][c].lo; r < spans[pending][c].hi; r++)
                        memcpy(out + r * rb, (unsigned char *)q->dst + (rows[r] * rb - q->offset),
                               (size_t)rb);
                }
            pending = count[cur] > 0 ? cur : -1;
            cur ^= 1;
        }
    }
fail:
    /* A batch still submitted ends before its spans are freed. */
    if (in_flight) (void)gd__ioeng_wait(e);
    gd_free(raw[0]);
    gd_free(raw[1]);
    return st;
}

void gd__ioeng_stats_get(gd__ioeng *e, gd__ioeng_stats *out) {
    gd__ioeng_stats s = GD__IOENG_STATS_INIT;
    if (e) {
        pthread_mutex_lock(&e->mu);
        s = e->stats;
        pthread_mutex_unlock(&e->mu);
    }
    size_t n = out->size >= sizeof(size_t) && out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, n);
    out->size = n;
}

void gd__ioeng_stats_reset(gd__ioeng *e) {
    pthread_mutex_lock(&e->mu);
    e->stats = (gd__ioeng_stats)GD__IOENG_STATS_INIT;
    pthread_mutex_unlock(&e->mu);
}

/* ---- the depth probe (Little's law) */

int gd__ioeng_pick_depth(const int *depths, const double *rates, int n) {
    double best = 0;
    for (int i = 0; i < n; i++) best = rates[i] > best ? rates[i] : best;
    for (int i = 0; i < n; i++)
        if (rates[i] >= 0.95 * best) return depths[i];
    return n > 0 ? depths[n - 1] : 1;
}

gd_status gd__ioeng_probe_depth(const char *path, int64_t data_offset, int64_t read_bytes,
                                const gd__ioeng_options *opts, double budget_s, uint64_t seed,
                                int *depth, double *rates) {
    static const int depths[GD__IOENG_PROBE_DEPTHS] = {1, 4, 16, 64, 256, 1024};
    gd_status st = GD_OK;
    gd__ioeng *e = NULL;
    gd__ioeng_request *reqs = NULL;
    unsigned char *buf = NULL;
    double measured[GD__IOENG_PROBE_DEPTHS] = {0};
    const gd__ioeng_file f = {path, data_offset};
    gd__ioeng_options o = opts ? *opts : (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
    GD_REQUIRE(read_bytes > 0 && depth && budget_s >= 0, GD_ERR_INVALID_ARG,
               "I/O engine probe: %lld-byte reads; give a size > 0", (long long)read_bytes);
    const int64_t span = (read_bytes + 4095) / 4096 * 4096;
    /* Four reads per slot of the deepest queue, within 64 MiB of buffer. */
    int64_t most = 4 * depths[GD__IOENG_PROBE_DEPTHS - 1];
    if (most * span > ((int64_t)64 << 20)) most = gd__max64(4, ((int64_t)64 << 20) / span);
    GD_ALLOC(reqs, (size_t)most * sizeof *reqs, "the depth probe's reads");
    GD_ALLOC(buf, (size_t)(most * span + 4096), "the depth probe's buffer");
    unsigned char *dst = (unsigned char *)(((uintptr_t)buf + 4095) & ~(uintptr_t)4095);
    uint64_t draw = 0;
    for (int k = 0; k < GD__IOENG_PROBE_DEPTHS; k++) {
        o.queue_depth = depths[k];
        /* The thread backend runs instances x depth threads: stop where it would refuse. */
        if (o.backend == GD__IOENG_THREADS &&
            (int64_t)o.instances * o.queue_depth > GD__IOENG_MAX_THREADS)
            break;
        GD_CHECK(gd__ioeng_open(&f, 1, &o, &e));
        const int64_t size = gd__ioeng_file_size(e, 0), block = gd__ioeng_file_block(e, 0);
        const int64_t places = (size - span) / block;
        GD_REQUIRE(places > 0, GD_ERR_INVALID_ARG,
                   "I/O engine probe: '%s' holds %lld bytes, too few for reads of %lld",
                   path, (long long)size, (long long)span);
        const int64_t n = gd__min64(4 * depths[k], most);
        int64_t done = 0;
        const double t0 = gd__now();
        do {
            for (int64_t i = 0; i < n; i++) {
                const gd_philox_ctr r = gd_philox(seed, (uint32_t)draw, (uint32_t)(draw >> 32),
                                                  0, 0x70726f62u /* "prob" */);
                draw++;
                const uint64_t x = ((uint64_t)r.v[1] << 32) | r.v[0];
                reqs[i] = (gd__ioeng_request){0, (int64_t)(x % (uint64_t)places) * block, span,
                                              dst + i * span};
            }
            GD_CHECK(gd__ioeng_read(e, reqs, n));
            done += n;
        } while (gd__now() - t0 < budget_s / GD__IOENG_PROBE_DEPTHS);
        measured[k] = (double)done / (gd__now() - t0);
        gd__ioeng_close(e);
        e = NULL;
    }
    int tried = 0;
    while (tried < GD__IOENG_PROBE_DEPTHS && measured[tried] > 0) tried++;
    *depth = gd__ioeng_pick_depth(depths, measured, tried);
    if (rates) memcpy(rates, measured, sizeof measured);
fail:
    gd__ioeng_close(e);
    gd_free(buf);
    gd_free(reqs);
    return st;
}
