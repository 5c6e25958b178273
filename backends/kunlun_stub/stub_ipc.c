/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub IPC (ABI 1.2): device memory another process maps, for real.
 *
 * The stub's device memory is host memory, so sharing it is sharing pages: ipc_alloc backs the
 * allocation with a memfd (an anonymous file in RAM), mapped shared; the exporting process
 * keeps the descriptor open for the allocation's life. Another process reaches that file
 * through /proc/<pid>/fd/<fd>, which the kernel lets a process of the same user open (the
 * access check is ptrace's "read" mode, which Yama's ptrace_scope does not restrict; pidfd_getfd
 * would need "attach", which it does). Once mapped, the pages stay valid in the importer even if
 * the exporter exits or frees: the importer's mapping holds the file.
 *
 * A pid and an fd number identify nothing for long: the exporter may free the pool and get
 * the same fd number for the next memfd, or exit and be replaced by a process with the same pid.
 * So the handle also carries the file's identity (device and inode numbers) and a random token
 * that is part of the memfd's name; ipc_open checks both on the file it opened before mapping
 * it, and a handle that names anything else fails with VG_ERR_NOT_FOUND. The size mapped is the
 * file's own (fstat), never the handle's claim.
 *
 * Limits: exporter and importer must see the same /proc (the same PID namespace) and run as the
 * same user (or the importer must have CAP_SYS_PTRACE); the exporter must be alive when the
 * importer opens. A vendor with real device memory replaces all of this with its driver's
 * export/import calls (the CUDA backend: cudaIpcGetMemHandle / cudaIpcOpenMemHandle). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stub_internal.h"

/* The handle's bytes (same machine, so host byte order). */
typedef struct stub_handle {
    char magic[8];  /* "vgstubip" */
    uint32_t layout; /* 1 */
    int32_t pid;
    int32_t fd;
    uint32_t zero;
    uint64_t bytes; /* as allocated (for messages; the file's size is what counts) */
    uint64_t st_dev, st_ino;
    unsigned char token[16];
} stub_handle;
_Static_assert(sizeof(stub_handle) == VG_IPC_HANDLE_BYTES, "the stub's handle fills vg_ipc_handle");

static const char k_magic[8] = {'v', 'g', 's', 't', 'u', 'b', 'i', 'p'};

static void token_name(const unsigned char *token, char *out /* 8 + 32 + 1 */)
{
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "vg-ipc-", 7);
    for (int i = 0; i < 16; i++) {
        out[7 + 2 * i] = hex[token[i] >> 4];
        out[7 + 2 * i + 1] = hex[token[i] & 15];
    }
    out[7 + 32] = '\0';
}

static int random_bytes(unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(p + got, n - got, 0);
        if (k > 0) got += (size_t)k;
        else if (!(k < 0 && errno == EINTR)) return -1;
    }
    return 0;
}

vg_status stub_ipc_alloc(vg_bk_device *dev, size_t bytes, void **out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_alloc: NULL");
    *out = NULL;
    if (bytes == 0) bytes = 1;
    if (stub_fault_hit(dev, STUB_FAULT_MEM_ALLOC))
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: ipc_alloc of %zu bytes failed "
                                              "(injected fault)", bytes);
    long page = sysconf(_SC_PAGESIZE);
    size_t map = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
    if (map < bytes) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: ipc_alloc: %zu bytes", bytes);
    stub_alloc a = {.bytes = bytes, .shared = 1, .fd = -1, .map_bytes = map};
    if (random_bytes(a.token, sizeof a.token) != 0)
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: ipc_alloc: getrandom failed: %s",
                        strerror(errno));
    vg_status st = stub_charge(dev, bytes, "ipc_alloc");
    if (st != VG_OK) return st;
    char name[48];
    token_name(a.token, name);
    a.fd = memfd_create(name, MFD_CLOEXEC);
    const char *what = "memfd_create";
    if (a.fd >= 0 && ftruncate(a.fd, (off_t)map) != 0) what = "ftruncate";
    else if (a.fd >= 0) {
        a.ptr = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
        if (a.ptr == MAP_FAILED) a.ptr = NULL, what = "mmap";
    }
    if (!a.ptr) {
        int err = errno;
        if (a.fd >= 0) close(a.fd);
        stub_uncharge(dev, bytes);
        return STUB_ERR(err == ENOMEM || err == ENOSPC ? VG_ERR_OUT_OF_MEMORY : VG_ERR_DEVICE,
                        "kunlun_stub: ipc_alloc of %zu bytes: %s failed: %s", bytes, what,
                        strerror(err));
    }
    if (dev->cfg.poison) memset(a.ptr, 0xFF, map);
    pthread_mutex_lock(&dev->lock);
    if (stub_grow((void **)&dev->allocs, &dev->cap_allocs, dev->nallocs + 1, sizeof(stub_alloc))) {
        pthread_mutex_unlock(&dev->lock);
        stub_ipc_release(&a);
        stub_uncharge(dev, bytes);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: allocation table full");
    }
    dev->allocs[dev->nallocs++] = a;
    pthread_mutex_unlock(&dev->lock);
    *out = a.ptr;
    return VG_OK;
}

