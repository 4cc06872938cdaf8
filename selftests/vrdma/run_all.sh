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

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 failed=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	echo "# selftests: vrdma: $t"
	start=$(date +%s)
	timeout -k 5 "$timeout" bash "$dir/$t" 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	case $rc in
	0) echo "ok $n selftests: vrdma: $t # ${secs}s" ;;
	4) echo "ok $n selftests: vrdma: $t # SKIP" ;;
	124) echo "not ok $n selftests: vrdma: $t # TIMEOUT ${timeout} seconds"; failed=1 ;;
	*) echo "not ok $n selftests: vrdma: $t # exit=$rc"; failed=1 ;;
	esac
done
exit $failed
