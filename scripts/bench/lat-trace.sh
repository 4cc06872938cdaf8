#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Where a ping-pong's time goes, vrdma against rxe: a guest workload
# (scripts/vm/run) that runs ib_send_lat on the bench's single-namespace
# wire under ftrace's function tracer, filtered to a few entry points of
# each driver and of the network stack, and splits every half round trip
# (one side's doorbell to the other side's next doorbell) into
#   tx->rx   the doorbell system call until the responder has the packet,
#   rx->cqe  from there until the receive completion is written,
#   cqe->db  from that completion until the other process rings its own
#            doorbell (its CQ poll and post: user space),
# with per-half counts of the traced events and the share of halves whose
# receive ran on the CPU that rang the doorbell. The tracer itself adds a
# few us per event under TCG: compare the drivers, not absolute numbers.
#   scripts/vm/run --mem 3G scripts/bench/lat-trace.sh
# LAT_ITERS (default 2000) iterations, LAT_DRIVERS (default "vrdma rxe"),
# LAT_KOS="A.ko B.ko,param=v": vrdma once per module, in turn.
# LAT_EXTRA: more functions to trace; LAT_DUMP=N: print N round trips raw.
# LAT_GRAPH=DEPTH: instead, function_graph under the driver's post_send
# (the doorbell, with the softirq it runs at its end), to that depth, and
# per function the calls per doorbell and the median duration.
# LAT_GRAPH_VRDMA / LAT_GRAPH_RXE: another root for it than post_send
# (e.g. vrdma_udp_encap_rcv / rxe_udp_encap_recv: the receive side;
# vrdma_udp_data_ready with rx_encap=N).
# LAT_PROG: another perftest latency tool than ib_send_lat (ib_read_lat,
# ib_write_lat; only the client rings doorbells in a READ ping, so read
# its LAT_DUMP, not the halves).
# LAT_BW=SIZE (with LAT_GRAPH): ib_send_bw of SIZE-byte messages, LAT_ITERS
# of them, instead of the ping-pong: where a message's time goes at rate.
. "$VRDMA_ROOT/selftests/vrdma/lib.sh" >/dev/null
. "$VRDMA_ROOT/scripts/bench/wire-lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
iters=${LAT_ITERS:-2000}
port=18800
T=/sys/kernel/tracing
[ -d $T/instances ] || mount -t tracefs nodev $T

# the doorbell, the packet's arrival at the responder, the completion,
# and what happens around them
fn_vrdma="vrdma_post_send vrdma_udp_encap_rcv vrdma_udp_data_ready vrdma_resp_rx_data
	vrdma_req_rx_ack vrdma_cq_push vrdma_rc_timer vrdma_req_xmit_data
	vrdma_resp_send_ack"
fn_rxe="rxe_post_send rxe_udp_encap_recv rxe_resp_queue_pkt rxe_responder rxe_completer
	rxe_cq_post rxe_requester rxe_xmit_packet"
fn_net="veth_xmit net_rx_action __netif_receive_skb_core ip_rcv"


# trace_on FUNCS...: the function tracer on these (those that exist)
trace_on() {
	echo 0 >$T/tracing_on
	echo nop >$T/current_tracer
	: >$T/set_ftrace_filter
	for f in "$@"; do
		echo "$f" >>$T/set_ftrace_filter 2>/dev/null
	done
	echo 16384 >$T/buffer_size_kb
	echo function >$T/current_tracer
	: >$T/trace
	echo 1 >$T/tracing_on
}

