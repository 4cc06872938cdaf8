#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Unloading vrdma while devices exist succeeds and removes them all.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ip
require_vrdma

modprobe -r vrdma 2>/dev/null
before=$(ib_devs)
two_hosts || { ktap_fail "two hosts"; ktap_finished; }
run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma
ok=1
run ip netns exec "$H1" rdma link add vrdma_u1 type vrdma netdev "$H1_IF" || ok=0
run ip netns exec "$H2" rdma link add vrdma_u2 type vrdma netdev "$H2_IF" || ok=0
[ $ok = 1 ] && rdma_has vrdma_u1 && rdma_has vrdma_u2 && ktap_ok "two devices up" ||
	ktap_fail "two devices up"

run rmmod vrdma && ktap_ok "rmmod with devices present succeeds" ||
	ktap_fail "rmmod with devices present succeeds"
[ ! -d /sys/module/vrdma ] && ktap_ok "module is gone" || ktap_fail "module is gone"
! rdma_has vrdma_u1 && ! rdma_has vrdma_u2 && [ "$(ib_devs)" = "$before" ] &&
	ktap_ok "devices are gone" || ktap_fail "devices are gone ($(ib_devs))"

# And it comes back cleanly on the same netdevs.
if run modprobe vrdma && run ip netns exec "$H1" rdma link add vrdma_u1 type vrdma netdev "$H1_IF"; then
	ktap_ok "reload and re-add on the same netdev"
	run rdma link del vrdma_u1
else
	ktap_fail "reload and re-add on the same netdev"
fi
ktap_finished
