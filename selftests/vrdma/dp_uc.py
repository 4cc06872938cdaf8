#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UC traffic between two vrdma devices of one namespace, through pyverbs
# (dp_uc.sh sets them up): SEND, SEND with immediate, RDMA WRITE and
# WRITE with immediate, each at one packet and at several, every byte
# checked; READ and atomics refused when posted (EINVAL). With "loss"
# (the namespace's lo drops packets), messages that lost a packet are
# dropped whole: every one received is intact and in order, fewer arrive
# than were sent, and every send still completes successfully.
#   dp_uc.py DEV1 GID1 DEV2 GID2 [loss]
# Prints TAP lines ("ok N ...", "not ok N ..."); exit 1 on any failure.
import errno
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

from pv_tap import Tap

BUF = 64 * 1024
DEPTH = 64
tap = Tap()


class End:
    def __init__(self, dev, gid, srq=False):
        self.ctx = Context(name=dev)
        self.gid = gid
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 2 * DEPTH)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self.mr = MR(self.pd, BUF * DEPTH, access)
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=DEPTH,
                    max_send_sge=1, max_recv_sge=1)
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=DEPTH,
                                                     max_sge=1))) \
            if srq else None
        init = QPInitAttr(qp_type=e.IBV_QPT_UC, scq=self.cq, rcq=self.cq,
                          srq=self.srq, cap=cap)
        self.qp = QP(self.pd, init)

    def connect(self, peer):
        attr = QPAttr()
        attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | \
            e.IBV_ACCESS_REMOTE_WRITE
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = 0x123
        attr.sq_psn = 0x123
        gr = GlobalRoute(dgid=peer.ctx.query_gid(1, peer.gid),
                         sgid_index=self.gid)
        attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
        self.qp.to_rts(attr)

    def addr(self, slot):
        return self.mr.buf + slot * BUF

    def post_recv(self, slot, n=BUF):
        wr = RecvWR(wr_id=slot, num_sge=1,
                    sg=[SGE(self.addr(slot), n, self.mr.lkey)])
        (self.srq or self.qp).post_recv(wr)

    def poll(self, want, secs=10):
        wcs, t0 = [], time.time()
        while len(wcs) < want and time.time() - t0 < secs:
            n, got = self.cq.poll(want - len(wcs))
            wcs += got[:n]
            if not n:
                time.sleep(0.001)
        return wcs


def pattern(i, n):
    return bytes((i * 7 + k) & 0xff for k in range(n))


