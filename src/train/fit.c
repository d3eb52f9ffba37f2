/*
 * The public trainer, gd_trainer_* (include/graphdirect.h): the internal trainer (internal.h:
 * one epoch, one sampled evaluation, parameters and checkpoints) plus the run policy that
 * `graphdirect train` used to hold, so that C and Python callers train graphdirect's own models
 * the way the command does. The policy of gd_trainer_fit: epochs from the epochs done up to the
 * asked count, the valid accuracy after each, the best valid model kept in host memory (the
 * first epoch counts even without a valid split), checkpoint.gdc every N epochs and best.gdc
 * whenever the valid accuracy improves, and at the end the best model restored and tested, by
 * sampled inference and exactly (layer-wise inference, infer.h). A checkpoint directory is
 * locked by the trainer that fits or resumes in it, and a new run refuses one that holds an
 * earlier run unless asked to overwrite it (checkpoint_run.c).
 *
 * The exact predictions of every node are kept after an exact evaluation until the parameters
 * change (an epoch, a load, a resume, the best model restored), so that asking for the three
 * splits costs one inference. The per-minibatch progress of the internal trainer is fixed at
 * its creation: it calls forward_progress, which hands the report to the callback of the fit in
 * progress, with the epoch.
 */
#include "feature/host_gather.h"
#include "io/dataset.h"
#include "train/infer.h"
#include "train/datapath.h"
#include "train/internal.h"
#include "train/plan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gd_trainer {
    gd__trainer *t;
    const gd_dataset_t *ds;
    int threads, mlp, device;
    int64_t num_params;
    /* The run: epochs done and the best valid model so far (best_valid -1: none). */
    int64_t epochs_done;
    double best_valid;
    int64_t best_epoch;
    float *best; /* num_params, host memory */
    int have_best;
    /* The exact predictions of every node (num_nodes), valid while pred_ok. */
    int32_t *pred;
    int pred_ok;
    /* The fit in progress: its progress callback, and the epoch it trains. */
    const gd_fit_options *fit;
    int64_t epoch;
    /* The checkpoint directory it holds (locked) and whether the run there is its own. */
    gd__run_dir run_dir;
};

static const char ckpt_name[] = "checkpoint.gdc", best_name[] = "best.gdc";

/* The internal trainer's progress, handed to the progress callback of the fit in progress. */
static int forward_progress(void *user, int64_t done, int64_t total, double loss) {
    const gd_trainer_t *t = user;
    const gd_fit_options *o = t->fit;
    if (!o || !o->progress) return 0;
    const int64_t every = o->report_every > 0 ? o->report_every : 20;
    if (done % every != 0 && done != total) return 0;
    return o->progress(o->progress_user, t->epoch, done, total, loss);
}

gd_status gd_train_mode_check(const char *name) {
    gd__train_mode mode;
    return name ? gd__train_mode_parse(name, &mode) : GD_OK;
}

gd_status gd_model_get_info(const char *kind, gd_model_info *info) {
    gd_status st = GD_OK;
    gd__model_kind k = GD__MODEL_DEFAULT;
    gd_model_info i;
    GD_REQUIRE(info, GD_ERR_INVALID_ARG, "gd_model_get_info: info is NULL");
    if (kind) GD_CHECK(gd__model_kind_parse(kind, &k));
    const gd__model_i *m = gd__model_kind_iface(k);
    memset(&i, 0, sizeof i);
    i.size = sizeof i;
    i.name = m->name;
    i.label = m->label;
    i.title = m->title;
    i.description = m->description;
    /* The relational kinds' exact inference is the heterogeneous trainer's (hetero_infer.c),
     * not a layer hook of the interface. */
    i.exact_inference = gd__model_i_exact(m) || gd__model_kind_typed(k);
    GD_CHECK(gd__info_out(info, &i, sizeof i, "gd_model_get_info: info", "GD_MODEL_INFO_INIT"));
fail:
    return st;
}

/* ----------------------------------------------------------------- create */

