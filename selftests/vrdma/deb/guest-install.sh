#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Guest half of scripts/test-deb: in a guest booted with neither the
# build's vrdma.ko nor its provider (--no-ko --no-provider), `dpkg -i` the
# two packages of `make deb`, so that DKMS builds vrdma.ko for the running
# kernel; load it, run RC traffic between two namespaces through the
# packaged provider (proved by the path the server process maps), then
# `dpkg --purge` and check that nothing is left. The guest's root is an
# overlay on the host's, so the install vanishes at power-off.
# Not a run_all.sh test (needs the host half's packages).
#   deb/guest-install.sh [DEB_DIR]      (default $VRDMA_ROOT/build/deb)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../dp_lib.inc"
require_root
require_cmd dpkg dkms ibv_rc_pingpong
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
nothing_of_vrdma && ktap_ok "before: no vrdma module, dkms tree or provider in the guest" ||
	{ ktap_fail "before: no vrdma module, dkms tree or provider in the guest"; ktap_finished; }

# The DKMS build is most of the time (under TCG on a loaded host, more
# than 15 minutes once): dpkg's output is streamed, and every 60 s the
# objects built so far are counted, so that a timeout says how far it got.
build_progress() {
	local b=/var/lib/dkms/vrdma/$ver/build t=0 total
	total=$(dpkg-deb -c "$dkms_deb" | grep -c '/drivers/vrdma/.*\.c$')
	while sleep 60; do
		t=$((t + 60))
		diag "DKMS build after ${t}s: $(find "$b" -name '*.o' 2>/dev/null | wc -l) objects of $total sources"
	done
}
start=$(date +%s)
build_progress &
prog=$!
timeout -k 5 "${DEB_INSTALL_TIMEOUT:-1500}" dpkg -i "$dkms_deb" "$prov_deb" 2>&1 |
	grep -v '^debconf' | sed 's/^/# /'
rc=${PIPESTATUS[0]}
# Its sleep too: it holds the output pipe open for up to a minute.
pkill -P "$prog" sleep 2>/dev/null
kill "$prog" 2>/dev/null
if [ "$rc" -eq 0 ]; then
	ktap_ok "dpkg -i $(basename "$dkms_deb") $(basename "$prov_deb") ($(($(date +%s) - start))s, DKMS build included)"
else
	ktap_fail "dpkg -i both packages (status $rc after $(($(date +%s) - start))s)"
	tail -n 30 "/var/lib/dkms/vrdma/$ver/build/make.log" 2>/dev/null | sed 's/^/# /'
	ktap_finished
fi
dkms status vrdma 2>&1 | sed 's/^/# /'
dkms status -k "$kver" vrdma 2>/dev/null | grep -q 'installed$' &&
	ktap_ok "dkms: vrdma/$ver installed for $kver" || ktap_fail "dkms: vrdma/$ver installed for $kver"
path=$(modinfo -n vrdma 2>/dev/null)
case "$path" in
/lib/modules/$kver/updates/dkms/vrdma.ko*) ktap_ok "modprobe resolves vrdma to the DKMS build $path" ;;
*) ktap_fail "modprobe resolves vrdma to the DKMS build (got: ${path:-nothing})"; ktap_finished ;;
esac

# Traffic. Two guests do not exist yet: the two hosts are two network
# namespaces of this guest joined by a veth pair, as in the other tests.
so=$(dpkg -L ibverbs-provider-vrdma | grep '/libibverbs/libvrdma-rdmav[0-9]*\.so$')
diag "packaged provider: ${so:-none}"
server_maps() {	# the vrdma provider the running server has mapped
	local p
	p=$(pgrep -x ibv_rc_pingpong | head -n 1) || return 1
	grep -o '/[^ ]*libvrdma[^ ]*\.so' "/proc/$p/maps" | head -n 1 | grep .
}
if dp_setup; then
	ktap_ok "modprobe vrdma, rdma link add vrdma1/vrdma2 in two namespaces"
	ip netns exec "$H1" timeout -k 2 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s 4096 -c \
		>"$DP_OUT.srv" 2>&1 &
	srv=$!
	mapped=
	wait_until 20 server_maps >/dev/null && mapped=$(server_maps)
	if [ -n "$so" ] && [ "$mapped" = "$so" ] && [ "$(dpkg -S "$mapped" 2>/dev/null | cut -d: -f1)" = ibverbs-provider-vrdma ]; then
		ktap_ok "the server maps the packaged provider $mapped"
	else
		ktap_fail "the server maps the packaged provider (maps: ${mapped:-nothing}, package: ${so:-nothing})"
	fi
	for t in $(seq 1 40); do
		sleep 0.5
		ip netns exec "$H2" timeout -k 2 90 ibv_rc_pingpong -d vrdma2 -g "$G2" -n 40 -s 4096 -c "$H1_IP" >"$DP_OUT" 2>&1
		rc=$?
		grep -qiE "couldn't connect|unable to connect|Connection refused" "$DP_OUT" || break
	done
	wait "$srv"
	src=$?
	if [ "$rc" -eq 0 ] && [ "$src" -eq 0 ]; then
		ktap_ok "ibv_rc_pingpong -c 4096 B x 40 between the namespaces: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		diag "client rc=$rc: $(tail -n 3 "$DP_OUT" | tr '\n' ' ') server rc=$src: $(tail -n 3 "$DP_OUT.srv" | tr '\n' ' ')"
		ktap_fail "ibv_rc_pingpong -c between the namespaces"
	fi
else
	ktap_fail "modprobe vrdma, rdma link add vrdma1/vrdma2 in two namespaces"
fi
# Links, namespaces, module: gone before the purge removes the module file.
cleanup
[ ! -d /sys/module/vrdma ] && ktap_ok "modprobe -r vrdma" || ktap_fail "modprobe -r vrdma"

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
ktap_finished
