/*
 * The placed graph, gd_graph_t: where the two CSC arrays live for the samplers. indptr and
 * indices are placed separately, each in host memory (CPU threads only), in GPU memory (a copy),
 * or in pinned host memory that GPU kernels read over PCIe (UVA) and CPU threads read in place.
 * The common large-graph setup is indptr in GPU memory and indices pinned: the sampler then reads
 * over PCIe only the few index entries it draws. Pinned arrays are registered through the feature
 * module's host tensors, in the registry of the graph's context (an array that a host tensor or
 * another graph of the context registered already is shared, not registered twice). The lists
 * that GPU kernels read are a tier store (feature/tier.h) of variable rows, and this file ranks
 * the lists for its hot neighbour-list GPU cache; the GPU copies themselves are made by the
 * backend table of internal.h (graph_cuda.cu).
 */
#include "internal.h"

#include "core/context.h"
#include "core/peers.h"
#include "feature/internal.h"
#include "io/dataset.h"

#include <string.h>
#include <unistd.h>

static const char *const placement_names[GD_PLACE_COUNT] = {"host", "gpu", "pinned"};

const char *gd_placement_name(gd_placement placement) {
    if ((unsigned)placement >= GD_PLACE_COUNT) return NULL;
    return placement_names[placement];
}

gd_status gd_placement_parse(const char *name, gd_placement *out) {
    if (!name || !out) return gd__error(GD_ERR_INVALID_ARG, "gd_placement_parse: NULL argument");
    const int i = gd__name_index(placement_names, GD_PLACE_COUNT, name);
    if (i >= 0) return *out = (gd_placement)i, GD_OK;
    return gd__error(GD_ERR_INVALID_ARG, "unknown placement '%s': use host, gpu or pinned", name);
}

#ifndef GD_WITH_CUDA
/*
 * The placement backend of a build without CUDA: nothing can go to a GPU. graph_create asks it
 * only for a gpu placement or a GPU cache, and a cache also puts indptr in GPU memory, so
 * to_device is always asked first and reports; there is never device memory to free. A CUDA
 * build uses graph_cuda.cu's table instead.
 */
static gd_status none_to_device(gd_graph_t *g, const int64_t *indptr, const void *indices,
                                gd_dtype src_dtype) {
    return gd__error(GD_ERR_NO_DEVICE,
                     "placing a graph in GPU memory needs a GPU, but graphdirect was built "
                     "without CUDA: install the CUDA toolkit and rebuild, or use the CPU sampler "
                     "with host placement");
}

static void none_release(gd_graph_t *g) {}

static gd_status none_out_degrees(const gd_graph_t *g, int64_t *scores) {
    return gd__error(GD_ERR_NO_DEVICE, "counting out-degrees on a GPU needs a CUDA build");
}

static const gd__graph_backend graph_none_backend = {
    none_to_device,
    none_release,
    none_out_degrees,
};
#endif

/* The table that places graphs in this build. */
static const gd__graph_backend *backend(void) {
#ifdef GD_WITH_CUDA
    return &gd__graph_cuda_backend;
#else
    return &graph_none_backend;
#endif
}

/*
 * Check that indptr starts at 0 and never decreases, and find the largest degree, in one parallel
 * pass. Returns the first node whose degree is negative, or -1.
 */
static int64_t scan_indptr(const int64_t *indptr, int64_t n, int64_t *max_degree) {
    int64_t bad = INT64_MAX, maxd = 0;
    const int threads = n < (1 << 16) ? 1 : gd__num_threads();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max                       \
                                                                         : maxd) reduction(min     \
                                                                                           : bad)
    for (int64_t v = 0; v < n; v++) {
        const int64_t d = indptr[v + 1] - indptr[v];
        if (d < 0 && v < bad) bad = v;
        if (d > maxd) maxd = d;
    }
    *max_degree = maxd;
    return bad == INT64_MAX ? -1 : bad;
}

int64_t gd__csc_max_degree(const int64_t *indptr, int64_t n) {
    int64_t most;
    (void)scan_indptr(indptr, n, &most);
    return most;
}