# analyse DOORBELL RXFN CQFN: one line per half round trip, then medians
analyse() {
	awk -v db="$1" -v rx="$2" -v cq="$3" '
	/^ *#/ { next }
	{
		for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		if (i > NF) next
		cpu = substr($i, 2) + 0
		ts = $(i + 2); sub(/:$/, "", ts); ts *= 1e6
		fn = $(i + 3)
		who = $1; sub(/^.*-/, "", who)
		if (fn == db) {
			if (last != "" && who != lastwho && trx && tcq) {
				printf "%.1f %.1f %.1f %.1f %d %d %d %d %d\n", ts - last,
					trx - last, tcq - trx, ts - tcq, samecpu,
					n["net_rx_action"], n["veth_xmit"], ntimer, nack
			}
			last = ts; lastwho = who; lastcpu = cpu
			trx = 0; tcq = 0; ntimer = 0; nack = 0; delete n
			next
		}
		n[fn]++
		if (fn == rx && !trx) { trx = ts; rxcpu = cpu; samecpu = cpu == lastcpu }
		# the completion the arrival wrote, on its CPU (not the
		# other CPU finishing the previous message)
		if (fn == cq && trx && !tcq && cpu == rxcpu) tcq = ts
		if (fn == "vrdma_rc_timer") ntimer++
		if (fn == "vrdma_req_rx_ack" || fn == "rxe_completer") nack++
	}' | sort -n >/tmp/halves
	awk -v label="$4" '
	{ for (c = 1; c <= NF; c++) v[c, NR] = $c; nc = NF }
	function med(c,   i, k, a, t) {
		for (i = 1; i <= NR; i++) a[i] = v[c, i]
		for (i = 2; i <= NR; i++) {	# insertion sort: NR is small
			t = a[i]
			for (k = i - 1; k >= 1 && a[k] > t; k--) a[k + 1] = a[k]
			a[k + 1] = t
		}
		return a[int((NR + 1) / 2)]
	}
	function mean(c,   i, s) { for (i = 1; i <= NR; i++) s += v[c, i]; return s / NR }
	END {
		if (!NR) { printf "# %s: no complete half round trips traced\n", label; exit }
		printf "# %s: %d halves; median us: half %.1f = tx->rx %.1f + rx->cqe %.1f + cqe->db %.1f; ", \
			label, NR, med(1), med(2), med(3), med(4)
		printf "receive on the doorbell CPU %d%%; per half: net_rx_action %.2f veth_xmit %.2f timer %.2f acks %.2f\n", \
			100 * mean(5), mean(6), mean(7), mean(8), mean(9)
	}' /tmp/halves
}

# graph_on FUNC DEPTH / graph_report LABEL: the function_graph variant
graph_on() {
	echo 0 >$T/tracing_on
	echo nop >$T/current_tracer
	: >$T/set_ftrace_filter
	echo "$1" >$T/set_graph_function
	echo "$2" >$T/max_graph_depth
	echo 65536 >$T/buffer_size_kb
	echo function_graph >$T/current_tracer
	echo 1 >$T/options/funcgraph-tail 2>/dev/null	# names a closing brace (not in every kernel)
	echo 0 >$T/options/funcgraph-irqs
	: >$T/trace
	echo 1 >$T/tracing_on
}
graph_report() {
	# "  1)   2.345 us    |      name();", "  1)        |    name() {" and
	# "  1) + 70.8 us   |    }": a stack per CPU names each closing brace
	awk -v root="$2" '
	/\|/ {
		split($0, a, "|"); pre = a[1]; body = a[2]
		cpu = pre; sub(/\).*$/, "", cpu); gsub(/ /, "", cpu)
		d = pre; sub(/^[^)]*\)/, "", d); gsub(/[+!#*@$ ]/, "", d); sub(/us$/, "", d)
		ind = match(body, /[^ ]/) - 1
		depth = int((ind - 1) / 2)
		name = body; sub(/^ */, "", name); sub(/ \[[^]]*\]/, "", name)	# a module
		if (name ~ /^}/) {
			if ((cpu, depth) in stk) printf "%02d %s %s\n", depth, stk[cpu, depth], d
			delete stk[cpu, depth]
		} else if (name ~ /\) \{ *$/) {
			sub(/\(\) \{ *$/, "", name)
			stk[cpu, depth] = name
			if (depth == 0 && name == root) roots++
		} else if (name ~ /\(\);/) {
			sub(/\(\);.*$/, "", name)
			printf "%02d %s %s\n", depth, name, d
			if (depth == 0 && name == root) roots++
		}
	}
	END { printf "ROOTS %d\n", roots > "/tmp/graph.roots" }' >/tmp/graph.rows
	sort -k1,1 -k2,2 -k3,3n /tmp/graph.rows | awk -v label="$1" -v roots="$(awk '{ print $2 }' /tmp/graph.roots)" '
	function flush() {
		if (n) printf "# %s graph: %*s%s: %.2f calls per root, median %.1f us, mean %.1f us\n", label, 2 * (k1 + 0), "", k2, n / (roots ? roots : 1), v[int((n + 1) / 2)], sum / n
	}
	{ if ($1 != k1 || $2 != k2) { flush(); k1 = $1; k2 = $2; n = 0; sum = 0 } v[++n] = $3; sum += $3 }
	END { flush() }'
}

