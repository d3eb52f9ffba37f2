/*
 * The placement plan (src/train/plan.c) is a pure function: auto's choice and the cache sizes
 * for given sizes, budgets and locked-memory limits, on any machine (no GPU needed): cpu
 * without a GPU; all-gpu when everything fits; zero-copy when the features and lists may be
 * page-locked (a quarter of what the budget leaves to the neighbour lists, three quarters
 * when CPU threads copy the host rows, at most all of
 * them); cpu-centric otherwise; an asked all-gpu over budget refused with the sizes; a row per
 * structure and tier; exact inference's tables in GPU memory while they fit; the features on
 * disk when they exceed the host budget. Heterogeneous zero-copy's split of its data half
 * between the typed graph's arrays (in the order indptr, edge types, indices, each where it
 * fits) and the per-type caches, with and without --gpu-cache.
 */
#include "test.h"
#include "train/plan.h"

#include <string.h>

static gd__plan_input base(void) {
    gd__plan_input in;
    memset(&in, 0, sizeof in);
    in.num_nodes = 1000000;
    in.num_edges = 20000000;
    in.row_bytes = 400;
    in.index_bytes = 4;
    in.fixed_bytes = INT64_C(1) << 30;
    in.mode = GD__TRAIN_AUTO;
    in.gpu_cache_bytes = -1;
    in.graph_cache_bytes = -1;
    in.have_gpu = 1;
    in.cuda_built = 1;
    in.memlock = INT64_MAX;
    return in;
}

static const gd__plan_row *row(const gd__plan *p, const char *structure) {
    for (int i = 0; i < p->num_rows; i++)
        if (strcmp(p->rows[i].structure, structure) == 0) return &p->rows[i];
    return NULL;
}

/*
 * Exact inference's placement (gd__plan_infer): the chunk buffers first, then the hidden
 * tables, then the features, each in GPU memory while it fits; the chunk capacity grows into
 * the rest, up to its cap; a budget below the chunk buffers is refused naming it. Random sizes.
 */
static void infer_plan(uint64_t *state) {
    for (int round = 0; round < 200; round++) {
        gd__infer_plan_input in;
        memset(&in, 0, sizeof in);
        in.num_nodes = 1 + (int64_t)(t_rand(state) % 5000000);
        in.num_edges = (int64_t)(t_rand(state) % 50000000);
        in.num_layers = 1 + (int)(t_rand(state) % 4);
        for (int l = 0; l <= in.num_layers; l++) in.dims[l] = 1 + (int64_t)(t_rand(state) % 600);
        for (int l = 2; l < in.num_layers; l++) in.dims[l] = in.dims[1]; /* hidden widths */
        in.index_bytes = t_rand(state) % 2 ? 4 : 8;
        in.max_chunk_rows = t_rand(state) % 4 ? 0 : 2 + (int64_t)(t_rand(state) % 100000);
        in.budget = (int64_t)(t_rand(state) % (INT64_C(64) << 30));
        gd__infer_plan ip;
        int64_t in_max = 1, out_max = 1;
        for (int l = 0; l < in.num_layers; l++) {
            in_max = in.dims[l] > in_max ? in.dims[l] : in_max;
            out_max = in.dims[l + 1] > out_max ? in.dims[l + 1] : out_max;
        }
        const int64_t unit = 8 + in.index_bytes + 4 * (2 * in_max + out_max);
        int64_t reserve = in.num_nodes + in.num_edges;
        if (in.max_chunk_rows > 0 && in.max_chunk_rows < reserve) reserve = in.max_chunk_rows;
        if (in.max_chunk_rows == 0 && reserve > GD__PLAN_INFER_MIN_CHUNK_ROWS)
            reserve = GD__PLAN_INFER_MIN_CHUNK_ROWS;
        if (reserve < 2) reserve = 2;
        if (reserve * unit > in.budget) {
            T_FAILS(gd__plan_infer(&in, &ip), GD_ERR_NO_MEMORY, "raise the budget");
            continue;
        }
        T_OK(gd__plan_infer(&in, &ip));
        T_EQ_INT(ip.unit_bytes, unit);
        T_EQ_INT(ip.hidden_tables, in.num_layers - 1 < 2 ? in.num_layers - 1 : 2);
        T_EQ_INT(ip.feature_bytes, in.num_nodes * in.dims[0] * 4);
        /* Greedy in order: a table is on the GPU exactly when it fit after those before it. */
        int64_t used = reserve * unit;
        for (int i = 0; i < ip.hidden_tables; i++) {
            T_EQ_INT(ip.hidden_on_gpu[i], used + ip.hidden_bytes <= in.budget);
            if (ip.hidden_on_gpu[i]) used += ip.hidden_bytes;
        }
        T_EQ_INT(ip.features_on_gpu, used + ip.feature_bytes <= in.budget);
        if (ip.features_on_gpu) used += ip.feature_bytes;
        if (in.max_chunk_rows > 0) {
            T_EQ_INT(ip.chunk_rows, in.max_chunk_rows);
        } else {
            T_ASSERT(ip.chunk_rows >= reserve && ip.chunk_rows <= GD__PLAN_INFER_MAX_CHUNK_ROWS);
            /* Everything planned fits in the budget. */
            T_ASSERT(ip.gpu_bytes <= in.budget || ip.chunk_rows == reserve);
        }
        T_EQ_INT(ip.gpu_bytes, used - reserve * unit + ip.chunk_rows * unit);
    }
}

