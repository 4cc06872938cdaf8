# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Helpers for the vrdma selftests, in the manner of
# tools/testing/selftests/net/lib.sh: TAP output, unique namespace names,
# one cleanup trap, the two-hosts topology and the single-namespace wire.
# Source it, then call ktap_ok/ktap_fail/ktap_skip per check and end with
# ktap_finished (exit 0 pass, 1 fail, 4 skip).

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

VRDMA_SELFTESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Real tools first: busybox applets must never shadow ip/tc/modprobe/timeout.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Per-command time limit (seconds) for anything that could block.
CMD_TIMEOUT=${CMD_TIMEOUT:-30}

ktap_n=0
ktap_npass=0
ktap_nfail=0
ktap_nskip=0
# Set VRDMA_LIB_QUIET=1 before sourcing to use the helpers without TAP.
[ -n "${VRDMA_LIB_QUIET:-}" ] || echo "TAP version 13"

ktap_ok() { ktap_n=$((ktap_n + 1)); ktap_npass=$((ktap_npass + 1)); echo "ok $ktap_n $*"; }
ktap_fail() { ktap_n=$((ktap_n + 1)); ktap_nfail=$((ktap_nfail + 1)); echo "not ok $ktap_n $*"; }
ktap_skip() {
	local desc=$1
	shift
	ktap_n=$((ktap_n + 1)); ktap_nskip=$((ktap_nskip + 1))
	echo "ok $ktap_n $desc # SKIP $*"
}
# ktap_result STATUS DESC: 0 ok, 4 skip, anything else not ok.
ktap_result() {
	local rc=$1
	shift
	case "$rc" in
	0) ktap_ok "$@" ;;
	4) ktap_skip "$@" ;;
	*) ktap_fail "$@" ;;
	esac
}
diag() { echo "# $*"; }

# Prints the plan and exits: 1 on any failure, 4 when all were skipped.
ktap_finished() {
	echo "1..$ktap_n"
	diag "pass:$ktap_npass fail:$ktap_nfail skip:$ktap_nskip"
	[ "$ktap_nfail" -eq 0 ] || exit $KSFT_FAIL
	[ "$ktap_npass" -eq 0 ] && [ "$ktap_nskip" -gt 0 ] && exit $KSFT_SKIP
	exit $KSFT_PASS
}

# Skip the whole test (nothing ran): prints a one-line plan and exits 4.
skip_all() { echo "1..0 # SKIP $*"; exit $KSFT_SKIP; }

