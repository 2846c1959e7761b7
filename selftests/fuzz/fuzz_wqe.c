// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_wqe -- libFuzzer target for the validation of the work queue
 * entries a process writes into its mapped rings (include/kiwi/wqe.h,
 * which kmod/qp.c runs on every send and receive WQE it takes from a
 * user ring).
 *
 * Input: byte 0 picks the queue's limits (max SGEs 0..8, inline bytes,
 * and thus the slot stride the kernel would have given the ring), byte 1
 * send or receive; the rest fills one ring slot of exactly that stride,
 * in a heap buffer of exactly that size, so AddressSanitizer sees any
 * read past the slot.  The slot is then loaded the way the kernel loads
 * it -- header copied once and checked, then the list or inline data it
 * announces copied once and checked -- and an accepted WQE must obey
 * the queue's limits: SGE count, inline length, lengths that add up
 * (compared with a 64-bit sum), and nothing read outside the slot.
 *
 * Byte 1's low two bits: 0 receive, 1 send, 3 READ, 2 BIND_MW.  A
 * BIND_MW is loaded as kmod/sq.c loads one (a header without SGEs or
 * inline data, then struct kiwi_ubind if the slot holds it), and
 * kiwi_ubind_check() must accept exactly the binds whose rights are a
 * window's, whose new STag keeps the window's index and whose range
 * does not wrap (compared in 128 bits).
 */
#include "fuzz.h"

#include <kiwi/wqe.h>

/* The kernel's ring strides (kmod/qp.c: kiwi_sq_payload, kiwi_rq_stride). */
static uint32_t sq_stride(uint32_t max_sge, uint32_t max_inline)
{
	uint32_t sges = (max_sge ? max_sge : 1) * sizeof(struct kiwi_usge);
	uint32_t inl = (max_inline + sizeof(struct kiwi_usge) - 1) /
		       sizeof(struct kiwi_usge) * sizeof(struct kiwi_usge);

	return sizeof(struct kiwi_usqe) + (sges > inl ? sges : inl);
}

static uint32_t rq_stride(uint32_t max_sge)
{
	return sizeof(struct kiwi_urqe) +
	       (max_sge ? max_sge : 1) * sizeof(struct kiwi_usge);
}

static void check_sges(const struct kiwi_usge *sge, uint32_t n, uint32_t lim)
{
	uint64_t sum = 0;
	uint32_t bytes = 0, i;
	enum kiwi_wqe_err e;

	FUZZ_ASSERT(n <= lim && n <= KIWI_MAX_SGE);
	for (i = 0; i < n; i++)
		sum += sge[i].length;
	e = kiwi_usge_total(sge, n, &bytes);
	if (sum > UINT32_MAX)
		FUZZ_ASSERT(e == KIWI_WQE_LEN_OVERFLOW);
	else
		FUZZ_ASSERT(e == KIWI_WQE_OK && bytes == sum);
}

static void send_wqe(const uint8_t *slot, const struct kiwi_wqe_limits *lim,
		     bool is_read)
{
	struct kiwi_usge sge[KIWI_MAX_SGE];
	struct kiwi_usqe h;
	uint8_t inl[KIWI_MAX_INLINE];

	memcpy(&h, slot, sizeof(h));
	if (kiwi_usqe_check(&h, lim, is_read ? 1 : KIWI_MAX_SGE, is_read))
		return;
	FUZZ_ASSERT(!(h.flags & ~KIWI_UWR_F_ALL));
	if (h.flags & KIWI_UWR_F_INLINE) {
		FUZZ_ASSERT(!is_read && !h.num_sge);
		FUZZ_ASSERT(h.length <= lim->max_inline &&
			    h.length <= KIWI_MAX_INLINE);
		memcpy(inl, slot + sizeof(h), h.length);
		return;
	}
	FUZZ_ASSERT(!is_read || h.num_sge <= 1);
	memcpy(sge, slot + sizeof(h), h.num_sge * sizeof(sge[0]));
	check_sges(sge, h.num_sge, lim->max_sge);
}

static void bind_wqe(const uint8_t *slot, const struct kiwi_wqe_limits *lim)
{
	struct kiwi_ubind ub;
	struct kiwi_usqe h;
	enum kiwi_wqe_err e;
	bool ok;

	memcpy(&h, slot, sizeof(h));
	if (kiwi_usqe_check(&h, lim, 0, true))
		return;
	FUZZ_ASSERT(!h.num_sge && !(h.flags & KIWI_UWR_F_INLINE));
	if (!kiwi_ubind_in_slot(lim->stride))
		return;
	FUZZ_ASSERT(sizeof(h) + sizeof(ub) <= lim->stride);
	memcpy(&ub, slot + sizeof(h), sizeof(ub));
	e = kiwi_ubind_check(&h, &ub);
	ok = !(ub.access & ~(uint32_t)KIWI_UBIND_ACCESS_ALL) &&
	     (h.inv_rkey >> 8) == (h.rkey >> 8) &&
	     (unsigned __int128)h.raddr + ub.length <= UINT64_MAX;
	FUZZ_ASSERT(ok == (e == KIWI_WQE_OK));
	/* What the kernel may then rely on. */
	if (e == KIWI_WQE_OK)
		FUZZ_ASSERT(h.raddr + ub.length >= h.raddr &&
			    !(ub.access & (1u << 4)));	/* no MW_BIND */
}

static void recv_wqe(const uint8_t *slot, const struct kiwi_wqe_limits *lim)
{
	struct kiwi_usge sge[KIWI_MAX_SGE];
	struct kiwi_urqe h;

	memcpy(&h, slot, sizeof(h));
	if (kiwi_urqe_check(&h, lim))
		return;
	memcpy(sge, slot + sizeof(h), h.num_sge * sizeof(sge[0]));
	check_sges(sge, h.num_sge, lim->max_sge);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t inline_sizes[] = { 0, 1, 16, 64, 100, 256 };
	struct kiwi_wqe_limits lim;
	bool send, is_read, bind;
	uint8_t *slot;
	size_t have;

	if (size < 2)
		return 0;
	lim.max_sge = data[0] % (KIWI_MAX_SGE + 1);
	lim.max_inline = inline_sizes[(data[0] >> 4) % 6];
	send = data[1] & 1;
	is_read = (data[1] & 3) == 3;
	bind = (data[1] & 3) == 2;
	send |= bind;
	if (!send)
		lim.max_inline = 0;
	lim.stride = send ? sq_stride(lim.max_sge, lim.max_inline) :
			    rq_stride(lim.max_sge);
	/* Odd strides too: the check must not rely on the kernel's. */
	if (data[1] & 4)
		lim.stride -= (data[1] >> 3) % lim.stride;
	slot = malloc(lim.stride);
	FUZZ_ASSERT(slot);
	memset(slot, 0, lim.stride);
	have = size - 2 < lim.stride ? size - 2 : lim.stride;
	memcpy(slot, data + 2, have);
	if (lim.stride >= (send ? sizeof(struct kiwi_usqe) :
				   sizeof(struct kiwi_urqe))) {
		if (bind)
			bind_wqe(slot, &lim);
		else if (send)
			send_wqe(slot, &lim, is_read);
		else
			recv_wqe(slot, &lim);
	}
	free(slot);
	return 0;
}
