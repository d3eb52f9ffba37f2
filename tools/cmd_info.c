/*
 * `graphdirect info`: what a dataset holds (sizes, split, in-degree distribution) and the
 * placement plan a trainer would follow on this machine (the library's plan: the one auto uses). Without a
 * dataset it describes the build, the GPUs and the GD_* parameters.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(void) {
    printf("usage: graphdirect info [DIR] [--validate] [--params] [--mode M] [--gpu-mem-budget SIZE]\n"
           "                        [--host-mem-budget SIZE]\n\n"
           "With DIR: sizes, split, in-degree distribution, and the placement plan a trainer\n"
           "with the default options would follow here (where each structure lives, and why).\n"
           "Without DIR: the build (CUDA or not), the visible GPUs and the GD_* parameters.\n\n"
           "  --validate   check every index, label and feature value (reads the whole dataset,\n"
           "               even where a record of an earlier check says the files are unchanged)\n"
           "  --params     list the GD_* environment parameters with their values\n"
           "  --mode M     the plan for mode M (cpu, all-gpu, zero-copy, cpu-centric; default auto)\n"
           "  --gpu-mem-budget SIZE  the plan under this GPU memory budget (e.g. 16G)\n"
           "  --host-mem-budget SIZE the plan under this host memory budget (default: what is\n"
           "                         available, or GD_HOST_MEM_MB)\n"
           "  -h, --help   this text\n");
}

static void print_params(void) {
    printf("parameters (environment variables):\n");
    for (int i = 0; i < gd_param_count(); i++) {
        const char *name, *def, *help_text, *value = "";
        gd_param_describe(i, &name, &def, &help_text);
        gd_param_get(name, &value);
        printf("  %-16s = %-8s (default %s) %s\n", name, value, def, help_text);
    }
}

static void print_build(void) {
    printf("graphdirect %s, %s\n", gd_version(),
           gd_has_cuda() ? "built with CUDA" : "built without CUDA (CPU only)");
    int n = gd_device_count();
    if (n == 0) printf("GPUs: none visible\n");
    for (int d = 0; d < n; d++) {
        gd_device_info info;
        char t[32], f[32];
        if (gd_device_info_get(d, &info) != GD_OK) {
            printf("GPU %d: %s\n", d, gd_last_error());
            continue;
        }
        printf("GPU %d: %s, sm_%d%d, %d SMs, %s memory (%s free)%s\n", d, info.name, info.major,
               info.minor, info.multiprocessors, cli_bytes((double)info.total_memory, t, sizeof t),
               cli_bytes((double)info.free_memory, f, sizeof f),
               info.can_map_host_memory ? "" : ", cannot map host memory");
    }
}

static int64_t array_bytes(const gd_array_view *v) {
    return v->shape[0] * (v->ndim > 1 ? v->shape[1] : 1) * (int64_t)gd_dtype_size(v->dtype);
}

static void print_degrees(const gd_degree_stats *s) {
    char a[32];
    printf("in-degree: min %lld, median %lld, mean %.2f, p90 %lld, p99 %lld, max %lld; "
           "%s isolated; the top 1%% of nodes receive %.1f%% of edges\n",
           (long long)s->min_degree, (long long)s->median_degree, s->mean_degree,
           (long long)s->p90_degree, (long long)s->p99_degree, (long long)s->max_degree,
           cli_count((double)s->isolated, a, sizeof a), 100 * s->top1pct_share);
    int last = 0;
    int64_t most = 1;
    for (int i = 0; i < 64; i++)
        if (s->log2_hist[i]) last = i, most = s->log2_hist[i] > most ? s->log2_hist[i] : most;
    printf("  degree       nodes\n");
    for (int i = 0; i <= last; i++) {
        char range[48], bar[41];
        if (i == 0) snprintf(range, sizeof range, "0");
        else if (i == 1) snprintf(range, sizeof range, "1");
        else snprintf(range, sizeof range, "%lld-%lld", 1LL << (i - 1), (1LL << i) - 1);
        int len = (int)(40.0 * (double)s->log2_hist[i] / (double)most + 0.5);
        memset(bar, '#', (size_t)len);
        bar[len] = '\0';
        printf("  %-12s %-8s %s\n", range, cli_count((double)s->log2_hist[i], a, sizeof a), bar);
    }
}

/*
 * The placement plan of a trainer with the default options (mode, budget as given) over the
 * dataset on this machine: where each structure would live, its bytes, and why.
 */