/* The internal trainer's config from the public options (checked by gd__trainer_create). */
static gd_status train_config(const gd_train_options *o, gd_trainer_t *t, gd__train_config *c) {
    gd_status st = GD_OK;
    *c = (gd__train_config)GD__TRAIN_CONFIG_INIT;
    c->mode = GD__TRAIN_AUTO;
    if (o->mode) GD_CHECK(gd__train_mode_parse(o->mode, &c->mode));
    if (o->model) GD_CHECK(gd__model_kind_parse(o->model, &c->model));
    GD_REQUIRE(o->num_layers >= 1 && o->num_layers <= GD_SAMPLER_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "trainer: %d layers; use 1 to %d", o->num_layers, GD_SAMPLER_MAX_LAYERS);
    GD__DATA_OPTIONS_COPY(c, o);
    memcpy(c->fanouts, o->fanouts, sizeof c->fanouts);
    c->mlp = o->mlp != 0;
    c->hidden_dim = o->hidden;
    GD_REQUIRE(o->heads >= 0 && o->heads <= 64, GD_ERR_INVALID_ARG,
               "trainer: %d attention heads; use 1 to 64 (0: 1)", o->heads);
    c->heads = o->heads;
    GD_REQUIRE(o->attn_dropout >= 0 && o->attn_dropout < 1, GD_ERR_INVALID_ARG,
               "trainer: attention dropout %g; use a probability in [0, 1)", o->attn_dropout);
    c->attn_dropout = o->attn_dropout;
    c->dropout = o->dropout;
    c->lr = o->lr;
    c->weight_decay = o->weight_decay;
    c->device = o->device;
    c->context = o->context;
    c->host_mem_budget = o->host_mem_budget;
    c->placement = o->placement;
    c->locality = o->locality;
    c->relation_fanouts = o->relation_fanouts;
    c->startup_progress = o->startup_progress;
    c->startup_progress_user = o->startup_progress_user;
    {
        gd__host_gather h;
        GD_CHECK(gd__host_gather_parse(o->host_gather, &h, &c->host_split));
        c->host_gather = (int)h;
    }
    /* Every minibatch reaches forward_progress, which reports at the fit's own cadence. */
    c->progress = forward_progress;
    c->progress_user = t;
    c->report_every = 1;
fail:
    return st;
}

gd_status gd_trainer_plan(const gd_dataset_t *ds, const gd_train_options *options, char *text,
                          size_t n) {
    gd_status st = GD_OK;
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    gd__train_config c;
    gd__plan plan;
    GD_REQUIRE(ds && text && n > 0, GD_ERR_INVALID_ARG, "gd_trainer_plan: NULL argument");
    text[0] = '\0';
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_trainer_plan: options",
                                "GD_TRAIN_OPTIONS_INIT"));
    GD_CHECK(train_config(&o, NULL, &c));
    GD_CHECK(gd__trainer_plan(ds, &c, &plan));
    gd__plan_table(&plan, text, n);
fail:
    return st;
}

static int64_t view_int(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

/*
 * A training split whose nodes are all unlabelled (-1) would train nothing and report success.
 * Without train_idx or labels the internal trainer's own check names what is missing.
 */
static gd_status check_labelled_train(const gd_dataset_t *ds) {
    gd_array_view tv, lv;
    if (gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &tv) != GD_OK ||
        gd_dataset_array(ds, GD_ARRAY_LABELS, &lv) != GD_OK || tv.shape[0] == 0) {
        gd_clear_error();
        return GD_OK;
    }
    /* The dataset's checks keep split ids in [0, num_nodes). */
    for (int64_t i = 0; i < tv.shape[0]; i++)
        if (view_int(&lv, view_int(&tv, i)) >= 0) return GD_OK;
    return gd__error(GD_ERR_INVALID_ARG,
                     "trainer: dataset '%s' has no labelled training node: the labels of all "
                     "%lld nodes of train_idx are -1 (unlabelled); label them, or make "
                     "train_idx the labelled nodes",
                     gd_dataset_name(ds), (long long)tv.shape[0]);
}

gd_status gd_trainer_create(const gd_dataset_t *ds, const gd_train_options *options,
                            gd_trainer_t **out) {
    gd_status st = GD_OK;
    gd_trainer_t *t = NULL;
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    gd__train_config c;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_trainer_create: out is NULL");
    *out = NULL;
    GD_REQUIRE(ds, GD_ERR_INVALID_ARG, "gd_trainer_create: dataset is NULL");
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_trainer_create: options",
                                "GD_TRAIN_OPTIONS_INIT"));
    GD_CHECK(check_labelled_train(ds));
    GD_ALLOC(t, sizeof *t, "the trainer");
    memset(t, 0, sizeof *t);
    t->ds = ds;
    t->threads = o.threads;
    t->mlp = o.mlp != 0;
    t->device = o.context ? gd_context_device(o.context) : o.device;
    t->best_valid = -1;
    t->best_epoch = -1;
    gd__run_dir_init(&t->run_dir);
    GD_CHECK(train_config(&o, t, &c));
    GD_CHECK(gd__trainer_create(ds, &c, &t->t));
    t->num_params = gd__model_num_params(gd__trainer_model(t->t));
    GD_ALLOC(t->best, (size_t)t->num_params * sizeof(float), "a copy of the best model");
    *out = t;
    return GD_OK;
