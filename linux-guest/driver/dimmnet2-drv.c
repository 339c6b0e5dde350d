// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dimmnet2: Linux driver for the DIMMnet-2 memory-slot network interface
 * (Tsuji/Kitamura, Keio 2007).
 *
 * The board shows a 0x60000-byte window of on-FPGA buffers and registers
 * at a fixed physical address (six 64 KiB regions; see
 * include/dimmnet2/dn2_abi.h).  There is no DMA and no interrupt: user
 * processes drive the board with loads and stores.  This driver only
 *   - finds the window (ACPI _HID "DNET0002", _CRS = the window; or the
 *     addr=/addr2= module parameters when firmware does not describe it),
 *   - hands each read/write opener one of the board's two WIDs
 *     (/dev/dimmnet2-N; a read-only open is a control handle with no WID),
 *   - maps that WID's pieces into the process with the thesis's memory
 *     types (Write Window WC, Prefetch Window and LH Buffer WB, LLCM and
 *     User Register UC), never the System Register,
 *   - does the privileged bring-up through ioctls (CAP_SYS_ADMIN),
 *   - shows the board's state in sysfs.
 * The user interface is include/dimmnet2/dn2_uapi.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/acpi.h>
#include <linux/bitops.h>
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>	/* readq/writeq on 32-bit */
#include <linux/jiffies.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dimmnet2/dn2_abi.h"
#include "dimmnet2/dn2_uapi.h"

#define DN2_DRV_NAME          "dimmnet2"
#define DN2_MAX_BOARDS        16
#define DN2_TIMEOUT_DEFAULT   1000u     /* ms */
#define DN2_TIMEOUT_MAX       60000u    /* ms */

/* ------------------------------------------------------------ parameters */

static unsigned long addr;
module_param(addr, ulong, 0444);
MODULE_PARM_DESC(addr, "physical address of board 0's window, when ACPI does not describe it (registers platform device dimmnet2.0)");

static unsigned long addr2;
module_param(addr2, ulong, 0444);
MODULE_PARM_DESC(addr2, "physical address of board 1's window, when ACPI does not describe it (platform device dimmnet2.1)");

static bool use_acpi = true;
module_param(use_acpi, bool, 0444);
MODULE_PARM_DESC(use_acpi, "bind the boards that ACPI describes (_HID DNET0002); 0 = only addr=/addr2= (default 1)");

/* ---------------------------------------------------------------- state */

enum dn2_memtype { DN2_MT_WC, DN2_MT_WB, DN2_MT_UC };

/* The pieces of one WID that a process may map (dn2_uapi.h). */
struct dn2_piece {
	const char *name;
	u32 off;            /* mmap offset (= WID 0's hardware offset) */
	u32 len;            /* mappable length */
	u32 wid_stride;     /* WID w's piece is at off + w * wid_stride */
	enum dn2_memtype type;
	bool read_only;
};

static const struct dn2_piece dn2_pieces[] = {
	{ "Write Window", DN2_MMAP_WW, DN2_MMAP_WW_LEN, DN2_WW_WID_STRIDE, DN2_MT_WC, false },
	{ "Prefetch Window", DN2_MMAP_PW, DN2_MMAP_PW_LEN, DN2_PW_WID_STRIDE, DN2_MT_WB, true },
	{ "LLCM", DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN, DN2_LLCM_WID_STRIDE, DN2_MT_UC, false },
	{ "LH Buffer", DN2_MMAP_LHB, DN2_MMAP_LHB_LEN, DN2_LHB_WID_STRIDE, DN2_MT_WB, true },
	{ "User Register", DN2_MMAP_UR, DN2_MMAP_UR_LEN, DN2_UR_WID_STRIDE, DN2_MT_UC, false },
};

struct dn2_board {
	struct device *dev;          /* the platform device */
	phys_addr_t base;            /* the window */
	unsigned int index;          /* board index: ACPI _UID or platform id */
	void __iomem *ur;            /* User Register pages of both WIDs (UC) */
	void __iomem *sr;            /* System Register page (UC) */
	char name[24];               /* "dimmnet2-N" */
	struct miscdevice misc;

	struct mutex wid_lock;       /* owner[] */
	struct pid *owner[DN2_NUM_WID];  /* thread group holding each WID */

