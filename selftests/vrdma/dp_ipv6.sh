#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC traffic over IPv6: the GID of each host's IPv6 address (fd00:231::/64)
# addresses the peer, so the transport runs over the IPv6 UDP socket and
# route lookup. Checks the packets really were IPv6 (the veth's ip6 counters
# grow) and that the data verifies.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw
require_vrdma
require_provider

# expand6 ADDR: the 32 hex digits of an IPv6 address (one "::" allowed)
expand6() {
	local head=${1%%::*} tail= out= g n
	[ "$head" != "$1" ] && tail=${1#*::}
	n=$(( 8 - $(echo "$head" | tr ':' '\n' | grep -c .) - $(echo "$tail" | tr ':' '\n' | grep -c .) ))
	for g in ${head//:/ }; do out+=$(printf '%04x' "0x$g"); done
	while [ "$n" -gt 0 ]; do out+=0000; n=$((n - 1)); done
	for g in ${tail//:/ }; do out+=$(printf '%04x' "0x$g"); done
	echo "$out"
}
# gid6 DEV ADDR: index of the GID equal to the IPv6 address ADDR
gid6() {
	local want i g
	want=$(expand6 "$2")
	for i in $(seq 0 31); do
		g=$(cat "/sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null) || continue
		[ "${g//:/}" = "$want" ] && { echo "$i"; return 0; }
	done
	return 1
}
gid6_ready() { gid6 vrdma1 "$H1_IP6" >/dev/null && gid6 vrdma2 "$H2_IP6" >/dev/null; }
udp6_in() { ip netns exec "$H2" awk '$1 == "Udp6InDatagrams" { print $2 }' /proc/net/snmp6; }

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
if ! wait_until 15 gid6_ready; then
	ktap_fail "IPv6 GIDs for $H1_IP6 and $H2_IP6"
	ktap_finished
fi
I1=$(gid6 vrdma1 "$H1_IP6")
I2=$(gid6 vrdma2 "$H2_IP6")
ktap_ok "IPv6 GIDs: vrdma1 index $I1, vrdma2 index $I2"

before=$(udp6_in)
if dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$I1" -n 40 -s 65536 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$I2" -n 40 -s 65536 -c "$H1_IP"; then
	ktap_ok "ibv_rc_pingpong -c over IPv6, 64 KB: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
else
	ktap_fail "ibv_rc_pingpong -c over IPv6, 64 KB"
fi
after=$(udp6_in)
# 40 round trips of 64 KB: at least one UDPv6 datagram each (a batch of
# up to 16 packets is one datagram; a tunnel transmit is not counted in
# Udp6OutDatagrams, so count arrivals).
if [ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -ge 40 ]; then
	ktap_ok "the traffic was IPv6: $((after - before)) UDPv6 datagrams received by H2"
else
	ktap_fail "the traffic was IPv6 (Udp6InDatagrams ${before:-?} -> ${after:-?})"
fi

# Each packet is counted once by the netdev it leaves on. The IPv6
# transmit used to hand the route's netdev to udp_tunnel6_xmit_skb() as a
# tunnel device, whose per-CPU tunnel stats it then bumped too: a veth
# counted every packet twice, and the loopback netdev (whose per-CPU
# stats are smaller) had the next per-CPU allocation overwritten. Small
# messages are one packet per skb, so H2's veth counts about what vrdma2
# sends (plus a few neighbour discovery packets), not twice that.
v0=$(tx_packets "$H2_IF" "$H2")
r0=$(dp_counter vrdma2 tx_packets)
dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$I1" -n 200 -s 64 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$I2" -n 200 -s 64 -c "$H1_IP"
rv=$?
v=$(($(tx_packets "$H2_IF" "$H2") - v0))
r=$(($(dp_counter vrdma2 tx_packets) - r0))
if [ "$rv" -eq 0 ] && [ "$r" -ge 200 ] && [ $((v * 4)) -le $((r * 5 + 80)) ]; then
	ktap_ok "IPv6 packets counted once: vrdma2 sent $r, its veth counted $v"
else
	ktap_fail "IPv6 packets counted once (pingpong rc $rv): vrdma2 sent $r, its veth counted $v"
fi

dp_netem "loss 1%"
if dp_pair 120 ib_write_bw -d vrdma1 -x "$I1" -F -s 65536 -n 200 --report_gbits -- \
	ib_write_bw -d vrdma2 -x "$I2" -F -s 65536 -n 200 --report_gbits "$H1_IP"; then
	ktap_ok "ib_write_bw over IPv6 with 1% loss:$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')"
else
	ktap_fail "ib_write_bw over IPv6 with 1% loss"
fi
dp_netem ""
ktap_finished
