/* SPDX-License-Identifier: MIT */
/*
 * The fabric's network simulator for the unit tests (fab-sim.h says what it
 * offers): a virtual clock, nodes that are endpoints or a switch core, the
 * datagrams between them in a heap by arrival time with seeded latency,
 * jitter, drop, duplication, reordering and CPU starvation, and the test
 * board above each endpoint (numbered packet streams, checked in order).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fab-sim.h"
#include "fab-pkt.h"

struct fab_sim sim;
const struct sim_model *sim_model;

/* ------------------------------------------------------------ network */
uint64_t s_now(void *o) { (void)o; return sim.now; }

static bool heap_less(const struct qitem *a, const struct qitem *b)
{
    return a->at < b->at || (a->at == b->at && a->id < b->id);
}

void heap_push(struct qitem it)
{
    unsigned i = sim.nq++;
    sim.heap[i] = it;
    while (i && heap_less(&sim.heap[i], &sim.heap[(i - 1) / 2])) {
        struct qitem t = sim.heap[i];
        sim.heap[i] = sim.heap[(i - 1) / 2];
        sim.heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

struct qitem heap_pop(void)
{
    struct qitem top = sim.heap[0];
    unsigned i = 0;
    sim.heap[0] = sim.heap[--sim.nq];
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i;
        if (l < sim.nq && heap_less(&sim.heap[l], &sim.heap[m])) {
            m = l;
        }
        if (r < sim.nq && heap_less(&sim.heap[r], &sim.heap[m])) {
            m = r;
        }
        if (m == i) {
            break;
        }
        struct qitem t = sim.heap[i];
        sim.heap[i] = sim.heap[m];
        sim.heap[m] = t;
        i = m;
    }
    return top;
}

int node_by_addr(const struct dn2f_addr *a)
{
    int i;
    for (i = 0; i < MAX_NODES; i++) {
        if (sim.nodes[i].used && dn2f_addr_equal(&sim.nodes[i].addr, a)) {
            return i;
        }
    }
    return -1;
}

bool is_control(const uint8_t *buf, size_t len)
{
    return len > 5 && buf[5] != DN2F_T_DATA && buf[5] != DN2F_T_ACK;
}

/* A recorder: the first HELLO node g_rec_node sends (for replays). */
int g_rec_node = -1;
uint8_t g_rec_buf[256];
size_t g_rec_len;

/* A test's look at every datagram sent (node indexes; to < 0: nowhere):
 * it may record it, or add a delay (*extra, ns). */
void (*g_send_hook)(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);

int s_send(void *o, const struct dn2f_addr *to, const void *buf, size_t len)
{
    struct node *from = o;
    int dst = node_by_addr(to), copies = 1, c;
    bool faults = sim.faults_on_control || !is_control(buf, len);
    uint64_t extra = 0;

    if (g_send_hook) {
        g_send_hook(from->idx, dst, buf, len, &extra);
    }

    if (from->idx == g_rec_node && !g_rec_len && len > 5 && len <= sizeof(g_rec_buf) &&
        ((const uint8_t *)buf)[5] == DN2F_T_HELLO) {
        memcpy(g_rec_buf, buf, len);
        g_rec_len = len;
    }

    if (dst < 0 || sim.nq + 2 >= MAX_Q) {
        sim.dropped++;
        return 0;
    }
    if (faults && dn2f_rng_unit(&sim.rng) < sim.drop) {
        sim.dropped++;
        return 0;
    }
    if (faults && dn2f_rng_unit(&sim.rng) < sim.dup) {
        copies = 2;
        sim.dups++;
    }
    for (c = 0; c < copies; c++) {
        struct qitem it;
        it.at = sim.now + sim.latency + (sim.jitter ? dn2f_rng_next(&sim.rng) % sim.jitter : 0);
        if (dst == sim.sw_node || from->idx == sim.sw_node) {
            it.at += sim.sw_extra;
        }
        it.at += extra;
        if (faults && dn2f_rng_unit(&sim.rng) < sim.reorder) {
            it.at += sim.reorder_extra;
        }
        it.id = sim.next_id++;
        it.to = dst;
        it.from = from->addr;
        it.len = len;
        it.buf = malloc(len);
        memcpy(it.buf, buf, len);
        heap_push(it);
    }
    return 0;
}

/* ---------------------------------------------------------- app layer */
void fill_pkt(uint8_t *p, size_t len, uint16_t dlid, uint16_t slid, uint32_t stream,
                     uint32_t n)
{
    size_t i;
    uint32_t x = n * 2654435761u ^ slid ^ (stream << 20);
    fab_pkt_head(p, len, dlid, n);
    memcpy(p + 12, &stream, 4);
    for (i = 16; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* The 1st DW's DWID (bit 28): the packet's lane. */
void set_dwid(uint8_t *p, unsigned dwid)
{
    p[3] = (uint8_t)((p[3] & ~0x10) | ((dwid & 1) << 4));
}

/* The 1st DW's TYPE (bits [16:12]). */
void set_type(uint8_t *p, unsigned type)
{
    p[1] = (uint8_t)((p[1] & 0x0f) | ((type & 0x0f) << 4));
    p[2] = (uint8_t)((p[2] & ~0x01) | ((type >> 4) & 1));
}

unsigned pkt_type(const uint8_t *p)
{
    return (p[1] >> 4) | ((p[2] & 1u) << 4);
}

/* The test's own class of a packet (not the library's): DWID + 2 * RVL. */
unsigned pkt_class(const uint8_t *p)
{
    return ((p[3] >> 4) & 1u) + (dn2_otype_is_rvl(pkt_type(p)) ? 2u : 0u);
}


size_t pkt_len_for(uint16_t slid, uint32_t n)
{
    /* deterministic "random" sizes 16..4096 */
    uint32_t h = (n + 1) * 2246822519u ^ slid * 3266489917u;
    h ^= h >> 15;
    return 16 + h % (4096 - 16 + 1);
}


int s_deliver(void *o, uint16_t slid, const uint8_t *pkt, size_t len)
{
    struct node *nd = o;
    struct app *a = &nd->app;
    uint32_t n, stream, before = 0;
    uint8_t ref[4096];
    unsigned idx = dn2f_lid_index(slid);
    unsigned w = len >= 8 ? pkt_class(pkt) : 0;

    if (sim_model && sim_model->on(nd->idx)) {
        return sim_model->deliver(nd, slid, pkt, len);
    }

    if (a->busy || ((a->refuse_cls >> w) & 1)) {
        a->busy_stalls++;
        return -EBUSY;
    }
    if (a->like_device && !a->link_up) {
        /* the device: its LID register is 0 while the link is down, so it
         * drops the packet as "not for this LID" */
        a->refused_link_down++;
        return -EINVAL;
    }
    if (len < 16) {
        a->error = true;
        snprintf(a->errmsg, sizeof(a->errmsg), "short packet %zu", len);
        return 0;
    }
    memcpy(&n, pkt + 8, 4);
    memcpy(&stream, pkt + 12, 4);
    if (n != a->expect[w][idx]) {
        if (!a->error) {
            snprintf(a->errmsg, sizeof(a->errmsg),
                     "node %d from 0x%x WID %u: got #%u, expected #%u",
                     nd->idx, slid, w, n, a->expect[w][idx]);
        }
        a->error = true;
        return 0;
    }
    if (len != ((w & 2) ? REQ_LEN : pkt_len_for(slid, n))) {
        a->error = true;
        snprintf(a->errmsg, sizeof(a->errmsg), "bad length for #%u", n);
        return 0;
    }
    fill_pkt(ref, len, dn2f_pkt_dlid(pkt), slid, stream, n);
    set_dwid(ref, w & 1);
    if (w & 2) {
        set_type(ref, DN2_OP_RVL);
        memcpy(&before, pkt + 16, 4);
        memcpy(ref + 16, &before, 4);
        if (a->expect[w & 1][idx] < before) {
            a->error = true;
            snprintf(a->errmsg, sizeof(a->errmsg), "node %d from 0x%x: request #%u of WID %u "
                     "delivered after %u data packets of that WID, queued after %u: a read "
                     "overtook a write", nd->idx, slid, n, w & 1, a->expect[w & 1][idx],
                     before);
            return 0;
        }
    }
    if (memcmp(ref, pkt, len) != 0) {
        a->error = true;
        snprintf(a->errmsg, sizeof(a->errmsg), "corrupt payload in #%u", n);
        return 0;
    }
    a->expect[w][idx]++;
    if (a->log_n < 64) {
        a->log[a->log_n++] = w << 24 | n;
    }
    a->got_total++;
    a->got_cls[w]++;
    a->got_bytes += len;
    if (a->busy_every && a->got_total % a->busy_every == 0) {
        a->busy = true;                 /* the board's ring is full for a while */
        a->busy_until = a->busy_ns ? sim.now + a->busy_ns : 0;
    }
    return 0;
}

void s_link(void *o, bool up, uint16_t lid)
{
    struct node *nd = o;
    (void)lid;
    nd->app.link_up = up;
    if (up) {
        nd->app.link_ups++;
    } else {
        nd->app.link_downs++;
    }
}

void pump(struct node *nd)
{
    struct app *a = &nd->app;
    unsigned i;
    bool any = false;
    uint16_t me;

    if (!nd->ep || !nd->alive || dn2f_ep_link(nd->ep) != DN2F_LINK_UP) {
        return;
    }
    if (sim_model && sim_model->on(nd->idx)) {
        sim_model->pump(nd);
        return;
    }
    me = dn2f_ep_lid(nd->ep);
    for (;;) {
        bool progress = false;
        for (i = 0; i < a->ndst; i++) {
            while (a->sent[i] < a->to_send[i]) {
                uint8_t pkt[4096];
                uint32_t num = a->one_counter ? a->total_sent : a->sent[i];
                size_t len = a->req[i] ? REQ_LEN : pkt_len_for(me, num);
                /* the lane from the 1st DW, as the device knows it */
                uint64_t h0 = (uint64_t)a->dst[i] << 32 | (uint64_t)(a->dwid[i] & 1) << 28 |
                              (uint64_t)(a->req[i] ? DN2_OP_RVL : 0) << 12;
                if (a->pace_ns && sim.now < a->next_pace) {
                    break;
                }
                if (!dn2f_ep_can_send_lane(nd->ep, a->dst[i], dn2f_h0_lane(h0), len)) {
                    a->stall_seen++;
                    break;
                }
                fill_pkt(pkt, len, a->dst[i], me, a->stream_id, num);
                set_dwid(pkt, a->dwid[i]);
                if (a->req[i]) {
                    /* data of that WID to that board queued before it */
                    uint32_t before = 0;
                    unsigned j;
                    for (j = 0; j < a->ndst; j++) {
                        if (!a->req[j] && a->dst[j] == a->dst[i] && a->dwid[j] == a->dwid[i]) {
                            before += a->sent[j];
                        }
                    }
                    set_type(pkt, DN2_OP_RVL);
                    memcpy(pkt + 16, &before, 4);
                }
                if (dn2f_ep_send(nd->ep, a->dst[i], pkt, len) != 0) {
                    break;
                }
                a->sent[i]++;
                a->total_sent++;
                if (a->pace_ns) {
                    a->next_pace = (a->next_pace > sim.now ? a->next_pace : sim.now) + a->pace_ns;
                }
                any = progress = true;
                if (a->round_robin) {
                    break;
                }
            }
        }
        if (!a->round_robin || !progress) {
            break;
        }
    }
    if (any) {
        dn2f_ep_flush(nd->ep);
    }
}

/* ----------------------------------------------------------- nodes */
void sim_reset(uint64_t seed, double drop, double dup, double reorder)
{
    int i;
    for (i = 0; i < MAX_NODES; i++) {
        if (sim.nodes[i].ep) {
            dn2f_ep_free(sim.nodes[i].ep);
        }
        if (sim.nodes[i].sw) {
            dn2f_sw_free(sim.nodes[i].sw);
        }
    }
    while (sim.nq) {
        struct qitem it = heap_pop();
        free(it.buf);
    }
    if (!sim.heap) {
        sim.heap = malloc(sizeof(struct qitem) * MAX_Q);
    }
    memset(sim.nodes, 0, sizeof(sim.nodes));
    if (sim_model) {
        sim_model->clear();
    }
    g_send_hook = NULL;
    sim.now = 1000000000ULL;
    sim.next_id = 0;
    dn2f_rng_seed(&sim.rng, seed);
    sim.drop = drop;
    sim.dup = dup;
    sim.reorder = reorder;
    sim.latency = 15000;        /* 15 us */
    sim.jitter = 5000;
    sim.reorder_extra = 300000; /* 300 us late */
    sim.sw_extra = 0;
    sim.faults_on_control = true;
    sim.delivered = sim.dropped = sim.dups = 0;
    sim.sw_node = -1;
}

bool g_one_host;                 /* mkaddr: every node at 127.0.0.10 */

void mkaddr(struct dn2f_addr *a, int i)
{
    char s[40];
    snprintf(s, sizeof(s), "127.0.0.%d:%d", g_one_host ? 10 : 10 + i, 5000 + i);
    dn2f_addr_parse(a, s);
}

const struct dn2f_sw_ops sw_ops = { .now_ns = s_now, .send_datagram = s_send };

const char *g_sw_secret;         /* the next add_switch()'s secret */

int add_switch(int route_mode)
{
    int i = 0;
    struct dn2f_sw_config c;
    struct node *nd = &sim.nodes[i];
    dn2f_sw_config_default(&c);
    if (g_sw_secret) {
        c.secret = (const uint8_t *)g_sw_secret;
        c.secret_len = strlen(g_sw_secret);
    }
    c.route_mode = route_mode;
    c.seed = 7;
    if (nd->sw) {
        dn2f_sw_free(nd->sw);
    }
    nd->used = nd->alive = true;
    nd->idx = i;
    mkaddr(&nd->addr, i);
    nd->sw = dn2f_sw_new(&c, &sw_ops, nd);
    sim.sw_node = i;
    return i;
}

const struct dn2f_ep_ops ep_ops = {
    .now_ns = s_now, .send_datagram = s_send, .deliver = s_deliver, .link_state = s_link,
};

struct dn2f_ep_config ep_cfg(int i)
{
    struct dn2f_ep_config c;
    dn2f_ep_config_default(&c);
    c.guid = 0x1000 + (uint64_t)i;
    c.epoch = 0xe0000 + (uint64_t)i;
    mkaddr(&c.sw, 0);
    return c;
}

int add_ep(int i, const struct dn2f_ep_config *cfg)
{
    struct node *nd = &sim.nodes[i];
    struct dn2f_ep_config c = cfg ? *cfg : ep_cfg(i);
    nd->used = nd->alive = true;
    nd->idx = i;
    mkaddr(&nd->addr, i);
    memset(&nd->app, 0, sizeof(nd->app));
    nd->ep = dn2f_ep_new(&c, &ep_ops, nd);
    return nd->ep ? i : -1;
}

uint64_t node_deadline(struct node *nd)
{
    if (!nd->alive) {
        return UINT64_MAX;
    }
    if (nd->stalled_until > sim.now) {
        return nd->stalled_until;       /* runs nothing before */
    }
    if (nd->ep) {
        uint64_t d = dn2f_ep_next_deadline(nd->ep);
        unsigned k;
        if (nd->app.busy && nd->app.busy_until && nd->app.busy_until < d) {
            d = nd->app.busy_until;
        }
        for (k = 0; nd->app.pace_ns && k < nd->app.ndst; k++) {
            if (nd->app.sent[k] < nd->app.to_send[k] && nd->app.next_pace < d) {
                d = nd->app.next_pace > sim.now ? nd->app.next_pace : sim.now + 1;
            }
        }
        return d;
    }
    if (nd->sw) {
        return dn2f_sw_next_deadline(nd->sw);
    }
    return UINT64_MAX;
}


/* Run the simulation until cond() or the simulated time limit. */
bool sim_run(cond_fn cond, uint64_t limit_ns)
{
    uint64_t end = sim.now + limit_ns;
    unsigned spins = 0;

    for (;;) {
        uint64_t t = UINT64_MAX;
        int i;
        if (cond && cond()) {
            return true;
        }
        if (sim.nq) {
            t = sim.heap[0].at;
        }
        for (i = 0; i < MAX_NODES; i++) {
            struct node *nd = &sim.nodes[i];
            if (nd->used) {
                uint64_t d = node_deadline(nd);
                if (nd->starve && nd->alive && nd->stalled_until <= sim.now) {
                    if (sim.now >= nd->next_stall) {
                        nd->stalled_until = sim.now + nd->starve_min +
                            dn2f_rng_next(&sim.rng) % (nd->starve_max - nd->starve_min + 1);
                        nd->next_stall = nd->stalled_until +
                            dn2f_rng_next(&sim.rng) % (2 * nd->starve_gap + 1);
                        nd->stalls++;
                        d = nd->stalled_until;
                    } else if (nd->next_stall < d) {
                        d = nd->next_stall;
                    }
                }
                if (d < t) {
                    t = d;
                }
            }
        }
        if (t == UINT64_MAX || t > end) {
            sim.now = end;
            return cond ? cond() : true;
        }
        if (t > sim.now) {
            sim.now = t;
            spins = 0;
        } else if (++spins > 100000) {
            fprintf(stderr, "# simulator: no progress at t=%llu (a deadline in the past "
                    "that tick does not clear?)\n", (unsigned long long)sim.now);
            for (i = 0; i < MAX_NODES; i++) {
                if (sim.nodes[i].used) {
                    fprintf(stderr, "#   node %d deadline %llu link %d\n", i,
                            (unsigned long long)node_deadline(&sim.nodes[i]),
                            sim.nodes[i].ep ? (int)dn2f_ep_link(sim.nodes[i].ep) : -1);
                }
            }
            return false;
        }
        while (sim.nq && sim.heap[0].at <= sim.now) {
            struct qitem it = heap_pop();
            struct node *nd = &sim.nodes[it.to];
            if (nd->alive && nd->stalled_until > sim.now) {
                /* waits in the starved node's socket, in order */
                it.at = nd->stalled_until;
                it.id = sim.next_id++;
                heap_push(it);
                continue;
            }
            if (nd->alive && nd->ep) {
                dn2f_ep_input(nd->ep, &it.from, it.buf, it.len);
            } else if (nd->alive && nd->sw) {
                dn2f_sw_input(nd->sw, &it.from, it.buf, it.len);
            }
            sim.delivered++;
            free(it.buf);
        }
        for (i = 0; i < MAX_NODES; i++) {
            struct node *nd = &sim.nodes[i];
            if (!nd->used || !nd->alive || nd->stalled_until > sim.now) {
                continue;
            }
            if (nd->ep) {
                if (nd->app.busy && nd->app.busy_until && sim.now >= nd->app.busy_until) {
                    nd->app.busy = false;
                    nd->app.busy_until = 0;
                    dn2f_ep_resume(nd->ep);
                }
                if (dn2f_ep_next_deadline(nd->ep) <= sim.now) {
                    dn2f_ep_tick(nd->ep);
                }
                pump(nd);
            } else if (nd->sw && dn2f_sw_next_deadline(nd->sw) <= sim.now) {
                dn2f_sw_tick(nd->sw);
            }
        }
    }
}

/* ====================================================== scenario helpers */
int g_eps[MAX_NODES];
int g_neps;
uint32_t g_want[MAX_NODES];      /* packets each node must receive */

struct dn2f_ep *EP(int i) { return sim.nodes[i].ep; }
struct app *APP(int i) { return &sim.nodes[i].app; }

bool cond_all_up(void)
{
    int i;
    for (i = 0; i < g_neps; i++) {
        if (sim.nodes[g_eps[i]].alive && dn2f_ep_link(EP(g_eps[i])) != DN2F_LINK_UP) {
            return false;
        }
    }
    return true;
}

bool any_error(char *msg, size_t n)
{
    int i;
    for (i = 0; i < g_neps; i++) {
        if (APP(g_eps[i])->error) {
            snprintf(msg, n, "%s", APP(g_eps[i])->errmsg);
            return true;
        }
    }
    return false;
}

bool cond_received(void)
{
    int i;
    char m[8];
    if (any_error(m, sizeof(m))) {
        return true;
    }
    for (i = 0; i < g_neps; i++) {
        if (APP(g_eps[i])->got_total < g_want[g_eps[i]]) {
            return false;
        }
    }
    return true;
}

bool cond_idle(void)
{
    int i;
    for (i = 0; i < g_neps; i++) {
        if (sim.nodes[g_eps[i]].alive && !dn2f_ep_idle(EP(g_eps[i]))) {
            return false;
        }
    }
    return true;
}

void stream_cls(int from, int to, unsigned dwid, bool req, uint32_t n)
{
    struct app *a = APP(from);
    unsigned k = a->ndst++;
    a->dst[k] = dn2f_ep_lid(EP(to));
    a->dwid[k] = (uint8_t)dwid;
    a->req[k] = req;
    a->to_send[k] = n;
    a->sent[k] = 0;
    g_want[to] += n;
}

void stream_wid(int from, int to, unsigned dwid, uint32_t n)
{
    stream_cls(from, to, dwid, false, n);
}

void stream(int from, int to, uint32_t n)
{
    stream_wid(from, to, 0, n);
}

void print_stats(const char *what, int i)
{
    const struct dn2f_ep_stats *s = dn2f_ep_stats(EP(i));
    fprintf(stderr, "#   %s ep%d: tx %llu pkts / %llu data dgrams, rx %llu, retx %llu "
            "(fast %llu, timeouts %llu), dup %llu, ooo %llu, busy %llu, drops: stale %llu "
            "window %llu nobuf %llu\n", what, i,
            (unsigned long long)s->tx_pkts, (unsigned long long)s->tx_data_dgrams,
            (unsigned long long)s->rx_pkts, (unsigned long long)s->retransmits,
            (unsigned long long)s->fast_retransmits, (unsigned long long)s->timeouts,
            (unsigned long long)s->duplicates, (unsigned long long)s->out_of_order,
            (unsigned long long)s->busy,
            (unsigned long long)s->drop[DN2F_DROP_STALE_EPOCH],
            (unsigned long long)s->drop[DN2F_DROP_WINDOW],
            (unsigned long long)s->drop[DN2F_DROP_NO_BUFFER]);
}
