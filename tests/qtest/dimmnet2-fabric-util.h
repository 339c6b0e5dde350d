/*
 * qtest: what the fabric qtests share (dimmnet2-fabric-test,
 * dimmnet2-fabric-reliability-test, dimmnet2-fabric-hostile-test,
 * dimmnet2-fabric-vt-test): the bounded waits, the switch, the boards and
 * their requests and status rings, a fabric of one switch and two or
 * three boards, an IPUSH ring, a hostile peer's raw datagrams.
 *
 * Every case starts its own switch (`--listen 127.0.0.1:0 --ready-file F`,
 * killed and reaped at the end; PR_SET_PDEATHSIG kills it if the test
 * dies) and two or three QEMUs with -device dimmnet2,switch=...  `-accel
 * qtest` drives the link with QEMU_CLOCK_REALTIME, so the boards talk to
 * each other while the test polls them.  Every wait is bounded in wall
 * clock time; after one wait has timed out, later waits of the same case
 * give up at once so a broken build cannot take minutes.
 *
 * The SO-DIMMs are file-backed (memory-backend-file, share=on) and mapped
 * here as well: source data is put straight into the sender's file and the
 * receiver's file is compared byte for byte (interleave: choice #10).
 *
 * Environment: DN2_FIRMWARE_DIR (-L for QEMU), DN2_SWITCH_BINARY (default:
 * build/fabric/dn2-switch found above the executable or the cwd),
 * DN2_SWITCH_VERBOSE=1 (do not pass --quiet to the switch).
 *
 * The helpers shared with the other qtests (checks, registers, SO-DIMM
 * files) are in dimmnet2-qtest-util.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef DIMMNET2_FABRIC_UTIL_H
#define DIMMNET2_FABRIC_UTIL_H

#include "libqtest.h"
#include "dimmnet2-qtest-util.h"
/* The fabric wire format (fabric/dn2fab.h), for the hostile peer. */
#include "../../hw/dimmnet2/fabric/dn2fab.h"

#define PG          0x5a        /* the process group of every test process */
#define ST_OFF      0x7000u     /* status ring in LLCM: the last 4 KiB */
#define ST_BYTES    4096u
#define ST_SIZE_REG dn2_status_size_reg(ST_BYTES)
#define T_SHORT     5000        /* ms: a packet or a small primitive */
#define T_LONG      60000       /* ms: megabytes, with faults */
#define DN2Q_LHS_TIMEOUT_MS 1000 /* the device's silent-LHS-sender timeout */

typedef struct Switch {
    GPid pid;
    int port;
    char *dir;
} Switch;

typedef struct Board {
    DN2 d;                      /* the window and our view of its status rings */
    char name;
    DN2SdFile mem;              /* its SO-DIMMs, mapped here too */
    uint64_t guid;
    int local_port;
    uint16_t lid;
    int64_t vclock;             /* virtual-time cases: the board's clock */
} Board;

/* Extra -device properties for every board a case starts (",prop=v"). */
extern const char *g_board_props;
/* When set, every board writes its delivery trace to DIR/<name>.pcap. */
extern const char *g_board_pcap_dir;

#define MAXB 3

typedef struct Fab {
    Switch sw;
    Board b[MAXB];
    int n;
} Fab;

#define AMT_OFF     0x100u          /* the AMT entry: WID 0's LLCM 0x100 */
#define RING_BASE   0x40000u
#define RING_SIZE   0x8000u

/* A hostile board: registers with the switch like a board does (HELLO),
 * learns the victim's epoch and address from ROUTES, then talks to the
 * victim directly with fabric-valid datagrams. */
typedef struct RawPeer {
    int fd;
    struct dn2f_addr sw;
    uint64_t epoch;
    uint16_t lid;
    struct dn2f_addr victim_addr;
    uint16_t victim_lid;
    uint64_t victim_epoch;
    uint32_t seq[DN2F_NUM_LANES];   /* next sequence number, per lane (DWID) */
    uint64_t guid, sw_epoch;
    uint32_t sess;                  /* our session toward the victim */
    uint32_t victim_sess;           /* the victim's toward us (0: not known) */
} RawPeer;

/* Bounded waits: after one wait timed out (g_dead), the other waits of
 * the case fail fast */
