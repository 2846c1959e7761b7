#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Write the seed corpus of the fuzz targets (selftests/fuzz/corpus/):
valid frames as RFC 5044 / RFC 6581 / RFC 5040 define them, and a few
near misses.  Run from anywhere; rewrites the files it owns."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
REQ, REP = b"MPA ID Req Frame", b"MPA ID Rep Frame"
M, C, R, ENH, LARGE = 0x80, 0x40, 0x20, 0x10, 0x08


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def mpa(req, flags, rev, pd=b""):
    """fuzz_mpa input: byte 0 = request?, then the frame."""
    return bytes([1 if req else 0]) + (REQ if req else REP) + \
        struct.pack(">BBH", flags, rev, len(pd)) + pd


def v2(ird, ord_, p2p=False, zero=False, write=False, read=False):
    ird |= (0x8000 if p2p else 0) | (0x4000 if zero else 0)
    ord_ |= (0x8000 if write else 0) | (0x4000 if read else 0)
    return struct.pack(">HH", ird, ord_)


put("fuzz_mpa", "req-rev1", mpa(True, C, 1))
put("fuzz_mpa", "req-rev1-pd", mpa(True, C, 1, b"hello, iwarp"))
put("fuzz_mpa", "req-rev2-p2p-write-read",
    mpa(True, C | ENH, 2, v2(16, 16, p2p=True, write=True, read=True)))
put("fuzz_mpa", "req-rev2-p2p-zero-send",
    mpa(True, ENH, 2, v2(32, 32, p2p=True, zero=True) + b"ulp"))
put("fuzz_mpa", "req-rev2-large", mpa(True, C | ENH | LARGE, 2, v2(8, 8)))
put("fuzz_mpa", "rep-rev2-accept",
    mpa(False, C | ENH, 2, v2(1, 1, p2p=True, write=True) + bytes(20)))
put("fuzz_mpa", "rep-reject", mpa(False, R, 1, b"no"))
put("fuzz_mpa", "rep-markers-reject", mpa(False, M | R, 1))
put("fuzz_mpa", "req-markers", mpa(True, M | C, 1))
put("fuzz_mpa", "req-enh-short", mpa(True, ENH, 2, b"\x00"))
put("fuzz_mpa", "req-pd-max", mpa(True, 0, 1, bytes(512)))
put("fuzz_mpa", "req-bad-key", b"\x01" + b"MPA ID Req Fram!" + bytes(4))


def ctrl(op, tagged, last, ulpdu, ddpv=1, rdmapv=1):
    """The first four bytes of an FPDU (RFC 5044 / 5041 / 5040)."""
    w = (0x8000 if tagged else 0) | (0x4000 if last else 0) | \
        ddpv << 8 | rdmapv << 6 | op
    return struct.pack(">HH", ulpdu, w)


HDR = {0: 14, 1: 18 + 28, 2: 14, 3: 18, 4: 18, 5: 18, 6: 18, 7: 18 + 4}
for op, h in HDR.items():
    put("fuzz_ctrl", f"op{op}", ctrl(op, op in (0, 2), True, h + 64))
put("fuzz_ctrl", "write-not-last", ctrl(0, True, False, 1000))
put("fuzz_ctrl", "read-req-not-last", ctrl(1, False, False, 46))
put("fuzz_ctrl", "ulpdu-0", ctrl(3, False, True, 0))
put("fuzz_ctrl", "ddp-v2", ctrl(0, True, True, 100, ddpv=2))
put("fuzz_ctrl", "rdmap-v0", ctrl(3, False, True, 100, rdmapv=0))
put("fuzz_ctrl", "op-15", ctrl(15, False, True, 100))
put("fuzz_ctrl", "send-tagged", ctrl(3, True, True, 100))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def fpdu(op, last, hdr_rest, payload, bad_crc=False):
    """One FPDU: MPA length, DDP/RDMAP header, payload, pad, CRC."""
    body = ctrl(op, op in (0, 2), last, 2 + len(hdr_rest) + len(payload))
    body = body[:2] + body[2:] + hdr_rest + payload
    body += bytes((4 - len(body) % 4) % 4)
    crc = crc32c(body) ^ (1 if bad_crc else 0)
    return body + struct.pack("<I", crc)


def untagged(qn, msn, mo, inv=0):
    return struct.pack(">IIII", inv, qn, msn, mo)


def tagged(stag, to):
    return struct.pack(">IQ", stag, to)


