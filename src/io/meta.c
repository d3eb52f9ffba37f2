/*
 * meta.json, the description of a dataset directory. It names the arrays and states their
 * dtypes and shapes, so a reader can check every .npy header against it before trusting a
 * single byte of data, and it carries the counts the rest of the library sizes its buffers by.
 * The parser is fuzzed: it bounds every number, every string and the file itself.
 *
 * The format, version 1 (keys in this order when written; unknown top-level keys are ignored
 * on read so that later minor additions stay readable):
 *
 *   {
 *     "format": "graphdirect-dataset",     required, exactly this string
 *     "version": 1,                        required, exactly 1
 *     "name": "cora",                      required string (at most 1024 bytes)
 *     "num_nodes": 2708,                   required integer in [0, 2^53]
 *     "num_edges": 10556,                  required integer in [0, 2^53]
 *     "feature_dim": 1433,                 integer in [0, 2^53]; 0 or absent: no features
 *     "num_classes": 7,                    integer in [0, 2^53]; 0 or absent: no labels
 *     "graph": "csc",                      required, exactly "csc": indptr/indices list the
 *                                          in-neighbours (sources) of each destination node
 *     "arrays": {                          required object; only the arrays present appear
 *       "indptr":    {"file": "indptr.npy",    "dtype": "int64",   "shape": [N + 1]},
 *       "indices":   {"file": "indices.npy",   "dtype": "int32",   "shape": [E]},
 *       "features":  {"file": "features.npy",  "dtype": "float32", "shape": [N, F]},
 *       "labels":    {"file": "labels.npy",    "dtype": "int64",   "shape": [N]},
 *       "train_idx": {"file": "train_idx.npy", "dtype": "int64",   "shape": [K]},
 *       "valid_idx": {...}, "test_idx": {...}
 *     },
 *     "info": {"source": "...", ...}       optional object of string -> string (at most 16)
 *   }
 *
 * Rules checked on read: indptr and indices are required; indptr is int64 of shape [N + 1];
 * indices is int32 or int64 of shape [E]; features is float32, float16 or bfloat16 of shape
 * [N, F] with F = feature_dim (feature_dim must be 0 without features); labels is int32 or
 * int64 of shape [N]; the split arrays are int32 or int64, 1-D of any length. A bfloat16 array
 * is stored in its .npy as '<u2' since numpy has no bfloat16. A "file" is a plain name: not
 * empty, at most 255 bytes, no '/', '\', "..", leading '.' or control characters, and no two
 * arrays share one. Integers are written without exponent so Python's json reads them as int.
 */
#include "io/meta.h"

#include "core/json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *array_files[GD_ARRAY_COUNT] = {
    "indptr.npy", "indices.npy",   "features.npy", "labels.npy",
    "train_idx.npy", "valid_idx.npy", "test_idx.npy",
};

const char *gd__meta_default_file(gd_array_id id) {
    return ((unsigned)id < GD_ARRAY_COUNT) ? array_files[id] : "invalid.npy";
}

bool gd__array_dtype_ok(int id, gd_dtype dtype, const char **expected) {
    const char *e;
    bool ok;
    if (id >= GD__ARRAY_TYPE_FEATURES) id = GD_ARRAY_FEATURES;
    switch (id) {
    case GD__ARRAY_NODE_TYPE_OFFSET:
    case GD_ARRAY_INDPTR:
        e = "int64";
        ok = dtype == GD_DTYPE_INT64;
        break;
    case GD__ARRAY_EDGE_TYPE:
        e = "int8, uint8 or int16";
        ok = dtype == GD_DTYPE_INT8 || dtype == GD_DTYPE_UINT8 || dtype == GD_DTYPE_INT16;
        break;
    case GD_ARRAY_FEATURES:
        e = "float32, float16 or bfloat16";
        ok = dtype == GD_DTYPE_FLOAT32 || dtype == GD_DTYPE_FLOAT16 ||
             dtype == GD_DTYPE_BFLOAT16;
        break;
    default:
        e = "int32 or int64";
        ok = dtype == GD_DTYPE_INT32 || dtype == GD_DTYPE_INT64;
        break;
    }
    if (expected) *expected = e;
    return ok;
}

void gd__meta_free(gd__meta *m) {
    if (!m) return;
    gd_free(m->name);
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) gd_free(m->arrays[i].file);
    for (int i = 0; i < m->num_info; i++) {
        gd_free(m->info_key[i]);
        gd_free(m->info_value[i]);
    }
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ parser */

