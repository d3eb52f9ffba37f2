/*
 * GPU memory shared among the ranks of a communicator on one host (issue 14, the `partition` and
 * `auto` placements): whether every GPU of the group can read every other's memory, and each
 * rank's view of a buffer every rank offers (its GPU cache). Ranks in one process (a context
 * group) use each other's pointers after enabling peer access; ranks in different processes
 * exchange CUDA IPC handles through the communicator's host all-gather and open them. GPUs are
 * matched by PCI id, so processes that number the GPUs differently (CUDA_VISIBLE_DEVICES) agree.
 * Every function here is collective: all ranks call it, and all return the same status.
 */
#ifndef GD_CORE_PEERS_H
#define GD_CORE_PEERS_H

#include "core/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GD__PEERS_MAX 64

/* Each rank's buffer as this rank's GPU addresses it. */
typedef struct gd__peer_view_s {
    int world, rank, device;
    const void *ptr[GD__PEERS_MAX];      /* NULL: that rank offered nothing; [rank]: mine */
    int64_t units[GD__PEERS_MAX];        /* what each rank said its buffer holds */
    unsigned char opened[GD__PEERS_MAX]; /* 1: an IPC mapping gd__peers_close closes */
} gd__peer_view;

/*
 * *all = 1 when every rank's GPU can read every other rank's GPU memory (the same host, the GPU
 * visible to each process, peer access between each pair), else 0 with *why saying which pair
 * cannot (why_n bytes). Both the same on every rank.
 */
gd_status gd__peers_access(gd__comm *c, int device, int *all, char *why, size_t why_n);

/*
 * Offer mine (a cudaMalloc buffer of device, NULL: nothing) with units, and map every other
 * rank's offer into *v. Call after gd__peers_access said yes. A rank that cannot map a buffer
 * makes every rank fail, with its message on that rank and "rank R failed" on the others.
 */
gd_status gd__peers_share(gd__comm *c, int device, const void *mine, int64_t units,
                          gd__peer_view *v);

/* Close v's IPC mappings (best effort); after every kernel that reads them has finished. */
void gd__peers_close(gd__peer_view *v);

/*
 * Wait until every rank has reached this point (a host sum), so that a rank frees a buffer it
 * shared only after the others stopped reading it. An aborted communicator returns at once.
 */
void gd__peers_barrier(gd__comm *c);

/*
 * Each rank passes its own status: every rank returns GD_OK when all passed GD_OK, its own error
 * when it failed, and GD_ERR_COMM ("another rank failed <what>") when only others did.
 */
gd_status gd__peers_agree(gd__comm *c, gd_status mine, const char *what);

#ifdef __cplusplus
}
#endif

#endif /* GD_CORE_PEERS_H */
