#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The comparison baseline works: rxe on both ends of the single-namespace
# wire (lib.sh wire_single) passes ibv_rc_pingpong, and the traffic really
# crosses the veth. Guards the harness and lib.sh, independent of vrdma.
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
ktap_finished
