/*
 * The types of a heterogeneous dataset: node types that own contiguous id ranges, edge types
 * that join two node types, one feature table per node type, one target type for the labels
 * and splits (docs/formats.md, "Heterogeneous graphs"). This file holds the schema's checks,
 * the names and files of the arrays that only such a dataset has, and the public accessors.
 * The arrays' contents are checked in dataset_check.c with the rest.
 */
#include "io/dataset.h"

#include <stdio.h>
#include <string.h>

/* A type name becomes part of a file name and of meta.json keys: a short plain word. */
int gd__type_name_ok(const char *s) {
    const size_t n = strnlen(s, GD__TYPE_NAME_MAX + 1);
    if (n == 0 || n > GD__TYPE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

gd_status gd__schema_check(const gd__schema *sc, const char *what) {
    gd_status st = GD_OK;
    GD_REQUIRE(sc, GD_ERR_INVALID_ARG, "%s: no schema", what);
    const int T = sc->num_node_types, R = sc->num_edge_types;
    GD_REQUIRE(T >= 1 && T <= GD_MAX_NODE_TYPES, GD_ERR_RANGE,
               "%s: %d node types; a heterogeneous dataset has 1 to %d", what, T,
               GD_MAX_NODE_TYPES);
    GD_REQUIRE(R >= 1 && R <= GD_MAX_EDGE_TYPES, GD_ERR_RANGE,
               "%s: %d edge types; a heterogeneous dataset has 1 to %d", what, R,
               GD_MAX_EDGE_TYPES);
    for (int t = 0; t < T; t++) {
        GD_REQUIRE(gd__type_name_ok(sc->node_type[t]), GD_ERR_FORMAT,
                   "%s: node type %d is named \"%.64s\"; use 1 to %d letters, digits, '_' or "
                   "'-'",
                   what, t, sc->node_type[t], GD__TYPE_NAME_MAX);
        for (int u = 0; u < t; u++)
            GD_REQUIRE(strcmp(sc->node_type[u], sc->node_type[t]) != 0, GD_ERR_FORMAT,
                       "%s: node types %d and %d are both named \"%s\"", what, u, t,
                       sc->node_type[t]);
    }
    for (int r = 0; r < R; r++) {
        GD_REQUIRE(gd__type_name_ok(sc->edge_type[r]), GD_ERR_FORMAT,
                   "%s: edge type %d is named \"%.64s\"; use 1 to %d letters, digits, '_' or "
                   "'-'",
                   what, r, sc->edge_type[r], GD__TYPE_NAME_MAX);
        GD_REQUIRE(sc->edge_src[r] >= 0 && sc->edge_src[r] < T && sc->edge_dst[r] >= 0 &&
                       sc->edge_dst[r] < T,
                   GD_ERR_RANGE, "%s: edge type %d (%s) joins node types %d and %d; there are %d",
                   what, r, sc->edge_type[r], sc->edge_src[r], sc->edge_dst[r], T);
        for (int q = 0; q < r; q++)
            GD_REQUIRE(strcmp(sc->edge_type[q], sc->edge_type[r]) != 0 ||
                           sc->edge_src[q] != sc->edge_src[r] || sc->edge_dst[q] != sc->edge_dst[r],
                       GD_ERR_FORMAT, "%s: edge types %d and %d are both (%s, %s, %s)", what, q, r,
                       sc->node_type[sc->edge_src[r]], sc->edge_type[r],
                       sc->node_type[sc->edge_dst[r]]);
    }
    GD_REQUIRE(sc->target_type >= 0 && sc->target_type < T, GD_ERR_RANGE,
               "%s: the target type is %d; there are %d node types", what, sc->target_type, T);
fail:
    return st;
}

const char *gd__array_slot_name(const gd__schema *sc, int id, char *buf, size_t n) {
    if (id >= 0 && id < GD_ARRAY_COUNT)
        snprintf(buf, n, "%s", gd_array_name((gd_array_id)id));
    else if (id == GD__ARRAY_NODE_TYPE_OFFSET)
        snprintf(buf, n, "node_type_offset");
    else if (id == GD__ARRAY_EDGE_TYPE)
        snprintf(buf, n, "edge_type");
    else if (id >= GD__ARRAY_TYPE_FEATURES && id < GD__ARRAY_SLOTS && sc &&
             id - GD__ARRAY_TYPE_FEATURES < sc->num_node_types)
        snprintf(buf, n, "features.%s", sc->node_type[id - GD__ARRAY_TYPE_FEATURES]);
    else
        snprintf(buf, n, "invalid");
    return buf;
}

void gd__array_slot_file(const gd__schema *sc, int id, char *buf, size_t n) {
    char name[GD__TYPE_NAME_MAX + 32];
    gd__array_slot_name(sc, id, name, sizeof name);
    for (char *c = name; *c; c++)
        if (*c == '.') *c = '_';
    snprintf(buf, n, "%s.npy", name);
}

gd_status gd__dataset_set_schema(gd_dataset_t *ds, const gd__schema *sc) {
    gd_status st = GD_OK;
    GD_REQUIRE(ds && sc, GD_ERR_INVALID_ARG, "gd__dataset_set_schema: NULL argument");
    GD_REQUIRE(!ds->finished, GD_ERR_INVALID_ARG, "dataset '%s' is finished", ds->name);
    GD_CHECK(gd__schema_check(sc, ds->name));
    ds->schema = *sc;
fail:
    return st;
}

/* ------------------------------------------------------------------ public accessors */

int gd_dataset_num_node_types(const gd_dataset_t *ds) { return ds ? ds->schema.num_node_types : 0; }
int gd_dataset_num_edge_types(const gd_dataset_t *ds) { return ds ? ds->schema.num_edge_types : 0; }
int gd_dataset_target_type(const gd_dataset_t *ds) {
    return ds && ds->schema.num_node_types > 0 ? ds->schema.target_type : -1;
}

void gd_node_type_info_init(gd_node_type_info *o) {
    const gd_node_type_info d = GD_NODE_TYPE_INFO_INIT;
    if (o) *o = d;
}

void gd_edge_type_info_init(gd_edge_type_info *o) {
    const gd_edge_type_info d = GD_EDGE_TYPE_INFO_INIT;
    if (o) *o = d;
}

static void view_of(const gd__array *a, gd_array_view *v) {
    v->dtype = a->dtype;
    v->ndim = a->ndim;
    v->shape[0] = a->shape[0];
    v->shape[1] = a->shape[1];
    v->data = a->data;
}

static gd_status need_type(const gd_dataset_t *ds, int type, int count, const char *fn,
                           const char *kind) {
    if (!ds) return gd__error(GD_ERR_INVALID_ARG, "%s: ds must not be NULL", fn);
    if (ds->schema.num_node_types == 0)
        return gd__error(GD_ERR_NOT_FOUND, "%s: dataset '%s' is homogeneous (no %s types)", fn,
                         ds->name, kind);
    if (type < 0 || type >= count)
        return gd__error(GD_ERR_RANGE, "%s: %s type %d of dataset '%s', which has %d", fn, kind,
                         type, ds->name, count);
    return GD_OK;
}

gd_status gd_dataset_node_type(const gd_dataset_t *ds, int type, gd_node_type_info *info) {
    gd_status st = GD_OK;
    gd_node_type_info o = GD_NODE_TYPE_INFO_INIT;
    GD_CHECK(need_type(ds, type, ds ? ds->schema.num_node_types : 0, "gd_dataset_node_type",
                       "node"));
    GD_REQUIRE(info, GD_ERR_INVALID_ARG, "gd_dataset_node_type: info must not be NULL");
    const gd__array *off = &ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET];
    const gd__array *f = &ds->arrays[GD__ARRAY_TYPE_FEATURES + type];
    o.name = ds->schema.node_type[type];
    o.offset = ((const int64_t *)off->data)[type];
    o.count = ((const int64_t *)off->data)[type + 1] - o.offset;
    if (f->store != GD__STORE_NONE) {
        o.feature_dim = f->shape[1];
        o.feature_dtype = f->dtype;
    }
    GD_CHECK(gd__info_out(info, &o, sizeof o, "gd_dataset_node_type: info",
                             "GD_NODE_TYPE_INFO_INIT"));
fail:
    return st;
}

gd_status gd_dataset_edge_type(const gd_dataset_t *ds, int type, gd_edge_type_info *info) {
    gd_status st = GD_OK;
    gd_edge_type_info o = GD_EDGE_TYPE_INFO_INIT;
    GD_CHECK(need_type(ds, type, ds ? ds->schema.num_edge_types : 0, "gd_dataset_edge_type",
                       "edge"));
    GD_REQUIRE(info, GD_ERR_INVALID_ARG, "gd_dataset_edge_type: info must not be NULL");
    o.name = ds->schema.edge_type[type];
    o.src_type = ds->schema.edge_src[type];
    o.dst_type = ds->schema.edge_dst[type];
    GD_CHECK(gd__info_out(info, &o, sizeof o, "gd_dataset_edge_type: info",
                             "GD_EDGE_TYPE_INFO_INIT"));
fail:
    return st;
}

gd_status gd_dataset_node_type_offsets(const gd_dataset_t *ds, gd_array_view *view) {
    gd_status st = GD_OK;
    GD_CHECK(need_type(ds, 0, 1, "gd_dataset_node_type_offsets", "node"));
    GD_REQUIRE(view, GD_ERR_INVALID_ARG, "gd_dataset_node_type_offsets: view must not be NULL");
    view_of(&ds->arrays[GD__ARRAY_NODE_TYPE_OFFSET], view);
fail:
    return st;
}

gd_status gd_dataset_edge_types(const gd_dataset_t *ds, gd_array_view *view) {
    gd_status st = GD_OK;
    GD_CHECK(need_type(ds, 0, 1, "gd_dataset_edge_types", "edge"));
    GD_REQUIRE(view, GD_ERR_INVALID_ARG, "gd_dataset_edge_types: view must not be NULL");
    view_of(&ds->arrays[GD__ARRAY_EDGE_TYPE], view);
fail:
    return st;
}

gd_status gd_dataset_type_features(const gd_dataset_t *ds, int type, gd_array_view *view) {
    gd_status st = GD_OK;
    GD_CHECK(need_type(ds, type, ds ? ds->schema.num_node_types : 0, "gd_dataset_type_features",
                       "node"));
    GD_REQUIRE(view, GD_ERR_INVALID_ARG, "gd_dataset_type_features: view must not be NULL");
    const gd__array *f = &ds->arrays[GD__ARRAY_TYPE_FEATURES + type];
    GD_REQUIRE(f->store != GD__STORE_NONE, GD_ERR_NOT_FOUND,
               "gd_dataset_type_features: node type %d (%s) of dataset '%s' has no features",
               type, ds->schema.node_type[type], ds->name);
    view_of(f, view);
fail:
    return st;
}
