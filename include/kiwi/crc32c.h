/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: table-driven CRC32c (the MPA FPDU CRC, RFC 5044 section 4.4)
 * that can copy the bytes it covers in the same pass.
 *
 * Placing a received FPDU means copying its payload out of the socket
 * buffer and checking its CRC.  Where the CRC is computed from tables
 * (no CRC instruction, or one slower than the tables, as under CPU
 * emulation) the two separate passes cost about the same each; one loop
 * that loads eight bytes, stores them and folds them into the CRC costs
 * little more than the CRC alone.  "Slice-by-8": eight 256-entry tables,
 * table k giving the CRC contribution of a byte followed by k zero
 * bytes, so eight input bytes take eight lookups and no serial shifts.
 *
 * Compiles in the kernel and in user space (selftests/wire/crc32c.c).
 */
#ifndef KIWI_CRC32C_H
#define KIWI_CRC32C_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <asm/byteorder.h>
#define kiwi_crc_le64(x)	le64_to_cpu((__force __le64)(x))
#else
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>
#include <linux/types.h>
#define kiwi_crc_le64(x)	le64toh(x)
#endif

#define KIWI_CRC32C_POLY	0x82f63b78	/* Castagnoli, bit-reversed */

struct kiwi_crc_tab {
	__u32 t[8][256];
};

static inline void kiwi_crc_tab_init(struct kiwi_crc_tab *tab)
{
	unsigned int i, k;

	for (i = 0; i < 256; i++) {
		__u32 c = i;

		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? KIWI_CRC32C_POLY : 0);
		tab->t[0][i] = c;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++)
			tab->t[k][i] = (tab->t[k - 1][i] >> 8) ^
				       tab->t[0][tab->t[k - 1][i] & 0xff];
}

/* Eight bytes, as a little-endian word, folded into @crc. */
static inline __u32 kiwi_crc_fold8(const struct kiwi_crc_tab *tab,
				   __u32 crc, __u64 v)
{
	__u32 lo = (__u32)v ^ crc, hi = (__u32)(v >> 32);

	return tab->t[7][lo & 0xff] ^ tab->t[6][(lo >> 8) & 0xff] ^
	       tab->t[5][(lo >> 16) & 0xff] ^ tab->t[4][lo >> 24] ^
	       tab->t[3][hi & 0xff] ^ tab->t[2][(hi >> 8) & 0xff] ^
	       tab->t[1][(hi >> 16) & 0xff] ^ tab->t[0][hi >> 24];
}

static inline __u32 kiwi_crc_fold1(const struct kiwi_crc_tab *tab,
				   __u32 crc, __u8 b)
{
	return (crc >> 8) ^ tab->t[0][(crc ^ b) & 0xff];
}

/*
 * Copy @len bytes from @src to @dst and return @crc extended over them
 * (no pre- or post-inversion: the caller's running CRC goes in and out
 * as with the kernel's crc32c()).  The buffers must not overlap.
 */
static inline __u32 kiwi_crc_copy(const struct kiwi_crc_tab *tab, __u32 crc,
				  void *dst, const void *src, size_t len)
{
	const __u8 *s = (const __u8 *)src;
	__u8 *d = (__u8 *)dst;

	for (; len >= 8; len -= 8, s += 8, d += 8) {
		/* Stored as loaded: only the CRC needs the byte order. */
		__u64 raw;

		memcpy(&raw, s, sizeof(raw));
		memcpy(d, &raw, sizeof(raw));
		crc = kiwi_crc_fold8(tab, crc, kiwi_crc_le64(raw));
	}
	for (; len; len--, s++, d++) {
		*d = *s;
		crc = kiwi_crc_fold1(tab, crc, *s);
	}
	return crc;
}

/* @crc extended over @len bytes at @src, read only (as kiwi_crc_copy()). */
static inline __u32 kiwi_crc_update(const struct kiwi_crc_tab *tab, __u32 crc,
				    const void *src, size_t len)
{
	const __u8 *s = (const __u8 *)src;

	for (; len >= 8; len -= 8, s += 8) {
		__u64 raw;

		memcpy(&raw, s, sizeof(raw));
		crc = kiwi_crc_fold8(tab, crc, kiwi_crc_le64(raw));
	}
	for (; len; len--, s++)
		crc = kiwi_crc_fold1(tab, crc, *s);
	return crc;
}

#endif /* KIWI_CRC32C_H */
