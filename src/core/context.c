/*
 * The context (core/context.h): a device, the host memory registered for it, and room for a
 * communicator. The registry replaces what was a process-wide static table of the trainer.
 */
#include "core/context.h"

#include <pthread.h>
#include <string.h>

struct gd_context {
    int device;
    int refs; /* the creator's (until gd_context_destroy) + one per object using it */
    int is_default;
    pthread_mutex_t mu;
    struct {
        const void *data;
        int refs;
        gd_host_tensor_t *tensor;
    } pins[GD__CONTEXT_PIN_SLOTS];
    /* Data-parallel training: this process's rank among world (1 = one process). */
    int rank, world;
};

/* The default contexts, one per device, made on first use (like CUDA's primary contexts). */
#define DEFAULT_DEVICES 64
static gd_context_t *defaults[DEFAULT_DEVICES];
static pthread_mutex_t defaults_mu = PTHREAD_MUTEX_INITIALIZER;

static gd_status context_new(int device, gd_context_t **out) {
    gd_status st = GD_OK;
    gd_context_t *c = NULL;
    GD_ALLOC(c, sizeof *c, "a context");
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        gd_free(c);
        return gd__error(GD_ERR_INTERNAL, "context: cannot create a mutex");
    }
    c->device = device;
    c->refs = 1;
    c->world = 1;
    *out = c;
fail:
    return st;
}

gd_status gd_context_create(const gd_context_options *options, gd_context_t **out) {
    gd_status st = GD_OK;
    gd_context_options o = GD_CONTEXT_OPTIONS_INIT;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_context_create: out is NULL");
    *out = NULL;
    if (options)
        GD_CHECK(gd__options_in(&o, sizeof o, options, 0, "gd_context_create: options",
                                "GD_CONTEXT_OPTIONS_INIT"));
    GD_REQUIRE(o.device >= 0, GD_ERR_INVALID_ARG, "gd_context_create: GPU %d; use 0 or more",
               o.device);
    const int n = gd_device_count();
    GD_REQUIRE(n == 0 || o.device < n, GD_ERR_RANGE,
               "gd_context_create: GPU %d does not exist: %d GPU(s) visible (0..%d)", o.device, n,
               n - 1);
    GD_CHECK(context_new(o.device, out));
fail:
    return st;
}

gd_context_t *gd__context_ref(gd_context_t *ctx) {
    pthread_mutex_lock(&ctx->mu);
    ctx->refs++;
    pthread_mutex_unlock(&ctx->mu);
    return ctx;
}

void gd__context_unref(gd_context_t *ctx) {
    if (!ctx) return;
    if (ctx->is_default) pthread_mutex_lock(&defaults_mu);
    pthread_mutex_lock(&ctx->mu);
    const int last = --ctx->refs == 0;
    pthread_mutex_unlock(&ctx->mu);
    if (last && ctx->is_default) defaults[ctx->device] = NULL;
    if (ctx->is_default) pthread_mutex_unlock(&defaults_mu);
    if (!last) return;
    /* Every object gave its pins back before its reference: the registry is empty. */
    pthread_mutex_destroy(&ctx->mu);
    gd_free(ctx);
}

void gd_context_destroy(gd_context_t *ctx) {
    gd__context_unref(ctx);
}

int gd_context_device(const gd_context_t *ctx) {
    return ctx ? ctx->device : -1;
}

gd_status gd__context_default(int device, gd_context_t **out) {
    gd_status st = GD_OK;
    *out = NULL;
    GD_REQUIRE(device >= 0 && device < DEFAULT_DEVICES, GD_ERR_RANGE,
               "GPU %d: use a device ordinal in [0, %d)", device, DEFAULT_DEVICES);
    pthread_mutex_lock(&defaults_mu);
    if (!defaults[device]) {
        st = context_new(device, &defaults[device]);
        if (st == GD_OK) defaults[device]->is_default = 1;
    } else {
        gd__context_ref(defaults[device]);
    }
    *out = defaults[device];
    pthread_mutex_unlock(&defaults_mu);
fail:
    return st;
}

gd_status gd__context_acquire(gd_context_t *given, int *device, gd_context_t **out) {
    if (!given) return gd__context_default(*device, out);
    *out = gd__context_ref(given);
    *device = given->device;
    return GD_OK;
}

gd_status gd__context_pin(gd_context_t *ctx, void *data, int64_t rows, int64_t cols,
                          gd_dtype dtype, gd_host_tensor_t **out) {
    gd_status st = GD_OK;
    gd_host_tensor_t *ht = NULL;
    int slot = -1;
    *out = NULL;
    pthread_mutex_lock(&ctx->mu);
    for (int i = 0; i < GD__CONTEXT_PIN_SLOTS; i++) {
        if (ctx->pins[i].refs > 0 && ctx->pins[i].data == data) {
            ctx->pins[i].refs++;
            *out = ctx->pins[i].tensor;
            goto fail; /* found: nothing else to do */
        }
        if (ctx->pins[i].refs == 0 && slot < 0) slot = i;
    }
    GD_REQUIRE(slot >= 0, GD_ERR_UNSUPPORTED,
               "more than %d host tables registered at once in one context; destroy trainers "
               "or loaders you no longer use",
               GD__CONTEXT_PIN_SLOTS);
    GD_CHECK(gd_host_tensor_adopt(data, rows, cols, dtype, 0u, &ht));
    GD_CHECK(gd_host_tensor_register(ht, ctx->device));
    ctx->pins[slot].data = data;
    ctx->pins[slot].refs = 1;
    ctx->pins[slot].tensor = ht;
    *out = ht;
    ht = NULL;
fail:
    pthread_mutex_unlock(&ctx->mu);
    gd_host_tensor_destroy(ht);
    return st;
}

void gd__context_unpin(gd_context_t *ctx, gd_host_tensor_t *t) {
    if (!t) return;
    pthread_mutex_lock(&ctx->mu);
    for (int i = 0; i < GD__CONTEXT_PIN_SLOTS; i++)
        if (ctx->pins[i].refs > 0 && ctx->pins[i].tensor == t) {
            if (--ctx->pins[i].refs == 0) gd_host_tensor_destroy(t);
            break;
        }
    pthread_mutex_unlock(&ctx->mu);
}
