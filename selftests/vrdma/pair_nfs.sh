#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NFS over RDMA over vrdma between two guests (scripts/vm/run --pair): guest
# a runs nfsd (NFSv4.2 only, no rpcbind) with an RDMA listener on port
# 20049 exporting a tmpfs, guest b mounts it with -o rdma,port=20049, copies
# a few hundred MB of random data there and back, and the checksums agree
# on b (the copy read back through NFS) and on a (the exported file
# itself); then umount, nfsd stopped, the RPC/RDMA modules unloaded,
# `rdma link del` and rmmod leave nothing. The mount must really use RDMA
# (proto=rdma in /proc/mounts; vrdma's rx_bytes grows by at least the
# file). PAIR_RDMA=rxe runs it over Soft-RoCE. Skips in a single guest.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/pair_lib.inc"
require_root
require_cmd rdma rpc.nfsd exportfs mount.nfs python3
require_vrdma
pair_require
KIND=${PAIR_RDMA:-vrdma}
MB=${NFS_MB:-200}
EXP=/srv/vrdma-nfs
MNT=/mnt/vrdma-nfs

# nfsd on a: NFSv4 needs rpc.mountd for the kernel's export upcalls, not
# rpcbind; the RDMA listener is one line in nfsd's portlist.
server_up() {
	mkdir -p "$EXP" /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
	run mount -t tmpfs -o size=$((MB * 2 + 64))m tmpfs "$EXP" || return 1
	defer umount "$EXP"
	run modprobe nfsd || return 1
	defer modprobe -r nfsd rpcrdma
	mountpoint -q /proc/fs/nfsd || run mount -t nfsd nfsd /proc/fs/nfsd || return 1
	defer umount /proc/fs/nfsd
	# The grace period (90 s) refuses OPENs after a start: the minimum.
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	echo "$EXP $VRDMA_PAIR_PEER(rw,no_root_squash,insecure,fsid=0,sync)" >/etc/exports
	run exportfs -ra || return 1
	run rpc.mountd -N 2 -N 3 || return 1
	defer pkill -x rpc.mountd
	run rpc.nfsd -N 3 -H "$VRDMA_PAIR_SELF" 4 || return 1
	defer rpc.nfsd 0
	echo "rdma 20049" >/proc/fs/nfsd/portlist || { diag "no rdma listener in portlist"; return 1; }
	grep -q 'rdma 20049' /proc/fs/nfsd/portlist || { diag "portlist: $(cat /proc/fs/nfsd/portlist)"; return 1; }
}

client_mount() {
	mkdir -p "$MNT"
	CMD_TIMEOUT=90 run mount -t nfs4 -o rdma,port=20049,vers=4.2 "$VRDMA_PAIR_PEER:/" "$MNT" || return 1
	defer umount -f "$MNT"
	grep " $MNT " /proc/mounts | grep -q 'proto=rdma' ||
		{ diag "not an RDMA mount: $(grep " $MNT " /proc/mounts)"; return 1; }
}

# copy_check: b writes a random file into the export and reads it back;
# a checksums the exported file. Every sum must agree.
SRC=/tmp/nfs-src
copy_check() {
	local sum peer rx0 rx1
	if pair_is_a; then
		pair_sync written "" 900 >/dev/null || pair_lost written
		sum=$(md5sum <"$EXP/data" | cut -d' ' -f1)
		peer=$(pair_sync sums "$sum" 300) || pair_lost sums
	else
		head -c $((MB * 1048576)) /dev/urandom >"$SRC"
		rx0=$(dp_counter $PAIR_DEV rx_bytes 2>/dev/null)
		local t0=$SECONDS
		timeout 600 cp "$SRC" "$MNT/data" && timeout 120 sync "$MNT/data" || diag "the copy failed"
		diag "$KIND: $MB MB written over NFS/RDMA in $((SECONDS - t0)) s"
		pair_sync written "" 60 >/dev/null || pair_lost written
		# Through the server: drop this client's cache of the file first.
		echo 3 >/proc/sys/vm/drop_caches
		sum=$(timeout 600 md5sum <"$MNT/data" | cut -d' ' -f1)
		[ "$sum" = "$(md5sum <"$SRC" | cut -d' ' -f1)" ] || { diag "read back differs"; sum=bad-readback; }
		rx1=$(dp_counter $PAIR_DEV rx_bytes 2>/dev/null)
		if [ "$KIND" = vrdma ] && [ $((rx1 - rx0)) -lt $((MB * 1048576)) ]; then
			diag "vrdma rx_bytes grew by $((rx1 - rx0)) only"
			sum=not-over-vrdma
		fi
		peer=$(pair_sync sums "$sum" 300) || pair_lost sums
	fi
	[ "$sum" = "$peer" ] || { diag "checksums: here $sum, the other guest $peer"; return 1; }
}

pair_step -f both "$KIND device on $VRDMA_PAIR_IF" pair_dev "$KIND"
pair_step -f a "nfsd with an rdma listener on port 20049" server_up
pair_step -f b "mount -o rdma,port=20049 (proto=rdma)" client_mount
copy_check
ktap_result $? "$MB MB copied to the export and back: checksums agree on b and a"
pair_step b "umount" eval 'umount "$MNT" && run modprobe -r nfsv4 rpcrdma'
cleanup
! lsmod | grep -qE '^(vrdma|rpcrdma|svcrdma) '
ktap_result $? "nfsd stopped, RPC/RDMA and $KIND unloaded (lsmod)"
pair_sync end >/dev/null || pair_lost end
ktap_finished