/* An integer-valued JSON number in [0, 2^53], or an error naming the field and value. */
static gd_status get_count(const cJSON *v, const char *what, const char *field, int64_t *out) {
    if (!cJSON_IsNumber(v))
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is not a number (expected an integer in "
                         "[0, 2^53])", what, field);
    double d = v->valuedouble;
    if (!isfinite(d) || d < 0 || d > (double)GD__META_MAX_COUNT || d != floor(d))
        return gd__error(GD_ERR_RANGE, "%s: field '%s' is %.17g; expected an integer in [0, 2^53]",
                         what, field, d);
    *out = (int64_t)d;
    return GD_OK;
}

static gd_status dup_string(const char *s, char **out) {
    *out = gd__strdup(s);
    if (!*out) return gd__error(GD_ERR_NO_MEMORY, "out of memory copying a meta.json string");
    return GD_OK;
}

static gd_status check_file_name(const char *what, const char *field, const char *s) {
    size_t n = strlen(s);
    bool bad = n == 0 || n > 255 || s[0] == '.' || strstr(s, "..") || strchr(s, '/') ||
               strchr(s, '\\');
    for (size_t i = 0; i < n && !bad; i++)
        if ((unsigned char)s[i] < 32) bad = true;
    if (bad)
        return gd__error(GD_ERR_FORMAT,
                         "%s: field '%s' is \"%.64s\"; expected a plain file name inside the "
                         "dataset directory (no '/', '..', leading '.', at most 255 bytes)",
                         what, field, s);
    return GD_OK;
}

static bool parse_dtype_name(const char *s, gd_dtype *out) {
    for (int d = 1; d <= GD_DTYPE_BOOL; d++) {
        if (strcmp(s, gd_dtype_name((gd_dtype)d)) == 0) {
            *out = (gd_dtype)d;
            return true;
        }
    }
    return false;
}

static gd_status parse_array(const cJSON *a, int id, const char *what, gd__meta *m) {
    gd__meta_array *r = &m->arrays[id];
    char name_buf[GD__TYPE_NAME_MAX + 32];
    const char *name = gd__array_slot_name(&m->schema, id, name_buf, sizeof name_buf);
    char field[GD__TYPE_NAME_MAX + 64];
    gd_status st;
    if (!cJSON_IsObject(a))
        return gd__error(GD_ERR_FORMAT, "%s: field 'arrays.%s' is not an object", what, name);

    const cJSON *file = cJSON_GetObjectItemCaseSensitive(a, "file");
    snprintf(field, sizeof field, "arrays.%s.file", name);
    if (!cJSON_IsString(file) || !file->valuestring)
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is missing or not a string", what, field);
    if ((st = check_file_name(what, field, file->valuestring)) != GD_OK) return st;

    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(a, "dtype");
    snprintf(field, sizeof field, "arrays.%s.dtype", name);
    if (!cJSON_IsString(dtype) || !dtype->valuestring)
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is missing or not a string", what, field);
    gd_dtype dt = GD_DTYPE_INVALID;
    const char *expected;
    if (!parse_dtype_name(dtype->valuestring, &dt))
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is \"%.32s\", an unknown dtype", what,
                         field, dtype->valuestring);
    if (!gd__array_dtype_ok(id, dt, &expected))
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is \"%s\"; %s must be %s", what, field,
                         dtype->valuestring, name, expected);

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(a, "shape");
    snprintf(field, sizeof field, "arrays.%s.shape", name);
    int ndim = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : -1;
    int want = id == GD_ARRAY_FEATURES || id >= GD__ARRAY_TYPE_FEATURES ? 2 : 1;
    if (ndim != want)
        return gd__error(GD_ERR_FORMAT, "%s: field '%s' is not a list of %d integer%s", what,
                         field, want, want == 1 ? "" : "s");
    int64_t dims[2] = {1, 1};
    for (int i = 0; i < ndim; i++) {
        char sub[GD__TYPE_NAME_MAX + 80];
        snprintf(sub, sizeof sub, "%s[%d]", field, i);
        if ((st = get_count(cJSON_GetArrayItem(shape, i), what, sub, &dims[i])) != GD_OK)
            return st;
    }
    r->dtype = dt;
    r->ndim = ndim;
    r->shape[0] = dims[0];
    r->shape[1] = dims[1];
    if ((st = dup_string(file->valuestring, &r->file)) != GD_OK) return st;
    r->present = 1;
    return GD_OK;
}

