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
 * The command is a client of the public trainer (gd_trainer_*): the run policy (best valid model,
 * checkpoints, resume, the exact test) is the library's gd_trainer_fit; this file parses the
 * command line and prints. With --gpus N (or under mpirun) one process trains on each GPU
 * (tools/launch.h): each rank runs this same command with a context that joins the others, and
 * only rank 0 prints the run and writes the metrics and the checkpoints.
 */
#include "cli.h"
#include "launch.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void help(void) {
    gd_model_info model = GD_MODEL_INFO_INIT;
    (void)gd_model_get_info(NULL, &model);
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
           "  --gpus N|LIST      train on N GPUs (0..N-1) or on the listed ones (e.g. 0,2):\n"
           "                     one process per GPU, gradients summed with NCCL; --batch is\n"
           "                     per GPU; rank 0 prints and writes the files; a rank that\n"
           "                     fails stops them all (docs/multi_gpu.md). `mpirun -np N\n"
           "                     graphdirect train ...` starts the ranks the same way\n"
           "  --gpu-cache SIZE   zero-copy: GPU memory for hot feature rows (e.g. 4G; default:\n"
           "                     what the GPU memory budget leaves)\n"
           "  --graph-cache SIZE zero-copy: GPU memory for hot neighbour lists (default: a\n"
           "                     quarter of what the GPU memory budget leaves; three quarters\n"
           "                     with --host-gather cpu, split or auto)\n"
           "  --gpu-mem-budget SIZE  GPU memory the run may use (default: all that is free)\n"
           "  --host-mem-budget SIZE host memory the run may take beyond the dataset (default:\n"
           "                     what is available, or GD_HOST_MEM_MB)\n"
           "  --gather-sms N     SMs the gather kernel may use, N or N%% (default: all)\n"
           "  --host-gather H    zero-copy: how the feature rows outside the GPU cache come\n"
           "                       zero-copy  the gather kernel reads pinned host memory (default)\n"
           "                       cpu        CPU threads copy them into pinned staging, one DMA\n"
           "                       split      both at once: CPU threads copy a fraction of them\n"
           "                                  (split=F, else GD_HOST_SPLIT, else from a probe)\n"
           "                                  while the kernel reads the rest from host memory\n"
           "                       auto       the first training minibatches try eight CPU\n"
           "                                  fractions from 1 to 0 (GD_HOST_TRIAL each) and\n"
           "                                  the fastest is kept\n"
           "  --placement P      several GPUs in zero-copy: where the hot feature rows live\n"
           "                       replicate  every GPU caches the hottest rows it holds\n"
           "                       partition  each hot row cached once, read over NVLink\n"
           "                       auto       the cost model's mix of both (default)\n"
           "  --locality K|auto  zero-copy: draw neighbours whose rows are in GPU memory K\n"
           "                     times as likely (auto: K adapted each epoch to the gather /\n"
           "                     train time; default off). Changes what the model trains on\n"
           "  --depth D          buffer sets in the pipeline ring (default 3)\n"
           "  --preset NAME      without DATASET_DIR: the preset to generate (default small;\n"
           "                     tiny answers in seconds)\n"
           "  --epochs N         epochs (default 5)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --fanouts LIST     neighbours per hop from the seeds outward, e.g. 10,5 (default;\n"
           "                     -1 = all); their number is the number of layers\n"
           "  --relation-fanouts SPEC  heterogeneous datasets: fanouts per (hop, edge type),\n"
           "                     hops separated by ';', e.g. \"cites=10,writes=5;cites=5\"\n"
           "                     (an edge type is its relation name, or src:relation:dst;\n"
           "                     one a hop does not name draws that hop's --fanouts value)\n"
           "  --layers L         layers (default: the number of fanouts; with --layers alone\n"
           "                     the fanouts are 10,5,5,...)\n"
           "  --mlp              the baseline without the graph (and no second baseline)\n"
           "  --no-baseline      do not train the MLP baseline after %s\n"
           "  --model NAME       sage (GraphSAGE, default) or gat (PyG's GATConv); rsage\n"
           "                     (relational GraphSAGE), rgcn (relational GCN, PyG's\n"
           "                     RGCNConv) or rgat (relational GAT, MLPerf's\n"
           "                     IGBH model) for heterogeneous datasets (node and edge types:\n"
           "                     docs/hetero.md; every mode, one rank)\n"
           "  --heads N          gat, rgat: attention heads (default 1); hidden layers are\n"
           "                     N x H wide\n"
           "  --attn-dropout P   gat, rgat: dropout on the attention weights in training\n"
           "                     (default 0)\n"
           "  --hidden H         hidden width (default 128; gat, rgat: per head)\n"
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
           "  --overwrite        start a new run in DIR, replacing the one it holds (without\n"
           "                     --resume or --overwrite a DIR holding a run is refused)\n"
           "  --no-full-test     skip the exact (layer-wise, all neighbours) test accuracy\n"
           "  -h, --help         this text\n",
           model.description, model.title);
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

