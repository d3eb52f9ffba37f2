/*
 * The tier store: where the rows of one table live, and how a GPU kernel finds a row. Feature
 * rows (fixed width) and neighbour lists (variable length, delimited by an offsets array such as
 * indptr) are both rows of a table kept in one or more tiers: the whole table in pinned host
 * memory or in GPU memory, the hottest rows again in a GPU cache. One int64 per row, its
 * location, says which tier holds it and where (tier << 56 | slot), so that the zero-copy gather
 * and the sampler's list reads stay one kernel each: one load of the location map, then a switch
 * on the tier picks the base pointer from a small by-value struct (gd__tier_bases). A slot is a
 * unit index into the tier's array: a whole row for fixed-width rows, one entry for variable
 * rows (a list occupies the consecutive slots from its location on).
 *
 * A tier is a small table of functions (STYLE.md rule 16): locate rows, and read rows into a
 * device buffer on a stream. The pinned host table, the GPU-resident table and the GPU cache
 * implement it today, each with a CPU implementation (host memory: the reference of the tests
 * and what builds without CUDA use) and a CUDA one (tier_cuda.cu). The GPU cache is a component
 * of the store: given the rows to cache, hottest first, and a byte budget, it assigns slots,
 * fills its memory from the tier below by that tier's read, and publishes the rows' new
 * locations with a device-side map update. On a host with several GPUs a cache can instead be
 * built from a placement (which GPU caches which rows): a row that only other GPUs cache then
 * maps to the peer tier, a slot of a peer's cache read over NVLink with the same loads; every GPU
 * computes every peer's slots with the same pure rule, so only the caches' base pointers are
 * exchanged. docs/design.md ("The tier store") says how a dynamic cache and an SSD tier fit in.
 * This header is plain C; its inline functions also compile as CUDA device code.
 */
#ifndef GD_FEATURE_TIER_H
#define GD_FEATURE_TIER_H

#include "core/internal.h"
#include "core/philox.h" /* GD_HOST_DEVICE */

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The tier codes, the top byte of a location. The values are part of the encoding that tests
 * read back (host 0, GPU cache 1): new tiers take new codes, existing codes never change.
 */
typedef enum {
    GD__TIER_HOST = 0,      /* the whole table in host memory (pinned: GPU kernels read it) */
    GD__TIER_GPU_CACHE = 1, /* the hot rows again in GPU memory */
    GD__TIER_GPU = 2,       /* the whole table in GPU memory */
    GD__TIER_SSD = 3,       /* reserved: a pinned staging slot filled from a file */
    GD__TIER_PEER = 4,      /* another GPU's cache, read over NVLink (gd__loc_make_peer) */
    GD__TIER_COUNT = 5
} gd__tier_code;

/* ---- the location encoding */

#define GD__LOC_TIER_SHIFT 56
#define GD__LOC_SLOT_MASK ((int64_t)(((uint64_t)1 << GD__LOC_TIER_SHIFT) - 1))
/* What locate answers for a row outside the table. */
#define GD__LOC_NONE ((int64_t)-1)

GD_HOST_DEVICE int64_t gd__loc_make(int tier, int64_t slot) {
    return (int64_t)((uint64_t)tier << GD__LOC_TIER_SHIFT) | slot;
}

GD_HOST_DEVICE int gd__loc_tier(int64_t loc) {
    return (int)((uint64_t)loc >> GD__LOC_TIER_SHIFT);
}

GD_HOST_DEVICE int64_t gd__loc_slot(int64_t loc) {
    return loc & GD__LOC_SLOT_MASK;
}

/*
 * A peer location splits the slot: GD__TIER_PEER << 56 | peer << 48 | slot, peer the index of
 * the other GPU among the store's peers (at most GD__TIER_MAX_PEERS) and slot < 2^48 a slot of
 * that peer's cache. gd__loc_slot of it is the peer and the slot together; gd__tier_base_of
 * splits them.
 */
#define GD__TIER_MAX_PEERS 8
#define GD__LOC_PEER_SHIFT 48
#define GD__LOC_PEER_SLOT_MASK ((int64_t)(((uint64_t)1 << GD__LOC_PEER_SHIFT) - 1))

GD_HOST_DEVICE int64_t gd__loc_make_peer(int peer, int64_t slot) {
    return gd__loc_make(GD__TIER_PEER, (int64_t)((uint64_t)peer << GD__LOC_PEER_SHIFT) | slot);
}

GD_HOST_DEVICE int gd__loc_peer(int64_t loc) {
    return (int)(((uint64_t)loc >> GD__LOC_PEER_SHIFT) & 0xff);
}

GD_HOST_DEVICE int64_t gd__loc_peer_slot(int64_t loc) {
    return loc & GD__LOC_PEER_SLOT_MASK;
}

