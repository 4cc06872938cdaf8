#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Limit exhaustion and recovery: vrdma loaded with small object limits
# (module parameters); ibv_devinfo advertises them, creating one more of
# each type fails with ENOMEM, freeing one lets the next succeed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd rdma ibv_devinfo ip
require_vrdma
require_verbs_test

verbs_dev max_qp=8 max_cq=8 max_mr=8 max_pd=8 max_srq=4 max_ah=8 \
	max_cqe=256 max_qp_wr=64 ||
	{ ktap_fail "vrdma with small limits"; ktap_finished; }
base=$(res_all "$VDEV")

info=$(timeout "$CMD_TIMEOUT" ibv_devinfo -v -d "$VDEV" 2>&1)
attr() { printf '%s\n' "$info" | awk -v k="$1:" '$1 == k { print $2; exit }'; }
ok=1
for kv in max_qp=8 max_cq=8 max_mr=8 max_pd=8 max_srq=4 max_ah=8 max_cqe=256 max_qp_wr=64; do
	[ "$(attr "${kv%=*}")" = "${kv#*=}" ] || { diag "${kv%=*} is $(attr "${kv%=*}")"; ok=0; }
done
[ $ok = 1 ] && ktap_ok "ibv_devinfo advertises the configured limits" ||
	ktap_fail "ibv_devinfo advertises the configured limits"

timeout -k 5 120 "$VERBS_TEST" --dev "$VDEV" --exhaust > /tmp/verbs_limits.$$ 2>&1
rc=$?
tap_import verbs_test < /tmp/verbs_limits.$$
rm -f /tmp/verbs_limits.$$
[ $rc -eq 0 ] && ktap_ok "vrdma_verbs_test --exhaust exit 0" ||
	ktap_fail "vrdma_verbs_test --exhaust exit $rc"
wait_until 10 [ "$(res_all "$VDEV")" = "$base" ] &&
	ktap_ok "rdma resource back to baseline ($base)" ||
	ktap_fail "rdma resource: $(res_all "$VDEV"), baseline $base"
ktap_finished