run_one() {	# DRIVER LABEL
	local t=$1 label=$2 idx fns db rx cq
	bind "$t" || { echo "# lat-trace: cannot bind $t"; return; }
	idx=$(gid_index "$t"_w1 "$W1_IP")
	if [ "$t" = vrdma ]; then
		fns="$fn_vrdma" db=vrdma_post_send rx=vrdma_resp_rx_data cq=vrdma_cq_push
	else
		# a request's arrival: rxe_responder also runs again for the
		# message before, on the other CPU, after that one's CQE
		fns="$fn_rxe" db=rxe_post_send rx=rxe_resp_queue_pkt cq=rxe_cq_post
	fi
	if [ -n "${LAT_GRAPH:-}" ]; then
		if [ "$t" = vrdma ]; then
			db=${LAT_GRAPH_VRDMA:-$db}
		else
			db=${LAT_GRAPH_RXE:-$db}
		fi
		graph_on "$db" "$LAT_GRAPH"
	else
		# shellcheck disable=SC2086 # lists of functions
		trace_on $fns $fn_net ${LAT_EXTRA:-}
	fi
	local prog=${LAT_PROG:-ib_send_lat} size=2
	[ -n "${LAT_BW:-}" ] && prog=ib_send_bw size=$LAT_BW
	timeout 120 "$prog" -d "$t"_w2 -F -p $port -x "$idx" -s "$size" -n "$iters" >/tmp/srv.out 2>&1 &
	sleep 1
	timeout 120 "$prog" -d "$t"_w1 -F -p $port -x "$idx" -s "$size" -n "$iters" "$W2_IP" >/tmp/cli.out 2>&1
	wait
	echo 0 >$T/tracing_on
	port=$((port + 1))
	grep -E '^ *[0-9]+ +[0-9]+' /tmp/cli.out | tail -n 1 | sed "s/^/# $label $prog: /"
	grep -c . $T/trace | sed "s/^/# $label trace lines: /"
	grep -q 'LOST' $T/trace && echo "# $label: the trace lost events (buffer)"
	if [ -n "${LAT_GRAPH:-}" ]; then
		graph_report "$label" "$db" <$T/trace
		# LAT_DUMP=N: N lines of the raw graph from the run's middle
		[ "${LAT_DUMP:-0}" -gt 0 ] && grep -v '^ *#' $T/trace |
			tail -n +"$(($(grep -c . $T/trace) / 2))" |
			head -n "$LAT_DUMP" | sed "s/^/# $label raw: /"
		echo nop >$T/current_tracer
		unbind "$t"
		return
	fi
	analyse "$db" "$rx" "$cq" "$label" <$T/trace
	# LAT_DUMP=N: the raw trace of N round trips from the run's middle
	if [ "${LAT_DUMP:-0}" -gt 0 ]; then
		grep -v '^ *#' $T/trace | grep -n "$db" | sed -n "$((iters)),$((iters + 2 * LAT_DUMP))p" |
			head -n 1 | cut -d: -f1 | { read -r from
			grep -v '^ *#' $T/trace | tail -n +"$from" | head -n $((LAT_DUMP * 60)) |
				sed "s/^/# $label raw: /"; }
	fi
	echo nop >$T/current_tracer
	unbind "$t"
}

wire_single || { echo "lat-trace: the wire failed"; exit 1; }
for d in ${LAT_DRIVERS:-vrdma rxe}; do
	if [ "$d" = vrdma ] && [ -n "${LAT_KOS:-}" ]; then
		for k in $LAT_KOS; do
			use_ko "$k"
			run_one vrdma "$(basename "${k%%,*}" .ko)${k#"${k%%,*}"}"
		done
	else
		run_one "$d" "$d"
	fi
done
exit 0
