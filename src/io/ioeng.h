/*
 * The host I/O engine of the SSD tier (docs/feature_store.md, "The I/O engine"). Features larger
 * than host memory stay in files; after sampling, the GPU lists the rows it misses, and this
 * engine reads them from the files into pinned staging memory that the GPU then reads. It is a
 * batch reader over one or several files (a feature table striped across disks): the caller
 * hands it a batch of requests {file, offset, length, destination}, the engine keeps up to
 * queue_depth reads in flight per instance until every request is complete, and the batch
 * either succeeds with every byte in place or fails naming the file, the offset and the reason.
 * A batch is never partly reported as success.
 *
 * Files are opened with O_DIRECT (no page cache, no page faults) when the file system allows
 * it; when O_DIRECT is refused the file is read through the page cache and the log says so.
 * O_DIRECT reads must start, end and land on multiples of the file's logical block. A request
 * whose file offset, length and destination are all multiples of it is read straight into its
 * destination; any other request is read as the covering aligned span into an engine-owned
 * aligned bounce buffer, and the wanted bytes are copied out. The SSD tier should therefore ask
 * for aligned rows into aligned staging (the dataset's feature data starts at a 4 KiB offset;
 * 512 B and 4 KiB rows are aligned) so that no byte is copied or read twice; unaligned requests
 * work, at the price of the copy and of the extra bytes of the span. Adjacent requests are not
 * merged: one request is one read (or, through the bounce buffer, one read per 64 KiB of span).
 *
 * Two backends with the same semantics: io_uring (liburing; one ring and one thread per
 * instance, queue_depth reads in flight on each), built when CMake finds liburing
 * (GD_WITH_URING), and a pool of threads that each make one pread at a time (instances x
 * queue_depth threads), which works everywhere. Short reads are continued where they stopped,
 * EAGAIN and EINTR are retried, and anything else (EIO, a file that ends before the requested
 * bytes) fails the batch with GD_ERR_IO.
 *
 * This header names only plain types and the public header's, so that the benchmark of the raw
 * disk (bench/bench_disk.c) can drive the engine as the SSD tier does.
 */
#ifndef GD_IO_IOENG_H
#define GD_IO_IOENG_H

#include "graphdirect.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd__ioeng gd__ioeng;

typedef enum {
    GD__IOENG_AUTO = 0,    /* io_uring when built and the kernel allows it, else threads */
    GD__IOENG_URING = 1,   /* io_uring, or fail (GD_ERR_UNSUPPORTED) */
    GD__IOENG_THREADS = 2, /* the pread thread pool */
    GD__IOENG_BACKEND_COUNT = 3
} gd__ioeng_backend;

/* "auto", "io_uring", "threads"; NULL out of range. */
const char *gd__ioeng_backend_name(gd__ioeng_backend backend);
/* The backend named name, or -1. */
int gd__ioeng_backend_parse(const char *name);

/* One file of the table: its path and the byte where its data starts (request offsets count
 * from there: a .npy file's data offset). */
typedef struct {
    const char *path;
    int64_t data_offset;
} gd__ioeng_file;

/*
 * Test hooks (gd__ioeng_options.test_faults): the completion of a read is altered as if the
 * kernel had answered so, on every read of the batch, so that tests reach the retry paths
 * that real disks rarely take. A failing read (EIO) is GD_FAULT_READ's fault injection: the
 * n-th open or completed read of the process fails.
 */
enum {
    GD__IOENG_TEST_SHORT = 1,     /* every read longer than a block returns half its bytes */
    GD__IOENG_TEST_EAGAIN = 2,    /* every read's first completion is -EAGAIN, its second -EINTR */
    GD__IOENG_TEST_NO_DIRECT = 4  /* O_DIRECT is refused (EINVAL) at open, as tmpfs once did */
};

typedef struct {
    size_t size;
    int queue_depth;           /* reads in flight per instance, 1..4096 (default 128) */
    int instances;             /* io_uring rings (threads), 1..64 (default 1) */
    gd__ioeng_backend backend; /* default auto */
    int direct;                /* 1: O_DIRECT where allowed (default); 0: page cache */
    int test_faults;           /* GD__IOENG_TEST_* bits; 0 outside tests */
} gd__ioeng_options;
#define GD__IOENG_OPTIONS_INIT {sizeof(gd__ioeng_options), 128, 1, GD__IOENG_AUTO, 1, 0}

