#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Batched transmit and receive (module parameter tx_batch, default 32): a
# run of RC packets to one path leaves as one UDP GSO skb, and the
# receiving socket takes GSO and GRO aggregates whole and walks them in
# place. Every case verifies its data and checks, with the tx_batches /
# rx_batches counters, that the path it is about really ran:
#  - 1 packet, 2 packets (the last one short) and many (full batches) per
#    message, ibv_rc_pingpong -c;
#  - gather and scatter lists, READ, WRITE, large messages (vrdma_dp_test);
#  - copy-free transmit on top (payload in the MR's pages, batches that
#    cross page boundaries), batches that grow a frag list past 17
#    fragments (tx_frag_lists), and none where the netdev takes none;
#  - the experimental receive hand-off (rx_handoff=1) on top, with and
#    without its workers polling (rx_spin_us, rx_ack_spin_us);
#  - the experimental receive steering (rx_steer=1): a stream of small
#    messages placed by a tasklet on another CPU;
#  - doorbell coalescing (tx_coalesce_us, default 50): a one-way stream of
#    small messages has doorbells held and goes out in batches, data
#    verified; a ping-pong holds none; tx_coalesce_us=0 holds none;
#  - an ACK a run owes as the last packet of its data's skb (64 B SENDs
#    both ways);
#  - the control: tx_batch=1 sends no batch, and no ACK in one;
#  - a sender netdev without UDP segmentation offload (the stack segments
#    the batch before the veth: the receiver gets single packets), and the
#    same with GRO on at the receiver (it aggregates them again);
#  - MTU 9000 on the wire (fewer, larger packets per batch);
#  - a batch forwarded by a router namespace: with rx_encap (default Y) it
#    is not marked as a tunnel's (it could reach a NIC), so the receiving
#    encap socket segments it (single packets), data verified; through
#    the socket's queue (rx_encap=N) it arrives whole.
# DP_BATCH_RX=1 runs only the cases about receive (dp_rx_queue.sh: the
# same with the socket's queue, rx_encap=N).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_dp_test
require_cmd ibv_rc_pingpong ib_write_bw ethtool
P=/sys/module/vrdma/parameters
dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
[ -f "$P/tx_batch" ] || skip_all "this vrdma.ko has no tx_batch parameter"
encap=$(cat "$P/rx_encap" 2>/dev/null || echo N)
# (a module some other run left loaded keeps its rx_encap)
[ "${DP_BATCH_RX:-0}" = 1 ] && [ "$encap" = Y ] &&
	skip_all "vrdma stayed loaded with rx_encap=Y: the queue path is not what would run"
diag "receive through the socket's $([ "$encap" = Y ] && echo encap hook || echo queue)"

txb() { dp_counter vrdma2 tx_batches; }
both() { echo $(($(dp_counter vrdma1 "$1") + $(dp_counter vrdma2 "$1"))); }	# both devices' COUNTER
rxb() { dp_counter vrdma1 rx_batches; }
pingpong() {	# pingpong SIZE
	dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 20 -s "$1" -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 20 -s "$1" -c "$H1_IP"
}
# case LABEL SIZE TX RX: pingpong of SIZE bytes; TX/RX say whether the
# client's tx_batches and the server's rx_batches must rise (1) or stay (0)
case_pp() {
	local t0 r0 t1 r1 why=""
	t0=$(txb); r0=$(rxb)
	pingpong "$2" || { ktap_fail "$1: ibv_rc_pingpong -c $2 bytes"; return; }
	t1=$(txb); r1=$(rxb)
	[ "$3" = 1 ] && [ "${t1:-0}" -le "${t0:-0}" ] && why="no batch sent"
	[ "$3" = 0 ] && [ "${t1:-0}" -ne "${t0:-0}" ] && why="$((t1 - t0)) batches sent"
	[ "$4" = 1 ] && [ "${r1:-0}" -le "${r0:-0}" ] && why="$why no batch received"
	[ "$4" = 0 ] && [ "${r1:-0}" -ne "${r0:-0}" ] && why="$why $((r1 - r0)) batches received"
	[ -z "$why" ] && ktap_ok "$1: $2 bytes verified (tx batches +$((t1 - t0)), rx +$((r1 - r0)))" ||
		ktap_fail "$1: $2 bytes verified, but$why"
}

# one packet per message sends no batch; two (the second short) and more do
case_pp "1 packet" 1000 0 0
case_pp "2 packets" 2000 1 1
case_pp "47 packets" 65536 1 1
case_pp "141 packets" 200001 1 1
if [ "${DP_BATCH_RX:-0}" != 1 ]; then
t0=$(txb)
dpt "batches, dp_test" 150 --only send,write,read,sge,large,order
t1=$(txb)
[ "${t1:-0}" -gt "${t0:-0}" ] && ktap_ok "dp_test cases went out in batches (+$((t1 - t0)))" ||
	ktap_fail "dp_test cases: no batch sent"

