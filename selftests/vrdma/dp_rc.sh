#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC traffic between two hosts over vrdma with the standard tools:
# ibv_rc_pingpong with buffer validation (-c) for several sizes, the
# packet size that follows the MTUs, and perftest's ib_send/ib_write/
# ib_read/ib_atomic bw and ib_send/ib_write/ib_atomic lat.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2"

for size in 1 4096 65536; do
	if dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s $size -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 40 -s $size -c "$H1_IP"; then
		ktap_ok "ibv_rc_pingpong -c, $size bytes: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		ktap_fail "ibv_rc_pingpong -c, $size bytes"
	fi
done

# Packet size: at the port's active MTU (1024 on this 1500-byte veth) a
# data packet carries what the netdev MTU leaves, 1500 - 20 - 8 - 56 = 1416
# bytes: a 64 KB SEND is 47 packets. A smaller path MTU (-m 512) is kept,
# and so is the IB MTU with fill_mtu=N. Counted at the receiver (a rare
# retransmission adds a packet: 10% slack).
pkts_per_msg() {	# pkts_per_msg LABEL WANT ARGS...
	local label=$1 want=$2 b a per
	shift 2
	b=$(dp_counter vrdma1 rx_data_packets)
	if ! dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 20 -s 65536 -c "$@" -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 20 -s 65536 -c "$@" "$H1_IP"; then
		ktap_fail "$label: ibv_rc_pingpong 64 KB $*"
		return
	fi
	a=$(dp_counter vrdma1 rx_data_packets)
	per=$(((a - b) / 20))
	if [ "$per" -ge "$want" ] && [ "$per" -lt $((want + want / 10)) ]; then
		ktap_ok "$label: $per packets per 64 KB message (want $want)"
	else
		ktap_fail "$label: $per packets per 64 KB message (want $want; rx_data_packets $b -> $a)"
	fi
}
pkts_per_msg "active MTU, packets fill the netdev MTU" 47
pkts_per_msg "path MTU 512 kept" 128 -m 512
echo N >/sys/module/vrdma/parameters/fill_mtu
pkts_per_msg "fill_mtu=N: IB MTU 1024" 64
echo Y >/sys/module/vrdma/parameters/fill_mtu

pt() {	# pt TOOL ARGS...: perftest pair on vrdma, prints its result line
	local tool=$1
	shift
	dp_pair 120 "$tool" -d vrdma1 -x "$G1" -F "$@" -- \
		"$tool" -d vrdma2 -x "$G2" -F "$@" "$H1_IP"
}
for t in "ib_write_bw -s 65536 -n 300 --report_gbits" \
	 "ib_read_bw -s 65536 -n 300 --report_gbits" \
	 "ib_send_bw -s 65536 -n 300 --report_gbits" \
	 "ib_write_bw -s 64 -n 2000" \
	 "ib_send_lat -s 2 -n 300" \
	 "ib_write_lat -s 2 -n 300" \
	 "ib_atomic_bw -n 1000" \
	 "ib_atomic_bw -A CMP_AND_SWAP -n 1000" \
	 "ib_atomic_lat -n 300"; do
	# shellcheck disable=SC2086
	if pt $t; then
		res=$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')
		ktap_ok "$t:$res"
	else
		ktap_fail "$t"
	fi
done

# Lazy ACKs (docs/driver.md): perftest signals one 64 B SEND in 100, and
# the others ask for no ACK when they drain the queue, which each does
# here, where the peer's receive runs inside the sender's doorbell. Their
# ACKs are coalesced: far fewer than one per message (one each before).
read -r d0 a0 <<<"$(dp_counters vrdma1 rx_data_packets acks_sent)"
if pt ib_send_bw -s 64 -n 2000; then
	read -r d1 a1 <<<"$(dp_counters vrdma1 rx_data_packets acks_sent)"
	d=$((${d1:-0} - ${d0:-0}))
	a=$((${a1:-0} - ${a0:-0}))
	if [ "$d" -ge 2000 ] && [ $((a * 4)) -le "$d" ]; then
		ktap_ok "lazy ACKs: $a ACKs for $d 64 B SENDs, 1 in 100 signaled"
	else
		ktap_fail "lazy ACKs: $a ACKs for $d 64 B SENDs (want at most 1 per 4)"
	fi
else
	ktap_fail "lazy ACKs: ib_send_bw -s 64 -n 2000"
fi

# The wire carries each packet once: the sender's veth counts vrdma's
# bytes plus one set of Ethernet, IP and UDP headers per skb (and
# perftest's TCP exchange), never twice them. An skb->dev left set on a
# packet made iptunnel_xmit() count it again, in the stats it takes for a
# tunnel device's (on a loopback netdev that overran its smaller ones).
wire_tx() { ip netns exec "$H2" cat "/sys/class/net/$H2_IF/statistics/tx_bytes"; }
read -r b0 p0 <<<"$(dp_counters vrdma2 tx_bytes tx_packets)"
w0=$(wire_tx)
if pt ib_write_bw -s 65536 -n 300; then
	read -r b1 p1 <<<"$(dp_counters vrdma2 tx_bytes tx_packets)"
	w=$(($(wire_tx) - w0))
	b=$((${b1:-0} - ${b0:-0}))
	p=$((${p1:-0} - ${p0:-0}))
	if [ "$b" -ge $((300 * 65536)) ] && [ "$w" -ge "$b" ] &&
	   [ "$w" -le $((b + 64 * p + 65536)) ]; then
		ktap_ok "wire bytes: $w on $H2_IF for $b vrdma bytes in $p packets"
	else
		ktap_fail "wire bytes: $w on $H2_IF for $b vrdma bytes in $p packets (want one count each)"
	fi
else
	ktap_fail "wire bytes: ib_write_bw -s 65536 -n 300"
fi

ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
