// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the module parameters of connection setup -- its time limits,
 * the half-open quotas, what our MPA frames offer (peer-to-peer mode
 * and its ready-to-receive messages, markers, large FPDUs), a fault
 * injection for tests -- and the callbacks that parse and print them.
 * All are writable at run time; the CM's other files read them (cm.h)
 * when a connection needs them, so a change applies to new
 * connections.  Nothing here calls the rest of kiwi.  Elsewhere: crc
 * (crc.c), peer_timeout (mpa.c, with the socket options it sets) and
 * the read-only count cm_endpoints (cm.c).
 */
#include <linux/module.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "cm.h"

unsigned int kiwi_mpa_timeout_ms = 10000;
module_param_named(mpa_timeout_ms, kiwi_mpa_timeout_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_ms,
		 "Time allowed for TCP connect plus MPA exchange (default 10000 ms)");

bool kiwi_p2p = true;
module_param_named(peer_to_peer, kiwi_p2p, bool, 0644);
MODULE_PARM_DESC(peer_to_peer,
		 "Request RFC 6581 peer-to-peer mode with a ready-to-receive message (default Y)");

/*
 * RFC 5044 7.1.2 (rule 4) has a responder send nothing before it has
 * the initiator's first FPDU, so that the initiator can finish reading
 * the MPA reply first.  With an RFC 6581 RTR agreed that FPDU is sure
 * to come; without, it is whatever the initiator's consumer sends
 * first, and a protocol whose server speaks first (ucmatose) would
 * wait for ever.  So kiwi waits this long, then sends.
 */
unsigned int kiwi_first_fpdu_ms = 200;
module_param_named(first_fpdu_ms, kiwi_first_fpdu_ms, uint, 0644);
MODULE_PARM_DESC(first_fpdu_ms,
		 "As MPA responder with no RFC 6581 RTR agreed: how long to hold everything for the initiator's first FPDU (default 200 ms, 0: until it comes)");

unsigned int kiwi_max_half_open = 256;
module_param_named(max_half_open, kiwi_max_half_open, uint, 0644);
MODULE_PARM_DESC(max_half_open,
		 "Connections per device still in TCP or MPA setup, beyond which new ones are reset (default 256)");

/*
 * How long a connection request handed to the iw_cm may wait for the
 * consumer's accept or reject.  The iw_cm drops a request it cannot
 * allocate for (cm_conn_req_handler(): iw_create_cm_id() failing) and
 * then calls neither: the endpoint would wait forever.
 */
unsigned int kiwi_req_timeout_ms = 120000;
module_param_named(accept_timeout_ms, kiwi_req_timeout_ms, uint, 0644);
MODULE_PARM_DESC(accept_timeout_ms,
		 "Time a connection request may wait for accept or reject before it is reset (default 120000 ms, 0: forever)");

/*
 * Fault injection for the test of the above: the next N connection
 * requests are not handed to the iw_cm but treated as if it had
 * dropped them.  For tests only; 0 (default) in production.
 */
unsigned int kiwi_fault_drop_req;
module_param_named(fault_drop_conn_req, kiwi_fault_drop_req, uint, 0644);
MODULE_PARM_DESC(fault_drop_conn_req,
		 "Test only: behave as if the iw_cm dropped the next N connection requests (default 0)");

/*
 * One remote host must not be able to take every half-open slot of a
 * device (and so block its other listeners): each source address gets
 * at most this many, and never more than half of max_half_open.  A
 * connection that has sent no byte of its MPA request after
 * first_byte_ms is closed without waiting out the MPA timeout.
 */
unsigned int kiwi_max_half_open_src = 64;
module_param_named(max_half_open_per_source, kiwi_max_half_open_src, uint, 0644);
MODULE_PARM_DESC(max_half_open_per_source,
		 "Half-open connections per device from one source address, at most half of max_half_open (default 64)");

