/*
 * `graphdirect generate`: a synthetic dataset from a preset, straight into memory (to measure
 * or inspect it) or straight to a dataset directory, with no second copy of any array.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(void) {
    printf("usage: graphdirect generate [--preset NAME] [--out DIR] [options]\n\n"
           "Make a synthetic graph: power-law in-degrees, planted communities that are the\n"
           "labels, features = class signal + noise (so neighbour aggregation helps).\n"
           "Deterministic in --seed, whatever the thread count.\n\n"
           "  --preset NAME      tiny (~10K nodes), small (~200K nodes, ~4M edges),\n"
           "                     products (2.45M nodes, ~62M edges, 100-dim, 47 classes),\n"
           "                     papers (111M nodes, ~1.6B edges, 128-dim, 172 classes),\n"
           "                     igb-tiny, igb-small, igb-medium (20K, 1M, 10M nodes, ~12\n"
           "                     in-edges each, 1024-dim, 19 classes: IGB's shape)\n"
           "                     heterogeneous (node and edge types, docs/formats.md):\n"
           "                     mag-tiny, mag (ogbn-mag's 4 node types, 7 relations,\n"
           "                     128-dim papers, 20K / 1.9M nodes), igbh-tiny, igbh-medium\n"
           "                     (IGBH's 4 types, 7 relations, 1024-dim features on every\n"
           "                     type, 10K / 16.3M nodes; igbh-medium has 67 GB of features)\n"
           "  --out DIR          write the dataset directory DIR (without it the dataset is\n"
           "                     built in memory, summarised and dropped)\n"
           "  --overwrite        replace DIR if it exists\n"
           "  --seed N           random seed (default 0)\n"
           "  --nodes N          override the node count (K/M/G suffixes allowed)\n"
           "  --avg-degree X     override the mean in-degree\n"
           "  --feature-dim N    override the feature width\n"
           "  --classes N        override the number of classes\n"
           "  --dtype T          feature dtype: float32 (default), float16, bfloat16\n"
           "  --threads N        CPU threads (default: all cores; or GD_THREADS)\n"
           "  -h, --help         this text\n");
}

int cmd_generate(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"preset", required_argument, 0, 'p'},    {"out", required_argument, 0, 'o'},
        {"overwrite", no_argument, 0, 'w'},       {"seed", required_argument, 0, 's'},
        {"nodes", required_argument, 0, 'n'},     {"avg-degree", required_argument, 0, 'd'},
        {"feature-dim", required_argument, 0, 'f'}, {"classes", required_argument, 0, 'c'},
        {"dtype", required_argument, 0, 't'},     {"threads", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    gd_generate_options opts = GD_GENERATE_OPTIONS_INIT;
    cli_progress prog;
    int64_t v;
    double x;
    int c;
    opts.preset = "tiny";
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'p': opts.preset = optarg; break;
        case 'o': opts.out_dir = optarg; break;
        case 'w': opts.overwrite = 1; break;
        case 's':
            if (cli_parse_i64(optarg, &v) || v < 0)
                return cli_usage_error("generate", "--seed '%s' is not a non-negative integer", optarg);
            opts.seed = (uint64_t)v;
            break;
        case 'n':
            if (cli_parse_i64(optarg, &v) || v <= 0)
                return cli_usage_error("generate", "--nodes '%s' is not a positive count", optarg);
            opts.num_nodes = v;
            break;
        case 'd':
            if (cli_parse_double(optarg, &x) || x <= 0)
                return cli_usage_error("generate", "--avg-degree '%s' is not positive", optarg);
            opts.avg_degree = x;
            break;
        case 'f':
            if (cli_parse_i64(optarg, &v) || v <= 0)
                return cli_usage_error("generate", "--feature-dim '%s' is not positive", optarg);
            opts.feature_dim = v;
            break;
        case 'c':
            if (cli_parse_i64(optarg, &v) || v < 2)
                return cli_usage_error("generate", "--classes '%s' must be at least 2", optarg);
            opts.num_classes = v;
            break;
        case 't':
            if (gd_dtype_parse(optarg, &opts.feature_dtype) != GD_OK)
                return cli_usage_error("generate", "%s", gd_last_error());
            break;
        case 'j':
            if (cli_parse_i64(optarg, &v) || v <= 0)
                return cli_usage_error("generate", "--threads '%s' is not positive", optarg);
            opts.threads = (int)v;
            break;
        case 'h': help(); return 0;
        default: return cli_usage_error("generate", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("generate", "unexpected argument '%s'", argv[optind]);

    cli_progress_init(&prog);
    opts.progress = cli_progress_cb;
    opts.progress_user = &prog;
    gd_dataset_t *ds = NULL;
    double t0 = cli_now();
    gd_status st = gd_generate(&opts, &ds);
    cli_progress_end(&prog);
    if (st != GD_OK) return cli_fail("generate", st);
    double secs = cli_now() - t0;
    char a[32], b[32], r[32];
    int64_t e = gd_dataset_num_edges(ds);
    char width[64];
    if (gd_dataset_num_node_types(ds) > 0)
        snprintf(width, sizeof width, "%d node types, %d edge types",
                 gd_dataset_num_node_types(ds), gd_dataset_num_edge_types(ds));
    else
        snprintf(width, sizeof width, "%lld-dim features", (long long)gd_dataset_feature_dim(ds));
    printf("generated '%s': %s nodes, %s edges, %s, %lld classes in %.2f s "
           "(%s edges/s)%s%s\n",
           gd_dataset_name(ds), cli_count((double)gd_dataset_num_nodes(ds), a, sizeof a),
           cli_count((double)e, b, sizeof b), width,
           (long long)gd_dataset_num_classes(ds), secs,
           cli_count(secs > 0 ? (double)e / secs : 0, r, sizeof r),
           opts.out_dir ? " -> " : " (in memory)", opts.out_dir ? opts.out_dir : "");
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        if (gd_dataset_node_type(ds, t, &ti) != GD_OK) break;
        printf("  node type %-16s %s nodes, %lld-dim features%s\n", ti.name,
               cli_count((double)ti.count, a, sizeof a), (long long)ti.feature_dim,
               t == gd_dataset_target_type(ds) ? " (labelled: the target type)" : "");
    }
    gd_dataset_close(ds);
    return 0;
}
