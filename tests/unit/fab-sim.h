/* SPDX-License-Identifier: MIT */
/*
 * The fabric's network simulator for the unit tests (tests/unit/fab-sim.c).
 *
 * Deterministic and in memory: a virtual clock (sim.now), up to MAX_NODES
 * nodes, each an endpoint (dn2f_ep) with a test board above it (struct app)
 * or the switch core (dn2f_sw), and the datagrams between them in a heap by
 * arrival time.  Every link adds latency and jitter and, from a seeded PRNG,
 * drops, duplicates and reorders (sim_reset); a node can be starved of CPU
 * (struct node: its datagrams wait, its timers are late).  sim_run()
 * advances the clock from event to event until a condition holds.
 *
 * The test board sends numbered packet streams (stream*, pump) and checks
 * at the receiver that each (class, source) stream arrives complete, in
 * order, uncorrupted, with requests after the data queued before them
 * (s_deliver); it can refuse deliveries (-EBUSY) to test back-pressure.
 * A test can replace it for some nodes with a model of its own (sim_model),
 * look at every datagram sent (g_send_hook), and record the first HELLO
 * of a node (g_rec_node).
 */
#ifndef FAB_SIM_H
#define FAB_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dn2fab.h"
#include "dn2fab-sw.h"

#define MAX_NODES 8
#define MAX_Q (1 << 16)

/* The test board above an endpoint. */
struct app {
    /* sender side: a stream of numbered packets toward each destination */
    uint16_t dst[MAX_NODES];
    uint8_t dwid[MAX_NODES];        /* the stream's DWID */
    uint8_t req[MAX_NODES];         /* the stream's packets are RVL-family requests */
    unsigned ndst;
    uint32_t to_send[MAX_NODES];    /* packets still to send per dst */
    uint32_t sent[MAX_NODES];
    uint32_t stream_id;             /* bumps when the board restarts */
    bool round_robin;               /* pump: one packet per stream in turn */
    bool one_counter;               /* number across destinations: one stream at the receiver */
    uint32_t total_sent;            /* with one_counter */
    uint64_t pace_ns;               /* pump: at most one packet per pace_ns (0 = no limit) */
    uint64_t next_pace;
    /* receiver side: expected next number per (class, source LID); the
     * class is the test's own view of a packet, DWID + 2 * (TYPE is an
     * RVL), as the device sees it (the fabric's lane should equal it) */
    uint32_t expect[4][4096];
    uint32_t got_total;
    uint32_t got_cls[4];
    uint8_t refuse_cls;             /* bit c: deliver() says -EBUSY to class c (bit 2:
                                     * the RC FIFO is full, bit 0: WID 0's ring) */
    unsigned log_n;                 /* the first deliveries: class << 24 | number */
    uint32_t log[64];
    bool like_device;               /* deliver() refuses while the link is down */
    uint32_t refused_link_down;
    uint64_t got_bytes;
    bool error;
    char errmsg[200];
    /* back-pressure */
    bool busy;
    uint32_t busy_every;            /* become busy after every so many deliveries */
    uint64_t busy_ns;               /* ... for this long (0 = until told) */
    uint64_t busy_until;
    uint32_t busy_stalls;
    bool link_up;
    unsigned link_ups, link_downs;
    uint32_t stall_seen;            /* can_send false seen */
};

struct node {
    bool used, alive;
    /* CPU starvation: until stalled_until the node runs nothing (its
     * datagrams wait in its "socket", its timers are late); with starve
     * set it stalls for starve_min..starve_max every starve_gap or so */
    uint64_t stalled_until;
    bool starve;
    uint64_t starve_min, starve_max, starve_gap, next_stall;
    unsigned stalls;
    struct dn2f_addr addr;
    struct dn2f_ep *ep;
    struct dn2f_sw *sw;
    struct app app;
    int idx;
};

/* A datagram on its way. */
struct qitem {
    uint64_t at, id;
    int to;
    struct dn2f_addr from;
    size_t len;
    uint8_t *buf;
};

/* The network: the virtual clock, the nodes, the datagrams in flight (a
 * heap by arrival time), the faults every link injects. */
struct fab_sim {
    uint64_t now;
    struct node nodes[MAX_NODES];
    struct qitem *heap;
    unsigned nq;
    uint64_t next_id;
    struct dn2f_rng rng;
    double drop, dup, reorder;
    uint64_t latency, jitter, reorder_extra;
    uint64_t sw_extra;          /* added to every datagram to or from the switch */
    bool faults_on_control;
    uint64_t delivered, dropped, dups;
    int sw_node;
};
extern struct fab_sim sim;

