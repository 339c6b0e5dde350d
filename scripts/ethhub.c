/*
 * dn2-ethhub: a learning Ethernet switch for QEMU's "-netdev dgram" NICs,
 * on 127.0.0.1 only.  The guests' second NIC (the TCP baseline network of
 * scripts/cluster.sh --ethernet, docs/mpi.md) sends every frame as one UDP
 * datagram to the hub's port; the hub forwards it to the member that owns
 * the destination MAC (learnt from source addresses), or to every other
 * member for broadcast, multicast and unknown destinations.  Members are
 * fixed on the command line; datagrams from anyone else are dropped.
 *
 *   dn2-ethhub --listen 127.0.0.1:PORT [--ready-file F] --member 127.0.0.1:P ...
 *
 * "--opt=value" is "--opt value"; --help prints the usage; a usage error
 * exits 2.  Built by meson (tools/meson.build) as build/tools/dn2-ethhub.
 * SIGTERM/SIGINT end it; on exit it prints per-member frame counts on
 * stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_MEMBERS 64
#define MAX_MACS 1024

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof(host))
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return -1;
    /* Loopback only (127.0.0.0/8). */
    if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127)
        return -1;
    return 0;
}

/* Is the option word OPT (its name: the first LEN characters) NAME? */
static int is_opt(const char *opt, size_t len, const char *name)
{
    return len == strlen(name) && !strncmp(opt, name, len);
}

static const char usage[] =
    "usage: dn2-ethhub --listen 127.0.0.1:PORT [--ready-file F] --member 127.0.0.1:P ...\n"
    "  a learning Ethernet switch for QEMU dgram NICs on 127.0.0.0/8;\n"
    "  frames from addresses other than the members are dropped\n";

int main(int argc, char **argv)
{
    struct sockaddr_in listen_sa, members[MAX_MEMBERS];
    unsigned long rx[MAX_MEMBERS] = { 0 }, tx[MAX_MEMBERS] = { 0 };
    struct { uint8_t mac[6]; int member; } macs[MAX_MACS];
    int nmembers = 0, nmacs = 0, have_listen = 0;
    const char *ready = NULL;
    static uint8_t frame[70000];

    for (int i = 1; i < argc; i++) {
        /* The option's value: after '=' in the same word, else the next. */
        const char *opt = argv[i], *eq = strchr(opt, '=');
        size_t optlen = eq ? (size_t)(eq - opt) : strlen(opt);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);

        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            printf("%s", usage);
            return 0;
        }
        if (!is_opt(opt, optlen, "--listen") && !is_opt(opt, optlen, "--member")
            && !is_opt(opt, optlen, "--ready-file")) {
            fprintf(stderr, "dn2-ethhub: unknown argument %s (see --help)\n", opt);
            return 2;
        }
        if (!val) {
            fprintf(stderr, "dn2-ethhub: %.*s needs a value (see --help)\n", (int)optlen, opt);
            return 2;
        }
        if (!eq)
            i++;
        if (is_opt(opt, optlen, "--listen")) {
            if (parse_addr(val, &listen_sa)) {
                fprintf(stderr, "dn2-ethhub: --listen wants 127.x.x.x:PORT, not %s\n", val);
                return 2;
            }
            have_listen = 1;
        } else if (is_opt(opt, optlen, "--member")) {
            if (nmembers == MAX_MEMBERS || parse_addr(val, &members[nmembers])) {
                fprintf(stderr, "dn2-ethhub: bad --member %s (127.x.x.x:PORT, at most %d)\n", val, MAX_MEMBERS);
                return 2;
            }
            nmembers++;
        } else {
            ready = val;
        }
    }
    if (!have_listen || nmembers == 0) {
        fprintf(stderr, "dn2-ethhub: --listen and at least one --member are needed (see --help)\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int bufsz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
    if (fd < 0 || bind(fd, (struct sockaddr *)&listen_sa, sizeof(listen_sa))) {
        fprintf(stderr, "dn2-ethhub: bind: %s\n", strerror(errno));
        return 3;
    }
    socklen_t sl = sizeof(listen_sa);
    getsockname(fd, (struct sockaddr *)&listen_sa, &sl);
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (ready) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", ntohs(listen_sa.sin_port)) < 0 || fclose(f) || rename(tmp, ready)) {
            fprintf(stderr, "dn2-ethhub: cannot write %s\n", ready);
            return 3;
        }
    }
    fprintf(stderr, "dn2-ethhub: 127.0.0.1:%d, %d members\n", ntohs(listen_sa.sin_port), nmembers);

    while (!stop) {
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(fd, frame, sizeof(frame), 0, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "dn2-ethhub: recvfrom: %s\n", strerror(errno));
            break;
        }
        int src = -1;
        for (int m = 0; m < nmembers; m++)
            if (members[m].sin_port == from.sin_port && members[m].sin_addr.s_addr == from.sin_addr.s_addr)
                src = m;
        if (src < 0 || n < 14)
            continue;
        rx[src]++;
        /* Learn the source MAC (unicast sources only). */
        const uint8_t *dst = frame, *smac = frame + 6;
        if (!(smac[0] & 1)) {
            int k;
            for (k = 0; k < nmacs; k++)
                if (!memcmp(macs[k].mac, smac, 6))
                    break;
            if (k == nmacs && nmacs < MAX_MACS)
                memcpy(macs[nmacs++].mac, smac, 6);
            if (k < MAX_MACS)
                macs[k].member = src;
        }
        int out = -1;
        if (!(dst[0] & 1))
            for (int k = 0; k < nmacs; k++)
                if (!memcmp(macs[k].mac, dst, 6))
                    out = macs[k].member;
        for (int m = 0; m < nmembers; m++) {
            if (m == src || (out >= 0 && m != out))
                continue;
            if (sendto(fd, frame, (size_t)n, 0, (struct sockaddr *)&members[m], sizeof(members[m])) == n)
                tx[m]++;
        }
    }
    for (int m = 0; m < nmembers; m++)
        fprintf(stderr, "dn2-ethhub: member %d (127.0.0.1:%d): %lu frames in, %lu out\n", m,
                ntohs(members[m].sin_port), rx[m], tx[m]);
    return 0;
}
