#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Guest half of scripts/test-deb, on two guests (scripts/vm/run --pair
# --bare a): guest a is booted as a fresh cloud image, with neither the
# build's vrdma.ko nor its provider, and `dpkg -i`s the two packages of
# `make deb`, so that DKMS builds vrdma.ko for its running kernel; it loads
# it, adds vrdma0 on its virtio-net NIC and serves RC traffic through the
# packaged provider (proved by the path the server process maps) to guest
# b, which runs this tree's build; then a `dpkg --purge`s and checks that
# nothing is left. Guest a's root is an overlay on the host's, so the
# install vanishes at power-off.
# Not a run_all.sh test (needs the host half's packages).
#   deb/guest-install.sh [DEB_DIR]      (default $VRDMA_ROOT/build/deb)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../dp_lib.inc"
. "$(dirname "$0")/../pair_lib.inc"
require_root
require_cmd dpkg dkms ibv_rc_pingpong python3
pair_require
DP_OUT=$(mktemp)
defer rm -f "$DP_OUT"
export DEBIAN_FRONTEND=noninteractive
kver=$(uname -r)
debs=${1:-${VRDMA_ROOT:-$(dirname "$0")/../../..}/build/deb}
dkms_deb=$(ls "$debs"/vrdma-dkms_*_all.deb 2>/dev/null | head -n 1)
prov_deb=$(ls "$debs"/ibverbs-provider-vrdma_*.deb 2>/dev/null | head -n 1)
[ -n "$dkms_deb" ] && [ -n "$prov_deb" ] || skip_all "no packages in $debs (make deb)"
[ -d "/lib/modules/$kver/build" ] || skip_all "no kernel headers for $kver: DKMS cannot build"
ver=$(dpkg-deb -f "$dkms_deb" Version)
# Every file the packages ship (directories are shared with others).
files=$( (dpkg-deb -c "$dkms_deb"; dpkg-deb -c "$prov_deb") | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }')

# Before: nothing of vrdma in the guest, or the test would prove nothing.
nothing_of_vrdma() {
	local f
	for f in $files; do [ -e "$f" ] && { diag "present: $f"; return 1; }; done
	[ ! -e "/var/lib/dkms/vrdma" ] || { diag "present: /var/lib/dkms/vrdma"; return 1; }
	[ ! -e "/usr/src/vrdma-$ver" ] || { diag "present: /usr/src/vrdma-$ver"; return 1; }
	! ls /lib/modules/*/updates/dkms/vrdma.ko* >/dev/null 2>&1 || { diag "present: a DKMS vrdma.ko"; return 1; }
	! modinfo vrdma >/dev/null 2>&1 || { diag "modinfo finds $(modinfo -n vrdma)"; return 1; }
	! ls /usr/lib/*/libibverbs/libvrdma* /etc/libibverbs.d/vrdma.driver >/dev/null 2>&1 ||
		{ diag "a vrdma provider is installed"; return 1; }
}
# The DKMS build is most of the time (under TCG, 15 minutes and more):
# dpkg's output is streamed, and every 60 s the objects built so far are
# counted, so that a timeout says how far it got.
build_progress() {
	local b=/var/lib/dkms/vrdma/$ver/build t=0 total
	total=$(dpkg-deb -c "$dkms_deb" | grep -c '/drivers/vrdma/.*\.c$')
	while sleep 60; do
		t=$((t + 60))
		diag "DKMS build after ${t}s: $(find "$b" -name '*.o' 2>/dev/null | wc -l) objects of $total sources"
	done
}