fail:
    gd_trainer_destroy(t);
    return st;
}

void gd_trainer_destroy(gd_trainer_t *t) {
    if (!t) return;
    gd__run_dir_release(&t->run_dir);
    gd__trainer_destroy(t->t);
    gd_free(t->best);
    gd_free(t->pred);
    gd_free(t);
}

gd_status gd_trainer_get_info(const gd_trainer_t *t, gd_trainer_info *info) {
    gd_status st = GD_OK;
    gd_trainer_info i;
    gd__trainer_info ti;
    GD_REQUIRE(t && info, GD_ERR_INVALID_ARG, "gd_trainer_get_info: NULL argument");
    gd__trainer_get_info(t->t, &ti);
    gd__model *m = gd__trainer_model(t->t);
    memset(&i, 0, sizeof i);
    i.size = sizeof i;
    i.mode = gd__train_mode_name(ti.mode);
    snprintf(i.plan, sizeof i.plan, "%s", ti.plan);
    snprintf(i.startup, sizeof i.startup, "%s", ti.startup);
    i.model = gd__model_iface(m)->name;
    i.mlp = t->mlp;
    i.on_device = ti.mode != GD__TRAIN_CPU;
    i.device = i.on_device ? t->device : 0;
    i.num_params = ti.num_params;
    i.max_input_nodes = ti.max_input_nodes;
    i.max_edges = ti.max_edges;
    i.feature_bytes = ti.feature_bytes;
    i.train_nodes = ti.train_nodes;
    i.valid_nodes = ti.valid_nodes;
    i.test_nodes = ti.test_nodes;
    i.gpu_bytes = ti.gpu_bytes;
    i.feature_cache_rows = ti.feature_cache_rows;
    i.feature_cache_bytes = ti.feature_cache_bytes;
    i.graph_cache_bytes = ti.graph_cache_bytes;
    i.epochs_done = t->epochs_done;
    i.adam_step = gd__model_params(m)->step;
    i.best_valid = t->best_epoch >= 0 ? t->best_valid : NAN;
    i.best_epoch = t->best_epoch;
    GD_CHECK(gd__info_out(info, &i, sizeof i, "gd_trainer_get_info: info", "GD_TRAINER_INFO_INIT"));
fail:
    return st;
}

/* ------------------------------------------------------------- evaluation */

/* The parameters changed: the kept exact predictions no longer hold. */
static void params_changed(gd_trainer_t *t) {
    t->pred_ok = 0;
}

/* The exact predictions of every node, by layer-wise inference, unless they are kept. */
static gd_status exact_predictions(gd_trainer_t *t) {
    gd_status st = GD_OK;
    if (t->pred_ok) return GD_OK;
    if (!t->pred)
        GD_ALLOC(t->pred, (size_t)gd_dataset_num_nodes(t->ds) * sizeof(int32_t),
                 "the exact predictions of every node");
    gd__infer_options io = GD__INFER_OPTIONS_INIT;
    io.threads = t->threads;
    /* zero-copy registered the features for the GPU: CUDA refuses a second registration. */
    io.features = gd__trainer_registered_features(t->t);
    GD_CHECK(gd__model_infer(gd__trainer_model(t->t), t->ds, &io, t->pred, NULL, NULL));
    t->pred_ok = 1;
fail:
    return st;
}

