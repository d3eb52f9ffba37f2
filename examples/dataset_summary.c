/*
 * The smallest program built against an installed graphdirect: open a dataset directory and
 * print its sizes and in-degree statistics. Build it with
 *     cc dataset_summary.c $(pkg-config --cflags --libs graphdirect) -o dataset_summary
 */
#include <graphdirect.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DATASET_DIR\n", argv[0]);
        return 2;
    }
    if (gd_version_hex() != GD_VERSION_HEX)
        fprintf(stderr, "note: header %d.%d.%d, library %s\n", GD_VERSION_MAJOR,
                GD_VERSION_MINOR, GD_VERSION_PATCH, gd_version());
    gd_dataset_open_options options = GD_DATASET_OPEN_OPTIONS_INIT;
    gd_dataset_t *ds = NULL;
    gd_status st = gd_dataset_open(argv[1], &options, &ds);
    if (st != GD_OK) {
        fprintf(stderr, "cannot open %s: %s: %s\n", argv[1], gd_status_string(st),
                gd_last_error());
        return 1;
    }
    gd_array_view indptr;
    gd_degree_stats stats;
    if (gd_dataset_array(ds, GD_ARRAY_INDPTR, &indptr) != GD_OK ||
        gd_csc_degree_stats(gd_dataset_num_nodes(ds), indptr.data, &stats) != GD_OK) {
        fprintf(stderr, "%s\n", gd_last_error());
        gd_dataset_close(ds);
        return 1;
    }
    printf("%s: %lld nodes, %lld edges, mean in-degree %.2f, max %lld\n", gd_dataset_name(ds),
           (long long)gd_dataset_num_nodes(ds), (long long)gd_dataset_num_edges(ds),
           stats.mean_degree, (long long)stats.max_degree);
    gd_dataset_close(ds);
    return 0;
}