# deb_install: the checks before and the install itself; returns 1 when
# nothing after it can work.
deb_install() {
	local start rc prog path
	nothing_of_vrdma && ktap_ok "before: no vrdma module, dkms tree or provider in the guest" ||
		{ ktap_fail "before: no vrdma module, dkms tree or provider in the guest"; return 1; }
	start=$(date +%s)
	build_progress &
	prog=$!
	timeout -k 5 "${DEB_INSTALL_TIMEOUT:-2000}" dpkg -i "$dkms_deb" "$prov_deb" 2>&1 |
		grep -v '^debconf' | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	# Its sleep too: it holds the output pipe open for up to a minute.
	pkill -P "$prog" sleep 2>/dev/null
	kill "$prog" 2>/dev/null
	wait "$prog" 2>/dev/null
	if [ "$rc" -eq 0 ]; then
		ktap_ok "dpkg -i $(basename "$dkms_deb") $(basename "$prov_deb") ($(($(date +%s) - start))s, DKMS build included)"
	else
		ktap_fail "dpkg -i both packages (status $rc after $(($(date +%s) - start))s)"
		tail -n 30 "/var/lib/dkms/vrdma/$ver/build/make.log" 2>/dev/null | sed 's/^/# /'
		return 1
	fi
	dkms status vrdma 2>&1 | sed 's/^/# /'
	dkms status -k "$kver" vrdma 2>/dev/null | grep -q 'installed$' &&
		ktap_ok "dkms: vrdma/$ver installed for $kver" || ktap_fail "dkms: vrdma/$ver installed for $kver"
	path=$(modinfo -n vrdma 2>/dev/null)
	case "$path" in
	/lib/modules/$kver/updates/dkms/vrdma.ko*) ktap_ok "modprobe resolves vrdma to the DKMS build $path" ;;
	*) ktap_fail "modprobe resolves vrdma to the DKMS build (got: ${path:-nothing})"; return 1 ;;
	esac
}
# b waits for a's install (a failure included, so that it is not left
# waiting for the barrier's timeout).
rc=0
pair_is_a && { deb_install; rc=$?; }
theirs=$(pair_sync installed "$rc" "${DEB_INSTALL_TIMEOUT:-2000}") || pair_lost installed
pair_is_a || ktap_result "$theirs" "guest a installed the packages (status $theirs)"
[ "$rc" = 0 ] && [ "$theirs" = 0 ] || ktap_finished

# Traffic between the guests: a serves (packaged), b connects to a.
so=$(dpkg -L ibverbs-provider-vrdma 2>/dev/null | grep '/libibverbs/libvrdma-rdmav[0-9]*\.so$')
pair_is_a && diag "packaged provider: ${so:-none}"
server_maps() {	# the vrdma provider the listening server has mapped
	local p
	p=$(pgrep -x ibv_rc_pingpong | head -n 1) || return 1
	grep -o '/[^ ]*libvrdma[^ ]*\.so' "/proc/$p/maps" | head -n 1 | grep .
}
listening() { ss -Hltn 'sport = :18515' | grep -q .; }
pair_step -f both "modprobe vrdma, rdma link add vrdma0 on $VRDMA_PAIR_IF" pair_dev vrdma
rc=0
if pair_is_a; then
	timeout -k 2 120 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID" -n 200 -s 4096 -c >"$DP_OUT" 2>&1 &
	pp=$!
	# It listens once its device, provider and QP are set up.
	wait_until 20 listening
	mapped=$(server_maps)
	if [ -n "$so" ] && [ "$mapped" = "$so" ] && [ "$(dpkg -S "$mapped" 2>/dev/null | cut -d: -f1)" = ibverbs-provider-vrdma ]; then
		ktap_ok "the server maps the packaged provider $mapped"
	else
		ktap_fail "the server maps the packaged provider (maps: ${mapped:-nothing}, package: ${so:-nothing})"
	fi
	pair_sync serving "" 120 >/dev/null || pair_lost serving
	wait "$pp" || rc=$?
else
	pair_sync serving "" 120 >/dev/null || pair_lost serving
	timeout -k 2 120 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID" -n 200 -s 4096 -c \
		"$VRDMA_PAIR_PEER" >"$DP_OUT" 2>&1 || rc=$?
fi
[ "$rc" = 0 ] || diag "ibv_rc_pingpong exit $rc: $(tail -n 3 "$DP_OUT" | tr '\n' ' ')"
theirs=$(pair_sync pingpong-done "$rc" 180) || pair_lost pingpong-done
[ "$rc" = 0 ] && [ "$theirs" = 0 ]
ktap_result $? "ibv_rc_pingpong -c 4096 B x 200 between a (packaged) and b (this build) (exit $rc here, $theirs there): $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
# Link and module: gone before the purge removes the module file.
cleanup
[ ! -d /sys/module/vrdma ] && ktap_ok "modprobe -r vrdma" || ktap_fail "modprobe -r vrdma"

pair_is_a || { pair_sync end "" 900 >/dev/null; ktap_finished; }
if CMD_TIMEOUT=300 run dpkg --purge vrdma-dkms ibverbs-provider-vrdma; then
	ktap_ok "dpkg --purge vrdma-dkms ibverbs-provider-vrdma"
else
	ktap_fail "dpkg --purge vrdma-dkms ibverbs-provider-vrdma"
fi
st=$(dpkg-query -W -f='${db:Status-Abbrev} ' vrdma-dkms ibverbs-provider-vrdma 2>/dev/null)
case "$st" in *i*|*c*|*h*) ktap_fail "dpkg knows neither package any more (status: $st)" ;;
*) ktap_ok "dpkg knows neither package any more" ;; esac
nothing_of_vrdma && ktap_ok "after purge: no module, no dkms tree, no packaged file" ||
	ktap_fail "after purge: no module, no dkms tree, no packaged file"
pair_sync end "" 900 >/dev/null
ktap_finished
