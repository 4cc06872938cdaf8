#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The guest half of scripts/bench/run: runs inside one QEMU guest (started by
# scripts/vm/run) and measures vrdma, rxe, siw and kernel TCP on the same
# wire, one netem condition after another. Every tool runs under `timeout`;
# a run that hangs is recorded with its timeout, never waited for.
#
# Results go to stdout as lines "@@R@@ <csv>" (see the header line below);
# the host collects them from the guest's output port.
#
# Environment (from scripts/bench/run):
#   BENCH_MODE        quick | full
#   BENCH_SIW_KO      path of the out-of-tree siw.ko (host path, seen over 9p)
#   BENCH_CONDITIONS  space-separated conditions: loss0 loss0.1 loss1 loss5 delay100us
#   BENCH_TRANSPORTS  default "rxe siw vrdma tcp"
#   BENCH_IMPAIRED    all (default): every figure in every condition; core:
#                     under loss/delay only ib_write_bw 64 KB, 8 QPs, 64 B
#                     send rate, ib_send_lat (and all of TCP's)
#   BENCH_ROUNDS      full mode: rounds of the headline figures at the end
#                     (default 3; see rounds() below)
. "$VRDMA_ROOT/selftests/vrdma/lib.sh" >/dev/null
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

mode=${BENCH_MODE:-quick}
conditions=${BENCH_CONDITIONS:-loss0}
transports=${BENCH_TRANSPORTS:-rxe siw vrdma tcp}
# perftest's duration mode (-D) measures between a warm-up and a cool-down
# margin (-f): the sampled window is D - 2 * MARGIN seconds.
MARGIN=1
if [ "$mode" = full ]; then
	D=3		# seconds per bandwidth / rate run (1 s sampled)
	LAT_N=5000	# latency iterations (5 samples beyond p99.9)
	SP_T=3		# sockperf seconds
else
	D=3
	LAT_N=1000
	SP_T=2
fi
WINDOW=$((D - 2 * MARGIN))
BW8_N=100	# 64 KB messages per QP in the 8-QP run
BW_TIMEOUT=$((D + 25))
LAT_TIMEOUT=60
PROBE_TIMEOUT=25
COLLAPSE_AFTER=2	# consecutive timeouts before a transport is declared collapsed

SRV_IP=$W2_IP
# SRV_IP as /proc/net/tcp writes a local address (host-order hex).
IFS=. read -r _o1 _o2 _o3 _o4 <<<"$SRV_IP"
printf -v SRV_HEX '%02X%02X%02X%02X' "$_o4" "$_o3" "$_o2" "$_o1"
CLI_IP=$W1_IP
port=18600
tmp=$(mktemp -d /tmp/bench.XXXXXX)
defer rm -rf "$tmp"

log() { echo "# $*"; }
csv_header="condition,transport,test,tool,msg_bytes,streams,status,value,unit,p50_us,p99_us,p999_us,cpu_client_s,cpu_server_s,cpu_total_s,seconds,note"

# ---- measurement helpers --------------------------------------------------
# Whole-guest busy time (user, nice, system, irq, softirq) in BJ, with
# builtins only: every fork+exec costs a tenth of a second under TCG.
busy_jiffies() {
	local _c u n s i w q sq _r
	read -r _c u n s i w q sq _r </proc/stat
	BJ=$((u + n + s + q + sq))
}
now_us() { NOW=${EPOCHREALTIME/./}; }
hz=$(getconf CLK_TCK)

