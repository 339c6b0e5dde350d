/* SPDX-License-Identifier: MIT */
/*
 * The Wireshark dissector (dimmnet2.lua) against the ABI header.
 *
 *   dn2-wireshark-abi lua         the dissector's field table, generated
 *                                 from include/dimmnet2/dn2_abi.h (the
 *                                 dissector loads it: dimmnet2-abi.lua)
 *   dn2-wireshark-abi pcap FILE   a capture with one DATA datagram per
 *                                 packet type (every OTYPE the board
 *                                 sends, pseudo-random header fields),
 *                                 built with the ABI codecs and the
 *                                 fabric's encoder
 *   dn2-wireshark-abi check FILE  FILE: what tshark + the dissector made
 *                                 of that capture (-T fields, the columns
 *                                 of FIELDS below); compares every field
 *                                 with the C decoder; TAP on stdout
 *                                 (tests/tap/dn2-tap.h)
 *
 * tools/wireshark/test-dissector.sh runs the three (docs/fabric.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dimmnet2/dn2_abi.h"
#include "dn2fab.h"
#include "../../tests/tap/dn2-tap.h"

/* ------------------------------------------------------------------ lua */

#define FIELD(name, F) printf("    %-7s = { %2d, %2d },\n", name, F##_HI, F##_LO)

static void gen_lua(void)
{
    unsigned t;

    printf("-- SPDX-License-Identifier: MIT\n"
           "-- GENERATED from include/dimmnet2/dn2_abi.h by tools/wireshark/"
           "dn2-wireshark-abi.c\n"
           "-- (dn2-wireshark-abi lua > tools/wireshark/dimmnet2-abi.lua); do not edit:\n"
           "-- the test 'wireshark' fails when this copy differs from the header.\n"
           "-- Fields are { hi, lo } bit ranges of a 64-bit header line.\n"
           "return {\n");
    printf("  line = %u,\n  pkt_max = %u,\n", DN2_LINE, DN2_PKT_MAX);
    printf("  h0 = {\n");
    FIELD("size", DN2_H0_SIZE);
    FIELD("type", DN2_H0_TYPE);
    FIELD("dtype", DN2_H0_DTYPE);
    FIELD("pgid", DN2_H0_PGID);
    FIELD("dwid", DN2_H0_DWID);
    FIELD("swid", DN2_H0_SWID);
    FIELD("dlid", DN2_H0_DLID);
    FIELD("iter", DN2_H0_ITER);
    FIELD("rflag", DN2_H0_RFLAG);
    FIELD("eflag", DN2_H0_EFLAG);
    FIELD("hflag", DN2_H0_HFLAG);
    FIELD("lflag", DN2_H0_LFLAG);
    FIELD("pflag", DN2_H0_PFLAG);
    printf("  },\n  h1 = {\n");
    FIELD("lo", DN2_H1_LO);
    FIELD("hi", DN2_H1_HI);
    printf("  },\n  h2 = {\n");
    FIELD("total", DN2_H2_TOTAL);
    FIELD("stride", DN2_H2_STRIDE);
    printf("  },\n  ex = {\n");
    FIELD("otype", DN2_EX_OTYPE);
    FIELD("dtype", DN2_EX_DTYPE);
    FIELD("iter", DN2_EX_ITER);
    FIELD("arg", DN2_EX_ARG);
    printf("  },\n  -- OTYPE -> name (Table 4.13)\n  otypes = {\n");
    for (t = 0; t <= DN2_OTYPE_MASK; t++) {
        if (t == DN2_OP_NOP || dn2_otype_valid(t)) {
            printf("    [0x%02x] = \"%s\",\n", t, dn2_otype_name(t));
        }
    }
    printf("  },\n  -- OTYPE -> name -> value, for the dissector's per-TYPE labels\n"
           "  op = {\n");
    for (t = 0; t <= DN2_OTYPE_MASK; t++) {
        if (dn2_otype_valid(t)) {
            printf("    %s = 0x%02x,\n", dn2_otype_name(t), t);
        }
    }
    printf("  },\n  -- header lines of a packet of each TYPE\n  hdr_lines = {\n");
    for (t = 0; t <= DN2_OTYPE_MASK; t++) {
        printf("    [0x%02x] = %u,\n", t, dn2_hdr_lines(t));
    }
    printf("  },\n  -- TYPEs of the message class (IPUSH, LHSv1, LHSv2)\n  msg = {\n");
    for (t = 0; t <= DN2_OTYPE_MASK; t++) {
        if (dn2_otype_valid(t) && dn2_otype_is_msg(t)) {
            printf("    [0x%02x] = true,\n", t);
        }
    }
    printf("  },\n  -- DTYPE -> element bytes (Table 4.5)\n  dtype_bytes = {\n");
    for (t = 0; t <= DN2_DTYPE_MASK; t++) {
        printf("    [%u] = %u,\n", t, dn2_dtype_bytes(t));
    }
    printf("  },\n}\n");
}

