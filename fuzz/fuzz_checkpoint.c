/*
 * libFuzzer target for the checkpoint reader. A checkpoint's CRC guards every byte, so random
 * files stop at the CRC check; this target wraps the input in a valid envelope instead (the
 * magic, the version, the header length, the file size, and a correct CRC32 at the end), so the
 * header parser and the layout checks behind the CRC see hostile values. The input is the header
 * text, a NUL byte, then the data; the file goes to an anonymous memory file read by its
 * /proc/self/fd path. Whatever peek accepts is loaded, with and without the optimizer state. It
 * must never crash, read out of bounds, leak or accept a layout that does not match its bytes
 * (a layout peek accepts must load unless a value is not finite).
 */
#define _GNU_SOURCE
#include "train/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Write the enveloped file to fd; 0 on success. */
static int write_file(int fd, const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t h = nul ? (size_t)(nul - data) : size;
    const uint8_t *body = nul ? nul + 1 : data + size;
    const size_t body_bytes = (size_t)(data + size - body);
    unsigned char prefix[24] = {0x89, 'G', 'D', 'C', 'K', 'P', 'T', '\n'};
    put_le(prefix + 8, GD__CHECKPOINT_VERSION, 4);
    put_le(prefix + 12, h, 4);
    put_le(prefix + 16, 24 + h + body_bytes + 4, 8);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, prefix, sizeof prefix);
    crc = crc32(crc, data, (uInt)h);
    crc = crc32(crc, body, (uInt)body_bytes);
    unsigned char tail[4];
    put_le(tail, crc, 4);
    return write(fd, prefix, sizeof prefix) != (ssize_t)sizeof prefix ||
           write(fd, data, h) != (ssize_t)h ||
           write(fd, body, body_bytes) != (ssize_t)body_bytes ||
           write(fd, tail, sizeof tail) != (ssize_t)sizeof tail;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20)) return 0;
    const int fd = memfd_create("fuzz-checkpoint", 0);
    if (fd < 0) return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (write_file(fd, data, size) != 0) {
        close(fd);
        return 0;
    }
    gd__checkpoint_meta meta;
    gd__nn_params layout;
    int has_state = 0;
    memset(&layout, 0, sizeof layout);
    if (gd__checkpoint_peek(path, &meta, &layout, &has_state) == GD_OK) {
        /* An accepted layout fits in the file, so the buffers are at most the input's size. */
        const size_t es = layout.dtype == GD_DTYPE_FLOAT64 ? 8 : 4;
        if (layout.numel < 0 || (size_t)layout.numel * es > size) __builtin_trap();
        void *params = malloc((size_t)layout.numel * es + 1);
        void *state = malloc(2 * (size_t)layout.numel * es + 1);
        int loaded_state = 0;
        if (params && state) {
            /* The one thing load checks beyond peek: the values are finite. */
            if (gd__checkpoint_load(path, &layout, NULL, params, NULL, NULL) != GD_OK &&
                !strstr(gd_last_error(), "NaN") && !strstr(gd_last_error(), "inf at")) {
                fprintf(stderr, "peek accepted what load refuses: %s\n", gd_last_error());
                __builtin_trap();
            }
            (void)gd__checkpoint_load(path, &layout, NULL, params, state, &loaded_state);
        }
        free(params);
        free(state);
    }
    close(fd);
    return 0;
}