unsigned int kiwi_first_byte_ms = 2000;
module_param_named(first_byte_ms, kiwi_first_byte_ms, uint, 0644);
MODULE_PARM_DESC(first_byte_ms,
		 "Time a new passive connection may take to send the first byte of its MPA request (default 2000 ms; 0: mpa_timeout_ms)");

bool kiwi_large_fpdu = true;
module_param_named(large_fpdu, kiwi_large_fpdu, bool, 0644);
MODULE_PARM_DESC(large_fpdu,
		 "Offer and accept FPDUs larger than a TCP segment, with peers that agree in the MPA exchange (default Y)");

/*
 * RFC 6581 ready-to-receive messages kiwi offers when it initiates in
 * peer-to-peer mode and accepts when it responds: a comma list of
 * "write", "read" and "send" (zero-length RDMA WRITE, RDMA READ, SEND).
 * Hardware differs (Chelsio's default is a zero-length READ), so a host
 * can be made to play any of them.
 */
u16 kiwi_rtr_kinds = KIWI_MPA_RTR_WRITE | KIWI_MPA_RTR_READ | KIWI_MPA_RTR_SEND;

static const char *const kiwi_rtr_names[] = {
	[0] = "send", [1] = "write", [2] = "read",	/* bit i: 1 << i */
};

static int kiwi_rtr_set(const char *val, const struct kernel_param *kp)
{
	char buf[32], *s = buf, *tok;
	u16 kinds = 0;
	int i;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	while ((tok = strsep(&s, ",")) != NULL) {
		tok = strim(tok);
		if (!*tok)
			continue;
		i = match_string(kiwi_rtr_names, ARRAY_SIZE(kiwi_rtr_names), tok);
		if (i < 0)
			return -EINVAL;
		kinds |= 1 << i;
	}
	if (!kinds)
		return -EINVAL;
	WRITE_ONCE(kiwi_rtr_kinds, kinds);
	return 0;
}

static int kiwi_rtr_get(char *buf, const struct kernel_param *kp)
{
	u16 kinds = READ_ONCE(kiwi_rtr_kinds);
	int i, n = 0;

	/* In kiwi's order of preference as a responder. */
	static const int order[] = { 1, 2, 0 };

	for (i = 0; i < ARRAY_SIZE(order); i++)
		if (kinds & (1 << order[i]))
			n += sysfs_emit_at(buf, n, "%s%s", n ? "," : "",
					   kiwi_rtr_names[order[i]]);
	return n + sysfs_emit_at(buf, n, "\n");
}

static const struct kernel_param_ops kiwi_rtr_ops = {
	.set = kiwi_rtr_set,
	.get = kiwi_rtr_get,
};
module_param_cb(p2p_rtr, &kiwi_rtr_ops, NULL, 0644);
MODULE_PARM_DESC(p2p_rtr,
		 "Ready-to-receive messages offered and accepted in peer-to-peer mode: write,read,send (default all three)");

/*
 * MPA markers (RFC 5044 4.3): whether our MPA frame sets M, asking the
 * peer to send them to us.  The peer's M is always honoured: we send
 * markers to a peer that asks, whatever this says.  2 and 3 restrict
 * the request to one role (2: initiator, 3: responder), for tests
 * with both ends on one module.
 */
enum { KIWI_MK_NEVER, KIWI_MK_ALWAYS, KIWI_MK_ACTIVE, KIWI_MK_PASSIVE };
static unsigned int kiwi_mpa_markers = KIWI_MK_NEVER;
module_param_named(mpa_markers, kiwi_mpa_markers, uint, 0644);
MODULE_PARM_DESC(mpa_markers,
		 "Request MPA markers from the peer: 0 never (default), 1 always, 2 on connections we initiate, 3 on connections we accept");

bool kiwi_mk_request(bool initiator)
{
	switch (READ_ONCE(kiwi_mpa_markers)) {
	case KIWI_MK_ALWAYS:
		return true;
	case KIWI_MK_ACTIVE:
		return initiator;
	case KIWI_MK_PASSIVE:
		return !initiator;
	default:
		return false;
	}
}