	/*
	 * Serialises the privileged ioctls (System Register sequences, which
	 * may wait for the link for seconds) and the writes of the fields
	 * below; readers (GET_INFO, sysfs) use READ_ONCE and never wait.
	 * Configuration as last written (the registers are write-only).
	 */
	struct mutex lock;
	u32 sdimm_module_mib;
	u32 mtu;
	u32 lid;
	bool lid_set;
	u32 pgid[DN2_NUM_WID];
	bool pgid_set[DN2_NUM_WID];
};

/* One open file: one WID, or DN2_WID_NONE for a control handle. */
struct dn2_file {
	struct dn2_board *b;
	unsigned int wid;
};

static DEFINE_MUTEX(dn2_index_lock);
static DECLARE_BITMAP(dn2_index_used, DN2_MAX_BOARDS);
static struct platform_device *dn2_forced[2];

/* ------------------------------------------------------------ registers */

static u64 ur_read(struct dn2_board *b, unsigned int wid, u32 reg)
{
	return readq(b->ur + wid * DN2_UR_WID_STRIDE + reg);
}

static u64 sr_read(struct dn2_board *b, u32 reg)
{
	return readq(b->sr + reg);
}

static void sr_write(struct dn2_board *b, u32 reg, u64 v)
{
	writeq(v, b->sr + reg);
}

static unsigned int link_state(u64 sma)
{
	return dn2_sma_link(sma);
}

static void config_reset(struct dn2_board *b)
{
	unsigned int w;

	WRITE_ONCE(b->sdimm_module_mib, (u32)(DN2_SDIMM_CAP_DEFAULT >> 20));
	WRITE_ONCE(b->mtu, DN2_MTU_DEFAULT);
	WRITE_ONCE(b->lid_set, false);
	WRITE_ONCE(b->lid, 0);
	for (w = 0; w < DN2_NUM_WID; w++) {
		WRITE_ONCE(b->pgid_set[w], false);
		WRITE_ONCE(b->pgid[w], 0);
	}
}

static unsigned int timeout_ms(u32 t)
{
	if (!t)
		return DN2_TIMEOUT_DEFAULT;
	return min(t, DN2_TIMEOUT_MAX);
}

/*
 * Polls a register until (value & mask) == want.  Returns 0, -ETIMEDOUT or
 * -EINTR; *last gets the last value read.  Called with b->lock held (the
 * board has no interrupt: polling is the only way).
 */
static int poll_reg(struct dn2_board *b, bool sr, u32 reg, u64 mask, u64 want,
		    unsigned int ms, u64 *last)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	u64 v;

	for (;;) {
		v = sr ? sr_read(b, reg) : ur_read(b, 0, reg);
		*last = v;
		if ((v & mask) == want)
			return 0;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (signal_pending(current))
			return -EINTR;
		usleep_range(100, 200);
	}
}

/* The SO-DIMM Capacity register value for modules of mib MiB (0: the
 * default); 0 if the board has no such code. */
static u64 sdimm_code(u32 mib)
{
	if (!mib)
		return dn2_sdimm_capacity_reg(DN2_SDIMM_CAP_DEFAULT);
	return dn2_sdimm_capacity_reg((u64)mib << 20);
}

/* --------------------------------------------------------------- ioctls */

