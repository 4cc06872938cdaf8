#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Loopback: two QPs of one vrdma device, and QPs of two vrdma devices of
# one namespace (two netdevs, no policy routing), talk as on every RDMA
# device. Their packets go through the local routes (the loopback netdev),
# not over the wire: RC (ibv_rc_pingpong -c, ib_write_bw, ib_read_bw,
# ib_send_lat), RC over IPv6 GIDs, UD (ibv_ud_pingpong), rdma_cm (rping -V
# bound to each address, qperf -cm1 with its wildcard listener). The veth
# between the two netdevs must stay (almost) silent. Then isolation: a
# packet to 127.0.0.1 reaches no device, one to a device's address from
# the namespace itself reaches that device, one from a remote namespace
# to that address through a third netdev (no vrdma device) reaches none.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_lat rping rdma
require_vrdma
require_provider

LB1_IF=lb1
LB2_IF=lb2
LB1_IP=10.233.0.1
LB2_IP=10.233.0.2
LB1_IP6=fd00:233::1
LB2_IP6=fd00:233::2

# One namespace, a veth pair with both ends in it (each with an IPv4 and
# an IPv6 address), vrdma1 on lb1, vrdma2 on lb2. H1 = H2 = that
# namespace, so that dp_pair runs both ends there.
lb_setup() {
	run modprobe vrdma ${VRDMA_MODOPTS:-} || return 1
	defer modprobe -r vrdma
	setup_ns LB || return 1
	ip link add "$LB1_IF" netns "$LB" type veth peer name "$LB2_IF" netns "$LB" || return 1
	ip -n "$LB" addr add "$LB1_IP/24" dev "$LB1_IF"
	ip -n "$LB" addr add "$LB2_IP/24" dev "$LB2_IF"
	ip -n "$LB" -6 addr add "$LB1_IP6/64" dev "$LB1_IF" nodad
	ip -n "$LB" -6 addr add "$LB2_IP6/64" dev "$LB2_IF" nodad
	ip -n "$LB" link set "$LB1_IF" up
	ip -n "$LB" link set "$LB2_IF" up
	# modify_qp(RTR) resolves the peer's MAC (ib_resolve_eth_dmac) with a
	# route bound to the QP's own netdev, so between two local devices it
	# ARPs across the veth, within 1 s: on a loaded host the first try
	# timed out. Static entries (as wire_single has) make it deterministic.
	local m1 m2
	m1=$(ip -n "$LB" -br link show "$LB1_IF" | awk '{ print $3 }')
	m2=$(ip -n "$LB" -br link show "$LB2_IF" | awk '{ print $3 }')
	ip -n "$LB" neigh replace "$LB2_IP" lladdr "$m2" dev "$LB1_IF" nud permanent
	ip -n "$LB" neigh replace "$LB1_IP" lladdr "$m1" dev "$LB2_IF" nud permanent
	ip -n "$LB" neigh replace "$LB2_IP6" lladdr "$m2" dev "$LB1_IF" nud permanent
	ip -n "$LB" neigh replace "$LB1_IP6" lladdr "$m1" dev "$LB2_IF" nud permanent
	run ip netns exec "$LB" rdma link add vrdma1 type vrdma netdev "$LB1_IF" || return 1
	defer rdma link del vrdma1
	run ip netns exec "$LB" rdma link add vrdma2 type vrdma netdev "$LB2_IF" || return 1
	defer rdma link del vrdma2
	wait_until 10 dp_gids_ready || { diag "no IPv4 GIDs"; return 1; }
	G1=$(dp_gid4 vrdma1)
	G2=$(dp_gid4 vrdma2)
	H1=$LB
	H2=$LB
}

# gid6 DEV ADDR: index of the GID equal to the IPv6 address ADDR
gid6() {
	local i g want
	want=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).exploded)" "$2")
	for i in $(seq 0 31); do
		g=$(cat "/sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null) || continue
		[ "$g" = "$want" ] && { echo "$i"; return 0; }
	done
	return 1
}

veth_tx() { echo $(($(tx_packets "$LB1_IF" "$LB") + $(tx_packets "$LB2_IF" "$LB"))); }
rx_pkts() { dp_counter "$1" rx_packets; }