/* Copy n indices of dtype from to dtype to (int64 -> int32 narrowing allowed), in parallel. */
static void copy_indices(void *to, gd_dtype to_dtype, const void *from, gd_dtype from_dtype,
                         int64_t n) {
    if (to_dtype == from_dtype) {
        memcpy(to, from, (size_t)n * gd_dtype_size(to_dtype));
        return;
    }
    const int64_t *f = from;
    int32_t *t = to;
    const int threads = n < (1 << 20) ? 1 : gd__num_threads();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) t[i] = (int32_t)f[i];
}

/* Whether the pages holding [a, a + na) and [b, b + nb) overlap. */
static int pages_overlap(const void *a, size_t na, const void *b, size_t nb) {
    const long ps = sysconf(_SC_PAGESIZE);
    const uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    if (na == 0 || nb == 0) return 0;
    const uintptr_t a0 = (uintptr_t)a & ~(page - 1), a1 = ((uintptr_t)a + na - 1) | (page - 1);
    const uintptr_t b0 = (uintptr_t)b & ~(page - 1), b1 = ((uintptr_t)b + nb - 1) | (page - 1);
    return a0 <= b1 && b0 <= a1;
}

/*
 * Place one array in pinned memory: adopt the caller's memory in place, or copy it (converting the
 * index type) into a library-owned host tensor; then register it with the GPU. Read-only memory
 * (a dataset file mapped PROT_READ) is registered in place read-only, so that the processes of a
 * multi-GPU run pin the page cache's one copy; where the GPU or the file system refuses, a copy
 * is pinned instead and the log says why.
 */
static gd_status place_pinned(gd_graph_t *g, const void *data, gd_dtype from, gd_dtype to,
                              int64_t count, int copy, int read_only, const char *what,
                              gd_host_tensor_t **out, const void **host, const void **dev) {
    gd_status st = GD_OK;
    gd_host_tensor_t *t = NULL;
    if (!copy && from == to && read_only) {
        st = gd_host_tensor_adopt((void *)data, count, 1, to, GD_HOST_TENSOR_READ_ONLY, &t);
        if (st == GD_OK) st = gd_host_tensor_register(t, g->context);
        if (st == GD_OK) goto placed;
        GD_INFO("graph: the dataset's %s cannot be registered in place (%s): pinning a copy",
                what, gd_last_error());
        gd_clear_error();
        gd_host_tensor_destroy(t);
        t = NULL;
        copy = 1;
    }
    if (copy || from != to) {
        GD_CHECK(gd_host_tensor_create(count, 1, to, 0, &t));
        copy_indices(gd_host_tensor_data(t), to, data, from, count);
    } else {
        GD_CHECK(gd_host_tensor_adopt((void *)data, count, 1, to, 0, &t));
    }
    st = gd_host_tensor_register(t, g->context);
    if (st != GD_OK) {
        gd__error_context(st, "placing the graph's %s in pinned memory", what);
        goto fail;
    }
placed:
    *out = t;
    *host = t->data;
    *dev = t->device_ptr;
    g->pinned_bytes += (int64_t)t->bytes;
    return GD_OK;
fail:
    gd_host_tensor_destroy(t);
    return st;
}

/*
 * The lists as GPU kernels read them: a tier store of variable rows (node v's list is the
 * entries [indptr[v], indptr[v + 1]) of indices) over the pinned or GPU indices, on the graph's
 * device. Only a graph whose indptr and indices are both GPU-readable (what the CUDA sampler
 * needs) gets one; creating it touches no device memory. The store plans a cache from the
 * caller's indptr, which is only read while the graph is created.
 */
static gd_status make_store(gd_graph_t *g, const int64_t *indptr) {
    const gd__row_shape shape = {g->num_nodes, (int64_t)gd_dtype_size(g->indices_dtype), indptr,
                                 g->d_indptr};
    const int home = g->indices_place == GD_PLACE_GPU ? GD__TIER_GPU : GD__TIER_HOST;
    if (!g->d_indptr || !g->d_indices) return GD_OK;
    return gd__tier_store_create(&shape, g->device, home, g->d_indices, g->num_edges, &g->store);
}

