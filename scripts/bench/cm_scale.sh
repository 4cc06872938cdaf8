#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Many connections, vrdma against rxe (docs/benchmarks.md "Many
# connections"): run in a guest by hand, e.g.
#
#   flock /tmp/vrdma-vm.lock scripts/vm/run --timeout 1500 --mem 4G \
#       --env CMS_N="1 100 1000" bash scripts/bench/cm_scale.sh
#
# For each transport (CMS_TRANSPORTS, "vrdma rxe") and each N (CMS_N,
# "1 100 1000 10000") vrdma_cm_scale connects N RC QPs through rdma_cm,
# verifies one message each way, disconnects; its "result" lines carry
# setup rate, teardown time and kernel memory per connection. Then
# ib_write_bw with CMS_QPS ("64 1000") QPs, 4 KB WRITEs. vrdma runs between two
# namespaces (lib.sh two_hosts), rxe on the single-namespace wire (6.1's
# rxe only works in init_net), both over one veth pair. Prints, never
# asserts: the selftest dp_cm_scale.sh is the check.
#
# A/B of module builds in one boot: a transport named PATH.ko[,PARAM=V...]
# is vrdma with that module (wire-lib.sh use_ko), e.g.
# CMS_TRANSPORTS="/tmp/a.ko /tmp/b.ko rxe /tmp/a.ko /tmp/b.ko". rxe may come
# more than once: within one boot the rates drift up from the first run on,
# so alternate ("rxe vrdma rxe vrdma") and read the pairs.
. "$VRDMA_ROOT/selftests/vrdma/lib.sh" >/dev/null
. "$VRDMA_ROOT/selftests/vrdma/dp_lib.inc"
. "$VRDMA_ROOT/scripts/bench/wire-lib.sh"
CMS=$VRDMA_ROOT/build/userspace/tools/vrdma_cm_scale
NS=${CMS_N:-1 100 1000 10000}
QPS=${CMS_QPS:-64 1000}
WIN=${CMS_WINDOW:-64}
transports=${CMS_TRANSPORTS:-vrdma rxe}
tmp=$(mktemp -d /tmp/cms.XXXXXX)
defer rm -rf "$tmp"

mac() { ip ${1:+-n "$1"} -o link show "$2" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2; }
listening() { $SX rdma resource show cm_id 2>/dev/null | grep -q LISTEN; }

softirqs() { awk '$1 == "TIMER:" || $1 == "HRTIMER:" { for (i = 2; i <= NF; i++) s += $i } END { print s }' /proc/softirqs; }

# scale N: one vrdma_cm_scale pair; $SX/$CX prefix the server/client
scale() {
	local n=$1 to=$(($1 / 5 + 120)) spid cpid
	# shellcheck disable=SC2086
	$SX timeout -k 2 "$to" "$CMS" --server --bind "$SIP" -n "$n" --verify \
		--timeout "$to" >"$tmp/srv" 2>&1 &
	spid=$!
	wait_until 20 listening || echo "# $L: server not listening"
	# shellcheck disable=SC2086
	$CX timeout -k 2 "$to" "$CMS" --connect "$SIP" $CSRC -n "$n" --verify \
		--window "$WIN" --hold 4 --timeout "$to" >"$tmp/cli" 2>&1 &
	cpid=$!
	# idle connections must cost nothing: timer softirqs over 3 s of the hold
	if wait_until "$to" grep -q '^# holding' "$tmp/cli"; then
		local t0 t1
		t0=$(softirqs)
		sleep 3
		t1=$(softirqs)
		echo "# $L N=$n idle 3 s with $n connections: TIMER+HRTIMER softirqs $((t1 - t0))"
		# who holds vmalloc space (a kvmalloc that fell back from kmalloc)
		awk '{ print $3 }' /proc/vmallocinfo | sed 's/+0x.*//' | sort | uniq -c |
			sort -rn | head -n 5 | sed "s/^/# $L N=$n vmalloc areas by caller: /"
	fi
	wait "$cpid"
	echo "# $L N=$n client rc=$?"
	sleep 2
	kill "$spid" 2>/dev/null
	wait "$spid"
	echo "# $L N=$n server rc=$?: $(grep '^# server' "$tmp/srv")"
	grep -E '^# (setup|verify|teardown|kernel|connection)' "$tmp/cli" | head -n 14 |
		sed "s/^# /# $L N=$n: /"
	grep '^result' "$tmp/cli" | sed "s/^/@@CMS@@ transport=$L /"
	# what went wrong, if anything: the first of the tools' other lines
	grep -vE '^(#|result)' "$tmp/srv" "$tmp/cli" | head -n 6 | sed "s/^/# $L N=$n: /"
	grep MemFree /proc/meminfo | sed 's/^/# /'
}