# Run a command under the per-command timeout, logging it on failure.
run() {
	local out rc
	out=$(timeout -k 2 "$CMD_TIMEOUT" "$@" 2>&1)
	rc=$?
	[ $rc -eq 0 ] || { diag "'$*' failed ($rc): $out"; }
	[ -n "${VERBOSE:-}" ] && [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/# /'
	return $rc
}
# Same, but the command is expected to fail; returns 0 when it did.
run_fail() {
	local out rc
	out=$(timeout -k 2 "$CMD_TIMEOUT" "$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		diag "'$*' succeeded but should have failed"
		return 1
	fi
	diag "'$*' failed as expected ($rc): $out"
	return 0
}

require_root() { [ "$(id -u)" -eq 0 ] || skip_all "must run as root"; }
require_cmd() {
	local c
	for c in "$@"; do command -v "$c" >/dev/null || skip_all "$c is not installed"; done
}
# The module can be loaded by name (scripts/vm/run installs ./vrdma.ko into
# /lib/modules/<ver>/updates).
require_vrdma() { modinfo vrdma >/dev/null 2>&1 || skip_all "vrdma.ko is not installed"; }

# ---- cleanup: a stack of commands run at exit, newest first --------------
cleanup_cmds=()
defer() { cleanup_cmds+=("$*"); }
cleanup() {
	local i
	for ((i = ${#cleanup_cmds[@]} - 1; i >= 0; i--)); do
		eval "timeout -k 2 $CMD_TIMEOUT ${cleanup_cmds[i]}" >/dev/null 2>&1
	done
	cleanup_cmds=()
}
trap cleanup EXIT

# setup_ns VAR...: creates one network namespace per VAR with a unique name
# (VAR-XXXXXX), stores the name in VAR, brings lo up, deletes it at exit.
setup_ns() {
	local var name
	for var in "$@"; do
		name="${var,,}-$(mktemp -u XXXXXX)"
		ip netns add "$name" || return 1
		defer ip netns del "$name"
		ip -n "$name" link set lo up
		ip netns exec "$name" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 >/dev/null
		eval "$var=\$name"
	done
}

# netem from the harness (scripts/vm/run --loss/--delay): VRDMA_NETEM, e.g.
# "loss 1% delay 100us"; applied to both ends of the test wire.
apply_netem() {
	local ns=$1 dev=$2
	[ -n "${VRDMA_NETEM:-}" ] || return 0
	# shellcheck disable=SC2086
	if [ -n "$ns" ]; then
		ip netns exec "$ns" tc qdisc replace dev "$dev" root netem $VRDMA_NETEM
	else
		tc qdisc replace dev "$dev" root netem $VRDMA_NETEM
	fi
}

# Two hosts: namespaces $H1 and $H2 joined by a veth pair ($H1_IF <-> $H2_IF)
# with IPv4 10.231.0.1/.2 and IPv6 fd00:231::1/::2, netem from the env.
H1_IP=10.231.0.1
H2_IP=10.231.0.2
H1_IP6=fd00:231::1
H2_IP6=fd00:231::2
two_hosts() {
	setup_ns H1 H2 || return 1
	H1_IF=veth1
	H2_IF=veth2
	ip link add "$H1_IF" netns "$H1" type veth peer name "$H2_IF" netns "$H2" || return 1
	ip -n "$H1" addr add "$H1_IP/24" dev "$H1_IF"
	ip -n "$H2" addr add "$H2_IP/24" dev "$H2_IF"
	ip -n "$H1" -6 addr add "$H1_IP6/64" dev "$H1_IF" nodad
	ip -n "$H2" -6 addr add "$H2_IP6/64" dev "$H2_IF" nodad
	ip -n "$H1" link set "$H1_IF" up
	ip -n "$H2" link set "$H2_IF" up
	apply_netem "$H1" "$H1_IF" && apply_netem "$H2" "$H2_IF" || return 1
	ip netns exec "$H1" ping -c 1 -W 5 "$H2_IP" >/dev/null || { diag "two_hosts: no IPv4 ping"; return 1; }
}

# The single-namespace wire (../shared/VM-NOTES.md): rxe on 6.1 only works in
# init_net, so both ends of a veth pair stay there and policy routing forces
# traffic between the two addresses over the veth instead of lo.
W1_IF=vw1
W2_IF=vw2
W1_IP=10.232.0.1
W2_IP=10.232.0.2
wire_single() {
	local mac1 mac2
	ip link add "$W1_IF" type veth peer name "$W2_IF" || return 1
	defer ip link del "$W1_IF"
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0 >/dev/null
	sysctl -qw "net.ipv4.conf.$W1_IF.accept_local=1" "net.ipv4.conf.$W2_IF.accept_local=1" \
		"net.ipv4.conf.$W1_IF.rp_filter=0" "net.ipv4.conf.$W2_IF.rp_filter=0" >/dev/null
	ip addr add "$W1_IP/32" dev "$W1_IF"
	ip addr add "$W2_IP/32" dev "$W2_IF"
	ip link set "$W1_IF" up
	ip link set "$W2_IF" up
	mac1=$(cat "/sys/class/net/$W1_IF/address")
	mac2=$(cat "/sys/class/net/$W2_IF/address")
	# Locally generated traffic to the peer address leaves by the veth...
	ip route add "$W2_IP/32" dev "$W1_IF" src "$W1_IP" table 100
	ip route add "$W1_IP/32" dev "$W2_IF" src "$W2_IP" table 100
	ip rule add pref 100 to "$W2_IP" iif lo lookup 100
	ip rule add pref 100 to "$W1_IP" iif lo lookup 100
	# ...and the local table (pref 0) moves below it; arrivals still match it.
	if ip rule show pref 0 | grep -q local; then
		ip rule add pref 1000 lookup local
		ip rule del pref 0 lookup local
		defer "ip rule add pref 0 lookup local; ip rule del pref 1000 lookup local"
	fi
	defer "ip rule del pref 100 to $W2_IP iif lo lookup 100; ip rule del pref 100 to $W1_IP iif lo lookup 100"
	# rdma_cm's check of an incoming REQ (cma.c validate_ipv4_net_dev) is a
	# fib_lookup of the peer's address bound to the receiving netdev, with
	# no iif: the rules above do not match it and the local table's entry
	# names the other veth end, so without a route in main every connect
	# was rejected. Only that lookup reaches these: local output matches
	# pref 100 first, arrivals the local table.
	ip route add "$W1_IP/32" dev "$W2_IF"
	ip route add "$W2_IP/32" dev "$W1_IF"
	ip neigh replace "$W2_IP" lladdr "$mac2" dev "$W1_IF" nud permanent
	ip neigh replace "$W1_IP" lladdr "$mac1" dev "$W2_IF" nud permanent
	apply_netem "" "$W1_IF" && apply_netem "" "$W2_IF" || return 1
}

# gid_index DEV IP: the index of DEV's port-1 GID that is IPv4 address IP
# (IPv4-mapped), or nothing (the bench and its profile workload).
gid_index() {
	local dev=$1 ip=$2 hex f
	# shellcheck disable=SC2086 # the four octets, one word each
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		grep -q "0000:0000:0000:0000:0000:ffff:$hex" "$f" 2>/dev/null && { basename "$f"; return; }
	done
}

# tx packet counter of a netdev (optionally in a namespace).
tx_packets() {
	if [ -n "${2:-}" ]; then
		ip netns exec "$2" cat "/sys/class/net/$1/statistics/tx_packets"
	else
		cat "/sys/class/net/$1/statistics/tx_packets"
	fi
}

# Names of the RDMA devices of a given link type ("vrdma", "rxe").
rdma_links() { rdma link show 2>/dev/null | awk '{ print $2 }' | cut -d/ -f1; }
rdma_has() { rdma_links | grep -qx "$1"; }
ibv_has() { ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }' | grep -qx "$1"; }
# Every ib_device in the system, one per line (sorted), for before/after checks.
ib_devs() { ls /sys/class/infiniband 2>/dev/null | sort | tr '\n' ' '; }

# wait_until SECONDS CMD...: polls CMD every 0.1 s.
wait_until() {
	local deadline=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}
