/*
 * The consistency checks of a dataset (gd__dataset_check), run when one is opened and before a
 * built one is published: each array's dtype and shape against the counts in meta.json, and,
 * when asked, every value (indptr never decreasing, indices and split ids in range, labels
 * below num_classes, features finite, split ids distinct and the three splits disjoint), and
 * num_classes no larger than 2^20 or the number of labelled nodes. A
 * message names the array, the first bad position and its value; the scans over every element
 * run in parallel and still report the lowest one.
 */
#include "core/hostmem.h"
#include "io/dataset.h"
#include "io/meta.h"

#include <stdio.h>
#include <string.h>

/* More classes than this need at least as many labelled nodes (check_num_classes). */
#define GD__MAX_PLAIN_CLASSES (INT64_C(1) << 20)

/*
 * The O(E) scans run in parallel and keep the lowest bad position through a min-reduction,
 * so the reported error is the same whatever the thread count.
 */
#define GD_PRAGMA_(x) _Pragma(#x)
#ifdef _OPENMP
#define GD_PAR_FIRST(var, n)                                                               \
    GD_PRAGMA_(omp parallel for reduction(min : var) schedule(static) if ((n) > 65536)     \
                   num_threads(gd__num_threads()))
#else
#define GD_PAR_FIRST(var, n)
#endif

/* Lowest position whose value is outside [lo, hi), or n if there is none. */
static int64_t first_out_of_range(const gd__array *a, int64_t n, int64_t lo, int64_t hi) {
    int64_t first = n;
    if (a->dtype == GD_DTYPE_INT32) {
        const int32_t *x = a->data;
        GD_PAR_FIRST(first, n)
        for (int64_t i = 0; i < n; i++)
            if ((x[i] < lo || x[i] >= hi) && i < first) first = i;
    } else {
        const int64_t *x = a->data;
        GD_PAR_FIRST(first, n)
        for (int64_t i = 0; i < n; i++)
            if ((x[i] < lo || x[i] >= hi) && i < first) first = i;
    }
    return first;
}

int64_t gd__array_max_label(const gd__array *a) {
    if (a->dtype != GD_DTYPE_INT32 && a->dtype != GD_DTYPE_INT64) return -1;
    int64_t best = -1, n = a->shape[0];
    for (int64_t i = 0; i < n; i++) {
        int64_t v = gd__array_int(a, i);
        if (v > best) best = v;
    }
    return best;
}

/* Labelled entries (>= 0) of labels. */
static int64_t count_labelled(const gd__array *a, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += gd__array_int(a, i) >= 0;
    return k;
}

/*
 * A class count beyond every plausible task (a label of 10^9 makes 10^9 classes, and a model
 * whose output layer alone takes hidden x 4 GB) is refused, unless there are at least as many
 * labelled nodes as classes. Counting the labelled nodes is paid only past the plain cap.
 */
static gd_status check_num_classes(const gd_dataset_t *ds, const gd__array *l) {
    if (ds->num_classes <= GD__MAX_PLAIN_CLASSES) return GD_OK;
    const int64_t labelled = l->store != GD__STORE_NONE ? count_labelled(l, ds->num_nodes) : 0;
    if (ds->num_classes <= labelled) return GD_OK;
    return gd__error(GD_ERR_RANGE,
                     "dataset '%s': num_classes is %lld (the largest label + 1) but only %lld "
                     "nodes are labelled; labels must be class numbers 0..K-1: renumber them "
                     "(e.g. numpy.unique(labels, return_inverse=True)) and convert or save the "
                     "dataset again",
                     ds->name, (long long)ds->num_classes, (long long)labelled);
}

/* Lowest i with indptr[i + 1] < indptr[i], or n. */
static int64_t first_decrease(const int64_t *p, int64_t n) {
    int64_t first = n;
    GD_PAR_FIRST(first, n)
    for (int64_t i = 0; i < n; i++)
        if (p[i + 1] < p[i] && i < first) first = i;
    return first;
}

