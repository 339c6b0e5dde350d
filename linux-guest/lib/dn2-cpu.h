/* SPDX-License-Identifier: MIT */
/*
 * CPU-level helpers for programs that touch a DIMMnet-2 window directly:
 * the spin-wait hint, the store and full fences, and cache-line flush and
 * prefetch (the Prefetch Window and the LH Buffer are write-back memory the
 * board writes behind the CPU's back: software keeps them coherent,
 * thesis §4.2.1).  One copy for the library, dsh and the benchmarks.
 *
 * x86 instructions; elsewhere the fences fall back to a full barrier and
 * the cache operations to nothing (such a machine has no DIMM-slot board).
 */
#ifndef DN2_CPU_H
#define DN2_CPU_H

#include <stddef.h>
#include <stdint.h>

#define DN2_CPU_LINE 64u    /* cache line bytes */

/* In a spin-wait loop. */
static inline void dn2_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* Write-combined stores (the Write Window) reach the board before what
 * follows (the doorbell). */
static inline void dn2_cpu_sfence(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("sfence" ::: "memory");
#else
    __sync_synchronize();
#endif
}

static inline void dn2_cpu_mfence(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("mfence" ::: "memory");
#else
    __sync_synchronize();
#endif
}

static inline void dn2_cpu_clflush(const volatile void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("clflush %0" : "+m"(*(volatile char *)p));
#else
    (void)p;
#endif
}

static inline void dn2_cpu_prefetchnta(const volatile void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchnta %0" : : "m"(*(const volatile char *)p));
#else
    (void)p;
#endif
}

/* Drop [p, p + len) from the cache (every line it touches), then fence:
 * before the board writes that memory, so the next read sees its data. */
static inline void dn2_cpu_flush(const volatile void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(DN2_CPU_LINE - 1);
    uintptr_t end = (uintptr_t)p + len;

    for (; a < end; a += DN2_CPU_LINE) {
        dn2_cpu_clflush((const volatile void *)a);
    }
    dn2_cpu_mfence();
}

#endif /* DN2_CPU_H */
