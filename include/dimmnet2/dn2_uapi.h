/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * DIMMnet-2 Linux driver <-> user space interface: the character device
 * /dev/dimmnet2-N (N = board index, the ACPI _UID), its mmap layout and its
 * ioctls.  Shared by linux-guest/driver/dimmnet2-drv.c and the user library.
 *
 * Pure C: <linux/types.h> and <linux/ioctl.h> (kernel and user space), plus
 * the ABI header for the window layout (every hardware constant lives
 * there; nothing is repeated here).
 *
 * Model (thesis §1.4, §4.3): a board serves at most two processes, one per
 * WID.  open() with write access (O_RDWR) gives the caller one free WID
 * (EBUSY when both are taken); the WID stays with that open file until its
 * last reference goes (close() of every descriptor and munmap() of every
 * mapping; also when the process dies).  The process then maps only its
 * own pieces of the window, at the offsets below, with the thesis's memory
 * types.  The System Register is never mappable: privileged set-up goes
 * through the ioctls, which need CAP_SYS_ADMIN.
 *
 * open(O_RDONLY) takes no WID: it is a control handle (always available)
 * for DN2_IOC_GET_INFO (wid = DN2_WID_NONE) and the privileged ioctls, so
 * that bring-up and administration never use up a WID.  It cannot mmap.
 */
#ifndef DIMMNET2_DN2_UAPI_H
#define DIMMNET2_DN2_UAPI_H

#include <linux/types.h>
#include <linux/ioctl.h>

#include "dimmnet2/dn2_abi.h"

#define DN2_UAPI_VERSION       1
#define DN2_DEV_PREFIX         "/dev/dimmnet2-"   /* + board index */
#define DN2_WID_NONE           0xffffffffu        /* a control handle's WID */

/* ======================================================================
 * mmap
 *
 * The offset names a piece of YOUR WID: the layout is the hardware layout
 * of WID 0, whatever WID you got, so the ABI's register offsets apply
 * unchanged inside each piece (e.g. UR + DN2_UR_CTL_STATUS).  One mmap()
 * maps (part of) one piece: the offset must lie inside a piece, the length
 * must not run past it, and the mapping must be MAP_SHARED.  Anything else
 * (the System Register, the other WID's pages, gaps) fails with EINVAL;
 * mmap on a control handle (no WID) fails with EACCES.
 *
 *  offset            length  piece                      access       memory type
 *  DN2_MMAP_WW       0x1000  Write Window area (2 KiB)  read/write   write-combining
 *  DN2_MMAP_PW       0x1000  Prefetch Window area (2 KiB) read-only  write-back *
 *  DN2_MMAP_LLCM     0x8000  LLCM (32 KiB)              read/write   uncached
 *  DN2_MMAP_LHB      0x1000  LH Buffer (4 KiB)          read-only    write-back *
 *  DN2_MMAP_UR       0x1000  User Register page         read/write   uncached
 *
 * WW and PW pages hold the 2 KiB area (4 windows of 512 B) at their start;
 * the rest of the page is unused.  PROT_WRITE on a read-only piece fails
 * with EACCES (and mprotect() cannot add it later).
 *
 * * write-back is requested (the thesis's software coherence: CLFLUSH
 *   before asking the NIC to fill, then read).  The kernel's PAT code
 *   lowers it to uncached-minus when the platform's MTRRs do not cover the
 *   window as write-back; reads are then slower but just as correct.
 * ====================================================================== */
#define DN2_MMAP_PAGE          0x1000u            /* mapping granule (x86 page) */
#define DN2_MMAP_WW            DN2_WW_BASE
#define DN2_MMAP_PW            DN2_PW_BASE
#define DN2_MMAP_LLCM          DN2_LLCM_BASE
#define DN2_MMAP_LHB           DN2_LHB_BASE
#define DN2_MMAP_UR            DN2_UR_BASE
#define DN2_MMAP_WW_LEN        DN2_MMAP_PAGE      /* holds DN2_WIN_AREA bytes */
#define DN2_MMAP_PW_LEN        DN2_MMAP_PAGE      /* holds DN2_WIN_AREA bytes */
#define DN2_MMAP_LLCM_LEN      DN2_LLCM_AREA
#define DN2_MMAP_LHB_LEN       DN2_LHB_AREA
#define DN2_MMAP_UR_LEN        DN2_UR_PAGE

/* ======================================================================
 * ioctls
 * ====================================================================== */
#define DN2_IOC_MAGIC          0xD2

/* --- unprivileged --------------------------------------------------- */

