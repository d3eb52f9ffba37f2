/*
 * Peer access and CUDA IPC between the GPUs of one host, for the `partition` placement of the
 * hot rows (issue 14): a GPU reads the rows that another GPU caches with the same zero-copy loads
 * as its own, through a mapping of the other GPU's cache buffer. Between processes (one per GPU)
 * the owner exports its buffer as a 64-byte handle, the bootstrap carries the handle, and the
 * reader opens it on its GPU; within one process the reader enables peer access and uses the
 * pointer itself. These functions only make, open and close the mappings: which rows are read
 * from which peer is the tier store's business (feature/tier.h). Every CUDA call is checked and
 * its failure names both GPUs and what to do.
 */
#include "cuda.h"

#include <cuda_runtime.h>
#include <pthread.h>
#include <string.h>

static_assert(sizeof(cudaIpcMemHandle_t) == GD__CUDA_IPC_HANDLE_BYTES,
              "a CUDA IPC handle is the 64 bytes the bootstrap carries");

/* What to do when two GPUs cannot read each other's memory. */
#define NO_PEER_WAY_OUT "use --placement replicate"

/* The error of a failed CUDA call, read and cleared once. */
static cudaError_t take_error(cudaError_t ce) {
    if (ce != cudaSuccess) (void)cudaGetLastError();
    return ce;
}

extern "C" gd_status gd__cuda_can_access_peer(int device, int peer, int *yes) {
    gd_status st = GD_OK;
    int can = 0;
    cudaError_t ce;
    *yes = 0;
    GD_CHECK(gd__cuda_check_device(device, "reading a peer GPU's memory", NO_PEER_WAY_OUT));
    GD_CHECK(gd__cuda_check_device(peer, "reading a peer GPU's memory", NO_PEER_WAY_OUT));
    /* A GPU reads its own memory: no peer access is involved. */
    if (device == peer) {
        *yes = 1;
        return GD_OK;
    }
    ce = take_error(cudaDeviceCanAccessPeer(&can, device, peer));
    GD_REQUIRE(ce == cudaSuccess, GD_ERR_CUDA,
               "asking whether GPU %d can read GPU %d's memory failed: %s (%s); %s", device, peer,
               cudaGetErrorString(ce), cudaGetErrorName(ce), NO_PEER_WAY_OUT);
    *yes = can != 0;
fail:
    return st;
}

/*
 * The (device, peer) pairs this process has enabled. cudaDeviceEnablePeerAccess waits for work on
 * the peer GPU: called by one rank of an in-process group while another rank's NCCL kernel on
 * that GPU waits for this rank, it never returns. So a group enables its pairs when it is made
 * (gd__cuda_enable_peer_group), before any collective, and later calls find them here.
 */
#define PEER_TABLE 64
static unsigned char peer_enabled[PEER_TABLE][PEER_TABLE];
static pthread_mutex_t peer_mu = PTHREAD_MUTEX_INITIALIZER;

static int peer_known(int device, int peer) {
    if (device < 0 || peer < 0 || device >= PEER_TABLE || peer >= PEER_TABLE) return 0;
    pthread_mutex_lock(&peer_mu);
    const int known = peer_enabled[device][peer];
    pthread_mutex_unlock(&peer_mu);
    return known;
}

static void peer_remember(int device, int peer) {
    if (device < 0 || peer < 0 || device >= PEER_TABLE || peer >= PEER_TABLE) return;
    pthread_mutex_lock(&peer_mu);
    peer_enabled[device][peer] = 1;
    pthread_mutex_unlock(&peer_mu);
}

extern "C" void gd__cuda_enable_peer_group(const int *devices, int n) {
    /* A pair without peer access fails here quietly; it is refused, with its reason, where it
     * is needed. */
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) (void)gd__cuda_enable_peer_access(devices[a], devices[b]);
    gd_clear_error();
}