SEND = fpdu(3, True, untagged(0, 1, 0), b"hello, iwarp")
WRITE = fpdu(0, True, tagged(0x1234, 0x1000), bytes(range(100)))
READ = fpdu(1, True, untagged(1, 1, 0),
            struct.pack(">IQIIQ", 0x1234, 0x1000, 4096, 0x5678, 0x2000))
TERM = fpdu(7, True, untagged(2, 1, 0), struct.pack(">I", 0x01010000))
MULTI = fpdu(3, False, untagged(0, 2, 0), bytes(1000)) + \
    fpdu(3, True, untagged(0, 2, 1000), bytes(7))
put("fuzz_framer", "send", b"\x07" + SEND)
put("fuzz_framer", "write-read-send-term", b"\x2a" + WRITE + READ + SEND + TERM)
put("fuzz_framer", "multi-segment-send", b"\x99" + MULTI)
put("fuzz_framer", "bad-crc", b"\x01" + fpdu(3, True, untagged(0, 1, 0), b"x",
                                             bad_crc=True))
put("fuzz_framer", "truncated", b"\x03" + (WRITE + SEND)[:-5])
put("fuzz_framer", "ulpdu-too-short", b"\x05" + ctrl(0, True, True, 3) + bytes(8))
put("fuzz_framer", "zero-payload-write", b"\x11" + fpdu(0, True, tagged(1, 0), b""))
# The longer RFC 7306 headers (Atomic Request 72 bytes with the MPA length,
# Atomic Response 32, Immediate Data 28) and SENDs of every pad length,
# small enough that most chunkings hold them whole (the one-step path).
put("fuzz_framer", "rfc7306-and-pads", b"\x3d" +
    fpdu(10, True, untagged(3, 1, 0), struct.pack(">IIIQQQQQ", 0, 7, 0x99,
                                                 0x1000, 5, 0, 0, 0)) +
    fpdu(11, True, untagged(4, 1, 0), struct.pack(">IQ", 7, 41)) +
    fpdu(12, True, untagged(0, 2, 0), b"immedi8!") +
    b"".join(fpdu(3, True, untagged(0, 3 + n, 0), bytes(range(n)))
             for n in range(5)))


def usqe(wr_id, opcode, flags, num_sge, length=0, rkey=0, inv=0, raddr=0):
    return struct.pack("<QBBBBIIIQ", wr_id, opcode, flags, num_sge, 0,
                       length, rkey, inv, raddr)


def usge(addr, length, lkey):
    return struct.pack("<QII", addr, length, lkey)


# fuzz_wqe: byte 0 = limits (max_sge | inline index << 4), byte 1 = kind
# (bit 0 send, bit 1 READ, bit 2 odd stride), then the slot.
put("fuzz_wqe", "send-2sge", bytes([0x32, 1]) + usqe(1, 0, 1, 2) +
    usge(0x1000, 100, 7) + usge(0x2000, 200, 7))
put("fuzz_wqe", "send-inline", bytes([0x42, 1]) + usqe(2, 0, 9, 0, 60) +
    bytes(range(60)))
put("fuzz_wqe", "read-1sge", bytes([0x01, 3]) + usqe(3, 3, 1, 1, 0, 9, 0,
                                                       0x4000) +
    usge(0x1000, 4096, 7))
put("fuzz_wqe", "send-len-overflow", bytes([0x02, 1]) + usqe(4, 0, 1, 2) +
    usge(0, 0xffffffff, 1) + usge(0, 2, 1))
put("fuzz_wqe", "recv-8sge", bytes([0x08, 0]) + struct.pack("<QII", 5, 8, 0) +
    b"".join(usge(i << 12, 512, 3) for i in range(8)))
put("fuzz_wqe", "recv-too-many", bytes([0x02, 0]) +
    struct.pack("<QII", 6, 3, 0) + usge(0, 1, 1) * 3)


# fuzz_readreq: byte 0 = mode (bit 0: raw FPDU stream) | device maximum
# index << 1 (0: 2 GiB), then the READ Request body (RFC 5040 4.4) or
# the stream.
def rr_body(sink_to, size, src_to, sink=0x1234, src=0x5678):
    return struct.pack(">IQIIQ", sink, sink_to, size, src, src_to)


put("fuzz_readreq", "ok", b"\x00" + rr_body(0x1000, 4096, 0x2000))
put("fuzz_readreq", "size-0-any-to", b"\x00" + rr_body(2**64 - 1, 0,
                                                        2**64 - 1))
