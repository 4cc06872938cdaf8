#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The same RC traffic on an impaired wire (netem on both ends): loss 1% and
# 5%, delay with jitter, 25% reordering, duplication, corruption. Every run
# must complete with the received data validated (ibv_rc_pingpong -c) and
# RDMA WRITE / READ must move their bytes. Then ECN: RC packets are ECT(0),
# so an fq_codel with ECN marks them CE, and both ends count the marks.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw ib_read_bw tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

for cond in "loss 1%" "loss 5%" "delay 2ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	if dp_pair 150 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 30 -s 16384 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 30 -s 16384 -c "$H1_IP"; then
		ktap_ok "netem $cond: ibv_rc_pingpong -c 16 KB: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		ktap_fail "netem $cond: ibv_rc_pingpong -c 16 KB"
	fi
	for tool in ib_write_bw ib_read_bw; do
		if dp_pair 150 $tool -d vrdma1 -x "$G1" -F -s 65536 -n 100 --report_gbits -- \
			$tool -d vrdma2 -x "$G2" -F -s 65536 -n 100 --report_gbits "$H1_IP"; then
			ktap_ok "netem $cond: $tool 64 KB x100:$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')"
		else
			ktap_fail "netem $cond: $tool 64 KB x100"
		fi
	done
done
dp_netem ""

# A peer silent for longer than the backed-off RTOs add up to (~230 ms:
# a VM paused for live migration, a stalled host) but back within the
# span the user set: RETRY_EXC waits for the local ACK timeout x
# (retry_cnt + 1), as a NIC does (vt_tx.c, retries_spent()). ib_write_bw
# with the QP timeout 17 (537 ms, x 8 = 4.3 s) runs through a 1.5 s
# blackout (netem loss 100% on both ends, 1 s after the requester's
# packets start to move: on a slow host perftest's set-up takes longer)
# and completes; the requester timed out more than retry_cnt (7) times
# meanwhile. The old rule failed it with RETRY_EXC.
blackout() {
	local p0 i
	p0=$(dp_counter vrdma2 tx_packets)
	for i in $(seq 1 120); do
		sleep 0.25
		[ "$(dp_counter vrdma2 tx_packets)" -gt $((${p0:-0} + 100)) ] && break
	done
	sleep 1
	dp_netem "loss 100%"
	sleep "$1"
	dp_netem ""
}
to0=$(dp_counter vrdma2 timeouts)
blackout 1.5 &
bo=$!
dp_pair 90 ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -D 8 -u 17 --report_gbits -- \
	ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -D 8 -u 17 --report_gbits "$H1_IP"
rc=$?
wait "$bo"
to1=$(dp_counter vrdma2 timeouts)
to=$((${to1:-0} - ${to0:-0}))
diag "blackout: requester timeouts +$to"
[ $rc -eq 0 ] && [ "$to" -gt 7 ]
ktap_result $? "1.5 s blackout in a 4.3 s span: ib_write_bw -u 17 completes after $to timeouts"

# ECN (module parameter ecn, default Y): RC packets leave ECT(0), so an
# fq_codel with ECN under a 20 Mbit/s token bucket on the sender's egress
# marks them CE instead of dropping; the receiver counts the marks
# (cc_ce_marked) and the sender the echoes (cc_ce_echoed). With ecn=0 the
# same qdisc must mark nothing (it drops).
ecn_run() {
	local m0 e0 m1 e1
	read -r m0 < <(dp_counters vrdma1 cc_ce_marked)
	read -r e0 < <(dp_counters vrdma2 cc_ce_echoed)
	if ! dp_pair 150 ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -n 150 --report_gbits -- \
		ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -n 150 --report_gbits "$H1_IP"; then
		ktap_fail "ecn=$1: ib_write_bw 64 KB x150 through fq_codel"
		return
	fi
	read -r m1 < <(dp_counters vrdma1 cc_ce_marked)
	read -r e1 < <(dp_counters vrdma2 cc_ce_echoed)
	diag "ecn=$1: cc_ce_marked +$((m1 - m0)), cc_ce_echoed +$((e1 - e0))"
	if [ "$1" = 1 ]; then
		[ $((m1 - m0)) -gt 0 ] && [ $((e1 - e0)) -gt 0 ]
	else
		[ $((m1 - m0)) -eq 0 ]
	fi
	ktap_result $? "ecn=$1: ib_write_bw through fq_codel ecn, CE marks $([ "$1" = 1 ] && echo counted || echo none)"
}
if ip netns exec "$H2" tc qdisc replace dev "$H2_IF" root handle 1: tbf rate 20mbit burst 64kb latency 100ms &&
   ip netns exec "$H2" tc qdisc replace dev "$H2_IF" parent 1:1 fq_codel ecn target 1ms interval 10ms; then
	ecn_run 1
	echo 0 >/sys/module/vrdma/parameters/ecn
	ecn_run 0
	echo 1 >/sys/module/vrdma/parameters/ecn
	ip netns exec "$H2" tc qdisc del dev "$H2_IF" root