extern bool g_dead;
int64_t now_ms(void);
int64_t deadline(int ms);
void wait_failed(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* The switch (dn2-switch, one per case) */
bool switch_start(Switch *sw, int port, const char *const *extra);
void switch_stop(Switch *sw, int sig);
void switch_free(Switch *sw);
int64_t switch_stat(Switch *sw, const char *key);
int switch_ports(Switch *sw, const char *state);

/* Boards: one QEMU each, SO-DIMMs in a file mapped here too */
void board_start(Board *b, char name, int sw_port, uint64_t guid, int local_port,
                 uint64_t memsize);
void board_stop(Board *b);
uint64_t qom_u64(Board *b, const char *prop);
GPtrArray *qom_props(Board *b);
bool sd_expect(Board *b, int wid, uint64_t off, const void *want, size_t len,
               const char *what);
bool sd_expect_zero(Board *b, int wid, uint64_t off, size_t len, const char *what);
bool sd_wait(Board *b, int wid, uint64_t off, const void *want, size_t len,
             int ms, const char *what);
bool poll_ur(Board *b, int wid, uint32_t off, uint64_t mask, uint64_t want, int ms,
             const char *what);
bool wait_pc(Board *b, int wid, int fam, unsigned target, int ms, const char *what);
bool wait_qom(Board *b, const char *prop, uint64_t want_at_least, int ms,
              const char *what);
bool board_wait_link(Board *b, int ms);
bool poll_sma_down(Board *b, int ms);
void board_net_init(Board *b, int pgid0, int pgid1);

/* Requests and packet images */
void issue(Board *b, int wid, int cmd, uint64_t upper, uint64_t lower,
           bool has_ex, uint64_t ex);
void rreq(Board *b, int wid, int cmd, unsigned otype, unsigned dtype, unsigned iter,
          uint16_t dlid, int dwid, int eflag, uint32_t arg, uint32_t src,
          uint32_t dst);
void rreq_ex(Board *b, int wid, int cmd, unsigned otype, unsigned dtype,
             unsigned iter, uint16_t dlid, int dwid, int eflag, uint32_t arg,
             uint32_t src, uint32_t dst, uint64_t ex);
void botf(Board *b, int wid, unsigned n, unsigned size);
size_t mkpkt(uint8_t *buf, const struct dn2_hdr *h0, const void *data, size_t dlen);
struct dn2_hdr rvs_hdr(uint16_t dlid, uint32_t dst);
void botf_send(Board *b, int wid, unsigned n, const struct dn2_hdr *h,
               const void *data, size_t dlen);

/* Status rings */
bool st_pop(Board *b, int wid, uint64_t *lower, uint64_t *upper, int ms,
            const char *what);
void st_expect(Board *b, int wid, unsigned otype, unsigned dtype, unsigned iter,
               uint16_t slid, unsigned swid, uint32_t size, uint32_t first, int ms,
               const char *what);
void st_expect_empty(Board *b, int wid, const char *what);

/* A fabric: one switch and up to MAXB boards */
uint64_t guid_of(int i);
bool fab_up(Fab *f, int n, const char *const *sw_args, uint64_t memsize,
            const int *local_ports);
bool fab_up_ab(Fab *f, const char *const *sw_args, uint64_t memsize,
               const int *local_ports, Board **a, Board **b);
void fab_down(Fab *f);

/* An IPUSH ring on a receiver's WID 0 (AMT entry at AMT_OFF) */
void ipush_setup(Board *recv, uint16_t sender_lid, int sender_wid);
uint32_t amt_tail(Board *b);
void amt_set_head(Board *b, uint32_t head);
void ring_expect(Board *b, uint32_t pos, const uint8_t *want, uint32_t len,
                 const char *what);

/* A hostile peer: raw datagrams at a board's socket */
int free_udp_port(void);
void raw_send(int fd, const struct dn2f_addr *to, const void *buf, size_t len);
size_t raw_recv(int fd, uint8_t *buf, size_t cap, struct dn2f_msg *m, int ms);
bool rawpeer_register(RawPeer *rp, int sw_port, uint16_t victim);
bool rawpeer_send(RawPeer *rp, uint8_t **pkts, const size_t *lens, unsigned n,
                  uint64_t src_epoch, uint64_t dst_epoch, int from_fd,
                  bool want_ack);
uint8_t *rvs_pkt(size_t *len, uint16_t dlid, uint8_t pgid, int dwid,
                 uint32_t dst, const void *data, size_t dlen);

/* An RVS with its status record, checked */
void rvs_check(Board *from, Board *to, int dwid, uint32_t len, uint32_t src,
               uint32_t dst, const uint8_t *data, const char *what);

/* The start of main(): g_test_init, and the switch.  1: register the
 * cases; 0: no switch (register none: the program passes with no case);
 * -1: DN2_SWITCH_BINARY names no switch (exit 1). */
int fab_test_init(int *argc, char ***argv);
/* g_test_run(), then the switch's path freed. */
int fab_test_run(void);

#endif
