/*
 * `graphdirect eval DIR --model FILE`: the exact accuracy of a saved model (best.gdc or
 * checkpoint.gdc of `graphdirect train --checkpoint`) on the train, valid and test splits, by
 * layer-wise inference over all neighbours of all nodes. A client of the public trainer: the
 * file's settings (gd_checkpoint_read_info) build a trainer of its model, gd_trainer_load loads
 * it and gd_trainer_evaluate runs the inference.
 */
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void eval_help(void) {
    printf("usage: graphdirect eval DATASET_DIR --model FILE [options]\n\n"
           "The exact accuracy of a saved model (best.gdc or checkpoint.gdc of `graphdirect\n"
           "train --checkpoint`) on the test split (and the valid and train splits), by\n"
           "layer-wise inference over all neighbours of all nodes, in chunks that fit in GPU\n"
           "memory.\n\n"
           "  --model FILE       the saved model\n"
           "  --mode cpu|gpu     where inference runs (default: gpu when one is visible)\n"
           "  --device N         the GPU (default 0)\n"
           "  --preset NAME      instead of DATASET_DIR: generate the preset (with --seed)\n"
           "  --seed S           seed of the generated preset (default 0)\n"
           "  --threads N        CPU threads (default: GD_THREADS)\n"
           "  -h, --help         this text\n");
}

/*
 * A trainer of the file's model on ds, the file's parameters loaded. On the GPU it runs in
 * cpu-centric mode: the model on the GPU and nothing of the dataset placed there, so that the
 * exact inference has the GPU memory to itself, as when it ran without a trainer. It trains
 * nothing, so its minibatch buffers are sized for the smallest minibatch (one neighbour a hop,
 * a few seeds): the file's fanouts (-1 takes every neighbour) do not change the model's shape.
 */
static gd_status eval_trainer(const gd_dataset_t *ds, const char *path,
                              const gd_checkpoint_info *ci, int gpu, int device, int threads,
                              gd_trainer_t **out) {
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    o.mode = gpu ? "cpu-centric" : "cpu";
    o.model = ci->model;
    o.num_layers = ci->num_layers;
    for (int h = 0; h < o.num_layers; h++) o.fanouts[h] = 1;
    o.batch_size = 64;
    o.hidden = ci->hidden;
    o.heads = ci->heads;
    o.device = device;
    o.threads = threads;
    gd_status st = gd_trainer_create(ds, &o, out);
    if (st == GD_OK && (st = gd_trainer_load(*out, path)) != GD_OK) {
        gd_trainer_destroy(*out);
        *out = NULL;
    }
    return st;
}

int cmd_eval(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"model", required_argument, 0, 'm'},  {"mode", required_argument, 0, 'M'},
        {"device", required_argument, 0, 'D'}, {"preset", required_argument, 0, 'p'},
        {"seed", required_argument, 0, 's'},   {"threads", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *model = NULL, *mode = NULL, *preset = NULL;
    int64_t v, device = 0, seed = 0, threads = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            model = optarg;
            break;
        case 'M':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "gpu") != 0)
                return cli_usage_error("eval", "--mode '%s': use cpu or gpu", optarg);
            mode = optarg;
            break;
        case 'D':
            if (cli_parse_i64(optarg, &device) || device < 0 || device > 1024)
                return cli_usage_error("eval", "--device '%s' is not a GPU number", optarg);
            break;
        case 'p':
            preset = optarg;
            break;
        case 's':
            if (cli_parse_i64(optarg, &seed) || seed < 0)
                return cli_usage_error("eval", "--seed '%s' is not a non-negative integer", optarg);
            break;
        case 'j':
            if (cli_parse_i64(optarg, &v) || v < 1 || v > 4096)
                return cli_usage_error("eval", "--threads '%s' is not positive", optarg);
            threads = v;
            break;
        case 'h':
            eval_help();
            return 0;
        default:
            return cli_usage_error("eval", "unknown option");
        }
    }
    const char *dir = optind < argc ? argv[optind++] : NULL;
    if (optind < argc) return cli_usage_error("eval", "unexpected argument '%s'", argv[optind]);
    if (!model) return cli_usage_error("eval", "--model FILE is required");
    if (!dir == !preset)
        return cli_usage_error("eval", "give a DATASET_DIR or --preset NAME (one of them)");
    const int gpu = mode ? strcmp(mode, "gpu") == 0 : gd_device_count() > 0;

    gd_checkpoint_info meta = GD_CHECKPOINT_INFO_INIT;
    gd_status st = gd_checkpoint_read_info(model, &meta);
    if (st != GD_OK) return cli_fail("reading the model", st);
    gd_dataset_t *ds = NULL;
    gd_trainer_t *tr = NULL;
    int rc = 0;
    if (preset) {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = preset;
        go.seed = (uint64_t)seed;
        st = gd_generate(&go, &ds);
    } else {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        cli_guard_mapped(dir);
        st = gd_dataset_open(dir, &oo, &ds);
    }
    if (st != GD_OK) return cli_fail("opening the dataset", st);
    /* A heterogeneous dataset has a table per node type, not one width: loading the file
     * checks each of them against the model's (gd_trainer_load). */
    const int typed = gd_dataset_num_node_types(ds) > 0;
    if ((!typed && gd_dataset_feature_dim(ds) != meta.in_dim) ||
        gd_dataset_num_classes(ds) != meta.num_classes) {
        fprintf(stderr,
                "graphdirect eval: the model takes %lld features and has %lld classes, dataset "
                "'%s' has %lld and %lld: use the dataset it was trained on (%s)\n",
                (long long)meta.in_dim, (long long)meta.num_classes, gd_dataset_name(ds),
                (long long)gd_dataset_feature_dim(ds), (long long)gd_dataset_num_classes(ds),
                meta.dataset);
        gd_dataset_close(ds);
        return CLI_EXIT_FAIL;
    }
    if (gpu && !gd_has_cuda()) {
        fprintf(stderr, "graphdirect eval: --mode gpu needs CUDA; this build has none: use "
                        "--mode cpu\n");
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    if ((st = eval_trainer(ds, model, &meta, gpu, (int)device, (int)threads, &tr)) != GD_OK) {
        rc = cli_fail(gpu ? "eval on the GPU (use --mode cpu without one)" : "loading the model",
                      st);
        goto done;
    }
    /* The first exact evaluation runs the inference; the other splits reuse its predictions. */
    double acc[3], t0 = cli_now();
    int64_t count[3];
    for (int s = 0; s < 3; s++) {
        if ((st = gd_trainer_evaluate(tr, (gd_array_id)(GD_ARRAY_TRAIN_IDX + s), 1, &acc[s],
                                      &count[s])) != GD_OK) {
            rc = cli_fail(s == 0 ? "inference" : "accuracy", st);
            goto done;
        }
        if (s == 0) t0 = cli_now() - t0;
    }
    printf("model %s: %d layers, hidden %lld, trained %lld epochs on %s\n", model, meta.num_layers,
           (long long)meta.hidden, (long long)meta.epochs_done, meta.dataset);
    printf("layer-wise full-neighbour inference over %lld nodes on %s: %.2f s\n",
           (long long)gd_dataset_num_nodes(ds), gpu ? "the GPU" : "the CPU", t0);
    for (int s = 0; s < 3; s++) {
        static const char *names[3] = {"train", "valid", "test"};
        if (isnan(acc[s]))
            printf("%s acc n/a\n", names[s]);
        else
            printf("%s acc %.4f (%lld nodes)\n", names[s], acc[s], (long long)count[s]);
    }
done:
    gd_trainer_destroy(tr);
    gd_dataset_close(ds);
    return rc;
}
