#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Guest half of scripts/test-dkms: the module that `dkms install` put under
# /lib/modules/<ver>/updates/dkms is what `modprobe vrdma` loads, and it
# binds a device. Not a run_all.sh test (needs the host half first).
. "$(dirname "$0")/../lib.sh"
require_root
kver=$(uname -r)
path=$(modinfo -n vrdma 2>/dev/null)
diag "modprobe resolves vrdma to: ${path:-nothing}"
case "$path" in
/lib/modules/$kver/updates/dkms/vrdma.ko*) ktap_ok "modprobe finds the DKMS-installed module" ;;
*) ktap_fail "modprobe finds the DKMS-installed module"; ktap_finished ;;
esac
[ "$(modinfo -F vermagic vrdma | cut -d' ' -f1)" = "$kver" ] && ktap_ok "vermagic matches $kver" ||
	ktap_fail "vermagic matches $kver"
run modprobe vrdma && [ -d /sys/module/vrdma ] && ktap_ok "modprobe vrdma loads it" ||
	{ ktap_fail "modprobe vrdma loads it"; ktap_finished; }
ip link add vdk0 type dummy && defer ip link del vdk0
ip addr add 10.236.0.1/24 dev vdk0
ip link set vdk0 up
if run rdma link add vrdma_dkms type vrdma netdev vdk0 && rdma_has vrdma_dkms; then
	ktap_ok "DKMS module binds a device"
	run rdma link del vrdma_dkms
else
	ktap_fail "DKMS module binds a device"
fi
run modprobe -r vrdma && ktap_ok "modprobe -r vrdma" || ktap_fail "modprobe -r vrdma"
ktap_finished