# run_pair SERVER_CMD -- CLIENT_CMD: runs both under timeouts with
# /usr/bin/time; sets rc_srv rc_cli cpu_srv cpu_cli cpu_tot secs and leaves
# the outputs in $tmp/srv.out $tmp/cli.out.
run_pair() {
	local to=$1
	shift
	local scmd=() ccmd=()
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	rm -f "$tmp"/srv.* "$tmp"/cli.*
	local j0 t0 spid
	busy_jiffies; j0=$BJ
	now_us; t0=$NOW
	/usr/bin/time -o "$tmp/srv.time" -f '%U %S' timeout -k 3 $((to + 5)) "${scmd[@]}" >"$tmp/srv.out" 2>&1 &
	spid=$!
	wait_listen "$port"
	/usr/bin/time -o "$tmp/cli.time" -f '%U %S' timeout -k 3 "$to" "${ccmd[@]}" >"$tmp/cli.out" 2>&1
	rc_cli=$?
	# The server normally ends with the client; give it a few seconds
	# (SRV_LINGER polls of 0.2 s; 0 for servers that never end, like sockperf's).
	local i
	for i in $(seq 1 "${SRV_LINGER:-50}"); do kill -0 "$spid" 2>/dev/null || break; sleep 0.2; done
	kill -0 "$spid" 2>/dev/null && kill_tree "$spid"
	wait "$spid"
	rc_srv=$?
	now_us
	printf -v secs '%d.%03d' $(((NOW - t0) / 1000000)) $(((NOW - t0) / 1000 % 1000))
	busy_jiffies
	printf -v cpu_tot '%d.%02d' $(((BJ - j0) / hz)) $(((BJ - j0) * 100 / hz % 100))
	cputime "$tmp/srv.time"; cpu_srv=$CPUT
	cputime "$tmp/cli.time"; cpu_cli=$CPUT
	port=$((port + 1))
}
# User + system seconds from a /usr/bin/time -f '%U %S' file, in CPUT.
cputime() {
	local u s
	CPUT=
	[ -s "$1" ] || return
	while read -r u s; do
		[[ "$u" =~ ^[0-9]+\.[0-9]+$ && "$s" =~ ^[0-9]+\.[0-9]+$ ]] &&
			CPUT=$(((10#${u/./} + 10#${s/./}) / 100)).$(printf '%02d' $(((10#${u/./} + 10#${s/./}) % 100)))
	done <"$1"
}

# Wait until something listens on TCP port $1 at the server address (or
# the wildcard): perftest's out-of-band socket, iperf3, sockperf, and siw's
# rdma_cm listeners, which are kernel TCP sockets bound to each iWARP
# device's own address (a wildcard rdma_listen makes one per device, one
# after the other: the client's device may be listening while the server's
# is not yet). Falls back to a fixed wait.
wait_listen() {
	local i hex _a l _b _c st
	printf -v hex '%04X' "$1"
	for i in {1..30}; do
		# /proc/net/tcp with bash builtins: a fork costs ~0.1 s under TCG.
		while read -r _a l _b st _c; do
			[[ ("$l" == "$SRV_HEX:$hex" || "$l" == "00000000:$hex") && "$st" == 0A ]] &&
				{ sleep 0.1; return 0; }
		done </proc/net/tcp
		sleep 0.1
	done
	log "no TCP listener on $SRV_IP:$1 after 3 s; going on"
	sleep 0.5
}

# The tools' own output, for a failed run (or every run with BENCH_DEBUG=1).
dump_outputs() {
	[ "$last_status" = ok ] && [ -z "${BENCH_DEBUG:-}" ] && return
	grep -i -E "error|fail|couldn|unable|refused|status [0-9]|timed? ?out|abort" "$tmp/cli.out" "$tmp/srv.out" 2>/dev/null | head -n 8 | sed 's/^/#| error: /'
	sed 's/\x1b\[[0-9;]*m//g; s/^/#| client: /' "$tmp/cli.out" | grep -v -E '^#\| client: *-*$' | tail -n 25
	sed 's/\x1b\[[0-9;]*m//g; s/^/#| server: /' "$tmp/srv.out" | grep -v -E '^#\| server: *-*$' | tail -n 15
}
# Status word of a finished pair: ok, timeout or fail.
pair_status() {
	if [ "$rc_cli" = 124 ] || [ "$rc_cli" = 137 ]; then echo timeout
	elif [ "$rc_cli" != 0 ]; then echo fail
	else echo ok
	fi
}
# Last meaningful line of a tool's output, sanitised for CSV.
why() {
	local l
	l=$(grep -i -E "error|fail|couldn|unable|refused|timed? ?out|not supported|invalid|abort" "$@" 2>/dev/null | tail -n 1)
	[ -n "$l" ] || l=$(grep -v -E '^\s*$|^-+$|Command exited|^ *[0-9.]+ [0-9.]+$' "$@" 2>/dev/null | tail -n 1)
	echo "$l" | tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g; s/,/;/g; s/^ *//' | tr -s ' \t' ' ' | cut -c1-120
}

# ---- the netem condition -----------------------------------------------
netem_args() {
	case "$1" in
	loss0) echo "" ;;
	loss*) echo "loss ${1#loss}%" ;;
	delay100us) echo "delay 100us 20us distribution normal" ;;
	*) echo "" ;;
	esac
}
set_condition() {
	local args
	args=$(netem_args "$1")
	tc qdisc del dev "$W1_IF" root 2>/dev/null
	tc qdisc del dev "$W2_IF" root 2>/dev/null
	if [ -n "$args" ]; then
		# shellcheck disable=SC2086
		tc qdisc replace dev "$W1_IF" root netem $args limit 10000 &&
			tc qdisc replace dev "$W2_IF" root netem $args limit 10000
	fi
}

