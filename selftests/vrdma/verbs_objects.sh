#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The verbs control path through libibverbs + libvrdma: ibv_devinfo -v
# attributes, then vrdma_verbs_test (every object type created/destroyed in
# varied orders, invalid parameters and their errnos, the QP state table,
# WQEs queued in the mmapped rings and flushed by the error state, CQ
# resize, SRQ limit), and nothing left in `rdma resource show` afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd rdma ibv_devinfo ip
require_vrdma
require_verbs_test

verbs_dev || { ktap_fail "vrdma device on a dummy netdev"; ktap_finished; }
base=$(res_all "$VDEV")
diag "baseline: $base"

info=$(timeout "$CMD_TIMEOUT" ibv_devinfo -v -d "$VDEV" 2>&1)
printf '%s\n' "$info" | sed -n '1,12p' | sed 's/^/# /'
attr() { printf '%s\n' "$info" | awk -v k="$1:" '$1 == k { print $2; exit }'; }
[ "$(attr max_qp)" = "$(cat /sys/module/vrdma/parameters/max_qp)" ] &&
	ktap_ok "ibv_devinfo: max_qp matches the module limit" ||
	ktap_fail "ibv_devinfo: max_qp $(attr max_qp)"
[ "$(attr max_sge)" = 6 ] && [ "$(attr max_srq_sge)" = 6 ] &&
	ktap_ok "ibv_devinfo: max_sge 6" || ktap_fail "ibv_devinfo: max_sge $(attr max_sge)"
[ "$(attr max_cqe)" = "$(cat /sys/module/vrdma/parameters/max_cqe)" ] &&
	ktap_ok "ibv_devinfo: max_cqe matches the module limit" ||
	ktap_fail "ibv_devinfo: max_cqe $(attr max_cqe)"
[ "$(attr state)" = PORT_ACTIVE ] && ktap_ok "ibv_devinfo: port ACTIVE" ||
	ktap_fail "ibv_devinfo: port state $(attr state)"
# dummy MTU 1500 minus the encapsulation leaves room for IB MTU 1024
[ "$(attr active_mtu)" = 1024 ] && ktap_ok "ibv_devinfo: active_mtu 1024 on a 1500 netdev" ||
	ktap_fail "ibv_devinfo: active_mtu $(attr active_mtu)"
printf '%s\n' "$info" | grep -q '::ffff:10.77.0.1' &&
	ktap_ok "ibv_devinfo: IPv4 address is a RoCE v2 GID" ||
	ktap_fail "ibv_devinfo: no GID for 10.77.0.1"

timeout -k 5 120 "$VERBS_TEST" --dev "$VDEV" > /tmp/verbs_objects.$$ 2>&1
rc=$?
tap_import verbs_test < /tmp/verbs_objects.$$
rm -f /tmp/verbs_objects.$$
[ $rc -eq 0 ] && ktap_ok "vrdma_verbs_test exit 0" || ktap_fail "vrdma_verbs_test exit $rc"

wait_until 10 [ "$(res_all "$VDEV")" = "$base" ] &&
	ktap_ok "rdma resource back to baseline ($base)" ||
	ktap_fail "rdma resource: $(res_all "$VDEV"), baseline $base"
ktap_finished