put("fuzz_readreq", "size-2g", b"\x00" + rr_body(0, 2**31, 0))
put("fuzz_readreq", "size-over-2g", b"\x00" + rr_body(0, 2**31 + 1, 0))
put("fuzz_readreq", "size-max-small-dev", b"\x06" + rr_body(0, 4097, 0))
put("fuzz_readreq", "src-end-2-64", b"\x00" + rr_body(0, 16, 2**64 - 16))
put("fuzz_readreq", "src-wrap", b"\x00" + rr_body(0, 16, 2**64 - 15))
put("fuzz_readreq", "sink-wrap", b"\x00" + rr_body(2**64 - 1, 2, 0))
put("fuzz_readreq", "short", b"\x00" + rr_body(0, 16, 0)[:27])
put("fuzz_readreq", "long", b"\x00" + rr_body(0, 16, 0) + b"\x00")
put("fuzz_readreq", "stream-read", b"\x01" + READ)
put("fuzz_readreq", "stream-read-long", b"\x01" +
    fpdu(1, True, untagged(1, 1, 0), rr_body(0, 8, 0) + bytes(4)))
put("fuzz_readreq", "stream-send-read-term", b"\x01" + SEND + READ + TERM)


# fuzz_term: byte 0 = how many of the bytes after the control word the
# caller holds (mod what rx.c keeps + 1), then Terminate Control, then
# what follows it (RFC 5040 4.8).
def term(layer, etype, code, m=False, d=False, r=False, rsvd=0):
    return struct.pack(">I", layer << 28 | etype << 24 | code << 16 |
                       (0x8000 if m else 0) | (0x4000 if d else 0) |
                       (0x2000 if r else 0) | rsvd)


DDP_T = struct.pack(">H", 0xC140) + tagged(0x1234, 0x1000)      # 14 bytes
DDP_U = struct.pack(">H", 0x4141) + untagged(1, 1, 0)        # 18 bytes
RR = rr_body(0x1000, 2**32 - 1, 0x2000)
put("fuzz_term", "plain", b"\xff" + term(0, 2, 0xff))
put("fuzz_term", "mpa-crc", b"\xff" + term(2, 0, 2))
put("fuzz_term", "ddp-tagged-hdr", b"\xff" + term(1, 1, 0, m=True, d=True) +
    struct.pack(">H", 14 + 100) + DDP_T)
put("fuzz_term", "ddp-untagged-hdr", b"\xff" + term(1, 2, 1, m=True, d=True) +
    struct.pack(">H", 18 + 8) + DDP_U)
put("fuzz_term", "read-req-hdrs", b"\xff" +
    term(0, 1, 1, m=True, d=True, r=True) + struct.pack(">H", 18 + 28) +
    DDP_U + RR)
put("fuzz_term", "rdma-hdr-only", b"\xff" + term(0, 1, 1, r=True) + RR)
put("fuzz_term", "seglen-too-small", b"\xff" + term(1, 1, 0, m=True, d=True) +
    struct.pack(">H", 13) + DDP_T)
put("fuzz_term", "d-short", b"\xff" + term(1, 1, 0, d=True) +
    struct.pack(">H", 14) + DDP_T[:10])
put("fuzz_term", "r-long", b"\xff" + term(0, 1, 1, r=True) + RR + b"xx")
put("fuzz_term", "m-without-d", b"\xff" + term(1, 1, 0, m=True))
put("fuzz_term", "bogus-all-ones", b"\xff" + b"\xff" * 4 + b"\xee" * 60)
put("fuzz_term", "layer-3", b"\xff" + term(3, 0, 0))
put("fuzz_term", "llp-type-1", b"\xff" + term(2, 1, 0))
put("fuzz_term", "reserved", b"\xff" + term(0, 2, 0xff, rsvd=0x10))
put("fuzz_term", "held-less", b"\x07" + term(0, 1, 1, m=True, d=True, r=True) +
    struct.pack(">H", 18 + 28) + DDP_U + RR)


# fuzz_markers: bytes 0-3 = start position (LE), byte 4 = mode (bit 0:
# hostile stream), then FPDU lengths (2 bytes each) or the raw stream.
def mk(start, mode, rest):
    return struct.pack("<I", start) + bytes([mode]) + rest


put("fuzz_markers", "rfc-42", mk(0, 0, b"\x00\x2a"))
put("fuzz_markers", "second-fpdu", mk(0, 0, b"\x01\xe2\x00\x2a"))
put("fuzz_markers", "wrap", mk(2**32 - 1024, 0,
                              b"\x05\xdc\x00\x01\x10\x00\x00\x00"))