static int on_progress(void *user, int64_t epoch, int64_t done, int64_t total, double loss) {
    train_progress *p = user;
    p->epoch = epoch + 1;
    if (cli_quiet()) return cli_interrupted(); /* a rank other than 0 of several GPUs */
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
    int resume, full_test, overwrite;
    const char *dataset_label;
    int writer; /* 1: writes the checkpoints (alone, or rank 0 of several GPUs) */
} run_options;

typedef struct {
    double test;      /* sampled test accuracy of the best model, NaN without labelled nodes */
    double test_full; /* exact test accuracy (layer-wise), NaN if not computed */
    double epoch_s;   /* mean training time of an epoch */
    char mode[32];    /* the mode it ran in */
} train_result;

/* What the per-epoch callback of a run needs: the display, the metrics, why it stopped. */
typedef struct {
    train_progress prog;
    cli_metrics *metrics;
    int on_device;
    int metrics_failed; /* a metrics record could not be written (message printed) */
    int interrupted;    /* Ctrl-C after an epoch (message printed) */
} epoch_report;

/* The next epoch's progress starts now. */
static void progress_start(train_progress *p) {
    p->start = cli_now();
    p->last_quarter = 0;
    p->last_step = 0;
}

static cJSON *run_record(const gd_train_options *o, const gd_trainer_info *info,
                         const gd_dataset_t *ds, const gd_model_info *mi) {
    cJSON *r = cli_metrics_record("run");
    cli_metrics_add_time(r);
    cJSON_AddStringToObject(r, "dataset", gd_dataset_name(ds));
    cJSON_AddStringToObject(r, "model", o->mlp ? "mlp" : mi->label);
    cJSON_AddStringToObject(r, "mode", info->mode);
    cJSON_AddStringToObject(r, "plan", info->plan);
    cJSON_AddNumberToObject(r, "layers", o->num_layers);
    cJSON_AddNumberToObject(r, "hidden", (double)o->hidden);
    cJSON *f = cJSON_AddArrayToObject(r, "fanouts");
    for (int h = 0; h < o->num_layers; h++)
        cJSON_AddItemToArray(f, cJSON_CreateNumber(o->mlp ? 0 : o->fanouts[h]));
    cJSON_AddNumberToObject(r, "batch", (double)o->batch_size);
    cJSON_AddNumberToObject(r, "lr", o->lr);
    cJSON_AddNumberToObject(r, "dropout", o->dropout);
    cJSON_AddNumberToObject(r, "weight_decay", o->weight_decay);
    cJSON_AddNumberToObject(r, "seed", (double)o->seed);
    cJSON_AddNumberToObject(r, "parameters", (double)info->num_params);
    if (info->on_device) {
        gd_device_info di;
        if (gd_device_info_get(o->device, &di) == GD_OK)
            cJSON_AddStringToObject(r, "device", di.name);
        cJSON_AddNumberToObject(r, "gpu_bytes", (double)info->gpu_bytes);
        cJSON_AddNumberToObject(r, "feature_cache_bytes", (double)info->feature_cache_bytes);
        cJSON_AddNumberToObject(r, "graph_cache_bytes", (double)info->graph_cache_bytes);
    }
    return r;
}