/*
 * The hot neighbour-list GPU cache (docs/sampling.md, "Hot neighbour lists in GPU memory"). A
 * node's list is read once each time the node is in a frontier, and a node joins the frontiers
 * about as often as it is drawn as someone's neighbour: its out-degree. Each read of a list costs
 * PCIe requests (gd__graph_list_requests). The lists are ranked by requests saved per cached
 * byte, out-degree x requests / list bytes, best first, and handed to the store's cache, which
 * takes them whole while they fit the budget (one that does not fit is skipped, so smaller ones
 * behind it still fill the space), packs them in that order and publishes their locations in the
 * map. Only where the CUDA sampler reads changes; the CPU sampler keeps reading the host arrays.
 */
gd_status gd__graph_rank_lists(const gd_graph_t *g, const int64_t *indptr, const int64_t *outdeg,
                               int64_t *score, int64_t *rows, int64_t *count) {
    const int64_t es = (int64_t)gd_dtype_size(g->indices_dtype), n = g->num_nodes;
#pragma omp parallel for schedule(static) num_threads(gd__num_threads()) if (n > 65536)
    for (int64_t v = 0; v < n; v++) {
        const int64_t d = indptr[v + 1] - indptr[v];
        score[v] = d > 0 ? outdeg[v] * gd__graph_list_requests(d, es) * 4096 / (d * es) : 0;
    }
    return gd_hot_rows_select(score, n, n, rows, count);
}

gd_status gd__graph_list_candidates(const gd_graph_t *g, const int64_t *indptr,
                                    const int64_t *outdeg, int64_t bytes, int64_t *rows,
                                    double *prob, int64_t *size, int64_t *count) {
    gd_status st = GD_OK;
    const int64_t n = g->num_nodes, es = (int64_t)gd_dtype_size(g->indices_dtype);
    int64_t *score = NULL, ranked = 0, taken = 0, sum = 0;
    double total = 0;
    *count = 0;
    GD_ALLOC(score, (size_t)n * sizeof(int64_t), "the list ranking's scores");
    GD_CHECK(gd__graph_rank_lists(g, indptr, outdeg, score, rows, &ranked));
    for (int64_t v = 0; v < n; v++) {
        const int64_t d = indptr[v + 1] - indptr[v];
        total += (double)(outdeg[v] * gd__graph_list_requests(d, es));
    }
    /* rows is read ahead of where it is written: taken <= k. */
    for (int64_t k = 0; k < ranked && sum < bytes; k++) {
        const int64_t v = rows[k], d = indptr[v + 1] - indptr[v];
        if (d == 0 || outdeg[v] == 0) continue;
        rows[taken] = v;
        size[taken] = d * es;
        prob[taken++] = (double)(outdeg[v] * gd__graph_list_requests(d, es)) / total;
        sum += d * es;
    }
    *count = taken;
fail:
    gd_free(score);
    return st;
}

/* g's views of its store's cache once it is built, and the GPU memory they take. */
static void cache_views(gd_graph_t *g) {
    const gd__tier_store *s = g->store;
    const int gpu = s->device >= 0;
    g->d_loc = gpu ? s->loc : NULL;
    g->d_cache = gpu ? s->cache.mem : NULL;
    g->cache_nodes = s->cache.count;
    g->cache_edges = s->cache.units;
    g->cache_bytes = g->cache_edges * (int64_t)gd_dtype_size(g->indices_dtype);
    if (gpu && s->loc) g->device_bytes += s->map_bytes + g->cache_bytes;
}

static gd_status build_cache(gd_graph_t *g, const int64_t *indptr, int64_t budget,
                             const int64_t *out_degrees) {
    gd_status st = GD_OK;
    const int64_t n = g->num_nodes;
    int64_t *scores = NULL, *rows = NULL, count = 0;
    GD_REQUIRE(g->store, GD_ERR_INTERNAL, "the GPU neighbour-list cache needs the graph's store");
    GD_ALLOC(scores, (size_t)n * sizeof(int64_t), "the GPU cache's node scores");
    GD_ALLOC(rows, (size_t)n * sizeof(int64_t), "the GPU cache's node ranking");
    if (!out_degrees) {
        GD_CHECK(gd__graph_out_degrees(g, scores));
        out_degrees = scores; /* ranked in place */
    }
    GD_CHECK(gd__graph_rank_lists(g, indptr, out_degrees, scores, rows, &count));
    GD_CHECK(gd__tier_cache_build(g->store, rows, count, budget));
    g->cache_budget = budget;
    cache_views(g);
    GD_DEBUG("graph: GPU cache of %lld lists, %lld entries (%lld of %lld budget bytes)",
             (long long)g->cache_nodes, (long long)g->cache_edges, (long long)g->cache_bytes,
             (long long)budget);
fail:
    gd_free(scores);
    gd_free(rows);
    return st;
}

