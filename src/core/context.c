/*
 * The context (core/context.h): a device, the host memory registered for it, and room for a
 * communicator. The registry replaces what was a process-wide static table of the trainer; it
 * registers through the feature module's host tensors, which page-lock in chunks and explain a
 * failed pin.
 */
#include "core/context.h"
#include "core/comm.h"
#include "core/cuda.h"

#include "feature/internal.h"

#include <pthread.h>
#include <string.h>

/* One range of registered host memory and the registrations sharing it. */
typedef struct {
    gd_host_tensor_t *holder; /* the registration: a handle over the range owning no memory */
    int64_t refs;             /* users (host tensors) of it */
} pin_entry;

/*
 * The registry of registered host memory. A registration is portable (every GPU of the process
 * reads it at the same address), so the contexts of a group, one per GPU of this process, share
 * one registry: a table registered by one rank's trainer serves every rank, with no copy.
 */
typedef struct {
    pthread_mutex_t mu;
    int refs;        /* the contexts sharing it */
    pin_entry *pins; /* num_pins entries, room for cap_pins (NULL when empty) */
    int64_t num_pins, cap_pins;
} registry;

struct gd_context {
    int device;
    int refs; /* the creator's (until gd_context_destroy) + one per object using it */
    int is_default;
    pthread_mutex_t mu;
    registry *reg;
    /* Data-parallel training: this process's rank among world (1 = one process, no comm). */
    int rank, world;
    gd__comm *comm;
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
    GD_ALLOC(c->reg, sizeof *c->reg, "a context's registry");
    memset(c->reg, 0, sizeof *c->reg);
    if (pthread_mutex_init(&c->reg->mu, NULL) != 0) {
        gd_free(c->reg);
        c->reg = NULL;
        st = gd__error(GD_ERR_INTERNAL, "context: cannot create a mutex");
        goto fail;
    }
    c->reg->refs = 1;
    *out = c;
    return GD_OK;
fail:
    if (c) pthread_mutex_destroy(&c->mu);
    gd_free(c);
    return st;
}

static void registry_unref(registry *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    const int last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last) return;
    /* Every registration holds a context reference: the registry is empty (its array freed). */
    pthread_mutex_destroy(&r->mu);
    gd_free(r->pins);
    gd_free(r);
}

/* ctx uses shared's registry from now on (ctx's own is empty: ctx is new). */
static void share_registry(gd_context_t *ctx, gd_context_t *shared) {
    registry_unref(ctx->reg);
    pthread_mutex_lock(&shared->reg->mu);
    shared->reg->refs++;
    pthread_mutex_unlock(&shared->reg->mu);
    ctx->reg = shared->reg;
}

/* GD_OK if device can have a context: 0 or more, and a visible GPU when there are any. */
static gd_status check_device(int device, const char *who) {
    gd_status st = GD_OK;
    GD_REQUIRE(device >= 0, GD_ERR_INVALID_ARG, "%s: GPU %d; use 0 or more", who, device);
    const int n = gd_device_count();
    GD_REQUIRE(n == 0 || device < n, GD_ERR_RANGE,
               "%s: GPU %d does not exist: %d GPU(s) visible (0..%d)", who, device, n, n - 1);
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
    GD_CHECK(check_device(o.device, "gd_context_create"));
    GD_REQUIRE(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, GD_ERR_INVALID_ARG,
               "gd_context_create: rank %d of %d ranks; use a rank in [0, world_size)", o.rank,
               o.world_size);
    GD_REQUIRE(o.world_size == 1 || o.comm_id, GD_ERR_INVALID_ARG,
               "gd_context_create: %d ranks need the communicator id of gd_comm_id_create "
               "(comm_id)",
               o.world_size);
    GD_REQUIRE(o.comm_timeout_s >= 0, GD_ERR_INVALID_ARG,
               "gd_context_create: comm_timeout_s %g; use seconds > 0 (0: the default)",
               o.comm_timeout_s);
    GD_CHECK(context_new(o.device, out));
    (*out)->rank = o.rank;
    (*out)->world = o.world_size;
    if (o.world_size > 1) {
        const gd__comm_config cc = {o.device, o.rank, o.world_size, o.comm_id, o.comm_timeout_s,
                                    o.abort_flag};
        GD_CHECK(gd__comm_create(&cc, &(*out)->comm));
    }
    return GD_OK;
fail:
    if (out && *out) {
        gd__context_unref(*out);
        *out = NULL;
    }
    return st;
}