static void print_plan(const gd_dataset_t *ds, const char *mode, int64_t budget,
                       int64_t host_budget) {
    char text[2048];
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = mode;
    o.gpu_mem_budget = budget;
    o.host_mem_budget = host_budget;
    printf("placement plan (a trainer with the default options, mode %s%s):\n",
           mode ? mode : "auto", budget > 0 ? ", with the given GPU memory budget" : "");
    if (gd_trainer_plan(ds, &o, text, sizeof text) == GD_OK)
        fputs(text, stdout);
    else
        printf("  unavailable: %s\n", gd_last_error());
}

int cmd_info(int argc, char **argv) {
    static const struct option long_opts[] = {{"validate", no_argument, 0, 'v'},
                                              {"params", no_argument, 0, 'p'},
                                              {"mode", required_argument, 0, 'm'},
                                              {"gpu-mem-budget", required_argument, 0, 'G'},
                                              {"host-mem-budget", required_argument, 0, 'H'},
                                              {"help", no_argument, 0, 'h'},
                                              {0, 0, 0, 0}};
    int validate = 0, params = 0, c;
    const char *mode = NULL;
    int64_t budget = 0, host_budget = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'v': validate = 1; break;
        case 'p': params = 1; break;
        case 'm':
            if (gd_train_mode_check(optarg) != GD_OK)
                return cli_usage_error("info", "%s", gd_last_error());
            mode = optarg;
            break;
        case 'G':
            if (cli_parse_i64(optarg, &budget) || budget < 1)
                return cli_usage_error("info", "--gpu-mem-budget '%s' is not a size (e.g. 16G)",
                                       optarg);
            break;
        case 'H':
            if (cli_parse_i64(optarg, &host_budget) || host_budget < 1)
                return cli_usage_error("info", "--host-mem-budget '%s' is not a size (e.g. 64G)",
                                       optarg);
            break;
        case 'h': help(); return 0;
        default: return cli_usage_error("info", "unknown option");
        }
    }
    if (optind == argc) {
        print_build();
        if (params) print_params();
        return 0;
    }
    if (optind != argc - 1) return cli_usage_error("info", "expected at most one DIR");
    const char *dir = argv[optind];

    gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
    oo.mode = GD_OPEN_MMAP;
    oo.validate_graph = validate ? 2 : 0; /* --validate: every value now, whatever the record */
    gd_dataset_t *ds = NULL;
    double t0 = cli_now();
    cli_guard_mapped(dir);
    gd_status st = gd_dataset_open(dir, &oo, &ds);
    if (st != GD_OK) return cli_fail("opening the dataset", st);
    double open_secs = cli_now() - t0;

    char a[32], b[32];
    int64_t n = gd_dataset_num_nodes(ds), e = gd_dataset_num_edges(ds);
    printf("dataset    %s (%s)%s\n", gd_dataset_name(ds), dir,
           validate ? ", every value checked" : "");
    printf("nodes      %lld (%s)\n", (long long)n, cli_count((double)n, a, sizeof a));
    printf("edges      %lld (%s), CSC: in-neighbours of each node\n", (long long)e,
           cli_count((double)e, b, sizeof b));
    printf("features   %lld per node\n", (long long)gd_dataset_feature_dim(ds));
    printf("classes    %lld\n", (long long)gd_dataset_num_classes(ds));

    int64_t total = 0;
    gd_array_view idx[3];
    int have_idx[3] = {0, 0, 0};
    printf("arrays:\n");
    for (int id = 0; id < GD_ARRAY_COUNT; id++) {
        gd_array_view v;
        if (gd_dataset_array(ds, (gd_array_id)id, &v) != GD_OK) {
            printf("  %-10s (absent)\n", gd_array_name((gd_array_id)id));
            continue;
        }
        int64_t bytes = array_bytes(&v);
        total += bytes;
        if (id >= GD_ARRAY_TRAIN_IDX) idx[id - GD_ARRAY_TRAIN_IDX] = v, have_idx[id - GD_ARRAY_TRAIN_IDX] = 1;
        char shape[64];
        if (v.ndim > 1) snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)v.shape[0], (long long)v.shape[1]);
        else snprintf(shape, sizeof shape, "[%lld]", (long long)v.shape[0]);
        printf("  %-10s %-9s %-20s %s\n", gd_array_name((gd_array_id)id), gd_dtype_name(v.dtype),
               shape, cli_bytes((double)bytes, a, sizeof a));
    }
    {
        const char *files[64];
        int64_t unit = 0;
        const int nf = gd_dataset_feature_files(ds, files, 64, &unit);
        if (nf > 1) { /* graphdirect stripe */
            printf("  features striped over %d files in units of %lld rows:\n", nf,
                   (long long)unit);
            for (int f = 0; f < nf && f < 64; f++) printf("    %s\n", files[f]);
        }
    }
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_array_view v;
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        if (gd_dataset_node_type(ds, t, &ti) != GD_OK || gd_dataset_type_features(ds, t, &v) != GD_OK)
            continue;
        const int64_t bytes = array_bytes(&v);
        char shape[64], name[96];
        total += bytes;
        snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)v.shape[0], (long long)v.shape[1]);
        snprintf(name, sizeof name, "features.%s", ti.name);
        printf("  %-10s %-9s %-20s %s\n", name, gd_dtype_name(v.dtype), shape,
               cli_bytes((double)bytes, a, sizeof a));
    }
    printf("  total      %s\n", cli_bytes((double)total, a, sizeof a));
    if (gd_dataset_num_node_types(ds) > 0) {
        printf("node types (the target type %d is labelled and split):\n", gd_dataset_target_type(ds));
        for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
            gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
            if (gd_dataset_node_type(ds, t, &ti) != GD_OK) break;
            printf("  %2d %-18s ids [%lld, %lld), %lld-dim features\n", t, ti.name,
                   (long long)ti.offset, (long long)(ti.offset + ti.count), (long long)ti.feature_dim);
        }
        printf("edge types:\n");
        for (int r = 0; r < gd_dataset_num_edge_types(ds); r++) {
            gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
            gd_node_type_info s = GD_NODE_TYPE_INFO_INIT, d = GD_NODE_TYPE_INFO_INIT;
            if (gd_dataset_edge_type(ds, r, &ei) != GD_OK ||
                gd_dataset_node_type(ds, ei.src_type, &s) != GD_OK ||
                gd_dataset_node_type(ds, ei.dst_type, &d) != GD_OK)
                break;
            printf("  %2d (%s, %s, %s)\n", r, s.name, ei.name, d.name);
        }
    }
    if (have_idx[0] || have_idx[1] || have_idx[2]) {
        printf("split      train %lld / valid %lld / test %lld nodes\n",
               have_idx[0] ? (long long)idx[0].shape[0] : 0LL,
               have_idx[1] ? (long long)idx[1].shape[0] : 0LL,
               have_idx[2] ? (long long)idx[2].shape[0] : 0LL);
    }

    gd_array_view indptr;
    gd_degree_stats stats;
    if (gd_dataset_array(ds, GD_ARRAY_INDPTR, &indptr) == GD_OK &&
        gd_csc_degree_stats(n, (const int64_t *)indptr.data, &stats) == GD_OK)
        print_degrees(&stats);
    else
        printf("in-degree: unavailable: %s\n", gd_last_error());
    print_plan(ds, mode, budget, host_budget);
    printf("opened in %.3f s\n", open_secs);
    if (params) print_params();
    gd_dataset_close(ds);
    return 0;
}
