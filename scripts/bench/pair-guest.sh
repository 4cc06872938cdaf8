#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The two-guest benchmark condition, run in both guests by scripts/bench/pair
# (scripts/vm/run --pair): vrdma, rxe and kernel TCP between the guests over
# virtio-net, lossless and with netem 1% loss on both NICs: ib_write_bw
# 64 KB against iperf3 one stream, ib_send_lat 2 B (perftest, RDMA only),
# qperf rc_lat (rdma_cm) against qperf tcp_lat, and NVMe over Fabrics
# (nvmet on a brd ramdisk on a, fio on b: 4 KB randwrite qd16 IOPS, 128 KB
# sequential write qd4 bandwidth) over nvme-rdma on each RDMA device
# against nvme-tcp. Server on a, client on b; the client prints one line
# per figure:
#   RESULT,condition,transport,test,value,unit,p50_us,p99_us
# A figure that could not be taken is RESULT,...,fail,... (never a guess).
. "$VRDMA_ROOT/selftests/vrdma/lib.sh"
. "$VRDMA_ROOT/selftests/vrdma/dp_lib.inc"
. "$VRDMA_ROOT/selftests/vrdma/pair_lib.inc"
require_root
pair_require
. "$VRDMA_ROOT/selftests/vrdma/nvmf_lib.inc"
D=${PAIR_BENCH_SECS:-4}
P=$VRDMA_PAIR_PEER

result() { pair_is_a || echo "RESULT,$*"; }

dev_add() {	# dev_add vrdma|rxe: the device on eth0, DEV and G set
	if [ "$1" = rxe ]; then
		modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$VRDMA_PAIR_IF" || return 1
		DEV=rxe0
	else
		modprobe vrdma && rdma link add vrdma0 type vrdma netdev "$VRDMA_PAIR_IF" || return 1
		DEV=vrdma0
	fi
	wait_until 10 dp_gid4 "$DEV" >/dev/null || return 1
	G=$(dp_gid4 "$DEV")
}
dev_del() {
	timeout -k 2 60 rdma link del "$DEV"
	if [ "$DEV" = rxe0 ]; then modprobe -r rdma_rxe; else modprobe -r vrdma; fi
}

rdma_figures() {	# rdma_figures COND KIND
	local c=$1 k=$2 v line
	pair_case "$k ib_write_bw 64 KB ($c)" 60 \
		ib_write_bw -d "$DEV" -x "$G" -s 65536 -D "$D" -f 1 -F -- \
		ib_write_bw -d "$DEV" -x "$G" -s 65536 -D "$D" -f 1 -F "$P"
	# MB/s (10^6, as iperf3's) from the iterations of the sampled window
	# (D less a 1 s margin each side), as scripts/bench/guest.sh does:
	# perftest's own MB/s scales with a CPU clock whose TCG calibration
	# fails now and then, and prints 0 for a run that moved data.
	v=$(awk -v w=$((D - 2)) '$1 == 65536 && NF >= 5 && $2 ~ /^[0-9]+$/ {
		v = sprintf("%.2f", $2 * 65536 / w / 1e6) } END { print v }' <<<"$PAIR_OUT")
	result "$c,$k,write_bw_64k,${v:-fail},MB/s,,"
	pair_case "$k ib_send_lat 2 B ($c)" 90 \
		ib_send_lat -d "$DEV" -x "$G" -s 2 -n 1000 -F -- \
		ib_send_lat -d "$DEV" -x "$G" -s 2 -n 1000 -F "$P"
	line=$(awk '$1 == 2 && NF >= 8 { l = $0 } END { print l }' <<<"$PAIR_OUT")
	# perftest: bytes iterations min max typical avg stdev p99 p99.9
	result "$c,$k,send_lat_2,$(awk '{ print $6 }' <<<"$line"),us,$(awk '{ print $5 "," $8 }' <<<"$line")"
	qperf_lat "$c" "$k" rc_lat
}