/* ---------------------------------------------------------- the packets */

/* The packet types a board puts on the wire (BOTF images are RVS, etc.). */
static const unsigned wire_types[] = {
    DN2_OP_RVL, DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI,
    DN2_OP_IPUSH, DN2_OP_LHSV1, DN2_OP_LHSV2,
};
#define NTYPES (sizeof(wire_types) / sizeof(wire_types[0]))
#define ROUNDS 4                /* packets per type */
#define NPKT   (NTYPES * ROUNDS)
#define DATA_BYTES 24           /* payload after the header (none for RVL) */

/* splitmix64, fixed seed: the check regenerates the same packets. */
static uint64_t rng;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Packet i: every header field pseudo-random within its width. */
static size_t make_packet(unsigned i, struct dn2_hdr *h, uint8_t *pkt)
{
    uint64_t line[DN2_HDR_LINES_MAX];
    unsigned n, k;
    size_t len;

    memset(h, 0, sizeof(*h));
    h->type = (uint8_t)wire_types[i % NTYPES];
    n = dn2_hdr_lines(h->type);
    len = n * DN2_LINE + (dn2_otype_is_rvl(h->type) ? 0 : DATA_BYTES);
    h->size = dn2_pkt_size_field((uint32_t)len);
    h->dtype = (uint8_t)DN2_FGET(rnd(), DN2_H0_DTYPE);
    h->pgid = (uint8_t)DN2_FGET(rnd(), DN2_H0_PGID);
    h->dwid = (uint8_t)DN2_FGET(rnd(), DN2_H0_DWID);
    h->swid = (uint8_t)DN2_FGET(rnd(), DN2_H0_SWID);
    h->dlid = dn2_clid_to_lid(1 + (uint16_t)(rnd() % (DN2_CLID_MCAST_FIRST - 1)));
    h->iter = (uint8_t)DN2_FGET(rnd(), DN2_H0_ITER);
    h->rflag = (uint8_t)DN2_FGET(rnd(), DN2_H0_RFLAG);
    h->eflag = (uint8_t)DN2_FGET(rnd(), DN2_H0_EFLAG);
    h->hflag = n > DN2_HDR_LINES_SHORT;
    h->lflag = (uint8_t)DN2_FGET(rnd(), DN2_H0_LFLAG);
    h->pflag = (uint8_t)DN2_FGET(rnd(), DN2_H0_PFLAG);
    h->w1_lo = (uint32_t)rnd();
    h->w1_hi = (uint32_t)rnd();
    if (n >= DN2_HDR_LINES_LONG) {
        h->total = (uint32_t)rnd();
        h->stride = (uint32_t)rnd();
    }
    if (n >= DN2_HDR_LINES_RVL) {
        struct dn2_cmd_ex x = {
            .otype = (uint8_t)(DN2_OP_VS | (rnd() % (DN2_FORM_LIST + 1))),
            .dtype = (uint8_t)(rnd() & DN2_DTYPE_MASK),
            .iter = (uint8_t)rnd(),
            .arg = (uint32_t)rnd(),
        };
        h->ex = dn2_ex_pack(&x);
    }
    dn2_hdr_pack(h, line);
    for (k = 0; k < n; k++) {
        memcpy(pkt + k * DN2_LINE, &line[k], DN2_LINE);     /* little-endian host */
    }
    for (k = n * DN2_LINE; k < len; k++) {
        pkt[k] = (uint8_t)(i + k);
    }
    return len;
}