static long ioc_get_info(struct dn2_file *f, void __user *arg)
{
	struct dn2_board *b = f->b;
	struct dn2_info info;
	u64 sma, cs;

	memset(&info, 0, sizeof(info));
	sma = sr_read(b, DN2_SR_SMA);
	cs = ur_read(b, f->wid == DN2_WID_NONE ? 0 : f->wid, DN2_UR_CTL_STATUS);
	info.abi_version = DN2_ABI_VERSION;
	info.uapi_version = DN2_UAPI_VERSION;
	info.board = b->index;
	info.wid = f->wid;
	info.sma_lid = (u32)sma;
	info.lid = READ_ONCE(b->lid);
	info.mtu = READ_ONCE(b->mtu);
	if (f->wid != DN2_WID_NONE) {
		info.pgid = READ_ONCE(b->pgid[f->wid]);
		if (READ_ONCE(b->pgid_set[f->wid]))
			info.flags |= DN2_INFO_PGID_SET;
	}
	info.sdimm_module_mib = READ_ONCE(b->sdimm_module_mib);
	info.sdimm_area = (u64)info.sdimm_module_mib << 20;
	info.window_size = DN2_WINDOW_SIZE;
	if (cs & DN2_CS_SDIMM_READY)
		info.flags |= DN2_INFO_SDIMM_READY;
	if (link_state(sma) == DN2_SMA_LINK_READY)
		info.flags |= DN2_INFO_LINK_UP;
	if (READ_ONCE(b->lid_set))
		info.flags |= DN2_INFO_LID_SET;
	if (capable(CAP_SYS_ADMIN))
		info.flags |= DN2_INFO_ADMIN;
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long ioc_ctl_reset(struct dn2_board *b)
{
	sr_write(b, DN2_SR_CTL_RESET, 0);
	config_reset(b);
	dev_info(b->dev, "controller reset (by pid %d)\n", task_tgid_nr(current));
	return 0;
}

static long ioc_sdimm_init(struct dn2_board *b, void __user *arg)
{
	struct dn2_sdimm_init req;
	u64 last, code;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	code = sdimm_code(req.module_mib);
	if (!code) {
		dev_err(b->dev, "SO-DIMM init: %u MiB per module is not a capacity the board supports (256..8192, a power of two)\n",
			req.module_mib);
		return -EINVAL;
	}
	sr_write(b, DN2_SR_SDIMM_CAPACITY, code);
	WRITE_ONCE(b->sdimm_module_mib, (u32)(dn2_sdimm_module_bytes(code) >> 20));
	sr_write(b, DN2_SR_SDIMM_INIT, 1);
	ret = poll_reg(b, false, DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY,
		       DN2_CS_SDIMM_READY, timeout_ms(req.timeout_ms), &last);
	if (ret == -ETIMEDOUT) {
		dev_err(b->dev, "SO-DIMM init: Controller Status bit 1 (SO-DIMM ready) not set after %u ms (Controller Status 0x%llx)\n",
			timeout_ms(req.timeout_ms), last);
		return ret;
	}
	if (ret)
		return ret;
	req.sdimm_area = dn2_sdimm_module_bytes(code);
	return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long ioc_set_mtu(struct dn2_board *b, void __user *arg)
{
	u32 bytes;
	u64 code;

	if (get_user(bytes, (u32 __user *)arg))
		return -EFAULT;
	code = dn2_mtu_reg(bytes);
	if (!code) {
		dev_err(b->dev, "MTU %u is not one the board supports (256, 512, 1024, 2048, 4096)\n",
			bytes);
		return -EINVAL;
	}
	sr_write(b, DN2_SR_MTU, code);
	WRITE_ONCE(b->mtu, bytes);
	return 0;
}

static long ioc_link_up(struct dn2_board *b, void __user *arg)
{
	struct dn2_link req;
	u64 sma;
	u16 lid;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	ret = poll_reg(b, true, DN2_SR_SMA, DN2_SMA_LINK_MASK,
		       (u64)DN2_SMA_LINK_READY << DN2_SMA_LINK_SHIFT,
		       timeout_ms(req.timeout_ms), &sma);
	req.sma_lid = (u32)sma;
	if (ret == -ETIMEDOUT)
		dev_warn(b->dev, "link not ready after %u ms (SMA LID 0x%llx: link state %u, want %u): is the port cabled and a subnet manager running?\n",
			 timeout_ms(req.timeout_ms), sma, link_state(sma),
			 DN2_SMA_LINK_READY);
	if (ret) {
		/* Still report what was read. */
		if (copy_to_user(arg, &req, sizeof(req)))
			return -EFAULT;
		return ret;
	}
	lid = dn2_sma_lid(sma);
	if (!dn2_lid_assignable(lid))
		dev_warn(b->dev, "the subnet manager gave LID 0x%x, which has no unicast CLID (bits [11:8] must be 0)\n",
			 lid);
	sr_write(b, DN2_SR_LID, lid);
	WRITE_ONCE(b->lid, lid);
	WRITE_ONCE(b->lid_set, true);
	req.lid = lid;
	dev_info(b->dev, "link up, LID 0x%x\n", lid);
	return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long ioc_set_pgid(struct dn2_board *b, void __user *arg)
{
	struct dn2_pgid req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.wid >= DN2_NUM_WID || req.pgid > 0xff) {
		dev_err(b->dev, "PGID: wid %u / pgid %u out of range (wid 0..%u, pgid 0..255)\n",
			req.wid, req.pgid, DN2_NUM_WID - 1);
		return -EINVAL;
	}
	sr_write(b, req.wid ? DN2_SR_PGID1 : DN2_SR_PGID0, req.pgid);
	WRITE_ONCE(b->pgid[req.wid], req.pgid);
	WRITE_ONCE(b->pgid_set[req.wid], true);
	return 0;
}

/* own_wid: the caller's WID (an unprivileged process setting up its own
 * ring), or DN2_WID_NONE (an administrator: both processes' entries). */
static long ioc_set_amt(struct dn2_board *b, void __user *arg, unsigned int own_wid)
{
	struct dn2_amt req;
	u32 off;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.lid > DN2_SMA_LID_MASK || req.wid >= DN2_NUM_WID ||
	    req.value > DN2_AMT_VALUE_MASK || req.reserved) {
		dev_err(b->dev, "AMT entry: lid 0x%x / wid %u / value 0x%x out of range (lid 16 bits, wid 0..%u, value 12 bits, reserved 0)\n",
			req.lid, req.wid, req.value, DN2_NUM_WID - 1);
		return -EINVAL;
	}
	if (own_wid == DN2_WID_NONE) {
		/* the administrator: for the process whose LLCM holds the entry */
		sr_write(b, DN2_SR_AMT, dn2_amt_encode_dwid(req.value, req.wid, req.lid,
							    dn2_amt_value_wid(req.value)));
		return 0;
	}
	/* A process may only point senders at an entry in its own LLCM. */
	off = req.value * DN2_AMT_UNIT;
	if (off < own_wid * DN2_LLCM_WID_STRIDE ||
	    off + DN2_AMT_ENTRY > own_wid * DN2_LLCM_WID_STRIDE + DN2_LLCM_AREA) {
		dev_dbg(b->dev, "AMT entry 0x%x is not in WID %u's LLCM\n", req.value, own_wid);
		return -EINVAL;
	}
	sr_write(b, DN2_SR_AMT, dn2_amt_encode_dwid(req.value, req.wid, req.lid, own_wid));
	return 0;
}

static long dn2_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct dn2_file *f = filp->private_data;
	struct dn2_board *b = f->b;
	void __user *uarg = (void __user *)arg;
	long ret;

	if (cmd == DN2_IOC_GET_INFO)
		return ioc_get_info(f, uarg);
	if (cmd == DN2_IOC_SET_AMT && f->wid != DN2_WID_NONE) {
		/* a process's own receive ring: no privilege needed */
		if (mutex_lock_interruptible(&b->lock))
			return -EINTR;
		ret = ioc_set_amt(b, uarg, f->wid);
		mutex_unlock(&b->lock);
		return ret;
	}

	switch (cmd) {
	case DN2_IOC_CTL_RESET:
	case DN2_IOC_SDIMM_INIT:
	case DN2_IOC_SET_MTU:
	case DN2_IOC_LINK_UP:
	case DN2_IOC_SET_PGID:
	case DN2_IOC_SET_AMT:
	case DN2_IOC_SMA_RESET:
		break;
	default:
		return -ENOTTY;
	}
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	if (mutex_lock_interruptible(&b->lock))
		return -EINTR;
	switch (cmd) {
	case DN2_IOC_CTL_RESET:
		ret = ioc_ctl_reset(b);
		break;
	case DN2_IOC_SDIMM_INIT:
		ret = ioc_sdimm_init(b, uarg);
		break;
	case DN2_IOC_SET_MTU:
		ret = ioc_set_mtu(b, uarg);
		break;
	case DN2_IOC_LINK_UP:
		ret = ioc_link_up(b, uarg);
		break;
	case DN2_IOC_SET_PGID:
		ret = ioc_set_pgid(b, uarg);
		break;
	case DN2_IOC_SET_AMT:
		ret = ioc_set_amt(b, uarg, DN2_WID_NONE);
		break;
	case DN2_IOC_SMA_RESET:
		sr_write(b, DN2_SR_SMA, 0);
		WRITE_ONCE(b->lid_set, false);
		WRITE_ONCE(b->lid, 0);
		ret = 0;
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&b->lock);
	return ret;
}

