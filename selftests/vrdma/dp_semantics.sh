#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC verbs semantics between two hosts: userspace/tools/vrdma_dp_test (every
# opcode's data and completion, inline, SGEs, signalling, ordering, a 64 MB
# message, SRQ, remote access / RNR / length / retry / response-timeout
# errors, both sides of each, solicited events, extended CQs and QPs with
# the ibv_wr_* API) on a clean wire,
# and ibv_srq_pingpong -c. Every check of the program is a test point here.
# dp_semantics_impair.sh runs the same on an impaired wire.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_dp_test

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

# shellcheck disable=SC2086
dpt "clean" "${DP_SEMANTICS_SECS:-200}" ${DP_SEMANTICS_ARGS:-}
# the response timer (vrdma_dp_test resp_timeout) really fired
rt=$(dp_counter vrdma2 resp_timeouts)
[ "${rt:-0}" -ge 1 ] && ktap_ok "READ response timer fired (resp_timeouts $rt)" ||
	ktap_fail "resp_timeouts ${rt:-?}: the READ failed some other way"
srq_pp "clean" 64
# Remote access errors when NACKs get lost: the failed responder repeats its
# NACK (from ERR too) for each retransmission, so the requester still sees
# REM_ACCESS_ERR, not a retry error; without that, 7 of 7 would pass in 1 run
# of 8.
dp_netem "loss 20%"
dpt "netem loss 20%" 150 --only rem_errors,err_after_read
dp_netem ""
srq_pp "clean" 16384
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
