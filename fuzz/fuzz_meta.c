/*
 * libFuzzer target for the meta.json parser of dataset directories. Every accepted file must
 * describe a consistent dataset (the parser's own cross-checks; a heterogeneous one's schema and
 * type arrays too), and every string it returns is freed again, so a leak or an out-of-bounds
 * read shows up here.
 */
#include "io/meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gd__meta m;
    if (gd__meta_parse((const char *)data, size, "fuzz/meta.json", &m) == GD_OK) {
        if (!m.name || !m.arrays[GD_ARRAY_INDPTR].present ||
            m.arrays[GD_ARRAY_INDPTR].shape[0] != m.num_nodes + 1)
            __builtin_trap();
        /* A heterogeneous schema passed its checks, and its arrays are there. */
        if (m.schema.num_node_types > 0 &&
            (gd__schema_check(&m.schema, "fuzz") != GD_OK ||
             !m.arrays[GD__ARRAY_NODE_TYPE_OFFSET].present ||
             m.arrays[GD__ARRAY_NODE_TYPE_OFFSET].shape[0] != m.schema.num_node_types + 1 ||
             !m.arrays[GD__ARRAY_EDGE_TYPE].present))
            __builtin_trap();
        gd__meta_free(&m);
    }
    return 0;
}
