#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Many connections through rdma_cm: vrdma_cm_scale opens CM_SCALE_N (200)
# RC connections from $H2 to $H1, 64 in flight at once on one event
# channel, each with its own QP. While they are up both devices must list
# that many RC QPs; one message each way on every connection is verified;
# after the disconnects `rdma resource show` must be back to no RC QP and
# no cm_id on either host. Prints setup rate, teardown time and kernel
# memory per connection as diagnostics (docs/benchmarks.md has figures).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd rdma
require_vrdma
require_provider
CMS=${CM_SCALE:-$VRDMA_SELFTESTS/../../build/userspace/tools/vrdma_cm_scale}
[ -x "$CMS" ] || skip_all "$CMS not built (make userspace)"
N=${CM_SCALE_N:-200}

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
# ARP is not what is tested: 64 resolutions at once must not wait on it
mac() { ip -n "$1" -o link show "$2" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2; }
ip -n "$H1" neigh replace "$H2_IP" lladdr "$(mac "$H2" "$H2_IF")" dev "$H1_IF" nud permanent
ip -n "$H2" neigh replace "$H1_IP" lladdr "$(mac "$H1" "$H1_IF")" dev "$H2_IF" nud permanent

# rc_qps DEV, cm_ids DEV: the device's RC QPs and rdma_cm ids
rc_qps() { rdma resource show qp link "$1/1" 2>/dev/null | grep -c 'type RC'; }
cm_ids() { rdma resource show cm_id link "$1/1" 2>/dev/null | grep -c .; }
listening() { rdma resource show cm_id 2>/dev/null | grep -q LISTEN; }
holding() { grep -q '^# holding' "$DP_OUT"; }
all_gone() {
	[ "$(rc_qps vrdma1)" -eq 0 ] && [ "$(rc_qps vrdma2)" -eq 0 ] &&
		[ "$(cm_ids vrdma1)" -eq 0 ] && [ "$(cm_ids vrdma2)" -eq 0 ] &&
		! rdma resource show cm_id 2>/dev/null | grep -q .
}

ip netns exec "$H1" timeout -k 2 150 "$CMS" --server --bind "$H1_IP" -n "$N" --verify \
	--timeout 140 >"$DP_OUT.srv" 2>&1 &
spid=$!
defer "kill $spid 2>/dev/null"
wait_until 20 listening || diag "server not listening after 20 s"
ip netns exec "$H2" timeout -k 2 150 "$CMS" --connect "$H1_IP" -n "$N" --verify \
	--window 64 --hold 3 --timeout 120 >"$DP_OUT" 2>&1 &
cpid=$!
if wait_until 130 holding; then
	q1=$(rc_qps vrdma1)
	q2=$(rc_qps vrdma2)
	[ "$q1" -eq "$N" ] && [ "$q2" -eq "$N" ] &&
		ktap_ok "$N RC QPs on each device while connected" ||
		ktap_fail "RC QPs while connected: vrdma1 $q1, vrdma2 $q2 (want $N)"
else
	ktap_fail "client never reached its hold (all connected)"
fi
wait "$cpid"
crc=$?
# the client is gone: a server still waiting for disconnects would wait in vain
wait_until 30 eval '! kill -0 $spid 2>/dev/null' || kill "$spid" 2>/dev/null
wait "$spid"
src=$?
sed 's/^/# client: /' "$DP_OUT"
sed 's/^/# server: /' "$DP_OUT.srv"
res=$(grep '^result ' "$DP_OUT")
if [ $crc -eq 0 ]; then
	ktap_ok "client: $N connected, verified, disconnected ($(echo "$res" |
		grep -o 'conn_per_s=[0-9.]*'))"
else
	ktap_fail "client rc=$crc"
fi
[ $src -eq 0 ] && ktap_ok "server: $N accepted, every message intact, all disconnected" ||
	ktap_fail "server rc=$src"
if wait_until 15 all_gone; then
	ktap_ok "no RC QP and no cm_id left on either host"
else
	ktap_fail "left behind: RC QPs $(rc_qps vrdma1)/$(rc_qps vrdma2), cm_ids: $(rdma resource show cm_id | tr '\n' ' ')"
fi
rm -f "$DP_OUT" "$DP_OUT.srv"
diag "total $SECONDS s"
ktap_finished
