/* SPDX-License-Identifier: MIT */
/* libdimmnet2 internals: the handle and CPU-level helpers. */
#ifndef DN2_INTERNAL_H
#define DN2_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define DN2_ISSUE_TIMEOUT_US 5000000L   /* a board that stays busy 5 s is stuck */

struct dn2 {
    int fd;
    int wid;
    int control;                    /* driver control handle: no mappings */
    volatile uint8_t *ww, *pw, *llcm, *lhb;
    volatile uint64_t *ur;
    volatile uint64_t *sr;          /* /dev/mem mode only */
    void *map[6];
    size_t map_len[6];
    int nmap;
    uint16_t lid;
    uint64_t sdimm_bytes;
    int ex_flag;                    /* what we last wrote to Command Ex Flag */
    uint32_t ipush_units;           /* what we last wrote to IPUSH Area Size */
    uint32_t st_init, st_size, st_head;
    uint32_t lh_head;
    uint8_t lh_uses[64];            /* toggles seen per LH entry */
};

uint64_t dn2i_now_us(void);
void dn2i_refresh_info(struct dn2 *d);
void dn2i_forget_state(struct dn2 *d);
void dn2i_lh_sync(struct dn2 *d);
/* Driver-mode administration (open-dev.c). */
int dn2i_drv_reset(struct dn2 *d);
int dn2i_drv_sdimm_init(struct dn2 *d, unsigned capacity_code, long timeout_us);
int dn2i_drv_mtu(struct dn2 *d, unsigned mtu_code);
int dn2i_drv_wait_link(struct dn2 *d, uint16_t *lid, long timeout_us);
int dn2i_drv_pgid(struct dn2 *d, int wid, unsigned pgid);
int dn2i_drv_amt(struct dn2 *d, uint16_t lid, int wid, unsigned value);

static inline void dn2i_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

static inline void dn2i_sfence(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("sfence" ::: "memory");
#else
    __sync_synchronize();
#endif
}

static inline void dn2i_mfence(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("mfence" ::: "memory");
#else
    __sync_synchronize();
#endif
}

static inline void dn2i_clflush(const volatile void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("clflush %0" : "+m"(*(volatile char *)p));
#else
    (void)p;
#endif
}

static inline void dn2i_prefetchnta(const volatile void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchnta %0" : : "m"(*(const volatile char *)p));
#else
    (void)p;
#endif
}

#endif
