/* SPDX-License-Identifier: MIT */
/*
 * dn2fab same-host sync domain: lock-step virtual time through shared
 * memory (docs/virtual-time.md, "Same-host synchronisation through shared
 * memory"; the API in dn2fab-shm.h).
 *
 * Layout of the file: the header (magic, version, sizes, L, Q, the lock),
 * then `members` slots, then `members` rings of `ring_entries` entries.
 * Every write to a slot's promise or grant, and every post to a ring, is
 * made under the header's robust process-shared mutex, so that the grants
 * are computed from one consistent table and a packet lowers its
 * receiver's promise in the same instant it enters the ring.  A ring's
 * consumer takes entries without the lock.  Sleeps are FUTEX_WAIT on the
 * member's own `wake` word; whoever wants it to look again (its grant
 * rose, room in a ring it waits for, a sender waiting for room in its
 * ring, a member died) bumps the word and FUTEX_WAKEs it if it sleeps.
 *
 * Nothing read from the file is trusted: a peer may be buggy.  Sizes are
 * checked at attach, every index and length before use.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dn2fab-shm.h"

enum { SLOT_FREE = 0, SLOT_ACTIVE = 1, SLOT_LEFT = 2, SLOT_DEAD = 3 };

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define BROKEN_LOCK    0xffffffffu     /* the lock's owner died: member unknown */

struct shm_hdr {
    char magic[8];
    uint32_t version;
    uint32_t hdr_size;
    uint32_t slot_size;
    uint32_t entry_size;
    uint32_t mutex_size;
    uint32_t members;
    uint32_t expected;
    uint32_t ring_entries;
    uint64_t lookahead_ns;
    uint64_t quantum_ns;
    uint64_t total_size;
    uint32_t broken;            /* 0, dead member + 1, or BROKEN_LOCK (atomic) */
    uint32_t started;           /* under the lock: `expected` members attached once */
    uint32_t active;            /* under the lock */
    uint32_t pad;
    pthread_mutex_t lock;
};

struct shm_slot {
    uint32_t state;             /* SLOT_* (atomic) */
    int32_t pid;
    uint64_t starttime;         /* /proc/PID/stat field 22: pid reuse */
    uint16_t lid;
    uint16_t pad0;
    uint32_t sleeping;          /* 1 while in FUTEX_WAIT (atomic) */
    uint64_t now;               /* the rest atomic, written under the lock */
    uint64_t earliest;
    uint64_t lowered;           /* least vtime posted to its ring since its publish */
    uint64_t grant;
    uint32_t wake;              /* futex word */
    uint32_t head;              /* ring: next to take (the member, no lock) */
    uint32_t tail;              /* ring: next to fill (senders, under the lock) */
    uint32_t pad1;
    uint64_t space_waiters;     /* bit k: member k waits for room in this ring */
};

struct shm_entry {
    uint64_t vtime;
    uint32_t vseq;
    uint16_t src;
    uint16_t slid;
    uint16_t len;
    uint16_t pad[3];
    uint8_t data[DN2F_PKT_MAX];
};

struct dn2f_shm {
    int fd;
    unsigned index;
    unsigned members;
    unsigned entries;
    uint64_t lookahead;         /* the header's L and Q, checked at attach */
    uint64_t quantum;
    uint8_t *base;
    size_t size;
    struct shm_hdr *h;
    struct shm_slot *me;
    uint64_t now;               /* what this member published last */
    uint64_t rx_min;            /* least vtime taken since the last publish */
    uint32_t head;              /* own ring: the consumer's index (its own copy) */
    unsigned spin;
    struct dn2f_shm_stats st;
    char err[160];
};

/* ------------------------------------------------------------ atomics */
#define LD(p)       __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ST(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define LD_SC(p)    __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST_SC(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void seterr(struct dn2f_shm *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void seterr(struct dn2f_shm *m, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(m->err, sizeof(m->err), fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------- layout */
static size_t hdr_size(void)
{
    return ALIGN_UP(sizeof(struct shm_hdr), 64);
}

static size_t slot_size(void)
{
    return ALIGN_UP(sizeof(struct shm_slot), 64);
}

static size_t entry_size(void)
{
    return ALIGN_UP(sizeof(struct shm_entry), 16);
}

static size_t total_size(unsigned members, unsigned entries)
{
    return hdr_size() + (size_t)members * slot_size() +
           (size_t)members * entries * entry_size();
}