/* DN2_IOC_GET_INFO: what this open file got and the board's state. */
#define DN2_INFO_SDIMM_READY   (1u << 0)  /* Controller Status bit 1 */
#define DN2_INFO_LINK_UP       (1u << 1)  /* SMA LID [17:16] == 3 */
#define DN2_INFO_LID_SET       (1u << 2)  /* the LID register was written */
#define DN2_INFO_PGID_SET      (1u << 3)  /* your WID's PGID was written */
#define DN2_INFO_ADMIN         (1u << 4)  /* the caller has CAP_SYS_ADMIN */
struct dn2_info {
	__u32 abi_version;   /* DN2_ABI_VERSION the driver was built with */
	__u32 uapi_version;  /* DN2_UAPI_VERSION */
	__u32 board;         /* board index: the N of /dev/dimmnet2-N */
	__u32 wid;           /* your WID, 0 or 1; DN2_WID_NONE on a control handle */
	__u32 flags;         /* DN2_INFO_* */
	__u32 lid;           /* LID written at link-up (valid with LID_SET) */
	__u32 sma_lid;       /* SMA LID register now: [15:0] LID, [17:16] link */
	__u32 mtu;           /* bytes, as configured (2048 after reset) */
	__u32 pgid;          /* your WID's PGID (valid with PGID_SET) */
	__u32 sdimm_module_mib; /* SO-DIMM capacity per module as configured */
	__u64 sdimm_area;    /* bytes of SO-DIMM your WID addresses (one module) */
	__u64 window_size;   /* DN2_WINDOW_SIZE */
	__u32 reserved[8];   /* zero */
};
#define DN2_IOC_GET_INFO       _IOR(DN2_IOC_MAGIC, 0x00, struct dn2_info)

/* --- privileged (CAP_SYS_ADMIN; EPERM otherwise) ----------------------
 * Bring-up (thesis §5, in this order): CTL_RESET, SDIMM_INIT, SET_MTU,
 * LINK_UP, SET_PGID (each WID), SET_AMT (each entry).  Timeouts are in ms;
 * 0 means the driver's default (1000 ms), at most 60000.  A wait that
 * times out returns ETIMEDOUT, a signal EINTR. */

/* Controller Reset (System Register 0xa00).  The configuration below goes
 * back to its reset values (capacity 256 MiB, SO-DIMM not ready, MTU 2048,
 * no LID, no PGIDs, AMT Address Table empty). */
#define DN2_IOC_CTL_RESET      _IO(DN2_IOC_MAGIC, 0x10)

/* SO-DIMM Capacity + Init, then wait for Controller Status bit 1.
 * module_mib: 256, 512, 1024, 2048, 4096 or 8192 (0 = 256); else EINVAL. */
struct dn2_sdimm_init {
	__u32 module_mib;    /* in */
	__u32 timeout_ms;    /* in */
	__u64 sdimm_area;    /* out: bytes per WID */
};
#define DN2_IOC_SDIMM_INIT     _IOWR(DN2_IOC_MAGIC, 0x11, struct dn2_sdimm_init)

/* MTU in bytes: 256, 512, 1024, 2048 or 4096; else EINVAL. */
#define DN2_IOC_SET_MTU        _IOW(DN2_IOC_MAGIC, 0x12, __u32)

/* Wait until the SMA reports the link ready (SMA LID [17:16] == 3), then
 * write the LID it got from the subnet manager to the LID register. */
struct dn2_link {
	__u32 timeout_ms;    /* in */
	__u32 lid;           /* out: the LID written */
	__u32 sma_lid;       /* out: SMA LID register as last read */
	__u32 reserved;
};
#define DN2_IOC_LINK_UP        _IOWR(DN2_IOC_MAGIC, 0x13, struct dn2_link)

/* PGID of a WID (System Register PGID0/PGID1): wid 0..1, pgid 0..255. */
struct dn2_pgid {
	__u32 wid;
	__u32 pgid;
};
#define DN2_IOC_SET_PGID       _IOW(DN2_IOC_MAGIC, 0x14, struct dn2_pgid)

/* One AMT Address Table entry: sender {lid (16 bits), wid (0..1)} ->
 * value (12 bits, AMT entry address in LLCM, see dn2_abi.h §5b).
 * On a process's own handle (one that holds a WID) no privilege is needed:
 * the entry is set for that process only (choice #52), and value must be an
 * AMT entry inside its own LLCM.  On a control handle (CAP_SYS_ADMIN) the
 * entry is set for the process whose LLCM holds it. */
struct dn2_amt {
	__u32 lid;
	__u32 wid;
	__u32 value;
	__u32 reserved;      /* zero */
};
#define DN2_IOC_SET_AMT        _IOW(DN2_IOC_MAGIC, 0x15, struct dn2_amt)

/* SMA Software Reset (System Register 0x300 write): the link renegotiates. */
#define DN2_IOC_SMA_RESET      _IO(DN2_IOC_MAGIC, 0x16)

#endif /* DIMMNET2_DN2_UAPI_H */
