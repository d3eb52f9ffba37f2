/*
 * The host side of the two ways host rows reach a zero-copy gather (host_gather.h): the names of
 * the choice, the CPU reference of the GPU's host-row list (what the GPU tests compare the list
 * kernel with, and what the CPU tests of the whole flow use), and the rule "auto" decides by.
 */
#include "feature/host_gather.h"

#include "feature/tier.h"

static const char *const names[GD__HOST_GATHER_COUNT] = {"zero-copy", "cpu", "auto"};

const char *gd__host_gather_name(gd__host_gather h) {
    if ((unsigned)h >= GD__HOST_GATHER_COUNT) return NULL;
    return names[h];
}

gd_status gd__host_gather_parse(const char *name, gd__host_gather *out) {
    *out = GD__HOST_GATHER_ZEROCOPY;
    if (!name) return GD_OK;
    const int i = gd__name_index(names, GD__HOST_GATHER_COUNT, name);
    if (i < 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "host gather '%s' is not understood: use zero-copy (the GPU reads host "
                         "rows directly), cpu (CPU threads gather them into pinned memory, one "
                         "copy) or auto (whichever a probe at start-up finds faster)",
                         name);
    *out = (gd__host_gather)i;
    return GD_OK;
}

int64_t gd__host_rows_list_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                               int64_t n, int64_t *stage_slot, int64_t *rows) {
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t id = ids[r];
        const int host =
            id >= 0 && id < table_rows && (!loc || gd__loc_tier(loc[id]) == GD__TIER_HOST);
        if (stage_slot) stage_slot[r] = host ? m : -1;
        if (!host) continue;
        if (rows) rows[m] = id;
        m++;
    }
    return m;
}

gd__host_gather gd__host_gather_choose(double zerocopy_rate, double cpu_rate) {
    if (!(zerocopy_rate > 0) || !(cpu_rate > 0)) return GD__HOST_GATHER_ZEROCOPY;
    return cpu_rate > zerocopy_rate ? GD__HOST_GATHER_CPU : GD__HOST_GATHER_ZEROCOPY;
}
