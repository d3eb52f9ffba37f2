/*
 * `graphdirect convert`: read an edge list, .npy arrays, an OGB raw folder or an IGB(H) tree,
 * build the CSC graph (typed, for the heterogeneous layouts) and write a dataset directory.
 * The output appears only once complete.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(void) {
    printf("usage: graphdirect convert INPUT --out DIR [options]\n\n"
           "INPUT is one of:\n"
           "  an edge list file (text, 'src dst' per line, '#'/'%%' comments, tabs or spaces,\n"
           "  optionally .gz), a folder with edge_index.npy (2 x E) or src.npy + dst.npy (and\n"
           "  optional features.npy, labels.npy, train_idx.npy, valid_idx.npy, test_idx.npy),\n"
           "  or an OGB raw folder (raw/edge.csv.gz, raw/node-feat.csv.gz,\n"
           "  raw/node-label.csv.gz, split/NAME/{train,valid,test}.csv.gz), or OGB's binary\n"
           "  layout (raw/data.npz, raw/node-label.npz, split/...: ogbn-papers100M's), or an\n"
           "  IGB folder (processed/paper/node_feat.npy, node_label_19.npy,\n"
           "  processed/paper__cites__paper/edge_index.npy; arrays already float32 are linked,\n"
           "  not copied, where the output is on the same file system).\n"
           "Heterogeneous graphs (node and edge types, features per node type):\n"
           "  OGB's heterogeneous raw folder as ogbn-mag ships it (raw/num-node-dict.csv.gz,\n"
           "  raw/relations/SRC___REL___DST/edge.csv.gz, raw/node-feat/TYPE/node-feat.csv.gz,\n"
           "  raw/node-label/TYPE/node-label.csv.gz, split/NAME/TYPE/{train,valid,test}.csv.gz),\n"
           "  or an IGBH folder (processed/TYPE/node_feat.npy,\n"
           "  processed/SRC__REL__DST/edge_index.npy, processed/paper/node_label_19.npy).\n"
           "  Edge types are sorted by (source type, relation, destination type) names; the\n"
           "  labelled type is the target. --format igb reads an IGBH folder's\n"
           "  paper__cites__paper alone, as a homogeneous graph.\n\n"
           "  --out DIR            the dataset directory to write (required)\n"
           "  --overwrite          replace DIR if it exists\n"
           "  --format F           auto (default), edgelist, npy, ogb, igb, ogb-hetero, igbh\n"
           "  --name NAME          dataset name (default: the input's name)\n"
           "  --symmetrize         add the reverse of every edge (undirected graphs); for\n"
           "                       heterogeneous ones, reverse relations rev_REL as PyG's\n"
           "                       ToUndirected adds them (a relation within one type takes\n"
           "                       its reverse edges itself)\n"
           "  --remove-self-loops  drop v -> v edges\n"
           "  --relabel            edge lists: map arbitrary ids to 0..n-1\n"
           "  --num-nodes N        node count (default: max id + 1, or OGB's count)\n"
           "  --split NAME         OGB split folder (default: the only one)\n"
           "  --dtype T            feature dtype: float32 (default), float16, bfloat16\n"
           "  --features FILE      edge lists: features .npy (num_nodes x dim)\n"
           "  --labels FILE        edge lists: labels .npy (num_nodes)\n"
           "  -h, --help           this text\n");
}

int cmd_convert(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"out", required_argument, 0, 'o'},       {"overwrite", no_argument, 0, 'w'},
        {"format", required_argument, 0, 'F'},    {"name", required_argument, 0, 'N'},
        {"symmetrize", no_argument, 0, 'S'},      {"remove-self-loops", no_argument, 0, 'L'},
        {"relabel", no_argument, 0, 'R'},         {"num-nodes", required_argument, 0, 'n'},
        {"split", required_argument, 0, 's'},     {"dtype", required_argument, 0, 't'},
        {"features", required_argument, 0, 'f'},  {"labels", required_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    gd_convert_options opts = GD_CONVERT_OPTIONS_INIT;
    const char *out = NULL;
    int overwrite = 0, c;
    int64_t v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'w': overwrite = 1; break;
        case 'F':
            if (!strcmp(optarg, "auto")) opts.format = GD_INPUT_AUTO;
            else if (!strcmp(optarg, "edgelist")) opts.format = GD_INPUT_EDGELIST;
            else if (!strcmp(optarg, "npy")) opts.format = GD_INPUT_NPY;
            else if (!strcmp(optarg, "ogb")) opts.format = GD_INPUT_OGB;
            else if (!strcmp(optarg, "igb")) opts.format = GD_INPUT_IGB;
            else if (!strcmp(optarg, "ogb-hetero")) opts.format = GD_INPUT_OGB_HETERO;
            else if (!strcmp(optarg, "igbh")) opts.format = GD_INPUT_IGBH;
            else return cli_usage_error("convert", "--format '%s' is not auto, edgelist, npy, ogb, igb, ogb-hetero or igbh", optarg);
            break;
        case 'N': opts.name = optarg; break;
        case 'S': opts.symmetrize = 1; break;
        case 'L': opts.remove_self_loops = 1; break;
        case 'R': opts.relabel = 1; break;
        case 'n':
            if (cli_parse_i64(optarg, &v) || v <= 0)
                return cli_usage_error("convert", "--num-nodes '%s' is not a positive count", optarg);
            opts.num_nodes = v;
            break;
        case 's': opts.split = optarg; break;
        case 't':
            if (gd_dtype_parse(optarg, &opts.feature_dtype) != GD_OK)
                return cli_usage_error("convert", "%s", gd_last_error());
            break;
        case 'f': opts.features = optarg; break;
        case 'l': opts.labels = optarg; break;
        case 'h': help(); return 0;
        default: return cli_usage_error("convert", "unknown option");
        }
    }
    if (optind != argc - 1) return cli_usage_error("convert", "expected exactly one INPUT");
    if (!out) return cli_usage_error("convert", "--out DIR is required");

    cli_progress prog;
    cli_progress_init(&prog);
    opts.progress = cli_progress_cb;
    opts.progress_user = &prog;
    /*
     * Written straight to DIR as it is read (through DIR.tmp.<pid>, renamed once complete):
     * the large arrays reach the disk while the input is still being read, instead of after.
     */
    opts.out_dir = out;
    opts.overwrite = overwrite;
    gd_dataset_t *ds = NULL;
    double t0 = cli_now();
    gd_status st = gd_convert(argv[optind], &opts, &ds);
    cli_progress_end(&prog);
    if (st != GD_OK) return cli_fail("convert", st);
    char a[32], b[32], shape[64];
    /* A heterogeneous dataset has a feature width per node type, not one. */
    if (gd_dataset_num_node_types(ds) > 0)
        snprintf(shape, sizeof shape, "%d node types, %d edge types",
                 gd_dataset_num_node_types(ds), gd_dataset_num_edge_types(ds));
    else
        snprintf(shape, sizeof shape, "%lld-dim features", (long long)gd_dataset_feature_dim(ds));
    printf("converted '%s' -> %s: %s nodes, %s edges, %s, %lld classes (%.2f s)\n", argv[optind],
           out, cli_count((double)gd_dataset_num_nodes(ds), a, sizeof a),
           cli_count((double)gd_dataset_num_edges(ds), b, sizeof b), shape,
           (long long)gd_dataset_num_classes(ds), cli_now() - t0);
    gd_dataset_close(ds);
    return 0;
}
