/*
 * `graphdirect train`: train the default model of src/nn/model.h (or the MLP baseline, the
 * same model with the graph removed) on a dataset directory or on a preset generated in memory, in
 * one of the modes of docs/train.md (cpu, all-gpu, zero-copy, cpu-centric, auto). Every epoch
 * prints one line: the loss, train and valid accuracy, the epoch time and its breakdown, GPU memory
 * and CPU core-seconds; a progress bar runs on a terminal (plain lines otherwise) and --metrics
 * writes the same as JSON lines. The model with the best valid accuracy is kept; at the end its
 * test accuracy is computed both by sampled inference and exactly, by layer-wise full-neighbour
 * inference over all nodes. --checkpoint saves model, optimizer and epoch after every epoch and
 * --resume goes on from there. Then, unless --mlp or --no-baseline, the MLP baseline is trained
 * with the same settings and both test accuracies are printed side by side, so that what the
 * graph adds is visible (`make demo` runs exactly this on `small`).
 *
 * `graphdirect eval DIR --model FILE`: the exact test accuracy of a saved model.
 */
#include "cli.h"

#include "train/infer.h"
#include "train/internal.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void help(void) {
    const gd__model_i *model = gd__model_kind_iface(GD__MODEL_DEFAULT);
    printf("usage: graphdirect train [DATASET_DIR] [options]\n\n"
           "Train %s with minibatches of sampled neighbourhoods and\n"
           "Adam; report every epoch's loss, accuracies, time and its breakdown; keep the model\n"
           "with the best valid accuracy and report its test accuracy, by sampled inference\n"
           "and exactly (layer-wise inference over all neighbours). Without DATASET_DIR a\n"
           "preset is generated in memory (default: small). Then the MLP baseline (the same\n"
           "model with the graph removed) is trained with the same settings and both test\n"
           "accuracies are printed side by side.\n\n"
           "  --mode M           where the data path runs (docs/train.md):\n"
           "                       cpu          CPU sampler, CPU gather, CPU nn\n"
           "                       all-gpu      graph and features in GPU memory\n"
           "                       zero-copy    graph and features in pinned host memory,\n"
           "                                    read by the GPU; hot rows cached in GPU memory\n"
           "                       cpu-centric  CPU sampler and gather, one copy, GPU training\n"
           "                       auto         picked from the memory each needs (default)\n"
           "  --device N         the GPU (default 0)\n"
           "  --gpu-cache SIZE   zero-copy: GPU memory for hot feature rows (e.g. 4G; default:\n"
           "                     what the GPU memory budget leaves)\n"
           "  --graph-cache SIZE zero-copy: GPU memory for hot neighbour lists (default: a\n"
           "                     quarter of what the GPU memory budget leaves)\n"
           "  --gpu-mem-budget SIZE  GPU memory the run may use (default: all that is free)\n"
           "  --gather-sms N     SMs the gather kernel may use, N or N%% (default: all)\n"
           "  --depth D          buffer sets in the pipeline ring (default 3)\n"
           "  --preset NAME      without DATASET_DIR: the preset to generate (default small;\n"
           "                     tiny answers in seconds)\n"
           "  --epochs N         epochs (default 5)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --fanouts LIST     neighbours per hop from the seeds outward, e.g. 10,5 (default;\n"
           "                     -1 = all); their number is the number of layers\n"
           "  --layers L         layers (default: the number of fanouts; with --layers alone\n"
           "                     the fanouts are 10,5,5,...)\n"
           "  --mlp              the baseline without the graph (and no second baseline)\n"
           "  --no-baseline      do not train the MLP baseline after %s\n"
           "  --hidden H         hidden width (default 128)\n"
           "  --dropout P        dropout after hidden layers (default 0.5)\n"
           "  --lr X             Adam learning rate (default 0.003)\n"
           "  --weight-decay X   Adam L2 weight decay (default 0)\n"
           "  --seed S           seed of the parameters, shuffling, sampling and dropout\n"
           "                     (and of the generated preset; default 0)\n"
           "  --threads N        CPU threads of sampling and gathering (default: GD_THREADS)\n"
           "  --metrics FILE     write the run, every epoch and the test result as JSON lines\n"
           "                     (`graphdirect plot FILE` draws them)\n"
           "  --checkpoint DIR   after every epoch save DIR/checkpoint.gdc (model, optimizer,\n"
           "                     epoch) and, when valid accuracy improves, DIR/best.gdc (the\n"
           "                     model for `graphdirect eval`)\n"
           "  --resume           go on from DIR/checkpoint.gdc (same settings required)\n"
           "  --no-full-test     skip the exact (layer-wise, all neighbours) test accuracy\n"
           "  -h, --help         this text\n",
           model->description, model->title);
}

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

