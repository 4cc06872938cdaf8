# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Sourced by the bench's guest workloads on the single-namespace wire
# (prof-guest.sh, lat-trace.sh), after selftests/vrdma/lib.sh.

# bind DRIVER / unbind DRIVER: DRIVER_w1 and DRIVER_w2 on the wire's ends
bind() {
	case "$1" in
	rxe) modprobe crc32_generic; modprobe crc32-pclmul; modprobe rdma_rxe ;;
	vrdma) modprobe vrdma ;;
	esac 2>/dev/null
	rdma link add "$1_w1" type "$1" netdev "$W1_IF" &&
		rdma link add "$1_w2" type "$1" netdev "$W2_IF" || return 1
	wait_until 10 ibv_has "$1_w1" && wait_until 10 ibv_has "$1_w2"
}
unbind() { rdma link del "$1_w1"; rdma link del "$1_w2"; }

# use_ko PATH[,PARAM=VALUE...]: this vrdma.ko, with these module
# parameters, in place of the loaded one
use_ko() {
	local ko=${1%%,*} params=
	[ "$ko" = "$1" ] || params=${1#*,}
	modprobe vrdma 2>/dev/null	# its dependencies
	rmmod vrdma 2>/dev/null
	# shellcheck disable=SC2086 # a list of parameters
	insmod "$ko" ${params//,/ } || echo "# insmod $1 failed"
}
