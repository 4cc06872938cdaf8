#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kselftest-style runner for selftests/vrdma: runs every *.sh test next to
# it (or the ones named on the command line) under the `settings` timeout and
# prints nested TAP. Exit 0 when nothing failed. Meant to run in the guest:
#   scripts/vm/run selftests/vrdma/run_all.sh [TEST.sh...]
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(cd "$(dirname "$0")" && pwd)
timeout=300
[ -f "$dir/settings" ] && timeout=$(sed -n 's/^timeout=//p' "$dir/settings")
# A slower kernel (the debug kernel) raises it: SELFTEST_TIMEOUT=S.
[ -n "${SELFTEST_TIMEOUT:-}" ] && timeout=$SELFTEST_TIMEOUT
# SELFTEST_BUDGET=S: the whole run must end within S seconds (a caller's
# own limit): a test gets at most what is left, and one that would start
# with less than SELFTEST_MIN seconds left is skipped ("out of time").
budget=${SELFTEST_BUDGET:-}
min_left=${SELFTEST_MIN:-0}
t_start=$(date +%s)

if [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=()
	for t in "$dir"/*.sh; do
		case "$(basename "$t")" in
		lib.sh|run_all.sh) ;;
		*) tests+=("$(basename "$t")") ;;
		esac
	done
fi

# What a test leaves behind when it is killed: its cleanup trap runs on
# the timeout's SIGTERM, but on a slow (debug) kernel deleting links and
# namespaces can outlast the grace period, and the SIGKILL then leaves
# them for the next test ("rdma link add vrdma1: File exists"). So the
# grace is long, and after each test whatever rdma link, netns or netdev
# (of the initial namespace) it added is removed here, said in a
# diagnostic line.
rdma_links() { rdma link show 2>/dev/null | awk '$1 == "link" { sub("/.*", "", $2); print $2 }'; }
netns_names() { ip netns list 2>/dev/null | awk '{ print $1 }'; }
netdevs() { ip -o link show 2>/dev/null | awk -F': ' '{ sub("@.*", "", $2); print $2 }'; }
sweep() {	# sweep LINKS_BEFORE NETNS_BEFORE NETDEVS_BEFORE
	local l n
	for l in $(rdma_links); do
		grep -qx "$l" <<<"$1" && continue
		echo "# run_all: $t left rdma link $l: deleting it"
		timeout -k 5 60 rdma link del "$l"
	done
	for n in $(netns_names); do
		grep -qx "$n" <<<"$2" && continue
		echo "# run_all: $t left netns $n: deleting it"
		timeout -k 5 60 ip netns del "$n"
	done
	for n in $(netdevs); do
		grep -qx "$n" <<<"$3" && continue
		echo "# run_all: $t left netdev $n: deleting it"
		timeout -k 5 60 ip link del "$n"
	done
}

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 failed=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	echo "# selftests: vrdma: $t"
	start=$(date +%s)
	limit=$timeout
	if [ -n "$budget" ]; then
		left=$((budget - (start - t_start)))
		if [ "$left" -lt "$min_left" ] || [ "$left" -le 0 ]; then
			echo "ok $n selftests: vrdma: $t # SKIP out of time (${left}s left of SELFTEST_BUDGET=$budget)"
			continue
		fi
		[ "$left" -lt "$limit" ] && limit=$left
	fi
	links=$(rdma_links) nss=$(netns_names) devs=$(netdevs)
	timeout -k 120 "$limit" bash "$dir/$t" 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	sweep "$links" "$nss" "$devs"
	secs=$(($(date +%s) - start))
	case $rc in
	0) echo "ok $n selftests: vrdma: $t # ${secs}s" ;;
	4) echo "ok $n selftests: vrdma: $t # SKIP" ;;
	124) echo "not ok $n selftests: vrdma: $t # TIMEOUT ${limit} seconds"; failed=1 ;;
	137) echo "not ok $n selftests: vrdma: $t # TIMEOUT ${limit} seconds, killed after 120 s more"; failed=1 ;;
	*) echo "not ok $n selftests: vrdma: $t # exit=$rc"; failed=1 ;;
	esac
done
exit $failed
