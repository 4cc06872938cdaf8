#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UC QPs between two vrdma devices of one namespace (dp_uc.py, through
# pyverbs): SEND, SEND with immediate, RDMA WRITE and WRITE with
# immediate at 0 bytes, one packet and many, every byte checked, also into
# an SRQ; a SEND too long for its WQE dropped, the WQE kept; READ and
# atomics refused at post_send. Then the same QPs on a lossy wire (netem
# loss on the namespace's lo, which the packets between two local devices
# take): a message that lost a packet is dropped whole, the others arrive
# intact and in order, every send completes, and the receiver counts the
# dropped messages (rx_uc_msgs_dropped).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd python3 tc rdma
require_vrdma
require_provider
python3 -c "import pyverbs" 2>/dev/null || skip_all "no python3-pyverbs"

UC1_IF=uc1
UC2_IF=uc2
UC1_IP=10.234.0.1
UC2_IP=10.234.0.2
PY=$(dirname "$0")/dp_uc.py

uc_setup() {
	local m1 m2
	run modprobe vrdma ${VRDMA_MODOPTS:-} || return 1
	defer modprobe -r vrdma
	setup_ns UC || return 1
	ip link add "$UC1_IF" netns "$UC" type veth peer name "$UC2_IF" netns "$UC" || return 1
	ip -n "$UC" addr add "$UC1_IP/24" dev "$UC1_IF"
	ip -n "$UC" addr add "$UC2_IP/24" dev "$UC2_IF"
	ip -n "$UC" link set "$UC1_IF" up
	ip -n "$UC" link set "$UC2_IF" up
	# as dp_loopback.sh: modify_qp(RTR) resolves the peer's MAC
	m1=$(ip -n "$UC" -br link show "$UC1_IF" | awk '{ print $3 }')
	m2=$(ip -n "$UC" -br link show "$UC2_IF" | awk '{ print $3 }')
	ip -n "$UC" neigh replace "$UC2_IP" lladdr "$m2" dev "$UC1_IF" nud permanent
	ip -n "$UC" neigh replace "$UC1_IP" lladdr "$m1" dev "$UC2_IF" nud permanent
	run ip netns exec "$UC" rdma link add vrdma1 type vrdma netdev "$UC1_IF" || return 1
	defer rdma link del vrdma1
	run ip netns exec "$UC" rdma link add vrdma2 type vrdma netdev "$UC2_IF" || return 1
	defer rdma link del vrdma2
	wait_until 10 dp_gids_ready || { diag "no IPv4 GIDs"; return 1; }
	G1=$(dp_gid4 vrdma1)
	G2=$(dp_gid4 vrdma2)
}

# uc_run LABEL [loss]: dp_uc.py's TAP lines, nested as diagnostics
uc_run() {
	local label=$1 rc
	shift
	timeout 120 ip netns exec "$UC" python3 "$PY" vrdma1 "$G1" vrdma2 "$G2" "$@" \
		>"$OUT" 2>&1
	rc=$?
	sed 's/^/# /' "$OUT"
	ktap_result "$([ $rc -eq 0 ] && echo 0 || echo 1)" "$label"
}

uc_setup || { ktap_fail "two vrdma devices in one namespace"; ktap_finished; }
OUT=$(mktemp)
defer rm -f "$OUT"
diag "GID index: vrdma1 $G1, vrdma2 $G2"

uc_run "UC SEND/WRITE (with immediate) data verified, READ/atomics refused"

uc_dropped() { ip netns exec "$UC" rdma statistic show link vrdma2/1 | grep -o "rx_uc_msgs_dropped [0-9]*" | awk '{print $2}'; }
d0=$(uc_dropped)
ip netns exec "$UC" tc qdisc replace dev lo root netem loss 15%
uc_run "UC on a lossy wire: whole messages lost, the others intact" loss
ip netns exec "$UC" tc qdisc del dev lo root 2>/dev/null
d1=$(uc_dropped)
diag "rx_uc_msgs_dropped: ${d0:-none} -> ${d1:-none}"
if [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ]; then
	ktap_ok "the receiver counted the dropped messages"
else
	ktap_fail "the receiver counted the dropped messages"
fi
ktap_finished