/*
 * Issue 16, the SSD tier: a table larger than the host budget stays in its file when it is one
 * (never for a table built in memory); zero-copy then pins the hottest rows the budget holds
 * less one minibatch's staging and caches rows dynamically on the GPU; cpu keeps a host cache
 * of what the model and its buffers leave. Random budgets below the table.
 */
static void disk_plan(uint64_t *state) {
    const int64_t feat = INT64_C(400) * 1000000;
    gd__plan p;
    char text[2048];
    for (int k = 0; k < 20; k++) {
        gd__plan_input in = base();
        in.mode = k % 2 ? GD__TRAIN_ZERO_COPY : GD__TRAIN_CPU;
        in.budget = INT64_C(8) << 30;
        in.features_file = 1;
        in.max_input_rows = 1 + (int64_t)(t_rand(state) % 100000);
        in.host_model_bytes = 1 << 20;
        in.host_batch_bytes = 1 << 24;
        in.host_source = "the host memory budget asked";
        in.host_budget = (INT64_C(1) << 28) + (int64_t)(t_rand(state) % (uint64_t)(feat >> 3));
        T_OK(gd__plan_make(&in, &p));
        T_EQ_INT(p.features_on_disk, 1);
        T_EQ_STR(row(&p, "features")->where, "disk (the I/O engine)");
        T_ASSERT(strstr(p.text, "features on disk") != NULL);
        const int gpu = in.mode == GD__TRAIN_ZERO_COPY;
        const int64_t others = gpu ? 0 : in.host_model_bytes + in.host_batch_bytes;
        T_EQ_INT(p.staging_bytes, gpu ? in.max_input_rows * in.row_bytes + 4096 : 0);
        T_EQ_INT(p.host_buffer_rows, (in.host_budget - p.staging_bytes - others) / in.row_bytes);
        T_ASSERT(p.host_bytes <= in.host_budget);
        const gd__plan_row *b =
            row(&p, gpu ? "feature host buffer (hottest)" : "feature host cache (dynamic)");
        T_ASSERT(b != NULL);
        T_EQ_INT(b->bytes, p.host_buffer_rows * in.row_bytes);
        if (gpu) {
            T_EQ_STR(row(&p, "feature cache")->where, "gpu cache (dynamic)");
            T_EQ_STR(row(&p, "disk staging (one minibatch)")->where, "pinned host");
        }
        gd__plan_table(&p, text, sizeof text);
        T_ASSERT(strstr(text, "disk (the I/O engine)") != NULL);
        /* The table fits the budget, or is no file: in memory as before. */
        in.host_budget = feat;
        T_OK(gd__plan_make(&in, &p));
        T_EQ_INT(p.features_on_disk, 0);
        in.host_budget = feat - 1;
        in.features_file = 0;
        T_OK(gd__plan_make(&in, &p));
        T_EQ_INT(p.features_on_disk, 0);
    }
}