/* The cross-checks between the counts and the array shapes. */
static gd_status check_shapes(const gd__meta *m, const char *what) {
    const gd__meta_array *a = m->arrays;
    if (!a[GD_ARRAY_INDPTR].present || !a[GD_ARRAY_INDICES].present)
        return gd__error(GD_ERR_FORMAT, "%s: 'arrays' lacks '%s', which every dataset needs",
                         what, !a[GD_ARRAY_INDPTR].present ? "indptr" : "indices");
    if (a[GD_ARRAY_INDPTR].shape[0] != m->num_nodes + 1)
        return gd__error(GD_ERR_FORMAT,
                         "%s: field 'arrays.indptr.shape' is [%lld]; expected [%lld] "
                         "(num_nodes + 1)",
                         what, (long long)a[GD_ARRAY_INDPTR].shape[0],
                         (long long)(m->num_nodes + 1));
    if (a[GD_ARRAY_INDICES].shape[0] != m->num_edges)
        return gd__error(GD_ERR_FORMAT,
                         "%s: field 'arrays.indices.shape' is [%lld]; expected [%lld] "
                         "(num_edges)",
                         what, (long long)a[GD_ARRAY_INDICES].shape[0], (long long)m->num_edges);
    if (a[GD_ARRAY_FEATURES].present) {
        const gd__meta_array *f = &a[GD_ARRAY_FEATURES];
        if (f->shape[0] != m->num_nodes || f->shape[1] != m->feature_dim)
            return gd__error(GD_ERR_FORMAT,
                             "%s: field 'arrays.features.shape' is [%lld, %lld]; expected "
                             "[%lld, %lld] (num_nodes, feature_dim)",
                             what, (long long)f->shape[0], (long long)f->shape[1],
                             (long long)m->num_nodes, (long long)m->feature_dim);
    } else if (m->feature_dim != 0) {
        return gd__error(GD_ERR_FORMAT,
                         "%s: field 'feature_dim' is %lld but 'arrays' has no 'features'", what,
                         (long long)m->feature_dim);
    }
    if (a[GD_ARRAY_LABELS].present && a[GD_ARRAY_LABELS].shape[0] != m->num_nodes)
        return gd__error(GD_ERR_FORMAT,
                         "%s: field 'arrays.labels.shape' is [%lld]; expected [%lld] (num_nodes)",
                         what, (long long)a[GD_ARRAY_LABELS].shape[0], (long long)m->num_nodes);
    if (m->schema.num_node_types > 0) {
        const gd__meta_array *off = &a[GD__ARRAY_NODE_TYPE_OFFSET], *et = &a[GD__ARRAY_EDGE_TYPE];
        if (!off->present || !et->present)
            return gd__error(GD_ERR_FORMAT,
                             "%s: 'hetero' is given but 'arrays' lacks '%s', which a "
                             "heterogeneous dataset needs",
                             what, !off->present ? "node_type_offset" : "edge_type");
        if (off->shape[0] != m->schema.num_node_types + 1)
            return gd__error(GD_ERR_FORMAT,
                             "%s: field 'arrays.node_type_offset.shape' is [%lld]; expected "
                             "[%d] (node types + 1)",
                             what, (long long)off->shape[0], m->schema.num_node_types + 1);
        if (et->shape[0] != m->num_edges)
            return gd__error(GD_ERR_FORMAT,
                             "%s: field 'arrays.edge_type.shape' is [%lld]; expected [%lld] "
                             "(num_edges)",
                             what, (long long)et->shape[0], (long long)m->num_edges);
        if (a[GD_ARRAY_FEATURES].present)
            return gd__error(GD_ERR_FORMAT,
                             "%s: a heterogeneous dataset has one feature table per node type "
                             "('features.<type>'), not 'features'",
                             what);
    }
    char ni[GD__TYPE_NAME_MAX + 32], nj[GD__TYPE_NAME_MAX + 32];
    for (int i = 0; i < GD__ARRAY_SLOTS; i++)
        for (int j = i + 1; j < GD__ARRAY_SLOTS; j++)
            if (a[i].present && a[j].present && strcmp(a[i].file, a[j].file) == 0)
                return gd__error(GD_ERR_FORMAT, "%s: arrays '%s' and '%s' both use file \"%s\"",
                                 what, gd__array_slot_name(&m->schema, i, ni, sizeof ni),
                                 gd__array_slot_name(&m->schema, j, nj, sizeof nj), a[i].file);
    return GD_OK;
}

