// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the receive path's handling of a peer's TERMINATE (RFC 5040
 * section 4.8) -- its bytes kept for kiwi_term_parse() as they arrive,
 * then the verdict logged and the QP failed: the TERMINATE row of
 * rxops.c's kiwi_rx_ops[].
 */
#include <linux/skbuff.h>

#include "rxterm.h"
#include "trace.h"

/* Its header is in, and on the right queue with the right MSN. */
int kiwi_rx_begin_term(struct kiwi_qp *qp, enum kiwi_order_act act)
{
	qp->rx.term_have = 0;
	qp->rx.term_len = qp->rx.fr.data_rem;
	return 0;
}

/*
 * The bytes after a TERMINATE's control word: the first
 * KIWI_TERM_MAX_REST, all a well-formed one has, are kept for
 * kiwi_term_parse(); any excess only goes through the CRC.
 */
int kiwi_rx_place_term(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		       u32 len)
{
	struct kiwi_rx *rx = &qp->rx;
	u32 *crc = kiwi_rx_crcp(qp);
	u8 buf[64];

	while (len) {
		u32 n = min_t(u32, len, sizeof(buf));
		u32 keep = min_t(u32, n, sizeof(rx->term_rest) - rx->term_have);

		skb_copy_bits(skb, off, buf, n);
		if (crc)
			*crc = kiwi_crc32c(*crc, buf, n);
		memcpy(rx->term_rest + rx->term_have, buf, keep);
		rx->term_have += keep;
		off += n;
		len -= n;
	}
	return 0;
}

static const char *const kiwi_term_whys[] = {
	[KIWI_TW_OK] = "ok",
	[KIWI_TW_LAYER] = "unknown layer",
	[KIWI_TW_ETYPE] = "unknown error type",
	[KIWI_TW_RSVD] = "reserved bits set",
	[KIWI_TW_M_NO_D] = "M bit without D bit",
	[KIWI_TW_SHORT] = "shorter than its D/R bits say",
	[KIWI_TW_LONG] = "longer than its D/R bits say",
	[KIWI_TW_SEGLEN] = "DDP segment length below the copied headers",
};

/*
 * The peer terminated.  Whatever its TERMINATE says, the stream ends and
 * nothing is sent back (RFC 5040 section 7.2), so a malformed one is
 * only logged, on a line of its own after the usual one.
 */
void kiwi_rx_end_term(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_term *t = (void *)(rx->fr.hdr.raw +
				       sizeof(struct kiwi_hdr_untagged));
	struct kiwi_term_info ti;
	static const enum kiwi_stat by_layer[] = {
		[KIWI_TL_RDMAP] = KIWI_STAT_TERM_RX_RDMAP,
		[KIWI_TL_DDP] = KIWI_STAT_TERM_RX_DDP,
		[KIWI_TL_LLP] = KIWI_STAT_TERM_RX_LLP,
	};

	kiwi_term_parse(t, rx->term_rest, rx->term_have, rx->term_len, &ti);
	ibdev_info_ratelimited(qp->ibqp.device, "QP %u: peer TERMINATE layer %u type %u code 0x%02x%s\n",
			       qp->ibqp.qp_num, ti.layer, ti.etype, ti.ecode,
			       ti.siw_order ?
			       " (fields in Linux siw's bit order)" : "");
	if (ti.why)
		ibdev_warn_ratelimited(qp->ibqp.device, "QP %u: peer TERMINATE malformed: %s (control %08x, %u bytes after it)\n",
				       qp->ibqp.qp_num,
				       ti.why < ARRAY_SIZE(kiwi_term_whys) ?
				       kiwi_term_whys[ti.why] : "?",
				       ti.ctrl, rx->term_len);
	trace_kiwi_terminate(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num,
			     false, ti.ctrl);
	kiwi_order_kill(&rx->ord);
	kiwi_qp_stat_add(qp, KIWI_STAT_TERM_RX, 1);
	if (ti.layer < ARRAY_SIZE(by_layer))
		kiwi_qp_stat_add(qp, by_layer[ti.layer], 1);
	/* As the RFC would have put it: the status depends on it. */
	kiwi_qp_event(qp, KIWI_QP_EV_PEER_TERM,
		      kiwi_term_ctrl(ti.layer, ti.etype, ti.ecode));
}
