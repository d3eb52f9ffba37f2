/*
 * One feature table in POSIX shared memory, read by several processes: the parent creates the
 * segment and writes random rows; two children open it by name, check the bytes and a CPU
 * gather, and, where there is a GPU, each registers the segment for its GPU (both at once, held
 * together by a pipe barrier) and gathers rows with the zero-copy kernel. The parent touches no
 * CUDA before forking. The segment's name is unique per run and it is always unlinked, also
 * when a check fails. Opening errors and fault injection over creation are checked first.
 */
#include "feature/internal.h"
#include "test.h"

#include <sys/wait.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define ROWS 3001
#define COLS 257 /* float16: 514-byte rows, not a multiple of 16 */
#define ROW_BYTES (COLS * 2)
#define CHILDREN 2

static char shm_name[64];
static pid_t parent_pid;

/* Remove the segment however the parent exits; children inherit this but must not run it. */
static void unlink_at_exit(void) {
    if (getpid() == parent_pid && shm_name[0]) (void)gd_host_tensor_shm_unlink(shm_name);
}

/* The name as a plain pointer, for message checks. */
static const char *name_text(void) { return shm_name; }

static int shm_exists(const char *name) {
    gd_host_tensor_t *t = NULL;
    gd_status st = gd_host_tensor_open_shm(name, ROWS, COLS, GD_DTYPE_FLOAT16, 0, &t);
    gd_host_tensor_destroy(t);
    return st == GD_OK;
}

static void reference(const unsigned char *table, const int64_t *ids, int64_t n,
                      unsigned char *out) {
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * ROW_BYTES, table + ids[i] * ROW_BYTES, ROW_BYTES);
}

/* The child's work; returns its exit code (0 pass, 77 no GPU after the CPU checks). */
static int child(int index, const unsigned char *expect, int ready_fd, int go_fd,
                 uint64_t seed) {
    uint64_t state = seed + (uint64_t)index * 7919;
    gd_host_tensor_t *t = NULL;
    T_OK(gd_host_tensor_open_shm(shm_name, ROWS, COLS, GD_DTYPE_FLOAT16, 0, &t));
    T_ASSERT(memcmp(gd_host_tensor_data(t), expect, (size_t)ROWS * ROW_BYTES) == 0);

    enum { N = 4000 };
    int64_t *ids = malloc(sizeof *ids * N);
    unsigned char *out = malloc((size_t)N * ROW_BYTES), *want = malloc((size_t)N * ROW_BYTES);
    T_ASSERT(ids && out && want);
    for (int i = 0; i < N; i++) ids[i] = (int64_t)(t_rand(&state) % ROWS);
    reference(expect, ids, N, want);
    gd_gatherer_t *g = NULL;
    T_OK(gd_gatherer_create(t, NULL, GD_GATHER_CPU, NULL, &g));
    T_OK(gd_gather(g, ids, N, 0, out, NULL));
    T_ASSERT(memcmp(out, want, (size_t)N * ROW_BYTES) == 0);
    gd_gatherer_destroy(g);

    int code = GD_TEST_SKIP;
    const int devices = gd_device_count();
    gd_context_t *ctx = NULL;
    if (devices > 0) {
        T_OK(gd_context_default(index % devices, &ctx));
        T_OK(gd_host_tensor_register(t, ctx));
    }
    /* Both children hold their registration of the same pages at the same time. */
    char byte = 'r';
    T_ASSERT(write(ready_fd, &byte, 1) == 1);
    T_ASSERT(read(go_fd, &byte, 1) == 1);
#ifdef GD_WITH_CUDA
    if (devices > 0) {
        const int device = index % devices;
        int64_t *d_ids = NULL;
        unsigned char *d_out = NULL;
        T_ASSERT(cudaSetDevice(device) == cudaSuccess);
        T_ASSERT(cudaMalloc((void **)&d_ids, sizeof *ids * N) == cudaSuccess);
        T_ASSERT(cudaMalloc((void **)&d_out, (size_t)N * ROW_BYTES) == cudaSuccess);
        T_ASSERT(cudaMemcpy(d_ids, ids, sizeof *ids * N, cudaMemcpyHostToDevice) == cudaSuccess);
        for (int sort = 0; sort < 2; sort++) {
            gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
            o.max_ids = N;
            o.sort_ids = sort;
            T_OK(gd_gatherer_create(t, ctx, GD_GATHER_ZEROCOPY, &o, &g));
            T_ASSERT(cudaMemset(d_out, 0xA5, (size_t)N * ROW_BYTES) == cudaSuccess);
            T_OK(gd_gather(g, d_ids, N, 1, d_out, NULL));
            T_OK(gd_gatherer_check_errors(g));
            T_ASSERT(cudaMemcpy(out, d_out, (size_t)N * ROW_BYTES, cudaMemcpyDeviceToHost) ==
                     cudaSuccess);
            if (memcmp(out, want, (size_t)N * ROW_BYTES) != 0)
                T_FAIL_("child %d: zero-copy gather from shared memory on GPU %d differs", index,
                        device);
            gd_gatherer_destroy(g);
        }
        T_ASSERT(cudaFree(d_ids) == cudaSuccess);
        T_ASSERT(cudaFree(d_out) == cudaSuccess);
        code = 0;
    }
#endif
    T_OK(gd_host_tensor_unregister(t));
    gd_context_destroy(ctx);
    gd_host_tensor_destroy(t);
    free(ids);
    free(out);
    free(want);
    return code;
}

