/*
 * The host side of the ways host rows reach a zero-copy gather (host_gather.h): the names of the
 * choice, the CPU references of the GPU's host-row lists (what the GPU tests compare the list
 * kernels with, and what the CPU tests of the whole flow use), and the rules "auto" and "split"
 * decide by.
 */
#include "feature/host_gather.h"

#include "feature/tier.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[GD__HOST_GATHER_COUNT] = {"zero-copy", "cpu", "auto", "split"};

const char *gd__host_gather_name(gd__host_gather h) {
    if ((unsigned)h >= GD__HOST_GATHER_COUNT) return NULL;
    return names[h];
}

/* A fraction in [0, 1] from text, all of it; 0 if it is not one. */
static int parse_fraction(const char *text, double *f) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (!*text || end == text || *end || errno || !(v >= 0 && v <= 1)) return 0;
    *f = v;
    return 1;
}

gd_status gd__host_gather_parse(const char *name, gd__host_gather *out, double *split) {
    double f = -1;
    *out = GD__HOST_GATHER_ZEROCOPY;
    if (split) *split = -1;
    if (!name) return GD_OK;
    int i = gd__name_index(names, GD__HOST_GATHER_COUNT, name);
    if (i < 0 && strncmp(name, "split=", 6) == 0 && parse_fraction(name + 6, &f))
        i = GD__HOST_GATHER_SPLIT;
    if (i < 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "host gather '%s' is not understood: use zero-copy (the GPU reads host "
                         "rows directly), cpu (CPU threads gather them into pinned memory, one "
                         "copy), split or split=F (both at once, the CPU taking a fraction F in "
                         "[0, 1] of the rows; split alone: from the start-up probe) or auto "
                         "(whichever a probe at start-up finds fastest)",
                         name);
    *out = (gd__host_gather)i;
    if (split) *split = f;
    return GD_OK;
}

gd_status gd__host_split_param(double *f) {
    gd_status st = GD_OK;
    const char *text = NULL;
    *f = -1;
    GD_CHECK(gd_param_get("GD_HOST_SPLIT", &text));
    if (!text || !*text || strcmp(text, "auto") == 0) return GD_OK;
    GD_REQUIRE(parse_fraction(text, f), GD_ERR_INVALID_ARG,
               "GD_HOST_SPLIT '%s' is not auto or a fraction in [0, 1] (the share of the host "
               "rows that CPU threads copy under --host-gather split, e.g. 0.6)",
               text);
fail:
    return st;
}

int gd__host_share(double f) {
    if (!(f > 0)) return 0;
    if (f >= 1) return GD__HOST_SHARE_ONE;
    return (int)lround(f * GD__HOST_SHARE_ONE);
}

int64_t gd__host_rows_split_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                                int64_t n, int share, int64_t *stage_slot, int64_t *rows) {
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t id = ids[r];
        m += id >= 0 && id < table_rows && (!loc || gd__loc_tier(loc[id]) == GD__TIER_HOST);
    }
    const int64_t s = gd__host_share_rows(m, share), z = m - s;
    if (!stage_slot && !rows) return s;
    int64_t j = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t id = ids[r];
        const int host =
            id >= 0 && id < table_rows && (!loc || gd__loc_tier(loc[id]) == GD__TIER_HOST);
        const int staged = host && j >= z;
        if (stage_slot) stage_slot[r] = staged ? j - z : -1;
        if (staged && rows) rows[j - z] = id;
        j += host;
    }
    return s;
}

int64_t gd__host_rows_list_cpu(const int64_t *loc, int64_t table_rows, const int64_t *ids,
                               int64_t n, int64_t *stage_slot, int64_t *rows) {
    return gd__host_rows_split_cpu(loc, table_rows, ids, n, GD__HOST_SHARE_ONE, stage_slot, rows);
}

double gd__host_split_fraction(double zerocopy_rate, double cpu_rate) {
    if (!(zerocopy_rate > 0) || !(cpu_rate > 0)) return 0.5;
    return cpu_rate / (cpu_rate + zerocopy_rate);
}

/* ---- auto's trial */

const double gd__host_trial_fractions[GD__HOST_TRIAL_WAYS] = {1.0, 0.95, 0.9, 0.8,
                                                              0.6, 0.4,  0.2, 0.0};

void gd__host_trial_init(gd__host_trial *t, int runs) {
    memset(t, 0, sizeof *t);
    if (runs < GD__HOST_TRIAL_SETTLE + 2) runs = GD__HOST_TRIAL_SETTLE + 2;
    if (runs > GD__HOST_TRIAL_MAX_RUNS) runs = GD__HOST_TRIAL_MAX_RUNS;
    t->runs = runs;
    t->best = -1;
    t->last = -1;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double gd__host_trial_step(gd__host_trial *t, double now) {
    if (gd__host_trial_done(t)) return -1;
    double set = t->last < 0 ? gd__host_trial_fractions[0] : -1;
    /* The period that ends here is the candidate's once its first SETTLE gathers are past. */
    if (t->last >= 0 && t->n > GD__HOST_TRIAL_SETTLE && !t->gap)
        t->samples[t->ns++] = now - t->last;
    t->gap = 0;
    if (t->n == t->runs) {
        qsort(t->samples, (size_t)t->ns, sizeof *t->samples, cmp_double);
        /* No period timed (a pause after every gather): the way cannot be judged, and loses. */
        t->period[t->way] = t->ns == 0 ? HUGE_VAL
                            : t->ns % 2 == 1
                                ? t->samples[t->ns / 2]
                                : (t->samples[t->ns / 2 - 1] + t->samples[t->ns / 2]) / 2;
        t->way++;
        t->n = t->ns = 0;
        if (gd__host_trial_done(t)) {
            t->best = 0;
            for (int w = 1; w < GD__HOST_TRIAL_WAYS; w++)
                if (t->period[w] < t->period[t->best]) t->best = w;
            set = gd__host_trial_fractions[t->best];
        } else {
            set = gd__host_trial_fractions[t->way];
        }
    }
    if (!gd__host_trial_done(t)) t->n++;
    t->last = now;
    return set;
}