# qperf_lat COND KIND TEST: one tool's average latency for every transport
# (qperf times with gettimeofday; perftest's cycle calibration is not
# trusted under TCG). rc_lat goes through rdma_cm (-cm1).
qperf_lat() {
	local c=$1 k=$2 t=$3 cm= v
	[ "$t" = rc_lat ] && cm=-cm1
	pair_case "$k qperf $t ($c)" 60 \
		qperf -lp 19766 -- \
		qperf -lp 19766 $cm -t "$D" "$P" "$t" quit
	v=$(awk '$1 == "latency" { print $3 " " $4 }' <<<"$PAIR_OUT" | head -n 1)
	case "$v" in
	*" ms") v=$(awk '{ printf "%.1f", $1 * 1000 }' <<<"$v") ;;
	*" us") v=${v% us} ;;
	*) v=fail ;;
	esac
	result "$c,$k,qperf_lat,$v,us,,"
}

# nvmf_job ARGS...: one time-based fio job on $NDEV; prints "KiB/s IOPS".
nvmf_job() {
	timeout -k 2 $((D + 60)) fio --name=bench --filename="$NDEV" --direct=1 --ioengine=libaio \
		--size=$((MB / 2))M --time_based --runtime="$D" --output-format=terse --terse-version=3 \
		"$@" 2>/dev/null | awk -F';' 'NF > 49 && $49 > 0 { print $48, $49 }'
}
# nvmf_figures COND KIND TRANSPORT: NVMe-oF over rdma (on KIND's device)
# or tcp. The target and host are torn down before the next transport.
nvmf_figures() {
	local c=$1 k=$2 rc=0 theirs r= w=
	NVMF_TR=$3
	pair_is_a && { nvmf_target_up || rc=1; }
	theirs=$(pair_sync "$c-$k-nvmf-target" "$rc" 120) || pair_lost "$c-$k-nvmf-target"
	if ! pair_is_a; then
		if [ "$theirs" = 0 ] && nvmf_connect; then
			r=$(nvmf_job --rw=randwrite --bs=4k --iodepth=16)
			w=$(nvmf_job --rw=write --bs=128k --iodepth=4)
			nvmf_disconnect
		fi
		[ -n "$r" ] && r=${r#* } || r=fail
		[ -n "$w" ] && w=$(awk '{ printf "%.1f", $1 / 1024 }' <<<"$w") || w=fail
		result "$c,$k,nvmf_randwrite_4k,$r,IOPS,,"
		result "$c,$k,nvmf_write_128k,$w,MB/s,,"
	fi
	pair_sync "$c-$k-nvmf-done" "" 300 >/dev/null || pair_lost "$c-$k-nvmf-done"
	cleanup
}

tcp_figures() {	# tcp_figures COND
	local c=$1 v
	pair_case "tcp iperf3 one stream ($c)" 60 \
		iperf3 -s -1 -B "$VRDMA_PAIR_SELF" -p 5211 -- \
		iperf3 -c "$P" -p 5211 -t "$D" -f m
	v=$(grep receiver <<<"$PAIR_OUT" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { if (v != "") printf "%.2f", v / 8 }')
	result "$c,tcp,write_bw_64k,${v:-fail},MB/s,,"
	qperf_lat "$c" tcp tcp_lat
	nvmf_figures "$c" tcp tcp
}

for cond in loss0 loss1; do
	if [ "$cond" = loss1 ]; then
		tc qdisc replace dev "$VRDMA_PAIR_IF" root netem loss 1%
	else
		tc qdisc del dev "$VRDMA_PAIR_IF" root 2>/dev/null
	fi
	pair_sync "$cond" >/dev/null || pair_lost "$cond"
	for k in vrdma rxe; do
		if dev_add $k; then
			pair_sync "$cond-$k-up" >/dev/null || pair_lost "$cond-$k-up"
			rdma_figures $cond $k
			nvmf_figures $cond $k rdma
			dev_del
		else
			result "$cond,$k,device,fail,,,"
		fi
	done
	tcp_figures $cond
done
tc qdisc del dev "$VRDMA_PAIR_IF" root 2>/dev/null
pair_sync end >/dev/null || pair_lost end
ktap_finished
