# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host-side helpers of the VM harness: find the guest kernel, extract its
# vmlinux for a direct PVH boot, build the small initramfs, pick KVM or TCG.
# Sourced by scripts/vm/run; everything it builds lives in $VM_CACHE.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
VM_CACHE=${VM_CACHE:-$REPO/build/vm}
# What stage 1 needs to reach the host's filesystem (dependency order).
VM_INITRD_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev
	virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay"

vm_log() { echo "vm: $*" >&2; }

# Newest Debian 6.1 generic kernel that has both an image and its modules
# (else any 6.1, else any kernel).
vm_pick_kernel() {
	local img all
	all=$(for img in /boot/vmlinuz-*; do
		[ -d "/lib/modules/${img#/boot/vmlinuz-}/kernel" ] && echo "${img#/boot/vmlinuz-}"
	done | sort -V)
	[ -n "$all" ] || return 1
	# Debian's generic flavour first: cloud kernels lack 9p and most drivers.
	echo "$all" | grep '^6\.1\.' | grep -Ev 'cloud|-rt-' | tail -n 1 | grep . ||
		echo "$all" | grep '^6\.1\.' | tail -n 1 | grep . || echo "$all" | tail -n 1
}

# An extract-vmlinux script: from a kernel tree if one is around, else out
# of Debian's linux-source tarball (once, cached).
vm_extract_script() {
	local s
	for s in "$VM_CACHE/extract-vmlinux" /opt/ksrc/linux-source-6.1/scripts/extract-vmlinux \
		 /usr/src/linux-headers-*/scripts/extract-vmlinux \
		 /usr/lib/linux-kbuild-*/scripts/extract-vmlinux; do
		[ -f "$s" ] && { echo "$s"; return 0; }
	done
	for s in /usr/src/linux-source-6.1.tar.xz /usr/src/linux-source-*.tar.xz; do
		[ -f "$s" ] || continue
		local top
		top=$(basename "$s" .tar.xz)
		vm_log "extracting scripts/extract-vmlinux from $s"
		if tar -xJf "$s" -O "$top/scripts/extract-vmlinux" >"$VM_CACHE/extract-vmlinux.tmp" 2>/dev/null &&
		   [ -s "$VM_CACHE/extract-vmlinux.tmp" ]; then
			mv "$VM_CACHE/extract-vmlinux.tmp" "$VM_CACHE/extract-vmlinux"
			echo "$VM_CACHE/extract-vmlinux"
			return 0
		fi
		rm -f "$VM_CACHE/extract-vmlinux.tmp"
	done
	return 1
}

# Path of the image to boot: the uncompressed ELF vmlinux (PVH entry, ~2x
# faster to start) or, failing that, the bzImage itself.
vm_kernel_image() {
	local ver=$1 out="$VM_CACHE/$1/vmlinux" s
	if [ -s "$out" ] && [ "$out" -nt "/boot/vmlinuz-$ver" ]; then
		echo "$out"
		return 0
	fi
	mkdir -p "$VM_CACHE/$ver"
	if s=$(vm_extract_script); then
		if bash "$s" "/boot/vmlinuz-$ver" >"$out.tmp" 2>/dev/null &&
		   [ "$(head -c 4 "$out.tmp" | tail -c 3)" = "ELF" ]; then
			mv "$out.tmp" "$out"
			echo "$out"
			return 0
		fi
		rm -f "$out.tmp"
	fi
	vm_log "no vmlinux could be extracted; booting the bzImage (slower)"
	echo "/boot/vmlinuz-$ver"
}

# Stage-1 initramfs: busybox, virtio/9p/overlay modules, initramfs-init.
# BASE (default /) holds lib/modules/VER; a module built into the kernel
# is left out and initramfs-init skips it. Another BASE is the debug
# kernel's, which has all of them built in (or not needed, as fscache
# without 9P_FSCACHE): its image carries none.
vm_initramfs() {
	local ver=$1 base=${2:-/} out="$VM_CACHE/$1/initramfs.cpio.gz" tmp m path mods=$VM_INITRD_MODULES
	[ "$base" = / ] || mods=
	if [ -s "$out" ] && [ "$out" -nt "$VM_DIR/initramfs-init" ] &&
	   [ "$out" -nt "$base/lib/modules/$ver/modules.dep" ]; then
		echo "$out"
		return 0
	fi
	command -v busybox >/dev/null || { vm_log "busybox-static is not installed"; return 1; }
	tmp=$(mktemp -d "$VM_CACHE/initramfs.XXXXXX")
	mkdir -p "$VM_CACHE/$ver" "$tmp"/{bin,dev,proc,sys,modules}
	cp "$(command -v busybox)" "$tmp/bin/busybox"
	for m in sh mount umount insmod mkdir switch_root echo cat sleep ls; do
		ln -s busybox "$tmp/bin/$m"
	done
	for m in $mods; do
		path=$(modinfo -b "$base" -k "$ver" -n "$m" 2>/dev/null) || { vm_log "module $m missing for $ver"; rm -rf "$tmp"; return 1; }
		case "$path" in
		"(builtin)") ;;
		*.ko) cp "$path" "$tmp/modules/$m.ko" ;;
		*.ko.xz) xz -dc "$path" >"$tmp/modules/$m.ko" ;;
		*.ko.zst) zstd -qdc "$path" >"$tmp/modules/$m.ko" ;;
		*.ko.gz) gzip -dc "$path" >"$tmp/modules/$m.ko" ;;
		*) vm_log "module $m: unexpected path $path"; rm -rf "$tmp"; return 1 ;;
		esac
	done
	install -m 0755 "$VM_DIR/initramfs-init" "$tmp/init"
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" || { rm -rf "$tmp"; return 1; }
	mv "$out.tmp" "$out"
	rm -rf "$tmp"
	echo "$out"
}

# KVM when it really works (tried once and cached), TCG otherwise.
vm_accel() {
	local img=$1 cache="$VM_CACHE/accel" probe
	case "${VRDMA_VM_ACCEL:-}" in
	kvm) echo kvm; return ;;
	tcg) echo tcg; return ;;
	esac
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	if [ -s "$cache" ]; then
		cat "$cache"
		return
	fi
	# Boot the kernel with no root: it must print its banner, then panic
	# (panic=-1 reboots, -no-reboot ends QEMU).
	probe=$(mktemp)
	timeout -k 5 30 qemu-system-x86_64 -M pc -accel kvm -cpu host -m 512M -smp 1 \
		-nodefaults -no-reboot -display none -kernel "$img" \
		-append "console=ttyS0 panic=-1" -serial "file:$probe" >/dev/null 2>&1
	if grep -q "Linux version" "$probe"; then echo kvm >"$cache"; else echo tcg >"$cache"; fi
	rm -f "$probe"
	cat "$cache"
}
