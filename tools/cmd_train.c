/*
 * `graphdirect train`: train GraphSAGE (or the MLP baseline, the same model with the graph
 * removed) on a dataset directory or on a preset generated in memory, and print the loss and the
 * accuracies of every epoch and the final test accuracy. Then, unless --mlp or --no-baseline,
 * the MLP baseline is trained with the same settings and both test accuracies are printed side
 * by side, so that what the graph adds is visible (`make demo` runs exactly this on `small`).
 * Only the cpu mode exists so far: the CPU sampler, the CPU gather and the CPU nn backend
 * (src/train/, docs/train.md).
 */
#include "cli.h"

#include "train/internal.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(void) {
    printf("usage: graphdirect train [DATASET_DIR] [options]\n\n"
           "Train GraphSAGE (mean aggregator) with minibatches of sampled neighbourhoods and\n"
           "Adam, report every epoch's loss, train and valid accuracy and time, then the test\n"
           "accuracy. Without DATASET_DIR a preset is generated in memory (default: small).\n"
           "Validation and test use sampled inference with the training fanouts, no dropout.\n"
           "Then the MLP baseline (the same model with the graph removed) is trained with the\n"
           "same settings and both test accuracies are printed side by side.\n\n"
           "  --mode M           where the data path runs: cpu (CPU sampler, CPU gather, CPU\n"
           "                     nn). The GPU modes are not built yet.\n"
           "  --preset NAME      without DATASET_DIR: the preset to generate (default small;\n"
           "                     tiny answers in seconds)\n"
           "  --epochs N         epochs (default 5)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --fanouts LIST     neighbours per hop from the seeds outward, e.g. 10,5 (default;\n"
           "                     -1 = all); their number is the number of layers\n"
           "  --layers L         layers (default: the number of fanouts; with --layers alone\n"
           "                     the fanouts are 10,5,5,...)\n"
           "  --mlp              the baseline without the graph: every hop sampled with\n"
           "                     fanout 0, so only each node's own features count (and\n"
           "                     no baseline)\n"
           "  --no-baseline      do not train the MLP baseline after GraphSAGE\n"
           "  --hidden H         hidden width (default 128)\n"
           "  --dropout P        dropout after hidden layers (default 0.5)\n"
           "  --lr X             Adam learning rate (default 0.003)\n"
           "  --weight-decay X   Adam L2 weight decay (default 0)\n"
           "  --seed S           seed of the parameters, shuffling, sampling and dropout\n"
           "                     (and of the generated preset; default 0)\n"
           "  --threads N        CPU threads of sampling and gathering (default: GD_THREADS)\n"
           "  -h, --help         this text\n");
}

/* "10,5" or "15,10,5" or "-1,10": 1..GD_SAMPLER_MAX_LAYERS integers >= -1. */
static int parse_fanouts(const char *text, int *fanouts, int *count) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < -1 || v > 1000000 || n == GD_SAMPLER_MAX_LAYERS) return -1;
        fanouts[n++] = (int)v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        p = end;
    }
    *count = n;
    return n > 0 ? 0 : -1;
}

static void print_acc(const char *name, double acc) {
    if (isnan(acc))
        printf("  %s acc   n/a ", name);
    else
        printf("  %s acc %.4f", name, acc);
}

typedef struct {
    double test;    /* test accuracy, NaN without labelled test nodes */
    double epoch_s; /* mean training time of an epoch */
} train_result;

/*
 * Train one model on ds for `epochs` epochs, printing its description, every epoch and the test
 * accuracy. Returns 0 or the command's exit code (after printing why).
 */
