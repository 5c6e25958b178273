/* SPDX-License-Identifier: Apache-2.0 */
/* libvg_kernel_trace.so: every kernel a process runs on an NVIDIA device, with its graph, as
 * lines of text. It is a CUPTI injection library: the CUDA driver loads it at initialisation
 * when CUDA_INJECTION64_PATH names it, so the traced program needs no change and no rebuild
 * (Nsight Systems is not on every machine; CUPTI ships with the toolkit).
 *
 * VG_KERNEL_TRACE names the file to write. It must not exist yet: a trace never overwrites a
 * file. One line a kernel, tab-separated, after a header line that starts with '#':
 *   graph_id  correlation_id  start_ns  end_ns  name
 * graph_id is 0 for a kernel launched outside a graph. The kernels of one graph launch share
 * the launch's correlation id, so (graph_id, correlation_id) names one replay.
 * tools/trace/trace_summary.py reads it; scripts/trace-graphs.sh runs both.
 *
 * Failures are said on stderr, prefixed "vg kernel trace:"; the last line of a complete trace
 * is "# end dropped=N" (N records CUPTI had no room for), so a reader can tell a trace cut
 * short (a crash, _exit) from a whole one. */
#include <cupti.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE_BUFFER_BYTES (8u << 20)
#define TRACE_BUFFER_ALIGN 8u

static FILE *g_out;
static pthread_mutex_t g_out_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t g_dropped;
static int g_failed; /* a write or CUPTI call failed: the end line is not written */

static void trace_say(const char *what, CUptiResult r)
{
    const char *msg = NULL;
    if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || !msg)
        msg = "unknown CUPTI error";
    fprintf(stderr, "vg kernel trace: %s: %s\n", what, msg);
}

static void CUPTIAPI trace_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = NULL;
    if (posix_memalign(&p, TRACE_BUFFER_ALIGN, TRACE_BUFFER_BYTES) != 0) {
        fprintf(stderr, "vg kernel trace: no memory for an activity buffer; records are lost\n");
        p = NULL;
    }
    *buffer = p;
    *size = p ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static void trace_write_kernel(const CUpti_ActivityKernel10 *k)
{
    const char *name = k->name ? k->name : "?";
    if (fprintf(g_out, "%" PRIu32 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%s\n", k->graphId,
                k->correlationId, (uint64_t)k->start, (uint64_t)k->end, name) < 0)
        g_failed = 1;
}

static void CUPTIAPI trace_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)size; /* the records end at valid */
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&g_out_lock);
    if (!g_out) { /* a buffer after the exit handler closed the file (a kernel of a later handler) */
        pthread_mutex_unlock(&g_out_lock);
        free(buffer);
        return;
    }
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (r != CUPTI_SUCCESS) {
            trace_say("reading an activity record", r);
            g_failed = 1;
            break;
        }
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            trace_write_kernel((const CUpti_ActivityKernel10 *)rec);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
        g_dropped += dropped;
    pthread_mutex_unlock(&g_out_lock);
    free(buffer);
}

/* At exit: hand back every buffer CUPTI still holds, then close the file with the end line. */
static void trace_finish(void)
{
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) {
        trace_say("flushing the last records", r);
        g_failed = 1;
    }
    pthread_mutex_lock(&g_out_lock);
    if (g_out) {
        if (!g_failed)
            fprintf(g_out, "# end dropped=%zu\n", g_dropped);
        if (fclose(g_out) != 0)
            fprintf(stderr, "vg kernel trace: closing %s failed\n", getenv("VG_KERNEL_TRACE"));
        g_out = NULL;
    }
    pthread_mutex_unlock(&g_out_lock);
    if (g_dropped)
        fprintf(stderr, "vg kernel trace: %zu records dropped (the trace is incomplete)\n", g_dropped);
}

static FILE *trace_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "vg kernel trace: cannot create %s (%s; an existing file is never "
                        "overwritten)\n", path, strerror(errno));
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        fprintf(stderr, "vg kernel trace: cannot write %s\n", path);
        return NULL;
    }
    fprintf(f, "# vg kernel trace 1: graph_id correlation_id start_ns end_ns name\n");
    return f;
}

/* The entry the CUDA driver calls; nonzero is success. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
    const char *path = getenv("VG_KERNEL_TRACE");
    if (!path || !*path) {
        fprintf(stderr, "vg kernel trace: VG_KERNEL_TRACE names no file; nothing is traced\n");
        return 0;
    }
    g_out = trace_open(path);
    if (!g_out)
        return 0;
    if (atexit(trace_finish) != 0) {
        fprintf(stderr, "vg kernel trace: cannot register the exit handler\n");
        fclose(g_out);
        g_out = NULL;
        return 0;
    }
    CUptiResult r = cuptiActivityRegisterCallbacks(trace_buffer_requested, trace_buffer_completed);
    if (r == CUPTI_SUCCESS)
        r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        trace_say("enabling the kernel records", r);
        g_failed = 1; /* trace_finish closes the file without the end line */
        return 0;
    }
    return 1;
}