/* A type name of the "hetero" section into dst (GD__TYPE_NAME_MAX + 1 bytes). */
static gd_status type_name(const cJSON *v, const char *what, const char *field, char *dst) {
    if (!cJSON_IsString(v) || !v->valuestring || !gd__type_name_ok(v->valuestring))
        return gd__error(GD_ERR_FORMAT,
                         "%s: field '%s' is not a type name: 1 to %d letters, digits, '_' or '-'",
                         what, field, GD__TYPE_NAME_MAX);
    snprintf(dst, GD__TYPE_NAME_MAX + 1, "%s", v->valuestring);
    return GD_OK;
}

/* The node type called name, or -1. */
static int find_node_type(const gd__schema *sc, const char *name) {
    for (int t = 0; t < sc->num_node_types; t++)
        if (strcmp(sc->node_type[t], name) == 0) return t;
    return -1;
}

/*
 * The "hetero" section: {"node_types": [names], "edge_types": [[src, relation, dst], ...],
 * "target_type": name}.
 */
static gd_status parse_hetero(const cJSON *h, const char *what, gd__schema *sc) {
    gd_status st;
    char field[96], name[GD__TYPE_NAME_MAX + 1];
    if (!cJSON_IsObject(h))
        return gd__error(GD_ERR_FORMAT, "%s: field 'hetero' is not an object", what);
    const cJSON *nt = cJSON_GetObjectItemCaseSensitive(h, "node_types");
    const cJSON *et = cJSON_GetObjectItemCaseSensitive(h, "edge_types");
    const cJSON *tt = cJSON_GetObjectItemCaseSensitive(h, "target_type");
    const int T = cJSON_IsArray(nt) ? cJSON_GetArraySize(nt) : -1;
    const int R = cJSON_IsArray(et) ? cJSON_GetArraySize(et) : -1;
    if (T < 1 || T > GD_MAX_NODE_TYPES)
        return gd__error(GD_ERR_FORMAT, "%s: field 'hetero.node_types' is not a list of 1 to %d "
                         "names", what, GD_MAX_NODE_TYPES);
    if (R < 1 || R > GD_MAX_EDGE_TYPES)
        return gd__error(GD_ERR_FORMAT, "%s: field 'hetero.edge_types' is not a list of 1 to %d "
                         "[source, relation, destination] triples", what, GD_MAX_EDGE_TYPES);
    sc->num_node_types = T;
    sc->num_edge_types = R;
    for (int t = 0; t < T; t++) {
        snprintf(field, sizeof field, "hetero.node_types[%d]", t);
        if ((st = type_name(cJSON_GetArrayItem(nt, t), what, field, sc->node_type[t])) != GD_OK)
            return st;
        /* Before the edge types look names up: a repeated name would be ambiguous. */
        for (int u = 0; u < t; u++)
            if (strcmp(sc->node_type[u], sc->node_type[t]) == 0)
                return gd__error(GD_ERR_FORMAT, "%s: node types %d and %d are both named \"%s\"",
                                 what, u, t, sc->node_type[t]);
    }
    for (int r = 0; r < R; r++) {
        const cJSON *e = cJSON_GetArrayItem(et, r);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3)
            return gd__error(GD_ERR_FORMAT, "%s: field 'hetero.edge_types[%d]' is not a "
                             "[source, relation, destination] triple", what, r);
        for (int k = 0; k < 3; k++) {
            snprintf(field, sizeof field, "hetero.edge_types[%d][%d]", r, k);
            if ((st = type_name(cJSON_GetArrayItem(e, k), what, field,
                                k == 1 ? sc->edge_type[r] : name)) != GD_OK)
                return st;
            if (k == 1) continue;
            const int t = find_node_type(sc, name);
            if (t < 0)
                return gd__error(GD_ERR_FORMAT, "%s: field '%s' is \"%s\", not one of "
                                 "'hetero.node_types'", what, field, name);
            if (k == 0)
                sc->edge_src[r] = t;
            else
                sc->edge_dst[r] = t;
        }
    }
    if ((st = type_name(tt, what, "hetero.target_type", name)) != GD_OK) return st;
    sc->target_type = find_node_type(sc, name);
    if (sc->target_type < 0)
        return gd__error(GD_ERR_FORMAT, "%s: field 'hetero.target_type' is \"%s\", not one of "
                         "'hetero.node_types'", what, name);
    return gd__schema_check(sc, what);
}