# ---- transports -------------------------------------------------------------
# bind_rdma T: creates the two ends of transport T on the wire; sets DEV_C,
# DEV_S and CONN (perftest addressing arguments). Returns non-zero when the
# transport cannot be bound (the reason in $bind_err).
bind_rdma() {
	local t=$1 out
	bind_err=
	DEV_C=${t}_w1
	DEV_S=${t}_w2
	case "$t" in
	rxe) modprobe crc32_generic 2>/dev/null; modprobe crc32-pclmul 2>/dev/null
	     out=$(modprobe rdma_rxe 2>&1) || { bind_err="modprobe rdma_rxe: $out"; return 1; } ;;
	siw) if ! lsmod | grep -q '^siw '; then
		modprobe ib_core 2>/dev/null; modprobe libcrc32c 2>/dev/null
		[ -f "${BENCH_SIW_KO:-}" ] || { bind_err="no siw.ko (${BENCH_SIW_KO:-unset})"; return 1; }
		out=$(insmod "$BENCH_SIW_KO" 2>&1) || { bind_err="insmod siw: $out"; return 1; }
	     fi ;;
	vrdma) out=$(modprobe vrdma 2>&1) || { bind_err="modprobe vrdma: $out"; return 1; } ;;
	esac
	out=$(timeout 20 rdma link add "$DEV_C" type "$t" netdev "$W1_IF" 2>&1) ||
		{ bind_err="rdma link add $DEV_C: $out"; return 1; }
	out=$(timeout 20 rdma link add "$DEV_S" type "$t" netdev "$W2_IF" 2>&1) ||
		{ bind_err="rdma link add $DEV_S: $out"; timeout 20 rdma link del "$DEV_C"; return 1; }
	wait_until 10 ibv_has "$DEV_C" && wait_until 10 ibv_has "$DEV_S" ||
		{ bind_err="ibv_devices does not list $DEV_C/$DEV_S (no provider?)"; unbind_rdma; return 1; }
	# An IPv4-mapped GID of the port address means RoCE-style addressing
	# (-x IDX); otherwise (iWARP) connect through rdma_cm (-R).
	local idx
	idx=$(gid_index "$DEV_C" "$CLI_IP")
	if [ -n "$idx" ] && [ "$idx" = "$(gid_index "$DEV_S" "$SRV_IP")" ]; then
		CONN=(-x "$idx")
	else
		CONN=(-R)
	fi
	log "$t bound: $DEV_C $DEV_S, perftest addressing ${CONN[*]}"
}
unbind_rdma() {
	pkill_mine
	timeout 20 rdma link del "$DEV_C" 2>/dev/null
	timeout 20 rdma link del "$DEV_S" 2>/dev/null
}
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill -KILL "$1" 2>/dev/null
}
# Kill leftovers of the benchmark tools started by this script (by pid).
pkill_mine() {
	local p
	for p in $(jobs -p); do kill_tree "$p"; done
	wait 2>/dev/null
}

