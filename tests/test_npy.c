/*
 * The .npy reader and writer: round trips of every dtype and rank through gd_npy_write, the
 * header parser, gd__npy_load and gd__npy_map; the 4 KiB data alignment of large arrays; and
 * the rejection of damaged files (truncated at many lengths, wrong magic, unknown or big-endian
 * dtypes, Fortran order, too many dimensions, overflowing shapes, extra bytes), each with a
 * message naming the file.
 */
#include "io/npy.h"
#include "test.h"

#include <fcntl.h>
#include <sys/stat.h>

static const gd_dtype all_dtypes[] = {
    GD_DTYPE_FLOAT32, GD_DTYPE_FLOAT16, GD_DTYPE_BFLOAT16, GD_DTYPE_FLOAT64, GD_DTYPE_INT8,
    GD_DTYPE_UINT8,   GD_DTYPE_INT16,   GD_DTYPE_INT32,    GD_DTYPE_INT64,   GD_DTYPE_BOOL,
};

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) T_FAIL_("cannot create %s", path);
    T_EQ_INT(fwrite(data, 1, n, f), n);
    T_EQ_INT(fclose(f), 0);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    T_ASSERT(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    T_ASSERT(b);
    T_EQ_INT(fread(b, 1, (size_t)len, f), len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* A hand-made file: a preamble of the given version, then the dict padded to align, then data. */
static size_t make_npy(unsigned char *buf, int major, const char *dict, size_t data_bytes) {
    int prefix = major == 1 ? 10 : 12;
    size_t dl = strlen(dict);
    size_t total = ((size_t)prefix + dl + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    size_t hlen = total - (size_t)prefix;
    for (int i = 0; i < (major == 1 ? 2 : 4); i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + prefix, dict, dl);
    memset(buf + prefix + dl, ' ', total - (size_t)prefix - dl - 1);
    buf[total - 1] = '\n';
    memset(buf + total, 0x11, data_bytes);
    return total + data_bytes;
}

static gd_status parse(const char *dict, int major, size_t data_bytes, gd_npy_info *info) {
    static unsigned char buf[1 << 16];
    size_t n = make_npy(buf, major, dict, data_bytes);
    return gd__npy_parse_header(buf, n, (int64_t)n, "hand.npy", info);
}

static void round_trip(const char *dir, gd_dtype dtype, int ndim, const int64_t *shape,
                       uint64_t *rng) {
    char path[4200];
    snprintf(path, sizeof path, "%s/a_%s_%d.npy", dir, gd_dtype_name(dtype), ndim);
    size_t es = gd_dtype_size(dtype);
    int64_t elems = 1;
    for (int i = 0; i < ndim; i++) elems *= shape[i];
    size_t bytes = (size_t)elems * es;
    unsigned char *data = malloc(bytes + 1);
    T_ASSERT(data);
    for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)t_rand(rng);
    if (dtype == GD_DTYPE_BOOL)
        for (size_t i = 0; i < bytes; i++) data[i] &= 1;
    T_OK(gd_npy_write(path, dtype, ndim, shape, data));

    gd_npy_info info;
    T_OK(gd_npy_read_info(path, &info));
    T_EQ_INT(info.dtype, dtype);
    T_EQ_INT(info.ndim, ndim);
    for (int i = 0; i < ndim; i++) T_EQ_INT(info.shape[i], shape[i]);
    T_EQ_INT(info.data_bytes, bytes);
    T_EQ_INT(info.data_offset % (bytes >= GD__NPY_ALIGN ? GD__NPY_ALIGN : 64), 0);
    T_EQ_INT(info.data_offset, gd__npy_header_size(dtype, ndim, shape));
    struct stat sb;
    T_EQ_INT(stat(path, &sb), 0);
    T_EQ_INT(sb.st_size, info.data_offset + info.data_bytes);

    if (ndim > 0) {
        gd__array a;
        T_OK(gd__npy_load(path, &a));
        T_EQ_INT(a.store, GD__STORE_HEAP);
        T_EQ_INT(a.dtype, dtype);
        T_ASSERT(bytes == 0 || memcmp(a.data, data, bytes) == 0);
        gd__array_release(&a);
        T_EQ_INT(a.store, GD__STORE_NONE);
        T_OK(gd__npy_map(path, &a));
        T_EQ_INT(a.store, GD__STORE_MAP_RO);
        T_EQ_INT(a.ndim, ndim);
        T_EQ_INT(a.shape[0], shape[0]);
        T_EQ_INT(a.shape[1], ndim == 2 ? shape[1] : 1);
        T_ASSERT(bytes == 0 || memcmp(a.data, data, bytes) == 0);
        if (bytes >= GD__NPY_ALIGN) T_EQ_INT((uintptr_t)a.data % GD__NPY_ALIGN, 0);
        gd__array_release(&a);
    } else {
        gd__array a;
        T_FAILS(gd__npy_load(path, &a), GD_ERR_FORMAT, "0-dimensional");
    }
    free(data);
}

/* Cut a valid file at many lengths: every shorter file must be rejected, naming the file. */
static void truncations(const char *dir, uint64_t *rng) {
    char path[4200], cut[4200];
    snprintf(path, sizeof path, "%s/full.npy", dir);
    snprintf(cut, sizeof cut, "%s/cut.npy", dir);
    int64_t shape[2] = {37, 29};
    float *x = malloc(37 * 29 * sizeof *x);
    for (int i = 0; i < 37 * 29; i++) x[i] = (float)(t_rand(rng) % 1000);
    T_OK(gd_npy_write(path, GD_DTYPE_FLOAT32, 2, shape, x));
    size_t n;
    unsigned char *b = read_bytes(path, &n);
    for (size_t len = 0; len < n; len += (len < 200 ? 1 : 1 + t_rand(rng) % 97)) {
        write_bytes(cut, b, len);
        gd_npy_info info;
        gd__array a;
        gd_status st = gd_npy_read_info(cut, &info);
        T_ASSERT(st == GD_ERR_FORMAT);
        T_ASSERT(strstr(gd_last_error(), "cut.npy"));
        T_ASSERT(gd__npy_load(cut, &a) == GD_ERR_FORMAT);
        T_ASSERT(gd__npy_map(cut, &a) == GD_ERR_FORMAT);
        T_ASSERT(gd__npy_parse_header(b, len, (int64_t)len, "cut.npy", &info) == GD_ERR_FORMAT);
    }
    /* One byte too many is also a size disagreement. */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    write_bytes(cut, longer, n + 1);
    gd_npy_info info;
    T_FAILS(gd_npy_read_info(cut, &info), GD_ERR_FORMAT, "cut.npy");
    free(longer);
    free(b);
    free(x);
}

int main(void) {
    uint64_t rng = t_seed();
    char dir[4096];
    t_tmpdir(dir, sizeof dir);

    /* Round trips of every dtype in 0, 1 and 2 dimensions, small and large. */
    for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
        for (int rep = 0; rep < 3; rep++) {
            int64_t s1[1] = {(int64_t)(t_rand(&rng) % (rep == 2 ? 20000 : 300))};
            int64_t s2[2] = {(int64_t)(t_rand(&rng) % (rep == 2 ? 700 : 40)),
                             (int64_t)(1 + t_rand(&rng) % 33)};
            round_trip(dir, all_dtypes[d], 1, s1, &rng);
            round_trip(dir, all_dtypes[d], 2, s2, &rng);
        }
        round_trip(dir, all_dtypes[d], 0, NULL, &rng);
        int64_t empty[2] = {0, 5};
        round_trip(dir, all_dtypes[d], 2, empty, &rng);
    }
    /* The alignment rule at its boundary: 4095 bytes -> 64, 4096 bytes -> 4096. */
    int64_t s4095[1] = {4095}, s4096[1] = {4096};
    T_EQ_INT(gd__npy_header_size(GD_DTYPE_UINT8, 1, s4095), 128);
    T_EQ_INT(gd__npy_header_size(GD_DTYPE_UINT8, 1, s4096), 4096);
    T_EQ_INT(gd__npy_header_size(GD_DTYPE_FLOAT32, 1, s4096) % 4096, 0);

    /* The header numpy writes, and variants it may write. */
    gd_npy_info info;
    T_OK(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 1, 48, &info));
    T_EQ_INT(info.dtype, GD_DTYPE_FLOAT32);
    T_EQ_INT(info.ndim, 2);
    T_EQ_INT(info.shape[0], 3);
    T_EQ_INT(info.shape[1], 4);
    T_EQ_INT(info.data_offset, 128);
    T_OK(parse("{\"shape\": (5,), \"fortran_order\": False, \"descr\": \"<i8\"}", 2, 40, &info));
    T_EQ_INT(info.dtype, GD_DTYPE_INT64);
    T_EQ_INT(info.ndim, 1);
    T_OK(parse("{'descr':'|b1','fortran_order':False,'shape':(7L,)}", 3, 7, &info));
    T_EQ_INT(info.dtype, GD_DTYPE_BOOL);
    T_OK(parse("{'descr': '<u2', 'fortran_order': False, 'shape': (), }", 1, 2, &info));
    T_EQ_INT(info.dtype, GD_DTYPE_BFLOAT16);
    T_EQ_INT(info.ndim, 0);
    T_OK(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9), }", 1, 0, &info));
    T_EQ_INT(info.data_bytes, 0);

    /* Rejections, each naming the file. */
    T_FAILS(parse("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 1, 12, &info),
            GD_ERR_UNSUPPORTED, "big-endian");
    T_FAILS(parse("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 1, 24, &info),
            GD_ERR_UNSUPPORTED, "hand.npy");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 1, 24, &info),
            GD_ERR_UNSUPPORTED, "fortran_order");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", 1, 32,
                  &info),
            GD_ERR_UNSUPPORTED, "more than 2 dimensions");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 1, 0, &info),
            GD_ERR_FORMAT, "negative");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 16), }",
                  1, 0, &info),
            GD_ERR_OVERFLOW, "hand.npy");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                  1, 0, &info),
            GD_ERR_FORMAT, "hand.npy");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, 8, &info),
            GD_ERR_FORMAT, "truncated");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 1, 12,
                  &info),
            GD_ERR_FORMAT, "unexpected key");
    T_FAILS(parse("{'descr': '<f4', 'shape': (3,), }", 1, 12, &info), GD_ERR_FORMAT,
            "fortran_order");
    T_FAILS(parse("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 1,
                  12, &info),
            GD_ERR_FORMAT, "twice");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", 1, 12,
                  &info),
            GD_ERR_FORMAT, "after the dict");
    T_FAILS(parse("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 1, 12,
                  &info),
            GD_ERR_FORMAT, "structured");
    T_FAILS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ", 1, 12, &info),
            GD_ERR_FORMAT, "hand.npy");
    unsigned char bad[256];
    size_t bn = make_npy(bad, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
    bad[0] = 'X';
    T_FAILS(gd__npy_parse_header(bad, bn, (int64_t)bn, "hand.npy", &info), GD_ERR_FORMAT,
            "magic");
    bad[0] = 0x93;
    bad[6] = 4;
    T_FAILS(gd__npy_parse_header(bad, bn, (int64_t)bn, "hand.npy", &info), GD_ERR_UNSUPPORTED,
            "version 4.0");
    bad[6] = 1;
    bad[8] = 0xff;
    bad[9] = 0xff;
    T_FAILS(gd__npy_parse_header(bad, bn, (int64_t)bn, "hand.npy", &info), GD_ERR_FORMAT,
            "truncated");

    /* A file with wrong magic on disk, and writer argument checks. */
    char path[4200];
    snprintf(path, sizeof path, "%s/notnpy.npy", dir);
    write_bytes(path, "PK\x03\x04 this is a zip file, not an npy", 34);
    T_FAILS(gd_npy_read_info(path, &info), GD_ERR_FORMAT, "notnpy.npy");
    snprintf(path, sizeof path, "%s/missing.npy", dir);
    T_FAILS(gd_npy_read_info(path, &info), GD_ERR_NOT_FOUND, "missing.npy");
    int64_t big[2] = {INT64_C(1) << 62, 16};
    T_FAILS(gd_npy_write(path, GD_DTYPE_FLOAT32, 2, big, NULL), GD_ERR_OVERFLOW, "missing.npy");
    T_FAILS(gd_npy_write(path, GD_DTYPE_INVALID, 1, big, NULL), GD_ERR_INVALID_ARG,
            "missing.npy");

    truncations(dir, &rng);

    t_rmtree(dir);
    t_check_no_leaks();
    printf("test_npy: ok\n");
    return 0;
}