/* ------------------------------------------------------- open / release */

static int dn2_open(struct inode *inode, struct file *filp)
{
	struct dn2_board *b = container_of(filp->private_data, struct dn2_board, misc);
	struct dn2_file *f;
	unsigned int wid;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->b = b;
	if (!(filp->f_mode & FMODE_WRITE)) {
		/* A control handle: no WID, no mmap. */
		f->wid = DN2_WID_NONE;
		filp->private_data = f;
		return nonseekable_open(inode, filp);
	}
	mutex_lock(&b->wid_lock);
	for (wid = 0; wid < DN2_NUM_WID; wid++)
		if (!b->owner[wid])
			break;
	if (wid == DN2_NUM_WID) {
		mutex_unlock(&b->wid_lock);
		kfree(f);
		dev_dbg(b->dev, "open by pid %d: both WIDs in use\n", task_tgid_nr(current));
		return -EBUSY;
	}
	b->owner[wid] = get_pid(task_tgid(current));
	mutex_unlock(&b->wid_lock);

	f->wid = wid;
	filp->private_data = f;
	dev_dbg(b->dev, "WID %u given to pid %d\n", wid, task_tgid_nr(current));
	return nonseekable_open(inode, filp);
}

/* Runs when the last reference to the open file goes: close() of every
 * descriptor, munmap() of every mapping, or the death of the holders. */
