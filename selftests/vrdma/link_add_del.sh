#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `rdma link add NAME type vrdma netdev DEV` on each of two hosts (network
# namespaces joined by a veth): the device shows in `rdma link show` and
# `ibv_devices`, reports its netdev, and goes away with `rdma link del`.
# Host 2's device is named "eni2": the provider matches vrdma's driver id,
# not the name, so a device named anything opens (ibv_devinfo).
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ibv_devices ip
require_vrdma

run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma
before=$(ib_devs)
two_hosts || { ktap_fail "two hosts"; ktap_finished; }

provider=0
ls /etc/libibverbs.d/vrdma.driver >/dev/null 2>&1 && provider=1

for h in 1 2; do
	ns_var=H$h; if_var=H${h}_IF
	ns=${!ns_var}; dev=${!if_var}; name=vrdma$h
	[ $h = 2 ] && name=eni2
	if run ip netns exec "$ns" rdma link add "$name" type vrdma netdev "$dev"; then
		ktap_ok "host$h: rdma link add $name netdev $dev"
	else
		ktap_fail "host$h: rdma link add $name netdev $dev"
		continue
	fi
	# The kernel names the netdev only to callers in the netdev's namespace.
	line=$(ip netns exec "$ns" rdma link show 2>/dev/null | grep "link $name/")
	diag "host$h: $line"
	case "$line" in
	*"netdev $dev"*) ktap_ok "host$h: rdma link show lists $name on $dev" ;;
	*) ktap_fail "host$h: rdma link show lists $name on $dev" ;;
	esac
	case "$line" in
	*"state ACTIVE"*) ktap_ok "host$h: $name port is ACTIVE" ;;
	*) ktap_fail "host$h: $name port is ACTIVE" ;;
	esac
	if [ $provider = 1 ]; then
		ip netns exec "$ns" ibv_devices 2>&1 | sed 's/^/# /'
		ibv_has "$name" && ktap_ok "host$h: ibv_devices lists $name" ||
			ktap_fail "host$h: ibv_devices lists $name"
		out=$(ip netns exec "$ns" ibv_devinfo -d "$name" 2>&1)
		case "$out" in
		*"transport:"*"PORT_ACTIVE"*) ktap_ok "host$h: ibv_devinfo opens $name" ;;
		*) diag "$out"; ktap_fail "host$h: ibv_devinfo opens $name" ;;
		esac
	else
		ktap_skip "host$h: ibv_devices lists $name" "no vrdma provider (build/provider)"
		ktap_skip "host$h: ibv_devinfo opens $name" "no vrdma provider (build/provider)"
	fi
done

for h in 1 2; do
	name=vrdma$h
	[ $h = 2 ] && name=eni2
	rdma_has "$name" || continue
	if run rdma link del "$name" && ! rdma_has "$name" && ! ibv_has "$name" &&
	   [ ! -e "/sys/class/infiniband/$name" ]; then
		ktap_ok "host$h: rdma link del $name removes it"
	else
		ktap_fail "host$h: rdma link del $name removes it"
	fi
done
[ "$(ib_devs)" = "$before" ] && ktap_ok "no ib_device left behind" ||
	ktap_fail "no ib_device left behind (now: $(ib_devs))"
ktap_finished
