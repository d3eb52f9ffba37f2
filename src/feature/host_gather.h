/*
 * How the host-resident rows of a zero-copy gather reach the GPU (issue 16; docs/feature_store.md,
 * "Host rows: zero-copy loads or CPU gather + DMA"). A zero-copy gatherer reads the rows its GPU
 * cache does not hold straight from the pinned table, with the aligned gather kernel. Over a
 * table of tens of GiB those random reads are bound by the GPU's address translation (on the
 * lent H100 VM: 8.6 GB/s over a 28 GiB table, 47.8 GB/s over 1 GiB), while CPU threads copying
 * the same rows into pinned staging, then one DMA, reached 21.4 GB/s. So a zero-copy gatherer
 * created with the host_gather option can serve those rows the other way, the flow of the SSD
 * tier with host memory in place of the file:
 *   1. the GPU lists the positions whose row the location map puts in host memory (in the order
 *      the kernel reads them: sorted when the gatherer sorts its ids) and writes their rows to
 *      pinned memory, with each position's staging slot in GPU memory;
 *   2. the host waits for that list only, and CPU threads copy those rows from the table into
 *      pinned staging, slot after slot; copies move the staging to GPU memory, each 4 MiB
 *      chunk as soon as it is full, so that the DMA overlaps the CPU's copying;
 *   3. the gather kernel reads every other row where the map says, and a listed row from its
 *      staging slot.
 * The host never walks the minibatch's ids: it reads the GPU's list. The ids of a minibatch are
 * distinct (its input nodes), so the list has no duplicates to remove. Both ways write the same
 * bytes to the same output rows. This header is plain C: the CPU reference of the list and the
 * choice rule of "auto" live in host_gather.c, the GPU side in feature_cuda.cu.
 */
#ifndef GD_FEATURE_HOST_GATHER_H
#define GD_FEATURE_HOST_GATHER_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GD__HOST_GATHER_ZEROCOPY = 0, /* "zero-copy": the gather kernel reads the pinned table */
    GD__HOST_GATHER_CPU = 1,      /* "cpu": CPU threads into pinned staging, one DMA */
    GD__HOST_GATHER_AUTO = 2,     /* "auto": whichever a probe at start-up finds faster */
    GD__HOST_GATHER_COUNT = 3
} gd__host_gather;

/* "zero-copy", "cpu", "auto"; NULL outside the enum. */
const char *gd__host_gather_name(gd__host_gather h);
/* name NULL: zero-copy. GD_ERR_INVALID_ARG naming the choices for anything else. */
gd_status gd__host_gather_parse(const char *name, gd__host_gather *out);

/*
 * The CPU reference of step 1: for r in [0, n), stage_slot[r] = j if ids[r] is a row of the
 * table ([0, table_rows)) whose location loc[ids[r]] is in the host tier (loc NULL: every row
 * is), j counting those positions in order from 0, else -1; rows[j] = ids[r]. Returns their
 * number m. stage_slot and rows may be NULL (count only).
 */
int64_t gd__host_rows_list_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                               int64_t n, int64_t *stage_slot, int64_t *rows);

/*
 * What "auto" picks from the rates the probe measured (bytes of host rows per second, each
 * way): the CPU gather where it moved the rows faster, else zero-copy loads (also when either
 * rate is unknown, <= 0).
 */
gd__host_gather gd__host_gather_choose(double zerocopy_rate, double cpu_rate);

/* The rates the start-up probe of a gatherer measured (gd__gatherer_host_probe). */
typedef struct {
    int64_t rows;        /* host rows gathered per call */
    int64_t row_bytes;
    double zerocopy_gbs; /* GB/s (1e9 bytes) of host rows, zero-copy loads */
    double cpu_gbs;      /* and CPU gather + DMA */
} gd__host_probe;

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_HOST_GATHER_H */