gd_status gd_trainer_evaluate(gd_trainer_t *t, gd_array_id split, int exact, double *accuracy,
                              int64_t *count) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && accuracy, GD_ERR_INVALID_ARG, "gd_trainer_evaluate: NULL trainer or accuracy");
    GD_REQUIRE(split >= GD_ARRAY_TRAIN_IDX && split <= GD_ARRAY_TEST_IDX, GD_ERR_INVALID_ARG,
               "gd_trainer_evaluate: array %d is not a split; use GD_ARRAY_TRAIN_IDX, "
               "GD_ARRAY_VALID_IDX or GD_ARRAY_TEST_IDX",
               (int)split);
    /* The MLP samples no neighbour (fanout 0): its sampled inference is already exact. */
    if (!exact || t->mlp) return gd__trainer_evaluate(t->t, split, accuracy, count);
    if (gd__trainer_hetero(t->t)) return gd__htrain_exact(gd__trainer_hetero(t->t), split, accuracy, count);
    GD_CHECK(exact_predictions(t));
    GD_CHECK(gd__infer_accuracy(t->ds, split, t->pred, accuracy, count));
fail:
    return st;
}

/* ------------------------------------------------------------ files */

/* The checkpoint meta of the trainer now: its settings, the epochs done, the best so far. */
static void run_meta(const gd_trainer_t *t, int64_t epochs_done, double valid,
                     gd__checkpoint_meta *m) {
    gd__trainer_checkpoint_meta(t->t, m);
    m->epochs_done = epochs_done;
    m->best_valid = isnan(valid) && t->best_epoch < 0 ? NAN : t->best_valid;
    m->best_epoch = t->best_epoch;
}

gd_status gd_trainer_save(gd_trainer_t *t, const char *path) {
    gd_status st = GD_OK;
    gd__checkpoint_meta m;
    GD_REQUIRE(t && path, GD_ERR_INVALID_ARG, "gd_trainer_save: NULL trainer or path");
    run_meta(t, t->epochs_done, t->best_epoch >= 0 ? t->best_valid : NAN, &m);
    GD_CHECK(gd__trainer_save(t->t, path, &m, NULL, 0));
fail:
    return st;
}

/* The file's model must be this trainer's: kind, layers, widths and classes. */
static gd_status check_shape(const gd_trainer_t *t, const char *path,
                             const gd__checkpoint_meta *f) {
    gd_status st = GD_OK;
    gd__checkpoint_meta m;
    gd__trainer_checkpoint_meta(t->t, &m);
    GD_REQUIRE(strcmp(f->model, m.model) == 0 && f->num_layers == m.num_layers &&
                   f->in_dim == m.in_dim && f->hidden_dim == m.hidden_dim &&
                   f->num_classes == m.num_classes,
               GD_ERR_INVALID_ARG,
               "'%s' holds a %s model of %d layers (%lld features, hidden %lld, %lld classes), "
               "this trainer's is a %s model of %d layers (%lld, %lld, %lld): create the trainer "
               "with the file's settings (gd_checkpoint_read_info tells them)",
               path, f->model, f->num_layers, (long long)f->in_dim, (long long)f->hidden_dim,
               (long long)f->num_classes, m.model, m.num_layers, (long long)m.in_dim,
               (long long)m.hidden_dim, (long long)m.num_classes);
    GD_REQUIRE(f->heads == m.heads, GD_ERR_INVALID_ARG,
               "'%s' holds a %s model of %d attention heads, this trainer's has %d: create the "
               "trainer with the file's heads (gd_checkpoint_read_info tells them)",
               path, f->model, f->heads, m.heads);
fail:
    return st;
}

gd_status gd_trainer_load(gd_trainer_t *t, const char *path) {
    gd_status st = GD_OK;
    float *params = NULL;
    gd__checkpoint_meta f;
    GD_REQUIRE(t && path, GD_ERR_INVALID_ARG, "gd_trainer_load: NULL trainer or path");
    GD_CHECK(gd__checkpoint_peek(path, &f, NULL, NULL));
    GD_CHECK(check_shape(t, path, &f));
    GD_ALLOC(params, (size_t)t->num_params * sizeof(float), "the loaded parameters");
    gd__model *m = gd__trainer_model(t->t);
    GD_CHECK(gd__checkpoint_load(path, gd__model_params(m), NULL, params, NULL, NULL));
    params_changed(t);
    GD_CHECK(gd__trainer_params_set(t->t, params, NULL, 0));
fail:
    gd_free(params);
    return st;
}

