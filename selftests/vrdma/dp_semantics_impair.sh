#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The data cases of vrdma_dp_test (see dp_semantics.sh) under netem on both
# ends of the wire: loss 1% and 5%, jitter, 25% reordering, duplication,
# corruption; every byte is verified. ibv_srq_pingpong -c under loss 5% and
# reordering. Every check of the program is a test point here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_dp_test

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

for cond in "loss 1%" "loss 5%" "delay 1ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	only=
	# jitter and reordering cost most under TCG: the 1 MB message runs on
	# the other impairments only (keeps the file within the 300 s limit)
	case "$cond" in
	delay*) only="--only send,send_imm,write,write_imm,read,atomic,inline,sge,order,srq" ;;
	esac
	# shellcheck disable=SC2086
	dpt "netem $cond" 150 --no-errors --big 1 $only
	case "$cond" in
	"loss 5%"|"delay 1ms reorder"*) srq_pp "netem $cond" 4096 ;;
	esac
done
dp_netem ""
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
