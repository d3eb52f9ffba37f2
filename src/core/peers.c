/*
 * GPU memory shared among the ranks of a communicator (peers.h). One record per rank travels
 * through the host all-gather: the host and process it runs in, its GPU's PCI id and, when it
 * offers a buffer, the pointer (for ranks of the same process) and the CUDA IPC handle (for the
 * others).
 */
#include "core/peers.h"

#include "core/cuda.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HOST_BYTES 64

typedef struct {
    char host[HOST_BYTES];
    int64_t pid;
    char pci[32];
    int64_t has, units;
    uint64_t ptr;
    unsigned char handle[64];
} record;

void gd__peers_barrier(gd__comm *c) {
    double one = 1;
    if (gd__comm_world(c) > 1) (void)gd__comm_sum_host(c, &one, 1);
    gd_clear_error();
}

gd_status gd__peers_agree(gd__comm *c, gd_status mine, const char *what) {
    double failed = mine != GD_OK;
    gd_status st = gd__comm_sum_host(c, &failed, 1);
    if (st != GD_OK) return st;
    if (mine != GD_OK) return mine;
    if (failed > 0)
        return gd__error(GD_ERR_COMM, "rank %d: another rank failed %s (its message says why)",
                         gd__comm_rank(c), what);
    return GD_OK;
}

#ifdef GD_WITH_CUDA

_Static_assert(sizeof(((record *)0)->pci) == GD__CUDA_PCI_ID_BYTES, "PCI id size");
_Static_assert(sizeof(((record *)0)->handle) == GD__CUDA_IPC_HANDLE_BYTES, "IPC handle size");

/* This rank's record; the buffer's fields only with mine. */
static gd_status make_record(int device, const void *mine, int64_t units, record *r) {
    gd_status st = GD_OK;
    memset(r, 0, sizeof *r);
    if (gethostname(r->host, HOST_BYTES - 1) != 0) snprintf(r->host, HOST_BYTES, "?");
    r->pid = (int64_t)getpid();
    GD_CHECK(gd__cuda_pci_id(device, r->pci));
    if (mine) {
        r->has = 1;
        r->units = units;
        r->ptr = (uint64_t)(uintptr_t)mine;
        GD_CHECK(gd__cuda_ipc_handle(device, mine, r->handle));
    }
fail:
    return st;
}

static gd_status gather_records(gd__comm *c, const record *mine, record **all) {
    gd_status st = GD_OK;
    const int world = gd__comm_world(c);
    *all = NULL;
    GD_REQUIRE(world <= GD__PEERS_MAX, GD_ERR_INVALID_ARG,
               "sharing GPU memory among %d ranks: at most %d", world, GD__PEERS_MAX);
    GD_ALLOC(*all, sizeof(record) * (size_t)world, "the ranks' GPU records");
    GD_CHECK(gd__comm_allgather_host(c, mine, *all, (int64_t)sizeof(record)));
fail:
    return st;
}

/* Whether this rank's GPU can read rank q's; why says otherwise. */
static gd_status can_read(int device, int rank, int q, const record *me, const record *them,
                          int *yes, char *why, size_t why_n) {
    gd_status st = GD_OK;
    *yes = 0;
    if (strcmp(me->host, them->host) != 0) {
        snprintf(why, why_n, "ranks %d and %d run on different hosts (%s, %s)", rank, q,
                 me->host, them->host);
        return GD_OK;
    }
    const int peer = gd__cuda_device_of_pci(them->pci);
    if (peer < 0) {
        snprintf(why, why_n, "rank %d's GPU (%s) is not visible to rank %d (CUDA_VISIBLE_DEVICES)",
                 q, them->pci, rank);
        return GD_OK;
    }
    GD_CHECK(gd__cuda_can_access_peer(device, peer, yes));
    if (!*yes)
        snprintf(why, why_n, "GPUs %s (rank %d) and %s (rank %d) have no peer access (no "
                 "NVLink/P2P between them)", me->pci, rank, them->pci, q);
fail:
    return st;
}