static void hetero_zero_copy(uint64_t *state) {
    const int64_t R = GD__PLAN_GPU_RESERVE, MiB = INT64_C(1) << 20;
    const int64_t graph[3] = {16 * MiB, 144 * MiB, 36 * MiB}; /* indptr, indices, edge types */
    int gpu[3];
    int64_t cache = -1;
    /* Room for everything: the graph in GPU memory, the caches the rest of the half. */
    gd__plan_hetero_zero_copy(graph, R + 2 * 1000 * MiB, -1, gpu, &cache);
    T_ASSERT(gpu[0] && gpu[1] && gpu[2]);
    T_EQ_INT(cache, 1000 * MiB - 196 * MiB);
    /* A half of 100 MiB: indptr and the edge types fit, indices stay pinned. */
    gd__plan_hetero_zero_copy(graph, R + 2 * 100 * MiB, -1, gpu, &cache);
    T_ASSERT(gpu[0] && !gpu[1] && gpu[2]);
    T_EQ_INT(cache, 100 * MiB - 52 * MiB);
    /* --gpu-cache first: 80 MiB of 100 leave room for indptr alone. */
    gd__plan_hetero_zero_copy(graph, R + 2 * 100 * MiB, 80 * MiB, gpu, &cache);
    T_ASSERT(gpu[0] && !gpu[1] && !gpu[2]);
    T_EQ_INT(cache, 80 * MiB);
    /* The caches take the whole half: the graph pinned. */
    gd__plan_hetero_zero_copy(graph, R + 2 * 100 * MiB, 100 * MiB, gpu, &cache);
    T_ASSERT(!gpu[0] && !gpu[1] && !gpu[2]);
    T_EQ_INT(cache, 100 * MiB);
    /* Under the reserve: nothing on the GPU, no caches; an asked cache is kept as asked. */
    gd__plan_hetero_zero_copy(graph, R / 2, -1, gpu, &cache);
    T_ASSERT(!gpu[0] && !gpu[1] && !gpu[2]);
    T_EQ_INT(cache, 0);
    gd__plan_hetero_zero_copy(graph, R / 2, 5 * MiB, gpu, &cache);
    T_EQ_INT(cache, 5 * MiB);
    /* Random sizes: what is placed never exceeds the half, arrays in order of priority. */
    for (int round = 0; round < 1000; round++) {
        int64_t g[3];
        for (int k = 0; k < 3; k++) g[k] = (int64_t)(t_rand(state) % (uint64_t)(400 * MiB));
        const int64_t budget = (int64_t)(t_rand(state) % (uint64_t)(2 * R + 1200 * MiB));
        const int64_t asked = round % 2 ? -1 : (int64_t)(t_rand(state) % (uint64_t)(300 * MiB));
        gd__plan_hetero_zero_copy(g, budget, asked, gpu, &cache);
        const int64_t half = (budget > R ? budget - R : 0) / 2;
        int64_t used = asked >= 0 ? asked : 0, left = half - used;
        for (int k = 0; k < 3; k++) used += gpu[k] ? g[k] : 0;
        if (asked >= 0) T_EQ_INT(cache, asked);
        else T_ASSERT(cache >= 0 && used + cache <= (half > 0 ? half : 0));
        T_ASSERT(asked >= 0 || used <= half);
        /* Greedy in the order indptr, edge types, indices. */
        static const int order[3] = {0, 2, 1};
        for (int k = 0; k < 3; k++) {
            const int i = order[k];
            T_EQ_INT(gpu[i], g[i] <= left);
            if (gpu[i]) left -= g[i];
        }
    }
}

