/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core, what both its upper files use: port lookup by LID
 * and by source, the datagrams it sends (raw, control with its MAC,
 * KEEPALIVE / BYE, the rate-limited BYE to a stranger), the capture hook,
 * and the token bucket.  See dn2fab-sw-int.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-sw-int.h"

/* ------------------------------------------------------------- limits */
/* Token bucket: true if one token was taken. */
bool sw_bucket_take(double *tokens, uint64_t *last, uint64_t t, double rate, double burst)
{
    *tokens += (double)(t - *last) * rate / 1e9;
    *last = t;
    if (*tokens > burst) {
        *tokens = burst;
    }
    if (*tokens < 1) {
        return false;
    }
    *tokens -= 1;
    return true;
}


/* --------------------------------------------------------------- log */
/* One line of the switch's log, through its ops (none: nothing). */
void sw_log(struct dn2f_sw *sw, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    if (!sw->ops.log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sw->ops.log(sw->opaque, msg);
}


/* ------------------------------------------------------------- ports */
void sw_capture(struct dn2f_sw *sw, unsigned ev, unsigned flags, unsigned reason,
                uint16_t in, uint16_t out, const void *buf, size_t len)
{
    if (sw->ops.capture) {
        sw->ops.capture(sw->opaque, ev, flags, reason, in, out, buf, len);
    }
}


struct swport *sw_port_by_lid(struct dn2f_sw *sw, uint16_t lid)
{
    if (!dn2_lid_assignable(lid)) {
        return NULL;
    }
    return sw->ports[dn2f_lid_index(lid)];
}


struct swport *sw_live_port(struct dn2f_sw *sw, uint16_t lid)
{
    struct swport *p = sw_port_by_lid(sw, lid);
    return p && p->state == PORT_ACTIVE ? p : NULL;
}


/* The live port that sent this datagram, or NULL. */
struct swport *sw_src_port(struct dn2f_sw *sw, const struct dn2f_addr *from,
                           const struct dn2f_msg *m)
{
    struct swport *p = sw_live_port(sw, m->h.src_lid);
    if (!p || !dn2f_addr_equal(&p->addr, from) || p->epoch != m->h.src_epoch) {
        return NULL;
    }
    return p;
}


/* ------------------------------------------------------------ output */
void sw_raw_send(struct dn2f_sw *sw, const struct dn2f_addr *to, const void *buf, size_t len)
{
    (void)sw->ops.send_datagram(sw->opaque, to, buf, len);
}


void sw_send_ctrl_buf(struct dn2f_sw *sw, const struct dn2f_addr *to, uint16_t out_lid,
                      const void *buf, size_t len)
{
    if (!len) {
        return;
    }
    sw_capture(sw, DN2F_CAP_CTRL_TX, 0, 0, 0, out_lid, buf, len);
    sw_raw_send(sw, to, buf, len);
}


/* The length, and the MAC when a secret is set (control datagrams). */
size_t sw_finish(struct dn2f_sw *sw, struct dn2f_wbuf *w)
{
    return sw->auth ? dn2f_finish_mac(w, &sw->kctl) : dn2f_finish(w);
}


/* KEEPALIVE (a = routes generation) or BYE (a = reason). */
void sw_send_small(struct dn2f_sw *sw, const struct dn2f_addr *to, unsigned type,
                   uint16_t dst, uint64_t dst_epoch, uint32_t a)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, 0, dst, sw->epoch, dst_epoch);
    if (type == DN2F_T_KEEPALIVE) {
        dn2f_put_keepalive(&w, a, 0, NULL);
    } else {
        dn2f_put_u32pair(&w, a, 0);
    }
    sw_send_ctrl_buf(sw, to, dst, buf, sw_finish(sw, &w));
}


/* Rate-limited BYE to a source that is not (or not yet) a port: "unknown"
 * (it will HELLO again) or a refusal of its join. */
void sw_send_bye_to(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t dst_epoch,
                    unsigned reason)
{
    if (!sw_bucket_take(&sw->bye_tokens, &sw->bye_last, now(sw), BYE_TOKENS_PER_S,
                        BYE_TOKENS_PER_S)) {
        return;
    }
    sw_send_small(sw, to, DN2F_T_BYE, 0, dst_epoch, reason);
}


void sw_send_bye_unknown(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t dst_epoch)
{
    sw_send_bye_to(sw, to, dst_epoch, DN2F_BYE_UNKNOWN);
}