static int train_model(const gd_dataset_t *ds, const gd__train_config *cfg, int64_t epochs,
                       train_result *res) {
    gd__trainer *tr = NULL;
    char a[32];
    int rc = 0;
    gd_status st = gd__trainer_create(ds, cfg, &tr);
    if (st != GD_OK) return cli_fail("creating the trainer", st);
    gd__trainer_info info;
    gd__trainer_get_info(tr, &info);
    printf("model: %s, %d layers, hidden %lld, fanouts ",
           cfg->mlp ? "MLP (graph removed)" : "GraphSAGE (mean)", cfg->num_layers,
           (long long)cfg->hidden_dim);
    for (int h = 0; h < cfg->num_layers; h++)
        printf("%s%d", h ? "," : "", cfg->mlp ? 0 : cfg->fanouts[h]);
    printf(", %lld parameters; mode cpu (the GPU modes are not built yet), batch %lld, lr %g, "
           "dropout %g, weight decay %g\n",
           (long long)info.num_params, (long long)cfg->batch_size, cfg->lr, cfg->dropout,
           cfg->weight_decay);
    printf("nodes: train %lld / valid %lld / test %lld; a minibatch has at most %lld input "
           "nodes (%s of features)\n",
           (long long)info.train_nodes, (long long)info.valid_nodes, (long long)info.test_nodes,
           (long long)info.max_input_nodes, cli_bytes((double)info.feature_bytes, a, sizeof a));
    fflush(stdout);

    double total = 0;
    for (int64_t e = 0; e < epochs; e++) {
        gd__train_epoch_stats es;
        double valid;
        if ((st = gd__trainer_epoch(tr, e, &es)) != GD_OK ||
            (st = gd__trainer_evaluate(tr, GD_ARRAY_VALID_IDX, &valid, NULL)) != GD_OK) {
            rc = cli_fail("training", st);
            goto done;
        }
        total += es.seconds;
        printf("epoch %3lld  loss %.4f", (long long)e + 1, es.loss);
        print_acc("train", es.train_acc);
        print_acc("valid", valid);
        printf("  time %.2f s (sample %.2f, gather %.2f, nn %.2f)\n", es.seconds, es.sample_s,
               es.gather_s, es.nn_s);
        fflush(stdout);
        if (cli_interrupted()) {
            fprintf(stderr, "graphdirect train: interrupted after epoch %lld\n", (long long)e + 1);
            rc = CLI_EXIT_INTERRUPTED;
            goto done;
        }
    }
    int64_t count;
    st = gd__trainer_evaluate(tr, GD_ARRAY_TEST_IDX, &res->test, &count);
    if (st != GD_OK) {
        rc = cli_fail("testing", st);
        goto done;
    }
    res->epoch_s = total / (double)epochs;
    if (isnan(res->test))
        printf("test acc n/a (no labelled test nodes)");
    else
        printf("test acc %.4f (%lld nodes)", res->test, (long long)count);
    printf("; %.2f s per epoch on average\n", res->epoch_s);
    fflush(stdout);
done:
    gd__trainer_destroy(tr);
    return rc;
}