# ---- one perftest run -----------------------------------------------------
# perf TEST TOOL SIZE [extra args]: TEST is bw, bw8, rate or lat.
perf() {
	local test=$1 tool=$2 size=$3
	shift 3
	local extra=("$@") args to streams=1 status value unit p50= p99= p999= note=
	[ "$test" = bw8 ] && streams=8
	if [ "$skip_rest" ]; then
		emit "$cond,$T,$test,$tool,$size,$streams,skipped,,,,,,,,,,$skip_rest"
		return
	fi
	args=(-d DEV -F -s "$size" "${CONN[@]}" "${extra[@]}")
	case "$test" in
	lat) args+=(-n "$LAT_N"); to=$LAT_TIMEOUT ;;
	probe) args+=(-n 50); to=$PROBE_TIMEOUT ;;
	# perftest 4.5's duration mode counts no iterations with -q > 1: a
	# fixed number of messages per QP instead, perftest's own Gb/s.
	bw8) args+=(-n "$BW8_N" --report_gbits); to=$BW_TIMEOUT ;;
	*) args+=(-D "$D" -f "$MARGIN" --report_gbits); to=$BW_TIMEOUT ;;
	esac
	local try
	for try in 1 2 3; do
		# run_pair moves to the next port: each try gets a fresh one.
		run_pair "$to" "$tool" -p "$port" "${args[@]/#DEV/$DEV_S}" -- "$tool" -p "$port" "${args[@]/#DEV/$DEV_C}" "$SRV_IP"
		[ "$try" = 3 ] && break
		# perftest's CPU-clock calibration fails now and then under TCG
		# (r^2 < 0.9) and its times come out inf: run it again.
		if [ "$rc_cli" = 0 ] && grep -q "r^2" "$tmp/cli.out" && [[ "$test" == lat || "$test" == bw8 ]]; then
			log "$T $tool: perftest clock calibration failed, run again ($try)"
		# A connection refused before any data moved is the client
		# coming too early, not a measurement of T: perftest 4.5's -R
		# server opens its data listener only after a first handshake
		# connection, and a client that connects before is rejected
		# (and then crashes in librdmacm; see dp_cm.sh).
		elif [ "$rc_cli" != 0 ] && grep -q -i -E "connection refused|REJECTED" "$tmp/cli.out"; then
			log "$T $tool: connection refused, run again ($try): $(why "$tmp/cli.out")"
		else
			break
		fi
		pkill_mine
	done
	status=$(pair_status)
	if [ "$status" = ok ]; then
		local line
		# The result row starts with the message size.
		line=$(awk -v s="$size" '$1 == s && NF >= 5 { l = $0 } END { print l }' "$tmp/cli.out")
		case "$test" in
		probe)
			# The probe asks one thing: did data move (exit status 0)?
			set -- $line
			p50=$5 p99=$8 p999=$9 value=$5 unit=us
			[[ "$value" =~ ^[0-9.]+$ ]] || { value=0 p50= p99= p999= note="moved data; times unusable (perftest clock calibration failed)"; } ;;
		lat)
			# #bytes #iter t_min t_max t_typical t_avg t_stdev p99 p99.9
			set -- $line
			p50=$5 p99=$8 p999=$9 value=$5 unit=us ;;
		# Bandwidth and rate come from the iterations completed in the
		# sampled window, not from perftest's own figures: those scale
		# with a CPU clock that perftest calibrates at start, and under
		# TCG that calibration fails now and then ("r^2 < 0.9") and the
		# figures come out 0.
		bw8)
			set -- $line
			value=$4 unit=Gb/s note="perftest's own Gb/s; -n $BW8_N per QP" ;;
		rate)
			set -- $line
			[[ "$2" =~ ^[0-9]+$ ]] && value=$(echo "$2 / $WINDOW" | bc) unit=msg/s
			note="perftest: $5 Mpps" ;;
		*)
			set -- $line
			[[ "$2" =~ ^[0-9]+$ ]] && value=$(echo "scale=4; $2 * $size * 8 / $WINDOW / 1000000000" | bc | sed 's/^\./0./') unit=Gb/s
			note="perftest: $4 Gb/s" ;;
		esac
		grep -q "r^2" "$tmp/cli.out" && note="$note; perftest clock calibration failed (r^2 < 0.9): its own times are unreliable"
		if [ -z "$value" ] || ! [[ "$value" =~ ^[0-9.]+$ ]]; then
			status=fail note="no usable result row: $(why "$tmp/cli.out")"
			grep -q "r^2" "$tmp/cli.out" && note="times unusable: perftest clock calibration failed (r^2 < 0.9) in 3 tries"
			value=
		elif [ "$test" != probe ] && [ "$test" != lat ] && [ "$(echo "$value == 0" | bc)" = 1 ]; then
			status=zero note="the tool ran but reported nothing moved"
			[ "$test" = bw8 ] && grep -q "r^2" "$tmp/cli.out" &&
				status=fail note="times unusable: perftest clock calibration failed (r^2 < 0.9) in 3 tries"
		fi
	else
		note="rc $rc_cli/$rc_srv after ${secs%.*}s (limit ${to}s): $(why "$tmp/cli.out")"
	fi
	emit "$cond,$T,$test,$tool,$size,$streams,$status,$value,$unit,$p50,$p99,$p999,$cpu_cli,$cpu_srv,$cpu_tot,$secs,$note"
	dump_outputs
	if [ "$status" = ok ]; then
		consec=0
	elif [ "$status" = timeout ]; then
		consec=$((consec + 1))
		[ "$consec" -ge "$COLLAPSE_AFTER" ] &&
			skip_rest="not run: $T collapsed ($consec consecutive timeouts in this condition)"
	fi
	# A hung verbs user keeps the device busy: make sure nothing is left.
	pkill_mine
}