gd_status gd__graph_out_degrees(const gd_graph_t *g, int64_t *scores) {
    gd_status st = GD_OK;
    if (g->d_indices && g->num_edges > 0) {
        st = backend()->out_degrees(g, scores);
        if (st != GD_OK) gd__error_context(st, "counting the out-degrees on GPU %d", g->device);
        return st;
    }
    GD_REQUIRE(g->h_indices || g->num_edges == 0, GD_ERR_INTERNAL,
               "out-degrees: the graph's indices are neither in host memory nor GPU-readable");
    return gd__csc_out_degrees(g->num_nodes, g->num_edges, g->h_indices, g->indices_dtype,
                               scores);
fail:
    return st;
}

gd_status gd__graph_build_cache(gd_graph_t *g, const int64_t *indptr, int64_t budget,
                                const int64_t *out_degrees) {
    gd_status st = GD_OK;
    GD_REQUIRE(g && indptr && budget >= 0, GD_ERR_INVALID_ARG,
               "neighbour-list cache: NULL %s or a budget of %lld bytes",
               !g ? "graph" : "indptr", (long long)budget);
    GD_REQUIRE(g->indices_place == GD_PLACE_PINNED && g->d_indptr && g->store && !g->d_loc &&
                   !g->cache_budget,
               GD_ERR_INVALID_ARG,
               "neighbour-list cache: the graph needs pinned indices, indptr in GPU memory and no "
               "cache yet (indices %s, indptr %s, %s)",
               gd_placement_name(g->indices_place), g->d_indptr ? "on the GPU" : "not",
               g->cache_budget ? "a cache built" : "no cache");
    if (budget == 0) return GD_OK;
    st = build_cache(g, indptr, budget, out_degrees);
    if (st != GD_OK) gd__error_context(st, "building the GPU neighbour-list cache on GPU %d",
                                       g->device);
fail:
    return st;
}

/* Drop g's list cache (and the store that holds it), so that a placed one replaces it. */
static void drop_cache(gd_graph_t *g) {
    if (g->store && g->store->device >= 0 && g->store->loc)
        g->device_bytes -= g->store->map_bytes + g->cache_bytes;
    gd__tier_store_destroy(g->store);
    g->store = NULL;
    g->d_loc = NULL;
    g->d_cache = NULL;
    g->cache_nodes = g->cache_edges = g->cache_bytes = g->cache_budget = 0;
}

gd_status gd__graph_cache_place(gd_graph_t *g, const int64_t *indptr,
                                const gd__tier_cache_rows *own, const gd__tier_cache_rows *peers,
                                int num_peers) {
    gd_status st = GD_OK;
    GD_REQUIRE(g && indptr && own, GD_ERR_INVALID_ARG, "placed list cache: NULL %s",
               !g        ? "graph"
               : !indptr ? "indptr"
                         : "own lists");
    GD_REQUIRE(!g->peers, GD_ERR_INTERNAL,
               "placed list cache: the graph's cache is shared already");
    const int gpu = g->d_indptr && g->d_indices;
    GD_REQUIRE(gpu ? g->indices_place == GD_PLACE_PINNED : g->h_indptr && g->h_indices,
               GD_ERR_INVALID_ARG,
               "placed list cache: the graph's indices are in %s memory; a list cache needs them "
               "pinned (or a host graph, for the CPU reference)",
               gd_placement_name(g->indices_place));
    drop_cache(g);
    if (gpu) {
        GD_CHECK(make_store(g, indptr));
    } else {
        /* The CPU store reads the offsets while the graph lives: the graph's own indptr. */
        const gd__row_shape shape = {g->num_nodes, (int64_t)gd_dtype_size(g->indices_dtype),
                                     g->h_indptr, NULL};
        GD_CHECK(gd__tier_store_create(&shape, -1, GD__TIER_HOST, g->h_indices, g->num_edges,
                                       &g->store));
    }
    GD_CHECK(gd__tier_cache_build_placed(g->store, own, peers, num_peers));
    g->cache_budget = own->budget;
    cache_views(g);
    GD_DEBUG("graph: placed cache of %lld lists, %lld entries (budget %lld bytes), %lld lists "
             "from %d peers",
             (long long)g->cache_nodes, (long long)g->cache_edges, (long long)own->budget,
             (long long)g->store->cache.peer_count, num_peers);
fail:
    return st;
}

