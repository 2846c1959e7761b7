// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: MPA CRC32c -- choose the faster of the kernel's two CRC32c
 * implementations once, at module load.
 *
 * crc32c() goes through the crypto API and uses the CPU's CRC32
 * instruction where there is one; __crc32c_le() is lib/crc32's table
 * ("slice-by-8") code.  On real x86 hardware the instruction is many
 * times faster.  Under CPU emulation (QEMU TCG, where software RDMA is
 * often tested) the instruction is emulated one bit at a time and the
 * table code wins by about four times.  Both give identical results,
 * so the choice is a pure speed question: measure it, as the kernel
 * does for RAID-6 and XOR routines.
 *
 * With the tables chosen, payload is copied and checked in one pass
 * (kiwi_crc_copy_mem()), when received and when sent, instead of a copy
 * followed by a CRC pass.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "kiwi.h"
#include <kiwi/crc32c.h>

DEFINE_STATIC_KEY_FALSE(kiwi_crc_table);

/* Slice-by-8 tables for the one-pass copy (8 KiB, built at load). */
static struct kiwi_crc_tab kiwi_crc_tab __read_mostly;

/* Where the probe's results go, so the compiler cannot drop the work. */
static u32 kiwi_crc_sink;

/*
 * Whether new connections ask for CRC32c in their MPA frame; either
 * side asking makes both use it (RFC 5044 section 7.1).  The CM reads
 * it (iwcm.c, cm.c); it is here, with the CRC code, so that the CM
 * reads nothing of main.c's.
 */
bool kiwi_crc_default = true;
module_param_named(crc, kiwi_crc_default, bool, 0644);
MODULE_PARM_DESC(crc, "Request MPA CRC32c on new connections (default Y)");

static char *crc_impl = "auto";
module_param(crc_impl, charp, 0444);
MODULE_PARM_DESC(crc_impl, "CRC32c implementation: auto (measured at load, default), crypto (crypto API, CPU instructions where available) or table (lib/crc32 tables)");

#define KIWI_CRC_PROBE_LEN	4096
#define KIWI_CRC_PROBE_NS	(2 * NSEC_PER_MSEC)

/* MB/s of @fn over @buf, measured for about KIWI_CRC_PROBE_NS. */
static u64 kiwi_crc_speed(u32 (*fn)(u32, const void *, unsigned int),
			  const u8 *buf)
{
	u64 start = ktime_get_ns(), ns, bytes = 0;
	u32 crc = ~0U;

	do {
		crc = fn(crc, buf, KIWI_CRC_PROBE_LEN);
		bytes += KIWI_CRC_PROBE_LEN;
		ns = ktime_get_ns() - start;
	} while (ns < KIWI_CRC_PROBE_NS);
	WRITE_ONCE(kiwi_crc_sink, crc);
	return div64_u64(bytes * 1000, ns ?: 1);
}

/* __crc32c_le() in the shape of crc32c(). */
static u32 kiwi_crc_lib(u32 crc, const void *p, unsigned int len)
{
	return __crc32c_le(crc, p, len);
}

/*
 * Copy @len bytes and, unless @crc is NULL, extend *@crc over them.
 * With the table CRC in use that is one pass (include/kiwi/crc32c.h);
 * with a CRC instruction the CRC reads the bytes just copied, still in
 * the cache.
 */
void kiwi_crc_copy_mem(void *dst, const void *src, size_t len, u32 *crc)
{
	if (!crc)
		memcpy(dst, src, len);
	else if (static_branch_unlikely(&kiwi_crc_table))
		*crc = kiwi_crc_copy(&kiwi_crc_tab, *crc, dst, src, len);
	else
		*crc = crc32c(*crc, memcpy(dst, src, len), len);
}

/* The three implementations give one result; the copy copies. */
static bool kiwi_crc_agree(u8 *buf)
{
	u8 *copy = buf + KIWI_CRC_PROBE_LEN;
	u32 crc = crc32c(~0U, buf, KIWI_CRC_PROBE_LEN);

	return crc == kiwi_crc_lib(~0U, buf, KIWI_CRC_PROBE_LEN) &&
	       crc == kiwi_crc_copy(&kiwi_crc_tab, ~0U, copy, buf,
				    KIWI_CRC_PROBE_LEN) &&
	       !memcmp(copy, buf, KIWI_CRC_PROBE_LEN);
}

int kiwi_crc_init(void)
{
	u64 crypto_mbs, table_mbs;
	bool table;
	u8 *buf;
	int i;

	kiwi_crc_tab_init(&kiwi_crc_tab);
	if (!strcmp(crc_impl, "table")) {
		static_branch_enable(&kiwi_crc_table);
		return 0;
	}
	if (!strcmp(crc_impl, "crypto"))
		return 0;
	if (strcmp(crc_impl, "auto")) {
		pr_err("crc_impl=%s: use auto, crypto or table\n", crc_impl);
		return -EINVAL;
	}

	buf = kmalloc(2 * KIWI_CRC_PROBE_LEN, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < KIWI_CRC_PROBE_LEN; i++)
		buf[i] = i * 37 + (i >> 8);	/* every byte lane differs */
	if (!kiwi_crc_agree(buf)) {
		/* Cannot happen with a sane kernel; stay with crypto. */
		pr_warn("CRC32c implementations disagree, using crypto\n");
		kfree(buf);
		return 0;
	}
	crypto_mbs = kiwi_crc_speed(crc32c, buf);
	table_mbs = kiwi_crc_speed(kiwi_crc_lib, buf);
	kfree(buf);
	table = table_mbs > crypto_mbs;
	if (table)
		static_branch_enable(&kiwi_crc_table);
	pr_info("CRC32c: crypto %llu MB/s, table %llu MB/s: using %s\n",
		crypto_mbs, table_mbs, table ? "table" : "crypto");
	return 0;
}