# wbw Q: ib_write_bw with Q QPs, 4 KB messages, ITERS each. Iterations,
# not perftest's duration mode: 4.5's -D with -q > 1 reported 0 here. The
# CQ is tx_depth x Q entries: 16 x 1000 fits rxe's 32767 and vrdma's 65536.
wbw() {
	local q=$1 spid n t
	n=$((32000 / q)) t=$((q > 64 ? 16 : 128))
	# shellcheck disable=SC2086
	$SX timeout 200 ib_write_bw -d "$SDEV" -x "$SGID" -q "$q" -s 4096 -n "$n" -t "$t" \
		--report_gbits >"$tmp/wsrv" 2>&1 &
	spid=$!
	sleep 2
	# shellcheck disable=SC2086
	$CX timeout 200 ib_write_bw -d "$CDEV" -x "$CGID" -q "$q" -s 4096 -n "$n" -t "$t" \
		--report_gbits "$SIP" >"$tmp/wcli" 2>&1
	echo "# $L ib_write_bw -q $q -n $n -t $t client rc=$?"
	wait "$spid"
	echo "# $L ib_write_bw -q $q server rc=$?"
	grep -E '^ *4096 ' "$tmp/wcli" | sed "s/^/@@WBW@@ transport=$L qps=$q /"
	grep -iE 'error|fail|unable|couldn' "$tmp/wcli" "$tmp/wsrv" | head -n 4 | sed 's/^/# /'
}

# swap_ko KO: vrdma1/vrdma2 again, on the module KO (after dp_setup)
swap_ko() {
	rdma link del vrdma1 2>/dev/null
	rdma link del vrdma2 2>/dev/null
	use_ko "$1"
	if ! ip netns exec "$H1" rdma link add vrdma1 type vrdma netdev "$H1_IF" ||
		! ip netns exec "$H2" rdma link add vrdma2 type vrdma netdev "$H2_IF" ||
		! wait_until 10 dp_gids_ready; then
		echo "# $1: no devices"
		return 1
	fi
	G1=$(dp_gid4 vrdma1)
	G2=$(dp_gid4 vrdma2)
}

for T in $transports; do
	# the label in what is printed: a module by its file name (and parameters)
	L=$T
	case $T in *.ko | *.ko,*) L=$(basename "${T%%,*}" .ko)${T#"${T%%,*}"} ;; esac
	case $T in
	vrdma | *.ko | *.ko,*)
		if [ -z "${vrdma_up:-}" ]; then
			dp_setup || { echo "# vrdma setup failed"; continue; }
			vrdma_up=1
		fi
		case $T in vrdma) ;; *) swap_ko "$T" || continue ;; esac
		ip -n "$H1" neigh replace "$H2_IP" lladdr "$(mac "$H2" "$H2_IF")" dev "$H1_IF" nud permanent
		ip -n "$H2" neigh replace "$H1_IP" lladdr "$(mac "$H1" "$H1_IF")" dev "$H2_IF" nud permanent
		SX="ip netns exec $H1" CX="ip netns exec $H2" SIP=$H1_IP CSRC=
		SDEV=vrdma1 CDEV=vrdma2 SGID=$G1 CGID=$G2
		;;
	rxe)
		# once: a transport list may name rxe again (alternating A/B)
		if [ -z "${rxe_up:-}" ]; then
			modprobe rdma_rxe || { echo "# no rdma_rxe"; continue; }
			wire_single || { echo "# wire_single failed"; continue; }
			rdma link add rxe_w1 type rxe netdev "$W1_IF" && defer rdma link del rxe_w1
			rdma link add rxe_w2 type rxe netdev "$W2_IF" && defer rdma link del rxe_w2
			rxe_up=1
		fi
		SX='' CX='' SIP=$W2_IP CSRC="--src $W1_IP"
		SDEV=rxe_w2 CDEV=rxe_w1 SGID=1 CGID=1
		;;
	esac
	for n in $NS; do scale "$n"; done
	for q in $QPS; do wbw "$q"; done
done
