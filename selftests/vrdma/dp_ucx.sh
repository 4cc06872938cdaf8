#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UCX (Debian's ucx-utils, 1.13) over vrdma, docs/ucx.md: ucx_perftest
# between two namespaces (server on vrdma1, client on vrdma2), short runs.
# UCT level: rc_verbs am_lat, am_bw (flushed by a zero-length WRITE with
# rkey 0), put_lat, put_bw, get (bcopy, zcopy), add_lat, fadd, cswap and
# ud_verbs am_lat, am_bw; UCP level over UCX_TLS=rc_v,ud_v and ud_v (the
# UD wire-up needs the GRH packet type in wc.sl): tag_lat, tag_bw,
# ucp_put_bw, ucp_get, stream_bw. The IPv4 GID (UCX_IB_GID_INDEX), and one
# run on GID index 0. Then the loopback: UCT -l (two QPs of one device)
# for rc_verbs put_lat, am_lat and ud_verbs am_lat.
# ucx_perftest checks no data; each run must finish its iterations with
# both ends exiting 0, and the UD runs must leave rx_dropped_* alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ucx_perftest rdma
require_vrdma
require_provider

DP_OUT=$(mktemp)
defer rm -f "$DP_OUT" "$DP_OUT.srv"
N=(-n 200 -w 10)
PORT=13400

listening() {	# NETNS PORT: a TCP socket listens there
	[ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ]
}

# ucx LABEL "ENV..." PERFTEST-ARGS...: server in $H1 on vrdma1, client in
# $H2 on vrdma2 (-d only matters to UCT tests), each with its IPv4 GID.
ucx() {
	local label=$1 envs=$2 rc src pid
	shift 2
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086
	ip netns exec "$H1" env UCX_IB_GID_INDEX="$G1" UCX_NET_DEVICES=vrdma1:1 $envs \
		timeout -k 2 40 ucx_perftest -p "$PORT" -d vrdma1:1 "$@" >"$DP_OUT.srv" 2>&1 &
	pid=$!
	# its out-of-band TCP port: loading UCX takes over a second on a
	# loaded TCG host, and a client too early is refused for good
	wait_until 20 listening "$H1" "$PORT"
	# shellcheck disable=SC2086
	ip netns exec "$H2" env UCX_IB_GID_INDEX="$G2" UCX_NET_DEVICES=vrdma2:1 $envs \
		timeout -k 2 30 ucx_perftest -p "$PORT" "$H1_IP" -d vrdma2:1 "$@" >"$DP_OUT" 2>&1
	rc=$?
	wait "$pid"
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		diag "client rc=$rc server rc=$src: $(grep -iE 'error|fail' "$DP_OUT" | head -n 2 | tr '\n' ' ')"
		diag "server: $(grep -iE 'error|fail' "$DP_OUT.srv" | head -n 2 | tr '\n' ' ')"
		ktap_fail "$label"
		return 1
	fi
	if ! grep -qE '^Final: +200 ' "$DP_OUT"; then
		diag "$(tail -n 2 "$DP_OUT" | tr '\n' ' ')"
		ktap_fail "$label: no final line for 200 iterations"
		return 1
	fi
	ktap_ok "$label: $(grep -E '^Final:' "$DP_OUT" | awk '{print "lat " $4 " us, " $7 " MB/s, " $9 " msg/s"}')"
}

# lb LABEL "ENV..." PERFTEST-ARGS...: UCT self-loop (-l) on vrdma1.
lb() {
	local label=$1 envs=$2
	shift 2
	# shellcheck disable=SC2086
	if ip netns exec "$H1" env UCX_IB_GID_INDEX="$G1" $envs \
		timeout -k 2 30 ucx_perftest -l -d vrdma1:1 "$@" >"$DP_OUT" 2>&1 &&
	   grep -qE '^Final: +200 ' "$DP_OUT"; then
		ktap_ok "$label: $(grep -E '^Final:' "$DP_OUT" | awk '{print "lat " $4 " us"}')"
	else
		diag "$(grep -iE 'error|fail' "$DP_OUT" | head -n 2 | tr '\n' ' ')"
		ktap_fail "$label"
	fi
}

drops() {
	local d n=0 c v
	for d in vrdma1 vrdma2; do
		for c in rx_dropped_no_qp rx_dropped_bad_qkey rx_dropped_no_recv_wqe rx_dropped_malformed; do
			v=$(dp_counter "$d" "$c")
			n=$((n + ${v:-0}))
		done
	done
	echo "$n"
}

dp_setup || { ktap_fail "two hosts with vrdma1 and vrdma2"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2; $(ucx_info -v | head -n 1)"

# ---- UCT -------------------------------------------------------------------
# am_* and UCP over rc_v flush with a zero-length WRITE, rkey 0
for t in am_lat am_bw put_lat put_bw "get -D bcopy" "get -D zcopy -s 4096" add_lat fadd cswap; do
	# shellcheck disable=SC2086
	ucx "UCT rc_verbs $t" "" -x rc_verbs -t $t "${N[@]}"
done
d0=$(drops)
for t in am_lat am_bw; do
	ucx "UCT ud_verbs $t" "" -x ud_verbs -t $t "${N[@]}"
done

# ---- UCP -------------------------------------------------------------------
for tls in rc_v,ud_v ud_v; do
	for t in tag_lat tag_bw ucp_put_bw ucp_get stream_bw; do
		ucx "UCP $t, UCX_TLS=$tls" "UCX_TLS=$tls" -t $t "${N[@]}"
	done
done
d1=$(drops)
[ "$d1" -eq "$d0" ] && ktap_ok "UD: no datagram dropped by vrdma" ||
	ktap_fail "UD: $((d1 - d0)) datagrams dropped (rx_dropped_*)"
# A synchronous send is acknowledged by the receiver, which then sends its
# reply: two small messages answering one, an exchange whose doorbells
# coalescing must not hold (each held reply waited for the QP's timer,
# 4x the latency). A hold or two at the start may happen: fewer than a
# quarter of the 210 iterations.
held() { echo $(($(dp_counter vrdma1 tx_db_deferred) + $(dp_counter vrdma2 tx_db_deferred))); }
h0=$(held)
ucx "UCP tag_sync_lat, UCX_TLS=rc_v" "UCX_TLS=rc_v" -t tag_sync_lat "${N[@]}"
h1=$(held)
[ $((h1 - h0)) -lt 50 ] && ktap_ok "UCP tag_sync_lat: $((h1 - h0)) doorbells held (an exchange)" ||
	ktap_fail "UCP tag_sync_lat: $((h1 - h0)) doorbells held, an exchange's"
# GID 0 (fe80:: from the MAC) routes too, over IPv6 link-local
G1=0 G2=0 ucx "UCP tag_lat, UCX_TLS=ud_v, GID index 0" "UCX_TLS=ud_v" -t tag_lat "${N[@]}"

# ---- loopback --------------------------------------------------------------
lb "UCT rc_verbs put_lat, loopback on vrdma1" "" -x rc_verbs -t put_lat "${N[@]}"
lb "UCT rc_verbs am_lat, loopback on vrdma1" "" -x rc_verbs -t am_lat "${N[@]}"
lb "UCT ud_verbs am_lat, loopback on vrdma1" "" -x ud_verbs -t am_lat "${N[@]}"

ktap_finished