/* Lowest element that is NaN or infinite, or n. */
static int64_t first_non_finite(const gd__array *a, int64_t n) {
    int64_t first = n;
    if (a->dtype == GD_DTYPE_FLOAT32) {
        const uint32_t *x = a->data;
        GD_PAR_FIRST(first, n)
        for (int64_t i = 0; i < n; i++)
            if ((x[i] & 0x7f800000u) == 0x7f800000u && i < first) first = i;
    } else {
        const uint16_t *x = a->data;
        uint16_t mask = a->dtype == GD_DTYPE_FLOAT16 ? 0x7c00u : 0x7f80u;
        GD_PAR_FIRST(first, n)
        for (int64_t i = 0; i < n; i++)
            if ((x[i] & mask) == mask && i < first) first = i;
    }
    return first;
}

static double float_at(const gd__array *a, int64_t i) {
    if (a->dtype == GD_DTYPE_FLOAT32) return ((const float *)a->data)[i];
    uint16_t h = ((const uint16_t *)a->data)[i];
    return a->dtype == GD_DTYPE_FLOAT16 ? gd_half_to_float(h) : gd_bfloat16_to_float(h);
}

/* Position of the first element of split s (positions [0, end)) equal to v, or -1. */
static int64_t find_id(const gd__array *s, int64_t end, int64_t v) {
    for (int64_t i = 0; i < end; i++)
        if (gd__array_int(s, i) == v) return i;
    return -1;
}

static const char *const split_word[3] = {"train", "valid", "test"};

/*
 * A node id seen twice: in the same split (the sampler would later refuse the minibatch that
 * holds both, at an epoch that depends on the seed, and a resume would fail at the same one),
 * or in two splits (evaluation would score training nodes). The first occurrence is found by
 * a second scan, paid only when the dataset is already refused.
 */
static gd_status repeated_id(const gd_dataset_t *ds, int split, int64_t pos, int64_t v) {
    const gd__array *cur = &ds->arrays[GD_ARRAY_TRAIN_IDX + split];
    const char *file = gd__meta_default_file((gd_array_id)(GD_ARRAY_TRAIN_IDX + split));
    int64_t first = find_id(cur, pos, v);
    if (first >= 0)
        return gd__error(GD_ERR_FORMAT,
                         "%s: node id %lld appears at positions %lld and %lld; a split must "
                         "hold distinct node ids: deduplicate the %s split (e.g. numpy.unique) "
                         "and save or convert the dataset again",
                         file, (long long)v, (long long)first, (long long)pos, split_word[split]);
    for (int k = 0; k < split; k++) {
        const gd__array *other = &ds->arrays[GD_ARRAY_TRAIN_IDX + k];
        if (other->store == GD__STORE_NONE) continue;
        first = find_id(other, other->shape[0], v);
        if (first >= 0)
            return gd__error(GD_ERR_FORMAT,
                             "%s: node id %lld at position %lld is also in the %s split (%s, "
                             "position %lld); the train, valid and test splits must be "
                             "disjoint: remove it from one of them",
                             file, (long long)v, (long long)pos, split_word[k],
                             gd__meta_default_file((gd_array_id)(GD_ARRAY_TRAIN_IDX + k)),
                             (long long)first);
    }
    return gd__error(GD_ERR_INTERNAL, "%s: node id %lld at position %lld was seen before",
                     file, (long long)v, (long long)pos);
}

/*
 * Every split id distinct, within a split and across the three: one bit per node, so the
 * pass is O(num_nodes + split sizes) whatever the order of the ids. The ids are already known
 * to be in [0, num_nodes).
 */
static gd_status check_splits_distinct(const gd_dataset_t *ds) {
    gd_status st = GD_OK;
    uint64_t *seen = NULL;
    const int64_t n = ds->num_nodes;
    int any = 0;
    for (int k = 0; k < 3; k++) any |= ds->arrays[GD_ARRAY_TRAIN_IDX + k].store != GD__STORE_NONE;
    if (!any) return GD_OK;
    GD_ALLOC(seen, ((size_t)n + 63) / 64 * sizeof *seen, "the split check's node bitmap");
    memset(seen, 0, ((size_t)n + 63) / 64 * sizeof *seen);
    for (int k = 0; k < 3; k++) {
        const gd__array *s = &ds->arrays[GD_ARRAY_TRAIN_IDX + k];
        if (s->store == GD__STORE_NONE) continue;
        for (int64_t i = 0; i < s->shape[0]; i++) {
            const int64_t v = gd__array_int(s, i);
            const uint64_t bit = (uint64_t)1 << (v & 63);
            if (seen[v >> 6] & bit) GD_CHECK(repeated_id(ds, k, i, v));
            seen[v >> 6] |= bit;
        }
    }
fail:
    gd_free(seen);
    return st;
}

