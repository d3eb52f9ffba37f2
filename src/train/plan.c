/*
 * The placement plan (plan.h). Pure: the same input gives the same plan, with no allocation and
 * no device call, so auto's choice is testable on a machine without a GPU.
 *
 * auto: all-gpu when the graph, the features and the fixed buffers fit in the budget; else
 * zero-copy when the features and the neighbour lists may be page-locked and indptr and the
 * fixed buffers fit; else cpu-centric. Without a GPU: cpu. zero-copy keeps indptr in GPU memory
 * (8 bytes a node, read for every frontier node), the lists and the rows in pinned host memory,
 * and gives a quarter of what the budget leaves to the hottest neighbour lists (three quarters
 * when CPU threads copy the host rows: --host-gather cpu, split or auto) and the rest, measured
 * once everything else is allocated, to the hottest feature rows.
 */
#include "train/plan.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

const char *gd__plan_gib(int64_t bytes, char *buf, size_t n) {
    snprintf(buf, n, "%.2f GiB", (double)bytes / (double)(INT64_C(1) << 30));
    return buf;
}

int64_t gd__plan_memlock_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return INT64_MAX;
    return (int64_t)rl.rlim_cur;
}

void gd__plan_add_row(gd__plan *p, const char *structure, const char *where, int64_t bytes) {
    if (p->num_rows >= GD__PLAN_MAX_ROWS) return;
    gd__plan_row *r = &p->rows[p->num_rows++];
    snprintf(r->structure, sizeof r->structure, "%s", structure);
    r->where = where;
    r->bytes = bytes;
}

static void row(gd__plan *p, const char *structure, const char *where, int64_t bytes) {
    gd__plan_add_row(p, structure, where, bytes);
}

/* auto: the mode and its reason. */
static void pick(const gd__plan_input *in, int64_t graph, int64_t indptr, int64_t feat,
                 gd__plan *p) {
    char a[32], b[32], c[32], d[32];
    if (!in->have_gpu) {
        p->mode = GD__TRAIN_CPU;
        snprintf(p->text, sizeof p->text,
                 "auto picked cpu: %s, so sampling, gathering and training run on the CPU",
                 in->cuda_built ? "no GPU is visible" : "graphdirect was built without CUDA");
        return;
    }
    const int64_t all = graph + feat + in->fixed_bytes, pin = feat + (graph - indptr);
    if (all <= in->budget) {
        p->mode = GD__TRAIN_ALL_GPU;
        snprintf(p->text, sizeof p->text,
                 "auto picked all-gpu: graph %s + features %s + buffers %s fit in the GPU memory "
                 "budget of %s",
                 gd__plan_gib(graph, a, sizeof a), gd__plan_gib(feat, b, sizeof b),
                 gd__plan_gib(in->fixed_bytes, c, sizeof c), gd__plan_gib(in->budget, d, sizeof d));
    } else if (pin <= in->memlock && indptr + in->fixed_bytes <= in->budget) {
        p->mode = GD__TRAIN_ZERO_COPY;
        snprintf(p->text, sizeof p->text,
                 "auto picked zero-copy: graph %s + features %s + buffers %s exceed the GPU "
                 "memory budget of %s, so features and neighbour lists stay in pinned host "
                 "memory and the GPU caches the hottest feature rows in what is left",
                 gd__plan_gib(graph, a, sizeof a), gd__plan_gib(feat, b, sizeof b),
                 gd__plan_gib(in->fixed_bytes, c, sizeof c), gd__plan_gib(in->budget, d, sizeof d));
    } else {
        p->mode = GD__TRAIN_CPU_CENTRIC;
        snprintf(p->text, sizeof p->text,
                 "auto picked cpu-centric: the data does not fit in the GPU memory budget of %s "
                 "and %s of host memory cannot be page-locked (ulimit -l); raise the limit "
                 "(`ulimit -l unlimited`) for zero-copy",
                 gd__plan_gib(in->budget, d, sizeof d), gd__plan_gib(pin, a, sizeof a));
    }
}

/*
 * The host memory of the resolved mode: cpu holds the model and its minibatch buffers there,
 * cpu-centric the buffers it gathers into; the GPU-sampling modes next to nothing. Refused up
 * front when it exceeds the host budget, so that a run is not OOM-killed without a word.
 */