gd_status gd_checkpoint_read_info(const char *path, gd_checkpoint_info *info) {
    gd_status st = GD_OK;
    gd__checkpoint_meta m;
    gd_checkpoint_info i;
    int has_state = 0;
    GD_REQUIRE(path && info, GD_ERR_INVALID_ARG, "gd_checkpoint_read_info: NULL argument");
    GD_CHECK(gd__checkpoint_peek(path, &m, NULL, &has_state));
    memset(&i, 0, sizeof i);
    i.size = sizeof i;
    snprintf(i.model, sizeof i.model, "%s", m.model);
    i.num_layers = m.num_layers;
    i.in_dim = m.in_dim;
    i.hidden = m.hidden_dim;
    i.heads = m.heads;
    i.num_classes = m.num_classes;
    memcpy(i.fanouts, m.fanouts, sizeof i.fanouts);
    i.seed = m.seed;
    i.epochs_done = m.epochs_done;
    i.adam_step = m.adam_step;
    i.best_valid = m.best_valid;
    i.best_epoch = m.best_epoch;
    i.has_state = has_state;
    snprintf(i.dataset, sizeof i.dataset, "%s", m.dataset);
    snprintf(i.config, sizeof i.config, "%s", m.config);
    GD_CHECK(gd__info_out(info, &i, sizeof i, "gd_checkpoint_read_info: info",
                          "GD_CHECKPOINT_INFO_INIT"));
fail:
    return st;
}

/* dir/name into *out (gd_malloc'd). */
static gd_status join(const char *dir, const char *name, char **out) {
    *out = gd__path_join(dir, name);
    return *out
               ? GD_OK
               : gd__error(GD_ERR_NO_MEMORY, "out of memory for the path of %s in '%s'", name, dir);
}

gd_status gd_trainer_resume(gd_trainer_t *t, const char *dir) {
    gd_status st = GD_OK;
    char *ck = NULL, *bp = NULL;
    gd__checkpoint_meta saved, bm;
    GD_REQUIRE(t && dir, GD_ERR_INVALID_ARG, "gd_trainer_resume: NULL trainer or directory");
    /* Rank 0 holds the directory; the other ranks of a run only read its checkpoint. */
    if (gd__trainer_rank(t->t) == 0) GD_CHECK(gd__run_dir_lock(&t->run_dir, dir));
    GD_CHECK(join(dir, ckpt_name, &ck));
    GD_CHECK(join(dir, best_name, &bp));
    params_changed(t);
    GD_CHECK(gd__trainer_resume(t->t, ck, &saved));
    t->epochs_done = saved.epochs_done;
    t->best_epoch = saved.best_epoch;
    t->best_valid = isnan(saved.best_valid) ? -1 : saved.best_valid;
    t->have_best = 0;
    /*
     * The best model so far, when the run had one and its file is there. With checkpoints every
     * few epochs best.gdc may hold a later epoch than the checkpoint: it is then left out, and
     * the epochs that follow find it again (they draw what the first run drew).
     */
    if (t->best_epoch >= 0 && access(bp, R_OK) == 0) {
        GD_CHECK(gd__checkpoint_load(bp, gd__model_params(gd__trainer_model(t->t)), &bm, t->best,
                                     NULL, NULL));
        t->have_best = bm.best_epoch == t->best_epoch;
    }
    /* The run in dir is now this trainer's: its next fit goes on with it. */
    t->run_dir.owns_run = gd__trainer_rank(t->t) == 0;
fail:
    gd_free(ck);
    gd_free(bp);
    return st;
}

/* ------------------------------------------------------------------- fit */

static gd_status check_fit(const gd_fit_options *o) {
    gd_status st = GD_OK;
    GD_REQUIRE(o->epochs >= 0 && o->epochs < GD__TRAIN_EVAL_EPOCH, GD_ERR_INVALID_ARG,
               "gd_trainer_fit: %lld epochs; use a count >= 0", (long long)o->epochs);
    GD_REQUIRE(o->checkpoint_every >= 1, GD_ERR_INVALID_ARG,
               "gd_trainer_fit: a checkpoint every %d epochs; use 1 or more", o->checkpoint_every);
    GD_REQUIRE(o->max_batches >= 0 && o->report_every >= 0, GD_ERR_INVALID_ARG,
               "gd_trainer_fit: max_batches %lld or report_every %lld is negative; use 0 (all, "
               "the default) or a count",
               (long long)o->max_batches, (long long)o->report_every);
    GD_REQUIRE(!o->resume || o->checkpoint_dir, GD_ERR_INVALID_ARG,
               "gd_trainer_fit: resume needs checkpoint_dir (where to resume from)");
    GD_REQUIRE(!o->resume || !o->overwrite, GD_ERR_INVALID_ARG,
               "gd_trainer_fit: resume and overwrite both asked; resume goes on with the run in "
               "checkpoint_dir, overwrite starts a new one there: choose one");
fail:
    return st;
}