# ---- TCP -------------------------------------------------------------------
# Message rate: sockperf throughput mode, 64 B messages.
tcp_rate() {
	local status value note
	SRV_LINGER=0 run_pair "$BW_TIMEOUT" sockperf sr --tcp -i "$SRV_IP" -p "$port" -- \
		timeout -s INT $((SP_T + 15)) sockperf tp --tcp -i "$SRV_IP" -p "$port" --client_ip "$CLI_IP" -t "$SP_T" -m 64
	status=$(pair_status) value= note=
	if [ "$status" = ok ]; then
		value=$(sed -n 's/.*Message Rate is \([0-9]*\).*/\1/p' "$tmp/cli.out" | tail -n 1)
		[ -n "$value" ] || { status=fail; note="no rate: $(why "$tmp/cli.out")"; }
	else
		note="rc $rc_cli after ${secs%.*}s: $(why "$tmp/cli.out")"
	fi
	emit "$cond,tcp,rate,sockperf-tp,64,1,$status,$value,msg/s,,,,$cpu_cli,$cpu_srv,$cpu_tot,$secs,$note"
	dump_outputs
	pkill_mine
}
# tcp_suite [short]: short (the rounds) is one iperf3 stream and the
# busy-polling ping-pong only.
tcp_suite() {
	local status value p50 p99 p999 note line streams=(1 8) kinds=(busy blocking) P
	[ "${1:-}" = short ] && streams=(1) kinds=(busy)
	# One stream, and eight, with iperf3 (Mbit/s from the receiver line).
	for P in "${streams[@]}"; do
		run_pair "$BW_TIMEOUT" iperf3 -s -1 -B "$SRV_IP" -p "$port" -- \
			iperf3 -c "$SRV_IP" -B "$CLI_IP" -p "$port" -t "$D" -P "$P" -f m
		status=$(pair_status) value= note=
		if [ "$status" = ok ]; then
			line=$(grep receiver "$tmp/cli.out" | tail -n 1)
			value=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { if (v != "") printf "%.4f", v / 1000 }')
			[ -n "$value" ] || { status=fail; note="no receiver line: $(why "$tmp/cli.out")"; }
		else
			note="rc $rc_cli/$rc_srv after ${secs%.*}s (limit ${BW_TIMEOUT}s): $(why "$tmp/cli.out")"
		fi
		local test=bw
		[ "$P" = 8 ] && test=bw8
		emit "$cond,tcp,$test,iperf3,128K,$P,$status,$value,Gb/s,,,,$cpu_cli,$cpu_srv,$cpu_tot,$secs,$note"
		dump_outputs
		pkill_mine
	done
	[ "${1:-}" = short ] || tcp_rate
	# Latency: ping-pong, busy-polling (the client's socket is non-blocking
	# and it spins on recvfrom; the server blocks, so that the two do not
	# take both vCPUs) and blocking.
	local kind opt
	for kind in "${kinds[@]}"; do
		opt=()
		[ "$kind" = busy ] && opt=(--nonblocked)
		SRV_LINGER=0 run_pair "$LAT_TIMEOUT" sockperf sr --tcp -i "$SRV_IP" -p "$port" -- \
			sockperf pp --tcp -i "$SRV_IP" -p "$port" --client_ip "$CLI_IP" -t "$SP_T" -m 64 --no-rdtsc "${opt[@]}"
		status=$(pair_status) value= p50= p99= p999= note=
		if [ "$status" = ok ]; then
			p50=$(pct 50.000) p99=$(pct 99.000) p999=$(pct 99.900) value=$p50
			[ -n "$p50" ] || { status=fail; note="no percentiles: $(why "$tmp/cli.out")"; }
		else
			note="rc $rc_cli after ${secs%.*}s: $(why "$tmp/cli.out")"
		fi
		emit "$cond,tcp,lat,sockperf-pp-$kind,64,1,$status,$value,us,$p50,$p99,$p999,$cpu_cli,$cpu_srv,$cpu_tot,$secs,$note"
		dump_outputs
		pkill_mine
	done
}
pct() { sed 's/\x1b\[[0-9;]*m//g' "$tmp/cli.out" | awk -v p="$1" '$3 == "percentile" && $4 == p { print $6 }' | tail -n 1; }

