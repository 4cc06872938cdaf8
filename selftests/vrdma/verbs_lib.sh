# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Helpers shared by the verbs_*.sh selftests (sourced after lib.sh).

VRDMA_REPO=$(cd "$VRDMA_SELFTESTS/../.." && pwd)
VERBS_TEST=${VERBS_TEST:-$VRDMA_REPO/build/userspace/tools/vrdma_verbs_test}

require_verbs_test() {
	[ -x "$VERBS_TEST" ] || skip_all "$VERBS_TEST not built (make userspace)"
	[ -f /etc/libibverbs.d/vrdma.driver ] ||
		skip_all "no vrdma provider installed (make provider)"
}

# verbs_dev [MODPARAMS...]: (re)loads vrdma with MODPARAMS, binds a device
# to a fresh dummy netdev; sets VDEV (ib device) and VNET (netdev).
verbs_dev() {
	modprobe -r vrdma >/dev/null 2>&1
	run modprobe vrdma "$@" || return 1
	defer modprobe -r vrdma
	VNET=vd$(mktemp -u XXXXXX | tr 'A-Z' 'a-z')
	VDEV=vrdma_$VNET
	run ip link add "$VNET" type dummy || return 1
	defer ip link del "$VNET"
	ip link set "$VNET" up
	ip addr add 10.77.0.1/24 dev "$VNET"
	run rdma link add "$VDEV" type vrdma netdev "$VNET" || return 1
	defer rdma link del "$VDEV"
}

# res_count DEV TYPE: the TYPE count of DEV in `rdma resource show`.
res_count() {
	rdma resource show 2>/dev/null |
		awk -v d="$1:" -v t="$2" '$2 == d { for (i = 3; i < NF; i++) if ($i == t) print $(i + 1) }'
}

# res_all DEV: "pd N cq N qp N mr N ctx N srq N" of DEV.
res_all() {
	local t out=
	for t in pd cq qp mr ctx srq; do
		out="$out$t $(res_count "$1" $t) "
	done
	echo "${out% }"
}

# tap_import PREFIX: turns the TAP lines of a C++ test into our checks.
tap_import() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ktap_ok "$1: ${line#ok * - }" ;;
		"not ok "*) ktap_fail "$1: ${line#not ok * - }" ;;
		*) diag "$line" ;;
		esac
	done
}