static void check_open_errors(void) {
    gd_host_tensor_t *t = NULL;
    T_FAILS(gd_host_tensor_open_shm(shm_name, ROWS, COLS, GD_DTYPE_FLOAT16, 0, &t),
            GD_ERR_NOT_FOUND, "GD_HOST_TENSOR_SHM_CREATE");
    T_FAILS(gd_host_tensor_open_shm("a/b", 1, 1, GD_DTYPE_FLOAT16, GD_HOST_TENSOR_SHM_CREATE, &t),
            GD_ERR_INVALID_ARG, "a/b");
    T_FAILS(gd_host_tensor_open_shm(shm_name, 1, 1, GD_DTYPE_FLOAT16,
                                    GD_HOST_TENSOR_SHM_CREATE | GD_HOST_TENSOR_READ_ONLY, &t),
            GD_ERR_INVALID_ARG, "read-only");
    T_FAILS(gd_host_tensor_shm_unlink(shm_name), GD_ERR_NOT_FOUND, name_text());
    T_ASSERT(t == NULL);

    /* Every allocation of a creating open fails cleanly and leaves no segment behind. */
    gd_fault_set(GD_FAULT_ALLOC, 0);
    T_OK(gd_host_tensor_open_shm(shm_name, 10, 3, GD_DTYPE_FLOAT32, GD_HOST_TENSOR_SHM_CREATE,
                                 &t));
    const int64_t calls = gd_fault_calls(GD_FAULT_ALLOC);
    gd_host_tensor_destroy(t);
    T_OK(gd_host_tensor_shm_unlink(shm_name));
    T_ASSERT(calls >= 3);
    for (int64_t k = 1; k <= calls; k++) {
        gd_fault_set(GD_FAULT_ALLOC, k);
        t = NULL;
        T_FAILS(gd_host_tensor_open_shm(shm_name, 10, 3, GD_DTYPE_FLOAT32,
                                        GD_HOST_TENSOR_SHM_CREATE, &t),
                GD_ERR_NO_MEMORY, "");
        T_ASSERT(t == NULL);
        gd_fault_set(GD_FAULT_ALLOC, 0);
        T_ASSERT(!shm_exists(shm_name));
        t_check_no_leaks();
    }
    gd_fault_set(GD_FAULT_ALLOC, 0);
}