static struct shm_slot *slot(const struct dn2f_shm *m, unsigned i)
{
    return (struct shm_slot *)(m->base + hdr_size() + (size_t)i * slot_size());
}

static struct shm_entry *entry(const struct dn2f_shm *m, unsigned ring, uint32_t pos)
{
    return (struct shm_entry *)(m->base + hdr_size() + (size_t)m->members * slot_size() +
                                ((size_t)ring * m->entries + (pos & (m->entries - 1))) *
                                entry_size());
}

/* ------------------------------------------------------------ wake-ups */
/* Make member i look again: bump its word, and wake it if it sleeps.  The
 * sleeper reads the word, checks its condition, sets `sleeping` and
 * FUTEX_WAITs on the value it read; the bump is seq_cst before the load
 * of `sleeping`: a bump that finds `sleeping` still 0 comes before the
 * sleeper's store, so the kernel's compare in FUTEX_WAIT fails. */
static void poke(struct dn2f_shm *m, unsigned i)
{
    struct shm_slot *s = slot(m, i);

    __atomic_add_fetch(&s->wake, 1, __ATOMIC_SEQ_CST);
    if (LD_SC(&s->sleeping)) {
        futex(&s->wake, FUTEX_WAKE, INT_MAX, NULL);
        m->st.wakes++;
    }
}

static void poke_mask(struct dn2f_shm *m, uint64_t mask)
{
    unsigned i;

    for (i = 0; i < m->members && mask; i++) {
        if (mask & (1ull << i)) {
            mask &= ~(1ull << i);
            poke(m, i);
        }
    }
}

static void poke_all(struct dn2f_shm *m)
{
    poke_mask(m, m->members >= 64 ? ~0ull : (1ull << m->members) - 1);
}

/* --------------------------------------------------------------- death */
/* Is pid (started at starttime; 0 = unknown) still running?  A zombie or a
 * reused pid is not. */
static bool pid_alive(int32_t pid, uint64_t starttime)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    char state = 0;
    ssize_t n;
    int fd;

    if (pid <= 0) {
        return false;
    }
    if (kill(pid, 0) < 0 && errno == ESRCH) {
        return false;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno != ENOENT;         /* no /proc: kill() said it exists */
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    buf[n] = 0;
    p = strrchr(buf, ')');              /* the command may hold spaces and ')' */
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                     "%*d %*d %*d %*d %llu", &state, &st) != 2) {
        return true;
    }
    if (state == 'Z' || state == 'X' || state == 'x') {
        return false;
    }
    return !starttime || st == starttime;
}

static uint64_t my_starttime(void)
{
    char buf[1024], *p;
    unsigned long long st = 0;
    ssize_t n;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = 0;
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                     "%*d %*d %*d %*d %llu", &st) != 1) {
        return 0;
    }
    return st;
}

/* The domain is broken: say by whom, -EPIPE. */
static int broken(struct dn2f_shm *m)
{
    uint32_t b = LD(&m->h->broken);

    if (b == BROKEN_LOCK || b == 0 || b > m->members) {
        seterr(m, "shm sync domain broken: a member died holding its lock");
    } else {
        struct shm_slot *s = slot(m, b - 1);
        seterr(m, "shm sync domain broken: member %u (LID 0x%04x, pid %d) died", b - 1,
               (unsigned)s->lid, (int)s->pid);
    }
    return -EPIPE;
}

static bool is_broken(const struct dn2f_shm *m)
{
    return LD(&m->h->broken) != 0;
}

static int lock(struct dn2f_shm *m);
static void unlock(struct dn2f_shm *m)
{
    pthread_mutex_unlock(&m->h->lock);
}