/* dtype, rank and shape of one array against what the counts require. */
static gd_status check_layout(const gd_dataset_t *ds, int id, int ndim, int64_t d0,
                              int64_t d1, const char *expect) {
    const gd__array *a = &ds->arrays[id];
    const char *allowed;
    char file[GD__TYPE_NAME_MAX + 32], name[GD__TYPE_NAME_MAX + 32];
    gd__array_slot_file(&ds->schema, id, file, sizeof file);
    gd__array_slot_name(&ds->schema, id, name, sizeof name);
    if (!gd__array_dtype_ok(id, a->dtype, &allowed))
        return gd__error(GD_ERR_FORMAT, "%s: dtype is %s; %s must be %s", file,
                         gd_dtype_name(a->dtype), name, allowed);
    int64_t bytes = gd__array_bytes(a);
    if (a->ndim != ndim || bytes < 0 || (d0 >= 0 && a->shape[0] != d0) ||
        (ndim == 2 && d1 >= 0 && a->shape[1] != d1)) {
        char got[64];
        gd__array_shape_text(got, sizeof got, a->ndim, a->shape);
        return gd__error(GD_ERR_FORMAT, "%s: shape is %s; expected %s", file, got, expect);
    }
    if (bytes > 0 && !a->data)
        return gd__error(GD_ERR_INVALID_ARG, "%s: the array has no data", file);
    return GD_OK;
}

/*
 * The lowest edge position whose edge type is out of range, joins the wrong node types, or
 * comes before a smaller type in its destination's list (a node's neighbours of one relation
 * are one contiguous run); e if there is none.
 */
static int64_t first_bad_edge(const gd_dataset_t *ds) {
    const gd__schema *sc = &ds->schema;
    const int64_t *indptr = ds->arrays[GD_ARRAY_INDPTR].data;
    const int64_t *off = ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET].data;
    const gd__array *ix = &ds->arrays[GD_ARRAY_INDICES], *et = &ds->arrays[GD__ARRAY_EDGE_TYPE];
    const int64_t n = ds->num_nodes, e = ds->num_edges;
    const int T = sc->num_node_types, R = sc->num_edge_types;
    int64_t first = e;
    GD_PAR_FIRST(first, e)
    for (int64_t v = 0; v < n; v++) {
        const int dt = gd__node_type_of(off, T, v);
        int prev = -1;
        for (int64_t i = indptr[v]; i < indptr[v + 1]; i++) {
            const int r = gd__edge_type_at(et->data, et->dtype, i);
            if (r < 0 || r >= R || r < prev || sc->edge_dst[r] != dt ||
                sc->edge_src[r] != gd__node_type_of(off, T, gd__array_int(ix, i))) {
                if (i < first) first = i;
                break;
            }
            prev = r;
        }
    }
    return first;
}