/* The array slot a key of "arrays" names, or -1. */
static int find_slot(const gd__meta *m, const char *key) {
    char name[GD__TYPE_NAME_MAX + 32];
    for (int i = 0; i < GD__ARRAY_SLOTS; i++) {
        if (i >= GD_ARRAY_COUNT && m->schema.num_node_types == 0) break;
        if (i >= GD__ARRAY_TYPE_FEATURES + m->schema.num_node_types) break;
        if (strcmp(key, gd__array_slot_name(&m->schema, i, name, sizeof name)) == 0) return i;
    }
    return -1;
}

static const char *const top_keys[] = {"format",      "version",     "name",  "num_nodes",
                                       "num_edges",   "feature_dim", "num_classes",
                                       "graph",       "arrays",      "info", "hetero"};
#define NUM_TOP_KEYS ((int)(sizeof top_keys / sizeof top_keys[0]))

static gd_status parse_tree(const cJSON *root, const char *what, gd__meta *m) {
    gd_status st;
    if (!cJSON_IsObject(root))
        return gd__error(GD_ERR_FORMAT, "%s: the top level is not a JSON object", what);

    /* A repeated key would be read as its first occurrence by one tool and its last by another. */
    int seen[NUM_TOP_KEYS] = {0};
    for (const cJSON *c = root->child; c; c = c->next)
        for (int k = 0; k < NUM_TOP_KEYS; k++)
            if (c->string && strcmp(c->string, top_keys[k]) == 0 && ++seen[k] > 1)
                return gd__error(GD_ERR_FORMAT, "%s: field '%s' appears twice", what, top_keys[k]);

    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, GD__META_FORMAT) != 0)
        return gd__error(GD_ERR_FORMAT,
                         "%s: field 'format' is %s%.40s%s; expected \"" GD__META_FORMAT
                         "\" (is this a graphdirect dataset directory?)",
                         what, cJSON_IsString(format) ? "\"" : "",
                         cJSON_IsString(format) ? format->valuestring
                                                : (format ? "not a string" : "missing"),
                         cJSON_IsString(format) ? "\"" : "");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(version) || version->valuedouble != GD__META_VERSION)
        return gd__error(GD_ERR_UNSUPPORTED,
                         "%s: field 'version' is %.17g; this library reads version %d (upgrade "
                         "graphdirect or re-convert the dataset)",
                         what, cJSON_IsNumber(version) ? version->valuedouble : NAN,
                         GD__META_VERSION);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (!cJSON_IsString(name) || strlen(name->valuestring) > 1024)
        return gd__error(GD_ERR_FORMAT, "%s: field 'name' is missing, not a string or longer "
                         "than 1024 bytes", what);
    const cJSON *graph = cJSON_GetObjectItemCaseSensitive(root, "graph");
    if (!cJSON_IsString(graph) || strcmp(graph->valuestring, "csc") != 0)
        return gd__error(GD_ERR_UNSUPPORTED, "%s: field 'graph' is %.20s%s; only \"csc\" is "
                         "supported", what,
                         cJSON_IsString(graph) ? graph->valuestring : "missing or not a string",
                         "");
    if ((st = get_count(cJSON_GetObjectItemCaseSensitive(root, "num_nodes"), what, "num_nodes",
                        &m->num_nodes)) != GD_OK)
        return st;
    if ((st = get_count(cJSON_GetObjectItemCaseSensitive(root, "num_edges"), what, "num_edges",
                        &m->num_edges)) != GD_OK)
        return st;
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(root, "feature_dim");
    if (fd && (st = get_count(fd, what, "feature_dim", &m->feature_dim)) != GD_OK) return st;
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(root, "num_classes");
    if (nc && (st = get_count(nc, what, "num_classes", &m->num_classes)) != GD_OK) return st;

    const cJSON *hetero = cJSON_GetObjectItemCaseSensitive(root, "hetero");
    if (hetero && (st = parse_hetero(hetero, what, &m->schema)) != GD_OK) return st;

    const cJSON *arrays = cJSON_GetObjectItemCaseSensitive(root, "arrays");
    if (!cJSON_IsObject(arrays))
        return gd__error(GD_ERR_FORMAT, "%s: field 'arrays' is missing or not an object", what);
    for (const cJSON *a = arrays->child; a; a = a->next) {
        const int id = a->string ? find_slot(m, a->string) : -1;
        if (id < 0)
            return gd__error(GD_ERR_FORMAT,
                             "%s: 'arrays' has an unknown entry \"%.40s\" (known: indptr, "
                             "indices, features, labels, train_idx, valid_idx, test_idx%s)",
                             what, a->string ? a->string : "",
                             m->schema.num_node_types
                                 ? ", node_type_offset, edge_type, features.<node type>"
                                 : "; a heterogeneous dataset's arrays need its 'hetero' field");
        if (m->arrays[id].present)
            return gd__error(GD_ERR_FORMAT, "%s: field 'arrays.%s' appears twice", what,
                             a->string);
        if ((st = parse_array(a, id, what, m)) != GD_OK) return st;
    }
    if ((st = check_shapes(m, what)) != GD_OK) return st;

    const cJSON *info = cJSON_GetObjectItemCaseSensitive(root, "info");
    if (info) {
        if (!cJSON_IsObject(info))
            return gd__error(GD_ERR_FORMAT, "%s: field 'info' is not an object", what);
        for (const cJSON *e = info->child; e; e = e->next) {
            if (!cJSON_IsString(e) || !e->string)
                return gd__error(GD_ERR_FORMAT, "%s: field 'info.%.40s' is not a string", what,
                                 e->string ? e->string : "");
            if (m->num_info >= GD__DATASET_MAX_INFO)
                return gd__error(GD_ERR_FORMAT, "%s: field 'info' has more than %d entries",
                                 what, GD__DATASET_MAX_INFO);
            if ((st = dup_string(e->string, &m->info_key[m->num_info])) != GD_OK) return st;
            if ((st = dup_string(e->valuestring, &m->info_value[m->num_info])) != GD_OK) {
                gd_free(m->info_key[m->num_info]);
                m->info_key[m->num_info] = NULL;
                return st;
            }
            m->num_info++;
        }
    }
    return dup_string(name->valuestring, &m->name);
}

