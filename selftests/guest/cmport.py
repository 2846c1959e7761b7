#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""cmport.py -- connect from an rdma_cm port that a plain TCP socket holds.

The rdma_cm allocates an active side's port in its own port space; kiwi's
TCP socket then binds to it, and a TCP socket outside the rdma_cm (here a
listener without SO_REUSEADDR) may already hold that port.  The connect
must still succeed, over another port, and carry data intact.

    cmport.py server ADDR PORT        accept one connection, receive one
                                      message, check it, echo it back
    cmport.py client SRC SPORT DST PORT
                                      hold SRC:SPORT with a TCP listener,
                                      connect from it, send, check the echo

Prints what it saw; exit status 0 on success.
"""
import socket
import sys

import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.cmid import CMID, AddrInfo, ConnParam
from pyverbs.qp import QPCap, QPInitAttr

MSG = bytes((i * 7 + 3) & 0xff for i in range(4096))


def qp_attr():
    return QPInitAttr(qp_type=e.IBV_QPT_RC,
                      cap=QPCap(max_send_wr=2, max_recv_wr=2))


def zeroed_mr(cid):
    mr = cid.reg_msgs(len(MSG))
    mr.write(bytes(len(MSG)), len(MSG))
    return mr


def check(cid, mr, who):
    wc = cid.get_recv_comp()
    got = mr.read(len(MSG), 0)
    if wc.status != e.IBV_WC_SUCCESS or wc.byte_len != len(MSG) \
            or got != MSG:
        print(f'{who}: bad receive: status {wc.status} '
              f'len {wc.byte_len}, data {"ok" if got == MSG else "differs"}')
        return False
    return True


def server(addr, port):
    ai = AddrInfo(src=addr, src_service=port, port_space=ce.RDMA_PS_TCP,
                  flags=ce.RAI_PASSIVE)
    lid = CMID(creator=ai, qp_init_attr=qp_attr())
    lid.listen()
    cid = lid.get_request()
    mr = zeroed_mr(cid)
    cid.post_recv(mr)
    cid.accept(ConnParam())
    if not check(cid, mr, 'server'):
        return 1
    cid.post_send(mr)
    cid.get_send_comp()
    print('server: message received intact and echoed')
    return 0


def client(src, sport, dst, port):
    hold = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    hold.bind((src, int(sport)))
    hold.listen(1)
    ai = AddrInfo(src=src, src_service=sport, dst=dst, dst_service=port,
                  port_space=ce.RDMA_PS_TCP)
    cid = CMID(creator=ai, qp_init_attr=qp_attr())
    smr = cid.reg_msgs(len(MSG))
    smr.write(MSG, len(MSG))
    rmr = zeroed_mr(cid)
    cid.post_recv(rmr)
    cid.connect(ConnParam())
    cid.post_send(smr)
    cid.get_send_comp()
    if not check(cid, rmr, 'client'):
        return 1
    print(f'client: port {sport} held by a TCP listener; connected, '
          f'4096-byte echo intact')
    cid.disconnect()
    hold.close()
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == 'server':
        return server(argv[2], argv[3])
    if len(argv) == 6 and argv[1] == 'client':
        return client(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