static int dn2_release(struct inode *inode, struct file *filp)
{
	struct dn2_file *f = filp->private_data;
	struct dn2_board *b = f->b;

	if (f->wid != DN2_WID_NONE) {
		mutex_lock(&b->wid_lock);
		dev_dbg(b->dev, "WID %u released (was pid %d)\n", f->wid,
			pid_nr(b->owner[f->wid]));
		put_pid(b->owner[f->wid]);
		b->owner[f->wid] = NULL;
		mutex_unlock(&b->wid_lock);
	}
	kfree(f);
	return 0;
}

/* ----------------------------------------------------------------- mmap */

/*
 * Uncachable (the thesis's "UC" for LLCM and the User Registers).  On x86,
 * pgprot_noncached() gives UC- (which a write-combining MTRR could turn
 * into WC); the NIC changes these pages behind the CPU's back, so ask for
 * strong UC, the type the driver's own ioremap_uc() of the registers has.
 */
static pgprot_t dn2_pgprot_uc(pgprot_t prot)
{
#ifdef CONFIG_X86
	return __pgprot((pgprot_val(prot) & ~_PAGE_CACHE_MASK) |
			cachemode2protval(_PAGE_CACHE_MODE_UC));
#else
	return pgprot_noncached(prot);
#endif
}

static int dn2_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct dn2_file *f = filp->private_data;
	struct dn2_board *b = f->b;
	unsigned long len = vma->vm_end - vma->vm_start;
	const struct dn2_piece *p = NULL;
	unsigned long off;
	phys_addr_t phys;
	unsigned int i;

	if (f->wid == DN2_WID_NONE)
		return -EACCES;         /* a control handle has no pieces */
	if (vma->vm_pgoff > (ULONG_MAX >> PAGE_SHIFT))
		return -EINVAL;
	off = vma->vm_pgoff << PAGE_SHIFT;
	for (i = 0; i < ARRAY_SIZE(dn2_pieces); i++) {
		if (off >= dn2_pieces[i].off &&
		    off < dn2_pieces[i].off + dn2_pieces[i].len) {
			p = &dn2_pieces[i];
			break;
		}
	}
	if (!p || len > p->off + p->len - off) {
		dev_dbg(b->dev, "mmap offset 0x%lx length 0x%lx: not inside one piece of WID %u\n",
			off, len, f->wid);
		return -EINVAL;
	}
	if (!(vma->vm_flags & VM_SHARED)) {
		dev_dbg(b->dev, "mmap of the %s: MAP_SHARED only\n", p->name);
		return -EINVAL;
	}
	if (p->read_only) {
		if (vma->vm_flags & VM_WRITE) {
			dev_dbg(b->dev, "mmap of the %s: read-only\n", p->name);
			return -EACCES;
		}
		vma->vm_flags &= ~VM_MAYWRITE;
	}

	switch (p->type) {
	case DN2_MT_WC:
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
		break;
	case DN2_MT_UC:
		vma->vm_page_prot = dn2_pgprot_uc(vma->vm_page_prot);
		break;
	case DN2_MT_WB:
		/* The default (cacheable) protection.  PAT may lower it to
		 * UC- if the MTRRs do not make the range write-back. */
		break;
	}
	vma->vm_flags |= VM_IO | VM_DONTEXPAND | VM_DONTDUMP;
	phys = b->base + p->off + f->wid * p->wid_stride + (off - p->off);
	return io_remap_pfn_range(vma, vma->vm_start, PHYS_PFN(phys), len,
				  vma->vm_page_prot);
}

static const struct file_operations dn2_fops = {
	.owner = THIS_MODULE,
	.open = dn2_open,
	.release = dn2_release,
	.mmap = dn2_mmap,
	.unlocked_ioctl = dn2_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

/* ---------------------------------------------------------------- sysfs */

static ssize_t board_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", b->index);
}
static DEVICE_ATTR_RO(board);

