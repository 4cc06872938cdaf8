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
NQN=nqn.2026-12.org.vrdma:pair-test
CFS=/sys/kernel/config/nvmet
MB=${NVMF_MB:-32}
T=$VRDMA_PAIR_PEER
pair_is_a && T=$VRDMA_PAIR_SELF

target_up() {
	run modprobe brd rd_nr=1 rd_size=$((MB * 1024)) || return 1
	defer modprobe -r brd
	run modprobe nvmet-rdma || return 1
	defer modprobe -r nvmet-rdma nvmet
	# configfs is a module here, loaded with nvmet: after guest-init's mount.
	if [ ! -d "$CFS" ]; then
		run mount -t configfs none /sys/kernel/config || return 1
	fi
	mkdir "$CFS/subsystems/$NQN" || return 1
	defer rmdir "$CFS/subsystems/$NQN"
	echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host"
	mkdir "$CFS/subsystems/$NQN/namespaces/1" || return 1
	defer rmdir "$CFS/subsystems/$NQN/namespaces/1"
	echo /dev/ram0 >"$CFS/subsystems/$NQN/namespaces/1/device_path"
	echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable" || return 1
	defer "echo 0 >$CFS/subsystems/$NQN/namespaces/1/enable"
	mkdir "$CFS/ports/1" || return 1
	defer rmdir "$CFS/ports/1"
	echo rdma >"$CFS/ports/1/addr_trtype"
	echo ipv4 >"$CFS/ports/1/addr_adrfam"
	echo "$VRDMA_PAIR_SELF" >"$CFS/ports/1/addr_traddr"
	echo 4420 >"$CFS/ports/1/addr_trsvcid"
	ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN" || return 1
	defer rm -f "$CFS/ports/1/subsystems/$NQN"
}

# The block device of our subsystem on the host (b), e.g. /dev/nvme0n1:
# with native multipath (Debian's kernel) it sits under the subsystem
# (/sys/class/nvme-subsystem), else under the controller (/sys/class/nvme).
host_dev() {
	local c n
	for c in /sys/class/nvme-subsystem/* /sys/class/nvme/*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
		for n in "$c"/nvme*; do
			[[ "${n##*/}" =~ ^nvme[0-9]+n[0-9]+$ ]] && [ -b "/dev/${n##*/}" ] &&
				{ echo "/dev/${n##*/}"; return 0; }
		done
	done
	return 1
}
host_ready() { local d; d=$(host_dev) && [ -b "$d" ]; }

connect() {
	run modprobe nvme-rdma || return 1
	run nvme discover -t rdma -a "$T" -s 4420 || return 1
	CMD_TIMEOUT=60 run nvme connect -t rdma -a "$T" -s 4420 -n "$NQN" || return 1
	# Before the device goes: nvme-rdma holds it until the controller is
	# deleted, and `rdma link del` would wait for its I/O timeouts.
	defer nvme disconnect -n "$NQN"
	wait_until 30 host_ready || {
		diag "no namespace block device: $(ls /sys/block | tr '\n' ' ') $(ls -d /sys/class/nvme/*/nvme* 2>/dev/null | tr '\n' ' ')"
		diag "$(cat /sys/class/nvme/*/state 2>/dev/null | tr '\n' ' ')"
		dmesg | tail -n 15 | sed 's/^/#   /'
		return 1
	}
	NDEV=$(host_dev)
}
disconnect() {
	CMD_TIMEOUT=60 run nvme disconnect -n "$NQN" || return 1
	wait_until 10 eval '! host_dev >/dev/null'
}

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
pair_is_a && { target_up; rc=$?; } || rc=0
theirs=$(pair_sync target "$rc" 120) || pair_lost target
[ "$rc$theirs" = 00 ] || { ktap_fail "nvmet-rdma target on a ($MB MB ramdisk)"; ktap_finished; }
ktap_ok "nvmet-rdma target on a ($MB MB ramdisk)"

pair_step -f b "nvme connect -t rdma" connect
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

pair_step b "nvme disconnect, nvme-rdma unloaded" eval 'disconnect && run modprobe -r nvme-rdma'
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