/* Most reads in flight per instance, instances, and threads of the thread backend. */
#define GD__IOENG_MAX_DEPTH 4096
#define GD__IOENG_MAX_INSTANCES 64
#define GD__IOENG_MAX_THREADS 1024
/* The largest read made through the bounce buffer (one slot of it). */
#define GD__IOENG_BOUNCE_BYTES (64 * 1024)

/*
 * Open the engine over files[0..nfiles): every file is opened (a regular file or a block
 * device), its size and logical block are read, and the backend's rings or threads are
 * started. Fails with GD_ERR_NOT_FOUND / GD_ERR_IO naming an unopenable file, or
 * GD_ERR_UNSUPPORTED when the io_uring backend was asked for and is not available (the message
 * says why).
 */
gd_status gd__ioeng_open(const gd__ioeng_file *files, int nfiles, const gd__ioeng_options *opts,
                         gd__ioeng **out);
/* Close the files and stop the threads; waits for a batch still in flight. NULL is a no-op. */
void gd__ioeng_close(gd__ioeng *e);

/* The backend that runs (io_uring or threads, never auto). */
gd__ioeng_backend gd__ioeng_backend_of(const gd__ioeng *e);
/* File i's size in bytes at open (from its data offset on), logical block, and whether it is
 * read with O_DIRECT. */
int64_t gd__ioeng_file_size(const gd__ioeng *e, int file);
int64_t gd__ioeng_file_block(const gd__ioeng *e, int file);
int gd__ioeng_file_direct(const gd__ioeng *e, int file);

/*
 * A table of rows striped over several files (disks): unit u, the rows [u x unit_rows,
 * (u + 1) x unit_rows), lives in file u mod nfiles as that file's unit u / nfiles, so that
 * random rows spread evenly over the disks and each file holds its units back to back. One
 * file (nfiles <= 1) is the plain layout. The files are the engine's, in order.
 */
typedef struct {
    int nfiles;
    int64_t unit_rows; /* > 0 when nfiles > 1 */
} gd__stripes;

/* Where row `row` of a striped table lives: its file and its row within that file. */
static inline void gd__stripes_locate(const gd__stripes *s, int64_t row, int *file,
                                      int64_t *local) {
    if (s->nfiles <= 1) {
        *file = 0;
        *local = row;
        return;
    }
    const int64_t u = row / s->unit_rows;
    *file = (int)(u % s->nfiles);
    *local = u / s->nfiles * s->unit_rows + row % s->unit_rows;
}

/* The rows of file `file` in a striped table of `rows` rows. */
static inline int64_t gd__stripes_file_rows(const gd__stripes *s, int64_t rows, int file) {
    if (s->nfiles <= 1) return rows;
    const int64_t whole = rows / s->unit_rows, rest = rows % s->unit_rows;
    int64_t n = (whole / s->nfiles + (file < whole % s->nfiles)) * s->unit_rows;
    if (rest > 0 && file == (int)(whole % s->nfiles)) n += rest;
    return n;
}

/* One read: length bytes at offset (from the file's data offset) of file into dst. */
typedef struct {
    int32_t file;
    int64_t offset;
    int64_t length;
    void *dst;
} gd__ioeng_request;

/* The read of row `row` of a striped table of row_bytes-byte rows into dst: from its file. */
static inline gd__ioeng_request gd__stripes_request(const gd__stripes *s, int64_t row,
                                                    int64_t row_bytes, void *dst) {
    int file;
    int64_t local;
    gd__stripes_locate(s, row, &file, &local);
    const gd__ioeng_request r = {file, local * row_bytes, row_bytes, dst};
    return r;
}

/*
 * The engine over a table of rows x row_bytes: in one file (path, its rows from data_offset),
 * or striped over num_stripes files (stripes, units of stripe_rows rows; path unused). Every
 * file is checked to hold its share of the rows (GD_ERR_FORMAT naming the file, after `who`);
 * *geo gets the layout. A bad layout is GD_ERR_INVALID_ARG.
 */
gd_status gd__ioeng_open_table(const char *path, int64_t data_offset,
                               const gd__ioeng_file *stripes, int num_stripes, int64_t stripe_rows,
                               int64_t rows, int64_t row_bytes, const gd__ioeng_options *opts,
                               const char *who, gd__stripes *geo, gd__ioeng **out);