static ssize_t window_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%pa 0x%x\n", &b->base, DN2_WINDOW_SIZE);
}
static DEVICE_ATTR_ADMIN_RO(window);

static ssize_t sma_lid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "0x%llx\n", sr_read(b, DN2_SR_SMA));
}
static DEVICE_ATTR_RO(sma_lid);

static ssize_t link_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n",
			  link_state(sr_read(b, DN2_SR_SMA)) == DN2_SMA_LINK_READY ?
			  "up" : "down");
}
static DEVICE_ATTR_RO(link);

static ssize_t lid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return READ_ONCE(b->lid_set) ? sysfs_emit(buf, "%u\n", READ_ONCE(b->lid))
				     : sysfs_emit(buf, "none\n");
}
static DEVICE_ATTR_RO(lid);

static ssize_t mtu_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(b->mtu));
}
static DEVICE_ATTR_RO(mtu);

static ssize_t sdimm_module_mib_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(b->sdimm_module_mib));
}
static DEVICE_ATTR_RO(sdimm_module_mib);

static ssize_t sdimm_ready_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n",
			  !!(ur_read(b, 0, DN2_UR_CTL_STATUS) & DN2_CS_SDIMM_READY));
}
static DEVICE_ATTR_RO(sdimm_ready);

static struct attribute *dn2_board_attrs[] = {
	&dev_attr_board.attr,
	&dev_attr_window.attr,
	&dev_attr_sma_lid.attr,
	&dev_attr_link.attr,
	&dev_attr_lid.attr,
	&dev_attr_mtu.attr,
	&dev_attr_sdimm_module_mib.attr,
	&dev_attr_sdimm_ready.attr,
	NULL,
};

static const struct attribute_group dn2_board_group = {
	.attrs = dn2_board_attrs,
};

/* Per-WID attributes, in subdirectories wid0/ and wid1/. */
struct dn2_wid_attr {
	struct device_attribute attr;
	unsigned int wid;
};
#define to_wid(a) (container_of(a, struct dn2_wid_attr, attr)->wid)

static ssize_t owner_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);
	unsigned int wid = to_wid(attr);
	ssize_t n;

	mutex_lock(&b->wid_lock);
	n = b->owner[wid] ? sysfs_emit(buf, "%d\n", pid_vnr(b->owner[wid]))
			  : sysfs_emit(buf, "none\n");
	mutex_unlock(&b->wid_lock);
	return n;
}

static ssize_t prim_counter_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);
	u64 v = ur_read(b, to_wid(attr), DN2_UR_PRIM_COUNTER);

	/* BOTF VL VS RVL RVS IPUSH (thesis Table A.2 order). */
	return sysfs_emit(buf, "%u %u %u %u %u %u\n",
			  dn2_pc_field(v, DN2_PC_BOTF), dn2_pc_field(v, DN2_PC_VL),
			  dn2_pc_field(v, DN2_PC_VS), dn2_pc_field(v, DN2_PC_RVL),
			  dn2_pc_field(v, DN2_PC_RVS), dn2_pc_field(v, DN2_PC_IPUSH));
}

static ssize_t pkt_counter_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", ur_read(b, to_wid(attr), DN2_UR_PKT_COUNTER));
}

static ssize_t ctl_status_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "0x%llx\n", ur_read(b, to_wid(attr), DN2_UR_CTL_STATUS));
}

static ssize_t pgid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct dn2_board *b = dev_get_drvdata(dev);
	unsigned int wid = to_wid(attr);

	return READ_ONCE(b->pgid_set[wid]) ? sysfs_emit(buf, "%u\n", READ_ONCE(b->pgid[wid]))
					   : sysfs_emit(buf, "none\n");
}

#define DN2_WID_ATTR(_name, _wid) \
	static struct dn2_wid_attr dn2_attr_##_name##_wid = { \
		.attr = __ATTR(_name, 0444, _name##_show, NULL), .wid = _wid }

#define DN2_WID_ATTRS(_wid) \
	DN2_WID_ATTR(owner, _wid); \
	DN2_WID_ATTR(prim_counter, _wid); \
	DN2_WID_ATTR(pkt_counter, _wid); \
	DN2_WID_ATTR(ctl_status, _wid); \
	DN2_WID_ATTR(pgid, _wid); \
	static struct attribute *dn2_wid##_wid##_attrs[] = { \
		&dn2_attr_owner##_wid.attr.attr, \
		&dn2_attr_prim_counter##_wid.attr.attr, \
		&dn2_attr_pkt_counter##_wid.attr.attr, \
		&dn2_attr_ctl_status##_wid.attr.attr, \
		&dn2_attr_pgid##_wid.attr.attr, \
		NULL, \
	}; \
	static const struct attribute_group dn2_wid##_wid##_group = { \
		.name = "wid" #_wid, \
		.attrs = dn2_wid##_wid##_attrs, \
	}