if [ -f "$P/zcopy" ]; then
	zc=$(cat "$P/zcopy")
	echo 1 >"$P/zcopy"
	z0=$(dp_counter vrdma2 tx_zcopy_packets)
	case_pp "copy-free, page crossings" 200001 1 1
	case_pp "copy-free, 4097 bytes" 4097 1 1
	z1=$(dp_counter vrdma2 tx_zcopy_packets)
	[ "${z1:-0}" -gt "${z0:-0}" ] && ktap_ok "copy-free batches carried user pages (+$((z1 - z0)))" ||
		ktap_fail "copy-free: no packet went without a copy"
	# 32 copy-free packets take more than an skb's 17 fragments: the
	# batch grows a frag list where the netdev takes one (veth), and
	# stops at 17 fragments where it does not
	fl() { dp_counter vrdma2 tx_frag_lists; }
	f0=$(fl)
	case_pp "copy-free, frag-list batches" 200001 1 1
	dpt "frag-list batches, dp_test" 150 --only send,write,read,sge,large,order
	f1=$(fl)
	[ "${f1:-0}" -gt "${f0:-0}" ] && ktap_ok "batches grew frag lists (+$((f1 - f0)))" ||
		ktap_fail "no batch grew a frag list"
	ip netns exec "$H2" ethtool -K "$H2_IF" tx-scatter-gather-fraglist off >/dev/null
	case_pp "copy-free, a netdev without frag lists" 200001 1 1
	f2=$(fl)
	[ "${f2:-0}" -eq "${f1:-0}" ] && ktap_ok "a netdev without frag lists: none sent" ||
		ktap_fail "a netdev without frag lists: $((f2 - f1)) frag lists sent"
	ip netns exec "$H2" ethtool -K "$H2_IF" tx-scatter-gather-fraglist on >/dev/null
	echo "$zc" >"$P/zcopy"
fi

# receive hand-off (experimental, off by default): batches placed by a
# worker on another CPU, in order, the data still verified
if [ -f "$P/rx_handoff" ] && [ "$(nproc)" -ge 2 ]; then
	echo 1 >"$P/rx_handoff"
	h0=$(dp_counter vrdma1 rx_handed_off)
	case_pp "receive hand-off" 200001 1 1
	dpt "receive hand-off, dp_test" 150 --only send,write,read,sge,large,order
	h1=$(dp_counter vrdma1 rx_handed_off)
	[ "${h1:-0}" -gt "${h0:-0}" ] && ktap_ok "receive hand-off: a worker placed batches (+$((h1 - h0)))" ||
		ktap_fail "receive hand-off: nothing was handed off"
	# the same with polling workers: batches found without a wake-up
	if [ -f "$P/rx_spin_us" ]; then
		echo 2000 >"$P/rx_spin_us"
		echo 200 >"$P/rx_ack_spin_us"
		s0=$(both rx_handoff_polled)
		case_pp "receive hand-off, polling workers" 200001 1 1
		dpt "receive hand-off, polling workers, dp_test" 150 --only send,write,read,sge,large,order
		s1=$(both rx_handoff_polled)
		[ "${s1:-0}" -gt "${s0:-0}" ] && ktap_ok "receive hand-off: a polling worker found batches (+$((s1 - s0)))" ||
			ktap_fail "receive hand-off: no polling worker found a batch"
		echo 0 >"$P/rx_spin_us"
		echo 0 >"$P/rx_ack_spin_us"
	else
		ktap_skip "receive hand-off, polling workers: no rx_spin_us parameter"
	fi
	echo 0 >"$P/rx_handoff"
else
	ktap_skip "receive hand-off: no rx_handoff parameter, or one CPU"
fi