# lb_check LABEL RC DEV...: ok when RC is 0, each DEV received packets
# since lb_mark and the veth carried (next to) nothing: the traffic went
# through the local routes.
lb_mark() {
	mark_tx=$(veth_tx)
	mark_rx1=$(rx_pkts vrdma1)
	mark_rx2=$(rx_pkts vrdma2)
}
lb_check() {
	local label=$1 rc=$2 d got tx
	shift 2
	if [ "$rc" -ne 0 ]; then
		ktap_fail "$label"
		return
	fi
	for d in "$@"; do
		if [ "$d" = vrdma1 ]; then got=$(($(rx_pkts vrdma1) - mark_rx1)); else got=$(($(rx_pkts vrdma2) - mark_rx2)); fi
		if [ "$got" -le 0 ]; then
			ktap_fail "$label: $d received nothing"
			return
		fi
	done
	tx=$(($(veth_tx) - mark_tx))
	# IPv6 neighbour and router solicitations may cross; data may not.
	if [ "$tx" -gt 10 ]; then
		ktap_fail "$label: $tx packets crossed the veth"
		return
	fi
	ktap_ok "$label$(grep -o ' [0-9.]* usec/iter' "$DP_OUT" | tail -n 1)"
}

lb_setup || { ktap_fail "one namespace, two netdevs, vrdma1 and vrdma2"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2"

# ---- RC --------------------------------------------------------------------
for size in 1 65536; do
	lb_mark
	dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s $size -c -- \
		ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s $size -c "$LB1_IP"
	lb_check "RC, one device: ibv_rc_pingpong -c, $size bytes" $? vrdma1
done

pt() {	# pt SRV_DEV SRV_GID CLI_DEV CLI_GID TOOL ARGS...
	local sd=$1 sg=$2 cd=$3 cg=$4 tool=$5
	shift 5
	dp_pair 120 "$tool" -d "$sd" -x "$sg" -F "$@" -- \
		"$tool" -d "$cd" -x "$cg" -F "$@" "$LB1_IP"
}
for t in "ib_write_bw -s 65536 -n 100 --report_gbits" \
	 "ib_read_bw -s 65536 -n 100 --report_gbits" \
	 "ib_send_lat -s 2 -n 100"; do
	lb_mark
	# shellcheck disable=SC2086
	pt vrdma1 "$G1" vrdma1 "$G1" $t
	lb_check "RC, one device: $t" $? vrdma1
done

lb_mark
dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s 4096 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$G2" -n 40 -s 4096 -c "$LB1_IP"
lb_check "RC, two devices: ibv_rc_pingpong -c, 4096 bytes" $? vrdma1 vrdma2
lb_mark
pt vrdma1 "$G1" vrdma2 "$G2" ib_write_bw -s 65536 -n 100 --report_gbits
lb_check "RC, two devices: ib_write_bw 64 KB" $? vrdma1 vrdma2

if wait_until 10 gid6 vrdma1 "$LB1_IP6" >/dev/null &&
   wait_until 10 gid6 vrdma2 "$LB2_IP6" >/dev/null; then
	lb_mark
	dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$(gid6 vrdma1 "$LB1_IP6")" -n 40 -s 4096 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$(gid6 vrdma2 "$LB2_IP6")" -n 40 -s 4096 -c "$LB1_IP"
	lb_check "RC, two devices, IPv6 GIDs: ibv_rc_pingpong -c" $? vrdma1 vrdma2
else
	ktap_fail "RC, two devices, IPv6 GIDs: no IPv6 GID"
fi

# ---- UD --------------------------------------------------------------------
lb_mark
dp_pair 90 ibv_ud_pingpong -d vrdma1 -g "$G1" -n 100 -s 512 -- \
	ibv_ud_pingpong -d vrdma1 -g "$G1" -n 100 -s 512 "$LB1_IP"
lb_check "UD, one device: ibv_ud_pingpong 512 bytes" $? vrdma1
lb_mark
dp_pair 90 ibv_ud_pingpong -d vrdma1 -g "$G1" -n 100 -s 512 -- \
	ibv_ud_pingpong -d vrdma2 -g "$G2" -n 100 -s 512 "$LB1_IP"
lb_check "UD, two devices: ibv_ud_pingpong 512 bytes" $? vrdma1 vrdma2

# ---- rdma_cm ---------------------------------------------------------------
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q LISTEN; }
# cm_run SECONDS SERVER_CMD... -- CLIENT_CMD...: server, once it listens
# the client; 0 when both exit 0
cm_run() {
	local secs=$1 srv=() pid rc src
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	ip netns exec "$LB" timeout -k 2 "$secs" "${srv[@]}" >"$DP_OUT.srv" 2>&1 &
	pid=$!
	wait_until 20 cm_listening || diag "server not listening after 20 s"
	ip netns exec "$LB" timeout -k 2 "$secs" "$@" >"$DP_OUT" 2>&1
	rc=$?
	wait "$pid"
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		diag "client rc=$rc server rc=$src: $(tail -n 3 "$DP_OUT" | tr '\n' ' ')"
		diag "server: $(tail -n 3 "$DP_OUT.srv" | tr '\n' ' ')"
		return 1
	fi
}
lb_mark
cm_run 60 rping -s -a "$LB1_IP" -C 20 -V -S 4096 -- rping -c -a "$LB1_IP" -C 20 -V -S 4096
lb_check "rdma_cm, one device: rping -V" $? vrdma1
lb_mark
cm_run 60 rping -s -a "$LB1_IP" -C 20 -V -S 4096 -- \
	rping -c -I "$LB2_IP" -a "$LB1_IP" -C 20 -V -S 4096
