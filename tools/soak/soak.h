/* SPDX-License-Identifier: MIT */
/*
 * What dn2-soak's files share (tools/soak): dn2-soak.c has the basics, the
 * results, the child processes, the switch, the boards (a QEMU each, driven
 * over qtest and QMP through tools/common's qtest client) and main; each
 * phase is a file of its own: soak-mmio.c, soak-hostile.c, soak-rvs.c,
 * soak-join.c.
 */
#ifndef DN2_SOAK_H
#define DN2_SOAK_H

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dimmnet2/dn2_abi.h"
#include "dn2fab.h"
#include "dn2-board-up.h"
#include "qtest-board.h"
#include "qtest-client.h"

#define KiB ((uint64_t)1024)

#define MiB ((uint64_t)1024 * 1024)

#define PG          0x5a        /* the process group of the known-good traffic */

#define PG2         0x3c        /* hostile phase: the victims' WID 1 */

#define ST_OFF      0x7000u     /* status ring: the last 4 KiB of each LLCM */

#define ST_BYTES    4096u


/* Timeouts (ms) */
#define T_CMD       15000       /* one qtest / QMP answer */

#define T_START     30000       /* QEMU connecting to our sockets */

#define T_LINK      15000       /* link ready (SMA LID register) */

#define T_XFER      20000       /* a known-good round trip */

#define T_PROGRESS  60000       /* rvs: no status record for this long */


/* The run's randomness, from --seed: the fabric's PRNG (xoshiro256**
 * seeded by splitmix64). */
typedef struct dn2f_rng Rng;


/* The seeded data pattern: a pure function of (seed, 8-byte word index),
 * so data can be checked anywhere without keeping a copy. */