/* Make dir (one level) unless it exists. */
static gd_status ensure_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return GD_OK;
        return gd__error(GD_ERR_INVALID_ARG,
                         "checkpoint directory '%s' exists and is not a directory: give a "
                         "directory (it is created if absent)",
                         dir);
    }
    if (mkdir(dir, 0755) != 0)
        return gd__error(GD_ERR_IO,
                         "cannot create the checkpoint directory '%s': %s; create it, or give "
                         "one inside an existing, writable directory",
                         dir, strerror(errno));
    return GD_OK;
}

/* The public stats of epoch es, evaluated at valid. */
static void epoch_stats(const gd_trainer_t *t, const gd__train_epoch_stats *es, double valid,
                        int improved, gd_epoch_stats *s) {
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->epoch = es->epoch;
    s->batches = es->batches;
    s->loss = es->loss;
    s->train_acc = es->train_acc;
    s->valid_acc = valid;
    s->seconds = es->seconds;
    s->sample_s = es->sample_s;
    s->gather_s = es->gather_s;
    s->train_s = es->train_s;
    s->wait_s = es->wait_s;
    s->allreduce_s = es->allreduce_s;
    s->cpu_core_s = es->cpu_core_s;
    s->gpu_mem_bytes = es->gpu_mem_bytes;
    s->disk_rows_read = es->disk_rows_read;
    s->disk_bytes_read = es->disk_bytes_read;
    s->host_rows_copied = es->host_rows_copied;
    s->host_bytes_copied = es->host_bytes_copied;
    s->improved = improved;
    s->best_valid = t->best_epoch >= 0 ? t->best_valid : NAN;
    s->best_epoch = t->best_epoch;
}

/*
 * Epoch e of a fit: train, the valid accuracy, the best model, the checkpoints (paths NULL:
 * none); the stats into *s.
 */
static gd_status fit_epoch(gd_trainer_t *t, const gd_fit_options *o, int64_t e, const char *ck,
                           const char *bp, gd_epoch_stats *s) {
    gd_status st = GD_OK;
    gd__train_epoch_stats es;
    double valid = NAN;
    int improved = 0;
    t->epoch = e;
    params_changed(t);
    /* The dataset is mapped: a file changed in place under it is caught here, with its name,
     * before the epoch reads it and before a model trained on it is counted or saved. */
    GD_CHECK(gd__dataset_check_unchanged(t->ds));
    GD_CHECK(gd__trainer_epoch(t->t, e, &es));
    GD_CHECK(gd__dataset_check_unchanged(t->ds));
    const int k = gd__trainer_locality_adapt(t->t, es.gather_s, es.train_s, es.seconds);
    if (k > 0) {
        GD_INFO("locality-aware sampling: epoch %lld took %.2f s (gather %.2f s, train %.2f s): "
                "factor %d next",
                (long long)e + 1, es.seconds, es.gather_s, es.train_s, k);
    }
    t->epochs_done = e + 1;
    if (o->validate) {
        GD_CHECK(gd__trainer_evaluate(t->t, GD_ARRAY_VALID_IDX, &valid, NULL));
        /* The first epoch counts even without a valid split (its score is 0). */
        const double score = isnan(valid) ? 0 : valid;
        improved = score > t->best_valid;
        if (improved) {
            t->best_valid = score;
            t->best_epoch = e;
            GD_CHECK(gd__trainer_params_get(t->t, t->best, NULL));
            t->have_best = 1;
        }
    }
    if (ck) {
        gd__checkpoint_meta m;
        run_meta(t, e + 1, valid, &m);
        if (improved) GD_CHECK(gd__trainer_save(t->t, bp, &m, t->best, 0));
        if ((e + 1) % o->checkpoint_every == 0 || e + 1 == o->epochs)
            GD_CHECK(gd__trainer_save(t->t, ck, &m, NULL, 1));
    }
    epoch_stats(t, &es, valid, improved, s);
fail:
    return st;
}