DN2_WID_ATTRS(0);
DN2_WID_ATTRS(1);

static const struct attribute_group *dn2_groups[] = {
	&dn2_board_group,
	&dn2_wid0_group,
	&dn2_wid1_group,
	NULL,
};

/* ---------------------------------------------------------------- probe */

static int board_index(struct platform_device *pdev, unsigned int *index)
{
	struct acpi_device *adev = ACPI_COMPANION(&pdev->dev);
	const char *uid = adev ? acpi_device_uid(adev) : NULL;

	if (adev) {
		if (!uid || kstrtouint(uid, 0, index)) {
			dev_err(&pdev->dev, "ACPI device has no numeric _UID (%s): cannot number the board\n",
				uid ? uid : "none");
			return -EINVAL;
		}
	} else if (pdev->id >= 0) {
		*index = pdev->id;
	} else {
		*index = 0;
	}
	if (*index >= DN2_MAX_BOARDS) {
		dev_err(&pdev->dev, "board index %u too large (at most %u boards)\n",
			*index, DN2_MAX_BOARDS);
		return -EINVAL;
	}
	return 0;
}

static void dn2_index_put(void *data)
{
	unsigned int index = (unsigned long)data;

	mutex_lock(&dn2_index_lock);
	clear_bit(index, dn2_index_used);
	mutex_unlock(&dn2_index_lock);
}

static int dn2_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct dn2_board *b;
	struct resource *res;
	u64 cs;
	int ret;

	b = devm_kzalloc(dev, sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->dev = dev;
	mutex_init(&b->lock);
	mutex_init(&b->wid_lock);
	config_reset(b);

	ret = board_index(pdev, &b->index);
	if (ret)
		return ret;

	res = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!res) {
		dev_err(dev, "no memory resource: the firmware (_CRS) or addr= must give the window\n");
		return -EINVAL;
	}
	if (resource_size(res) < DN2_WINDOW_SIZE) {
		dev_err(dev, "window %pR is smaller than 0x%x bytes\n", res, DN2_WINDOW_SIZE);
		return -EINVAL;
	}
	if (res->start & (DN2_BASE_ALIGN - 1)) {
		dev_err(dev, "window %pR is not %u KiB aligned\n", res, DN2_BASE_ALIGN >> 10);
		return -EINVAL;
	}
	b->base = res->start;

	if (!devm_request_mem_region(dev, b->base, DN2_WINDOW_SIZE, DN2_DRV_NAME)) {
		dev_err(dev, "window %pR is in use by another driver\n", res);
		return -EBUSY;
	}
	/* The driver itself touches only the register pages, UC. */
	b->ur = devm_ioremap_uc(dev, b->base + DN2_UR_BASE, DN2_NUM_WID * DN2_UR_WID_STRIDE);
	b->sr = devm_ioremap_uc(dev, b->base + DN2_SR_BASE, DN2_SR_PAGE);
	if (!b->ur || !b->sr) {
		dev_err(dev, "cannot map the register pages of %pR\n", res);
		return -ENOMEM;
	}
	/* Without PAT, WC comes from an MTRR (no-op with PAT). */
	ret = devm_arch_phys_wc_add(dev, b->base + DN2_WW_BASE, DN2_REGION_SIZE);
	if (ret < 0)
		dev_dbg(dev, "no write-combining MTRR for the Write Window (%d)\n", ret);

	/* No ID register exists: only refuse an address where nothing answers. */
	cs = ur_read(b, 0, DN2_UR_CTL_STATUS);
	if (cs == ~0ULL) {
		dev_err(dev, "no DIMMnet-2 answers at %pa: Controller Status reads all ones\n",
			&b->base);
		return -ENODEV;
	}

	mutex_lock(&dn2_index_lock);
	if (test_and_set_bit(b->index, dn2_index_used)) {
		mutex_unlock(&dn2_index_lock);
		dev_err(dev, "board index %u is already used by another DIMMnet-2 (same ACPI _UID, or addr= for a board ACPI already gave?)\n",
			b->index);
		return -EBUSY;
	}
	mutex_unlock(&dn2_index_lock);
	ret = devm_add_action_or_reset(dev, dn2_index_put, (void *)(unsigned long)b->index);
	if (ret)
		return ret;

	platform_set_drvdata(pdev, b);
	snprintf(b->name, sizeof(b->name), DN2_DRV_NAME "-%u", b->index);
	b->misc.minor = MISC_DYNAMIC_MINOR;
	b->misc.name = b->name;
	b->misc.fops = &dn2_fops;
	b->misc.parent = dev;
	b->misc.mode = 0666;
	ret = misc_register(&b->misc);
	if (ret) {
		dev_err(dev, "cannot register /dev/%s: %d\n", b->name, ret);
		return ret;
	}
	dev_info(dev, "DIMMnet-2 board %u at %pa (0x%x bytes): /dev/%s\n",
		 b->index, &b->base, DN2_WINDOW_SIZE, b->name);
	return 0;
}

