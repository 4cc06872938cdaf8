#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A vrdma device bound to a netdev inside a network namespace, with the
# RDMA subsystem in exclusive netns mode: it is seen and usable there and
# nowhere else (rxe cannot do this on 6.1), its UDP socket lives in that
# namespace, and it goes away with the namespace.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ip python3
require_vrdma

run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma

# Exclusive mode can only be switched while no other namespace exists;
# earlier tests' namespaces may still be dismantling.
if ! wait_until 20 rdma system set netns exclusive 2>/dev/null; then
	skip_all "cannot switch to exclusive netns mode: $(rdma system set netns exclusive 2>&1)"
fi
defer "sleep 2; rdma system set netns shared"
rdma system show | grep -q "netns exclusive" && ktap_ok "rdma system: netns exclusive" ||
	ktap_fail "rdma system: netns exclusive"

two_hosts || { ktap_fail "two hosts"; ktap_finished; }

run ip netns exec "$H1" rdma link add vrdma_ns type vrdma netdev "$H1_IF" &&
	ktap_ok "rdma link add inside a namespace" ||
	{ ktap_fail "rdma link add inside a namespace"; ktap_finished; }

in_ns() { ip netns exec "$1" rdma link show 2>/dev/null | grep -q "link vrdma_ns/"; }
in_ns "$H1" && ktap_ok "device visible in its namespace" ||
	ktap_fail "device visible in its namespace"
ip netns exec "$H1" ls /sys/class/infiniband 2>/dev/null | grep -qx vrdma_ns &&
	ktap_ok "sysfs of its namespace lists it" || ktap_fail "sysfs of its namespace lists it"
! rdma link show 2>/dev/null | grep -q "link vrdma_ns/" && [ ! -e /sys/class/infiniband/vrdma_ns ] &&
	ktap_ok "device not visible in init_net" || ktap_fail "device not visible in init_net"
! in_ns "$H2" && ktap_ok "device not visible in the peer namespace" ||
	ktap_fail "device not visible in the peer namespace"

# The namespace's own UDP socket receives: a datagram from the peer host
# is counted on the device (it is malformed, so it is also dropped).
rx() { ip netns exec "$H1" rdma statistic show link vrdma_ns/1 | grep -o "rx_packets [0-9]*" | awk '{print $2}'; }
before=$(rx)
ip netns exec "$H2" python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'x', ('$H1_IP', 4793))"
if wait_until 5 test "$(rx)" = "$((before + 1))"; then
	ktap_ok "namespace socket receives on port 4793"
else
	ktap_fail "namespace socket receives on port 4793 (rx_packets $before -> $(rx))"
fi

# Deleting the namespace destroys the veth and with it the device.
ns=$H1
ip netns del "$ns"
if wait_until 15 sh -c "! ls /sys/class/infiniband 2>/dev/null | grep -qx vrdma_ns && ! rdma dev show 2>/dev/null | grep -q vrdma_ns"; then
	ktap_ok "device gone with its namespace"
else
	ktap_fail "device gone with its namespace"
fi
ktap_finished