/* The end of a fit: the best model back, and the test accuracies asked for. */
static gd_status fit_end(gd_trainer_t *t, const gd_fit_options *o, gd_fit_result *r) {
    gd_status st = GD_OK;
    /* Without validation this run kept no best model: an earlier run's is not brought back. */
    if (o->keep_best && o->validate && t->have_best) {
        params_changed(t);
        GD_CHECK(gd__trainer_params_set(t->t, t->best, NULL, 0));
    }
    if (o->test || (o->exact_test && t->mlp))
        GD_CHECK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 0, &r->test_acc, &r->test_count));
    /* A kind without a layer-wise form has no exact test: test_exact stays NaN. */
    gd__htrain *h = gd__trainer_hetero(t->t);
    const int exact = h ? gd__htrain_has_exact(h)
                        : gd__model_i_exact(gd__model_iface(gd__trainer_model(t->t)));
    if (o->exact_test && (t->mlp || exact)) {
        const double t0 = gd__now();
        if (t->mlp)
            r->test_exact = r->test_acc;
        else
            GD_CHECK(gd_trainer_evaluate(t, GD_ARRAY_TEST_IDX, 1, &r->test_exact, NULL));
        r->exact_seconds = gd__now() - t0;
    }
fail:
    return st;
}

gd_status gd_trainer_fit(gd_trainer_t *t, const gd_fit_options *options, gd_fit_result *result) {
    gd_status st = GD_OK;
    gd_fit_options o = GD_FIT_OPTIONS_INIT;
    gd_fit_result r = GD_FIT_RESULT_INIT;
    char *ck = NULL, *bp = NULL;
    double total = 0;
    int64_t ran = 0;
    GD_REQUIRE(t, GD_ERR_INVALID_ARG, "gd_trainer_fit: trainer is NULL");
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_trainer_fit: options",
                                "GD_FIT_OPTIONS_INIT"));
    r.best_valid = r.test_acc = r.test_exact = NAN;
    /* The result's size is checked now, so that the copy at the end cannot fail. */
    if (result)
        GD_CHECK(
            gd__info_out(result, &r, sizeof r, "gd_trainer_fit: result", "GD_FIT_RESULT_INIT"));
    GD_CHECK(check_fit(&o));
    /* With several ranks rank 0 writes the checkpoints; every rank resumes from them. */
    if (o.checkpoint_dir && gd__trainer_rank(t->t) == 0) {
        GD_CHECK(ensure_dir(o.checkpoint_dir));
        GD_CHECK(join(o.checkpoint_dir, ckpt_name, &ck));
        GD_CHECK(join(o.checkpoint_dir, best_name, &bp));
        /* No other run may write here while this one does; resume takes the lock too. */
        GD_CHECK(gd__run_dir_lock(&t->run_dir, o.checkpoint_dir));
    }
    /* Before the resume: max_batches is one of the settings a checkpoint must match. */
    gd__trainer_set_max_batches(t->t, o.max_batches);
    if (o.resume) GD_CHECK(gd_trainer_resume(t, o.checkpoint_dir));
    if (ck) GD_CHECK(gd__run_dir_claim(&t->run_dir, o.checkpoint_dir, ck, bp, o.overwrite));
    r.start_epoch = t->epochs_done;
    t->fit = &o;
    for (int64_t e = t->epochs_done; e < o.epochs; e++) {
        gd_epoch_stats s;
        GD_CHECK(fit_epoch(t, &o, e, ck, bp, &s));
        total += s.seconds;
        ran++;
        const int verdict = o.on_epoch ? o.on_epoch(o.on_epoch_user, &s) : 0;
        GD_REQUIRE(verdict >= 0, GD_ERR_INTERRUPTED,
                   "training stopped by the on_epoch callback after epoch %lld", (long long)e + 1);
        if (verdict > 0) {
            r.stopped = e + 1 < o.epochs;
            break;
        }
    }
    t->fit = NULL;
    GD_CHECK(fit_end(t, &o, &r));
fail:
    if (t) {
        t->fit = NULL;
        r.epochs_done = t->epochs_done;
        r.best_epoch = t->best_epoch;
        if (t->best_epoch >= 0) r.best_valid = t->best_valid;
    }
    r.mean_epoch_s = ran ? total / (double)ran : 0;
    /* What was done, also after a failure (a bad size was refused above, with this message). */
    if (result)
        (void)gd__info_out(result, &r, sizeof r, "gd_trainer_fit: result", "GD_FIT_RESULT_INIT");
    gd_free(ck);
    gd_free(bp);
    return st;
}