def send(a, op, slot, n, rkey=0, raddr=0, imm=0):
    wr = SendWR(wr_id=slot, opcode=op, num_sge=1,
                sg=[SGE(a.addr(slot), n, a.mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    if op in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM):
        wr.set_wr_rdma(rkey, raddr)
    if imm:
        wr.imm_data = imm
    a.qp.post_send(wr)


def one(a, b, name, op, n, i):
    """One message a -> b of @n bytes, data checked at b."""
    data = pattern(i, n)
    is_write = op in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM)
    has_imm = op in (e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_WRITE_WITH_IMM)
    slot = DEPTH - 1 - i if is_write else i	# where it lands at b
    imm = 0x1000 + i if has_imm else 0
    if n:
        a.mr.write(data, n, i * BUF)
        b.mr.write(b"\0" * n, n, slot * BUF)
    if op != e.IBV_WR_RDMA_WRITE:
        b.post_recv(i)
    send(a, op, i, n, b.mr.rkey, b.addr(slot), imm)
    sw = a.poll(1)
    ok = len(sw) == 1 and sw[0].status == e.IBV_WC_SUCCESS
    if op == e.IBV_WR_RDMA_WRITE:
        time.sleep(0.2)		# no receive completion: give it time
    else:
        rw = b.poll(1)
        ok = ok and len(rw) == 1 and rw[0].status == e.IBV_WC_SUCCESS and \
            rw[0].byte_len == n and rw[0].wr_id == i
        if ok and has_imm:
            ok = bool(rw[0].wc_flags & e.IBV_WC_WITH_IMM) and \
                rw[0].imm_data == imm
    got = b.mr.read(n, slot * BUF) if n else b""
    tap(ok and got == data, f"UC {name} {n} bytes: data verified")


def refused(a, b, name, op):
    wr = SendWR(wr_id=99, opcode=op, num_sge=1,
                sg=[SGE(a.addr(0), 8, a.mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    if op == e.IBV_WR_RDMA_READ:
        wr.set_wr_rdma(b.mr.rkey, b.addr(0))
    else:
        wr.set_wr_atomic(b.mr.rkey, b.addr(0), 1, 0)
    try:
        a.qp.post_send(wr)
        tap(False, f"UC {name} refused at post_send (it was posted)")
    except PyverbsRDMAError as ex:
        tap(ex.error_code == errno.EINVAL,
            f"UC {name} refused at post_send: {ex.error_code}")
    # nothing was queued: the QP still works
    tap(len(a.poll(1, secs=0.3)) == 0, f"UC {name}: no completion")


def too_long(a, b, i):
    """A SEND longer than the receive WQE is dropped; the WQE serves the
    next SEND (an RQ's stays at the head, an SRQ's is kept)."""
    b.post_recv(i, 100)
    a.mr.write(pattern(i, 100), 100, i * BUF)
    send(a, e.IBV_WR_SEND, i, 5000)
    sw = a.poll(1)
    rw = b.poll(1, secs=0.5)
    tap(len(sw) == 1 and sw[0].status == e.IBV_WC_SUCCESS and not rw,
        "UC SEND of 5000 bytes into a 100-byte WQE: sent, silently dropped")
    send(a, e.IBV_WR_SEND, i, 60)
    a.poll(1)
    rw = b.poll(1)
    tap(len(rw) == 1 and rw[0].status == e.IBV_WC_SUCCESS and
        rw[0].wr_id == i and rw[0].byte_len == 60 and
        b.mr.read(60, i * BUF) == pattern(i, 60),
        "UC: the next SEND of 60 bytes lands in that WQE")


def lossy(a, b, count=40, n=4096):
    """Messages of 4 packets over a lossy wire: only whole ones arrive."""
    for i in range(count):
        a.mr.write(pattern(i, n), n, (i % DEPTH) * BUF)
    for i in range(count):
        b.post_recv(i)
    for i in range(count):
        send(a, e.IBV_WR_SEND, i, n)
        if i % 8 == 7:
            time.sleep(0.05)
    sw = a.poll(count)
    tap(len(sw) == count and all(w.status == e.IBV_WC_SUCCESS for w in sw),
        f"lossy: {len(sw)} of {count} sends completed successfully")
    time.sleep(1)
    rw = b.poll(count, secs=2)
    last, intact = -1, True
    for k, w in enumerate(rw):
        got = b.mr.read(n, w.wr_id * BUF)
        idx = [i for i in range(count) if pattern(i, n) == got]
        # WQEs complete in ring order; message numbers only increase
        if w.status != e.IBV_WC_SUCCESS or w.wr_id != k or not idx or \
           idx[0] <= last or w.byte_len != n:
            intact = False
            break
        last = idx[0]
    tap(intact, f"lossy: the {len(rw)} messages received are intact, in order")
    tap(0 < len(rw) < count, f"lossy: {len(rw)} of {count} arrived (some lost)")


def main():
    dev1, gid1, dev2, gid2 = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
        int(sys.argv[4])
    a, b = End(dev1, gid1), End(dev2, gid2)
    a.connect(b)
    b.connect(a)
    if len(sys.argv) > 5 and sys.argv[5] == "loss":
        lossy(a, b)
    else:
        ops = [("SEND", e.IBV_WR_SEND), ("SEND_WITH_IMM", e.IBV_WR_SEND_WITH_IMM),
               ("RDMA_WRITE", e.IBV_WR_RDMA_WRITE),
               ("RDMA_WRITE_WITH_IMM", e.IBV_WR_RDMA_WRITE_WITH_IMM)]
        i = 0
        for name, op in ops:
            for n in (0, 100, 5000, 40000):
                one(a, b, name, op, n, i)
                i += 1
        one(b, a, "SEND (reverse)", e.IBV_WR_SEND, 3000, i)
        refused(a, b, "RDMA_READ", e.IBV_WR_RDMA_READ)
        refused(a, b, "ATOMIC_FETCH_AND_ADD", e.IBV_WR_ATOMIC_FETCH_AND_ADD)
        one(a, b, "SEND after the refusals", e.IBV_WR_SEND, 2000, i + 1)
        too_long(a, b, i + 2)
        # the same with an SRQ at the receiver
        c, d = End(dev1, gid1), End(dev2, gid2, srq=True)
        c.connect(d)
        d.connect(c)
        one(c, d, "SEND (SRQ)", e.IBV_WR_SEND, 5000, 0)
        one(c, d, "RDMA_WRITE_WITH_IMM (SRQ)", e.IBV_WR_RDMA_WRITE_WITH_IMM,
            3000, 1)
        too_long(c, d, 2)
        one(c, d, "SEND after the drop (SRQ)", e.IBV_WR_SEND, 100, 3)
    print(f"# {tap.n} tests, {tap.failed} failed")
    return tap.status()


if __name__ == "__main__":
    sys.exit(main())