gd_status gd__meta_parse(const char *text, size_t len, const char *what, gd__meta *out) {
    memset(out, 0, sizeof *out);
    if (!what) what = "meta.json";
    if (len > GD__META_MAX_BYTES)
        return gd__error(GD_ERR_FORMAT, "%s: %zu bytes, more than the %d allowed for meta.json",
                         what, len, GD__META_MAX_BYTES);
    if (len == 0 || !text) return gd__error(GD_ERR_FORMAT, "%s: the file is empty", what);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = (end && end >= text && end <= text + len) ? (size_t)(end - text) : 0;
        return gd__error(GD_ERR_FORMAT, "%s: not valid JSON (error near byte %zu)", what, at);
    }
    /* Anything but whitespace after the object means a damaged or concatenated file. */
    for (const char *p = end; p && p < text + len; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != '\0') {
            cJSON_Delete(root);
            return gd__error(GD_ERR_FORMAT, "%s: unexpected bytes after the JSON object at byte "
                             "%zu", what, (size_t)(p - text));
        }
    }
    gd_status st = parse_tree(root, what, out);
    cJSON_Delete(root);
    if (st != GD_OK) gd__meta_free(out);
    return st;
}

gd_status gd__meta_read(const char *path, gd__meta *out) {
    char *text = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    gd_status st = gd__file_read_all(path, GD__META_MAX_BYTES, &text, &len);
    if (st != GD_OK) return st;
    st = gd__meta_parse(text, len, path, out);
    gd_free(text);
    return st;
}

/* ------------------------------------------------------------------ writer */