void stub_ipc_release(stub_alloc *a)
{
    munmap(a->ptr, a->map_bytes);
    close(a->fd);
}

vg_status stub_ipc_export(vg_bk_device *dev, void *base, vg_ipc_handle *out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_export: NULL");
    memset(out, 0, sizeof *out);
    stub_alloc a = {0};
    int found = 0;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nallocs && !found; i++)
        if (dev->allocs[i].ptr == base) a = dev->allocs[i], found = 1;
    pthread_mutex_unlock(&dev->lock);
    if (!found || !a.shared)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_export(%p): %s", base,
                        found ? "not from ipc_alloc (only those can be shared)"
                              : "not the start of a live allocation of this device");
    struct stat st;
    if (fstat(a.fd, &st) != 0)
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: ipc_export: fstat: %s", strerror(errno));
    stub_handle h = {.layout = 1, .pid = (int32_t)getpid(), .fd = a.fd, .bytes = a.bytes,
                     .st_dev = (uint64_t)st.st_dev, .st_ino = (uint64_t)st.st_ino};
    memcpy(h.magic, k_magic, sizeof h.magic);
    memcpy(h.token, a.token, sizeof h.token);
    memcpy(out->bytes, &h, sizeof h);
    return VG_OK;
}

vg_status stub_ipc_open(vg_bk_device *dev, const vg_ipc_handle *handle, void **out, size_t *bytes)
{
    if (!dev || !handle || !out || !bytes)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_open: NULL");
    *out = NULL;
    *bytes = 0;
    stub_handle h;
    memcpy(&h, handle->bytes, sizeof h);
    if (memcmp(h.magic, k_magic, sizeof h.magic) != 0 || h.layout != 1 || h.zero != 0)
        return STUB_ERR(VG_ERR_FORMAT, "kunlun_stub: ipc_open: not a kunlun_stub IPC handle");
    if (h.pid <= 0 || h.fd < 0)
        return STUB_ERR(VG_ERR_FORMAT, "kunlun_stub: ipc_open: handle names pid %d, fd %d",
                        h.pid, h.fd);
    if (stub_fault_hit(dev, STUB_FAULT_IPC_OPEN))
        return STUB_ERR(VG_ERR_DEVICE, "kunlun_stub: ipc_open of pid %d's fd %d failed (injected "
                                       "fault)", h.pid, h.fd);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", h.pid, h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT)
            return STUB_ERR(VG_ERR_NOT_FOUND, "kunlun_stub: ipc_open: %s does not exist: the "
                                              "exporting process exited or freed the memory",
                            path);
        return STUB_ERR(VG_ERR_DEVICE,
                        "kunlun_stub: ipc_open: %s: %s%s", path, strerror(err),
                        err == EACCES || err == EPERM
                            ? " (the exporter runs as another user, or this process may not "
                              "read its /proc entries)"
                            : "");
    }
    /* is it still the file that was exported? device, inode, and the token in its name */
    struct stat st;
    char want[48], link[PATH_MAX], self[64];
    token_name(h.token, want);
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(self, link, sizeof link - 1);
    link[n > 0 ? n : 0] = '\0';
    int same = fstat(fd, &st) == 0 && (uint64_t)st.st_dev == h.st_dev &&
               (uint64_t)st.st_ino == h.st_ino && strncmp(link, "/memfd:", 7) == 0 &&
               strncmp(link + 7, want, strlen(want)) == 0;
    if (!same) {
        close(fd);
        return STUB_ERR(VG_ERR_NOT_FOUND, "kunlun_stub: ipc_open: fd %d of process %d is no "
                                          "longer the exported memory (it was freed, and the "
                                          "number or the process id reused)", h.fd, h.pid);
    }
    size_t size = (size_t)st.st_size;
    void *p = size ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    int err = errno;
    close(fd);
    if (p == MAP_FAILED)
        return STUB_ERR(size ? VG_ERR_OUT_OF_MEMORY : VG_ERR_FORMAT,
                        "kunlun_stub: ipc_open: mapping %zu bytes of %s: %s", size, path,
                        size ? strerror(err) : "the file is empty");
    pthread_mutex_lock(&dev->lock);
    if (stub_grow((void **)&dev->imports, &dev->cap_imports, dev->nimports + 1,
                  sizeof(stub_import))) {
        pthread_mutex_unlock(&dev->lock);
        munmap(p, size);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: ipc_open: out of host memory");
    }
    dev->imports[dev->nimports++] = (stub_import){p, size};
    pthread_mutex_unlock(&dev->lock);
    *out = p;
    *bytes = size;
    return VG_OK;
}

vg_status stub_ipc_close(vg_bk_device *dev, void *ptr)
{
    if (!dev) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_close: NULL device");
    if (!ptr) return VG_OK;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = dev->nimports; i-- > 0;) {
        if (dev->imports[i].ptr != ptr) continue;
        stub_import im = dev->imports[i];
        dev->imports[i] = dev->imports[--dev->nimports];
        pthread_mutex_unlock(&dev->lock);
        munmap(im.ptr, im.bytes);
        return VG_OK;
    }
    pthread_mutex_unlock(&dev->lock);
    return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: ipc_close(%p): not an address ipc_open "
                                        "returned on this device", ptr);
}