/*
 * Start reading reqs[0..n): returns once the batch is handed to the engine's threads. The
 * request array and every destination must stay untouched until gd__ioeng_wait returns. One
 * batch at a time: a second submit before the wait fails with GD_ERR_INVALID_ARG. Requests are
 * checked first (file index, offsets and lengths within the file's size at open, destination
 * set); a bad one fails the submit, naming it, and nothing is read.
 */
gd_status gd__ioeng_submit(gd__ioeng *e, const gd__ioeng_request *reqs, int64_t n);
/*
 * Wait for the batch submitted last: GD_OK when every request is complete; otherwise the first
 * error (GD_ERR_IO naming the file, the offset and the system's reason), after every read of the
 * batch has ended, so that nothing writes to the destinations any more. GD_OK with no batch.
 */
gd_status gd__ioeng_wait(gd__ioeng *e);
/* Submit and wait. */
gd_status gd__ioeng_read(gd__ioeng *e, const gd__ioeng_request *reqs, int64_t n);

/*
 * Rows rows[0..n) of row_bytes bytes of file (row r at offset r x row_bytes), into dst + i x
 * row_bytes for rows[i]. The rows must be in range, increasing and distinct (GD_ERR_INVALID_ARG
 * otherwise, nothing read). Rows lying near each other are read together: a covering span of
 * whole blocks, at most GD__IOENG_ROWS_SPAN_BYTES (or one row) long, grows over the next row
 * while the gap to it is at most GD__IOENG_ROWS_GAP_BYTES, and the rows are copied out of it;
 * spans go to the engine GD__IOENG_ROWS_SPANS at a time, the rows of one batch copied out while
 * the next is read. So a dense set of small rows (a host buffer of the hottest rows) costs about
 * one sequential pass over the file, not one random read a row. Errors are the batch's (file
 * and offset named); dst is then partly written.
 */
#define GD__IOENG_ROWS_SPAN_BYTES ((int64_t)1 << 20)
#define GD__IOENG_ROWS_GAP_BYTES ((int64_t)32 << 10)
#define GD__IOENG_ROWS_SPANS 32
gd_status gd__ioeng_read_rows(gd__ioeng *e, int file, const int64_t *rows, int64_t n,
                              int64_t row_bytes, void *dst);

/* Counters since open (or the last reset), summed over finished batches. */
typedef struct {
    size_t size;
    int64_t batches;
    int64_t requests;
    int64_t bytes_requested; /* what the requests asked for */
    int64_t bytes_read;      /* what the files gave: aligned spans, short reads, retries */
    int64_t reads;           /* reads issued, retries included */
    int64_t retries;         /* reads issued again after EAGAIN, EINTR or a short read */
    int64_t bounced;         /* reads made through the bounce buffer */
    double wait_s;           /* time callers spent in gd__ioeng_wait */
} gd__ioeng_stats;
#define GD__IOENG_STATS_INIT {sizeof(gd__ioeng_stats), 0, 0, 0, 0, 0, 0, 0, 0.0}

void gd__ioeng_stats_get(gd__ioeng *e, gd__ioeng_stats *out);
void gd__ioeng_stats_reset(gd__ioeng *e);

/*
 * The queue depth to read with (issue 16, item 3, Little's law): reads in flight = throughput
 * x latency, so the depth that reaches 95 % of the device's peak rate is what the engine needs,
 * and more only adds latency. The rule, pure: of the depths probed (increasing) and the reads
 * per second measured at each, the smallest depth whose rate is >= 0.95 of the highest.
 */
int gd__ioeng_pick_depth(const int *depths, const double *rates, int n);
#define GD__IOENG_PROBE_DEPTHS 6
/*
 * Measure it on file (path, data_offset), reading random aligned spans of read_bytes with the
 * backend and instances of opts at the depths 1, 4, 16, 64, 256 and 1024 (each about
 * budget_s / 6 seconds, at least 4 x depth reads), and pick by the rule above. rates (room for
 * GD__IOENG_PROBE_DEPTHS, optional) gets each depth's reads per second. The reads go through
 * the page cache when O_DIRECT is refused, as the engine's do.
 */
gd_status gd__ioeng_probe_depth(const char *path, int64_t data_offset, int64_t read_bytes,
                                const gd__ioeng_options *opts, double budget_s, uint64_t seed,
                                int *depth, double *rates);

#ifdef __cplusplus
}
#endif

#endif /* GD_IO_IOENG_H */
