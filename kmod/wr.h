/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: work requests as the kernel keeps them -- SGEs, receive WQEs,
 * what the send queue keeps per slot and the WQE being sent, bind WRs,
 * and the ring opcodes only kernel consumers use.  Its own header, below
 * qp.h, because struct kiwi_rx (rx.h) holds a receive WQE and struct
 * kiwi_qp (qp.h) holds both the receive state and the WQE being sent.
 * Included by rx.h and qp.h; the files that use it get it from qp.h.
 */
#ifndef KIWI_WR_H
#define KIWI_WR_H

#include "kiwi.h"

/* A bind work request, validated in form only (mw.c checks the rest). */
struct kiwi_bind {
	u32 mw_stag;			/* the window (its index counts) */
	u32 new_stag;			/* same index, the new key */
	u32 mr_lkey;
	u32 access;			/* IB_ACCESS_REMOTE_*, IB_ZERO_BASED */
	u64 addr;			/* in the region */
	u64 len;
};

/* A scatter/gather element as kept on our queues. */
struct kiwi_sge {
	u64 addr;
	u32 len;
	u32 lkey;
};

struct kiwi_rqe {
	u64 wr_id;
	u32 num_sge;
	struct kiwi_sge sge[KIWI_MAX_SGE];
};

/* Per-SQE transmit progress, owned by the send path. */
enum kiwi_sqe_state {
	KIWI_SQE_QUEUED,		/* not yet (fully) transmitted */
	KIWI_SQE_WAIT_RESP,		/* READ or atomic sent, response due */
	KIWI_SQE_DONE,			/* may be retired */
};

/*
 * What the kernel remembers per send queue slot once it has started the
 * WQE there, until the WQE is retired.  Kept small: the WQE itself is
 * copied into kiwi_qp.sq_cur only while it is being transmitted.
 */
struct kiwi_sq_slot {
	u64 wr_id;
	u64 sink_addr;			/* RDMA READ, atomic: local sink */
	u32 sink_lkey;
	u32 bytes;
	u32 req_id;			/* atomic: its Request Identifier */
	u8 opcode;			/* enum ib_wr_opcode */
	u8 signaled;
	u8 state;			/* enum kiwi_sqe_state */
	u8 status;			/* enum ib_wc_status when done */
};

/* A send WQE being transmitted: validated kernel copy of a ring slot. */
struct kiwi_sqe {
	u64 wr_id;
	u32 bytes;			/* total payload length */
	u32 sent;			/* payload bytes transmitted */
	u32 opcode;			/* enum ib_wr_opcode */
	u32 flags;			/* IB_SEND_* */
	u32 num_sge;
	u32 rkey;			/* remote STag (WRITE, READ) */
	u64 raddr;			/* remote tagged offset */
	/* immediate, rkey to invalidate or an atomic's Request Identifier */
	u32 ex;
	u64 compare_add;		/* atomic operands */
	u64 swap;
	struct kiwi_sge sge[KIWI_MAX_SGE];
	u8 *inline_data;		/* kiwi_qp.sq_inline, or NULL */
	struct kiwi_bind bind;		/* IB_WR_BIND_MW */
};

/*
 * Send ring opcodes only kernel consumers may use (their WRs are encoded
 * into the same ring format as user WQEs, above the user opcode range):
 * READ with local invalidate; LOCAL_INV (inv_rkey: the STag); REG_MR
 * (rkey: the MR's STag, inv_rkey: its new key, raddr: access flags).
 */
enum {
	KIWI_KWR_FIRST = 0x80,
	KIWI_KWR_READ_INV = KIWI_KWR_FIRST,
	KIWI_KWR_LOCAL_INV,
	KIWI_KWR_REG_MR,
	KIWI_KWR_END
};

/* An RDMA READ work request, with or without local invalidation. */
static inline bool kiwi_wr_is_read(u32 opcode)
{
	return opcode == IB_WR_RDMA_READ || opcode == IB_WR_RDMA_READ_WITH_INV;
}

static inline bool kiwi_wr_is_atomic(u32 opcode)
{
	return opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/* Waits for a response from the peer, so takes an ORD credit. */
static inline bool kiwi_wr_takes_ord(u32 opcode)
{
	return kiwi_wr_is_read(opcode) || kiwi_wr_is_atomic(opcode);
}

#endif /* KIWI_WR_H */
