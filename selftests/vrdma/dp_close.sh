#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A closed RC QP still acknowledges its former peer's retransmission of
# what it had received (drivers/vrdma/vrdma_rc_grave.c), as TCP's
# TIME_WAIT does: a responder that exits right after its last ACK was lost
# must not leave the requester failing a delivered message with RETRY_EXC
# (ibv_rc_pingpong under 1% loss did).
#
# The server's egress drops every ACK a live QP sends (a u32 filter on the
# vrdma header: opcode ACK, a receive window other than the single packet
# a closed QP advertises), so the client's last SEND is acknowledged only
# once the server's QP is gone: the client must finish without an error,
# and the server's closed_acks counter shows who answered. Then the same
# from a responder QP moved to ERR, as rdma_disconnect() does (dp_close.py,
# pyverbs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

port=$(cat /sys/module/vrdma/parameters/udp_port)
# offsets from the IPv4 header (20 bytes, no options): UDP dport at 22,
# the vrdma opcode at 28 + 1, its receive window at 28 + 30
u32_ack="match ip protocol 17 0xff match u16 $port 0xffff at 22 match u8 0x10 0xff at 29"
# shellcheck disable=SC2086
if ! { ip netns exec "$H1" tc qdisc add dev "$H1_IF" root handle 1: prio &&
       ip netns exec "$H1" tc filter add dev "$H1_IF" parent 1: prio 1 protocol ip \
		u32 $u32_ack match u16 1 0xffff at 58 action ok &&
       ip netns exec "$H1" tc filter add dev "$H1_IF" parent 1: prio 2 protocol ip \
		u32 $u32_ack action drop; }; then
	skip_all "no u32 filter (cls_u32, act_gact)"
fi
defer ip netns exec "$H1" tc qdisc del dev "$H1_IF" root

before=$(dp_counter vrdma1 closed_acks)
if dp_pair 60 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 1 -s 4096 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$G2" -n 1 -s 4096 -c "$H1_IP"; then
	ktap_ok "the last SEND completes though only the closed QP acknowledged it"
else
	ktap_fail "the last SEND completes though only the closed QP acknowledged it"
fi
after=$(dp_counter vrdma1 closed_acks)
if [ "${after:-0}" -gt "${before:-0}" ]; then
	ktap_ok "counted in closed_acks (+$((after - before)))"
else
	ktap_fail "counted in closed_acks"
fi

# The same from a QP in ERR (dp_close.py): vrdma2's SEND, received by
# vrdma1, acknowledged only once vrdma1's QP entered ERR.
if python3 -c "import pyverbs" 2>/dev/null; then
	before=$after
	timeout 60 python3 "$(dirname "$0")/dp_close.py" vrdma2 "$G2" vrdma1 "$G1" \
		>"$DP_OUT" 2>&1
	rc=$?
	sed 's/^/# /' "$DP_OUT"
	ktap_result "$([ $rc -eq 0 ] && echo 0 || echo 1)" \
		"a SEND acknowledged by its responder in ERR completes (dp_close.py)"
	after=$(dp_counter vrdma1 closed_acks)
	if [ "${after:-0}" -gt "${before:-0}" ]; then
		ktap_ok "counted in closed_acks (+$((after - before)))"
	else
		ktap_fail "counted in closed_acks, ERR"
	fi
else
	ktap_skip "a SEND acknowledged by its responder in ERR: no python3-pyverbs"
fi
ktap_finished