/* ---- the shape of a table's rows */

/*
 * Fixed rows: offsets and d_offsets NULL, one slot (unit_bytes bytes) per row. Variable rows:
 * row r is the units [offsets[r], offsets[r + 1]) of the home table, unit_bytes each. The CPU
 * implementation reads offsets; the CUDA one reads d_offsets in its kernels and offsets only
 * while it plans a cache. Both arrays stay the caller's and must outlive those uses.
 */
typedef struct {
    int64_t rows;
    int64_t unit_bytes;
    const int64_t *offsets;
    const int64_t *d_offsets;
} gd__row_shape;

/* The first home slot and the slot count of row r (offsets NULL: fixed rows). */
GD_HOST_DEVICE int64_t gd__row_start(const int64_t *offsets, int64_t r) {
    return offsets ? offsets[r] : r;
}

GD_HOST_DEVICE int64_t gd__row_units(const int64_t *offsets, int64_t r) {
    return offsets ? offsets[r + 1] - offsets[r] : 1;
}

/* ---- what a kernel needs to read every tier, passed by value */

typedef struct {
    const void *base[GD__TIER_COUNT]; /* slot 0 of each tier as kernels address it (NULL: none) */
    int64_t units[GD__TIER_COUNT];    /* slots in each tier's array (the bounds of its reads) */
    /* The peer tier, per peer: slot 0 of its cache as this GPU addresses it, and its slots. */
    const void *peer_base[GD__TIER_MAX_PEERS];
    int64_t peer_units[GD__TIER_MAX_PEERS];
    int home; /* the tier of a row the map does not list (no map): its slot is its home slot */
} gd__tier_bases;

/*
 * The base of a tier and, with units non-NULL, its slot count. A switch on the code rather than
 * an indexed load, so that a kernel keeps the struct in its parameter space: a few selects, no
 * local memory.
 */
GD_HOST_DEVICE const void *gd__tier_base(gd__tier_bases b, int tier, int64_t *units) {
    switch (tier) {
    case GD__TIER_GPU_CACHE:
        if (units) *units = b.units[GD__TIER_GPU_CACHE];
        return b.base[GD__TIER_GPU_CACHE];
    case GD__TIER_GPU:
        if (units) *units = b.units[GD__TIER_GPU];
        return b.base[GD__TIER_GPU];
    case GD__TIER_SSD:
        if (units) *units = b.units[GD__TIER_SSD];
        return b.base[GD__TIER_SSD];
    case GD__TIER_PEER:
        if (units) *units = b.units[GD__TIER_PEER];
        return b.base[GD__TIER_PEER];
    default:
        if (units) *units = b.units[GD__TIER_HOST];
        return b.base[GD__TIER_HOST];
    }
}

/* Loops that must unroll in device code, so that a by-value struct is never indexed. */
#ifdef __CUDA_ARCH__
#define GD__TIER_UNROLL _Pragma("unroll")
#else
#define GD__TIER_UNROLL
#endif

/*
 * The cache of peer and its slot count (NULL and 0 for a peer not installed or out of range).
 * A select per peer rather than an indexed load, for the same reason as gd__tier_base.
 */
GD_HOST_DEVICE const void *gd__tier_peer_base(gd__tier_bases b, int peer, int64_t *units) {
    const void *base = NULL;
    int64_t n = 0;
    GD__TIER_UNROLL
    for (int q = 0; q < GD__TIER_MAX_PEERS; q++) {
        if (q == peer) {
            base = b.peer_base[q];
            n = b.peer_units[q];
        }
    }
    if (units) *units = n;
    return base;
}

/*
 * The base of the array that holds location loc, the slot of loc in it (*slot) and, with units
 * non-NULL, the array's slot count: how a kernel turns a location into an address. The other
 * tiers take gd__tier_base's switch; only a peer location pays for the peer select, so a store
 * without peers costs what gd__tier_base costs.
 */
GD_HOST_DEVICE const void *gd__tier_base_of(gd__tier_bases b, int64_t loc, int64_t *slot,
                                            int64_t *units) {
    const int tier = gd__loc_tier(loc);
    if (tier == GD__TIER_PEER) {
        *slot = gd__loc_peer_slot(loc);
        return gd__tier_peer_base(b, gd__loc_peer(loc), units);
    }
    *slot = gd__loc_slot(loc);
    return gd__tier_base(b, tier, units);
}

/* ---- the tier interface */

typedef struct gd__tier gd__tier;
typedef struct gd__tier_store gd__tier_store;