const void *gd__graph_cache_mem(const gd_graph_t *g, int64_t *units) {
    *units = g && g->store ? g->store->cache.units : 0;
    return g && g->store ? g->store->cache.mem : NULL;
}

int64_t gd__graph_peer_units(const gd_graph_t *g, int peer) {
    if (!g || !g->store || peer < 0 || peer >= g->store->cache.num_peers) return 0;
    return g->store->cache.peer[peer].count > 0 ? g->store->cache.peer[peer].units : 0;
}

gd_status gd__graph_set_peer(gd_graph_t *g, int peer, const void *base, int64_t units) {
    if (!g || !g->store)
        return gd__error(GD_ERR_INTERNAL, "graph: a peer's list cache without a placed cache");
    return gd__tier_store_set_peer(g->store, peer, base, units);
}

void gd__graph_keep_peers(gd_graph_t *g, gd__peer_view *view) {
    g->peers = view;
}

void gd_graph_destroy(gd_graph_t *g) {
    if (!g) return;
    if (g->peers) {
        /* Every rank stops reading the others' list caches before any rank frees its own. */
        gd__peers_barrier(gd__context_comm(g->context));
        gd__peers_close(g->peers);
        gd_free(g->peers);
    }
    gd__tier_store_destroy(g->store);
    if (g->dev_indptr || g->dev_indices) backend()->release(g);
    gd_host_tensor_destroy(g->pin_indptr);
    gd_host_tensor_destroy(g->pin_indices);
    gd__context_unref(g->context);
    gd_free(g);
}