int main(void) {
    uint64_t seed = t_seed(), state = seed;
    parent_pid = getpid();
    snprintf(shm_name, sizeof shm_name, "/gdtest-shm-%d-%llx", (int)parent_pid,
             (unsigned long long)(t_rand(&state) & 0xffffffffu));
    atexit(unlink_at_exit);
    check_open_errors();

    gd_host_tensor_t *t = NULL, *t2 = NULL;
    T_OK(gd_host_tensor_open_shm(shm_name, ROWS, COLS, GD_DTYPE_FLOAT16,
                                 GD_HOST_TENSOR_SHM_CREATE, &t));
    T_FAILS(gd_host_tensor_open_shm(shm_name, ROWS, COLS, GD_DTYPE_FLOAT16,
                                    GD_HOST_TENSOR_SHM_CREATE, &t2),
            GD_ERR_INVALID_ARG, "exists");
    T_FAILS(gd_host_tensor_open_shm(shm_name, ROWS + 1, COLS, GD_DTYPE_FLOAT16, 0, &t2),
            GD_ERR_FORMAT, "shape");
    unsigned char *data = gd_host_tensor_data(t);
    for (size_t i = 0; i < (size_t)ROWS * ROW_BYTES; i++) data[i] = (unsigned char)t_rand(&state);
    unsigned char *expect = malloc((size_t)ROWS * ROW_BYTES);
    T_ASSERT(expect);
    memcpy(expect, data, (size_t)ROWS * ROW_BYTES);

    /* A read-only second mapping in this process sees the same bytes. */
    T_OK(gd_host_tensor_open_shm(shm_name, ROWS, COLS, GD_DTYPE_FLOAT16,
                                 GD_HOST_TENSOR_READ_ONLY, &t2));
    T_ASSERT(memcmp(gd_host_tensor_data(t2), expect, (size_t)ROWS * ROW_BYTES) == 0);
    gd_host_tensor_destroy(t2);

    int ready[CHILDREN][2], go[2];
    pid_t pids[CHILDREN];
    T_ASSERT(pipe(go) == 0);
    fflush(NULL);
    for (int c = 0; c < CHILDREN; c++) {
        T_ASSERT(pipe(ready[c]) == 0);
        pids[c] = fork();
        T_ASSERT(pids[c] >= 0);
        if (pids[c] == 0) {
            close(ready[c][0]);
            close(go[1]);
            int code = child(c, expect, ready[c][1], go[0], seed);
            fflush(NULL);
            _exit(code);
        }
        close(ready[c][1]);
    }
    /* Wait until each child has registered (or died), then let them all gather. */
    for (int c = 0; c < CHILDREN; c++) {
        char byte;
        if (read(ready[c][0], &byte, 1) != 1) fprintf(stderr, "child %d ended early\n", c);
        close(ready[c][0]);
    }
    char go_bytes[CHILDREN];
    memset(go_bytes, 'g', sizeof go_bytes);
    T_ASSERT(write(go[1], go_bytes, CHILDREN) == CHILDREN);
    int passed = 0, skipped = 0;
    for (int c = 0; c < CHILDREN; c++) {
        int status = 0;
        T_ASSERT(waitpid(pids[c], &status, 0) == pids[c]);
        if (!WIFEXITED(status)) T_FAIL_("child %d was killed by signal %d", c, WTERMSIG(status));
        if (WEXITSTATUS(status) == 0) passed++;
        else if (WEXITSTATUS(status) == GD_TEST_SKIP) skipped++;
        else T_FAIL_("child %d failed with exit code %d", c, WEXITSTATUS(status));
    }
    close(go[0]);
    close(go[1]);

    gd_host_tensor_destroy(t);
    T_OK(gd_host_tensor_shm_unlink(shm_name));
    T_ASSERT(!shm_exists(shm_name));
    shm_name[0] = '\0';
    free(expect);
    t_check_no_leaks();
    if (skipped == CHILDREN) {
        fprintf(stderr, "both processes read the shared table on the CPU; no GPU, so the "
                        "zero-copy part is skipped\n");
        return GD_TEST_SKIP;
    }
    printf("%d processes registered one shared table and gathered from it\n", passed);
    return 0;
}