extern "C" gd_status gd__cuda_enable_peer_access(int device, int peer) {
    gd_status st = GD_OK;
    int can = 0, prev = -1;
    cudaError_t ce;
    if (device == peer || peer_known(device, peer)) return GD_OK;
    GD_CHECK(gd__cuda_can_access_peer(device, peer, &can));
    GD_REQUIRE(can, GD_ERR_CUDA,
               "GPUs %d and %d have no peer access (no NVLink/P2P between them): GPU %d cannot "
               "read GPU %d's cache; %s",
               device, peer, device, peer, NO_PEER_WAY_OUT);
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    ce = take_error(cudaDeviceEnablePeerAccess(peer, 0));
    /* Enabled earlier (by this process, or by opening a handle lazily): what was asked holds. */
    GD_REQUIRE(ce == cudaSuccess || ce == cudaErrorPeerAccessAlreadyEnabled, GD_ERR_CUDA,
               "enabling GPU %d's access to GPU %d's memory failed: %s (%s); %s", device, peer,
               cudaGetErrorString(ce), cudaGetErrorName(ce), NO_PEER_WAY_OUT);
    peer_remember(device, peer);
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" gd_status gd__cuda_ipc_handle(int device, const void *ptr,
                                         unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES]) {
    gd_status st = GD_OK;
    cudaIpcMemHandle_t h;
    int prev = -1;
    cudaError_t ce;
    memset(handle, 0, GD__CUDA_IPC_HANDLE_BYTES);
    GD_REQUIRE(ptr, GD_ERR_INVALID_ARG, "exporting a buffer of GPU %d to its peers: NULL buffer",
               device);
    GD_CHECK(gd__cuda_check_device(device, "exporting a cache to peer GPUs", NO_PEER_WAY_OUT));
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    {
        /*
         * Ask what the pointer is first: memory that is not the device's own allocation is
         * refused here, without a failing CUDA call (which compute-sanitizer counts as an error).
         */
        cudaPointerAttributes a;
        ce = take_error(cudaPointerGetAttributes(&a, ptr));
        GD_REQUIRE(ce == cudaSuccess && a.type == cudaMemoryTypeDevice && a.device == device,
                   GD_ERR_INVALID_ARG,
                   "exporting buffer %p of GPU %d to its peers: it is not GPU %d's memory from "
                   "cudaMalloc, and only that can be shared between processes; %s",
                   ptr, device, device, NO_PEER_WAY_OUT);
    }
    ce = take_error(cudaIpcGetMemHandle(&h, (void *)ptr));
    GD_REQUIRE(ce == cudaSuccess, GD_ERR_CUDA,
               "exporting buffer %p of GPU %d to its peers (cudaIpcGetMemHandle) failed: %s (%s): "
               "only memory of cudaMalloc can be shared between processes; %s",
               ptr, device, cudaGetErrorString(ce), cudaGetErrorName(ce), NO_PEER_WAY_OUT);
    memcpy(handle, &h, GD__CUDA_IPC_HANDLE_BYTES);
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" gd_status gd__cuda_ipc_open(int device, int peer,
                                       const unsigned char handle[GD__CUDA_IPC_HANDLE_BYTES],
                                       void **ptr) {
    gd_status st = GD_OK;
    cudaIpcMemHandle_t h;
    int prev = -1;
    cudaError_t ce;
    *ptr = NULL;
    GD_CHECK(gd__cuda_check_device(device, "reading a peer GPU's cache", NO_PEER_WAY_OUT));
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    memcpy(&h, handle, GD__CUDA_IPC_HANDLE_BYTES);
    /* Lazy peer access: the mapping enables GPU device's access to the peer's memory itself. */
    ce = take_error(cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess));
    if (ce != cudaSuccess) *ptr = NULL;
    GD_REQUIRE(ce == cudaSuccess, GD_ERR_CUDA,
               "opening GPU %d's cache on GPU %d (cudaIpcOpenMemHandle) failed: %s (%s): the "
               "handle must come from another process on this host that still holds the buffer, "
               "each process must see both GPUs (CUDA_VISIBLE_DEVICES), and GPUs %d and %d need "
               "peer access (NVLink/P2P); otherwise %s",
               peer, device, cudaGetErrorString(ce), cudaGetErrorName(ce), device, peer,
               NO_PEER_WAY_OUT);
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" gd_status gd__cuda_ipc_close(int device, void *ptr) {
    gd_status st = GD_OK;
    int prev = -1;
    cudaError_t ce;
    if (!ptr) return GD_OK;
    GD_CHECK(gd__cuda_enter_device(device, &prev));
    ce = take_error(cudaIpcCloseMemHandle(ptr));
    GD_REQUIRE(ce == cudaSuccess, GD_ERR_CUDA,
               "closing the mapping %p of a peer's cache on GPU %d (cudaIpcCloseMemHandle) "
               "failed: %s (%s): it must be a pointer that gd__cuda_ipc_open returned",
               ptr, device, cudaGetErrorString(ce), cudaGetErrorName(ce));
fail:
    gd__cuda_leave_device(device, prev);
    return st;
}

extern "C" gd_status gd__cuda_pci_id(int device, char id[GD__CUDA_PCI_ID_BYTES]) {
    gd_status st = GD_OK;
    cudaError_t ce;
    memset(id, 0, GD__CUDA_PCI_ID_BYTES);
    GD_CHECK(gd__cuda_check_device(device, "naming a GPU to its peers", NO_PEER_WAY_OUT));
    ce = take_error(cudaDeviceGetPCIBusId(id, GD__CUDA_PCI_ID_BYTES - 1, device));
    GD_REQUIRE(ce == cudaSuccess, GD_ERR_CUDA, "reading GPU %d's PCI id failed: %s (%s)", device,
               cudaGetErrorString(ce), cudaGetErrorName(ce));
fail:
    return st;
}

extern "C" int gd__cuda_device_of_pci(const char *id) {
    int device = -1;
    if (take_error(cudaDeviceGetByPCIBusId(&device, id)) != cudaSuccess) return -1;
    return device;
}