static int dn2_remove(struct platform_device *pdev)
{
	struct dn2_board *b = platform_get_drvdata(pdev);

	/* No file can be open: each holds a module reference, and the
	 * driver cannot be unbound through sysfs (suppress_bind_attrs). */
	misc_deregister(&b->misc);
	return 0;
}

static const struct acpi_device_id dn2_acpi_ids[] = {
	{ DN2_ACPI_HID, 0 },
	{ }
};
MODULE_DEVICE_TABLE(acpi, dn2_acpi_ids);

static struct platform_driver dn2_driver = {
	.probe = dn2_probe,
	.remove = dn2_remove,
	.driver = {
		.name = DN2_DRV_NAME,
		.acpi_match_table = ACPI_PTR(dn2_acpi_ids),
		.dev_groups = dn2_groups,
		.suppress_bind_attrs = true,
	},
};

/* ------------------------------------------------------- module init/exit */

static void dn2_unregister_forced(void)
{
	int i;

	for (i = ARRAY_SIZE(dn2_forced) - 1; i >= 0; i--) {
		if (dn2_forced[i])
			platform_device_unregister(dn2_forced[i]);
		dn2_forced[i] = NULL;
	}
}

/* addr=/addr2=: a platform device at a fixed address (tpm_tis "force"). */
static int dn2_register_forced(int id, unsigned long a, const char *param)
{
	struct resource res = DEFINE_RES_MEM_NAMED(a, DN2_WINDOW_SIZE, DN2_DRV_NAME);
	struct platform_device *pdev;

	if (a & (DN2_BASE_ALIGN - 1)) {
		pr_err("%s=0x%lx: the window must be %u KiB aligned\n", param, a,
		       DN2_BASE_ALIGN >> 10);
		return -EINVAL;
	}
	pdev = platform_device_register_simple(DN2_DRV_NAME, id, &res, 1);
	if (IS_ERR(pdev)) {
		pr_err("%s=0x%lx: cannot register the device: %ld (does ACPI already describe a board there?)\n",
		       param, a, PTR_ERR(pdev));
		return PTR_ERR(pdev);
	}
	dn2_forced[id] = pdev;
	if (!pdev->dev.driver) {
		pr_err("%s=0x%lx: no board bound there (see the messages above)\n", param, a);
		return -ENODEV;
	}
	return 0;
}

static int __init dn2_init(void)
{
	int ret;

	if (!use_acpi) {
		if (!addr && !addr2) {
			pr_err("use_acpi=0 needs addr= (and/or addr2=)\n");
			return -EINVAL;
		}
		dn2_driver.driver.acpi_match_table = NULL;
	}
	ret = platform_driver_register(&dn2_driver);
	if (ret)
		return ret;
	if (addr)
		ret = dn2_register_forced(0, addr, "addr");
	if (!ret && addr2)
		ret = dn2_register_forced(1, addr2, "addr2");
	if (ret) {
		dn2_unregister_forced();
		platform_driver_unregister(&dn2_driver);
	}
	return ret;
}

static void __exit dn2_exit(void)
{
	dn2_unregister_forced();
	platform_driver_unregister(&dn2_driver);
}

module_init(dn2_init);
module_exit(dn2_exit);

MODULE_DESCRIPTION("DIMMnet-2 memory-slot network interface");
MODULE_AUTHOR("DIMMnet-2 for QEMU project");
MODULE_LICENSE("Dual MIT/GPL");