/* What is wrong with edge i, which first_bad_edge found. */
static gd_status bad_edge(const gd_dataset_t *ds, int64_t i) {
    const gd__schema *sc = &ds->schema;
    const int64_t *indptr = ds->arrays[GD_ARRAY_INDPTR].data;
    const int64_t *off = ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET].data;
    const gd__array *ix = &ds->arrays[GD_ARRAY_INDICES], *et = &ds->arrays[GD__ARRAY_EDGE_TYPE];
    const int T = sc->num_node_types;
    /* The destination: the node whose list holds position i. */
    int64_t lo = 0, hi = ds->num_nodes;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    const int64_t v = lo, u = gd__array_int(ix, i);
    const int r = gd__edge_type_at(et->data, et->dtype, i);
    if (r < 0 || r >= sc->num_edge_types)
        return gd__error(GD_ERR_RANGE, "edge_type.npy: element %lld is %d, outside [0, %d) (the "
                         "edge types)", (long long)i, r, sc->num_edge_types);
    if (i > indptr[v] && gd__edge_type_at(et->data, et->dtype, i - 1) > r)
        return gd__error(GD_ERR_FORMAT,
                         "edge_type.npy: element %lld is %d after %d in node %lld's list; each "
                         "node's in-neighbours must be sorted by edge type (convert and "
                         "generate write them so)",
                         (long long)i, r, gd__edge_type_at(et->data, et->dtype, i - 1), (long long)v);
    const int dt = gd__node_type_of(off, T, v), st = gd__node_type_of(off, T, u);
    return gd__error(GD_ERR_FORMAT,
                     "edge_type.npy: element %lld says edge %lld -> %lld is (%s, %s, %s), but the "
                     "nodes are of types %s and %s",
                     (long long)i, (long long)u, (long long)v, sc->node_type[sc->edge_src[r]],
                     sc->edge_type[r], sc->node_type[sc->edge_dst[r]], sc->node_type[st],
                     sc->node_type[dt]);
}

/* The arrays of a heterogeneous graph: type offsets, edge types, per-type features, splits. */
static gd_status check_hetero(const gd_dataset_t *ds, int validate_graph) {
    gd_status st = GD_OK;
    char expect[160];
    const gd__schema *sc = &ds->schema;
    const int T = sc->num_node_types;
    const int64_t n = ds->num_nodes, e = ds->num_edges;
    GD_CHECK(gd__schema_check(sc, ds->name));
    GD_REQUIRE(ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET].store != GD__STORE_NONE &&
                   ds->arrays[GD__ARRAY_EDGE_TYPE].store != GD__STORE_NONE,
               GD_ERR_FORMAT, "dataset '%s' has node types but no %s array", ds->name,
               ds->arrays[GD__ARRAY_EDGE_TYPE].store == GD__STORE_NONE ? "edge_type"
                                                                       : "node_type_offset");
    GD_REQUIRE(ds->arrays[GD_ARRAY_FEATURES].store == GD__STORE_NONE, GD_ERR_FORMAT,
               "dataset '%s': a heterogeneous dataset has one feature table per node type, not "
               "features.npy",
               ds->name);
    snprintf(expect, sizeof expect, "(%d,) (node types + 1)", T + 1);
    GD_CHECK(check_layout(ds, GD__ARRAY_NODE_TYPE_OFFSET, 1, T + 1, 1, expect));
    snprintf(expect, sizeof expect, "(%lld,) (num_edges)", (long long)e);
    GD_CHECK(check_layout(ds, GD__ARRAY_EDGE_TYPE, 1, e, 1, expect));
    const int64_t *off = ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET].data;
    GD_REQUIRE(off[0] == 0 && off[T] == n, GD_ERR_FORMAT,
               "node_type_offset.npy: elements 0 and %d are %lld and %lld; they must be 0 and "
               "num_nodes (%lld)",
               T, (long long)off[0], (long long)off[T], (long long)n);
    for (int t = 0; t < T; t++)
        GD_REQUIRE(off[t] <= off[t + 1], GD_ERR_FORMAT,
                   "node_type_offset.npy: element %d (%lld) is less than element %d (%lld); the "
                   "offsets must be non-decreasing",
                   t + 1, (long long)off[t + 1], t, (long long)off[t]);
    for (int t = 0; t < T; t++) {
        const int id = GD__ARRAY_TYPE_FEATURES + t;
        const gd__array *f = &ds->arrays[id];
        if (f->store == GD__STORE_NONE) continue;
        const int64_t rows = off[t + 1] - off[t];
        snprintf(expect, sizeof expect, "(%lld, F) (the %s nodes, any width)", (long long)rows,
                 sc->node_type[t]);
        GD_CHECK(check_layout(ds, id, 2, rows, -1, expect));
        if (validate_graph) {
            const int64_t dim = f->shape[1], count = rows * dim;
            const int64_t i = first_non_finite(f, count);
            char file[GD__TYPE_NAME_MAX + 32];
            gd__array_slot_file(sc, id, file, sizeof file);
            GD_REQUIRE(i == count, GD_ERR_FORMAT,
                       "%s: element (%lld, %lld) is %g; features must be finite", file,
                       (long long)(i / (dim ? dim : 1)), (long long)(i % (dim ? dim : 1)),
                       i < count ? float_at(f, i) : 0.0);
        }
    }
    if (validate_graph) {
        const int64_t i = first_bad_edge(ds);
        if (i < e) GD_CHECK(bad_edge(ds, i));
        const int64_t lo = off[sc->target_type], hi = off[sc->target_type + 1];
        for (int id = GD_ARRAY_TRAIN_IDX; id <= GD_ARRAY_TEST_IDX; id++) {
            const gd__array *s = &ds->arrays[id];
            if (s->store == GD__STORE_NONE) continue;
            const int64_t k = s->shape[0], j = first_out_of_range(s, k, lo, hi);
            GD_REQUIRE(j == k, GD_ERR_RANGE,
                       "%s: element %lld is node %lld, not of the target type %s (ids [%lld, "
                       "%lld))",
                       gd__meta_default_file((gd_array_id)id), (long long)j,
                       (long long)(j < k ? gd__array_int(s, j) : 0), sc->node_type[sc->target_type],
                       (long long)lo, (long long)hi);
        }
    }