typedef struct {
    /*
     * locs[i] = the location of row rows[i] as this tier serves it, GD__LOC_NONE for a row
     * outside the table. A table tier holds every row (its own code, the row's home slot); the
     * GPU cache answers from the map (its own code for a row it holds, the tier below's
     * otherwise). Arrays in device memory for the CUDA implementation (queued on stream), host
     * memory for the CPU one.
     */
    gd_status (*locate)(const gd__tier *t, const int64_t *rows, int64_t n, int64_t *locs,
                        void *stream);
    /*
     * Copy row rows[i] to dst from slot dst_slots[i] on (dst_slots NULL: slot i, fixed rows
     * only), for i in [0, n); rows outside the table are skipped. The GPU cache reads a row it
     * does not hold from the tier below, as its map says. Same memory rules as locate.
     */
    gd_status (*read)(const gd__tier *t, const int64_t *rows, const int64_t *dst_slots, int64_t n,
                      void *dst, void *stream);
} gd__tier_ops;

struct gd__tier {
    const gd__tier_ops *ops; /* NULL: the store has no tier of this code */
    const char *name;        /* for messages and the plan: "pinned host", "gpu", "gpu cache" */
    int code;                /* GD__TIER_* */
    const void *base;        /* slot 0 as the implementation addresses it */
    int64_t units;           /* slots in its array */
    int64_t bytes;           /* the memory it holds for this table */
    const gd__tier_store *store;
};

/* ---- the cache component */

/*
 * A peer of a placed cache, as this store reads it. Its memory is never the store's: the caller
 * opened it (CUDA IPC) or owns it (another store of the same process), and keeps it valid while
 * kernels read this store.
 */
typedef struct {
    const void *base;     /* slot 0 of its cache as this store's GPU addresses it; NULL: not set */
    int64_t units;        /* slots its cache uses, from its rows by gd__tier_cache_slots */
    int64_t first, count; /* the rows read from it: peer_rows[first .. first + count) */
} gd__tier_peer;

/* The rows one GPU caches under a placement, in slot order (hottest first), and its budget. */
typedef struct {
    const int64_t *rows;
    int64_t count;
    int64_t budget; /* bytes */
} gd__tier_cache_rows;

/*
 * A GPU cache of a store, static today: filled once from the hottest rows that fit its budget.
 * rows[k] occupies the slots [slots[k], slots[k] + its units), in the order the rows were
 * offered. A dynamic cache adds, per slot group, a state (free, filling, valid, pinned by the
 * look-ahead window) and a count of the minibatches in flight that read it, beside rows and
 * slots; it fills and evicts with the same read and map update.
 */
typedef struct {
    int64_t budget;          /* bytes it may take */
    int64_t count;           /* rows it holds */
    int64_t units;           /* slots in use */
    int64_t *rows, *slots;   /* host memory: count entries each */
    unsigned char *resident; /* host memory: one bit per row of the table, 1 = held */
    void *mem;               /* the slots (GPU memory in the CUDA implementation), NULL if empty */
    /*
     * A placed cache (gd__tier_cache_build_placed) also maps rows to its peers' caches:
     * peer_rows[k] is at peer_locs[k] (a peer location), grouped by peer, peer_count in all (host
     * memory). num_peers is 0 for a cache built from the hottest rows.
     */
    int num_peers;
    gd__tier_peer peer[GD__TIER_MAX_PEERS];
    int64_t peer_count;
    int64_t *peer_rows, *peer_locs;
    unsigned char *in_gpu; /* placed: one bit per row, held here or by a peer (host memory) */
} gd__tier_cache;

/* ---- the store */

typedef struct gd__tier_impl gd__tier_impl;

struct gd__tier_store {
    gd__row_shape shape;
    int device; /* the GPU of the CUDA implementation; -1: the CPU implementation */
    const gd__tier_impl *impl;
    int home;                      /* the code of the tier holding every row */
    gd__tier tier[GD__TIER_COUNT]; /* by code */
    int64_t *loc;                  /* the location map, shape.rows entries; NULL: all home */
    int64_t map_bytes;
    gd__tier_cache cache;
};

/*
 * A store over a table whose every row lives in the tier home (GD__TIER_HOST or GD__TIER_GPU)
 * at base (home_units slots: rows, or entries for variable rows). device -1 gives the CPU
 * implementation (host memory), a GPU ordinal the CUDA one (GD_ERR_NO_DEVICE in a build without
 * CUDA). Nothing is allocated on the device until a cache is built.
 */
gd_status gd__tier_store_create(const gd__row_shape *shape, int device, int home, const void *base,
                                int64_t home_units, gd__tier_store **out);
void gd__tier_store_destroy(gd__tier_store *s);

/*
 * Build the GPU cache: walk candidates (rows, hottest first, distinct) and give each the next
 * free slots while it fits the budget (a row that does not fit is passed over, so smaller rows
 * behind it still fill the space; empty rows are never cached); then allocate the map and the
 * cache memory, fill the slots from the home tier, and publish the rows' locations. With no row
 * cached nothing is allocated and loc stays NULL. Called once per store.
 */