/* A test's own board model for some nodes: while on(idx), node idx's
 * deliveries go to deliver() and its sending to pump() instead of the test
 * board; clear() at every sim_reset(). */
struct sim_model {
    bool (*on)(int idx);
    int (*deliver)(struct node *nd, uint16_t slid, const uint8_t *pkt, size_t len);
    void (*pump)(struct node *nd);
    void (*clear)(void);
};
extern const struct sim_model *sim_model;

/* Test requests: 32 bytes (an RVL's 4 header lines), TYPE RVL; bytes
 * 16..19 = how many data packets of its DWID its sender had queued to the
 * receiver before it: the receiver must have delivered as many (read after
 * write). */
#define REQ_LEN 32

/* ------------------------------------------------------------ network */
uint64_t s_now(void *o);
void heap_push(struct qitem it);
struct qitem heap_pop(void);
int node_by_addr(const struct dn2f_addr *a);
/* A datagram other than DATA / ACK. */
bool is_control(const uint8_t *buf, size_t len);
/* A recorder: the first HELLO node g_rec_node sends (for replays). */
extern int g_rec_node;
extern uint8_t g_rec_buf[256];
extern size_t g_rec_len;
/* A test's look at every datagram sent (node indexes; to < 0: nowhere):
 * it may record it, or add a delay (*extra, ns).  Cleared by sim_reset. */
extern void (*g_send_hook)(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
/* The ops' send_datagram: into the heap, through the link's faults. */
int s_send(void *o, const struct dn2f_addr *to, const void *buf, size_t len);

/* ---------------------------------------------------------- test board */
/* Packet n of a stream: its header toward dlid, then bytes from the seed. */
void fill_pkt(uint8_t *p, size_t len, uint16_t dlid, uint16_t slid, uint32_t stream,
              uint32_t n);
/* The 1st DW's DWID (bit 28): the packet's lane. */
void set_dwid(uint8_t *p, unsigned dwid);
/* The 1st DW's TYPE (bits [16:12]). */
void set_type(uint8_t *p, unsigned type);
unsigned pkt_type(const uint8_t *p);
/* The test's own class of a packet (not the library's): DWID + 2 * RVL. */
unsigned pkt_class(const uint8_t *p);
/* Deterministic "random" sizes 16..4096 of data packet n from slid. */
size_t pkt_len_for(uint16_t slid, uint32_t n);
/* The ops' deliver and link_state: the test board's receiver. */
int s_deliver(void *o, uint16_t slid, const uint8_t *pkt, size_t len);
void s_link(void *o, bool up, uint16_t lid);
/* The test board's sender: what its streams still have, as credits allow. */
void pump(struct node *nd);

/* --------------------------------------------------------------- nodes */
/* A new network: no nodes, nothing in flight, the clock at 1 s, the
 * faults given (and the default latency, jitter and reorder delay). */
void sim_reset(uint64_t seed, double drop, double dup, double reorder);
extern bool g_one_host;                 /* mkaddr: every node at 127.0.0.10 */
/* Node i's address: 127.0.0.(10 + i):(5000 + i). */
void mkaddr(struct dn2f_addr *a, int i);
extern const struct dn2f_sw_ops sw_ops;
extern const char *g_sw_secret;         /* the next add_switch()'s secret */
/* The switch core as node 0. */
int add_switch(int route_mode);
extern const struct dn2f_ep_ops ep_ops;
/* Endpoint i's default configuration (GUID, epoch, the switch at node 0). */
struct dn2f_ep_config ep_cfg(int i);
/* An endpoint as node i (cfg NULL: ep_cfg(i)); i, or -1. */
int add_ep(int i, const struct dn2f_ep_config *cfg);
uint64_t node_deadline(struct node *nd);
typedef bool (*cond_fn)(void);
/* Run the simulation until cond() or the simulated time limit. */
bool sim_run(cond_fn cond, uint64_t limit_ns);

/* ---------------------------------------------------- scenario helpers */
extern int g_eps[MAX_NODES];            /* the endpoints of the scenario */
extern int g_neps;
extern uint32_t g_want[MAX_NODES];      /* packets each node must receive */
struct dn2f_ep *EP(int i);
struct app *APP(int i);
bool cond_all_up(void);
/* The first test board's error, into msg. */
bool any_error(char *msg, size_t n);
bool cond_received(void);
bool cond_idle(void);
/* A stream of n packets from node from to node to: of a DWID, requests or
 * data. */
void stream_cls(int from, int to, unsigned dwid, bool req, uint32_t n);
void stream_wid(int from, int to, unsigned dwid, uint32_t n);
void stream(int from, int to, uint32_t n);
void print_stats(const char *what, int i);

#endif