static gd_status graph_create(int64_t num_nodes, const int64_t *indptr, const void *indices,
                              gd_dtype dtype, const gd_graph_options *options, int read_only,
                              gd_graph_t **out) {
    gd_status st = GD_OK;
    gd_graph_t *g = NULL;
    gd_graph_options o = GD_GRAPH_OPTIONS_INIT;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_graph_create: NULL output handle");
    *out = NULL;
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_graph_create: options",
                                "GD_GRAPH_OPTIONS_INIT"));
    GD_REQUIRE((unsigned)o.indptr_placement < GD_PLACE_COUNT &&
                   (unsigned)o.indices_placement < GD_PLACE_COUNT,
               GD_ERR_INVALID_ARG,
               "gd_graph_create: placements %d / %d are not gd_placement values",
               (int)o.indptr_placement, (int)o.indices_placement);
    GD_REQUIRE(o.gpu_cache_bytes >= 0, GD_ERR_INVALID_ARG,
               "gd_graph_create: gpu_cache_bytes is %lld; pass 0 for no cache",
               (long long)o.gpu_cache_bytes);
    GD_REQUIRE(o.gpu_cache_bytes == 0 || o.indices_placement == GD_PLACE_PINNED, GD_ERR_INVALID_ARG,
               "gd_graph_create: a GPU neighbour-list cache (gpu_cache_bytes %lld) needs pinned "
               "indices, not %s: place them pinned or set gpu_cache_bytes to 0",
               (long long)o.gpu_cache_bytes, gd_placement_name(o.indices_placement));
    GD_REQUIRE(num_nodes >= 0 && num_nodes < INT64_MAX, GD_ERR_INVALID_ARG,
               "gd_graph_create: num_nodes %lld is negative", (long long)num_nodes);
    GD_REQUIRE(indptr, GD_ERR_INVALID_ARG, "gd_graph_create: NULL indptr");
    GD_REQUIRE(dtype == GD_DTYPE_INT32 || dtype == GD_DTYPE_INT64, GD_ERR_INVALID_ARG,
               "gd_graph_create: indices must be int32 or int64, not %s",
               gd_dtype_name(dtype) ? gd_dtype_name(dtype) : "an unknown dtype");
    GD_REQUIRE(dtype == GD_DTYPE_INT64 || num_nodes <= (int64_t)INT32_MAX + 1, GD_ERR_RANGE,
               "gd_graph_create: %lld nodes do not fit int32 indices: store them "
               "as int64",
               (long long)num_nodes);
    GD_REQUIRE(indptr[0] == 0, GD_ERR_FORMAT, "gd_graph_create: indptr[0] is %lld, expected 0",
               (long long)indptr[0]);

    g = gd_calloc(1, sizeof *g);
    GD_REQUIRE(g, GD_ERR_NO_MEMORY, "gd_graph_create: out of memory for the handle");
    g->num_nodes = num_nodes;
    g->num_edges = indptr[num_nodes];
    g->device = 0;
    GD_CHECK(gd__context_acquire(o.context, &g->device, &g->context));
    g->indptr_place = o.indptr_placement;
    g->indices_place = o.indices_placement;
    {
        const int64_t bad = scan_indptr(indptr, num_nodes, &g->max_degree);
        GD_REQUIRE(bad < 0, GD_ERR_FORMAT,
                   "gd_graph_create: indptr decreases at node %lld (%lld -> %lld): "
                   "pass a CSC "
                   "indptr (gd_csc_validate checks one)",
                   (long long)bad, (long long)(bad >= 0 ? indptr[bad] : 0),
                   (long long)(bad >= 0 ? indptr[bad + 1] : 0));
    }
    GD_REQUIRE(g->num_edges == 0 || indices, GD_ERR_INVALID_ARG,
               "gd_graph_create: NULL indices for %lld edges", (long long)g->num_edges);

    /*
     * A copy may narrow the indices; an array used in place keeps its type. Read-only int64
     * indices that fit int32 are still copied narrowed: half the bytes every sample reads.
     */
    const int narrowable = o.narrow_indices && dtype == GD_DTYPE_INT64 &&
                           num_nodes <= (int64_t)INT32_MAX + 1;
    const int copies_indices =
        o.indices_placement == GD_PLACE_GPU ||
        (o.indices_placement == GD_PLACE_PINNED && (o.copy_host || (read_only && narrowable)));
    g->indices_dtype = dtype;
    if (copies_indices && narrowable) g->indices_dtype = GD_DTYPE_INT32;

    if (o.indptr_placement == GD_PLACE_HOST) g->h_indptr = indptr;
    if (o.indices_placement == GD_PLACE_HOST) g->h_indices = indices;
    if (o.indptr_placement == GD_PLACE_PINNED) {
        const void *h = NULL, *d = NULL;
        GD_CHECK(place_pinned(g, indptr, GD_DTYPE_INT64, GD_DTYPE_INT64, num_nodes + 1,
                              o.copy_host, read_only, "indptr", &g->pin_indptr, &h, &d));
        g->h_indptr = h;
        g->d_indptr = d;
    }
    if (o.indices_placement == GD_PLACE_PINNED) {
        const void *h = NULL, *d = NULL;
        /* Pages are locked whole, and a page cannot be registered twice: indices that share a page
         * with an indptr pinned in place are copied. */
        const int shares_page = g->pin_indptr && g->h_indptr == indptr &&
                                pages_overlap(indptr, (size_t)(num_nodes + 1) * sizeof(int64_t),
                                              indices, (size_t)g->num_edges * gd_dtype_size(dtype));
        GD_CHECK(place_pinned(g, indices, dtype, g->indices_dtype, g->num_edges,
                              o.copy_host || shares_page, read_only, "indices", &g->pin_indices,
                              &h, &d));
        g->h_indices = h;
        g->d_indices = d;
    }
    /* A cache also puts indptr in GPU memory (the host copy, if any, stays for the CPU). */
    const int indptr_to_gpu = o.indptr_placement == GD_PLACE_GPU || o.gpu_cache_bytes > 0;
    if (indptr_to_gpu || o.indices_placement == GD_PLACE_GPU) {
        st = backend()->to_device(g, indptr_to_gpu ? indptr : NULL,
                                  o.indices_placement == GD_PLACE_GPU ? indices : NULL, dtype);
        if (st != GD_OK) {
            gd__error_context(st, "placing the graph in GPU %d memory", g->device);
            goto fail;
        }
    }
    GD_CHECK(make_store(g, indptr));
    if (o.gpu_cache_bytes > 0) {
        st = build_cache(g, indptr, o.gpu_cache_bytes, o.out_degrees);
        if (st != GD_OK) {
            gd__error_context(st, "building the GPU neighbour-list cache on GPU %d", g->device);
            goto fail;
        }
    }
    GD_DEBUG("graph: %lld nodes, %lld edges (max degree %lld), indptr %s, "
             "indices %s %s",
             (long long)g->num_nodes, (long long)g->num_edges, (long long)g->max_degree,
             gd_placement_name(g->indptr_place), gd_placement_name(g->indices_place),
             gd_dtype_name(g->indices_dtype));
    *out = g;
    return GD_OK;