gd_status gd__tier_cache_build(gd__tier_store *s, const int64_t *candidates, int64_t n,
                               int64_t budget);

/*
 * The slot rule of gd__tier_cache_build as a pure function of the shape, the rows and the budget:
 * slots[k] = the first slot of rows[k] in a cache built from them, -1 for a row passed over;
 * *count and *units = the rows taken and the slots used. Every GPU of a placement computes with
 * it where each peer keeps each row, so only cache base pointers are exchanged, never slot
 * lists. Variable rows need the host offsets. GD_ERR_RANGE for a row outside the table.
 */
gd_status gd__tier_cache_slots(const gd__row_shape *shape, const int64_t *rows, int64_t n,
                               int64_t budget, int64_t *slots, int64_t *count, int64_t *units);

/*
 * The slot rule walked one candidate after another (tier.c's reference for its parallel walk,
 * which gd__tier_cache_slots and the cache builds use): bits is a clear bitmap of the table's
 * rows, set for the rows taken; slots, *count and *units as gd__tier_cache_slots gives them.
 * The rows must be in range.
 */
void gd__tier_assign_serial(const int64_t *offsets, const int64_t *rows, int64_t n,
                            int64_t slots_left, unsigned char *bits, int64_t *slots,
                            int64_t *count, int64_t *units);

/*
 * Build the GPU cache from an explicit placement instead of the hottest rows that fit: own are
 * the rows this GPU caches (replicated ones and its own share, hottest first) under its budget,
 * slotted by the rule above; peers[q], for q in [0, num_peers), are the rows and budget with
 * which peer q builds its own cache (count 0 for a peer index not in use, such as this GPU's
 * own when peers are indexed by rank). Every GPU passes the same lists for the same GPU. The
 * map sends a row this GPU caches to its slot; a row only peers cache stays at home until
 * gd__tier_store_set_peer installs the first peer q holding it, which then sends it to q's slot
 * (gd__loc_make_peer). Called once per store, instead of gd__tier_cache_build.
 */
gd_status gd__tier_cache_build_placed(gd__tier_store *s, const gd__tier_cache_rows *own,
                                      const gd__tier_cache_rows *peers, int num_peers);

/*
 * Install peer q's cache: base is its slot 0 as this store's device addresses it (a CUDA IPC
 * mapping, or another store's cache.mem when both are in one process; host memory of another
 * CPU store for the CPU implementation) and units its slot count, which must equal
 * s->cache.peer[q].units (the placement's). Then the rows read from q are published to the map,
 * finished before it returns. Install every peer before a kernel takes the store's bases
 * (gd__tier_store_bases): the bases are a snapshot. Once per peer.
 */
gd_status gd__tier_store_set_peer(gd__tier_store *s, int peer, const void *base, int64_t units);

/* Whether the cache holds row r (host memory, no device access). */
int gd__tier_cache_holds(const gd__tier_store *s, int64_t r);

/*
 * Set loc[rows[i]] = locs[i] for i in [0, n), on the device for the CUDA implementation (arrays
 * in device memory, queued on stream): how a cache publishes rows it has filled. A reader
 * ordered after it sees the new locations.
 */
gd_status gd__tier_map_update(gd__tier_store *s, const int64_t *rows, const int64_t *locs,
                              int64_t n, void *stream);

/* The by-value view the kernels take (every field zero for a NULL store). */
gd__tier_bases gd__tier_store_bases(const gd__tier_store *s);

/* ---- implementations (tier.c: CPU, tier_cuda.cu: CUDA) */

struct gd__tier_impl {
    const char *name;
    const gd__tier_ops *table_ops, *cache_ops;
    /*
     * Allocate the map and the cache memory for the planned s->cache (count > 0), set every
     * row's home location, fill the slots by the home tier's read, then publish the cached
     * rows with map_update. A failure leaves what it allocated for release.
     */
    gd_status (*cache_fill)(gd__tier_store *s);
    gd_status (*map_update)(gd__tier_store *s, const int64_t *rows, const int64_t *locs, int64_t n,
                            void *stream);
    /* map_update from host arrays, finished before it returns (how peers are installed). */
    gd_status (*publish)(gd__tier_store *s, const int64_t *rows, const int64_t *locs, int64_t n);
    /* Free the map and the cache memory (best effort). */
    void (*release)(gd__tier_store *s);
};

extern const gd__tier_impl gd__tier_cpu_impl;
#ifdef GD_WITH_CUDA
extern const gd__tier_impl gd__tier_cuda_impl;
#endif

#ifdef __cplusplus
}
#endif

#endif /* GD_FEATURE_TIER_H */