/* ---------------------------------------------------------------- pcap */

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    unsigned i;

    for (i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* A classic pcap file of LINKTYPE_USER0 records, each the switch's 16-byte
 * capture header (docs/fabric.md "pcap records": version 1, event 1 =
 * forwarded) and one datagram; every third packet's record carries a
 * virtual time, every third one is a board's event 7 ("delivered to the
 * board": the bare packet, no datagram); then a VT_REPORT and a VT_GRANT. */
enum { PCAP_LINKTYPE_USER0 = 147, CAP_HDR = 16, CAP_EV_FWD = 1, CAP_EV_DELIVERED = 7 };

static void put_cap(FILE *f, unsigned i, unsigned ev, uint16_t in, uint16_t out,
                    const uint8_t *buf, size_t len)
{
    uint8_t rec[16 + CAP_HDR];

    memset(rec, 0, sizeof(rec));
    put_le(rec, 1700000000u + i, 4);
    put_le(rec + 8, CAP_HDR + len, 4);
    put_le(rec + 12, CAP_HDR + len, 4);
    rec[16] = 1;
    rec[17] = (uint8_t)ev;
    put_le(rec + 20, in, 2);
    put_le(rec + 22, out, 2);
    put_le(rec + 28, len, 4);
    fwrite(rec, sizeof(rec), 1, f);
    fwrite(buf, len, 1, f);
}

static int gen_pcap(const char *path)
{
    static uint8_t dg[8192];
    uint8_t fh[24] = { 0 };
    FILE *f = fopen(path, "wb");
    unsigned i;

    if (!f) {
        fprintf(stderr, "dn2-wireshark-abi: %s: %s\n", path, strerror(errno));
        return 1;
    }
    put_le(fh, 0xa1b2c3d4u, 4);
    put_le(fh + 4, 2, 2);
    put_le(fh + 6, 4, 2);
    put_le(fh + 16, 262144, 4);
    put_le(fh + 20, PCAP_LINKTYPE_USER0, 4);
    fwrite(fh, sizeof(fh), 1, f);
    for (i = 0; i < NPKT; i++) {
        uint8_t pkt[DN2_HDR_LINES_MAX * DN2_LINE + DATA_BYTES];
        struct dn2f_wbuf b;
        struct dn2_hdr h;
        size_t plen = make_packet(i, &h, pkt), len;

        if (i % 3 == 2) {
            put_cap(f, i, CAP_EV_DELIVERED, 0x0001, h.dlid, pkt, plen);
            continue;
        }
        dn2f_wbuf_init(&b, dg, sizeof(dg));
        dn2f_put_hdr(&b, DN2F_T_DATA, 0, 0x0001, h.dlid, 1, 2);
        if (i % 3 == 1) {
            struct dn2f_rec r = {
                .kind = DN2F_REC_UNICAST, .seq = i, .len = (uint16_t)plen, .pkt = pkt,
                .rflags = (uint8_t)(DN2F_RF_VT | dn2f_lane_rflags(dn2f_pkt_lane(pkt))),
                .vtime = 1000000ULL * i + 1, .vseq = i,
            };
            dn2f_put_record(&b, &r, NULL);
        } else if (dn2_otype_is_rvl(h.type)) {
            dn2f_put_req(&b, 0, i, 0, pkt, plen);
        } else {
            dn2f_put_rec(&b, DN2F_REC_UNICAST, 0, i, 0, 0, NULL, NULL, NULL, pkt, plen);
        }
        len = dn2f_finish(&b);
        if (!len) {
            fprintf(stderr, "dn2-wireshark-abi: datagram %u did not fit\n", i);
            fclose(f);
            return 1;
        }
        put_cap(f, i, CAP_EV_FWD, 0x0001, h.dlid, dg, len);
    }
    {
        struct dn2f_wbuf b;
        struct dn2f_vt_report r = { .rseq = 3, .now = 5000, .earliest = 7000 };
        struct dn2f_vt_grant g = { .rseq = 3, .horizon = 9000, .lookahead_ns = 1000,
                                   .quantum_ns = 0, .slowest = 5000 };
        dn2f_wbuf_init(&b, dg, sizeof(dg));
        dn2f_put_hdr(&b, DN2F_T_VT_REPORT, 0, 0x0001, 0, 1, 2);
        dn2f_put_vt_report(&b, &r);
        put_cap(f, NPKT, 3, 0x0001, 0, dg, dn2f_finish(&b));
        dn2f_wbuf_init(&b, dg, sizeof(dg));
        dn2f_put_hdr(&b, DN2F_T_VT_GRANT, 0, 0, 0x0001, 2, 1);
        dn2f_put_vt_grant(&b, &g);
        put_cap(f, NPKT + 1, 4, 0, 0x0001, dg, dn2f_finish(&b));
    }
    if (fclose(f)) {
        fprintf(stderr, "dn2-wireshark-abi: %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* --------------------------------------------------------------- check */

/* The tshark columns (-T fields -E separator=, -e ...), in this order. */
#define FIELDS "dn2.size dn2.type dn2.dtype dn2.pgid dn2.dwid dn2.swid dn2.dlid dn2.iter " \
               "dn2.rflag dn2.eflag dn2.hflag dn2.lflag dn2.pflag dn2.dw2.lo dn2.dw2.hi "  \
               "dn2.dw3.total dn2.dw3.stride dn2.ex.otype dn2.ex.dtype dn2.ex.iter dn2.ex.arg"
#define NFIELDS 21

static const char *field_name(unsigned k, char *buf, size_t n)
{
    const char *p = FIELDS;
    unsigned i;
    size_t l;

    for (i = 0; i < k; i++) {
        p = strchr(p, ' ') + 1;
    }
    l = strcspn(p, " ");
    snprintf(buf, n, "%.*s", (int)(l < n ? l : n - 1), p);
    return buf;
}

/* What the C decoder says each column must hold ("" where the packet has
 * no such line). */
static void expected(const struct dn2_hdr *h, int have[NFIELDS], uint64_t want[NFIELDS])
{
    unsigned n = dn2_hdr_lines(h->type), k;
    struct dn2_cmd_ex x;
    const uint64_t v[NFIELDS] = {
        h->size, h->type, h->dtype, h->pgid, h->dwid, h->swid, h->dlid, h->iter,
        h->rflag, h->eflag, h->hflag, h->lflag, h->pflag, h->w1_lo, h->w1_hi,
        h->total, h->stride, 0, 0, 0, 0,
    };

    dn2_ex_unpack(h->ex, &x);
    for (k = 0; k < NFIELDS; k++) {
        want[k] = v[k];
        have[k] = k < 15 || (k < 17 ? n >= DN2_HDR_LINES_LONG : n >= DN2_HDR_LINES_RVL);
    }
    want[17] = x.otype;
    want[18] = x.dtype;
    want[19] = x.iter;
    want[20] = x.arg;
}

static int check(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[2048], name[32];
    unsigned i = 0;

    if (!f) {
        tap_plan(1);
        tap_result(false, "%s: %s", path, strerror(errno));
        return tap_exit_code();
    }
    while (fgets(line, sizeof(line), f) && i < NPKT) {
        uint8_t pkt[DN2_HDR_LINES_MAX * DN2_LINE + DATA_BYTES];
        uint64_t want[NFIELDS];
        int have[NFIELDS];
        struct dn2_hdr h;
        char *p = line;
        unsigned k, wrong = 0;

        make_packet(i, &h, pkt);
        expected(&h, have, want);
        line[strcspn(line, "\r\n")] = 0;
        for (k = 0; k < NFIELDS; k++) {
            size_t l = strcspn(p, ",");
            char col[64], *end;
            uint64_t got;

            snprintf(col, sizeof(col), "%.*s", (int)(l < sizeof(col) ? l : sizeof(col) - 1), p);
            p += l + (p[l] == ',');
            if (!have[k]) {
                if (col[0]) {
                    tap_diag("packet %u (%s): %s = '%s', but the packet has no such line",
                             i, dn2_otype_name(h.type), field_name(k, name, sizeof(name)), col);
                    wrong++;
                }
                continue;
            }
            errno = 0;
            got = strtoull(col, &end, 0);
            if (!col[0] || *end || errno || got != want[k]) {
                tap_diag("packet %u (%s): %s: dissector '%s', C decoder %" PRIu64
                         " (0x%" PRIx64 ")", i, dn2_otype_name(h.type),
                         field_name(k, name, sizeof(name)), col, want[k], want[k]);
                wrong++;
            }
        }
        tap_result(!wrong, "%s packet %u: the dissector's %u fields = the C decoder's",
                   dn2_otype_name(h.type), i, NFIELDS);
        i++;
    }
    fclose(f);
    tap_result(i == NPKT, "tshark decoded all %u packets of the capture (got %u)",
               (unsigned)NPKT, i);
    tap_plan(tap_count());
    return tap_exit_code();
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "lua")) {
        gen_lua();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "fields")) {
        puts(FIELDS);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "pcap")) {
        return gen_pcap(argv[2]);
    }
    if (argc == 3 && !strcmp(argv[1], "check")) {
        return check(argv[2]);
    }
    fprintf(stderr, "usage: dn2-wireshark-abi lua | fields | pcap FILE | check FILE\n");
    return 2;
}
