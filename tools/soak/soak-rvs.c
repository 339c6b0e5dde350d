/* SPDX-License-Identifier: MIT */
/*
 * Phase 3 of dn2-soak (tools/soak/dn2-soak.c, which documents every
 * phase): RVS across 4 boards through a faulty switch.
 */
#define _GNU_SOURCE 1
#include "soak.h"


/* ================================================================== */
/* Phase 3: RVS across 4 boards through a faulty switch                */
/* ================================================================== */

#define NB3         4

#define CHUNK       (1 * MiB)   /* one RVS request */

#define RX_BASE     (64 * MiB)  /* receive slots: RX_BASE + slot * 64 MiB */

#define MAXQ        8           /* requests in flight per sender */

enum { X_PLANNED, X_ISSUED, X_DONE, X_ABORTED };

typedef struct Xfer {
    uint8_t s, d, state, gen;
    uint32_t soff, doff, len;
} Xfer;

struct soak_p3 P3;

static Xfer *xf;

static size_t nxf, capxf;

static size_t xf_add(uint8_t s, uint8_t d, uint32_t soff, uint32_t doff, uint32_t len,
                     uint8_t gen)
{
    if (nxf == capxf) {
        capxf = capxf ? 2 * capxf : 1024;
        xf = realloc(xf, capxf * sizeof(*xf));
        if (!xf) {
            die("out of memory");
        }
    }
    xf[nxf] = (Xfer){ .s = s, .d = d, .state = X_PLANNED, .gen = gen, .soff = soff,
                      .doff = doff, .len = len };
    return nxf++;
}


/* The receive slot of sender s at board d. */
static uint32_t rx_slot(int d, int s)
{
    return (uint32_t)(RX_BASE + (uint64_t)(s < d ? s : s - 1) * 64 * MiB);
}

static uint64_t round_seed(unsigned round, int b)
{
    return opt_seed * 0x9e3779b97f4a7c15ull + round * 0x1000 + (uint64_t)b + 1;
}


/* Sender queues: indices into xf[], issued in order. */
typedef struct SQ {
    size_t *q;
    size_t head, n, cap;
    unsigned out;               /* requests in flight */
} SQ;

static void sq_push(SQ *q, size_t i, bool front)
{
    if (q->n == q->cap) {
        size_t *nq;
        q->cap = q->cap ? 2 * q->cap : 256;
        nq = malloc(q->cap * sizeof(*nq));
        if (!nq) {
            die("out of memory");
        }
        for (size_t k = 0; k < q->n; k++) {
            nq[k] = q->q[(q->head + k) % (q->cap / 2 ? q->cap / 2 : 1)];
        }
        free(q->q);
        q->q = nq;
        q->head = 0;
    }
    if (front) {
        q->head = (q->head + q->cap - 1) % q->cap;
        q->q[q->head] = i;
    } else {
        q->q[(q->head + q->n) % q->cap] = i;
    }
    q->n++;
}

static size_t sq_pop(SQ *q)
{
    size_t i = q->q[q->head];

    q->head = (q->head + 1) % q->cap;
    q->n--;
    return i;
}

static void xfer_verify(Board **bs, Xfer *x, const char *when)
{
    int64_t first;
    uint64_t bad = sd_compare(bs[x->d], x->doff, bs[x->s], x->soff, x->len, &first);

    if (bad) {
        phase_fail("%s: transfer %s->%s (SO-DIMM 0x%x -> 0x%x, %u bytes, generation %u): %"
                   PRIu64 " bytes wrong, the first at +0x%" PRIx64, when, bs[x->s]->name,
                   bs[x->d]->name, x->soff, x->doff, x->len, x->gen, bad, (uint64_t)first);
    }
}


/* An aborted transfer is issued again as two halves: their records (size
 * len/2) cannot be taken for the old request's (size len). */
