/*
 * The run description a checkpoint carries (gd__checkpoint_meta): its defaults, and the check
 * that a run may resume from a checkpoint, i.e. that it trains the same model on the same data
 * with the same sampling and seed. A mismatch names the first field that differs, both values,
 * and what to do; for the free-form config text it shows the item where the two first differ.
 * The file format itself, which stores this description, is read and written in checkpoint.c.
 */
#include "train/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gd__checkpoint_meta_init(gd__checkpoint_meta *meta) {
    if (!meta) return;
    memset(meta, 0, sizeof *meta);
    snprintf(meta->model, sizeof meta->model, "%s", gd__model_kind_name(GD__MODEL_DEFAULT));
    meta->best_valid = NAN;
    meta->best_epoch = -1;
    meta->heads = 1;
}

static int is_sep(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == ',' || c == ';';
}

/*
 * The item of s (between separators) to show where s and another text first differ, at byte k,
 * as "%.*s" arguments. Inside an item: that item. At a separator or the end while the other
 * text goes on inside an item: the item that ends here ("lr=0.003" against "lr=0.0031"). Both
 * at a boundary: the items that follow ("(nothing)" against "mlp").
 */
static const char *item_at(const char *s, size_t k, int other_inside, int *len) {
    const size_t n = strlen(s);
    if (k > n) k = n;
    const int boundary = k == n || is_sep(s[k]);
    if (boundary && other_inside && k > 0 && !is_sep(s[k - 1]))
        k--;
    else if (boundary)
        while (k < n && is_sep(s[k])) k++;
    if (k == n) {
        *len = 9;
        return "(nothing)";
    }
    size_t a = k;
    while (a > 0 && !is_sep(s[a - 1])) a--;
    size_t b = k;
    while (b < n && !is_sep(s[b])) b++;
    if (b - a > 120) b = a + 120;
    *len = (int)(b - a);
    return s + a;
}

static void fanout_text(char *buf, size_t n, const gd__checkpoint_meta *m) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->num_layers && i < GD_SAMPLER_MAX_LAYERS && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", i ? "," : "", m->fanouts[i]);
}

#define RESUME_ADVICE "; run with the saved run's settings, or start without --resume"

gd_status gd__checkpoint_check_resume(const char *path, const gd__checkpoint_meta *saved,
                                      const gd__checkpoint_meta *run) {
    if (!path || !saved || !run)
        return gd__error(GD_ERR_INVALID_ARG, "gd__checkpoint_check_resume: NULL argument");
    if (!memchr(saved->dataset, '\0', sizeof saved->dataset) ||
        !memchr(run->dataset, '\0', sizeof run->dataset) ||
        !memchr(saved->config, '\0', sizeof saved->config) ||
        !memchr(run->config, '\0', sizeof run->config) ||
        !memchr(saved->model, '\0', sizeof saved->model) ||
        !memchr(run->model, '\0', sizeof run->model))
        return gd__error(GD_ERR_INVALID_ARG,
                         "gd__checkpoint_check_resume: a model, dataset or config "
                         "text is not terminated within its buffer");
    if (strncmp(saved->model, run->model, sizeof saved->model) != 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "cannot resume from checkpoint '%s': it holds a '%.31s' model, this run "
                         "trains a '%.31s' model" RESUME_ADVICE,
                         path, saved->model, run->model);
    const struct {
        const char *name;
        long long a, b;
    } ints[] = {
        {"num_layers", saved->num_layers, run->num_layers},
        {"in_dim (the feature width)", saved->in_dim, run->in_dim},
        {"hidden_dim", saved->hidden_dim, run->hidden_dim},
        {"heads", saved->heads, run->heads},
        {"num_classes", saved->num_classes, run->num_classes},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].a != ints[i].b)
            return gd__error(GD_ERR_INVALID_ARG,
                             "cannot resume from checkpoint '%s': it was saved with %s %lld, this "
                             "run has %lld" RESUME_ADVICE,
                             path, ints[i].name, ints[i].a, ints[i].b);
    char fa[128], fb[128];
    fanout_text(fa, sizeof fa, saved);
    fanout_text(fb, sizeof fb, run);
    if (strcmp(fa, fb) != 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "cannot resume from checkpoint '%s': it was saved with fanouts %s, this "
                         "run has %s" RESUME_ADVICE,
                         path, fa, fb);
    if (saved->seed != run->seed)
        return gd__error(
            GD_ERR_INVALID_ARG,
            "cannot resume from checkpoint '%s': it was saved with seed %llu, this run "
            "has seed %llu" RESUME_ADVICE,
            path, (unsigned long long)saved->seed, (unsigned long long)run->seed);
    if (strncmp(saved->dataset, run->dataset, sizeof saved->dataset) != 0)
        return gd__error(GD_ERR_INVALID_ARG,
                         "cannot resume from checkpoint '%s': it was saved for dataset '%.255s', "
                         "this run uses '%.255s'" RESUME_ADVICE,
                         path, saved->dataset, run->dataset);
    if (strncmp(saved->config, run->config, sizeof saved->config) != 0) {
        size_t k = 0;
        while (k < sizeof saved->config && saved->config[k] == run->config[k]) k++;
        const int a_inside = saved->config[k] != '\0' && !is_sep(saved->config[k]);
        const int b_inside = run->config[k] != '\0' && !is_sep(run->config[k]);
        int la, lb;
        const char *a = item_at(saved->config, k, b_inside, &la);
        const char *b = item_at(run->config, k, a_inside, &lb);
        return gd__error(GD_ERR_INVALID_ARG,
                         "cannot resume from checkpoint '%s': its config differs from this run's "
                         "at '%.*s' (saved) vs '%.*s' (this run)" RESUME_ADVICE,
                         path, la, a, lb, b);
    }
    return GD_OK;
}
