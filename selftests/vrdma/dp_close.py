#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A QP moved to ERR still acknowledges its peer's retransmission of what it
# had received (drivers/vrdma/vrdma_rc_grave.c). dp_close.sh has the
# responder's egress drop every ACK a live QP sends: requester A's SEND
# arrives at responder B, B's ACK never leaves, B enters ERR (as
# rdma_disconnect() does), and A's retransmission must then be acknowledged
# by B in ERR: A's SEND completes successfully.
#   dp_close.py DEV_A GID_A DEV_B GID_B
# Prints TAP lines; exit 1 on any failure.
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

from pv_tap import Tap

N = 4096
tap = Tap()


class End:
    def __init__(self, dev, gid):
        self.ctx = Context(name=dev)
        self.gid = gid
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8)
        self.mr = MR(self.pd, N, e.IBV_ACCESS_LOCAL_WRITE)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq,
                                         rcq=self.cq, cap=cap))

    def connect(self, peer):
        attr = QPAttr()
        attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = 0x321
        attr.sq_psn = 0x321
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.min_rnr_timer = 12
        attr.max_rd_atomic = 1
        attr.max_dest_rd_atomic = 1
        gr = GlobalRoute(dgid=peer.ctx.query_gid(1, peer.gid),
                         sgid_index=self.gid)
        attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
        self.qp.to_rts(attr)

    def poll(self, secs):
        t0 = time.time()
        while time.time() - t0 < secs:
            n, wcs = self.cq.poll(1)
            if n:
                return wcs[0]
            time.sleep(0.0005)
        return None


def main():
    a = End(sys.argv[1], int(sys.argv[2]))
    b = End(sys.argv[3], int(sys.argv[4]))
    a.connect(b)
    b.connect(a)
    data = bytes((k * 13) & 0xff for k in range(N))
    a.mr.write(data, N, 0)
    b.qp.post_recv(RecvWR(wr_id=1, num_sge=1,
                          sg=[SGE(b.mr.buf, N, b.mr.lkey)]))
    a.qp.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1,
                          sg=[SGE(a.mr.buf, N, a.mr.lkey)],
                          send_flags=e.IBV_SEND_SIGNALED))
    rw = b.poll(5)
    tap(rw is not None and rw.status == e.IBV_WC_SUCCESS and
        b.mr.read(N, 0) == data, "B received A's SEND, data verified")
    early = a.poll(0)
    tap(early is None, "A's SEND not acknowledged while B's ACKs are dropped")
    attr = QPAttr()
    attr.qp_state = e.IBV_QPS_ERR
    b.qp.modify(attr, e.IBV_QP_STATE)
    sw = early or a.poll(10)
    tap(sw is not None and sw.status == e.IBV_WC_SUCCESS,
        "A's SEND completes once B, in ERR, acknowledged it "
        f"(status {sw.status if sw else 'none'})")
    return tap.status()


if __name__ == "__main__":
    sys.exit(main())
