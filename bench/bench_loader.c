/*
 * `graphdirect bench loader`: epochs of the public minibatch loader (gd_loader_*) iterated from
 * C, the reference that the Python binding's overhead is measured against (issue 6, item 6:
 * bench/loader_overhead.py runs the same loop from Python and divides). Each minibatch is
 * fetched, every field is exported as a DLPack tensor and deleted at once (what a Python
 * consumer does per batch through __dlpack__), and the batch is released. Reported: seconds per
 * epoch (the fastest of --epochs after one warm-up epoch) and minibatches per second.
 */
#include "bench.h"
#include "cli.h"

#ifdef GD_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

#include <getopt.h>
#include <string.h>

typedef struct {
    bench_options opt;
    const char *mode;
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    int layers, epochs, no_export;
} loader_bench;

static const char cmd[] = "bench loader";

static void help(void) {
    printf("usage: graphdirect bench loader [options]\n\n"
           "Iterate the minibatch loader (gd_loader_*) from C for whole epochs, exporting every\n"
           "field of every minibatch as a DLPack tensor: the reference for the Python binding's\n"
           "overhead (bench/loader_overhead.py).\n\n"
           "  --preset NAME      generator preset (default products)\n"
           "  --nodes N          scale the preset to N nodes\n"
           "  --mode M           cpu, all-gpu, zero-copy or auto (default zero-copy)\n"
           "  --fanouts LIST     neighbours per hop (default 15,10,5)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --epochs N         timed epochs after one warm-up epoch (default 3)\n"
           "  --no-export        fetch and release only (no DLPack tensors)\n"
           "  --threads N        CPU threads (default: all cores)\n"
           "  --device N         GPU (default 0)\n"
           "  --seed N           dataset and sampling seed (default 1)\n"
           "  --json FILE        write the results\n"
           "  --commit TEXT      commit recorded in the JSON\n");
}

static int own_option(void *self, int c, const char *arg) {
    loader_bench *b = self;
    int64_t v;
    switch (c) {
    case 'm':
        b->mode = arg;
        break;
    case 'f':
        if (bench_parse_fanouts(arg, -1, 100000, 1, &b->fanouts, &b->layers, NULL))
            return CLI_EXIT_USAGE;
        break;
    case 'e':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 1000)
            return cli_usage_error(cmd, "--epochs '%s' is not a count in [1, 1000]", arg);
        b->epochs = (int)v;
        break;
    case 'x':
        b->no_export = 1;
        break;
    default:
        return -1;
    }
    return 0;
}

/* One epoch: fetch, export every field and delete it, release. The minibatch count or -1. */
static int64_t run_epoch(gd_loader_t *l, int64_t epoch, int layers, int export_fields) {
    int64_t count = 0;
    BENCH_GD(gd_loader_start_epoch(l, epoch), "starting an epoch");
    for (;;) {
        gd_batch_t *b;
        BENCH_GD(gd_loader_next(l, &b), "the next minibatch");
        if (!b) break;
#ifdef GD_HAVE_DLPACK
        for (int f = 0; export_fields && f < GD_BATCH_FIELD_COUNT; f++) {
            const int per_layer = f == GD_BATCH_INDPTR || f == GD_BATCH_INDICES;
            for (int ly = 0; ly < (per_layer ? layers : 1); ly++) {
                struct DLManagedTensor *t;
                gd_status st = gd_batch_export(b, (gd_batch_field)f, ly, NULL, &t);
                if (st == GD_ERR_NOT_FOUND) { /* no labels */
                    gd_clear_error();
                    continue;
                }
                if (st != GD_OK) {
                    gd_batch_release(b);
                    BENCH_GD(st, "exporting a field");
                }
                t->deleter(t);
            }
        }
#else
        (void)layers;
        (void)export_fields;
#endif
        gd_batch_release(b);
        count++;
    }
    return count;
fail:
    return -1;
}