static cJSON *epoch_record(const gd_epoch_stats *es) {
    cJSON *o = cli_metrics_record("epoch");
    cJSON_AddNumberToObject(o, "epoch", (double)es->epoch + 1);
    cJSON_AddItemToObject(o, "loss", num_or_null(es->loss));
    cJSON_AddItemToObject(o, "train_acc", num_or_null(es->train_acc));
    cJSON_AddItemToObject(o, "valid_acc", num_or_null(es->valid_acc));
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

/* After every epoch (its checkpoint written): its line, its metrics record, Ctrl-C. */
static int on_epoch(void *user, const gd_epoch_stats *es) {
    epoch_report *r = user;
    char a[32];
    progress_end(&r->prog);
    printf("epoch %3lld  loss %.4f", (long long)es->epoch + 1, es->loss);
    print_acc("train", es->train_acc);
    print_acc("valid", es->valid_acc);
    printf("  %.2f s (sample %.2f, gather %.2f, train %.2f, wait %.2f)", es->seconds, es->sample_s,
           es->gather_s, es->train_s, es->wait_s);
    if (r->on_device) printf("  GPU %s", cli_bytes((double)es->gpu_mem_bytes, a, sizeof a));
    printf("  CPU %.1f core-s\n", es->cpu_core_s);
    fflush(stdout);
    if (r->metrics && cli_metrics_write(r->metrics, epoch_record(es))) {
        r->metrics_failed = 1;
        return -1;
    }
    if (cli_interrupted()) {
        if (!cli_quiet())
            fprintf(stderr, "graphdirect train: interrupted after epoch %lld\n",
                    (long long)es->epoch + 1);
        r->interrupted = 1;
        return -1;
    }
    progress_start(&r->prog);
    return 0;
}

/* The description of a run: the model, the mode and its plan, the sizes. */
static void print_run(const gd_train_options *o, const gd_trainer_info *info,
                      const gd_model_info *mi) {
    char a[32], b[32];
    printf("model: %s, %d layers, hidden %lld, ", o->mlp ? "MLP (graph removed)" : mi->description,
           o->num_layers, (long long)o->hidden);
    if (!o->mlp && o->heads > 1) printf("%d heads, ", o->heads);
    if (!o->mlp && o->attn_dropout > 0) printf("attention dropout %g, ", o->attn_dropout);
    printf("fanouts ");
    for (int h = 0; h < o->num_layers; h++)
        printf("%s%d", h ? "," : "", o->mlp ? 0 : o->fanouts[h]);
    printf(", %lld parameters; batch %lld, lr %g, dropout %g, weight decay %g\n",
           (long long)info->num_params, (long long)o->batch_size, o->lr, o->dropout,
           o->weight_decay);
    printf("mode: %s: %s\n", info->mode, info->plan);
    if (info->startup[0]) printf("start-up: %s\n", info->startup);
    printf("nodes: train %lld / valid %lld / test %lld; a minibatch has at most %lld input "
           "nodes (%s of features)",
           (long long)info->train_nodes, (long long)info->valid_nodes, (long long)info->test_nodes,
           (long long)info->max_input_nodes, cli_bytes((double)info->feature_bytes, a, sizeof a));
    if (info->on_device) printf("; GPU memory %s", cli_bytes((double)info->gpu_bytes, b, sizeof b));
    if (info->feature_cache_bytes > 0)
        printf(", feature cache %s (%lld rows)",
               cli_bytes((double)info->feature_cache_bytes, a, sizeof a),
               (long long)info->feature_cache_rows);
    printf("\n");
    fflush(stdout);
}

/* The test line and record of a finished run. Returns 0 or the exit code. */
static int report_test(const gd_train_options *o, const gd_fit_result *fr, const gd_model_info *mi,
                       cli_metrics *metrics, train_result *res) {
    printf("best valid epoch %lld: ", (long long)fr->best_epoch + 1);
    if (isnan(res->test))
        printf("test acc n/a (no labelled test nodes)\n");
    else {
        printf("test acc %.4f (%lld nodes, sampled neighbours)", res->test,
               (long long)fr->test_count);
        if (!isnan(res->test_full))
            printf(", %.4f exact (all neighbours, layer-wise, %.2f s)", res->test_full,
                   fr->exact_seconds);
        printf("; %.2f s per epoch on average\n", res->epoch_s);
    }
    fflush(stdout);
    if (!metrics) return 0;
    cJSON *r = cli_metrics_record("test");
    cJSON_AddStringToObject(r, "model", o->mlp ? "mlp" : mi->label);
    cJSON_AddNumberToObject(r, "best_epoch", (double)fr->best_epoch + 1);
    cJSON_AddItemToObject(r, "test_acc", num_or_null(res->test));
    cJSON_AddStringToObject(r, "method", "sampled");
    cJSON_AddItemToObject(r, "test_acc_full", num_or_null(res->test_full));
    return cli_metrics_write(metrics, r) ? CLI_EXIT_FAIL : 0;
}

/*
 * A failed step of training: its message and exit code. A rank whose communicator was aborted
 * by its own stop signal was interrupted, which is no failure of its own.
 */
static int train_failed(const char *what, gd_status st) {
    if (st == GD_ERR_COMM && cli_interrupted()) return cli_interrupted_exit();
    return cli_fail(what, st);
}

/*
 * The start-up's progress line: what the trainer's build is doing and about how long it and the
 * rest will take (gd_train_options.startup_progress), one line on stderr per long phase.
 */
static int startup_line(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)user, (void)done, (void)total;
    if (!cli_quiet()) fprintf(stderr, "  %s\n", stage);
    return 0;
}

