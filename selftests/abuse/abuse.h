/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * abuse.h -- what the abuse-test programs (selftests/abuse/) share: the
 * private data a victim accepts with, and fill patterns.  Also included
 * by the kernel-side victim selftests/kconsumer/kiwi_frmr_test.c.
 */
#ifndef KIWI_ABUSE_H
#define KIWI_ABUSE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define ABUSE_PORT	7400
#define VICTIM_MAGIC	0x7669636d	/* "vicm" */
#define PAT_VICTIM	0x5a		/* the victim's region */
#define PAT_PEER	0xe7		/* what the peer writes */

/* Accept private data, network byte order. */
struct victim_info {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
} __attribute__((packed));

#endif /* KIWI_ABUSE_H */