int bench_loader(int argc, char **argv) {
    static const struct option long_opts[] = {
        BENCH_LONG("preset", PRESET),           BENCH_LONG("nodes", NODES),
        {"mode", required_argument, 0, 'm'},    {"fanouts", required_argument, 0, 'f'},
        BENCH_LONG("batch", BATCH),             {"epochs", required_argument, 0, 'e'},
        {"no-export", no_argument, 0, 'x'},     BENCH_LONG("threads", THREADS),
        BENCH_LONG_END};
    loader_bench b;
    memset(&b, 0, sizeof b);
    bench_options_init(&b.opt);
    b.opt.preset = "products";
    b.mode = "zero-copy";
    b.epochs = 3;
    if (bench_parse_fanouts("15,10,5", -1, 100000, 1, &b.fanouts, &b.layers, NULL))
        return CLI_EXIT_FAIL;
    int rc = bench_parse_options(&b.opt, cmd, argc, argv, long_opts, help, own_option, &b);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    gd_dataset_t *ds = NULL;
    gd_loader_t *l = NULL;
    cJSON *root = NULL;
    const double t_start = bench_now();
#ifndef GD_HAVE_DLPACK
    BENCH_REQUIRE(b.no_export, "this build has no DLPack header (libdlpack-dev): run with "
                               "--no-export, or install it and rebuild");
#endif
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) goto fail;
    if (bench_json_header(&root, "loader", &b.opt, strcmp(b.mode, "cpu") != 0)) goto fail;
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = b.opt.preset;
    go.seed = b.opt.seed;
    go.num_nodes = b.opt.nodes;
    fprintf(stderr, "loader: generating preset '%s' in memory\n", b.opt.preset);
    BENCH_GD(gd_generate(&go, &ds), "generating the dataset");
    gd_loader_options lo = GD_LOADER_OPTIONS_INIT;
    lo.mode = b.mode;
    lo.num_layers = b.layers;
    memcpy(lo.fanouts, b.fanouts, sizeof lo.fanouts);
    lo.batch_size = b.opt.batch;
    lo.seed = b.opt.seed;
    lo.device = b.opt.device;
    lo.threads = b.opt.threads;
    BENCH_GD(gd_loader_create(ds, &lo, &l), "creating the loader");
    gd_loader_info li = GD_LOADER_INFO_INIT;
    BENCH_GD(gd_loader_get_info(l, &li), "the loader's info");
    fprintf(stderr, "loader: %s; %lld minibatches an epoch\n", li.plan,
            (long long)li.batches_per_epoch);
    BENCH_REQUIRE(run_epoch(l, 0, b.layers, !b.no_export) >= 0, "the warm-up epoch failed");
    double best = 0;
    int64_t count = 0;
    cJSON *runs = cJSON_AddArrayToObject(root, "epochs");
    BENCH_JSON(runs);
    for (int e = 1; e <= b.epochs; e++) {
        const double t0 = bench_now();
        count = run_epoch(l, e, b.layers, !b.no_export);
        const double s = bench_now() - t0;
        BENCH_REQUIRE(count >= 0, "epoch %d failed", e);
        if (e == 1 || s < best) best = s;
        printf("epoch %d: %lld minibatches in %.4f s (%.1f minibatches/s)\n", e, (long long)count,
               s, (double)count / s);
        BENCH_JSON(cJSON_AddItemToArray(runs, cJSON_CreateNumber(s)));
    }
    printf("loader from C, mode %s, %s: best epoch %.4f s, %.1f minibatches/s\n", li.mode,
           b.no_export ? "no exports" : "every field exported", best, (double)count / best);
    BENCH_JSON(cJSON_AddStringToObject(root, "mode", li.mode));
    BENCH_JSON(cJSON_AddStringToObject(root, "preset", b.opt.preset));
    BENCH_JSON(cJSON_AddBoolToObject(root, "exports", !b.no_export));
    BENCH_JSON(cJSON_AddNumberToObject(root, "minibatches", (double)count));
    BENCH_JSON(cJSON_AddNumberToObject(root, "best_epoch_s", best));
    rc = bench_run_done(&b.opt, root, "loader", t_start);
fail:
    gd_loader_destroy(l);
    gd_dataset_close(ds);
    cJSON_Delete(root);
    return bench_exit_status(rc);
}