static inline uint64_t pat64(uint64_t seed, uint64_t idx)
{
    uint64_t z = seed ^ (idx * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}


/* ================================================================== */
/* Child processes                                                     */
/* ================================================================== */

#define MAXCHILD 32


/* ================================================================== */
/* The switch                                                          */
/* ================================================================== */

typedef struct Sw {
    pid_t pid;
    int port;
    char log[256];
    char ready[256];
    char *args[16];
    int nargs;
    unsigned starts;
} Sw;


/* ================================================================== */
/* Boards: a QEMU each, driven over qtest and QMP                      */
/* ================================================================== */

typedef struct Board {
    char name[8];
    pid_t pid;
    struct qc_qtest q;          /* qtest (tools/common/qtest-client.h) */
    struct qc_qmp m;            /* QMP */
    struct dn2_board_io io;     /* registers through q, for dn2-board-up.h */
    uint64_t base;
    uint16_t lid;
    uint64_t guid;
    int udp_port;               /* local=127.0.0.1:PORT (0: none / any) */
    bool loopback;
    bool dead;                  /* crashed or hung: no more commands */
    bool killed_hard;
    char log[256], mempath[256], cwd[256];
    uint8_t *mem;               /* the SO-DIMM file, mapped */
    uint64_t memsz, area;       /* area: one process's SO-DIMM bytes */
    uint32_t st_head[2];        /* the host's status-ring read pointers */
    unsigned sysresets;
} Board;

#define MAXB 8

static const char *const link_props[] = {
    "stat-link-retransmits", "stat-link-timeouts", "stat-link-fast-retransmits",
    "stat-link-duplicates", "stat-link-drops", "stat-link-busy", "stat-link-dgrams-tx",
    "stat-link-dgrams-rx",
};
#define NLINKP (sizeof(link_props) / sizeof(link_props[0]))

typedef struct Rec {
    uint64_t lower, upper;
} Rec;

struct soak_p1 {
    uint64_t ops, doorbells, ctl_resets, sma_resets, checks, foreign;
    double secs;
    unsigned segments, fuzz_failures, check_failures;
    bool ran, ops_ok, checks_ok, in_check;
};

struct P2s {
    uint64_t sent, to_board[2], to_switch, send_err;
    uint64_t kind[8];
    uint64_t rx_board[2], drops_board[2], stalls_board[2], accepted_board[2];
    uint64_t sw_bad, sw_in;
    uint64_t peer_acks, peer_data_in, peer_rehello;
    unsigned checks;
    double secs;
    bool ran, sent_ok, guard_ok, after_ok, peer_ok, silent_ok;
    uint64_t silent_ms, rc_timeout_ms, rc_abandoned, abandon_ms;
    int bye_reason;
};

#define P2 (*P2p)

struct soak_p3 {
    uint64_t planned, moved, verified, transfers, reissued, reissued_bytes, stale, unexpected;
    uint64_t inflight_at_restart, inflight_at_reset, aborted;
    uint64_t link[NLINKP];
    uint64_t inj_drop, inj_dup, inj_reorder, sw_retx;
    unsigned rounds, restarts, resets, reset_board;
    double secs, restart_at, reset_at, relink_s, reset_relink_s;
    uint64_t chunk_mib;
    bool ran, data_ok, restart_ok, reset_ok, faults_ok;
    char lost_note[256];
};

struct soak_jp {
    bool ran, raw, up_ok, replay_ok, spoof_ok;
    int failed_stage;                   /* -1 none, else j_stage at the failure */
    unsigned passes, rounds, resets;
    uint64_t joins, joins_multi, assigns, reordered, trips;
    uint64_t replays, rep_ka, rep_data, rep_late;
    uint64_t spoof_ctl, spoof_data, byes_unauth_secret, byes_unauth_plain, flaps;
    uint64_t auth_drops;
    double secs;
    char raw_why[160];
};

/* ---------------------------------------------- defined in dn2-soak.c */
extern bool use_secret;
extern bool keep_tmp, verbose;
uint64_t now_ms(void);
void msleep(unsigned ms);
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vnote(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t rnd(Rng *r);
uint64_t rndn(Rng *r, uint64_t n);
void fill_bytes(uint8_t *p, size_t n, uint64_t seed);
extern jmp_buf phase_env;
extern int diag;
void phase_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hang(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void (*idle_hook)(void);
void idle(void);
bool sw_start(Sw *s, int port);
void sw_stop(Sw *s, int sig);
bool sw_stats(Sw *s, char *out, size_t cap);
int64_t stat_key(const char *text, const char *key);
int free_udp_port(void);
extern Sw *psw;
const char *proc_state(pid_t pid);
void qq(Board *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool q_flush(Board *b, unsigned timeout_ms);
uint64_t rdq(Board *b, uint64_t addr);
void wrq(Board *b, uint64_t addr, uint64_t v);
uint64_t ur_addr(Board *b, int wid, uint32_t off);
uint64_t sr_addr(Board *b, uint32_t off);
uint64_t ur(Board *b, int wid, uint32_t off);
void ur_w(Board *b, int wid, uint32_t off, uint64_t v);
uint64_t sr(Board *b, uint32_t off);
void sr_w(Board *b, uint32_t off, uint64_t v);
void qq_write(Board *b, uint64_t addr, const uint8_t *data, size_t len);
const char *qmp(Board *b, const char *json);
bool qmp_wait_reset(Board *b, unsigned seen_before, unsigned ms);
uint64_t qom(Board *b, const char *prop);
bool qom_try(Board *b, const char *prop, uint64_t *v);
void board_start(Board *b, const char *name, uint64_t memsz, const char *devprops);
void sd_zero(Board *b, uint64_t g, size_t len);
void sd_fill_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed);
int64_t sd_check_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed);
uint64_t sd_compare(Board *d, uint64_t gd, Board *s, uint64_t gs, uint64_t len,
                           int64_t *first);
bool sd_is_zero(Board *b, uint64_t g, uint64_t len, int64_t *first);
void board_dump(Board *b);
bool wait_link(Board *b, unsigned ms);
void board_bringup(Board *b, int pgid0, int pgid1);
unsigned st_take(Board *b, int wid, Rec *out, unsigned max);
uint64_t rec_lower(unsigned otype, uint16_t slid, unsigned swid, uint32_t size);
bool fifo_room(Board *b, int wid, unsigned ms);
void issue(Board *b, int wid, uint64_t upper, uint64_t lower);
extern uint64_t last_rvl_ms;
extern unsigned foreign_records;
extern const char *check_ctx;
uint64_t known_good(Board *by, unsigned op, Board *s, Board *d, uint64_t soff,
                           uint64_t doff, const uint8_t *data, size_t len, const char *what);
void round_trip(Board *s, Board *d, uint64_t soff, uint64_t doff, uint64_t roff,
                       uint64_t loff, size_t len);
void phase_cleanup(void);
extern uint64_t opt_mmio_ops, opt_datagrams, opt_rvs_mib;
extern uint64_t opt_seed;
extern int opt_reset_board;
extern struct soak_p1 P1;
extern unsigned bp_seen;
void phase_mmio(void);
extern struct P2s P2v[2], *P2p;
void phase_hostile(void);
void phase_hostile_secret(void);
extern struct soak_p3 P3;
void phase_rvs(void);
extern struct soak_jp JP;
extern uint64_t opt_join_rounds;
extern unsigned opt_join_spoof_ms;
void phase_join(void);

#endif