/* Mark the first dead active member (or the lock) and wake everyone. */
static void mark_dead(struct dn2f_shm *m, unsigned dead, bool locked)
{
    uint32_t b = dead < m->members ? dead + 1 : BROKEN_LOCK;

    if (dead < m->members) {
        ST(&slot(m, dead)->state, SLOT_DEAD);
    }
    __atomic_compare_exchange_n(&m->h->broken, &(uint32_t){0}, b, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    if (locked) {
        unlock(m);
    }
    poke_all(m);
}

/* After a slice without a wake-up: is every active member alive?  -EPIPE
 * when one is not (the domain is then broken for all). */
static int check_deaths(struct dn2f_shm *m)
{
    unsigned i;

    m->st.death_checks++;
    for (i = 0; i < m->members; i++) {
        struct shm_slot *s = slot(m, i);
        if (i == m->index || LD(&s->state) != SLOT_ACTIVE) {
            continue;
        }
        if (!pid_alive(s->pid, s->starttime)) {
            int r = lock(m);
            if (r < 0) {
                return r;
            }
            if (LD(&s->state) == SLOT_ACTIVE) {
                mark_dead(m, i, true);
            } else {
                unlock(m);
            }
            return broken(m);
        }
    }
    return is_broken(m) ? broken(m) : 0;
}

static int lock(struct dn2f_shm *m)
{
    int r = pthread_mutex_lock(&m->h->lock);

    if (r == EOWNERDEAD) {
        unsigned i, dead = UINT_MAX;
        pthread_mutex_consistent(&m->h->lock);
        for (i = 0; i < m->members && dead == UINT_MAX; i++) {
            struct shm_slot *s = slot(m, i);
            if (i != m->index && LD(&s->state) == SLOT_ACTIVE &&
                !pid_alive(s->pid, s->starttime)) {
                dead = i;
            }
        }
        mark_dead(m, dead, true);
        return broken(m);
    }
    if (r != 0) {
        seterr(m, "shm sync domain: lock: %s", strerror(r));
        return -r;
    }
    if (is_broken(m)) {
        unlock(m);
        return broken(m);
    }
    return 0;
}

/* ------------------------------------------------------------- grants */
/* Under the lock: every active member's grant from the table; the members
 * whose grant rose past their clock, to wake after unlocking. */
static uint64_t recompute(struct dn2f_shm *m)
{
    uint64_t e[DN2F_SHM_MAX_MEMBERS], g[DN2F_SHM_MAX_MEMBERS], wake = 0;
    unsigned idx[DN2F_SHM_MAX_MEMBERS], i, n = 0;
    struct shm_hdr *h = m->h;

    for (i = 0; i < m->members; i++) {
        struct shm_slot *s = slot(m, i);
        if (LD(&s->state) == SLOT_ACTIVE) {
            uint64_t ei = LD(&s->earliest), li = LD(&s->lowered);
            idx[n] = i;
            e[n] = ei < li ? ei : li;
            n++;
        }
    }
    h->active = n;
    if (!h->started && n >= h->expected) {
        h->started = 1;
    }
    if (!h->started || n == 0) {
        return 0;
    }
    dn2f_vt_grants(e, n, h->lookahead_ns, h->quantum_ns, g);
    for (i = 0; i < n; i++) {
        struct shm_slot *s = slot(m, idx[i]);
        if (g[i] > LD(&s->grant)) {
            ST_SC(&s->grant, g[i]);
            if (g[i] > LD(&s->now) && idx[i] != m->index) {
                wake |= 1ull << idx[i];
            }
        }
    }
    return wake;
}

/* ------------------------------------------------------------- create */
int dn2f_shm_create(const char *path, const struct dn2f_shm_cfg *cfg)
{
    pthread_mutexattr_t ma;
    struct dn2f_shm m = { 0 };
    unsigned expected, i;
    char *tmp;
    size_t size;
    int fd, r = 0;

    if (!path || !cfg || cfg->members < 1 || cfg->members > DN2F_SHM_MAX_MEMBERS ||
        cfg->ring_entries < 2 || cfg->ring_entries > DN2F_SHM_MAX_ENTRIES ||
        (cfg->ring_entries & (cfg->ring_entries - 1)) || cfg->lookahead_ns < 1 ||
        cfg->expected > cfg->members) {
        return -EINVAL;
    }
    expected = cfg->expected ? cfg->expected : cfg->members;
    size = total_size(cfg->members, cfg->ring_entries);
    if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) {
        return -ENOMEM;
    }
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        r = -errno;
        free(tmp);
        return r;
    }
    if (ftruncate(fd, (off_t)size) < 0) {
        r = -errno;
        goto out;
    }
    m.base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m.base == MAP_FAILED) {
        r = -errno;
        goto out;
    }
    m.h = (struct shm_hdr *)m.base;
    m.members = cfg->members;
    m.entries = cfg->ring_entries;
    m.h->version = DN2F_SHM_VERSION;
    m.h->hdr_size = (uint32_t)hdr_size();
    m.h->slot_size = (uint32_t)slot_size();
    m.h->entry_size = (uint32_t)entry_size();
    m.h->mutex_size = (uint32_t)sizeof(pthread_mutex_t);
    m.h->members = cfg->members;
    m.h->expected = expected;
    m.h->ring_entries = cfg->ring_entries;
    m.h->lookahead_ns = cfg->lookahead_ns;
    m.h->quantum_ns = cfg->quantum_ns;
    m.h->total_size = size;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    r = -pthread_mutex_init(&m.h->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (!r) {
        for (i = 0; i < cfg->members; i++) {
            slot(&m, i)->lowered = DN2F_VT_INFINITY;
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        memcpy(m.h->magic, DN2F_SHM_MAGIC, 8);  /* last: the whole domain is there */
    }
    munmap(m.base, size);
    if (!r && rename(tmp, path) < 0) {
        r = -errno;
    }
out:
    close(fd);
    if (r) {
        unlink(tmp);
    }
    free(tmp);
    return r;
}

/* ------------------------------------------------------------- attach */
static int check_hdr(const struct shm_hdr *h, size_t file_size)
{
    if (memcmp(h->magic, DN2F_SHM_MAGIC, 8) || h->version != DN2F_SHM_VERSION ||
        h->hdr_size != hdr_size() || h->slot_size != slot_size() ||
        h->entry_size != entry_size() || h->mutex_size != sizeof(pthread_mutex_t) ||
        h->members < 1 || h->members > DN2F_SHM_MAX_MEMBERS || h->ring_entries < 2 ||
        h->ring_entries > DN2F_SHM_MAX_ENTRIES || (h->ring_entries & (h->ring_entries - 1)) ||
        h->expected < 1 || h->expected > h->members || h->lookahead_ns < 1 ||
        h->total_size != total_size(h->members, h->ring_entries) ||
        h->total_size != file_size) {
        return -EPROTO;
    }
    return 0;
}

struct dn2f_shm *dn2f_shm_attach(const char *path, unsigned index, uint16_t lid, int *err)
{
    struct dn2f_shm *m = calloc(1, sizeof(*m));
    struct shm_hdr hdr;
    struct shm_slot *s;
    struct stat st;
    uint64_t wake;
    int r, dummy;

    if (!err) {
        err = &dummy;
    }
    if (!m) {
        *err = -ENOMEM;
        return NULL;
    }
    m->fd = open(path, O_RDWR | O_CLOEXEC);
    if (m->fd < 0) {
        r = -errno;
        goto fail;
    }
    if (fstat(m->fd, &st) < 0) {
        r = -errno;
        goto fail;
    }
    if ((size_t)st.st_size < sizeof(hdr) ||
        pread(m->fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
        r = -EPROTO;
        goto fail;
    }
    r = check_hdr(&hdr, (size_t)st.st_size);
    if (r < 0) {
        goto fail;
    }
    if (index >= hdr.members) {
        r = -ERANGE;
        goto fail;
    }
    m->size = (size_t)st.st_size;
    m->base = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (m->base == MAP_FAILED) {
        m->base = NULL;
        r = -errno;
        goto fail;
    }
    m->h = (struct shm_hdr *)m->base;
    /* from here on only the private copy's sizes are used: checked above */
    m->members = hdr.members;
    m->entries = hdr.ring_entries;
    m->lookahead = hdr.lookahead_ns;
    m->quantum = hdr.quantum_ns;
    m->index = index;
    m->me = slot(m, index);
    m->rx_min = DN2F_VT_INFINITY;
    r = lock(m);
    if (r < 0) {
        goto fail;
    }
    s = m->me;
    if (LD(&s->state) == SLOT_ACTIVE || LD(&s->state) == SLOT_DEAD) {
        bool alive = LD(&s->state) == SLOT_ACTIVE && pid_alive(s->pid, s->starttime);
        if (alive) {
            unlock(m);
            r = -EBUSY;
            goto fail;
        }
        mark_dead(m, index, true);      /* its holder died without leaving */
        r = broken(m);
        goto fail;
    }
    s->pid = (int32_t)getpid();
    s->starttime = my_starttime();
    s->lid = lid;
    ST(&s->now, 0);
    ST(&s->earliest, 0);
    ST(&s->lowered, DN2F_VT_INFINITY);
    ST(&s->grant, 0);
    ST(&s->space_waiters, 0);
    m->head = LD(&s->tail);             /* a previous holder's packets are gone */
    ST(&s->head, m->head);
    ST_SC(&s->state, SLOT_ACTIVE);
    wake = recompute(m);
    unlock(m);
    poke_mask(m, wake);
    *err = 0;
    return m;

fail:
    *err = r;
    if (m->base) {
        munmap(m->base, m->size);
    }
    if (m->fd >= 0) {
        close(m->fd);
    }
    free(m);
    return NULL;
}

void dn2f_shm_detach(struct dn2f_shm *m)
{
    if (!m) {
        return;
    }
    if (lock(m) == 0) {
        uint64_t wake, waiters;
        ST_SC(&m->me->state, SLOT_LEFT);
        waiters = __atomic_exchange_n(&m->me->space_waiters, 0, __ATOMIC_SEQ_CST);
        wake = recompute(m);
        unlock(m);
        poke_mask(m, wake | waiters);
    }
    munmap(m->base, m->size);
    close(m->fd);
    free(m);
}

/* ------------------------------------------------------------ publish */
int dn2f_shm_publish(struct dn2f_shm *m, uint64_t now, uint64_t earliest)
{
    struct shm_slot *s = m->me;
    uint64_t e = earliest, low = DN2F_VT_INFINITY, wake;
    uint32_t pos, tail;
    int r;

    if (now < m->now) {
        seterr(m, "shm publish: clock %llu below the last published %llu",
               (unsigned long long)now, (unsigned long long)m->now);
        return -EINVAL;
    }
    if (m->rx_min != DN2F_VT_INFINITY) {
        uint64_t t = m->rx_min > now ? m->rx_min : now;
        e = e < t ? e : t;
    }
    r = lock(m);
    if (r < 0) {
        return r;
    }
    tail = LD(&s->tail);
    if (tail - m->head > m->entries) {
        unlock(m);
        seterr(m, "shm publish: own ring corrupt (head %u tail %u)", m->head, tail);
        return -EPROTO;
    }
    for (pos = m->head; pos != tail; pos++) {   /* posted, not taken yet */
        uint64_t v = LD(&entry(m, m->index, pos)->vtime);
        low = v < low ? v : low;
    }
    ST(&s->now, now);
    ST(&s->earliest, e);
    ST(&s->lowered, low);
    wake = recompute(m);
    unlock(m);
    poke_mask(m, wake);
    m->now = now;
    m->rx_min = DN2F_VT_INFINITY;
    m->st.publishes++;
    return 0;
}

/*
 * The horizon: the grant, lowered to the least vtime still in the ring.  A
 * packet below a grant was posted before that grant was computed (a sender
 * posts nothing below its published promise plus L), so, with the grant
 * read first (seq_cst, after the post's tail in the lock's order), the
 * ring's tail read next shows it.  The table's grant alone is not enough:
 * a member that took its ring, then read a grant raised by a sender's
 * publish in between, would run past that sender's packet and take it
 * late (the UDP path cannot: the switch grants only what its receivers
 * have acknowledged).
 */
uint64_t dn2f_shm_grant(const struct dn2f_shm *m)
{
    const struct shm_slot *s = m->me;
    uint64_t g = LD_SC(&s->grant);
    uint32_t pos, n = LD_SC(&s->tail) - m->head;

    if (n > m->entries) {
        n = m->entries;                 /* corrupt: dn2f_shm_recv() says so */
    }
    for (pos = m->head; n; pos++, n--) {
        uint64_t v = LD(&entry(m, m->index, pos)->vtime);
        g = v < g ? v : g;
    }
    return g;
}

/* -------------------------------------------------------------- waits */
/* Is a sender waiting for room in this member's ring, with packets in it? */
static bool drain_wanted(const struct dn2f_shm *m)
{
    return LD(&m->me->space_waiters) != 0 && LD(&m->me->tail) != m->head;
}

static int cond_grant(struct dn2f_shm *m, unsigned arg)
{
    (void)arg;
    return LD_SC(&m->me->grant) > m->now ? 0 : -EAGAIN;
}

static int cond_space(struct dn2f_shm *m, unsigned dst)
{
    struct shm_slot *d = slot(m, dst);

    if (LD_SC(&d->state) != SLOT_ACTIVE) {
        return -ENOENT;
    }
    return LD_SC(&d->tail) - LD_SC(&d->head) < m->entries ? 0 : -EAGAIN;
}

/*
 * Sleep on the member's own word until cond says 0 (or an error other
 * than -EAGAIN), a sender wants room in its ring (1), the timeout, or a
 * death.  The word is read before the condition: a change made after the
 * read bumps it, and FUTEX_WAIT then returns at once.
 */
static int sleep_until(struct dn2f_shm *m, int (*cond)(struct dn2f_shm *, unsigned),
                       unsigned arg, int64_t timeout_ns)
{
    struct shm_slot *s = m->me;
    uint64_t start = mono_ns();
    unsigned spun = 0;
    bool slept = false;

    m->st.waits++;
    for (;;) {
        struct timespec ts;
        uint64_t slice = DN2F_SHM_SLICE_NS, el;
        uint32_t w;
        long fr;
        int r;

        if (is_broken(m)) {
            return broken(m);
        }
        w = LD_SC(&s->wake);
        if (drain_wanted(m)) {          /* first: a sender is held until then */
            return 1;
        }
        r = cond(m, arg);
        if (r != -EAGAIN) {
            if (spun && !slept) {
                m->st.spins_won++;
            }
            return r;
        }
        if (spun < m->spin) {           /* a bounded spin: no syscall, no switch */
            if ((++spun & 63) == 0) {
                sched_yield();
            }
            cpu_relax();
            continue;
        }
        el = mono_ns() - start;
        if (timeout_ns >= 0) {
            if (el >= (uint64_t)timeout_ns) {
                seterr(m, "shm wait: no grant after %.3f s", (double)el / 1e9);
                return -ETIMEDOUT;
            }
            if ((uint64_t)timeout_ns - el < slice) {
                slice = (uint64_t)timeout_ns - el;
            }
        }
        ts.tv_sec = (time_t)(slice / 1000000000ull);
        ts.tv_nsec = (long)(slice % 1000000000ull);
        m->st.sleeps++;
        slept = true;
        ST_SC(&s->sleeping, 1);         /* after reading w: a later bump fails the wait */
        fr = futex(&s->wake, FUTEX_WAIT, w, &ts);
        ST(&s->sleeping, 0);
        if (fr < 0 && errno == ETIMEDOUT) {
            r = check_deaths(m);
            if (r < 0) {
                return r;
            }
        }
    }
}

int dn2f_shm_wait(struct dn2f_shm *m, int64_t timeout_ns)
{
    return sleep_until(m, cond_grant, 0, timeout_ns);
}

int dn2f_shm_wait_space(struct dn2f_shm *m, unsigned dst, int64_t timeout_ns)
{
    if (dst >= m->members) {
        return -EINVAL;
    }
    return sleep_until(m, cond_space, dst, timeout_ns);
}

/* ------------------------------------------------------------ packets */
int dn2f_shm_post(struct dn2f_shm *m, unsigned dst, const void *pkt, size_t len,
                  uint64_t vtime, uint32_t vseq)
{
    struct shm_slot *d;
    struct shm_entry *en;
    uint32_t head, tail;
    uint64_t low;
    int r;

    if (dst >= m->members || !pkt || len < DN2F_PKT_MIN || len > DN2F_PKT_MAX) {
        return -EINVAL;
    }
    d = slot(m, dst);
    r = lock(m);
    if (r < 0) {
        return r;
    }
    if (LD(&d->state) != SLOT_ACTIVE) {
        unlock(m);
        return -ENOENT;
    }
    head = LD_SC(&d->head);
    tail = LD(&d->tail);
    if (tail - head > m->entries) {
        unlock(m);
        seterr(m, "shm post: ring of member %u corrupt (head %u tail %u)", dst, head, tail);
        return -EPROTO;
    }
    if (tail - head == m->entries) {
        /* Ask for room, then look again (the consumer stores head before
         * it reads the waiters: one of us sees the other). */
        __atomic_or_fetch(&d->space_waiters, 1ull << m->index, __ATOMIC_SEQ_CST);
        if (LD_SC(&d->head) == head) {
            unlock(m);
            poke(m, dst);               /* it may sleep with a full ring */
            m->st.full++;
            return -EAGAIN;
        }
    }
    en = entry(m, dst, tail);
    en->vtime = vtime;
    en->vseq = vseq;
    en->src = (uint16_t)m->index;
    en->slid = m->me->lid;
    en->len = (uint16_t)len;
    memcpy(en->data, pkt, len);
    ST(&d->tail, tail + 1);
    low = LD(&d->lowered);
    if (vtime < low) {
        ST(&d->lowered, vtime);
    }
    unlock(m);
    m->st.posts++;
    return 0;
}

int dn2f_shm_recv(struct dn2f_shm *m, struct dn2f_shm_pkt *out)
{
    struct shm_slot *s = m->me;

    for (;;) {
        const struct shm_entry *en;
        uint32_t tail = LD(&s->tail);
        uint64_t waiters;
        uint16_t len;
        bool ok;

        if (is_broken(m)) {
            return broken(m);
        }
        if (tail == m->head) {
            return 0;
        }
        if (tail - m->head > m->entries) {
            seterr(m, "shm recv: own ring corrupt (head %u tail %u)", m->head, tail);
            return -EPROTO;
        }
        en = entry(m, m->index, m->head);
        len = LD(&en->len);             /* read once: a buggy peer may change it */
        ok = len >= DN2F_PKT_MIN && len <= DN2F_PKT_MAX && LD(&en->src) < m->members;
        if (ok) {
            out->vtime = en->vtime;
            out->vseq = en->vseq;
            out->src = en->src;
            out->slid = en->slid;
            out->len = len;
            memcpy(out->data, en->data, len);
        }
        m->head++;
        ST_SC(&s->head, m->head);
        waiters = LD_SC(&s->space_waiters);
        if (waiters) {
            poke_mask(m, __atomic_exchange_n(&s->space_waiters, 0, __ATOMIC_SEQ_CST));
        }
        if (!ok) {
            m->st.bad++;
            continue;
        }
        if (out->vtime < m->rx_min) {
            m->rx_min = out->vtime;
        }
        m->st.recvs++;
        return 1;
    }
}

int dn2f_shm_pkt_cmp(const struct dn2f_shm_pkt *a, const struct dn2f_shm_pkt *b)
{
    if (a->vtime != b->vtime) {
        return a->vtime < b->vtime ? -1 : 1;
    }
    if (a->slid != b->slid) {
        return a->slid < b->slid ? -1 : 1;
    }
    if (a->vseq != b->vseq) {
        return a->vseq < b->vseq ? -1 : 1;
    }
    return 0;
}

/* ------------------------------------------------------------ queries */
int dn2f_shm_find_lid(const struct dn2f_shm *m, uint16_t lid)
{
    unsigned i;

    for (i = 0; i < m->members; i++) {
        const struct shm_slot *s = slot(m, i);
        if (LD(&s->state) == SLOT_ACTIVE && s->lid == lid) {
            return (int)i;
        }
    }
    return -ENOENT;
}

bool dn2f_shm_slowest(struct dn2f_shm *m, unsigned *index, uint16_t *lid, uint64_t *now)
{
    uint64_t best = DN2F_VT_INFINITY;
    bool any = false;
    unsigned i;

    for (i = 0; i < m->members; i++) {
        struct shm_slot *s = slot(m, i);
        uint64_t e, l;
        if (LD(&s->state) != SLOT_ACTIVE) {
            continue;
        }
        e = LD(&s->earliest);
        l = LD(&s->lowered);
        e = e < l ? e : l;
        if (!any || e < best) {
            any = true;
            best = e;
            *index = i;
            *lid = s->lid;
            *now = LD(&s->now);
        }
    }
    return any;
}

void dn2f_shm_set_spin(struct dn2f_shm *m, unsigned n)
{
    m->spin = n;
}

int dn2f_shm_test_hold_lock(struct dn2f_shm *m)
{
    return lock(m);
}

void dn2f_shm_stats(const struct dn2f_shm *m, struct dn2f_shm_stats *s)
{
    *s = m->st;
}

unsigned dn2f_shm_index(const struct dn2f_shm *m)
{
    return m->index;
}

unsigned dn2f_shm_members(const struct dn2f_shm *m)
{
    return m->members;
}

uint64_t dn2f_shm_lookahead(const struct dn2f_shm *m)
{
    return m->lookahead;
}

uint64_t dn2f_shm_quantum(const struct dn2f_shm *m)
{
    return m->quantum;
}

const char *dn2f_shm_strerror(const struct dn2f_shm *m)
{
    return m->err;
}