static cJSON *num_or_null(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* ------------------------------------------------------------ progress */

/* The per-minibatch progress of an epoch: a bar on a terminal, quarter lines otherwise. */
typedef struct {
    int tty;
    int64_t epoch, epochs;
    double start, last_draw;
    int last_quarter;
    int drawn;
    cli_metrics *metrics; /* step records go here too (NULL: none) */
    int64_t last_step;    /* the last minibatch a step record was written for */
} train_progress;

static int on_progress(void *user, int64_t done, int64_t total, double loss) {
    train_progress *p = user;
    const double now = cli_now(), el = now - p->start;
    const double rate = el > 0 ? (double)done / el : 0;
    const double eta = rate > 0 ? (double)(total - done) / rate : 0;
    char ls[32];
    if (isnan(loss))
        snprintf(ls, sizeof ls, "  -   ");
    else
        snprintf(ls, sizeof ls, "%.4f", loss);
    if (p->tty) {
        if (now - p->last_draw >= 0.1 || done == total) {
            const int width = 24, fill = total ? (int)(width * done / total) : width;
            char bar[32];
            for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
            bar[width] = 0;
            fprintf(stderr, "\r epoch %lld/%lld [%s] %lld/%lld  %.1f mb/s  loss %s  ETA %.0fs ",
                    (long long)p->epoch, (long long)p->epochs, bar, (long long)done,
                    (long long)total, rate, ls, eta);
            p->last_draw = now;
            p->drawn = 1;
        }
    } else {
        const int q = total ? (int)(4 * done / total) : 4;
        if (q > p->last_quarter && q < 4) {
            fprintf(stderr, "  epoch %lld: %lld/%lld minibatches, %.1f/s, loss %s, ETA %.0f s\n",
                    (long long)p->epoch, (long long)done, (long long)total, rate, ls, eta);
            p->last_quarter = q;
        }
    }
    /* A step record per report whose loss is known (the GPU modes report the latest finished
     * minibatch, which may be the same as last time). */
    if (p->metrics && !isnan(loss) && done != p->last_step) {
        cJSON *o = cli_metrics_record("step");
        if (o) {
            cJSON_AddNumberToObject(o, "epoch", (double)p->epoch);
            cJSON_AddNumberToObject(o, "step", (double)done);
            cJSON_AddNumberToObject(o, "loss", loss);
        }
        if (cli_metrics_write(p->metrics, o)) p->metrics = NULL;
        p->last_step = done;
    }
    return cli_interrupted();
}

static void progress_end(train_progress *p) {
    if (p->tty && p->drawn) fprintf(stderr, "\r%*s\r", 100, "");
    p->drawn = 0;
}

/* ------------------------------------------------------------ training */

typedef struct {
    const char *metrics_path, *checkpoint_dir;
    int resume, full_test;
    const char *dataset_label;
} run_options;

typedef struct {
    double test;      /* sampled test accuracy of the best model, NaN without labelled nodes */
    double test_full; /* exact test accuracy (layer-wise), NaN if not computed */
    double epoch_s;   /* mean training time of an epoch */
    gd__train_mode mode;
} train_result;

static int join_path(char *buf, size_t n, const char *dir, const char *file) {
    int k = snprintf(buf, n, "%s/%s", dir, file);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

static cJSON *run_record(const gd__train_config *cfg, const gd__trainer_info *info,
                         const gd_dataset_t *ds) {
    cJSON *o = cli_metrics_record("run");
    cli_metrics_add_time(o);
    cJSON_AddStringToObject(o, "dataset", gd_dataset_name(ds));
    cJSON_AddStringToObject(o, "model", cfg->mlp ? "mlp" : gd__model_kind_iface(cfg->model)->label);
    cJSON_AddStringToObject(o, "mode", gd__train_mode_name(info->mode));
    cJSON_AddStringToObject(o, "plan", info->plan);
    cJSON_AddNumberToObject(o, "layers", cfg->num_layers);
    cJSON_AddNumberToObject(o, "hidden", (double)cfg->hidden_dim);
    cJSON *f = cJSON_AddArrayToObject(o, "fanouts");
    for (int h = 0; h < cfg->num_layers; h++)
        cJSON_AddItemToArray(f, cJSON_CreateNumber(cfg->mlp ? 0 : cfg->fanouts[h]));
    cJSON_AddNumberToObject(o, "batch", (double)cfg->batch_size);
    cJSON_AddNumberToObject(o, "lr", cfg->lr);
    cJSON_AddNumberToObject(o, "dropout", cfg->dropout);
    cJSON_AddNumberToObject(o, "weight_decay", cfg->weight_decay);
    cJSON_AddNumberToObject(o, "seed", (double)cfg->seed);
    cJSON_AddNumberToObject(o, "parameters", (double)info->num_params);
    if (info->mode != GD__TRAIN_CPU) {
        gd_device_info di;
        if (gd_device_info_get(cfg->device, &di) == GD_OK)
            cJSON_AddStringToObject(o, "device", di.name);
        cJSON_AddNumberToObject(o, "gpu_bytes", (double)info->gpu_bytes);
        cJSON_AddNumberToObject(o, "feature_cache_bytes", (double)info->feature_cache_bytes);
        cJSON_AddNumberToObject(o, "graph_cache_bytes", (double)info->graph_cache_bytes);
    }
    return o;
}

static cJSON *epoch_record(const gd__train_epoch_stats *es, double valid) {
    cJSON *o = cli_metrics_record("epoch");
    cJSON_AddNumberToObject(o, "epoch", (double)es->epoch + 1);
    cJSON_AddItemToObject(o, "loss", num_or_null(es->loss));
    cJSON_AddItemToObject(o, "train_acc", num_or_null(es->train_acc));
    cJSON_AddItemToObject(o, "valid_acc", num_or_null(valid));
    cJSON_AddNumberToObject(o, "epoch_s", es->seconds);
    cJSON_AddNumberToObject(o, "sample_s", es->sample_s);
    cJSON_AddNumberToObject(o, "gather_s", es->gather_s);
    cJSON_AddNumberToObject(o, "train_s", es->train_s);
    cJSON_AddNumberToObject(o, "wait_s", es->wait_s);
    cJSON_AddNumberToObject(o, "gpu_mem_bytes", (double)es->gpu_mem_bytes);
    cJSON_AddNumberToObject(o, "cpu_core_s", es->cpu_core_s);
    cJSON_AddNumberToObject(o, "minibatches", (double)es->batches);
    return o;
}

/* The exact test accuracy of the trainer's model by layer-wise full-neighbour inference. */
static gd_status full_test(gd__trainer *tr, const gd_dataset_t *ds, int threads, double *acc,
                           int64_t *count, double *seconds) {
    gd_status st = GD_OK;
    int32_t *pred = malloc((size_t)gd_dataset_num_nodes(ds) * sizeof(int32_t));
    if (!pred) return GD_ERR_NO_MEMORY;
    gd__infer_options io = GD__INFER_OPTIONS_INIT;
    io.threads = threads;
    io.features = gd__trainer_registered_features(tr);
    double t0 = cli_now();
    st = gd__model_infer(gd__trainer_model(tr), ds, &io, pred, NULL, NULL);
    if (st == GD_OK) st = gd__infer_accuracy(ds, GD_ARRAY_TEST_IDX, pred, acc, count);
    *seconds = cli_now() - t0;
    free(pred);
    return st;
}

/*
 * Train one model on ds, printing its description, every epoch and the test accuracies.
 * Returns 0 or the command's exit code (after printing why).
 */
static int train_model(const gd_dataset_t *ds, const gd__train_config *cfg_in, int64_t epochs,
                       const run_options *ro, cli_metrics *metrics, train_result *res) {
    gd__train_config cfg = *cfg_in;
    train_progress prog = {0};
    gd__trainer *tr = NULL;
    float *best = NULL;
    char a[32], b[32], path[4096], best_path[4096];
    int rc = 0, have_best = 0;
    int64_t start_epoch = 0, best_epoch = -1;
    double best_valid = -1;
    prog.tty = isatty(STDERR_FILENO);
    prog.epochs = epochs;
    prog.metrics = metrics;
    cfg.progress = on_progress;
    cfg.progress_user = &prog;
    gd_status st = gd__trainer_create(ds, &cfg, &tr);
    if (st != GD_OK) return cli_fail("creating the trainer", st);
    gd__trainer_info info;
    gd__trainer_get_info(tr, &info);
    res->mode = info.mode;
    printf("model: %s, %d layers, hidden %lld, fanouts ",
           cfg.mlp ? "MLP (graph removed)" : gd__model_kind_iface(cfg.model)->description,
           cfg.num_layers, (long long)cfg.hidden_dim);
    for (int h = 0; h < cfg.num_layers; h++)
        printf("%s%d", h ? "," : "", cfg.mlp ? 0 : cfg.fanouts[h]);
    printf(", %lld parameters; batch %lld, lr %g, dropout %g, weight decay %g\n",
           (long long)info.num_params, (long long)cfg.batch_size, cfg.lr, cfg.dropout,
           cfg.weight_decay);
    printf("mode: %s: %s\n", gd__train_mode_name(info.mode), info.plan);
    printf("nodes: train %lld / valid %lld / test %lld; a minibatch has at most %lld input "
           "nodes (%s of features)",
           (long long)info.train_nodes, (long long)info.valid_nodes, (long long)info.test_nodes,
           (long long)info.max_input_nodes, cli_bytes((double)info.feature_bytes, a, sizeof a));
    if (info.mode != GD__TRAIN_CPU)
        printf("; GPU memory %s", cli_bytes((double)info.gpu_bytes, b, sizeof b));
    if (info.feature_cache_bytes > 0)
        printf(", feature cache %s (%lld rows)",
               cli_bytes((double)info.feature_cache_bytes, a, sizeof a),
               (long long)info.feature_cache_rows);
    printf("\n");
    fflush(stdout);
    if (metrics && cli_metrics_write(metrics, run_record(&cfg, &info, ds))) {
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    const size_t pbytes = (size_t)gd__model_num_params(gd__trainer_model(tr)) * sizeof(float);
    best = malloc(pbytes);
    if (!best) {
        rc = cli_fail("keeping the best model", GD_ERR_NO_MEMORY);
        goto done;
    }
    if (ro->checkpoint_dir && !cfg.mlp) {
        if (join_path(path, sizeof path, ro->checkpoint_dir, "checkpoint.gdc") ||
            join_path(best_path, sizeof best_path, ro->checkpoint_dir, "best.gdc")) {
            rc = cli_usage_error("train", "--checkpoint path too long");
            goto done;
        }
        if (ro->resume) {
            gd__checkpoint_meta saved;
            if ((st = gd__trainer_resume(tr, path, &saved)) != GD_OK) {
                rc = cli_fail("resuming", st);
                goto done;
            }
            start_epoch = saved.epochs_done;
            best_epoch = saved.best_epoch;
            best_valid = isnan(saved.best_valid) ? -1 : saved.best_valid;
            if (best_epoch >= 0 && access(best_path, R_OK) == 0) {
                gd__checkpoint_meta bm;
                if ((st = gd__checkpoint_load(best_path, gd__model_params(gd__trainer_model(tr)),
                                              &bm, best, NULL, NULL)) != GD_OK) {
                    rc = cli_fail("loading the best model so far", st);
                    goto done;
                }
                have_best = 1;
            }
            printf("resumed from %s after epoch %lld (Adam step %lld)\n", path,
                   (long long)start_epoch, (long long)saved.adam_step);
        }
    }
    double total = 0;
    int64_t ran = 0;
    for (int64_t e = start_epoch; e < epochs; e++) {
        gd__train_epoch_stats es;
        double valid;
        prog.epoch = e + 1;
        prog.start = cli_now();
        prog.last_quarter = 0;
        prog.last_step = 0;
        st = gd__trainer_epoch(tr, e, &es);
        progress_end(&prog);
        if (st == GD_OK) st = gd__trainer_evaluate(tr, GD_ARRAY_VALID_IDX, &valid, NULL);
        if (st != GD_OK) {
            rc = st == GD_ERR_INTERRUPTED ? CLI_EXIT_INTERRUPTED : cli_fail("training", st);
            if (st == GD_ERR_INTERRUPTED)
                fprintf(stderr, "graphdirect train: interrupted in epoch %lld\n", (long long)e + 1);
            goto done;
        }
        total += es.seconds;
        ran++;
        printf("epoch %3lld  loss %.4f", (long long)e + 1, es.loss);
        print_acc("train", es.train_acc);
        print_acc("valid", valid);
        printf("  %.2f s (sample %.2f, gather %.2f, train %.2f, wait %.2f)", es.seconds,
               es.sample_s, es.gather_s, es.train_s, es.wait_s);
        if (info.mode != GD__TRAIN_CPU)
            printf("  GPU %s", cli_bytes((double)es.gpu_mem_bytes, a, sizeof a));
        printf("  CPU %.1f core-s\n", es.cpu_core_s);
        fflush(stdout);
        if (metrics && cli_metrics_write(metrics, epoch_record(&es, valid))) {
            rc = CLI_EXIT_FAIL;
            goto done;
        }
        /* The best valid model is kept (the first epoch counts even without a valid split). */
        const double score = isnan(valid) ? 0 : valid;
        const int improved = score > best_valid;
        if (improved) {
            best_valid = score;
            best_epoch = e;
            if ((st = gd__trainer_params_get(tr, best, NULL)) != GD_OK) {
                rc = cli_fail("keeping the best model", st);
                goto done;
            }
            have_best = 1;
        }
        if (ro->checkpoint_dir && !cfg.mlp) {
            gd__checkpoint_meta m;
            gd__trainer_checkpoint_meta(tr, &m);
            m.epochs_done = e + 1;
            m.best_valid = isnan(valid) && best_epoch < 0 ? NAN : best_valid;
            m.best_epoch = best_epoch;
            if (improved && (st = gd__trainer_save(tr, best_path, &m, best, 0)) != GD_OK) {
                rc = cli_fail("saving the best model", st);
                goto done;
            }
            if ((st = gd__trainer_save(tr, path, &m, NULL, 1)) != GD_OK) {
                rc = cli_fail("saving the checkpoint", st);
                goto done;
            }
        }
        if (cli_interrupted()) {
            fprintf(stderr, "graphdirect train: interrupted after epoch %lld\n", (long long)e + 1);
            rc = CLI_EXIT_INTERRUPTED;
            goto done;
        }
    }
    /* Test the best model. */
    if (have_best && (st = gd__trainer_params_set(tr, best, NULL, 0)) != GD_OK) {
        rc = cli_fail("restoring the best model", st);
        goto done;
    }
    int64_t count = 0, full_count = 0;
    double full_s = 0;
    if ((st = gd__trainer_evaluate(tr, GD_ARRAY_TEST_IDX, &res->test, &count)) != GD_OK) {
        rc = cli_fail("testing", st);
        goto done;
    }
    res->test_full = NAN;
    /* The MLP's sampled inference (fanout 0) is already exact. */
    if (ro->full_test && !cfg.mlp &&
        (st = full_test(tr, ds, cfg.threads, &res->test_full, &full_count, &full_s)) != GD_OK) {
        rc = cli_fail("testing with full neighbourhoods", st);
        goto done;
    }
    res->epoch_s = ran ? total / (double)ran : 0;
    printf("best valid epoch %lld: ", (long long)best_epoch + 1);
    if (isnan(res->test))
        printf("test acc n/a (no labelled test nodes)\n");
    else {
        printf("test acc %.4f (%lld nodes, sampled neighbours)", res->test, (long long)count);
        if (!isnan(res->test_full))
            printf(", %.4f exact (all neighbours, layer-wise, %.2f s)", res->test_full, full_s);
        printf("; %.2f s per epoch on average\n", res->epoch_s);
    }
    fflush(stdout);
    if (metrics) {
        cJSON *o = cli_metrics_record("test");
        cJSON_AddStringToObject(o, "model",
                                cfg.mlp ? "mlp" : gd__model_kind_iface(cfg.model)->label);
        cJSON_AddNumberToObject(o, "best_epoch", (double)best_epoch + 1);
        cJSON_AddItemToObject(o, "test_acc", num_or_null(res->test));
        cJSON_AddStringToObject(o, "method", "sampled");
        cJSON_AddItemToObject(o, "test_acc_full", num_or_null(res->test_full));
        if (cli_metrics_write(metrics, o)) rc = CLI_EXIT_FAIL;
    }
done:
    progress_end(&prog);
    free(best);
    gd__trainer_destroy(tr);
    return rc;
}

/* Make DIR (one level) unless it exists. */
static int ensure_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return 0;
        fprintf(stderr, "graphdirect train: --checkpoint '%s' exists and is not a directory\n",
                dir);
        return -1;
    }
    if (mkdir(dir, 0755) != 0) {
        fprintf(stderr, "graphdirect train: cannot create the checkpoint directory '%s': %s\n", dir,
                strerror(errno));
        return -1;
    }
    return 0;
}

int cmd_train(int argc, char **argv) {
    static const struct option long_opts[] = {{"mode", required_argument, 0, 'm'},
                                              {"preset", required_argument, 0, 'p'},
                                              {"epochs", required_argument, 0, 'e'},
                                              {"batch", required_argument, 0, 'b'},
                                              {"fanouts", required_argument, 0, 'f'},
                                              {"layers", required_argument, 0, 'L'},
                                              {"mlp", no_argument, 0, 'M'},
                                              {"no-baseline", no_argument, 0, 'B'},
                                              {"hidden", required_argument, 0, 'H'},
                                              {"dropout", required_argument, 0, 'd'},
                                              {"lr", required_argument, 0, 'l'},
                                              {"weight-decay", required_argument, 0, 'w'},
                                              {"seed", required_argument, 0, 's'},
                                              {"threads", required_argument, 0, 'j'},
                                              {"device", required_argument, 0, 'D'},
                                              {"gpu-cache", required_argument, 0, 'c'},
                                              {"graph-cache", required_argument, 0, 'g'},
                                              {"gpu-mem-budget", required_argument, 0, 'G'},
                                              {"gather-sms", required_argument, 0, 'S'},
                                              {"depth", required_argument, 0, 'R'},
                                              {"metrics", required_argument, 0, 'J'},
                                              {"checkpoint", required_argument, 0, 'C'},
                                              {"resume", no_argument, 0, 'r'},
                                              {"no-full-test", no_argument, 0, 'F'},
                                              {"help", no_argument, 0, 'h'},
                                              {0, 0, 0, 0}};
    gd__train_config cfg = GD__TRAIN_CONFIG_INIT;
    cfg.mode = GD__TRAIN_AUTO;
    run_options ro = {NULL, NULL, 0, 1, NULL};
    const char *preset = "small";
    int64_t epochs = 5, v;
    int layers = 0, baseline = 1, fanout_count = 0, fanouts[GD_SAMPLER_MAX_LAYERS];
    double x;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (gd__train_mode_parse(optarg, &cfg.mode) != GD_OK)
                return cli_usage_error("train", "%s", gd_last_error());
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
        case 'D':
            if (cli_parse_i64(optarg, &v) || v < 0 || v > 1024)
                return cli_usage_error("train", "--device '%s' is not a GPU number", optarg);
            cfg.device = (int)v;
            break;
        case 'c':
            if (cli_parse_i64(optarg, &v) || v < 0)
                return cli_usage_error("train", "--gpu-cache '%s' is not a size (e.g. 4G)", optarg);
            cfg.gpu_cache_bytes = v;
            break;
        case 'g':
            if (cli_parse_i64(optarg, &v) || v < 0)
                return cli_usage_error("train", "--graph-cache '%s' is not a size (e.g. 1G)",
                                       optarg);
            cfg.graph_cache_bytes = v;
            break;
        case 'G':
            if (cli_parse_i64(optarg, &v) || v < 1)
                return cli_usage_error("train", "--gpu-mem-budget '%s' is not a size (e.g. 16G)",
                                       optarg);
            cfg.gpu_mem_budget = v;
            break;
        case 'S':
            cfg.gather_sms = optarg;
            break;
        case 'R':
            if (cli_parse_i64(optarg, &v) || v < 2 || v > 8)
                return cli_usage_error("train", "--depth '%s' is not in 2..8", optarg);
            cfg.depth = (int)v;
            break;
        case 'J':
            ro.metrics_path = optarg;
            break;
        case 'C':
            ro.checkpoint_dir = optarg;
            break;
        case 'r':
            ro.resume = 1;
            break;
        case 'F':
            ro.full_test = 0;
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
    if (fanout_count && layers && layers != fanout_count)
        return cli_usage_error("train", "--layers %d but --fanouts gives %d hops", layers,
                               fanout_count);
    if (ro.resume && !ro.checkpoint_dir)
        return cli_usage_error("train", "--resume needs --checkpoint DIR (where to resume from)");
    if (fanout_count) {
        cfg.num_layers = fanout_count;
        memcpy(cfg.fanouts, fanouts, sizeof(int) * (size_t)fanout_count);
    } else if (layers) {
        cfg.num_layers = layers;
        for (int h = 0; h < layers; h++) cfg.fanouts[h] = h == 0 ? 10 : 5;
    }
    if (ro.checkpoint_dir && ensure_dir(ro.checkpoint_dir)) return CLI_EXIT_FAIL;
    gd_dataset_t *ds = NULL;
    cli_metrics *metrics = NULL;
    train_result gnn = {NAN, NAN, 0, GD__TRAIN_CPU}, mlp = {NAN, NAN, 0, GD__TRAIN_CPU};
    gd_status st;
    cli_progress prog; /* also makes Ctrl-C stop training after the current minibatch */
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
    int rc = 0;
    if (ro.metrics_path && cli_metrics_open(ro.metrics_path, &metrics)) rc = CLI_EXIT_FAIL;
    if (rc == 0) rc = train_model(ds, &cfg, epochs, &ro, metrics, &gnn);
    if (rc == 0 && baseline && !cfg.mlp) {
        gd__train_config mlp_cfg = cfg;
        mlp_cfg.mlp = 1;
        printf("\nbaseline: the same model and settings with the graph removed\n");
        rc = train_model(ds, &mlp_cfg, epochs, &ro, metrics, &mlp);
        if (rc == 0 && !isnan(gnn.test) && !isnan(mlp.test)) {
            const double g = isnan(gnn.test_full) ? gnn.test : gnn.test_full;
            printf("\ntest accuracy: %s %.4f vs MLP (graph removed) %.4f, the graph adds "
                   "%+.1f points (%.2f s vs %.2f s per epoch, mode %s)\n",
                   gd__model_kind_iface(cfg.model)->title, g, mlp.test, 100.0 * (g - mlp.test),
                   gnn.epoch_s, mlp.epoch_s, gd__train_mode_name(gnn.mode));
        }
    }
    cli_metrics_close(metrics);
    gd_dataset_close(ds);
    return rc;
}

/* ------------------------------------------------------------------ eval */

/*
 * The model of the file at path (meta: its peeked meta, refreshed) on ctx's backend: the kind it
 * names, built with capacities of 1 (layer-wise inference runs no minibatch), then its
 * parameters.
 */
static gd_status load_model(const char *path, const gd__nn_ctx *ctx, gd__checkpoint_meta *meta,
                            gd__model **out) {
    gd_status st = GD_OK;
    gd__model *m = NULL;
    gd__model_kind kind;
    float *params = NULL;
    GD_CHECK(gd__model_kind_parse(meta->model, &kind));
    gd__model_config mc =
        gd__model_config_make(kind, meta->num_layers, meta->in_dim, meta->hidden_dim,
                              meta->num_classes, 0.0, GD_DTYPE_FLOAT32);
    for (int l = 0; l <= mc.num_layers; l++) mc.max_nodes[l] = 1;
    GD_CHECK(gd__model_create(ctx, &mc, 0, &m));
    gd__nn_params *mp = gd__model_params(m);
    params = malloc((size_t)mp->numel * sizeof(float));
    GD_REQUIRE(params, GD_ERR_NO_MEMORY, "out of memory for %lld parameters", (long long)mp->numel);
    GD_CHECK(gd__checkpoint_load(path, mp, meta, params, NULL, NULL));
    GD_CHECK(gd__nn_from_host(ctx, &mp->params, params));
    *out = m;
    m = NULL;
fail:
    free(params);
    gd__model_destroy(m);
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

    gd__checkpoint_meta meta;
    gd__nn_params layout;
    gd_status st = gd__checkpoint_peek(model, &meta, &layout, NULL);
    if (st != GD_OK) return cli_fail("reading the model", st);
    gd_dataset_t *ds = NULL;
    gd__model *m = NULL;
    gd__nn_ctx ctx = gd__nn_cpu_ctx();
    int cuda_ctx = 0, rc = 0;
    int32_t *pred = NULL;
    if (preset) {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = preset;
        go.seed = (uint64_t)seed;
        st = gd_generate(&go, &ds);
    } else {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        st = gd_dataset_open(dir, &oo, &ds);
    }
    if (st != GD_OK) return cli_fail("opening the dataset", st);
    if (gd_dataset_feature_dim(ds) != meta.in_dim ||
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
    if (gpu) {
#ifdef GD_WITH_CUDA
        st = gd__nn_cuda_ctx_create((int)device, &ctx);
        if (st != GD_OK) {
            rc = cli_fail("eval on the GPU (use --mode cpu without one)", st);
            goto done;
        }
        cuda_ctx = 1;
#else
        fprintf(stderr, "graphdirect eval: --mode gpu needs CUDA; this build has none: use "
                        "--mode cpu\n");
        rc = CLI_EXIT_FAIL;
        goto done;
#endif
    }
    if ((st = load_model(model, &ctx, &meta, &m)) != GD_OK) {
        rc = cli_fail("loading the model", st);
        goto done;
    }
    pred = malloc((size_t)gd_dataset_num_nodes(ds) * sizeof(int32_t));
    if (!pred) {
        rc = cli_fail("eval", GD_ERR_NO_MEMORY);
        goto done;
    }
    gd__infer_options io = GD__INFER_OPTIONS_INIT;
    io.threads = (int)threads;
    gd__infer_stats is;
    double t0 = cli_now();
    if ((st = gd__model_infer(m, ds, &io, pred, NULL, &is)) != GD_OK) {
        rc = cli_fail("inference", st);
        goto done;
    }
    printf("model %s: %d layers, hidden %lld, trained %lld epochs on %s\n", model, meta.num_layers,
           (long long)meta.hidden_dim, (long long)meta.epochs_done, meta.dataset);
    printf("layer-wise full-neighbour inference over %lld nodes on %s: %.2f s\n",
           (long long)gd_dataset_num_nodes(ds), gpu ? "the GPU" : "the CPU", cli_now() - t0);
    for (int s = 0; s < 3; s++) {
        static const char *names[3] = {"train", "valid", "test"};
        double acc;
        int64_t count;
        if ((st = gd__infer_accuracy(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + s), pred, &acc,
                                     &count)) != GD_OK) {
            rc = cli_fail("accuracy", st);
            goto done;
        }
        if (isnan(acc))
            printf("%s acc n/a\n", names[s]);
        else
            printf("%s acc %.4f (%lld nodes)\n", names[s], acc, (long long)count);
    }
done:
    free(pred);
    gd__model_destroy(m);
#ifdef GD_WITH_CUDA
    if (cuda_ctx) gd__nn_cuda_ctx_destroy(&ctx);
#else
    (void)cuda_ctx;
#endif
    gd_dataset_close(ds);
    return rc;
}
