#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A process killed with -9 while holding one object of every type (context,
# PD, MR with pinned pages, CQ with a channel, RC and UD QPs, SRQ, AH)
# leaves nothing behind: `rdma resource show` returns to its baseline
# (the MR and its pinned umem are released). Then the device is deleted under a
# live context (disassociate) and the module unloads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd rdma ip
require_vrdma
require_verbs_test

verbs_dev || { ktap_fail "vrdma device on a dummy netdev"; ktap_finished; }
base=$(res_all "$VDEV")
diag "baseline: $base"

hold() {
	local out=/tmp/verbs_hold.$$
	"$VERBS_TEST" --dev "$VDEV" --hold > "$out" 2>&1 &
	HOLD_PID=$!
	if ! wait_until 30 grep -q ready "$out"; then
		diag "$(cat "$out")"
		kill -9 $HOLD_PID 2>/dev/null
		return 1
	fi
	rm -f "$out"
}

for i in 1 2; do
	if ! hold; then
		ktap_fail "round $i: holder created every object"
		continue
	fi
	now=$(res_all "$VDEV")
	diag "round $i holding: $now"
	[ "$(res_count "$VDEV" qp)" -ge 2 ] && [ "$(res_count "$VDEV" srq)" -ge 1 ] &&
		[ "$(res_count "$VDEV" mr)" -ge 1 ] && [ "$(res_count "$VDEV" ctx)" -ge 1 ] &&
		ktap_ok "round $i: rdma resource shows the holder's objects" ||
		ktap_fail "round $i: rdma resource shows the holder's objects ($now)"
	kill -9 $HOLD_PID
	wait $HOLD_PID 2>/dev/null
	wait_until 10 [ "$(res_all "$VDEV")" = "$base" ] &&
		ktap_ok "round $i: kill -9 leaves nothing ($base)" ||
		ktap_fail "round $i: after kill -9: $(res_all "$VDEV"), baseline $base"
done

# Device removal under a live context: uverbs disassociates the process.
if hold; then
	if timeout 20 rdma link del "$VDEV"; then
		ktap_ok "rdma link del with a live context returns"
	else
		ktap_fail "rdma link del with a live context returns"
	fi
	kill -0 $HOLD_PID 2>/dev/null && ktap_ok "holder survives the disassociation" ||
		ktap_fail "holder survives the disassociation"
	kill -9 $HOLD_PID
	wait $HOLD_PID 2>/dev/null
	! rdma_has "$VDEV" && ktap_ok "device gone" || ktap_fail "device gone"
else
	ktap_fail "holder for the disassociation test"
fi
if timeout 20 modprobe -r vrdma; then
	ktap_ok "module unloads afterwards"
else
	ktap_fail "module unloads afterwards"
fi
ktap_finished