int cmd_train(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"mode", required_argument, 0, 'm'},    {"preset", required_argument, 0, 'p'},
        {"epochs", required_argument, 0, 'e'},  {"batch", required_argument, 0, 'b'},
        {"fanouts", required_argument, 0, 'f'}, {"layers", required_argument, 0, 'L'},
        {"mlp", no_argument, 0, 'M'},           {"no-baseline", no_argument, 0, 'B'},
        {"hidden", required_argument, 0, 'H'},  {"dropout", required_argument, 0, 'd'},
        {"lr", required_argument, 0, 'l'},      {"weight-decay", required_argument, 0, 'w'},
        {"seed", required_argument, 0, 's'},    {"threads", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    gd__train_config cfg = GD__TRAIN_CONFIG_INIT;
    const char *mode = "cpu", *preset = "small";
    int64_t epochs = 5, v;
    int layers = 0, baseline = 1, fanout_count = 0, fanouts[GD_SAMPLER_MAX_LAYERS];
    double x;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            mode = optarg;
            break;
        case 'p':
            preset = optarg;
            break;
        case 'e':
            if (cli_parse_i64(optarg, &epochs) || epochs < 1 || epochs > 1000000)
                return cli_usage_error("train", "--epochs '%s' is not a positive count", optarg);
            break;
        case 'b':
            if (cli_parse_i64(optarg, &v) || v < 1 || v > (INT64_C(1) << 31))
                return cli_usage_error("train", "--batch '%s' is not a positive count", optarg);
            cfg.batch_size = v;
            break;
        case 'f':
            if (parse_fanouts(optarg, fanouts, &fanout_count))
                return cli_usage_error("train",
                                       "--fanouts '%s' is not 1 to %d comma-separated counts "
                                       "(-1 = all neighbours)",
                                       optarg, GD_SAMPLER_MAX_LAYERS);
            break;
        case 'L':
            if (cli_parse_i64(optarg, &v) || v < 1 || v > GD_SAMPLER_MAX_LAYERS)
                return cli_usage_error("train", "--layers '%s' is not in 1..%d", optarg,
                                       GD_SAMPLER_MAX_LAYERS);
            layers = (int)v;
            break;
        case 'M':
            cfg.mlp = 1;
            break;
        case 'B':
            baseline = 0;
            break;
        case 'H':
            if (cli_parse_i64(optarg, &v) || v < 1 || v > 65536)
                return cli_usage_error("train", "--hidden '%s' is not a positive width", optarg);
            cfg.hidden_dim = v;
            break;
        case 'd':
            if (cli_parse_double(optarg, &x) || x < 0 || x >= 1)
                return cli_usage_error("train", "--dropout '%s' is not in [0, 1)", optarg);
            cfg.dropout = x;
            break;
        case 'l':
            if (cli_parse_double(optarg, &x) || x <= 0)
                return cli_usage_error("train", "--lr '%s' is not positive", optarg);
            cfg.lr = x;
            break;
        case 'w':
            if (cli_parse_double(optarg, &x) || x < 0)
                return cli_usage_error("train", "--weight-decay '%s' is negative or not a number",
                                       optarg);
            cfg.weight_decay = x;
            break;
        case 's':
            if (cli_parse_i64(optarg, &v) || v < 0)
                return cli_usage_error("train", "--seed '%s' is not a non-negative integer",
                                       optarg);
            cfg.seed = (uint64_t)v;
            break;
        case 'j':
            if (cli_parse_i64(optarg, &v) || v < 1 || v > 4096)
                return cli_usage_error("train", "--threads '%s' is not positive", optarg);
            cfg.threads = (int)v;
            break;
        case 'h':
            help();
            return 0;
        default:
            return cli_usage_error("train", "unknown option");
        }
    }
    const char *dir = optind < argc ? argv[optind++] : NULL;
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (strcmp(mode, "cpu") != 0) {
        fprintf(stderr,
                "graphdirect train: --mode %s is not available: only the cpu mode is built so "
                "far (CPU sampler, CPU gather, CPU nn). The GPU modes (CUDA sampler, zero-copy "
                "gather, CUDA nn, pipelined) are not built yet.\n",
                mode);
        return CLI_EXIT_USAGE;
    }
    if (fanout_count && layers && layers != fanout_count)
        return cli_usage_error("train", "--layers %d but --fanouts gives %d hops", layers,
                               fanout_count);
    if (fanout_count) {
        cfg.num_layers = fanout_count;
        memcpy(cfg.fanouts, fanouts, sizeof(int) * (size_t)fanout_count);
    } else if (layers) {
        cfg.num_layers = layers;
        for (int h = 0; h < layers; h++) cfg.fanouts[h] = h == 0 ? 10 : 5;
    }

    gd_dataset_t *ds = NULL;
    train_result sage = {NAN, 0}, mlp = {NAN, 0};
    gd_status st;
    cli_progress prog; /* also makes Ctrl-C stop training after the current epoch */
    cli_progress_init(&prog);
    double t0 = cli_now();
    if (dir) {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        st = gd_dataset_open(dir, &oo, &ds);
        if (st != GD_OK) return cli_fail("opening the dataset", st);
    } else {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = preset;
        go.seed = cfg.seed;
        go.progress = cli_progress_cb;
        go.progress_user = &prog;
        st = gd_generate(&go, &ds);
        cli_progress_end(&prog);
        if (st != GD_OK) return cli_fail("generate", st);
    }
    char a[32], b[32];
    printf("dataset '%s'%s: %s nodes, %s edges, %lld-dim features, %lld classes (%.2f s)\n",
           gd_dataset_name(ds), dir ? "" : " (generated in memory)",
           cli_count((double)gd_dataset_num_nodes(ds), a, sizeof a),
           cli_count((double)gd_dataset_num_edges(ds), b, sizeof b),
           (long long)gd_dataset_feature_dim(ds), (long long)gd_dataset_num_classes(ds),
           cli_now() - t0);

    int rc = train_model(ds, &cfg, epochs, &sage);
    if (rc == 0 && baseline && !cfg.mlp) {
        gd__train_config mlp_cfg = cfg;
        mlp_cfg.mlp = 1;
        printf("\nbaseline: the same model and settings with the graph removed\n");
        rc = train_model(ds, &mlp_cfg, epochs, &mlp);
        if (rc == 0 && !isnan(sage.test) && !isnan(mlp.test))
            printf("\ntest accuracy: GraphSAGE %.4f vs MLP (graph removed) %.4f, the graph adds "
                   "%+.1f points (%.2f s vs %.2f s per epoch, mode cpu)\n",
                   sage.test, mlp.test, 100.0 * (sage.test - mlp.test), sage.epoch_s, mlp.epoch_s);
    }
    gd_dataset_close(ds);
    return rc;
}