else
	ktap_skip "ECN marks: no tbf/fq_codel"
fi

# paths (module parameter, default 4): the UDP source ports a new RC QP
# sprays over, each a flow to a flow-queueing qdisc. The server's side
# counts the source ports of the data it receives (udp_sports.py, an
# AF_PACKET socket): with paths=1 one port plus one per repath the sender
# counted (a timeout, or PLB on a congested queue, moves the single path to
# a new port; on a slow TCG host spurious timeouts do, so the bound is the
# counter, not a constant; PLB used to move it every five rounds on a VM's
# raw RTT: 131 ports), at least 4 with paths=4 (the spray turns every
# batch).
repaths_of() {
	ip netns exec "$H2" rdma statistic show link vrdma2/1 |
		grep -o ' repaths [0-9]*' | awk '{ print $2 }'
}
paths_run() {
	local out=$DP_OUT.sports cap n r0 r1
	echo "$1" >/sys/module/vrdma/parameters/paths
	r0=$(repaths_of)
	ip netns exec "$H1" timeout 30 python3 "$(dirname "$0")/udp_sports.py" \
		"$H1_IF" 4793 8 >"$out" 2>&1 &
	cap=$!
	sleep 0.5
	dp_pair 60 ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -n 300 --report_gbits -- \
		ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -n 300 --report_gbits "$H1_IP"
	local rc=$?
	wait "$cap"
	r1=$(repaths_of)
	diag "paths=$1: $(cat "$out"), sender repaths +$((r1 - r0))"
	n=$(awk '$1 == "packets" && $2 > 0 && $4 != "-" { print split($4, a, ",") }' "$out")
	[ $rc -eq 0 ] && [ -n "$n" ] || { ktap_fail "paths=$1: ib_write_bw 64 KB x300, source ports seen"; return; }
	if [ "$1" = 1 ]; then
		[ "$n" -le $((1 + r1 - r0)) ]
	else
		[ "$n" -ge "$1" ]
	fi
	ktap_result $? "paths=$1: ib_write_bw 64 KB x300 from $n UDP source port(s)"
}
if python3 -c 'import socket; socket.AF_PACKET' 2>/dev/null; then
	paths_run 1
	paths_run 4
	echo 4 >/sys/module/vrdma/parameters/paths
else
	ktap_skip "paths: no python3"
fi

# One QP, one flow to the host's qdiscs: its packets carry the
# connection's skb->hash (vrdma_net_flow_hash()), so a flow-queueing
# qdisc sees one flow however many source ports the QP sprays over (4 or
# more with paths=4, counted above). sch_fq keeps a flow until it has
# been idle 3 s and a new one falls into its bucket, so its "flows" count
# read before and after one transfer grows by what sent in between: the
# connection, perftest's TCP exchange and at most one neighbour packet
# (3); four ports taken for four flows would add at least 5.
fq_flows() {
	ip netns exec "$H2" tc -s qdisc show dev "$H2_IF" |
		grep -o ' flows [0-9]*' | head -n 1 | awk '{ print $2 }'
}
if ip netns exec "$H2" tc qdisc replace dev "$H2_IF" root fq 2>/dev/null; then
	f0=$(fq_flows)
	dp_pair 60 ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -n 300 --report_gbits -- \
		ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -n 300 --report_gbits "$H1_IP"
	rc=$?
	f1=$(fq_flows)
	diag "sch_fq flows before $f0, after $f1 (paths=$(cat /sys/module/vrdma/parameters/paths))"
	[ $rc -eq 0 ] && [ -n "$f0" ] && [ -n "$f1" ] && [ $((f1 - f0)) -le 3 ]
	ktap_result $? "fq: a QP spraying over several ports is one flow ($f0 -> $f1 flows)"
	ip netns exec "$H2" tc qdisc del dev "$H2_IF" root
else
	ktap_skip "fq: no sch_fq"
fi
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
