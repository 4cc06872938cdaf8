#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A vrdma device dies with its netdev: deleting the veth, or the namespace
# that holds it, removes the ib_device (NETDEV_UNREGISTER).
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ip
require_vrdma

run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma
before=$(ib_devs)
gone() { ! rdma_has "$1" && [ ! -e "/sys/class/infiniband/$1" ]; }

two_hosts || { ktap_fail "two hosts"; ktap_finished; }
if run ip netns exec "$H1" rdma link add vrdma_rm1 type vrdma netdev "$H1_IF" &&
   run ip netns exec "$H2" rdma link add vrdma_rm2 type vrdma netdev "$H2_IF"; then
	# Deleting one end of a veth deletes both ends.
	run ip -n "$H1" link del "$H1_IF"
	wait_until 10 gone vrdma_rm1 && ktap_ok "deleting the netdev removes its device" ||
		ktap_fail "deleting the netdev removes its device"
	wait_until 10 gone vrdma_rm2 && ktap_ok "deleting the veth peer removes the peer's device" ||
		ktap_fail "deleting the veth peer removes the peer's device"
else
	ktap_fail "rdma link add on both hosts"
fi

# Destroying the namespace unregisters its devices too.
setup_ns H3
ip -n "$H3" link add vd3 type dummy
ip -n "$H3" addr add 10.234.0.1/24 dev vd3
ip -n "$H3" link set vd3 up
if run ip netns exec "$H3" rdma link add vrdma_ns type vrdma netdev vd3; then
	run ip netns del "$H3"
	wait_until 10 gone vrdma_ns && ktap_ok "deleting the namespace removes its device" ||
		ktap_fail "deleting the namespace removes its device"
else
	ktap_fail "rdma link add on a dummy netdev"
fi

# Down/up does not remove the device (only unregister does).
ip link add vd4 type dummy && defer ip link del vd4
ip addr add 10.235.0.1/24 dev vd4
ip link set vd4 up
if run rdma link add vrdma_du type vrdma netdev vd4; then
	ip link set vd4 down
	ip link set vd4 up
	rdma_has vrdma_du && ktap_ok "netdev down/up keeps the device" ||
		ktap_fail "netdev down/up keeps the device"
	run rdma link del vrdma_du
else
	ktap_fail "rdma link add on a dummy netdev"
fi
wait_until 5 test "$(ib_devs)" = "$before" && ktap_ok "nothing left behind" ||
	ktap_fail "nothing left behind ($(ib_devs))"
ktap_finished