static gd_status plan_host(const gd__plan_input *in, gd__plan *p) {
    gd_status st = GD_OK;
    char a[32], b[32];
    const int64_t host = p->mode == GD__TRAIN_CPU ? in->host_model_bytes + in->host_batch_bytes
                         : p->mode == GD__TRAIN_CPU_CENTRIC ? in->host_batch_bytes
                                                            : 0;
    p->host_bytes = host;
    GD_REQUIRE(in->host_budget <= 0 || host <= in->host_budget, GD_ERR_NO_MEMORY,
               "--mode %s: the model and the minibatch buffers need %s (%lld bytes) of host "
               "memory, more than the %s (%lld bytes) of %s: lower --hidden, --batch or the "
               "fanouts, use a GPU mode, or set the budget (--host-mem-budget, GD_HOST_MEM_MB)",
               gd__train_mode_name(p->mode), gd__plan_gib(host, a, sizeof a), (long long)host,
               gd__plan_gib(in->host_budget, b, sizeof b), (long long)in->host_budget,
               in->host_source ? in->host_source : "the host memory budget");
    if (host > 0) row(p, "model and minibatch buffers", "host", host);
fail:
    return st;
}

/*
 * The features' row, naming a half table's dtype: its bytes are the table's real ones, and the
 * caches hold rows of that size (twice the rows of a float32 table at the same budget).
 */
static const char *features_name(const gd__plan_input *in) {
    switch (in->feature_dtype) {
    case GD_DTYPE_FLOAT16: return "features (float16)";
    case GD_DTYPE_BFLOAT16: return "features (bfloat16)";
    default: return "features";
    }
}

/* A plan row's `where` and its structure, replaced (the SSD tier moves the features' row). */
static void move_row(gd__plan *p, const char *structure_prefix, const char *where) {
    for (int i = 0; i < p->num_rows; i++)
        if (strncmp(p->rows[i].structure, structure_prefix, strlen(structure_prefix)) == 0)
            p->rows[i].where = where;
}

/*
 * The SSD tier (issue 16): the table stays in its file, read with O_DIRECT by the I/O engine;
 * the host budget holds the hottest rows (less, on a GPU, the pinned staging of one
 * minibatch's rows); a GPU mode caches rows dynamically in what its budget leaves.
 */
static void plan_disk(const gd__plan_input *in, int64_t feat, gd__plan *p) {
    char a[32], b[32];
    const int gpu = p->mode == GD__TRAIN_ZERO_COPY;
    p->features_on_disk = 1;
    p->staging_bytes = gpu ? gd__max64(in->max_input_rows, 1) * in->row_bytes + 4096 : 0;
    const int64_t room = in->host_budget - p->staging_bytes - p->host_bytes;
    p->host_buffer_rows = room > 0 ? gd__min64(room / in->row_bytes, in->num_nodes) : 0;
    p->host_bytes += p->staging_bytes + p->host_buffer_rows * in->row_bytes;
    move_row(p, "features", "disk (the I/O engine)");
    row(p, gpu ? "feature host buffer (hottest)" : "feature host cache (dynamic)",
        gpu ? "pinned host" : "host", p->host_buffer_rows * in->row_bytes);
    if (gpu) {
        row(p, "disk staging (one minibatch)", "pinned host", p->staging_bytes);
        move_row(p, "feature cache", "gpu cache (dynamic)");
    }
    const size_t used = strlen(p->text);
    snprintf(p->text + used, sizeof p->text - used,
             "; features on disk: the table (%s) exceeds the %s of %s, so %s and the rest "
             "is read from the file (O_DIRECT where the file system allows it)",
             gd__plan_gib(feat, a, sizeof a), gd__plan_gib(in->host_budget, b, sizeof b),
             in->host_source ? in->host_source : "host memory",
             gpu ? "the hottest rows stay in a pinned host buffer, the GPU caches rows "
                   "dynamically,"
                 : "the rows pass through a dynamic host cache");
}