/*
 * Train one model on ds through the public trainer, printing its description, every epoch and
 * the test accuracies. The MLP baseline keeps no checkpoint (it would replace the model's).
 * Returns 0 or the command's exit code (after printing why).
 */
static int train_model(const gd_dataset_t *ds, const gd_train_options *o, int64_t epochs,
                       const run_options *ro, cli_metrics *metrics, train_result *res) {
    epoch_report rep;
    gd_trainer_t *tr = NULL;
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    gd_model_info mi = GD_MODEL_INFO_INIT;
    gd_fit_options fo = GD_FIT_OPTIONS_INIT;
    gd_fit_result fr = GD_FIT_RESULT_INIT;
    char path[4096];
    int rc = 0;
    memset(&rep, 0, sizeof rep);
    rep.prog.tty = isatty(STDERR_FILENO);
    rep.prog.epochs = epochs;
    rep.prog.metrics = metrics;
    rep.metrics = metrics;
    gd_train_options to = *o;
    to.startup_progress = startup_line;
    gd_status st = gd_trainer_create(ds, &to, &tr);
    if (st != GD_OK) return train_failed("creating the trainer", st);
    if ((st = gd_trainer_get_info(tr, &info)) != GD_OK ||
        (st = gd_model_get_info(info.model, &mi)) != GD_OK) {
        rc = cli_fail("creating the trainer", st);
        goto done;
    }
    snprintf(res->mode, sizeof res->mode, "%s", info.mode);
    rep.on_device = info.on_device;
    print_run(o, &info, &mi);
    if (metrics && cli_metrics_write(metrics, run_record(o, &info, ds, &mi))) {
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    /* The baseline after the model is run with no checkpoint directory (cmd_train). */
    const char *dir = ro->checkpoint_dir;
    if (dir && ro->resume) {
        if ((st = gd_trainer_resume(tr, dir)) != GD_OK ||
            (st = gd_trainer_get_info(tr, &info)) != GD_OK) {
            rc = train_failed("resuming", st);
            goto done;
        }
        snprintf(path, sizeof path, "%s/checkpoint.gdc", dir);
        printf("resumed from %s after epoch %lld (Adam step %lld)\n", path,
               (long long)info.epochs_done, (long long)info.adam_step);
    }
    fo.epochs = epochs;
    fo.checkpoint_dir = ro->writer ? dir : NULL;
    fo.overwrite = ro->overwrite;
    /* The MLP's sampled inference (fanout 0) is already exact. (A kind without a layer-wise
     * form gets no exact test from the fit: test_exact NaN.) */
    fo.exact_test = ro->full_test && !o->mlp;
    fo.on_epoch = on_epoch;
    fo.on_epoch_user = &rep;
    fo.progress = on_progress;
    fo.progress_user = &rep.prog;
    progress_start(&rep.prog);
    st = gd_trainer_fit(tr, &fo, &fr);
    progress_end(&rep.prog);
    if (st != GD_OK) {
        if (rep.metrics_failed)
            rc = CLI_EXIT_FAIL;
        else if (rep.interrupted)
            rc = cli_interrupted_exit();
        else if (st == GD_ERR_INTERRUPTED || (st == GD_ERR_COMM && cli_interrupted())) {
            if (!cli_quiet())
                fprintf(stderr, "graphdirect train: interrupted in epoch %lld\n",
                        (long long)rep.prog.epoch);
            rc = cli_interrupted_exit();
        } else {
            rc = cli_fail("training", st);
        }
        goto done;
    }
    {
        /* --host-gather auto chose its way during the run: say which. */
        gd_trainer_info after = GD_TRAINER_INFO_INIT;
        const char *kept = NULL;
        if (gd_trainer_get_info(tr, &after) == GD_OK && (kept = strstr(after.plan, "; auto kept ")))
            if (!cli_quiet()) printf("host rows: %s\n", kept + 2);
    }
    res->test = fr.test_acc;
    res->test_full = fo.exact_test ? fr.test_exact : NAN;
    res->epoch_s = fr.mean_epoch_s;
    rc = report_test(o, &fr, &mi, metrics, res);
done:
    progress_end(&rep.prog);
    gd_trainer_destroy(tr);
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
    /* Another rank of the run may make it at the same moment. */
    if (mkdir(dir, 0755) != 0 && !(errno == EEXIST && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "graphdirect train: cannot create the checkpoint directory '%s': %s\n", dir,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* The command line of `train`. */
typedef struct {
    gd_train_options cfg;
    run_options ro;
    const char *preset, *dir;
    int64_t epochs;
    int layers, baseline, fanout_count, fanouts[GD_SAMPLER_MAX_LAYERS];
    int device_given;
    cli_gpus gpus;
} train_args;

/* The memory sizes among train's options: the GPU caches and the two memory budgets. */
static int size_option(train_args *a, int c, const char *arg) {
    int64_t v;
    switch (c) {
    case 'c':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error("train", "--gpu-cache '%s' is not a size (e.g. 4G)", arg);
        a->cfg.gpu_cache_bytes = v;
        break;
    case 'g':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error("train", "--graph-cache '%s' is not a size (e.g. 1G)", arg);
        a->cfg.graph_cache_bytes = v;
        break;
    case 'G':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error("train", "--gpu-mem-budget '%s' is not a size (e.g. 16G)", arg);
        a->cfg.gpu_mem_budget = v;
        break;
    case 'K':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error("train", "--host-mem-budget '%s' is not a size (e.g. 64G)",
                                   arg);
        a->cfg.host_mem_budget = v;
        break;
    default:
        return cli_usage_error("train", "unknown option");
    }
    return 0;
}

/* One option (getopt's c and its argument) into a: 0, or the exit code of a usage error. */
/* --placement and --locality: where the hot rows live, and the sampler's bias toward them. */
static int multi_gpu_option(train_args *a, int c, const char *arg) {
    int64_t v;
    if (c == 'Q') {
        if (strcmp(arg, "replicate") && strcmp(arg, "partition") && strcmp(arg, "auto"))
            return cli_usage_error("train", "--placement '%s' is none of replicate, partition, "
                                            "auto",
                                   arg);
        a->cfg.placement = arg;
        return 0;
    }
    if (strcmp(arg, "auto") == 0) {
        a->cfg.locality = -1;
        return 0;
    }
    if (cli_parse_i64(arg, &v) || v < 2 || v > GD_SAMPLER_MAX_BIAS)
        return cli_usage_error("train", "--locality '%s' is not auto or a factor from 2 to %d",
                               arg, GD_SAMPLER_MAX_BIAS);
    a->cfg.locality = (int)v;
    return 0;
}

static int train_option(train_args *a, int c, const char *arg) {
    int64_t v;
    double x;
    switch (c) {
    case 'm':
        if (gd_train_mode_check(arg) != GD_OK)
            return cli_usage_error("train", "%s", gd_last_error());
        a->cfg.mode = arg;
        break;
    case 'p':
        a->preset = arg;
        break;
    case 'e':
        if (cli_parse_i64(arg, &a->epochs) || a->epochs < 1 || a->epochs > 1000000)
            return cli_usage_error("train", "--epochs '%s' is not a positive count", arg);
        break;
    case 'b':
        if (cli_parse_i64(arg, &v) || v < 1 || v > (INT64_C(1) << 31))
            return cli_usage_error("train", "--batch '%s' is not a positive count", arg);
        a->cfg.batch_size = v;
        break;
    case 1000:
        a->cfg.relation_fanouts = arg; /* checked against the dataset's edge types at create */
        break;
    case 'f':
        if (parse_fanouts(arg, a->fanouts, &a->fanout_count))
            return cli_usage_error("train",
                                   "--fanouts '%s' is not 1 to %d comma-separated counts "
                                   "(-1 = all neighbours)",
                                   arg, GD_SAMPLER_MAX_LAYERS);
        break;
    case 'L':
        if (cli_parse_i64(arg, &v) || v < 1 || v > GD_SAMPLER_MAX_LAYERS)
            return cli_usage_error("train", "--layers '%s' is not in 1..%d", arg,
                                   GD_SAMPLER_MAX_LAYERS);
        a->layers = (int)v;
        break;
    case 'M':
        a->cfg.mlp = 1;
        break;
    case 'B':
        a->baseline = 0;
        break;
    case 'N':
        a->cfg.model = arg;
        break;
    case 'A':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 64)
            return cli_usage_error("train", "--heads '%s' is not in 1..64", arg);
        a->cfg.heads = (int)v;
        break;
    case 'H':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 65536)
            return cli_usage_error("train", "--hidden '%s' is not a positive width", arg);
        a->cfg.hidden = v;
        break;
    case 'd':
        if (cli_parse_double(arg, &x) || x < 0 || x >= 1)
            return cli_usage_error("train", "--dropout '%s' is not in [0, 1)", arg);
        a->cfg.dropout = x;
        break;
    case 'a':
        if (cli_parse_double(arg, &x) || x < 0 || x >= 1)
            return cli_usage_error("train", "--attn-dropout '%s' is not in [0, 1)", arg);
        a->cfg.attn_dropout = x;
        break;
    case 'l':
        if (cli_parse_double(arg, &x) || x <= 0)
            return cli_usage_error("train", "--lr '%s' is not positive", arg);
        a->cfg.lr = x;
        break;
    case 'w':
        if (cli_parse_double(arg, &x) || x < 0)
            return cli_usage_error("train", "--weight-decay '%s' is negative or not a number", arg);
        a->cfg.weight_decay = x;
        break;
    case 's':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error("train", "--seed '%s' is not a non-negative integer", arg);
        a->cfg.seed = (uint64_t)v;
        break;
    case 'j':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 4096)
            return cli_usage_error("train", "--threads '%s' is not positive", arg);
        a->cfg.threads = (int)v;
        break;
    case 'D':
        if (cli_parse_i64(arg, &v) || v < 0 || v > 1024)
            return cli_usage_error("train", "--device '%s' is not a GPU number", arg);
        a->cfg.device = (int)v;
        a->device_given = 1;
        break;
    case 'c':
    case 'g':
    case 'G':
    case 'K':
        return size_option(a, c, arg);
    case 'S':
        a->cfg.gather_sms = arg;
        break;
    case 1001:
        if (!cli_host_gather_ok(arg))
            return cli_usage_error("train",
                                   "--host-gather '%s' is none of zero-copy, cpu, split, "
                                   "split=F (F in [0, 1]), auto",
                                   arg);
        a->cfg.host_gather = arg;
        break;
    case 'Q':
    case 'Y':
        return multi_gpu_option(a, c, arg);
    case 'R':
        if (cli_parse_i64(arg, &v) || v < 2 || v > 8)
            return cli_usage_error("train", "--depth '%s' is not in 2..8", arg);
        a->cfg.depth = (int)v;
        break;
    case 'J':
        a->ro.metrics_path = arg;
        break;
    case 'C':
        a->ro.checkpoint_dir = arg;
        break;
    case 'r':
        a->ro.resume = 1;
        break;
    case 'O':
        a->ro.overwrite = 1;
        break;
    case 'F':
        a->ro.full_test = 0;
        break;
    default:
        return cli_usage_error("train", "unknown option");
    }
    return 0;
}

/* The command line into a: -1 to go on, or the command's exit code (help, a usage error). */
static int parse_train(int argc, char **argv, train_args *a) {
    static const struct option long_opts[] = {{"mode", required_argument, 0, 'm'},
                                              {"preset", required_argument, 0, 'p'},
                                              {"epochs", required_argument, 0, 'e'},
                                              {"batch", required_argument, 0, 'b'},
                                              {"fanouts", required_argument, 0, 'f'},
                                              {"layers", required_argument, 0, 'L'},
                                              {"relation-fanouts", required_argument, 0, 1000},
                                              {"mlp", no_argument, 0, 'M'},
                                              {"no-baseline", no_argument, 0, 'B'},
                                              {"hidden", required_argument, 0, 'H'},
                                              {"model", required_argument, 0, 'N'},
                                              {"heads", required_argument, 0, 'A'},
                                              {"attn-dropout", required_argument, 0, 'a'},
                                              {"dropout", required_argument, 0, 'd'},
                                              {"lr", required_argument, 0, 'l'},
                                              {"weight-decay", required_argument, 0, 'w'},
                                              {"seed", required_argument, 0, 's'},
                                              {"threads", required_argument, 0, 'j'},
                                              {"device", required_argument, 0, 'D'},
                                              {"gpus", required_argument, 0, 'P'},
                                              {"gpu-cache", required_argument, 0, 'c'},
                                              {"graph-cache", required_argument, 0, 'g'},
                                              {"gpu-mem-budget", required_argument, 0, 'G'},
                                              {"host-mem-budget", required_argument, 0, 'K'},
                                              {"gather-sms", required_argument, 0, 'S'},
                                              {"host-gather", required_argument, 0, 1001},
                                              {"placement", required_argument, 0, 'Q'},
                                              {"locality", required_argument, 0, 'Y'},
                                              {"depth", required_argument, 0, 'R'},
                                              {"metrics", required_argument, 0, 'J'},
                                              {"checkpoint", required_argument, 0, 'C'},
                                              {"resume", no_argument, 0, 'r'},
                                              {"overwrite", no_argument, 0, 'O'},
                                              {"no-full-test", no_argument, 0, 'F'},
                                              {"help", no_argument, 0, 'h'},
                                              {0, 0, 0, 0}};
    int c, rc;
    memset(a, 0, sizeof *a);
    a->cfg = (gd_train_options)GD_TRAIN_OPTIONS_INIT;
    a->cfg.mode = "auto";
    a->ro = (run_options){NULL, NULL, 0, 1, 0, NULL, 1};
    a->preset = "small";
    a->epochs = 5;
    a->baseline = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return 0;
        }
        rc = c == 'P' ? cli_gpus_option(&a->gpus, optarg, argv, optind)
                      : train_option(a, c, optarg);
        if (rc != 0) return rc;
    }
    a->dir = optind < argc ? argv[optind++] : NULL;
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (a->fanout_count && a->layers && a->layers != a->fanout_count)
        return cli_usage_error("train", "--layers %d but --fanouts gives %d hops", a->layers,
                               a->fanout_count);
    if (a->gpus.count > 1 && a->device_given)
        return cli_usage_error("train", "--device names one GPU, --gpus several: give one of "
                                        "them (e.g. --gpus 1,2)");
    if (a->ro.resume && !a->ro.checkpoint_dir)
        return cli_usage_error("train", "--resume needs --checkpoint DIR (where to resume from)");
    if (a->ro.overwrite && (a->ro.resume || !a->ro.checkpoint_dir))
        return cli_usage_error("train", "--overwrite needs --checkpoint DIR and no --resume (it "
                                        "starts a new run in DIR)");
    if (a->fanout_count) {
        a->cfg.num_layers = a->fanout_count;
        memcpy(a->cfg.fanouts, a->fanouts, sizeof(int) * (size_t)a->fanout_count);
    } else if (a->layers) {
        a->cfg.num_layers = a->layers;
        for (int h = 0; h < a->layers; h++) a->cfg.fanouts[h] = h == 0 ? 10 : 5;
    }
    if (a->ro.checkpoint_dir && ensure_dir(a->ro.checkpoint_dir)) return CLI_EXIT_FAIL;
    return -1;
}