# receive steering (experimental, off by default): one-packet messages of
# a stream placed by a tasklet on another CPU, in order, the data verified
# (dp_test's order case: 40 unsignaled SENDs, received in order with their
# data), then a 64 B ib_send_bw stream that must complete
if [ -f "$P/rx_steer" ] && [ "$(nproc)" -ge 2 ]; then
	echo 1 >"$P/rx_steer"
	s0=$(both rx_handed_off)
	dpt "receive steering, dp_test" 150 --only send,order,write,read,sge
	o0=$(dp_counter vrdma1 rx_out_of_sequence)
	dp_pair 120 ib_send_bw -d vrdma1 -x "$G1" -s 64 -n 5000 -- \
		ib_send_bw -d vrdma2 -x "$G2" -s 64 -n 5000 "$H1_IP" &&
		ktap_ok "receive steering: 5000 64 B SENDs completed" ||
		ktap_fail "receive steering: ib_send_bw -s 64 -n 5000"
	s1=$(both rx_handed_off)
	# the stream's ACKs are taken on the sender's CPU: few, if any, out of
	# sequence (a report, not a check: a migrating process reorders too)
	diag "receive steering: ib_send_bw stream, $(($(dp_counter vrdma1 rx_out_of_sequence) - o0)) packets out of sequence"
	[ "$s1" -gt "$s0" ] && ktap_ok "receive steering: a tasklet placed messages (+$((s1 - s0)))" ||
		ktap_fail "receive steering: nothing was steered"
	echo 0 >"$P/rx_steer"
else
	ktap_skip "receive steering: no rx_steer parameter, or one CPU"
fi

# doorbell coalescing (tx_coalesce_us, docs/driver.md "Doorbell
# coalescing"): a stream of small messages leaves its doorbells to the
# connection's timer and goes out in batches, the data verified (dp_test's
# cases, its order case 40 unsignaled SENDs received in order); a 64 B
# ib_send_bw stream completes with doorbells deferred; a ping-pong, whose
# every message is answered, holds none (deterministic: the reply's run
# holds the connection's lock until it has noted the data)
stream64() {	# LABEL: 5000 64 B SENDs one way
	dp_pair 120 ib_send_bw -d vrdma1 -x "$G1" -s 64 -n 5000 -- \
		ib_send_bw -d vrdma2 -x "$G2" -s 64 -n 5000 "$H1_IP" &&
		ktap_ok "$1: 5000 64 B SENDs completed" ||
		ktap_fail "$1: ib_send_bw -s 64 -n 5000"
}
if [ -f "$P/tx_coalesce_us" ]; then
	coalesce=$(cat "$P/tx_coalesce_us")
	echo 50 >"$P/tx_coalesce_us"
	dpt "doorbell coalescing, dp_test" 150 --only send,order,write,read,sge
	d0=$(both tx_db_deferred); t0=$(txb)
	stream64 "doorbell coalescing"
	d1=$(both tx_db_deferred); t1=$(txb)
	[ "${d1:-0}" -gt "${d0:-0}" ] && [ "${t1:-0}" -gt "${t0:-0}" ] &&
		ktap_ok "doorbell coalescing: the stream's doorbells held (+$((d1 - d0))), its messages batched (+$((t1 - t0)))" ||
		ktap_fail "doorbell coalescing: doorbells held +$((d1 - d0)), batches +$((t1 - t0))"
	case_pp "doorbell coalescing, a ping-pong" 64 0 0
	d2=$(both tx_db_deferred)
	[ "${d2:-0}" -eq "${d1:-0}" ] && ktap_ok "doorbell coalescing: the ping-pong held no doorbell" ||
		ktap_fail "doorbell coalescing: the ping-pong held $((d2 - d1)) doorbells"
	# bursts of four SENDs, each burst waited for (a send queue four
	# deep), on a wire with delay (on a bare veth the first is answered
	# inside its own doorbell, so the next finds nothing in flight): the
	# second of each is held, and the hold gathers the burst's three,
	# not a batch. After a few such holds the QP holds none for a while,
	# longer each time (tx_db_backoffs): a few holds in the run, not one
	# per burst (150 before the back-off)
	b0=$(both tx_db_backoffs)
	dp_netem "delay 500us"
	dp_pair 120 ib_send_bw -d vrdma1 -x "$G1" -s 64 -n 600 -t 4 -- \
		ib_send_bw -d vrdma2 -x "$G2" -s 64 -n 600 -t 4 "$H1_IP" &&
		ktap_ok "doorbell coalescing: 150 bursts of four 64 B SENDs completed" ||
		ktap_fail "doorbell coalescing: ib_send_bw -s 64 -n 600 -t 4"
	dp_netem ""
	b1=$(both tx_db_backoffs) d2b=$(both tx_db_deferred)
	[ "${b1:-0}" -gt "${b0:-0}" ] && [ $((d2b - d2)) -lt 40 ] &&
		ktap_ok "doorbell coalescing: 150 bursts held $((d2b - d2)) doorbells, backed off $((b1 - b0)) times" ||
		ktap_fail "doorbell coalescing: 150 bursts held $((d2b - d2)) doorbells, backed off $((b1 - b0)) times"
	d2=$d2b
	echo 0 >"$P/tx_coalesce_us"
	stream64 "control: tx_coalesce_us=0"
	d3=$(both tx_db_deferred)
	[ "${d3:-0}" -eq "${d2:-0}" ] && ktap_ok "control: tx_coalesce_us=0 held no doorbell" ||
		ktap_fail "control: tx_coalesce_us=0 held $((d3 - d2)) doorbells"
	echo "$coalesce" >"$P/tx_coalesce_us"
