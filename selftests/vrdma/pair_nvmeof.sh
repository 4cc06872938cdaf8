#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe over Fabrics over vrdma between two guests (scripts/vm/run --pair),
# the kernel's own ULPs in each guest's initial namespace: guest a exports
# a ramdisk (brd) through nvmet + nvmet-rdma, guest b connects with
# `nvme connect -t rdma`. fio random and sequential writes with
# --verify=crc32c, a pattern written on b read back on b and straight off
# the ramdisk on a (three checksums agree), the same under netem 1% loss
# on both NICs, then disconnect, unload of the ULPs, `rdma link del` and
# rmmod: nothing may be left. PAIR_RDMA=rxe runs it over Soft-RoCE for the
# comparison figures (fio's IOPS and bandwidth are printed, not asserted).
# Skips in a single guest.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/pair_lib.inc"
require_root
require_cmd rdma nvme fio python3
require_vrdma
pair_require
KIND=${PAIR_RDMA:-vrdma}
. "$(dirname "$0")/nvmf_lib.inc"

# fio_verify NAME ARGS...: a write job with crc32c verification on $NDEV.
fio_verify() {
	local name=$1 out
	shift
	out=$(timeout -k 2 300 fio --name="$name" --filename="$NDEV" --direct=1 \
		--ioengine=libaio --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--size=$((MB / 2))M --output-format=terse --terse-version=3 "$@" 2>&1)
	local rc=$?
	if [ $rc -ne 0 ]; then
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/#   /'
		return $rc
	fi
	# terse v3: write bandwidth (KiB/s) field 48, write IOPS field 49
	diag "$KIND $name: $(awk -F';' '{ printf "write %d KiB/s, %d IOPS", $48, $49 }' <<<"$out")"
}

# A pattern from b, checked on b (through NVMe-oF) and on a (the ramdisk).
PAT=/tmp/nvmf-pattern
pattern_check() {
	local sum peer
	if pair_is_a; then
		pair_sync "$1-written" "" 300 >/dev/null || pair_lost "$1-written"
		# Direct: nvmet's bios bypass this guest's page cache of
		# /dev/ram0, so a buffered read sees the previous check's data.
		sum=$(dd if=/dev/ram0 bs=1M count=$((MB / 4)) iflag=direct status=none | md5sum | cut -d' ' -f1)
		peer=$(pair_sync "$1-sums" "$sum" 60) || pair_lost "$1-sums"
	else
		head -c $((MB * 1048576 / 4)) /dev/urandom >"$PAT"
		timeout 120 dd if="$PAT" of="$NDEV" bs=1M oflag=direct conv=fsync status=none ||
			diag "writing the pattern failed"
		pair_sync "$1-written" "" 300 >/dev/null || pair_lost "$1-written"
		sum=$(timeout 120 dd if="$NDEV" bs=1M count=$((MB / 4)) iflag=direct status=none | md5sum | cut -d' ' -f1)
		[ "$sum" = "$(md5sum <"$PAT" | cut -d' ' -f1)" ] || { diag "read back differs"; sum=bad-readback; }
		peer=$(pair_sync "$1-sums" "$sum" 60) || pair_lost "$1-sums"
	fi
	[ "$sum" = "$peer" ] || { diag "checksums: here $sum, the other guest $peer"; return 1; }
}

pair_dev "$KIND" || { ktap_fail "$KIND device on $VRDMA_PAIR_IF"; ktap_finished; }
ktap_ok "$KIND device on $VRDMA_PAIR_IF"
pair_is_a && { nvmf_target_up; rc=$?; } || rc=0
theirs=$(pair_sync target "$rc" 120) || pair_lost target
[ "$rc$theirs" = 00 ] || { ktap_fail "nvmet-rdma target on a ($MB MB ramdisk)"; ktap_finished; }
ktap_ok "nvmet-rdma target on a ($MB MB ramdisk)"

pair_step -f b "nvme connect -t rdma" nvmf_connect
pair_step b "fio randwrite 4 KB qd16, crc32c verified" fio_verify randwrite --rw=randwrite --bs=4k --iodepth=16
pair_step b "fio sequential write 128 KB qd4, crc32c verified" fio_verify seqwrite --rw=write --bs=128k --iodepth=4
pattern_check clean
ktap_result $? "a pattern written on b reads back on b and off the ramdisk on a"

tc qdisc replace dev "$VRDMA_PAIR_IF" root netem loss 1%
pair_sync netem >/dev/null || pair_lost netem
pair_step b "fio randwrite under 1% loss, verified" fio_verify loss-randwrite --rw=randwrite --bs=4k --iodepth=16 --size=$((MB / 4))M
pattern_check loss
ktap_result $? "the pattern check under 1% loss"
tc qdisc del dev "$VRDMA_PAIR_IF" root
pair_sync netem-off >/dev/null || pair_lost netem-off

pair_step b "nvme disconnect, nvme-rdma unloaded" eval 'nvmf_disconnect && run modprobe -r nvme-rdma'
pair_sync disconnected >/dev/null || pair_lost disconnected
cleanup
# Nothing of the ULPs or the device is left: the module unloads.
left=$(rdma resource show 2>/dev/null | grep -v ' pd 0 \| cq 0 \| qp 0 \| cm_id 0 \| mr 0 \| ctx 0 \| srq 0 ' )
if [ "$KIND" = vrdma ]; then
	! lsmod | grep -q '^vrdma '
	ktap_result $? "target/host unloaded, rdma link del and rmmod vrdma leave nothing (lsmod)"
fi
[ -z "$left" ]
ktap_result $? "rdma resource show is empty${left:+: $left}"
pair_sync end >/dev/null || pair_lost end
ktap_finished