/* world contexts over a group: staged (GPU buffers through host memory) or not. */
static gd_status create_group(int world, const int *devices, int staged, gd_context_t **ctxs) {
    gd_status st = GD_OK;
    gd__comm *comms[64] = {NULL};
    GD_REQUIRE(world >= 2 && world <= 64, GD_ERR_INVALID_ARG,
               "context group: %d ranks; use 2 to 64", world);
    GD_REQUIRE(devices || !staged, GD_ERR_INVALID_ARG, "a staged context group needs GPUs");
    for (int r = 0; r < world; r++) {
        ctxs[r] = NULL;
        if (devices) GD_CHECK(check_device(devices[r], "context group"));
    }
    if (staged)
        GD_CHECK(gd__comm_create_staged_group(world, 0, comms));
    else
        GD_CHECK(gd__comm_create_group(world, devices, 0, comms));
#ifdef GD_WITH_CUDA
    /* Peer access now, before any rank's collective can keep a GPU busy (ipc_cuda.cu). */
    if (devices && gd_device_count() > 0) gd__cuda_enable_peer_group(devices, world);
#endif
    for (int r = 0; r < world; r++) {
        GD_CHECK(context_new(devices ? devices[r] : 0, &ctxs[r]));
        if (r > 0) share_registry(ctxs[r], ctxs[0]);
        ctxs[r]->rank = r;
        ctxs[r]->world = world;
        ctxs[r]->comm = comms[r];
        comms[r] = NULL;
    }
    return GD_OK;
fail:
    for (int r = 0; r < world; r++) {
        gd__comm_destroy(comms[r]);
        if (ctxs[r]) gd__context_unref(ctxs[r]);
        ctxs[r] = NULL;
    }
    return st;
}

gd_status gd__context_create_group(int world, const int *devices, gd_context_t **ctxs) {
    return create_group(world, devices, 0, ctxs);
}

gd_status gd__context_create_staged_group(int world, const int *devices, gd_context_t **ctxs) {
    return create_group(world, devices, 1, ctxs);
}

gd_status gd_context_create_group(int n, const int *devices, gd_context_t **ctxs) {
    if (!ctxs) return gd__error(GD_ERR_INVALID_ARG, "gd_context_create_group: ctxs is NULL");
    if (devices)
        for (int r = 0; r < n; r++)
            for (int q = 0; q < r; q++)
                if (devices[q] == devices[r])
                    return gd__error(GD_ERR_INVALID_ARG,
                                     "gd_context_create_group: GPU %d is named twice; give each "
                                     "rank its own GPU",
                                     devices[r]);
    return gd__context_create_group(n, devices, ctxs);
}

gd_status gd_context_share_registry(gd_context_t *ctx, gd_context_t *with) {
    gd_status st = GD_OK;
    GD_REQUIRE(ctx && with, GD_ERR_INVALID_ARG, "gd_context_share_registry: NULL context");
    if (ctx->reg == with->reg) return GD_OK;
    pthread_mutex_lock(&ctx->reg->mu);
    const int64_t held = ctx->reg->num_pins;
    pthread_mutex_unlock(&ctx->reg->mu);
    GD_REQUIRE(held == 0, GD_ERR_INVALID_ARG,
               "gd_context_share_registry: the context holds %lld registered range(s) already; "
               "share registries before registering anything through it",
               (long long)held);
    share_registry(ctx, with);
fail:
    return st;
}

gd__comm *gd__context_comm(const gd_context_t *ctx) {
    return ctx ? ctx->comm : NULL;
}

void gd_context_abort(gd_context_t *ctx, const char *why) {
    if (ctx) gd__comm_abort(ctx->comm, why);
}