else
	ktap_skip "doorbell coalescing: no tx_coalesce_us parameter"
fi

# the ACK a run owes rides as the last packet of its data's skb
# (docs/driver.md, "The ACK in the reply's skb"): 64 B SENDs both ways,
# perftest signaling one in many, so each side holds ACKs for data of its
# own to carry; with tx_batch=1 none does (checked below)
carried() { echo $(($(dp_counter vrdma1 acks_in_data) + $(dp_counter vrdma2 acks_in_data))); }
both_ways() {	# LABEL
	dp_pair 120 ib_send_bw -d vrdma1 -x "$G1" -s 64 -n 3000 -b -- \
		ib_send_bw -d vrdma2 -x "$G2" -s 64 -n 3000 -b "$H1_IP" ||
		{ ktap_fail "$1: ib_send_bw -b -s 64 -n 3000"; return 1; }
}
c0=$(carried)
if both_ways "ACKs in data"; then
	c1=$(carried)
	[ "$c1" -gt "$c0" ] && ktap_ok "ACKs in data: 3000 64 B SENDs each way, $((c1 - c0)) ACKs carried" ||
		ktap_fail "ACKs in data: no ACK rode in a data skb"
fi

# a READ's ACK rides behind its one-packet response, in its skb, not ahead
# of it on its own (docs/driver.md, same section): ib_read_lat's server
# (the responder, vrdma1) carries nearly every one. The response asks for
# no ACK: the client (vrdma2) holds it and its next request carries it, in
# front of the request (72 bytes of ACK do not fit behind its 56).
a0=$(dp_counter vrdma1 acks_in_data)
r0=$(dp_counter vrdma2 acks_in_data)
if dp_pair 120 ib_read_lat -d vrdma1 -x "$G1" -s 64 -n 200 -- \
	ib_read_lat -d vrdma2 -x "$G2" -s 64 -n 200 "$H1_IP"; then
	a1=$(dp_counter vrdma1 acks_in_data)
	r1=$(dp_counter vrdma2 acks_in_data)
	[ $((a1 - a0)) -ge 150 ] && ktap_ok "READ's ACK behind its response: $((a1 - a0)) of 200 carried" ||
		ktap_fail "READ's ACK behind its response: $((a1 - a0)) of 200 carried"
	[ $((r1 - r0)) -ge 150 ] && ktap_ok "response's ACK in front of the next READ: $((r1 - r0)) of 200 carried" ||
		ktap_fail "response's ACK in front of the next READ: $((r1 - r0)) of 200 carried"
else
	ktap_fail "ib_read_lat -s 64 -n 200"
fi
# the same for atomics: each request (80 bytes) carries the ACK of the
# response before it behind itself, each 8-byte response the ACK of its
# request in front of itself
a0=$(dp_counter vrdma1 acks_in_data)
r0=$(dp_counter vrdma2 acks_in_data)
if dp_pair 120 ib_atomic_lat -d vrdma1 -x "$G1" -n 200 -- \
	ib_atomic_lat -d vrdma2 -x "$G2" -n 200 "$H1_IP"; then
	a1=$(dp_counter vrdma1 acks_in_data)
	r1=$(dp_counter vrdma2 acks_in_data)
	[ $((a1 - a0)) -ge 150 ] && [ $((r1 - r0)) -ge 150 ] &&
		ktap_ok "atomics: ACKs carried, responder $((a1 - a0)), requester $((r1 - r0)) of 200" ||
		ktap_fail "atomics: ACKs carried, responder $((a1 - a0)), requester $((r1 - r0)) of 200"
else
	ktap_fail "ib_atomic_lat -n 200"
fi

txbatch=$(cat "$P/tx_batch")
echo 1 >"$P/tx_batch"
case_pp "control: tx_batch=1" 65536 0 0
c0=$(carried)
if both_ways "control: tx_batch=1, both ways"; then
	c1=$(carried)
	[ "$c1" -eq "$c0" ] && ktap_ok "control: tx_batch=1, both ways: no ACK in a data skb" ||
		ktap_fail "control: tx_batch=1, both ways: $((c1 - c0)) ACKs in data skbs"
fi
echo "$txbatch" >"$P/tx_batch"

fi

