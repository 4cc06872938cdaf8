#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC verbs semantics between two hosts: userspace/tools/vrdma_dp_test (every
# opcode's data and completion, inline, SGEs, signalling, ordering, a 64 MB
# message, SRQ, remote access / RNR / length / retry errors) on a clean wire,
# and ibv_srq_pingpong -c. Every check of the program is a test point here.
# dp_semantics_impair.sh runs the same on an impaired wire.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_dp_test

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

# shellcheck disable=SC2086
dpt "clean" "${DP_SEMANTICS_SECS:-200}" ${DP_SEMANTICS_ARGS:-}
srq_pp "clean" 64
srq_pp "clean" 16384
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
