/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub streams and events. A stream executes each command at once, in order, on the
 * calling thread, unless the stream is capturing, in which case the command is recorded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stub_internal.h"

void stub_capture_invalidate(vg_bk_stream *s, const char *why)
{
    if (s->capture != STUB_CAPTURE_ACTIVE) return;
    s->capture = STUB_CAPTURE_INVALID;
    snprintf(s->capture_error, sizeof s->capture_error, "%s", why);
}

double stub_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Busy-wait: sleeping has a granularity far above the microseconds being simulated. */
void stub_charge_launch(const vg_bk_device *dev)
{
    long long ns = dev->cfg.launch_ns;
    if (ns <= 0) return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000ll + (t.tv_nsec - t0.tv_nsec) < ns);
}

vg_status stub_cmd_list_push(stub_cmd_list *l, const stub_cmd *c)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 32;
        stub_cmd *p = realloc(l->cmds, nc * sizeof *p);
        if (!p) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: command list: out of memory");
        l->cmds = p;
        l->cap = nc;
    }
    l->cmds[l->n++] = *c;
    return VG_OK;
}

void stub_cmd_list_free(stub_cmd_list *l)
{
    free(l->cmds);
    memset(l, 0, sizeof *l);
}

vg_status stub_submit(vg_bk_stream *s, int op, const char *name,
                      void (*run)(vg_bk_stream *, const void *), const void *args, size_t size)
{
    if (size > STUB_CMD_ARGS)
        return STUB_ERR(VG_ERR_INTERNAL, "kunlun_stub: %s: arguments too large", name);
    if (s->capture == STUB_CAPTURE_INVALID)
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: %s on a stream whose capture was "
                                        "invalidated: %s", name, s->capture_error);
    stub_cmd c;
    memset(&c, 0, sizeof c);
    c.run = run;
    c.op = op;
    c.name = name;
    memcpy(c.args, args, size);
    if (s->capture == STUB_CAPTURE_ACTIVE) {
        if (op != STUB_NOT_AN_OP && !stub_op_capturable(s->dev, op)) {
            char why[sizeof s->capture_error];
            snprintf(why, sizeof why, "op '%s' cannot be captured on this device", name);
            stub_capture_invalidate(s, why);
            return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: op '%s' cannot be captured on this "
                                            "device; the capture is invalidated", name);
        }
        vg_status st = stub_cmd_list_push(&s->recording, &c);
        if (st != VG_OK) stub_capture_invalidate(s, "out of memory while recording");
        return st;
    }
    stub_charge_launch(s->dev);
    run(s, c.args);
    return stub_stream_error(s);
}

void stub_stream_fail(vg_bk_stream *s, vg_status st, const char *fmt, ...)
{
    if (s->error != VG_OK) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error_msg, sizeof s->error_msg, fmt, ap);
    va_end(ap);
    s->error = st;
}

vg_status stub_stream_error(vg_bk_stream *s)
{
    vg_status st = s->error;
    if (st == VG_OK) return VG_OK;
    s->error = VG_OK;
    return STUB_ERR(st, "%s", s->error_msg);
}

float *stub_scratch(vg_bk_stream *s, size_t elems)
{
    if (elems <= s->scratch_elems) return s->scratch;
    float *p = realloc(s->scratch, elems * sizeof(float));
    if (!p) return NULL;
    s->scratch = p;
    s->scratch_elems = elems;
    return p;
}

vg_status stub_stream_create(vg_bk_device *dev, vg_bk_stream **out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_create: NULL");
    vg_bk_stream *s = calloc(1, sizeof *s);
    if (!s) return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: stream_create: out of memory");
    s->dev = dev;
    pthread_mutex_lock(&dev->lock);
    int full = stub_grow((void **)&dev->streams, &dev->cap_streams, dev->nstreams + 1,
                         sizeof *dev->streams);
    if (!full) dev->streams[dev->nstreams++] = s;
    pthread_mutex_unlock(&dev->lock);
    if (full) {
        free(s);
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: stream_create: out of memory");
    }
    *out = s;
    return VG_OK;
}

vg_status stub_stream_destroy(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!s) return VG_OK;
    if (!s->wraps) stub_stream_unlist(dev, s); /* a wrapper leaves the caller's stream alone */
    stub_cmd_list_free(&s->recording);
    free(s->scratch);
    free(s);
    return VG_OK;
}

vg_status stub_stream_sync(vg_bk_device *dev, vg_bk_stream *s)
{
    if (!dev || !s) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_sync: NULL");
    /* the core refuses a sync while this thread captures (vg_capture_forbid) */
    return stub_stream_error(s); /* work already ran in order; a failure not yet reported */
}

vg_status stub_event_create(vg_bk_device *dev, vg_bk_event **out)
{
    if (!dev || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: event_create: NULL");
    *out = calloc(1, sizeof **out);
    return *out ? VG_OK : STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: event_create: no memory");
}

vg_status stub_event_destroy(vg_bk_device *dev, vg_bk_event *e)
{
    (void)dev;
    free(e);
    return VG_OK;
}

vg_status stub_event_record(vg_bk_device *dev, vg_bk_event *e, vg_bk_stream *s)
{
    if (!dev || !e || !s) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: event_record: NULL");
    if (s->capture != STUB_CAPTURE_NONE) { /* the stub's graphs hold no events */
        stub_capture_invalidate(s, "event_record on the capturing stream (not permitted)");
        return STUB_ERR(VG_ERR_CAPTURE, "kunlun_stub: event_record on a capturing stream is not "
                                        "permitted; the capture is invalidated");
    }
    e->time_ms = stub_now_ms();
    e->recorded = 1;
    return VG_OK;
}

vg_status stub_event_sync(vg_bk_device *dev, vg_bk_event *e)
{
    if (!dev || !e) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: event_sync: NULL");
    return VG_OK; /* the core refuses it while this thread captures */
}

vg_status stub_event_elapsed_ms(vg_bk_device *dev, vg_bk_event *a, vg_bk_event *b, float *ms)
{
    if (!dev || !a || !b || !ms)
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: event_elapsed_ms: NULL");
    if (!a->recorded || !b->recorded)
        return STUB_ERR(VG_ERR_STATE, "kunlun_stub: event_elapsed_ms: event not recorded");
    *ms = (float)(b->time_ms - a->time_ms);
    return VG_OK;
}

vg_status stub_stream_wait_event(vg_bk_device *dev, vg_bk_stream *s, vg_bk_event *e)
{
    if (!dev || !s || !e) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: stream_wait_event: NULL");
    return VG_OK; /* streams run synchronously: the event's work is already done */
}