put("fuzz_markers", "big", mk(4, 0, b"\x13\x87" * 3))
put("fuzz_markers", "hostile-zero", mk(0, 1, bytes(600)))
put("fuzz_markers", "hostile-bad-ptr", mk(0, 1, b"\x00\x00\x00\x08" +
                                          bytes(600)))


# fuzz_rxorder: byte 0 = QP facts (bit 0 atomics, bit 1 RTR SEND owed,
# bit 2 our RTR READ out) | mode << 7.  Mode 0: 4 bytes per FPDU --
# opcode index (low nibble: WRITE, READ_REQ, READ_RESP, 4 SENDs,
# TERMINATE, ATOMIC_REQ/RESP, IMM, IMM_SE) | L << 4 | wrong QN << 5 |
# wrong MSN << 6 | wrong MO << 7; payload length; what fails later
# (bit 0 no WQE, bits 1-2 too long, bits 3-4 a later check, bits 5-7
# the CRC); a value for the wrong fields.  Mode 1: a chaos byte, then
# a raw FPDU stream.
def ro(op, last=True, length=0, wrong=0, fail=0, val=0):
    return bytes([op | (0x10 if last else 0) | wrong << 5, length, fail, val])


RO_W, RO_RREQ, RO_RRESP, RO_S, RO_TERM, RO_AREQ, RO_ARESP, RO_IMM = \
    0, 1, 2, 3, 7, 8, 9, 10
put("fuzz_rxorder", "send-segments", b"\x00" + ro(RO_S, False, 100) +
    ro(RO_S + 2, False, 50) + ro(RO_RREQ) + ro(RO_S, True, 10) +
    ro(RO_S + 1, True, 3))
put("fuzz_rxorder", "write-imm", b"\x00" + ro(RO_W, False, 16) +
    ro(RO_W, True, 16) + ro(RO_RRESP, True, 4) + ro(RO_IMM) +
    ro(RO_IMM + 1))
put("fuzz_rxorder", "rtr-send", b"\x02" + ro(RO_W, True, 8) +
    ro(RO_IMM) + ro(RO_W, True, 8) + ro(RO_S + 2) + ro(RO_IMM) +
    ro(RO_S, True, 5))
put("fuzz_rxorder", "rtr-send-bad", b"\x02" + ro(RO_S, True, 1))
put("fuzz_rxorder", "rtr-read", b"\x04" + ro(RO_W, True, 8) +
    ro(RO_RRESP) + ro(RO_RRESP) + ro(RO_IMM))
put("fuzz_rxorder", "atomics", b"\x01" + ro(RO_AREQ) + ro(RO_ARESP) +
    ro(RO_AREQ) + ro(RO_TERM))
put("fuzz_rxorder", "atomics-off", b"\x00" + ro(RO_ARESP))
put("fuzz_rxorder", "imm-in-send", b"\x00" + ro(RO_S, False, 9) +
    ro(RO_IMM))
put("fuzz_rxorder", "wrong-qn", b"\x00" + ro(RO_RREQ, wrong=1, val=4))
put("fuzz_rxorder", "wrong-msn", b"\x00" + ro(RO_S, wrong=2, val=2))
put("fuzz_rxorder", "wrong-mo", b"\x00" + ro(RO_S, False, 8) +
    ro(RO_S, wrong=4, val=1))
put("fuzz_rxorder", "no-wqe", b"\x00" + ro(RO_S, False, 8, fail=1))
put("fuzz_rxorder", "too-long", b"\x00" + ro(RO_S, False, 8) +
    ro(RO_S, True, 8, fail=6))
put("fuzz_rxorder", "crc-in-send", b"\x00" + ro(RO_S, False, 8) +
    ro(RO_S, False, 8, fail=0xe0))
IMM = fpdu(12, True, untagged(0, 2, 0) + bytes(8), b"")
put("fuzz_rxorder", "stream", b"\x80\x00" + SEND + READ + WRITE + IMM + TERM)
put("fuzz_rxorder", "stream-segments", b"\x80\x00" +
    fpdu(3, False, untagged(0, 1, 0), bytes(1000)) +
    fpdu(3, True, untagged(0, 1, 1000), bytes(7)))
put("fuzz_rxorder", "stream-rtr", b"\x82\x00" +
    fpdu(3, True, untagged(0, 1, 0), b"") + WRITE +
    fpdu(13, True, untagged(0, 2, 0) + bytes(8), b""))