# ---- RDMA suite -----------------------------------------------------------
rdma_suite() {
	local op size
	consec=0 skip_rest=
	# A short latency run first: a transport that cannot move data at all
	# (vrdma before its data path) is recorded once, not timed out 16 times.
	perf probe ib_send_lat 64
	if ! tail_ok; then
		skip_rest="not run: probe (ib_send_lat -n 50) failed in this condition"
	fi
	if [ "$mode" = full ] && [ "$cond" != loss0 ] && [ "${BENCH_IMPAIRED:-all}" = core ]; then
		# Under impairment, only the figures the goals and plots use.
		perf bw ib_write_bw 65536
		perf bw8 ib_write_bw 65536 -q 8
		perf rate ib_send_bw 64
		perf lat ib_send_lat 64
	elif [ "$mode" = full ]; then
		for op in write send read; do
			for size in 4096 65536 1048576; do
				perf bw "ib_${op}_bw" "$size"
			done
		done
		perf bw8 ib_write_bw 65536 -q 8
		perf rate ib_send_bw 64
		perf rate ib_write_bw 64
		for op in send write read; do
			perf lat "ib_${op}_lat" 64
		done
	else
		perf bw ib_write_bw 65536
		perf rate ib_send_bw 64
		perf lat ib_send_lat 64
	fi
}
# Whether the last emitted result was ok (perf sets last_status via emit).
tail_ok() { [ "$last_status" = ok ]; }
emit() {
	echo "@@R@@ $*"
	last_status=$(echo "$*" | cut -d, -f7)
}