/* The run of a parsed command line: the dataset, the model, then the baseline. */
static int train_all(const train_args *args_in) {
    const train_args args = *args_in;
    int rc;
    const gd_train_options cfg = args.cfg;
    const run_options ro = args.ro;
    const char *dir = args.dir;
    gd_dataset_t *ds = NULL;
    cli_metrics *metrics = NULL;
    train_result gnn = {NAN, NAN, 0, ""}, mlp = {NAN, NAN, 0, ""};
    gd_status st;
    cli_progress prog; /* also makes Ctrl-C stop training after the current minibatch */
    cli_progress_init(&prog);
    double t0 = cli_now();
    if (dir) {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        cli_guard_mapped(dir);
        st = gd_dataset_open(dir, &oo, &ds);
        if (st != GD_OK) return cli_fail("opening the dataset", st);
    } else {
        gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
        go.preset = args.preset;
        go.seed = cfg.seed;
        go.progress = cli_progress_cb;
        go.progress_user = &prog;
        st = gd_generate(&go, &ds);
        cli_progress_end(&prog);
        if (st != GD_OK) return cli_fail("generate", st);
    }
    char a[32], b[32], width[64];
    if (gd_dataset_num_node_types(ds) > 0)
        snprintf(width, sizeof width, "%d node types, %d edge types", gd_dataset_num_node_types(ds),
                 gd_dataset_num_edge_types(ds));
    else
        snprintf(width, sizeof width, "%lld-dim features", (long long)gd_dataset_feature_dim(ds));
    printf("dataset '%s'%s: %s nodes, %s edges, %s, %lld classes (%.2f s)\n",
           gd_dataset_name(ds), dir ? "" : " (generated in memory)",
           cli_count((double)gd_dataset_num_nodes(ds), a, sizeof a),
           cli_count((double)gd_dataset_num_edges(ds), b, sizeof b), width,
           (long long)gd_dataset_num_classes(ds), cli_now() - t0);
    rc = 0;
    if (ro.metrics_path && ro.writer && cli_metrics_open(ro.metrics_path, ro.resume, &metrics))
        rc = CLI_EXIT_FAIL;
    if (rc == 0) rc = train_model(ds, &cfg, args.epochs, &ro, metrics, &gnn);
    if (rc == 0 && args.baseline && !cfg.mlp) {
        gd_train_options mlp_cfg = cfg;
        mlp_cfg.mlp = 1;
        /* The baseline keeps no checkpoints: DIR holds the model's (an --mlp run keeps its own). */
        run_options mlp_ro = ro;
        mlp_ro.checkpoint_dir = NULL;
        mlp_ro.resume = 0;
        printf("\nbaseline: the same model and settings with the graph removed\n");
        rc = train_model(ds, &mlp_cfg, args.epochs, &mlp_ro, metrics, &mlp);
        gd_model_info mi = GD_MODEL_INFO_INIT;
        if (rc == 0 && !isnan(gnn.test) && !isnan(mlp.test) &&
            gd_model_get_info(cfg.model, &mi) == GD_OK) {
            const double g = isnan(gnn.test_full) ? gnn.test : gnn.test_full;
            printf("\ntest accuracy: %s %.4f vs MLP (graph removed) %.4f, the graph adds "
                   "%+.1f points (%.2f s vs %.2f s per epoch, mode %s)\n",
                   mi.title, g, mlp.test, 100.0 * (g - mlp.test), gnn.epoch_s, mlp.epoch_s,
                   gnn.mode);
        }
    }
    cli_metrics_close(metrics);
    gd_dataset_close(ds);
    return rc;
}

/*
 * `train`: alone, or as the launcher of one rank per GPU (which returns once they are done), or
 * as one of those ranks: it joins the others through a context made from its rank, the world
 * size and the communicator id, and trains its share of every minibatch in it.
 */
int cmd_train(int argc, char **argv) {
    train_args args;
    cli_rank me;
    gd_context_t *ctx = NULL;
    int rc = parse_train(argc, argv, &args);
    if (rc >= 0) return rc;
    if ((rc = cli_rank_start(argc, argv, &args.gpus, args.cfg.mode, &me)) >= 0) return rc;
    if (me.world_size > 1) {
        gd_status st;
        if (args.device_given)
            rc = cli_usage_error("train", "--device with %d ranks: each rank trains on its own "
                                          "GPU (GD_DEVICE, else its rank on the host)",
                                 me.world_size);
        else if ((st = cli_rank_context(&me, &ctx)) != GD_OK)
            rc = train_failed("joining the other ranks", st);
        args.cfg.context = ctx;
        args.cfg.device = me.device;
        args.ro.writer = me.rank == 0;
    }
    if (rc < 0) rc = train_all(&args);
    gd_context_destroy(ctx);
    return cli_rank_end(&me, rc);
}