/* The "hetero" section of a heterogeneous dataset's schema. */
static bool add_hetero(cJSON *root, const gd__schema *sc) {
    cJSON *h = cJSON_AddObjectToObject(root, "hetero");
    cJSON *nt = h ? cJSON_AddArrayToObject(h, "node_types") : NULL;
    bool ok = nt != NULL;
    for (int t = 0; ok && t < sc->num_node_types; t++) {
        cJSON *v = cJSON_CreateString(sc->node_type[t]);
        ok = v && cJSON_AddItemToArray(nt, v);
        if (v && !ok) cJSON_Delete(v);
    }
    cJSON *et = ok ? cJSON_AddArrayToObject(h, "edge_types") : NULL;
    ok = ok && et;
    for (int r = 0; ok && r < sc->num_edge_types; r++) {
        const char *names[3] = {sc->node_type[sc->edge_src[r]], sc->edge_type[r],
                                sc->node_type[sc->edge_dst[r]]};
        cJSON *e = cJSON_CreateStringArray(names, 3);
        ok = e && cJSON_AddItemToArray(et, e);
        if (e && !ok) cJSON_Delete(e);
    }
    return ok && cJSON_AddStringToObject(h, "target_type", sc->node_type[sc->target_type]);
}

gd_status gd__meta_write(const char *path, const gd_dataset_t *ds) {
    gd_status st = GD_OK;
    char *text = NULL;
    gd__outfile f = {-1, NULL, NULL};
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    ok = ok && cJSON_AddStringToObject(root, "format", GD__META_FORMAT);
    ok = ok && gd__json_add_int(root, "version", GD__META_VERSION);
    ok = ok && cJSON_AddStringToObject(root, "name", ds->name ? ds->name : "dataset");
    ok = ok && gd__json_add_int(root, "num_nodes", ds->num_nodes);
    ok = ok && gd__json_add_int(root, "num_edges", ds->num_edges);
    ok = ok && gd__json_add_int(root, "feature_dim", ds->feature_dim);
    ok = ok && gd__json_add_int(root, "num_classes", ds->num_classes);
    ok = ok && cJSON_AddStringToObject(root, "graph", "csc");
    if (ok && ds->schema.num_node_types > 0) ok = add_hetero(root, &ds->schema);
    cJSON *arrays = ok ? cJSON_AddObjectToObject(root, "arrays") : NULL;
    ok = ok && arrays;
    for (int i = 0; ok && i < GD__ARRAY_SLOTS; i++) {
        const gd__array *a = &ds->arrays[i];
        char name[GD__TYPE_NAME_MAX + 32], file[GD__TYPE_NAME_MAX + 32];
        if (a->store == GD__STORE_NONE) continue;
        gd__array_slot_file(&ds->schema, i, file, sizeof file);
        if (a->stripes) { /* a striped table: its manifest, "<slot>.stripes" */
            char *dot = strrchr(file, '.');
            if (dot) snprintf(dot, sizeof file - (size_t)(dot - file), ".stripes");
        }
        cJSON *e = cJSON_AddObjectToObject(
            arrays, gd__array_slot_name(&ds->schema, i, name, sizeof name));
        ok = e && cJSON_AddStringToObject(e, "file", file) &&
             cJSON_AddStringToObject(e, "dtype", gd_dtype_name(a->dtype));
        cJSON *shape = ok ? cJSON_AddArrayToObject(e, "shape") : NULL;
        ok = ok && shape;
        for (int d = 0; ok && d < a->ndim; d++) ok = gd__json_push_int(shape, a->shape[d]);
    }
    if (ok && ds->num_info > 0) {
        cJSON *info = cJSON_AddObjectToObject(root, "info");
        ok = info != NULL;
        for (int i = 0; ok && i < ds->num_info; i++)
            ok = cJSON_AddStringToObject(info, ds->info_key[i], ds->info_value[i]) != NULL;
    }
    char *printed = ok ? cJSON_Print(root) : NULL;
    GD_REQUIRE(printed, GD_ERR_NO_MEMORY, "%s: out of memory formatting meta.json", path);
    size_t n = strlen(printed);
    text = gd_malloc(n + 2);
    if (text) {
        memcpy(text, printed, n);
        text[n] = '\n';
        text[n + 1] = '\0';
    }
    cJSON_free(printed);
    GD_REQUIRE(text, GD_ERR_NO_MEMORY, "%s: out of memory formatting meta.json", path);
    GD_CHECK(gd__outfile_create(&f, path));
    GD_CHECK(gd__outfile_write(&f, text, n + 1));
    GD_CHECK(gd__outfile_commit(&f));
    gd_free(text);
    cJSON_Delete(root);
    return GD_OK;
fail:
    gd__outfile_abort(&f);
    gd_free(text);
    cJSON_Delete(root);
    return st;
}
