#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel ULP use: selftests/vrdma/kulp/vrdma_kulp_test.ko (an ib_client,
# built on the host into build/kulp by scripts/build-kulp) runs PD, CQ, RC
# QP, fast-reg MR + ib_map_mr_sg, post_recv and ib_drain_rq on a vrdma
# device and reports each check in the kernel log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd rdma ip insmod
require_vrdma
KO=${VRDMA_KULP_KO:-$VRDMA_REPO/build/kulp/vrdma_kulp_test.ko}
[ -f "$KO" ] || skip_all "$KO not built (scripts/build-kulp)"

verbs_dev || { ktap_fail "vrdma device on a dummy netdev"; ktap_finished; }
dmesg -C
run insmod "$KO" || { ktap_fail "insmod vrdma_kulp_test"; ktap_finished; }
defer rmmod vrdma_kulp_test
wait_until 20 sh -c 'dmesg | grep -q "vrdma_kulp: .* \(PASSED\|FAILED\)"'
kulp_tap "$VDEV PASSED" "kernel ULP checks passed on $VDEV"
run rmmod vrdma_kulp_test && ktap_ok "rmmod vrdma_kulp_test" || ktap_fail "rmmod vrdma_kulp_test"
ktap_finished