gd_status gd__plan_make(const gd__plan_input *in, gd__plan *p) {
    gd_status st = GD_OK;
    char a[32], b[32];
    memset(p, 0, sizeof *p);
    const int64_t indptr = 8 * (in->num_nodes + 1), lists = in->index_bytes * in->num_edges;
    const int64_t graph = indptr + lists, feat = in->num_nodes * in->row_bytes;
    p->indptr = p->indices = GD_PLACE_HOST;
    p->feature_cache_bytes = 0;
    /* A table larger than the host budget stays in its file (the SSD tier), when it is one. */
    const int disk = in->features_file && in->host_budget > 0 && feat > in->host_budget;
    if (in->mode == GD__TRAIN_AUTO) {
        pick(in, graph, indptr, disk ? gd__min64(feat, in->host_budget) : feat, p);
    } else {
        p->mode = in->mode;
        snprintf(p->text, sizeof p->text, "mode %s (as asked)", gd__train_mode_name(in->mode));
    }
    if (p->mode == GD__TRAIN_ALL_GPU && in->gpu_mem_budget > 0) {
        /* Refuse early, with the numbers, when the data cannot fit the budget. */
        const int64_t data = indptr + 4 * in->num_edges + in->num_nodes * in->row_bytes;
        GD_REQUIRE(data <= in->budget, GD_ERR_NO_MEMORY,
                   "--mode all-gpu: the graph and the features take %s, more than the GPU memory "
                   "budget of %s; use --mode zero-copy (or auto)",
                   gd__plan_gib(data, a, sizeof a), gd__plan_gib(in->budget, b, sizeof b));
    }
    switch (p->mode) {
    case GD__TRAIN_ALL_GPU:
        p->indptr = p->indices = GD_PLACE_GPU;
        row(p, "indptr", "gpu", indptr);
        row(p, "indices", "gpu", lists);
        row(p, features_name(in), "gpu", feat);
        break;
    case GD__TRAIN_ZERO_COPY: {
        p->indptr = GD_PLACE_GPU;
        p->indices = GD_PLACE_PINNED;
        int64_t cache = in->graph_cache_bytes;
        if (cache < 0) {
            /*
             * A quarter of what the budget leaves after the fixed buffers, indptr and the two
             * location maps (lists and feature rows); at most the whole of indices. When CPU
             * threads copy the host rows (cpu, split, auto), three quarters: there the sampler's
             * UVA reads of uncached lists, not the rows, held the epoch back. Papers in bfloat16
             * at 16 GiB on the H100 (s9): the whole graph in GPU memory (6.03 GiB of lists,
             * 1.99 GiB of rows) ran split=0.95's epoch in 3.73 s against 4.08-4.20 s with the
             * quarter (2.14 GiB, 5.88 GiB): sampling 0.38 s against 2.0 s.
             */
            const int64_t left = in->budget - in->fixed_bytes - indptr - 16 * in->num_nodes;
            cache = left > 0 ? (in->host_rows_by_cpu ? left / 4 * 3 : left / 4) : 0;
            if (cache > lists) cache = lists;
        }
        p->graph_cache_bytes = cache;
        p->feature_cache_bytes = in->gpu_cache_bytes;
        row(p, "indptr", "gpu", indptr);
        row(p, "indices", "pinned host", lists);
        row(p, "neighbour-list cache", "gpu cache", cache);
        row(p, features_name(in), "pinned host", feat);
        row(p, "feature cache", "gpu cache", in->gpu_cache_bytes);
        break;
    }
    default: /* cpu, cpu-centric: the CPU reads both from host memory */
        row(p, "indptr", "host", indptr);
        row(p, "indices", "host", lists);
        row(p, features_name(in), p->mode == GD__TRAIN_CPU ? "host" : "host (gathered into pinned)", feat);
        break;
    }
    if (p->mode != GD__TRAIN_CPU) row(p, "minibatch buffers and model", "gpu", in->fixed_bytes);
    p->budget = in->have_gpu ? in->budget : 0;
    p->gpu_free = in->have_gpu ? in->gpu_free : 0;
    for (int i = 0; i < p->num_rows; i++)
        if (strncmp(p->rows[i].where, "gpu", 3) == 0 && p->rows[i].bytes > 0)
            p->gpu_bytes += p->rows[i].bytes;
    GD_CHECK(plan_host(in, p));
    if (disk && (p->mode == GD__TRAIN_ZERO_COPY || p->mode == GD__TRAIN_CPU))
        plan_disk(in, feat, p);
fail:
    return st;
}

void gd__plan_hetero_zero_copy(const int64_t graph[3], int64_t budget, int64_t asked, int gpu[3],
                               int64_t *cache) {
    static const int order[3] = {0, 2, 1};
    int64_t left = gd__max64(0, budget - GD__PLAN_GPU_RESERVE) / 2;
    if (asked >= 0) left -= asked;
    for (int k = 0; k < 3; k++) {
        const int i = order[k];
        gpu[i] = graph[i] <= left;
        if (gpu[i]) left -= graph[i];
    }
    *cache = asked >= 0 ? asked : gd__max64(0, left);
}