# the stack segments before the veth: single packets arrive
ip netns exec "$H2" ethtool -K "$H2_IF" tx-udp-segmentation off >/dev/null
case_pp "no USO on the sender's netdev" 65536 1 0
# GRO at the receiver aggregates them into one skb again (a veth takes
# socket-owned UDP packets into GRO only with rx-udp-gro-forwarding on:
# veth_skb_is_eligible_for_gro())
if ip netns exec "$H1" ethtool -K "$H1_IF" gro on rx-udp-gro-forwarding on >/dev/null 2>&1; then
	case_pp "GRO aggregates at the receiver" 200001 1 1
	ip netns exec "$H1" ethtool -K "$H1_IF" gro off rx-udp-gro-forwarding off >/dev/null
else
	ktap_skip "GRO aggregates: veth GRO cannot be switched on here"
fi
ip netns exec "$H2" ethtool -K "$H2_IF" tx-udp-segmentation on >/dev/null

# a router between the hosts: A -- R -- B, a device on A's and B's veth
routed() {
	# dp_pair runs its server in $H1 and its client in $H2: here A and B
	local H1 H2 x ga gb t0 r0 t1 r1
	setup_ns A R B || return 1
	ip link add ra0 netns "$A" type veth peer name r0 netns "$R" || return 1
	ip link add rb0 netns "$B" type veth peer name r1 netns "$R" || return 1
	ip -n "$A" addr add 10.241.0.2/24 dev ra0
	ip -n "$R" addr add 10.241.0.1/24 dev r0
	ip -n "$R" addr add 10.242.0.1/24 dev r1
	ip -n "$B" addr add 10.242.0.2/24 dev rb0
	for x in "$A:ra0" "$R:r0" "$R:r1" "$B:rb0"; do ip -n "${x%%:*}" link set "${x#*:}" up; done
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$A" route add 10.242.0.0/24 via 10.241.0.1
	ip -n "$B" route add 10.241.0.0/24 via 10.242.0.1
	run ip netns exec "$A" rdma link add vrdma3 type vrdma netdev ra0 || return 1
	run ip netns exec "$B" rdma link add vrdma4 type vrdma netdev rb0 || return 1
	defer rdma link del vrdma3
	defer rdma link del vrdma4
	wait_until 10 sh -c "ip netns exec $A ping -c 1 -W 1 10.242.0.2 >/dev/null" || return 1
	wait_until 10 dp_gid4 vrdma3 >/dev/null && wait_until 10 dp_gid4 vrdma4 >/dev/null || return 1
	ga=$(dp_gid4 vrdma3)
	gb=$(dp_gid4 vrdma4)
	H1=$A
	H2=$B
	t0=$(dp_counter vrdma4 tx_batches); r0=$(dp_counter vrdma3 rx_batches)
	dp_pair 90 ibv_rc_pingpong -d vrdma3 -g "$ga" -n 20 -s 200001 -c -- \
		ibv_rc_pingpong -d vrdma4 -g "$gb" -n 20 -s 200001 -c 10.241.0.2 || return 1
	t1=$(dp_counter vrdma4 tx_batches); r1=$(dp_counter vrdma3 rx_batches)
	ROUTED="tx batches +$((t1 - t0)), rx +$((r1 - r0))"
	[ "$t1" -gt "$t0" ] || { diag "routed: no batch sent"; return 1; }
	if [ "$encap" = Y ]; then
		[ "$r1" -eq "$r0" ]
	else
		[ "$r1" -gt "$r0" ]
	fi
}
if routed; then
	ktap_ok "through a router: 200001 bytes verified, batches $([ "$encap" = Y ] && echo "not marked, segmented at the receiver" || echo "taken whole") ($ROUTED)"
else
	ktap_fail "through a router: 200001 bytes verified${ROUTED:+, but $ROUTED}"
fi

# jumbo frames: perftest (port MTU) fills 8916-byte payloads, 5 to a batch
ip -n "$H1" link set "$H1_IF" mtu 9000 && ip -n "$H2" link set "$H2_IF" mtu 9000
case_pp "MTU 9000" 200001 1 1
if dp_pair 90 ib_write_bw -d vrdma1 -x "$G1" -F -s 1048576 -n 20 -- \
	ib_write_bw -d vrdma2 -x "$G2" -F -s 1048576 -n 20 "$H1_IP"; then
	ktap_ok "MTU 9000: ib_write_bw 20 x 1 MB"
else
	ktap_fail "MTU 9000: ib_write_bw 20 x 1 MB"
fi
ip -n "$H1" link set "$H1_IF" mtu 1500 && ip -n "$H2" link set "$H2_IF" mtu 1500
ktap_finished
