/*
 * What the two halves of the I/O engine share: ioeng.c (files, batches, the worker threads, how a
 * request is cut into reads and how a completed read is judged, the pread backend) and
 * ioeng_uring.c (the io_uring backend's loop). A worker is one thread; it takes requests from the
 * batch one at a time through an atomic counter, so that a slow disk region never leaves one
 * worker with all the work, and turns each into reads (ops) in its own slots: queue_depth slots
 * for an io_uring worker, one for a pread thread.
 */
#ifndef GD_IO_IOENG_IMPL_H
#define GD_IO_IOENG_IMPL_H

#include "core/internal.h"
#include "io/ioeng.h"

#include <pthread.h>
#include <stdatomic.h>

/* A file of the engine as opened. */
typedef struct {
    char *path;
    int fd;
    int direct;          /* opened with O_DIRECT */
    int64_t data_offset; /* absolute byte of request offset 0 */
    int64_t size;        /* bytes from data_offset on, at open */
    int64_t block;       /* logical block: O_DIRECT offsets and lengths are multiples of it */
    int64_t mem_align;   /* O_DIRECT destinations are multiples of it */
} gd__ioeng_fileinfo;

/*
 * One read in flight: a piece of request `req`, bytes [pos, pos + len) of the file (aligned
 * when the file is read with O_DIRECT), landing at buf. Bytes [pos, pos + need) are the ones the
 * request wants (need <= len: a span rounded up to the block may run past the end of the file).
 * With copy_dst set, buf is a bounce slot and copy_len bytes at buf + copy_from go to copy_dst.
 */
typedef struct {
    int64_t req;
    int32_t file;
    int64_t pos, len, need, done;
    unsigned char *buf;
    unsigned char *copy_dst;
    int64_t copy_from, copy_len;
    int faults; /* completions the test hooks altered */
} gd__ioeng_op;

typedef struct {
    struct gd__ioeng *e;
    pthread_t thread;
    int started;
    int nslots;
    gd__ioeng_op *ops;      /* nslots */
    void **bounce_raw;      /* nslots: the gd_malloc'd bounce buffers, NULL until first used */
    int *free_slots;        /* a stack of free slot numbers (io_uring) */
    int64_t cur_req;        /* the request being cut into reads; -1 none */
    int64_t cur_next;       /* its next wanted byte */
    int64_t reads, retries, bytes_read, bounced; /* this batch's counters */
    void *ring;             /* struct io_uring * of the io_uring backend */
} gd__ioeng_worker;

struct gd__ioeng {
    gd__ioeng_options opts;
    gd__ioeng_backend backend;
    int nfiles;
    gd__ioeng_fileinfo *files;
    int nworkers;
    gd__ioeng_worker *workers;
    /* The batch, handed to the workers under mu. */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int sync_ready; /* 1: mu initialised, 2: the condition variables too */
    uint64_t generation;
    int active, quit, pending;
    const gd__ioeng_request *reqs;
    int64_t nreqs;
    atomic_llong next_req;
    atomic_int stop;
    gd_status err_status;
    char err[640];
    gd__ioeng_stats stats;
};

/* What gd__ioeng_complete decided about a read that ended. */
enum { GD__OP_DONE = 0, GD__OP_AGAIN = 1, GD__OP_FAILED = 2 };

/*
 * Cut the worker's next read into ops[slot], taking a new request from the batch when the
 * current one is used up. False when the batch has no more (or a worker failed: the batch
 * stops), or when the bounce slot could not be allocated (the batch fails).
 */
bool gd__ioeng_next_op(gd__ioeng_worker *w, int slot);
/*
 * Judge a read of op that returned res (bytes, or -errno): DONE (its bytes are in place),
 * AGAIN (issue the rest: op->len - op->done bytes at op->pos + op->done into op->buf +
 * op->done), or FAILED (the batch's error is recorded).
 */
int gd__ioeng_complete(gd__ioeng_worker *w, gd__ioeng_op *op, int64_t res);
/* Record the batch's first error (the later ones are dropped) and stop the batch. */
void gd__ioeng_fail(struct gd__ioeng *e, gd_status st, const char *fmt, ...) GD_PRINTF(3, 4);

/* The io_uring backend (ioeng_uring.c): GD_ERR_UNSUPPORTED without liburing. */
gd_status gd__ioeng_uring_init(gd__ioeng_worker *w, int depth);
void gd__ioeng_uring_run(gd__ioeng_worker *w);
void gd__ioeng_uring_fini(gd__ioeng_worker *w);

#endif /* GD_IO_IOENG_IMPL_H */