lb_check "rdma_cm, two devices: rping -V" $? vrdma1 vrdma2

# qperf -cm1: the server listens on the wildcard address (every device).
if command -v qperf >/dev/null; then
	ip netns exec "$LB" qperf >/dev/null 2>&1 &
	qpid=$!
	defer kill "$qpid"
	wait_until 10 eval "ip netns exec $LB ss -ltn | grep -q ':19765 '" ||
		diag "qperf server not listening"
	for t in rc_bw rc_lat rc_rdma_write_bw rc_rdma_write_lat rc_rdma_read_bw rc_rdma_read_lat \
		 rc_compare_swap_mr rc_fetch_add_mr; do
		lb_mark
		ip netns exec "$LB" timeout -k 2 30 qperf -cm1 -t 1 "$LB1_IP" "$t" >"$DP_OUT" 2>&1
		rc=$?
		[ $rc -eq 0 ] || diag "qperf -cm1 $t: rc=$rc $(tr '\n' ' ' <"$DP_OUT")"
		lb_check "rdma_cm, one device: qperf -cm1 $t:$(grep -E 'bw|latency|msg_rate' "$DP_OUT" | tr -s ' ' | tr '\n' ' ')" $rc vrdma1
	done
else
	ktap_skip "rdma_cm: qperf -cm1" "qperf is not installed"
fi

# ---- isolation -------------------------------------------------------------
PKTGEN=${VRDMA_PKTGEN:-$VRDMA_SELFTESTS/../../build/userspace/tools/vrdma_pktgen}
if [ -x "$PKTGEN" ]; then
	pg() {	# pg NS ARGS...: 50 packets for QPN 12345 (no such QP)
		local ns=$1
		shift
		ip netns exec "$ns" timeout 20 "$PKTGEN" --qpn 12345 --count 50 --case no-qp "$@" >/dev/null
	}
	lb_mark
	pg "$LB" --dst 127.0.0.1 --src 127.0.0.1
	if [ "$(rx_pkts vrdma1)" = "$mark_rx1" ] && [ "$(rx_pkts vrdma2)" = "$mark_rx2" ]; then
		ktap_ok "isolation: packets to 127.0.0.1 reach no device"
	else
		ktap_fail "isolation: packets to 127.0.0.1 reached a device"
	fi
	b=$(dp_counter vrdma1 rx_dropped_no_qp)
	pg "$LB" --dst "$LB1_IP" --src "$LB2_IP"
	a=$(dp_counter vrdma1 rx_dropped_no_qp)
	if [ $((a - b)) -ge 50 ] && [ "$(rx_pkts vrdma2)" = "$mark_rx2" ]; then
		ktap_ok "isolation: packets to vrdma1's address from the namespace reach vrdma1 only"
	else
		ktap_fail "isolation: to vrdma1's address: rx_dropped_no_qp $b -> $a, vrdma2 rx $mark_rx2 -> $(rx_pkts vrdma2)"
	fi
	# A remote host on a third netdev of the namespace sends to
	# vrdma2's address: that netdev has no device, nothing may take it.
	setup_ns REM
	ip link add lb3 netns "$LB" type veth peer name rem0 netns "$REM"
	ip -n "$LB" addr add 10.234.0.1/24 dev lb3
	ip -n "$REM" addr add 10.234.0.2/24 dev rem0
	ip -n "$LB" link set lb3 up
	ip -n "$REM" link set rem0 up
	ip -n "$REM" route add 10.233.0.0/24 via 10.234.0.1
	lb_mark
	pg "$REM" --dst "$LB2_IP" --src 10.234.0.2
	rx3=$(ip netns exec "$LB" cat /sys/class/net/lb3/statistics/rx_packets)
	if [ "$rx3" -ge 50 ] && [ "$(rx_pkts vrdma1)" = "$mark_rx1" ] &&
	   [ "$(rx_pkts vrdma2)" = "$mark_rx2" ]; then
		ktap_ok "isolation: a remote peer's packets to vrdma2's address through another netdev reach no device"
	else
		ktap_fail "isolation: remote to vrdma2's address: lb3 rx $rx3, vrdma1 rx $mark_rx1 -> $(rx_pkts vrdma1), vrdma2 rx $mark_rx2 -> $(rx_pkts vrdma2)"
	fi
else
	ktap_skip "isolation" "$PKTGEN not built (make userspace)"
fi

ktap_finished
