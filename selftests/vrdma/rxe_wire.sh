#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The comparison baseline works: rxe on both ends of the single-namespace
# wire (lib.sh wire_single) passes ibv_rc_pingpong, rdma_cm connects
# (rping -V; qperf -cm1, whose REQ carries private data, when installed:
# both were rejected before wire_single had its main-table routes), and
# the traffic really crosses the veth. Guards the harness and lib.sh,
# independent of vrdma.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ibv_rc_pingpong ip
modinfo rdma_rxe >/dev/null 2>&1 || skip_all "no rdma_rxe module"

wire_single || { ktap_fail "single-namespace wire"; ktap_finished; }
run rdma link add rxe_w1 type rxe netdev "$W1_IF" && defer rdma link del rxe_w1 &&
run rdma link add rxe_w2 type rxe netdev "$W2_IF" && defer rdma link del rxe_w2 ||
	{ ktap_fail "rdma link add rxe on both ends"; ktap_finished; }
ktap_ok "rdma link add rxe on both ends"
ibv_has rxe_w1 && ibv_has rxe_w2 && ktap_ok "ibv_devices lists both" || ktap_fail "ibv_devices lists both"

gid=1	# IPv4-mapped GID of the port address
tx0=$(tx_packets "$W1_IF")
timeout 30 ibv_rc_pingpong -d rxe_w2 -g $gid -n 200 >/tmp/pp_srv.$$ 2>&1 &
srv=$!
sleep 1
timeout 30 ibv_rc_pingpong -d rxe_w1 -g $gid -n 200 "$W2_IP" >/tmp/pp_cli.$$ 2>&1
crc=$?
wait $srv
src=$?
sed 's/^/# client: /' /tmp/pp_cli.$$; sed 's/^/# server: /' /tmp/pp_srv.$$
rm -f /tmp/pp_cli.$$ /tmp/pp_srv.$$
[ $crc -eq 0 ] && [ $src -eq 0 ] && ktap_ok "ibv_rc_pingpong over rxe" || ktap_fail "ibv_rc_pingpong over rxe"
tx1=$(tx_packets "$W1_IF")
diag "$W1_IF tx packets: $tx0 -> $tx1"
[ $((tx1 - tx0)) -ge 200 ] && ktap_ok "traffic crossed the veth" || ktap_fail "traffic crossed the veth"

# rdma_cm: rping -V, then qperf -cm1 rc_lat, each must cross the veth
cm_cross() {	# LABEL RC TX_BEFORE
	local d=$(($(tx_packets "$W1_IF") - $3))
	if [ "$2" -ne 0 ]; then
		ktap_fail "$1: rc=$2"
	elif [ "$d" -lt 10 ]; then
		ktap_fail "$1: only $d packets crossed the veth"
	else
		ktap_ok "$1 ($d packets on $W1_IF)"
	fi
}
tx0=$(tx_packets "$W1_IF")
timeout 30 rping -s -a "$W2_IP" -C 10 -V >/dev/null 2>&1 &
srv=$!
sleep 1
timeout 20 rping -c -a "$W2_IP" -C 10 -V >/tmp/rp_cli.$$ 2>&1
crc=$?
wait $srv
src=$?
[ $crc -eq 0 ] || sed 's/^/# rping client: /' /tmp/rp_cli.$$
rm -f /tmp/rp_cli.$$
cm_cross "rdma_cm over rxe: rping -V" $((crc | src)) "$tx0"
if command -v qperf >/dev/null; then
	qperf >/dev/null 2>&1 &
	qpid=$!
	defer kill "$qpid"
	sleep 1
	tx0=$(tx_packets "$W1_IF")
	out=$(timeout -k 2 20 qperf -cm1 -t 1 "$W2_IP" rc_lat 2>&1)
	rc=$?
	diag "qperf -cm1 rc_lat: $(echo "$out" | tr -s ' ' | tr '\n' ' ')"
	cm_cross "rdma_cm over rxe: qperf -cm1 rc_lat" $rc "$tx0"
else
	ktap_skip "rdma_cm over rxe: qperf -cm1" "qperf is not installed"
fi
ktap_finished
