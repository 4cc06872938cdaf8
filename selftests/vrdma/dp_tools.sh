#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The rdma-core and perftest tools no other test runs, as a user would run
# them between two hosts: rsockets over rdma_cm (rstream, riostream, and
# rcopy with the file compared), rdma_cm multicast on UD QPs (mckey),
# ibv_uc_pingpong, perftest over UD and UC, bidirectional, on completion
# events and across all sizes. Features vrdma does not have must be refused
# with a clear errno, not hang: XRC (ibv_xsrq_pingpong, EOPNOTSUPP).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd rstream riostream rcopy mckey ibv_uc_pingpong ibv_xsrq_pingpong \
	ib_send_bw ib_write_bw ib_read_bw tc rdma
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
dp_neigh_fixed

# pp LABEL SECONDS SERVER... -- CLIENT...: a verbs pair (dp_pair)
pp() {
	local label=$1
	shift
	if dp_pair "$@"; then
		ktap_ok "$label: $(tail -n 2 "$DP_OUT" | tr -s ' \t\n' ' ' | cut -c1-120)"
	else
		ktap_fail "$label"
	fi
}
# cmp_pair LABEL SECONDS SERVER... -- CLIENT...: an rdma_cm pair (cm_pair)
cmp_pair() {
	local label=$1
	shift
	if cm_pair "$@"; then
		ktap_ok "$label: $(tail -n 1 "$DP_OUT" | tr -s ' \t' ' ' | cut -c1-120)"
	else
		ktap_fail "$label"
	fi
}

# -F: perftest's CPU frequency check fails at random under TCG
A=(-d vrdma1 -x "$G1" -F)
B=(-d vrdma2 -x "$G2" -F)
pp "ib_send_bw -c UD -a (2 B to the MTU)" 150 ib_send_bw "${A[@]}" -c UD -a -n 50 -- \
	ib_send_bw "${B[@]}" -c UD -a -n 50 "$H1_IP"
pp "ib_send_bw -c UC 4 KB" 100 ib_send_bw "${A[@]}" -c UC -s 4096 -n 200 -- \
	ib_send_bw "${B[@]}" -c UC -s 4096 -n 200 "$H1_IP"
pp "ib_write_bw -c UC 64 KB" 100 ib_write_bw "${A[@]}" -c UC -s 65536 -n 100 -- \
	ib_write_bw "${B[@]}" -c UC -s 65536 -n 100 "$H1_IP"
pp "ib_write_bw -b (both directions) 64 KB" 100 ib_write_bw "${A[@]}" -b -s 65536 -n 100 -- \
	ib_write_bw "${B[@]}" -b -s 65536 -n 100 "$H1_IP"
pp "ib_send_bw -e (completion events) 4 KB" 100 ib_send_bw "${A[@]}" -e -s 4096 -n 500 -- \
	ib_send_bw "${B[@]}" -e -s 4096 -n 500 "$H1_IP"
pp "ib_read_bw -a -o 4 (2 B to 8 MB)" 200 ib_read_bw "${A[@]}" -a -n 20 -o 4 -- \
	ib_read_bw "${B[@]}" -a -n 20 -o 4 "$H1_IP"
pp "ibv_uc_pingpong 4 KB" 60 ibv_uc_pingpong -d vrdma1 -g "$G1" -n 100 -- \
	ibv_uc_pingpong -d vrdma2 -g "$G2" -n 100 "$H1_IP"

# XRC is not offered (no XRC domains): refused at ibv_open_xrcd
if dp_pair 60 ibv_xsrq_pingpong -d vrdma1 -g "$G1" -n 10 -- \
	ibv_xsrq_pingpong -d vrdma2 -g "$G2" -n 10 "$H1_IP"; then
	ktap_fail "ibv_xsrq_pingpong: XRC ran, but the device offers none"
elif grep -q "Couldn't Open the XRC Domain 95" "$DP_OUT"; then
	ktap_ok "ibv_xsrq_pingpong: XRC domain refused with EOPNOTSUPP"
else
	ktap_fail "ibv_xsrq_pingpong: not refused with EOPNOTSUPP: $(tail -n 1 "$DP_OUT")"
fi

cmp_pair "rstream 64 KB x100 (rsockets)" 100 rstream -b "$H1_IP" -S 65536 -C 100 -- \
	rstream -s "$H1_IP" -S 65536 -C 100
cmp_pair "rstream 4 KB x100, async" 100 rstream -b "$H1_IP" -S 4096 -C 100 -T a -- \
	rstream -s "$H1_IP" -S 4096 -C 100 -T a
cmp_pair "riostream 64 KB x100 (rsockets, riowrite)" 100 riostream -b "$H1_IP" -S 65536 -C 100 -- \
	riostream -s "$H1_IP" -S 65536 -C 100
# mckey: the receiver joins first, then the sender's datagrams reach it
# (they are not resent). The sender waits 3 s after its own join before it
# sends; the receiver starts 3 s earlier, 6 s for a local join.
ip netns exec "$H1" timeout -k 2 60 mckey -m 239.1.1.1 -b "$H1_IP" -C 20 >"$DP_OUT.srv" 2>&1 &
pid=$!
sleep 3
ip netns exec "$H2" timeout -k 2 60 mckey -m 239.1.1.1 -b "$H2_IP" -s -C 20 >"$DP_OUT" 2>&1
rc=$?
wait "$pid"
src=$?
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "return status 0" "$DP_OUT.srv"; then
	ktap_ok "mckey: 20 multicast datagrams through rdma_cm's UD join"
else
	ktap_fail "mckey: sender rc=$rc receiver rc=$src: $(tail -n 1 "$DP_OUT.srv")"
fi

# rcopy: rsockets' file copy; its server serves until stopped
src=$(mktemp) dst=$(mktemp -u)
defer rm -f "$src" "$dst"
head -c 4194304 /dev/urandom >"$src"
ip netns exec "$H1" timeout -k 2 100 rcopy >"$DP_OUT.srv" 2>&1 &
pid=$!
wait_until 20 cm_listening || diag "rcopy server not listening after 20 s"
if ip netns exec "$H2" timeout -k 2 60 rcopy "$src" "$H1_IP:$dst" >"$DP_OUT" 2>&1 &&
   cmp -s "$src" "$dst"; then
	ktap_ok "rcopy 4 MB: the copy is identical"
else
	ktap_fail "rcopy 4 MB: $(tail -n 1 "$DP_OUT")"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

ktap_finished