int main(void) {
    uint64_t state = t_seed();
    hetero_zero_copy(&state);
    const int64_t indptr = 8 * (1000000 + 1), lists = 4 * INT64_C(20000000),
                  feat = INT64_C(400) * 1000000;
    gd__plan p;
    char text[2048];

    gd__plan_input in = base();
    in.have_gpu = 0;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.mode, GD__TRAIN_CPU);
    T_ASSERT(strstr(p.text, "auto picked cpu: no GPU is visible") != NULL);
    in.cuda_built = 0;
    T_OK(gd__plan_make(&in, &p));
    T_ASSERT(strstr(p.text, "built without CUDA") != NULL);

    in = base();
    in.budget = indptr + lists + feat + in.fixed_bytes; /* exactly fits */
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.mode, GD__TRAIN_ALL_GPU);
    T_EQ_INT(p.indptr, GD_PLACE_GPU);
    T_EQ_INT(p.indices, GD_PLACE_GPU);
    T_EQ_INT(row(&p, "features")->bytes, feat);
    T_EQ_STR(row(&p, "features")->where, "gpu");

    /* One byte short: zero-copy, with a quarter of what is left to the lists. */
    in.budget -= 1;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.mode, GD__TRAIN_ZERO_COPY);
    T_EQ_INT(p.indptr, GD_PLACE_GPU);
    T_EQ_INT(p.indices, GD_PLACE_PINNED);
    T_EQ_INT(p.graph_cache_bytes, lists); /* a quarter of what is left exceeds the lists */
    T_EQ_INT(p.feature_cache_bytes, -1);
    T_EQ_STR(row(&p, "feature cache")->where, "gpu cache");
    for (int k = 0; k < 20; k++) {
        const int64_t left = (int64_t)(t_rand(&state) % (uint64_t)(4 * lists));
        in.budget = in.fixed_bytes + indptr + 16 * in.num_nodes + left;
        T_OK(gd__plan_make(&in, &p));
        T_EQ_INT(p.mode, GD__TRAIN_ZERO_COPY);
        T_EQ_INT(p.graph_cache_bytes, left / 4 < lists ? left / 4 : lists);
        /* Host rows copied by CPU threads (cpu, split): three quarters to the lists. */
        in.host_rows_by_cpu = 1;
        T_OK(gd__plan_make(&in, &p));
        T_EQ_INT(p.graph_cache_bytes, left / 4 * 3 < lists ? left / 4 * 3 : lists);
        in.host_rows_by_cpu = 0;
    }
    in.graph_cache_bytes = 12345;
    in.gpu_cache_bytes = 678;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.graph_cache_bytes, 12345);
    T_EQ_INT(p.feature_cache_bytes, 678);

    /* Nothing may be page-locked: cpu-centric, and the text says how to change that. */
    in = base();
    in.budget = in.fixed_bytes + indptr;
    in.memlock = 64 << 10;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.mode, GD__TRAIN_CPU_CENTRIC);
    T_ASSERT(strstr(p.text, "ulimit -l") != NULL);

    /* all-gpu asked under a budget the data exceeds: refused with the sizes. */
    in = base();
    in.mode = GD__TRAIN_ALL_GPU;
    in.gpu_mem_budget = in.budget = 1 << 20;
    T_FAILS(gd__plan_make(&in, &p), GD_ERR_NO_MEMORY, "zero-copy");
    /* Asked modes are kept, with their rows. */
    in.gpu_mem_budget = 0;
    in.mode = GD__TRAIN_CPU;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.mode, GD__TRAIN_CPU);
    T_EQ_STR(p.text, "mode cpu (as asked)");
    T_ASSERT(row(&p, "minibatch buffers and model") == NULL);
    gd__plan_table(&p, text, sizeof text);
    T_ASSERT(strstr(text, "indices") && strstr(text, "76.29 MiB") && strstr(text, "as asked"));
    gd__plan_table(&p, text, 8); /* a short buffer is cut, not overrun */
    T_EQ_INT((int)strlen(text), 7);

    /*
     * Issue 13, item 9, "no host-memory check before work": a too-large model was OOM-killed
     * without a word. The plan counts the host memory of the resolved mode (cpu: the model and
     * its minibatch buffers; cpu-centric: the buffers; the GPU-sampling modes: none) and
     * refuses, naming both sizes and the fixes, what exceeds the host budget.
     */
    in = base();
    in.mode = GD__TRAIN_CPU;
    in.host_model_bytes = INT64_C(3) << 30;
    in.host_batch_bytes = INT64_C(1) << 30;
    in.host_budget = INT64_C(4) << 30; /* exactly fits */
    in.host_source = "the host memory budget asked";
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.host_bytes, INT64_C(4) << 30);
    T_EQ_STR(row(&p, "model and minibatch buffers")->where, "host");
    in.host_budget -= 1;
    T_FAILS(gd__plan_make(&in, &p), GD_ERR_NO_MEMORY,
            "--mode cpu: the model and the minibatch buffers need 4.00 GiB (4294967296 bytes) of "
            "host memory, more than the 4.00 GiB (4294967295 bytes) of the host memory budget "
            "asked");
    T_ASSERT(strstr(gd_last_error(), "--hidden") && strstr(gd_last_error(), "GD_HOST_MEM_MB"));
    in.mode = GD__TRAIN_CPU_CENTRIC;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.host_bytes, INT64_C(1) << 30);
    in.mode = GD__TRAIN_ZERO_COPY;
    in.host_budget = 1;
    T_OK(gd__plan_make(&in, &p));
    T_EQ_INT(p.host_bytes, 0);
    /* auto without a GPU resolves to cpu, and is checked as cpu. */
    in.mode = GD__TRAIN_AUTO;
    in.have_gpu = 0;
    T_FAILS(gd__plan_make(&in, &p), GD_ERR_NO_MEMORY, "--mode cpu");
    /* An unknown budget (<= 0) checks nothing. */
    in.host_budget = 0;
    T_OK(gd__plan_make(&in, &p));
    disk_plan(&state);
    infer_plan(&state);
    t_check_no_leaks();
    return 0;
}