static void reissue(SQ *sq, size_t i)
{
    Xfer x = xf[i];
    uint32_t h = x.len / 2;

    xf[i].state = X_ABORTED;
    sq_push(&sq[x.s], xf_add(x.s, x.d, x.soff + h, x.doff + h, x.len - h, x.gen + 1), true);
    sq_push(&sq[x.s], xf_add(x.s, x.d, x.soff, x.doff, h, x.gen + 1), true);
    P3.reissued++;
    P3.reissued_bytes += x.len;
}

static void link_totals(Board **bs, uint64_t *tot)
{
    unsigned i, k;

    for (k = 0; k < NLINKP; k++) {
        tot[k] = 0;
    }
    for (i = 0; i < NB3; i++) {
        for (k = 0; k < NLINKP; k++) {
            tot[k] += qom(bs[i], link_props[k]);
        }
    }
}

static void sw_fault_totals(Sw *sw)
{
    char st[4096];

    if (sw_stats(sw, st, sizeof(st))) {
        P3.inj_drop += (uint64_t)stat_key(st, "injected_drop");
        P3.inj_dup += (uint64_t)stat_key(st, "injected_dup");
        P3.inj_reorder += (uint64_t)stat_key(st, "injected_reorder");
    }
}

void phase_rvs(void)
{
    static Sw sw;
    static Board b4[NB3];
    static SQ sq[NB3];
    static char seedarg[32];
    Board *bs[NB3];
    char props[256];
    uint16_t lids[NB3];
    uint64_t per_pair, total, t0, last_progress, perround;
    unsigned nrounds, round, i, R = (unsigned)opt_reset_board;
    bool restarted = false, was_reset = false;
    static Rec recs[256];

    P3.ran = true;
    P3.reset_board = R;
    memset(&sw, 0, sizeof(sw));
    nxf = 0;
    per_pair = opt_rvs_mib / 24;
    per_pair = per_pair < 1 ? 1 : per_pair > 32 ? 32 : per_pair;
    per_pair *= MiB;
    perround = 12 * per_pair;
    nrounds = (unsigned)((opt_rvs_mib * MiB + perround - 1) / perround);
    total = nrounds * perround;
    P3.planned = total;
    snprintf(seedarg, sizeof(seedarg), "%" PRIu64, (opt_seed & 0xffffffff) + 1);
    sw.args[sw.nargs++] = "--drop";
    sw.args[sw.nargs++] = "0.07";
    sw.args[sw.nargs++] = "--dup";
    sw.args[sw.nargs++] = "0.07";
    sw.args[sw.nargs++] = "--reorder";
    sw.args[sw.nargs++] = "0.06";
    sw.args[sw.nargs++] = "--seed";
    sw.args[sw.nargs++] = seedarg;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    for (i = 0; i < NB3; i++) {
        char nm[2] = { (char)('A' + i), 0 };
        bs[i] = &b4[i];
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0x%x%s", sw.port, 0xd1 + i,
                 i == 1 ? ",rx-thread=on" : "");
        board_start(bs[i], nm, 512 * MiB, props);
    }
    for (i = 0; i < NB3; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
        lids[i] = bs[i]->lid;
        memset(&sq[i], 0, sizeof(sq[i]));
    }
    note("rvs: 4 boards (LIDs 0x%x 0x%x 0x%x 0x%x; B with rx-thread) on dn2-switch port %d "
         "with --drop 0.07 --dup 0.07 --reorder 0.06 (20 %%); %u rounds of 12 x %" PRIu64
         " MiB in 1 MiB RVS requests = %" PRIu64 " MiB; switch restart at 40 %%, system_reset "
         "of board %c at 75 %%", lids[0], lids[1], lids[2], lids[3], sw.port, nrounds,
         per_pair / MiB, total / MiB, 'A' + R);
    t0 = qb_now_ns();
    last_progress = now_ms();
    for (round = 0; round < nrounds; round++) {
        size_t first_x = nxf, k;
        uint64_t rt0 = qb_now_ns(), left;
        int s, d;

        for (s = 0; s < NB3; s++) {
            sd_fill_pattern(bs[s], 0, per_pair, round_seed(round, s));
        }
        for (k = 0; k < per_pair / CHUNK; k++) {
            for (s = 0; s < NB3; s++) {
                for (d = 1; d < NB3; d++) {
                    int dd = (s + d) % NB3;
                    sq_push(&sq[s], xf_add((uint8_t)s, (uint8_t)dd, (uint32_t)(k * CHUNK),
                                           rx_slot(dd, s) + (uint32_t)(k * CHUNK), CHUNK, 0),
                            false);
                }
            }
        }
        for (;;) {
            bool progress = false;

            /* issue */
            for (s = 0; s < NB3; s++) {
                while (sq[s].n && sq[s].out < MAXQ && fifo_room(bs[s], 0, 0)) {
                    size_t xi = sq_pop(&sq[s]);
                    Xfer *x = &xf[xi];
                    issue(bs[s], 0, dn2_req_upper(x->soff, x->doff),
                          dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(bs[x->d]->lid), 0, 1,
                                        x->len));
                    x->state = X_ISSUED;
                    sq[s].out++;
                    P3.transfers++;
                }
            }
            /* completions */
            for (d = 0; d < NB3; d++) {
                unsigned n = st_take(bs[d], 0, recs, 256), j;
                for (j = 0; j < n; j++) {
                    uint16_t clid = (uint16_t)DN2_FGET(recs[j].lower, DN2_ST_CLID);
                    uint32_t size = (uint32_t)DN2_FGET(recs[j].lower, DN2_ST_SIZE);
                    uint32_t at = (uint32_t)recs[j].upper;
                    Xfer *hit = NULL, *stale = NULL;
                    for (k = first_x; k < nxf; k++) {
                        Xfer *x = &xf[k];
                        if (x->d != d || x->doff != at || x->len != size ||
                            dn2_lid_to_clid(bs[x->s]->lid) != clid) {
                            continue;
                        }
                        if (x->state == X_ISSUED) {
                            hit = x;
                            break;
                        }
                        if (x->state == X_ABORTED) {
                            stale = x;
                        }
                    }
                    if (hit && recs[j].lower == rec_lower(DN2_OP_RVS, bs[hit->s]->lid, 0, size)) {
                        xfer_verify(bs, hit, "on its status record");
                        hit->state = X_DONE;
                        sq[hit->s].out--;
                        P3.moved += hit->len;
                        progress = true;
                    } else if (stale) {
                        P3.stale++;
                    } else {
                        P3.unexpected++;
                        note("rvs: board %s: unexpected status record 0x%016" PRIx64 " 0x%"
                             PRIx64, bs[d]->name, recs[j].lower, recs[j].upper);
                    }
                }
            }
            /* the switch restart and the system reset */
            if (!restarted && P3.moved >= total * 2 / 5) {
                int port = sw.port, tries;
                uint64_t tr = qb_now_ns();
                restarted = true;
                for (s = 0; s < NB3; s++) {
                    P3.inflight_at_restart += sq[s].out;
                }
                sw_fault_totals(&sw);
                sw_stop(&sw, SIGKILL);
                P3.restart_at = (double)P3.moved / total;
                note("rvs: dn2-switch killed (SIGKILL) at %.0f %% with %" PRIu64 " requests in "
                     "flight; restarting it on port %d", 100 * P3.restart_at,
                     P3.inflight_at_restart, port);
                msleep(300);
                for (tries = 0; tries < 20 && !sw_start(&sw, port); tries++) {
                    msleep(250);
                }
                if (!sw.pid) {
                    phase_fail("dn2-switch did not restart on port %d", port);
                }
                P3.restarts++;
                for (s = 0; s < NB3; s++) {
                    if (!wait_link(bs[s], T_LINK)) {
                        hang("board %s: link not back within %u ms of the switch restart",
                             bs[s]->name, T_LINK);
                    }
                    if (bs[s]->lid != lids[s]) {
                        phase_fail("board %s came back with LID 0x%x, not 0x%x", bs[s]->name,
                                   bs[s]->lid, lids[s]);
                    }
                }
                P3.relink_s = (qb_now_ns() - tr) / 1e9;
                note("rvs: all links back %.2f s after the kill", P3.relink_s);
                last_progress = now_ms();
            }
            if (!was_reset && P3.moved >= total * 3 / 4) {
                Board *b = bs[R];
                const char *r;
                uint64_t tr = qb_now_ns();
                unsigned ab = 0;
                was_reset = true;
                P3.inflight_at_reset = 0;
                for (k = first_x; k < nxf; k++) {
                    if (xf[k].state == X_ISSUED && (xf[k].s == R || xf[k].d == R)) {
                        P3.inflight_at_reset++;
                    }
                }
                P3.reset_at = (double)P3.moved / total;
                note("rvs: QMP system_reset of board %s at %.0f %% (%" PRIu64 " of its "
                     "transfers in flight)", b->name, 100 * P3.reset_at, P3.inflight_at_reset);
                {
                    unsigned ev = b->m.reset_events;
                    r = qmp(b, "{\"execute\":\"system_reset\"}");
                    if (!r || !strstr(r, "\"return\"")) {
                        phase_fail("board %s: system_reset: %s", b->name, r ? r : "no answer");
                    }
                    if (!qmp_wait_reset(b, ev, T_CMD)) {
                        hang("board %s: no RESET event within %u ms of system_reset", b->name,
                             T_CMD);
                    }
                    vnote("rvs: board %s after the RESET event: SMA 0x%" PRIx64 ", Controller "
                          "Status 0x%" PRIx64, b->name, sr(b, DN2_SR_SMA),
                          ur(b, 0, DN2_UR_CTL_STATUS));
                }
                b->sysresets++;
                P3.resets++;
                /* what the reset aborted: in flight from or to the board */
                for (k = first_x; k < nxf; k++) {
                    if (xf[k].state == X_ISSUED && (xf[k].s == R || xf[k].d == R)) {
                        sq[xf[k].s].out--;
                        reissue(sq, k);
                        ab++;
                    }
                }
                P3.aborted += ab;
                /* the board comes up again as after a reboot */
                board_bringup(b, PG, PG);
                if (!wait_link(b, 2 * T_LINK)) {
                    hang("board %s: link not ready %u ms after system_reset and bring-up "
                         "(known defect on main: a guest reset leaves a fabric board's link "
                         "down)", b->name, 2 * T_LINK);
                }
                if (b->lid != lids[R]) {
                    phase_fail("board %s came back from system_reset with LID 0x%x, not 0x%x",
                               b->name, b->lid, lids[R]);
                }
                sd_fill_pattern(b, 0, per_pair, round_seed(round, (int)R));
                /* its SO-DIMM contents: what had arrived before the reset */
                for (k = first_x; k < nxf; k++) {
                    int64_t f1;
                    if (xf[k].state == X_DONE && xf[k].d == R &&
                        sd_compare(b, xf[k].doff, bs[xf[k].s], xf[k].soff, xf[k].len, &f1)) {
                        snprintf(P3.lost_note, sizeof(P3.lost_note), "SO-DIMM data received "
                                 "before the reset changed by it (re-issued)");
                        reissue(sq, k);
                    }
                }
                P3.reset_relink_s = (qb_now_ns() - tr) / 1e9;
                note("rvs: board %s up again (link, LID 0x%x, bring-up) %.2f s after the reset; "
                     "%u aborted transfers re-issued as halves", b->name, b->lid,
                     P3.reset_relink_s, ab);
                last_progress = now_ms();
            }
            /* done with the round? */
            left = 0;
            for (k = first_x; k < nxf; k++) {
                left += xf[k].state == X_PLANNED || xf[k].state == X_ISSUED;
            }
            if (!left) {
                break;
            }
            P3.secs = (qb_now_ns() - t0) / 1e9;
            if (progress) {
                last_progress = now_ms();
            } else {
                if (now_ms() - last_progress > T_PROGRESS) {
                    unsigned shown = 0;
                    for (k = first_x; k < nxf && shown < 8; k++) {
                        if (xf[k].state == X_ISSUED) {
                            note("  in flight: %s->%s SO-DIMM 0x%x -> 0x%x, %u bytes (gen %u)",
                                 bs[xf[k].s]->name, bs[xf[k].d]->name, xf[k].soff, xf[k].doff,
                                 xf[k].len, xf[k].gen);
                            shown++;
                        }
                    }
                    hang("rvs round %u: no transfer completed for %u ms (%" PRIu64 " of %"
                         PRIu64 " transfers left in the round)", round + 1, T_PROGRESS, left,
                         (uint64_t)(nxf - first_x));
                }
                usleep(300);
            }
        }
        /* the round: every byte again, and the sources as written */
        for (k = first_x; k < nxf; k++) {
            if (xf[k].state == X_DONE) {
                xfer_verify(bs, &xf[k], "at the end of the round");
                P3.verified += xf[k].len;
            }
        }
        for (s = 0; s < NB3; s++) {
            int64_t f1 = sd_check_pattern(bs[s], 0, per_pair, round_seed(round, s));
            if (f1 >= 0) {
                phase_fail("board %s: its source region changed at SO-DIMM 0x%" PRIx64,
                           bs[s]->name, (uint64_t)f1);
            }
        }
        P3.rounds++;
        note("rvs: round %u: %" PRIu64 " MiB verified in %.1f s (%.0f MB/s); %" PRIu64
             " MiB moved in all", round + 1, perround / MiB, (qb_now_ns() - rt0) / 1e9,
             perround / ((qb_now_ns() - rt0) / 1e3), P3.moved / MiB);
    }
    P3.secs = (qb_now_ns() - t0) / 1e9;
    for (i = 0; i < NB3; i++) {
        if (!wait_link(bs[i], T_LINK) || bs[i]->lid != lids[i]) {
            phase_fail("board %s: link or LID wrong at the end (LID 0x%x, was 0x%x)",
                       bs[i]->name, bs[i]->lid, lids[i]);
        }
    }
    link_totals(bs, P3.link);
    sw_fault_totals(&sw);
    P3.data_ok = P3.unexpected == 0 && P3.verified >= total;
    P3.restart_ok = restarted && P3.data_ok;
    P3.reset_ok = was_reset && P3.data_ok;
    P3.faults_ok = P3.inj_drop && P3.inj_dup && P3.inj_reorder && P3.link[0] && P3.link[3];
    note("rvs: %" PRIu64 " MiB moved (%" PRIu64 " transfers, %" PRIu64 " re-issued as halves, %"
         PRIu64 " stale records of aborted ones), %" PRIu64 " MiB verified in %.1f s (%.0f MB/s)",
         P3.moved / MiB, P3.transfers, P3.reissued, P3.stale, P3.verified / MiB, P3.secs,
         P3.moved / (P3.secs * 1e6));
    note("rvs: boards' link counters (sum of 4): retransmits=%" PRIu64 " timeouts=%" PRIu64
         " fast-retransmits=%" PRIu64 " duplicates=%" PRIu64 " drops=%" PRIu64 " busy=%" PRIu64
         " datagrams tx=%" PRIu64 " rx=%" PRIu64, P3.link[0], P3.link[1], P3.link[2],
         P3.link[3], P3.link[4], P3.link[5], P3.link[6], P3.link[7]);
    note("rvs: the switch injected drop=%" PRIu64 " dup=%" PRIu64 " reorder=%" PRIu64
         " (both incarnations)", P3.inj_drop, P3.inj_dup, P3.inj_reorder);
    if (P3.lost_note[0]) {
        note("rvs: note: %s", P3.lost_note);
    }
    for (i = 0; i < NB3; i++) {
        free(sq[i].q);
        memset(&sq[i], 0, sizeof(sq[i]));
    }
}
