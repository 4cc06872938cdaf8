#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Two guests (scripts/vm/run --pair): one vrdma device per guest on its
# virtio-net NIC in the initial namespace, traffic between the guests with
# the standard tools: ibv_rc_pingpong -c (data verified), ib_write_bw,
# ib_read_bw, ibv_ud_pingpong, rping -V and qperf -cm1 (rdma_cm in the
# initial namespace, with private data: what the kernel ULPs use), then
# rc pingpong under netem 1% loss on both NICs. Skips in a single guest.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/pair_lib.inc"
require_root
require_cmd rdma ibv_rc_pingpong ib_write_bw rping python3
require_vrdma
require_provider
pair_require

pair_dev vrdma || { ktap_fail "vrdma0 on $VRDMA_PAIR_IF"; ktap_finished; }
ktap_ok "vrdma0 on $VRDMA_PAIR_IF (GID index $PAIR_GID)"
G=$PAIR_GID
P=$VRDMA_PAIR_PEER
pair_sync up >/dev/null || pair_lost up

pair_case "ibv_rc_pingpong -c 64 KB" 60 \
	ibv_rc_pingpong -d vrdma0 -g "$G" -s 65536 -n 200 -c -- \
	ibv_rc_pingpong -d vrdma0 -g "$G" -s 65536 -n 200 -c "$P"
pair_case "ib_write_bw 64 KB" 90 \
	ib_write_bw -d vrdma0 -x "$G" -s 65536 -n 500 -F -- \
	ib_write_bw -d vrdma0 -x "$G" -s 65536 -n 500 -F "$P"
pair_is_a || diag "ib_write_bw: $(awk '$1 == 65536 { print $4 " MB/s" }' <<<"$PAIR_OUT")"
pair_case "ib_read_bw 64 KB" 90 \
	ib_read_bw -d vrdma0 -x "$G" -s 65536 -n 300 -F -- \
	ib_read_bw -d vrdma0 -x "$G" -s 65536 -n 300 -F "$P"
pair_case "ibv_ud_pingpong 1024" 60 \
	ibv_ud_pingpong -d vrdma0 -g "$G" -s 1024 -n 200 -- \
	ibv_ud_pingpong -d vrdma0 -g "$G" -s 1024 -n 200 "$P"
pair_case "rping -V (rdma_cm, initial namespace)" 60 \
	rping -s -V -C 50 -S 4096 -a "$VRDMA_PAIR_SELF" -- \
	rping -c -V -C 50 -S 4096 -a "$P"
if command -v qperf >/dev/null; then
	pair_case "qperf -cm1 rc_bw (rdma_cm private data)" 60 \
		qperf -lp 19765 -- \
		qperf -lp 19765 -cm1 -t 2 "$P" rc_bw quit
fi

tc qdisc replace dev "$VRDMA_PAIR_IF" root netem loss 1%
defer tc qdisc del dev "$VRDMA_PAIR_IF" root
pair_sync netem >/dev/null || pair_lost netem
pair_case "ibv_rc_pingpong -c 64 KB under 1% loss" 120 \
	ibv_rc_pingpong -d vrdma0 -g "$G" -s 65536 -n 200 -c -- \
	ibv_rc_pingpong -d vrdma0 -g "$G" -s 65536 -n 200 -c "$P"
tc qdisc del dev "$VRDMA_PAIR_IF" root
pair_sync end >/dev/null || pair_lost end
ktap_finished
