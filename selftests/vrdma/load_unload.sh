#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Load and unload vrdma.ko 20 times; each cycle must leave no module, no
# ib_device and no rdma link type behind.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd modprobe rdma
require_vrdma

modprobe -r vrdma 2>/dev/null
before=$(ib_devs)
loops=${LOOPS:-20}
bad=0
for i in $(seq "$loops"); do
	if ! run modprobe vrdma; then
		diag "cycle $i: load failed"; bad=$((bad + 1)); continue
	fi
	[ -d /sys/module/vrdma ] || { diag "cycle $i: /sys/module/vrdma missing after load"; bad=$((bad + 1)); }
	if ! run rmmod vrdma; then
		diag "cycle $i: unload failed"; bad=$((bad + 1)); continue
	fi
	[ ! -d /sys/module/vrdma ] || { diag "cycle $i: still loaded after unload"; bad=$((bad + 1)); }
	[ "$(ib_devs)" = "$before" ] || { diag "cycle $i: ib_devices changed: '$(ib_devs)'"; bad=$((bad + 1)); }
done
[ $bad -eq 0 ] && ktap_ok "load/unload x$loops" || ktap_fail "load/unload x$loops ($bad errors)"

# The rdma netlink link type comes and goes with the module (MODULE_ALIAS_RDMA_LINK
# makes `rdma link add ... type vrdma` autoload it).
ip link add vdl0 type dummy && defer ip link del vdl0
ip link set vdl0 up
ip addr add 10.233.0.1/24 dev vdl0
if run rdma link add vrdma_al type vrdma netdev vdl0; then
	[ -d /sys/module/vrdma ] && rdma_has vrdma_al && ktap_ok "rdma link add autoloads vrdma" ||
		ktap_fail "rdma link add autoloads vrdma"
	run rdma link del vrdma_al
else
	ktap_fail "rdma link add autoloads vrdma"
fi
run modprobe -r vrdma
ktap_finished
