#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A workload for scripts/vm/profile: the bench's single-namespace wire and a
# few of its figures, each phase marked "##prof LABEL" so the profile tells
# them apart. PROF_TESTS picks them (default "vrdma:write vrdma:send64
# vrdma:lat rxe:write tcp:bw"; also write1m: 1 MB messages,
# read and read1m, lat64: the ping-pong with 64 B, the bench's size,
# readlat: ib_read_lat of 64 B, read64: ib_read_bw of 64 B, atomiclat:
# ib_atomic_lat,
# writeb and send64b: 64 KB WRITEs and 64 B SENDs both ways); PROF_SECONDS
# (default 8) per phase.
# PROF_NETEM="loss 5%" puts netem on both ends of the wire; with the
# pseudo-tests netem:on and netem:off in PROF_TESTS it is put on and taken
# off between figures (a lossy and a lossless figure in one boot);
# rps:on and rps:off likewise switch PROF_RPS (default "1 2") on and off.
# PROF_KOS="A.ko B.ko ..." (host paths) runs the vrdma tests once per
# module, in turn, PROF_ROUNDS times (default 1), labelled by the file's
# name: an A/B of two builds in one boot, where TCG's run-to-run swings
# are smallest. The other tests (rxe:..., tcp:bw) then run once a round,
# after the modules'.
#   scripts/vm/profile -- --mem 3G scripts/bench/prof-guest.sh
. "$VRDMA_ROOT/selftests/vrdma/lib.sh" >/dev/null
. "$VRDMA_ROOT/scripts/bench/wire-lib.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
tests=${PROF_TESTS:-vrdma:write vrdma:send64 vrdma:lat rxe:write tcp:bw}
secs=${PROF_SECONDS:-8}
port=18700

# The text symbols, for scripts/vm/profile (Debian's System.map is a
# stub), once the modules are loaded.
kallsyms() {
	echo "##prof-kallsyms $(awk '$2 ~ /^[tT]$/ { print $1, $2, $3, $4 }' /proc/kallsyms | gzip -1 | base64 -w0)"
}
# cpu_mark / cpu_report LABEL: each vCPU's user, system, softirq and idle
# share of the phase, from /proc/stat.
# They also print "##prof-units LABEL BYTES" for scripts/vm/profile --insn:
# the bytes the busier end of the wire sent in the phase (its data).
wire_tx() { cat "/sys/class/net/$W1_IF/statistics/tx_bytes" "/sys/class/net/$W2_IF/statistics/tx_bytes"; }
cpu_mark() { grep '^cpu[0-9]' /proc/stat >/tmp/stat0; wire_tx >/tmp/wire0; nstat -n >/dev/null 2>&1; }
cpu_report() {
	# the stack's drops and errors in the phase (a loss on a lossless wire)
	nstat 2>/dev/null | awk -v l="$1" '$1 ~ /Drop|Err|Overflow|Prune|Fail/ { d = d " " $1 " " $2 }
		END { if (d != "") print "# " l " drops:" d }'
	wire_tx | paste -d' ' /tmp/wire0 - | awk -v l="$1" '
		{ d = $2 - $1; if (d > m) m = d }
		END { printf "##prof-units %s %d\n", l, m }'
	grep '^cpu[0-9]' /proc/stat | paste -d' ' /tmp/stat0 - | awk -v l="$1" '{
		n = NF / 2
		for (i = 2; i <= n; i++) d[i] = $(i + n) - $i
		t = 0; for (i = 2; i <= n; i++) t += d[i]
		if (t == 0) t = 1
		printf "# %s %s: user %d%% sys %d%% softirq %d%% idle %d%%\n", l, $1,
			100 * (d[2] + d[3]) / t, 100 * d[4] / t, 100 * d[8] / t, 100 * (d[5] + d[6]) / t
	}'
}
# qp_state DEV: the RC QPs' transport state (cwnd, RTT, ...) mid-phase
qp_state() {
	sleep $((secs / 2))
	rdma resource show qp link "$1"/1 -dd 2>/dev/null | grep -v -e 'qp-type UD' -e 'qp-type GSI' | sed 's/^/# mid-phase: /' | cut -c1-600
}
# perftest TRANSPORT LABEL TOOL ARGS...: server and client, one phase
perftest() {
	local t=$1 label=$2 tool=$3 idx
	shift 3
	idx=$(gid_index "$t"_w1 "$W1_IP")
	timeout $((secs + 30)) "$tool" -d "$t"_w2 -F -p $port -x "$idx" "$@" >/tmp/srv.out 2>&1 &
	sleep 1
	echo "##prof $label"
	cpu_mark
	qp_state "$t"_w1 &
	timeout $((secs + 25)) "$tool" -d "$t"_w1 -F -p $port -x "$idx" "$@" "$W2_IP" >/tmp/cli.out 2>&1
	echo "##prof -"
	cpu_report "$label"
	wait
	port=$((port + 1))
	grep -E '^ *[0-9]+ +[0-9]+' /tmp/cli.out | tail -n 1 | sed "s/^/# $label: /"
}


