#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel-only RC work requests between two hosts: the test ULP
# (selftests/vrdma/kulp, built by scripts/build-kulp) loaded with
# pair_a/pair_b connects a kernel RC QP on vrdma1 and vrdma2 and runs
# REG_MR, a WRITE through the FRMR, SEND_WITH_INV, LOCAL_INV, a fenced
# WRITE after a READ and solicited events (a receive CQ armed with
# IB_CQ_SOLICITED); each check is reported in the kernel log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd rdma ip insmod
require_vrdma
KO=${VRDMA_KULP_KO:-$VRDMA_REPO/build/kulp/vrdma_kulp_test.ko}
[ -f "$KO" ] || skip_all "$KO not built (scripts/build-kulp)"

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
dmesg -C
run insmod "$KO" pair_a=vrdma1 pair_b=vrdma2 gid_a="$G1" gid_b="$G2" ||
	{ ktap_fail "insmod vrdma_kulp_test (pair)"; ktap_finished; }
kulp_tap "pair vrdma1 vrdma2 PASSED" "kernel pair checks passed"
run rmmod vrdma_kulp_test && ktap_ok "rmmod vrdma_kulp_test" || ktap_fail "rmmod vrdma_kulp_test"
ktap_finished