gd_status gd__peers_access(gd__comm *c, int device, int *all, char *why, size_t why_n) {
    gd_status st = GD_OK, mine;
    record me, *recs = NULL;
    const int world = gd__comm_world(c), rank = gd__comm_rank(c);
    int ok = 1;
    *all = 0;
    if (why_n) why[0] = '\0';
    mine = make_record(device, NULL, 0, &me);
    GD_CHECK(gd__peers_agree(c, mine, "to name its GPU"));
    GD_CHECK(gather_records(c, &me, &recs));
    for (int q = 0; q < world && ok && mine == GD_OK; q++)
        if (q != rank) mine = can_read(device, rank, q, &me, &recs[q], &ok, why, why_n);
    GD_CHECK(gd__peers_agree(c, mine, "to check its peer access"));
    /* Every rank must say yes; the message of the first that says no reaches all. */
    char msg[256] = {0};
    if (!ok) snprintf(msg, sizeof msg, "%s", why);
    char *msgs = NULL;
    GD_ALLOC(msgs, sizeof msg * (size_t)world, "the ranks' peer-access answers");
    st = gd__comm_allgather_host(c, msg, msgs, (int64_t)sizeof msg);
    if (st == GD_OK) {
        *all = 1;
        for (int q = 0; q < world && *all; q++)
            if (msgs[q * sizeof msg]) {
                *all = 0;
                if (why_n) snprintf(why, why_n, "%s", msgs + q * sizeof msg);
            }
    }
    gd_free(msgs);
fail:
    gd_free(recs);
    return st;
}

/* Map rank q's offer (its record r) for this rank's GPU into v. */
static gd_status map_one(gd__peer_view *v, int q, const record *me, const record *r) {
    gd_status st = GD_OK;
    const int peer = gd__cuda_device_of_pci(r->pci);
    void *p = NULL;
    GD_REQUIRE(peer >= 0, GD_ERR_CUDA, "rank %d's GPU (%s) is not visible to rank %d", q, r->pci,
               v->rank);
    if (strcmp(me->host, r->host) == 0 && me->pid == r->pid) {
        /* The same process: the pointer itself, once this GPU may read the peer's memory. */
        GD_CHECK(gd__cuda_enable_peer_access(v->device, peer));
        v->ptr[q] = (const void *)(uintptr_t)r->ptr;
    } else {
        GD_CHECK(gd__cuda_ipc_open(v->device, peer, r->handle, &p));
        v->ptr[q] = p;
        v->opened[q] = 1;
    }
    v->units[q] = r->units;
fail:
    return st;
}

gd_status gd__peers_share(gd__comm *c, int device, const void *mine, int64_t units,
                          gd__peer_view *v) {
    gd_status st = GD_OK, local = GD_OK;
    record me, *recs = NULL;
    memset(v, 0, sizeof *v);
    v->world = gd__comm_world(c);
    v->rank = gd__comm_rank(c);
    v->device = device;
    local = make_record(device, mine, units, &me);
    GD_CHECK(gd__peers_agree(c, local, "to export its GPU cache"));
    GD_CHECK(gather_records(c, &me, &recs));
    v->ptr[v->rank] = mine;
    v->units[v->rank] = units;
    for (int q = 0; q < v->world && local == GD_OK; q++)
        if (q != v->rank && recs[q].has) local = map_one(v, q, &me, &recs[q]);
    GD_CHECK(gd__peers_agree(c, local, "to map its peers' GPU caches"));
fail:
    gd_free(recs);
    if (st != GD_OK) gd__peers_close(v);
    return st;
}

void gd__peers_close(gd__peer_view *v) {
    for (int q = 0; q < v->world && q < GD__PEERS_MAX; q++) {
        if (v->opened[q]) (void)gd__cuda_ipc_close(v->device, (void *)v->ptr[q]);
        v->opened[q] = 0;
        v->ptr[q] = NULL;
    }
    gd_clear_error();
}

#else /* no CUDA: no GPU memory to share */

gd_status gd__peers_access(gd__comm *c, int device, int *all, char *why, size_t why_n) {
    (void)device;
    *all = 0;
    if (why_n) snprintf(why, why_n, "this build has no CUDA");
    return gd__peers_agree(c, GD_OK, "");
}

gd_status gd__peers_share(gd__comm *c, int device, const void *mine, int64_t units,
                          gd__peer_view *v) {
    (void)c, (void)device, (void)mine, (void)units;
    memset(v, 0, sizeof *v);
    return gd__error(GD_ERR_NO_DEVICE, "sharing GPU memory: this build has no CUDA");
}

void gd__peers_close(gd__peer_view *v) {
    memset(v, 0, sizeof *v);
}

#endif