fail:
    gd_graph_destroy(g);
    return st;
}

gd_status gd_graph_create(int64_t num_nodes, const int64_t *indptr, const void *indices,
                          gd_dtype indices_dtype, const gd_graph_options *options,
                          gd_graph_t **out) {
    return graph_create(num_nodes, indptr, indices, indices_dtype, options, 0, out);
}

gd_status gd_graph_create_from_dataset(const gd_dataset_t *ds, const gd_graph_options *options,
                                       gd_graph_t **out) {
    gd_status st = GD_OK;
    gd_array_view ip, ix;
    if (out) *out = NULL;
    GD_REQUIRE(ds, GD_ERR_INVALID_ARG, "gd_graph_create_from_dataset: NULL dataset");
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    GD_REQUIRE(ip.dtype == GD_DTYPE_INT64 && ip.shape[0] == ds->num_nodes + 1, GD_ERR_FORMAT,
               "dataset %s: indptr is %s[%lld], expected int64[%lld]",
               ds->name ? ds->name : "(unnamed)", gd_dtype_name(ip.dtype), (long long)ip.shape[0],
               (long long)ds->num_nodes + 1);
    {
        /* Page-locking a read-only file mapping is not portable: such arrays are copied. */
        const int read_only = ds->arrays[GD_ARRAY_INDPTR].store == GD__STORE_MAP_RO ||
                              ds->arrays[GD_ARRAY_INDICES].store == GD__STORE_MAP_RO;
        st = graph_create(ds->num_nodes, ip.data, ix.data, ix.dtype, options, read_only, out);
    }
    if (st != GD_OK) gd__error_context(st, "dataset %s", ds->name ? ds->name : "(unnamed)");
    return st;
fail:
    return st;
}

int gd_graph_is_cached(const gd_graph_t *g, int64_t node) {
    if (!g || node < 0 || node >= g->num_nodes) return 0;
    return gd__tier_cache_holds(g->store, node);
}

gd_status gd_graph_get_info(const gd_graph_t *g, gd_graph_info *info) {
    if (!g || !info) return gd__error(GD_ERR_INVALID_ARG, "gd_graph_get_info: NULL argument");
    gd_graph_info i = GD_GRAPH_INFO_INIT;
    i.num_nodes = g->num_nodes;
    i.num_edges = g->num_edges;
    i.max_degree = g->max_degree;
    i.indices_dtype = g->indices_dtype;
    i.indptr_placement = g->indptr_place;
    i.indices_placement = g->indices_place;
    i.device_bytes = g->device_bytes;
    i.pinned_bytes = g->pinned_bytes;
    i.cache_nodes = g->cache_nodes;
    i.cache_edges = g->cache_edges;
    i.cache_bytes = g->cache_bytes;
    return gd__info_out(info, &i, sizeof i, "gd_graph_get_info: info", "GD_GRAPH_INFO_INIT");
}
