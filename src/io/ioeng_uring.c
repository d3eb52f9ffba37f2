/*
 * The io_uring backend of the I/O engine (ioeng.h): one ring per worker thread, queue_depth
 * reads in flight on it. The loop fills every free slot with the next read of the batch, submits
 * them and waits for at least one completion in one system call, then judges every completion
 * it finds (gd__ioeng_complete, shared with the pread backend): a read that must go on is
 * prepared again in place, a finished one frees its slot. Built with liburing (GD_WITH_URING);
 * without it the backend reports itself unavailable and the engine's auto choice takes the
 * pread threads.
 */
#include "io/ioeng_impl.h"

#include <errno.h>
#include <string.h>

#ifdef GD_WITH_URING
#include <liburing.h>

gd_status gd__ioeng_uring_init(gd__ioeng_worker *w, int depth) {
    struct io_uring *ring = gd_calloc(1, sizeof *ring);
    if (!ring) return gd__error(GD_ERR_NO_MEMORY, "out of memory allocating an io_uring");
    int rc = io_uring_queue_init((unsigned)depth, ring, 0);
    if (rc < 0) {
        gd_free(ring);
        char limit[64];
        gd__memlock_text(limit, sizeof limit);
        const char *why =
            rc == -ENOMEM ? " (kernels before 5.12 charge rings to the locked-memory limit, "
                            "ulimit -l, which is "
            : rc == -EPERM || rc == -ENOSYS
                ? " (io_uring is off on this system: the sysctl kernel.io_uring_disabled, or "
                  "the container's seccomp filter"
                : NULL;
        return gd__error(GD_ERR_UNSUPPORTED, "io_uring_queue_init(%d entries) failed: %s%s%s%s",
                         depth, strerror(-rc), why ? why : "",
                         why && rc == -ENOMEM ? limit : "", why ? ")" : "");
    }
    w->ring = ring;
    return GD_OK;
}

void gd__ioeng_uring_fini(gd__ioeng_worker *w) {
    if (!w->ring) return;
    io_uring_queue_exit(w->ring);
    gd_free(w->ring);
    w->ring = NULL;
}

/* Queue the rest of ops[slot]'s read. The ring has a submission entry for every slot, so one
 * is always free. */
static void prepare(gd__ioeng_worker *w, int slot) {
    struct io_uring *ring = w->ring;
    gd__ioeng_op *op = &w->ops[slot];
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        io_uring_submit(ring);
        sqe = io_uring_get_sqe(ring);
    }
    io_uring_prep_read(sqe, w->e->files[op->file].fd, op->buf + op->done,
                       (unsigned)(op->len - op->done), (uint64_t)(op->pos + op->done));
    io_uring_sqe_set_data(sqe, (void *)(uintptr_t)slot);
    w->reads++;
}

/*
 * The ring failed outright (not one read: the submission itself). The reads the kernel took
 * are waited for, since they write into the caller's memory; the ring is then made anew, so
 * that entries it never took do not leak into the next batch.
 */
static void ring_broken(gd__ioeng_worker *w, int rc, int inflight) {
    struct io_uring *ring = w->ring;
    gd__ioeng_fail(w->e, GD_ERR_IO, "io_uring submission failed: %s", strerror(-rc));
    int taken = inflight - (int)io_uring_sq_ready(ring);
    for (int i = 0; i < taken; i++) {
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(ring, &cqe) != 0) break;
        io_uring_cqe_seen(ring, cqe);
    }
    int depth = w->nslots;
    gd__ioeng_uring_fini(w);
    if (gd__ioeng_uring_init(w, depth) != GD_OK) gd_clear_error();
}

void gd__ioeng_uring_run(gd__ioeng_worker *w) {
    if (!w->ring) {
        gd__ioeng_fail(w->e, GD_ERR_IO, "an io_uring of the I/O engine could not be rebuilt "
                                        "after a failure: close and reopen the engine");
        return;
    }
    struct io_uring *ring = w->ring;
    int nfree = w->nslots, inflight = 0;
    bool more = true;
    for (int s = 0; s < w->nslots; s++) w->free_slots[s] = w->nslots - 1 - s;
    for (;;) {
        while (more && nfree > 0) {
            int slot = w->free_slots[nfree - 1];
            if (!gd__ioeng_next_op(w, slot)) {
                more = false;
                break;
            }
            nfree--;
            prepare(w, slot);
            inflight++;
        }
        if (inflight == 0) return;
        int rc = io_uring_submit_and_wait(ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            ring_broken(w, rc, inflight);
            return;
        }
        unsigned head, seen = 0;
        struct io_uring_cqe *cqe;
        io_uring_for_each_cqe(ring, head, cqe) {
            int slot = (int)(uintptr_t)io_uring_cqe_get_data(cqe);
            int c = gd__ioeng_complete(w, &w->ops[slot], cqe->res);
            if (c == GD__OP_AGAIN) {
                prepare(w, slot);
            } else {
                w->free_slots[nfree++] = slot;
                inflight--;
            }
            seen++;
        }
        io_uring_cq_advance(ring, seen);
        if (atomic_load(&w->e->stop)) more = false;
    }
}

#else

gd_status gd__ioeng_uring_init(gd__ioeng_worker *w, int depth) {
    (void)w;
    (void)depth;
    return gd__error(GD_ERR_UNSUPPORTED, "this build has no io_uring backend (liburing was not "
                                         "found at configure time: apt-get install liburing-dev "
                                         "and reconfigure)");
}

void gd__ioeng_uring_run(gd__ioeng_worker *w) {
    gd__ioeng_fail(w->e, GD_ERR_UNSUPPORTED, "this build has no io_uring backend");
}

void gd__ioeng_uring_fini(gd__ioeng_worker *w) { (void)w; }

#endif