gd_status gd__plan_infer(const gd__infer_plan_input *in, gd__infer_plan *out) {
    gd_status st = GD_OK;
    const int L = in->num_layers;
    int64_t in_max = 1, out_max = 1;
    memset(out, 0, sizeof *out);
    for (int l = 0; l < L; l++) {
        in_max = gd__max64(in_max, in->dims[l]);
        out_max = gd__max64(out_max, in->dims[l + 1]);
    }
    /* A row of chunk capacity: a staged indptr entry and index, an aggregate and a self row of
     * the widest input, an output row of the widest output. */
    out->unit_bytes = (int64_t)sizeof(int64_t) + in->index_bytes +
                      (int64_t)sizeof(float) * (2 * in_max + out_max);
    const int64_t total_rows = gd__max64(in->num_nodes + in->num_edges, 2);
    const int64_t reserve =
        gd__max64(2, in->max_chunk_rows > 0 ? gd__min64(in->max_chunk_rows, total_rows)
                                            : gd__min64(total_rows, GD__PLAN_INFER_MIN_CHUNK_ROWS));
    int64_t used = reserve * out->unit_bytes; /* rows <= 2^63 / 16 is not reachable */
    GD_REQUIRE(used <= in->budget, GD_ERR_NO_MEMORY,
               "inference: a memory budget of %lld bytes cannot hold chunks of %lld rows (%lld "
               "bytes); raise the budget%s",
               (long long)in->budget, (long long)reserve, (long long)used,
               in->max_chunk_rows > 0 ? " or lower max_chunk_rows" : "");
    out->hidden_tables = L - 1 < 2 ? L - 1 : 2;
    out->hidden_bytes = L > 1 ? in->num_nodes * in->dims[1] * (int64_t)sizeof(float) : 0;
    out->feature_bytes = in->num_nodes * in->dims[0] * (int64_t)sizeof(float);
    for (int i = 0; i < out->hidden_tables; i++) {
        out->hidden_on_gpu[i] = used + out->hidden_bytes <= in->budget;
        if (out->hidden_on_gpu[i]) used += out->hidden_bytes;
    }
    out->features_on_gpu = used + out->feature_bytes <= in->budget;
    if (out->features_on_gpu) used += out->feature_bytes;
    out->chunk_rows =
        in->max_chunk_rows > 0
            ? in->max_chunk_rows
            : gd__min64(GD__PLAN_INFER_MAX_CHUNK_ROWS,
                        gd__max64(reserve, reserve + (in->budget - used) / out->unit_bytes));
    out->gpu_bytes = used + (out->chunk_rows - reserve) * out->unit_bytes;
fail:
    return st;
}

void gd__plan_add_infer(gd__plan *p, const gd__infer_plan *ip) {
    for (int i = 0; i < ip->hidden_tables; i++)
        row(p, i ? "exact inference: hidden 2" : "exact inference: hidden 1",
            ip->hidden_on_gpu[i] ? "gpu" : "pinned host", ip->hidden_bytes);
    row(p, "exact inference: features", ip->features_on_gpu ? "gpu (a copy)" : "pinned host",
        ip->feature_bytes);
    row(p, "exact inference: chunks", "gpu", ip->chunk_rows * ip->unit_bytes);
}

void gd__plan_add_infer_cpu(gd__plan *p, int hidden_tables, int64_t hidden_bytes) {
    for (int i = 0; i < hidden_tables; i++)
        row(p, i ? "exact inference: hidden 2" : "exact inference: hidden 1", "host", hidden_bytes);
}

void gd__plan_add_infer_none(gd__plan *p, int64_t needed) {
    row(p, "exact inference: chunks", "no room: raise the GPU memory budget", needed);
}

const char *gd__plan_bytes(int64_t bytes, char *buf, size_t n) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

void gd__plan_table(const gd__plan *p, char *buf, size_t n) {
    size_t used = 0;
    char g[32];
    buf[0] = '\0';
    for (int i = 0; i < p->num_rows && used < n; i++) {
        const gd__plan_row *r = &p->rows[i];
        used += (size_t)snprintf(buf + used, n - used, "  %-28s %-28s %s\n", r->structure, r->where,
                                 r->bytes < 0 ? "what the budget leaves"
                                              : gd__plan_bytes(r->bytes, g, sizeof g));
    }
    if (used < n) snprintf(buf + used, n - used, "  %s\n", p->text);
}