wire_single || { echo "prof: the wire failed"; exit 1; }
# PROF_RPS="MASK1 MASK2": receive packet steering of vw1's and vw2's
# receive queue (an experiment: each end's receive work on its own vCPU)
rlabel=	# "+rps" in the labels of figures taken with it
rps_set() {
	echo "$1" >/sys/class/net/$W1_IF/queues/rx-0/rps_cpus
	echo "$2" >/sys/class/net/$W2_IF/queues/rx-0/rps_cpus
	echo "# rps_cpus $1 and $2"
}
rps_on() {
	local m1 m2
	read -r m1 m2 <<<"${PROF_RPS:-1 2}"
	rps_set "$m1" "$m2"
	rlabel=+rps
}
rps_off() {
	rps_set 0 0
	rlabel=
}
[ -n "${PROF_RPS:-}" ] && rps_on
# PROF_NETEM="loss 5%": netem on both ends of the wire
nlabel=	# "+netem" in the labels of figures taken under netem
netem_on() {
	nlabel=+netem
	# shellcheck disable=SC2086 # netem's arguments
	tc qdisc replace dev "$W1_IF" root netem $PROF_NETEM &&
		tc qdisc replace dev "$W2_IF" root netem $PROF_NETEM &&
		echo "# netem $PROF_NETEM on $W1_IF and $W2_IF"
}
netem_off() {
	nlabel=
	tc qdisc del dev "$W1_IF" root 2>/dev/null
	tc qdisc del dev "$W2_IF" root 2>/dev/null
	echo "# netem off"
}
[ -n "${PROF_NETEM:-}" ] && netem_on
plan=
if [ -n "${PROF_KOS:-}" ]; then
	for _ in $(seq "${PROF_ROUNDS:-1}"); do
		for k in $PROF_KOS; do
			for x in $tests; do
				case "$x" in
				vrdma:*) plan="$plan $k@$x" ;;
				netem:* | rps:*) plan="$plan $x" ;;
				esac
			done
		done
		# the peers' figures once a round, after the modules' own
		for x in $tests; do
			case "$x" in
			vrdma:* | netem:* | rps:*) ;;
			*) plan="$plan $x" ;;
			esac
		done
	done
else
	plan=$tests
fi
for px in $plan; do
	ko="" x=$px
	case "$px" in *@*) ko=${px%@*} x=${px#*@} ;; esac
	t=${x%%:*} what=${x#*:}
	if [ -n "$ko" ]; then
		use_ko "$ko"
		x="$(basename "${ko%%,*}" .ko)${ko#"${ko%%,*}"}$nlabel$rlabel:$what"
	fi
	if [ "$t" = netem ]; then
		if [ "$what" = on ]; then netem_on; else netem_off; fi
		continue
	fi
	if [ "$t" = rps ]; then
		if [ "$what" = on ]; then rps_on; else rps_off; fi
		continue
	fi
	if [ "$t" = tcp ]; then
		iperf3 -s -1 -B "$W2_IP" -p 5299 >/dev/null 2>&1 &
		sleep 1
		echo "##prof tcp:bw"
		cpu_mark
		iperf3 -c "$W2_IP" -B "$W1_IP" -p 5299 -t "$secs" -f m 2>&1 | grep receiver | sed 's/^/# tcp:bw: /'
		echo "##prof -"
		cpu_report tcp:bw
		wait
		continue
	fi
	bind "$t" || { echo "# prof: cannot bind $t"; continue; }
	kallsyms
	case "$what" in
	write) perftest "$t" "$x" ib_write_bw -s 65536 -D "$secs" --report_gbits ;;
	write1m) perftest "$t" "$x" ib_write_bw -s 1048576 -D "$secs" --report_gbits ;;
	read) perftest "$t" "$x" ib_read_bw -s 65536 -D "$secs" --report_gbits ;;
	read1m) perftest "$t" "$x" ib_read_bw -s 1048576 -D "$secs" --report_gbits ;;
	read64) perftest "$t" "$x" ib_read_bw -s 64 -D "$secs" ;;
	send64) perftest "$t" "$x" ib_send_bw -s 64 -D "$secs" ;;
	lat) perftest "$t" "$x" ib_send_lat -s 2 -n $((secs * 500)) ;;
	lat64) perftest "$t" "$x" ib_send_lat -s 64 -n $((secs * 500)) ;;
	readlat) perftest "$t" "$x" ib_read_lat -s 64 -n $((secs * 250)) ;;
	atomiclat) perftest "$t" "$x" ib_atomic_lat -n $((secs * 250)) ;;
	writeb) perftest "$t" "$x" ib_write_bw -s 65536 -D "$secs" -b --report_gbits ;;
	send64b) perftest "$t" "$x" ib_send_bw -s 64 -D "$secs" -b ;;
	esac
	# the device's counters (vrdma's: batches, waits, timers, ACKs)
	for d in "$t"_w1 "$t"_w2; do
		echo "# $x $d: $(rdma statistic show link "$d"/1 2>/dev/null |
			awk '{ for (i = 3; i < NF; i += 2) if ($(i + 1) != 0) printf "%s %s ", $i, $(i + 1) }')"
	done
	unbind "$t"
done
exit 0