fail:
    return st;
}

gd_status gd__dataset_check(const gd_dataset_t *ds, int validate_graph) {
    gd_status st = GD_OK;
    char expect[128];
    GD_REQUIRE(ds, GD_ERR_INVALID_ARG, "gd__dataset_check: ds must not be NULL");
    const int64_t n = ds->num_nodes, e = ds->num_edges;
    GD_REQUIRE(n >= 0 && n < INT64_MAX && e >= 0 && ds->feature_dim >= 0 && ds->num_classes >= 0,
               GD_ERR_RANGE,
               "dataset '%s': negative count (num_nodes %lld, num_edges %lld, feature_dim %lld, "
               "num_classes %lld)",
               ds->name, (long long)n, (long long)e, (long long)ds->feature_dim,
               (long long)ds->num_classes);
    const gd__array *ip = &ds->arrays[GD_ARRAY_INDPTR], *ix = &ds->arrays[GD_ARRAY_INDICES];
    GD_REQUIRE(ip->store != GD__STORE_NONE && ix->store != GD__STORE_NONE, GD_ERR_FORMAT,
               "dataset '%s' has no %s array; every dataset needs indptr and indices", ds->name,
               ip->store == GD__STORE_NONE ? "indptr" : "indices");

    snprintf(expect, sizeof expect, "(%lld,) (num_nodes + 1)", (long long)(n + 1));
    GD_CHECK(check_layout(ds, GD_ARRAY_INDPTR, 1, n + 1, 1, expect));
    snprintf(expect, sizeof expect, "(%lld,) (num_edges)", (long long)e);
    GD_CHECK(check_layout(ds, GD_ARRAY_INDICES, 1, e, 1, expect));
    const int64_t *indptr = ip->data;
    GD_REQUIRE(indptr[0] == 0, GD_ERR_FORMAT, "indptr.npy: element 0 is %lld; it must be 0",
               (long long)indptr[0]);
    GD_REQUIRE(indptr[n] == e, GD_ERR_FORMAT,
               "indptr.npy: element %lld (the last) is %lld; it must equal num_edges %lld",
               (long long)n, (long long)indptr[n], (long long)e);
    if (validate_graph) {
        int64_t i = first_decrease(indptr, n);
        GD_REQUIRE(i == n, GD_ERR_FORMAT,
                   "indptr.npy: element %lld is %lld, less than element %lld (%lld); indptr "
                   "must be non-decreasing",
                   (long long)(i + 1), (long long)(i < n ? indptr[i + 1] : 0), (long long)i,
                   (long long)(i < n ? indptr[i] : 0));
        i = first_out_of_range(ix, e, 0, n);
        GD_REQUIRE(i == e, GD_ERR_RANGE,
                   "indices.npy: element %lld is %lld, outside [0, %lld) (num_nodes)",
                   (long long)i, (long long)(i < e ? gd__array_int(ix, i) : 0), (long long)n);
    }

    const gd__array *f = &ds->arrays[GD_ARRAY_FEATURES];
    if (f->store != GD__STORE_NONE) {
        snprintf(expect, sizeof expect, "(%lld, %lld) (num_nodes, feature_dim)", (long long)n,
                 (long long)ds->feature_dim);
        GD_CHECK(check_layout(ds, GD_ARRAY_FEATURES, 2, n, ds->feature_dim, expect));
        if (validate_graph) {
            int64_t count = n * ds->feature_dim; /* fits: the byte count was checked */
            int64_t i = first_non_finite(f, count);
            GD_REQUIRE(i == count, GD_ERR_FORMAT,
                       "features.npy: element (%lld, %lld) is %g; features must be finite",
                       (long long)(i / (ds->feature_dim ? ds->feature_dim : 1)),
                       (long long)(i % (ds->feature_dim ? ds->feature_dim : 1)),
                       i < count ? float_at(f, i) : 0.0);
        }
    } else {
        GD_REQUIRE(ds->feature_dim == 0, GD_ERR_FORMAT,
                   "dataset '%s': feature_dim is %lld but there is no features array", ds->name,
                   (long long)ds->feature_dim);
    }

    const gd__array *l = &ds->arrays[GD_ARRAY_LABELS];
    if (l->store != GD__STORE_NONE) {
        snprintf(expect, sizeof expect, "(%lld,) (num_nodes)", (long long)n);
        GD_CHECK(check_layout(ds, GD_ARRAY_LABELS, 1, n, 1, expect));
        int64_t i = first_out_of_range(l, n, -1, ds->num_classes);
        GD_REQUIRE(i == n, GD_ERR_RANGE,
                   "labels.npy: element %lld is %lld, outside [-1, %lld) (num_classes; -1 means "
                   "unlabelled)",
                   (long long)i, (long long)(i < n ? gd__array_int(l, i) : 0),
                   (long long)ds->num_classes);
    }
    GD_CHECK(check_num_classes(ds, l));

    for (int id = GD_ARRAY_TRAIN_IDX; id <= GD_ARRAY_TEST_IDX; id++) {
        const gd__array *s = &ds->arrays[id];
        if (s->store == GD__STORE_NONE) continue;
        GD_CHECK(check_layout(ds, (gd_array_id)id, 1, -1, 1, "a 1-D array of node ids"));
        int64_t k = s->shape[0];
        int64_t i = first_out_of_range(s, k, 0, n);
        GD_REQUIRE(i == k, GD_ERR_RANGE, "%s: element %lld is %lld, outside [0, %lld) (num_nodes)",
                   gd__meta_default_file((gd_array_id)id), (long long)i,
                   (long long)(i < k ? gd__array_int(s, i) : 0), (long long)n);
    }
    if (validate_graph) GD_CHECK(check_splits_distinct(ds));
    if (ds->schema.num_node_types > 0) {
        GD_CHECK(check_hetero(ds, validate_graph));
    } else {
        for (int id = GD_ARRAY_COUNT; id < GD__ARRAY_SLOTS; id++)
            GD_REQUIRE(ds->arrays[id].store == GD__STORE_NONE, GD_ERR_INTERNAL,
                       "dataset '%s': a homogeneous dataset holds a heterogeneous array",
                       ds->name);
    }
fail:
    return st;
}

gd_status gd__dataset_memory_check(int64_t nodes, int64_t edges, int64_t dim, int64_t dtype_bytes,
                                   int64_t scratch, const char *what) {
    /* In doubles, so that absurd sizes compare as absurd instead of wrapping. */
    const double bytes = 8.0 * (double)(nodes + 1) + (nodes > INT32_MAX ? 8.0 : 4.0) * (double)edges +
                         (double)nodes * (double)dim * (double)dtype_bytes +
                         16.0 * (double)nodes + (double)scratch;
    const int64_t need = bytes >= 9e18 ? INT64_MAX : (int64_t)bytes;
    return gd__host_mem_check(need, 0, what,
                              "write it to disk instead (generate --out DIR: its files are "
                              "mapped, not held in memory), or choose a smaller preset or node "
                              "count; GD_HOST_MEM_MB sets the budget");
}