# ---- fairness: one RDMA flow and one TCP stream on a shaped link -------
# BENCH_FAIR_QDISC: the bottlenecks the figure is taken on, in turn
# (default both): netem (netem's rate, a queue of 1000 skbs, which TSO
# makes megabytes: a FIFO) and fq_codel (a token bucket at the rate with
# fq_codel and ECN marking under it: the AQM issue 18 offers the host,
# the qdisc docs/driver.md recommends). The netem figure is test "fair",
# the others "fair-QDISC".
# BENCH_FAIR_ONLY=1: the fairness figure alone (no other test), once per
# entry of BENCH_FAIR_SETTINGS for vrdma: space-separated, each entry
# PARAM=VALUE[,PARAM=VALUE] written to /sys/module/vrdma/parameters before
# that run ("-": as loaded), e.g. "paths=1 paths=4".
FAIR_RATE=${BENCH_FAIR_RATE:-100mbit}
FAIR_QDISCS=${BENCH_FAIR_QDISC:-netem fq_codel}
FAIR_ONLY=${BENCH_FAIR_ONLY:-}
FAIR_SETTINGS=${BENCH_FAIR_SETTINGS:--}
# fair_set ENTRY: apply one BENCH_FAIR_SETTINGS entry to vrdma
fair_set() {
	local kv
	fair_tag=
	[ "$T" = vrdma ] && [ "$1" != - ] || return 0
	for kv in ${1//,/ }; do
		echo "${kv#*=}" >"/sys/module/vrdma/parameters/${kv%%=*}" ||
			log "cannot set vrdma ${kv%%=*}"
	done
	fair_tag="; vrdma $1"
}
# fair_shape DEV QDISC
fair_shape() {
	if [ "$2" = fq_codel ]; then
		tc qdisc replace dev "$1" root handle 1: tbf rate "$FAIR_RATE" burst 128kb latency 100ms &&
			tc qdisc replace dev "$1" parent 1:1 fq_codel ecn
	else
		tc qdisc replace dev "$1" root netem rate "$FAIR_RATE" limit 1000
	fi
}
fairness() {
	local q
	for q in $FAIR_QDISCS; do
		fairness_on "$q"
	done
}
# fairness_on QDISC: the figure on that bottleneck
fairness_on() {
	local status rv tv note sfx=
	[ "$1" = netem ] || sfx=-$1
	fair_shape "$W1_IF" "$1"
	fair_shape "$W2_IF" "$1"
	local fd=$((D * 2))
	rm -f "$tmp"/f.*
	timeout -k 3 $((fd + 25)) iperf3 -s -1 -B "$SRV_IP" -p 5299 >"$tmp/f.isrv" 2>&1 &
	timeout -k 3 $((fd + 25)) ib_write_bw -d "$DEV_S" -F -p "$port" -s 65536 "${CONN[@]}" -D "$fd" -f "$MARGIN" --report_gbits >"$tmp/f.rsrv" 2>&1 &
	wait_listen 5299
	wait_listen "$port"
	timeout -k 3 $((fd + 20)) iperf3 -c "$SRV_IP" -B "$CLI_IP" -p 5299 -t "$fd" -f m >"$tmp/f.icli" 2>&1 &
	local ipid=$!
	timeout -k 3 $((fd + 20)) ib_write_bw -d "$DEV_C" -F -p "$port" -s 65536 "${CONN[@]}" -D "$fd" -f "$MARGIN" --report_gbits "$SRV_IP" >"$tmp/f.rcli" 2>&1
	local rrc=$?
	wait "$ipid"
	local irc=$?
	port=$((port + 1))
	rv=$(awk -v w=$((fd - 2 * MARGIN)) '$1 == 65536 && NF >= 5 { v = sprintf("%.4f", $2 * 65536 * 8 / w / 1e9) } END { print v }' "$tmp/f.rcli")
	tv=$(grep receiver "$tmp/f.icli" | tail -n 1 | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { if (v != "") printf "%.4f", v / 1000 }')
	status=ok note="link shaped to $FAIR_RATE both ways ($1); $fd s${fair_tag:-}"
	[ -n "$rv" ] && [ -n "$tv" ] || { status=fail; note="$note; rdma rc $rrc ($(why "$tmp/f.rcli")); iperf3 rc $irc ($(why "$tmp/f.icli"))"; }
	[ "$rrc" = 124 ] && status=timeout
	emit "$cond,$T,fair$sfx,ib_write_bw,65536,1,$status,$rv,Gb/s,,,,,,,$fd,$note"
	emit "$cond,$T,fair-tcp$sfx,iperf3,128K,1,$( [ -n "$tv" ] && echo ok || echo fail ),$tv,Gb/s,,,,,,,$fd,against $T"
	pkill_mine
	set_condition "$cond"
}

# ---- rounds: the headline figures again, back to back -------------------
# The host's speed drifts during a run (under TCG the vCPUs are host
# threads): one figure per transport, minutes apart, can put a ratio on
# either side of a goal (same-boot ping-pong rounds have put vrdma/rxe
# anywhere from 0.84 to 1.91). After the conditions, BENCH_ROUNDS rounds
# (full mode, lossless wire; default 3, 0: none) measure 64 KB WRITE, the
# 64 B SEND rate and the ping-pong of rxe and vrdma, and one iperf3 stream
# and the busy-polling sockperf ping-pong of TCP, transport after
# transport, the order reversed every other round. Condition "roundN" in
# results.csv; the report gives each round's ratios and their medians.
ROUNDS=${BENCH_ROUNDS:-3}
rounds() {
	local r order t
	for r in $(seq 1 "$ROUNDS"); do
		cond=round$r
		order=
		for t in rxe vrdma tcp; do
			[[ " $transports " == *" $t "* ]] || continue
			if [ $((r % 2)) = 1 ]; then order="$order $t"; else order="$t $order"; fi
		done
		log "=== round $r:$order"
		for T in $order; do
			if [ "$T" = tcp ]; then
				tcp_suite short
				continue
			fi
			CONN=()
			if ! bind_rdma "$T"; then
				log "$T: cannot bind: $bind_err"
				continue
			fi
			consec=0 skip_rest=
			perf bw ib_write_bw 65536
			perf rate ib_send_bw 64
			perf lat ib_send_lat 64
			unbind_rdma
		done
	done
}

# ---- main --------------------------------------------------------------------
sysctl -qw net.core.rmem_max=16777216 net.core.wmem_max=16777216 >/dev/null
wire_single || { echo "bench: the single-namespace wire failed"; exit 1; }
log "mode $mode, conditions: $conditions, transports: $transports, D=${D}s lat -n $LAT_N"
log "kernel $(uname -r), $(nproc) CPUs"
emit "$csv_header"
for cond in $conditions; do
	set_condition "$cond" || { log "netem for $cond failed"; continue; }
	log "=== condition $cond: netem '$(netem_args "$cond")'"
	for T in $transports; do
		log "--- $T"
		if [ "$T" = tcp ]; then
			[ -n "$FAIR_ONLY" ] || tcp_suite
			continue
		fi
		CONN=()
		if ! bind_rdma "$T"; then
			log "$T: cannot bind: $bind_err"
			emit "$cond,$T,bind,rdma-link-add,,,fail,,,,,,,,,,$(echo "$bind_err" | tr ',\n' '; ' | cut -c1-160)"
			continue
		fi
		if [ -n "$FAIR_ONLY" ]; then
			for setting in $FAIR_SETTINGS; do
				fair_set "$setting"
				fairness
				[ "$T" = vrdma ] || break
			done
			unbind_rdma
			continue
		fi
		rdma_suite
		# Fairness against TCP, once (the lossless condition).
		if [ "$cond" = loss0 ] && [ "$mode" = full ] && [ -z "$skip_rest" ]; then
			fairness
		elif [ "$cond" = loss0 ] && [ "$mode" = full ]; then
			emit "$cond,$T,fair,ib_write_bw,65536,1,skipped,,,,,,,,,,$skip_rest"
		fi
		unbind_rdma
	done
done
set_condition loss0
if [ "$mode" = full ] && [ -z "$FAIR_ONLY" ] && [[ " $conditions " == *" loss0 "* ]]; then
	rounds
fi
log "done"
exit 0
