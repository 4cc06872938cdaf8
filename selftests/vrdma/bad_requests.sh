#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Requests vrdma must refuse with an error, leaving nothing behind: an
# unknown netdev, a duplicate device name, a netdev that cannot carry IP.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ip
require_vrdma

run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma
two_hosts || { ktap_fail "two hosts"; ktap_finished; }
before=$(ib_devs)

unchanged() { [ "$(ib_devs)" = "$before" ]; }

run_fail rdma link add vrdma_bad type vrdma netdev no_such_dev0 && unchanged &&
	ktap_ok "unknown netdev is refused" || ktap_fail "unknown netdev is refused"

if run ip netns exec "$H1" rdma link add vrdma_dup type vrdma netdev "$H1_IF"; then
	after_first=$(ib_devs)
	run_fail ip netns exec "$H2" rdma link add vrdma_dup type vrdma netdev "$H2_IF" &&
	[ "$(ib_devs)" = "$after_first" ] &&
	ip netns exec "$H1" rdma link show 2>/dev/null | grep -q "link vrdma_dup/1 .*netdev $H1_IF" &&
		ktap_ok "duplicate name is refused, first device intact" ||
		ktap_fail "duplicate name is refused, first device intact"
	run rdma link del vrdma_dup
	unchanged && ktap_ok "duplicate test left nothing behind" ||
		ktap_fail "duplicate test left nothing behind ($(ib_devs))"
else
	ktap_fail "duplicate name: first add failed"
fi

# A second vrdma device on a netdev that already has one.
if run ip netns exec "$H1" rdma link add vrdma_a type vrdma netdev "$H1_IF"; then
	run_fail ip netns exec "$H1" rdma link add vrdma_b type vrdma netdev "$H1_IF"
	rc=$?
	run rdma link del vrdma_a
	[ $rc -eq 0 ] && unchanged && ktap_ok "second device on the same netdev is refused" ||
		ktap_fail "second device on the same netdev is refused"
else
	ktap_fail "second device on the same netdev: first add failed"
fi

# vcan: ARPHRD_CAN, no IP at all.
if modprobe vcan 2>/dev/null && ip link add vcan_t0 type vcan 2>/dev/null; then
	defer ip link del vcan_t0
	ip link set vcan_t0 up
	run_fail rdma link add vrdma_can type vrdma netdev vcan_t0 && unchanged &&
		ktap_ok "netdev that cannot carry IP (vcan) is refused" ||
		ktap_fail "netdev that cannot carry IP (vcan) is refused"
else
	ktap_skip "netdev that cannot carry IP (vcan) is refused" "no vcan module"
fi

# The loopback device is not a wire.
run_fail rdma link add vrdma_lo type vrdma netdev lo && unchanged &&
	ktap_ok "loopback netdev is refused" || ktap_fail "loopback netdev is refused"

# After all that, a good request still works.
if run ip netns exec "$H2" rdma link add vrdma_ok type vrdma netdev "$H2_IF" && rdma_has vrdma_ok; then
	ktap_ok "a valid request still succeeds afterwards"
	run rdma link del vrdma_ok
else
	ktap_fail "a valid request still succeeds afterwards"
fi
unchanged && ktap_ok "nothing left behind" || ktap_fail "nothing left behind ($(ib_devs))"
ktap_finished