gd_status gd_context_default(int device, gd_context_t **out) {
    gd_status st = GD_OK;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd_context_default: out is NULL");
    *out = NULL;
    GD_CHECK(check_device(device, "gd_context_default"));
    GD_CHECK(gd__context_default(device, out));
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
    pthread_mutex_destroy(&ctx->mu);
    registry_unref(ctx->reg);
    gd__comm_destroy(ctx->comm);
    gd_free(ctx);
}

void gd_context_destroy(gd_context_t *ctx) {
    gd__context_unref(ctx);
}

int gd_context_device(const gd_context_t *ctx) {
    return ctx ? ctx->device : -1;
}

gd_status gd_context_get_info(const gd_context_t *ctx, gd_context_info *info) {
    if (!ctx || !info) return gd__error(GD_ERR_INVALID_ARG, "gd_context_get_info: NULL argument");
    gd_context_info i = GD_CONTEXT_INFO_INIT;
    gd_context_t *c = (gd_context_t *)ctx; /* the lock only */
    i.device = c->device;
    i.is_default = c->is_default;
    i.rank = c->rank;
    i.world_size = c->world;
    registry *r = c->reg;
    pthread_mutex_lock(&r->mu);
    i.pinned_ranges = r->num_pins;
    for (int64_t k = 0; k < r->num_pins; k++) {
        i.pinned_bytes += (int64_t)r->pins[k].holder->bytes;
        i.pinned_users += r->pins[k].refs;
    }
    pthread_mutex_unlock(&r->mu);
    return gd__info_out(info, &i, sizeof i, "gd_context_get_info: info", "GD_CONTEXT_INFO_INIT");
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

gd_status gd__context_pin(gd_context_t *ctx, const gd_host_tensor_t *t,
                          gd_host_tensor_t **holder) {
    gd_status st = GD_OK;
    gd_host_tensor_t *h = NULL;
    *holder = NULL;
    registry *r = ctx->reg;
    pthread_mutex_lock(&r->mu);
    for (int64_t k = 0; k < r->num_pins; k++) {
        gd_host_tensor_t *e = r->pins[k].holder;
        if (e->data == t->data && e->bytes == t->bytes) {
            r->pins[k].refs++;
            *holder = e;
            goto fail; /* found: nothing else to do */
        }
    }
    if (r->num_pins == r->cap_pins) {
        const int64_t cap = r->cap_pins ? 2 * r->cap_pins : 4;
        pin_entry *grown = gd_realloc(r->pins, (size_t)cap * sizeof *grown);
        GD_REQUIRE(grown, GD_ERR_NO_MEMORY,
                   "registering host memory: out of memory for the context's registry");
        r->pins = grown;
        r->cap_pins = cap;
    }
    GD_CHECK(gd__host_tensor_holder(t, &h));
    GD_CHECK(gd__feature_backend_for(GD_GATHER_ZEROCOPY)->tensor_register(h, ctx->device));
    r->pins[r->num_pins].holder = h;
    r->pins[r->num_pins].refs = 1;
    r->num_pins++;
    *holder = h;
    h = NULL;
fail:
    pthread_mutex_unlock(&r->mu);
    gd_host_tensor_destroy(h);
    return st;
}

gd_status gd__context_unpin(gd_context_t *ctx, gd_host_tensor_t *holder) {
    gd_status st = GD_OK;
    if (!holder) return GD_OK;
    registry *r = ctx->reg;
    pthread_mutex_lock(&r->mu);
    for (int64_t k = 0; k < r->num_pins; k++) {
        if (r->pins[k].holder != holder) continue;
        if (--r->pins[k].refs > 0) break;
        /*
         * The last user: unregister under the lock, so that nobody registers the range again
         * (and is refused by CUDA) before it is released.
         */
        r->pins[k] = r->pins[--r->num_pins];
        if (r->num_pins == 0) {
            gd_free(r->pins);
            r->pins = NULL;
            r->cap_pins = 0;
        }
        st = gd_host_tensor_unregister(holder);
        gd_host_tensor_destroy(holder);
        break;
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}
