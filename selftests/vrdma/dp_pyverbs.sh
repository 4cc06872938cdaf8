#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core's pyverbs test suite (Debian's python3-pyverbs and the tests
# it ships in /usr/share/doc/rdma-core/tests) over one vrdma device, with
# --gid the device's IPv4 GID (docs/pyverbs.md). Every non-vendor module
# runs, in one python process under a time limit (PYVERBS_SECS, 240 s;
# PYVERBS_EACH=1: one process per module, 120 s each); each unittest case
# is one TAP point: ok, not ok (ERROR, FAIL), or SKIP with the suite's
# reason; a timeout fails and names the case that was running. A skip is
# accepted only when its reason is one that docs/pyverbs.md explains
# (PYV_SKIPS below); anything else fails, so that a feature that stops
# working cannot hide behind a skip.
# PYVERBS_DRIVER=rxe runs the same suite over rdma_rxe instead (for the
# comparison in the docs; rxe's skips are reported, not judged).
# PYVERBS_MODULES="test_qp test_mr" picks modules.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd python3 rdma
PYV_SRC=/usr/share/doc/rdma-core/tests
[ -f "$PYV_SRC/run_tests.py" ] && python3 -c 'import pyverbs.device' 2>/dev/null ||
	skip_all "python3-pyverbs (and its tests in $PYV_SRC) not installed"
DRIVER=${PYVERBS_DRIVER:-vrdma}
if [ "$DRIVER" = vrdma ]; then
	require_vrdma
	require_provider
fi

# Skip reasons docs/pyverbs.md explains (extended regex on the reason).
PYV_SKIPS=(
	"^'Device memory is not supported'"		# no ibv_alloc_dm
	"^'ODP is not supported"			# no on-demand paging
	"^'Create XRCD is not supported'"		# no XRC
	"^'Parent Domain is not supported"		# no parent domains
	"^'Create Raw Packet QP .*is not supported'"	# RC, UC, UD, GSI only
	"^'Create QP type 8 is not supported'"		# raw packet (flow steering)
	"^'Extended QP is not supported on this device'"	# atomic write
	"^'Extended CQ is not supported'"		# tag matching CQ fields
	"^'Importing a device is not supported'"	# no import_context
	# of the guest, not of the driver:
	"^'Allocating dmabuf is not supported by "	# no GPU render node
	"^'cuda-python"					# no CUDA
	"^'There are no huge pages"			# none reserved
	"^\"Device [a-z0-9]+ doesn't have net interface\""	# netdev without a parent device
)
# Known failures (docs/pyverbs.md): reported as SKIP with the reason; a
# listed case that passes fails the test until it leaves the list.
declare -A PYV_KNOWN=()

WORK=$(mktemp -d)
defer rm -rf "$WORK"
cp -r "$PYV_SRC" "$WORK/tests"
gunzip -f "$WORK"/tests/*.gz

PV_IF=pv1
PV_PEER=pv2
PV_IP=10.234.0.1
PV_IP6=fd00:234::1
if [ "$DRIVER" = vrdma ]; then
	run modprobe vrdma ${VRDMA_MODOPTS:-} || { ktap_fail "modprobe vrdma"; ktap_finished; }
	defer modprobe -r vrdma
	setup_ns PV || { ktap_fail "namespace"; ktap_finished; }
	NSX=(ip netns exec "$PV")
	DEV=vrdma1
else
	run modprobe rdma_rxe || { ktap_fail "modprobe rdma_rxe"; ktap_finished; }
	defer modprobe -r rdma_rxe
	PV=""
	NSX=()
	DEV=rxe1
fi
ip ${PV:+-n "$PV"} link add "$PV_IF" type veth peer name "$PV_PEER" || {
	ktap_fail "veth"; ktap_finished; }
[ -n "$PV" ] || defer ip link del "$PV_IF"
ip ${PV:+-n "$PV"} addr add "$PV_IP/24" dev "$PV_IF"
ip ${PV:+-n "$PV"} -6 addr add "$PV_IP6/64" dev "$PV_IF" nodad
ip ${PV:+-n "$PV"} link set "$PV_IF" up
ip ${PV:+-n "$PV"} link set "$PV_PEER" up
run "${NSX[@]}" rdma link add "$DEV" type "$DRIVER" netdev "$PV_IF" ||
	{ ktap_fail "rdma link add $DEV"; ktap_finished; }
defer "${NSX[*]}" rdma link del "$DEV"
pv_gid_ready() { "${NSX[@]}" bash -c ". $VRDMA_SELFTESTS/dp_lib.inc; dp_gid4 $DEV" >/dev/null; }
wait_until 10 pv_gid_ready || { ktap_fail "no IPv4 GID on $DEV"; ktap_finished; }
GID=$("${NSX[@]}" bash -c ". $VRDMA_SELFTESTS/dp_lib.inc; dp_gid4 $DEV")
diag "$DRIVER device $DEV, IPv4 GID index $GID"

if [ -n "${PYVERBS_MODULES:-}" ]; then
	read -r -a mods <<<"$PYVERBS_MODULES"
else
	mods=()
	for f in "$WORK"/tests/test_*.py; do
		m=$(basename "$f" .py)
		case "$m" in test_mlx5_*|test_efa*) continue ;; esac
		mods+=("$m")
	done
fi

skip_known() {
	local r
	for r in "${PYV_SKIPS[@]}"; do
		[[ $1 =~ $r ]] && return 0
	done
	return 1
}

# pv_run LABEL MODULE...: one python process over the modules, under
# $SECS; every case it reports is a TAP point.
pv_run() {
	local label=$1 start rc name res reason last
	shift
	start=$(date +%s)
	timeout -k 5 "$SECS" "${NSX[@]}" python3 "$WORK/tests/run_tests.py" \
		--dev "$DEV" --gid "$GID" -v "${@/#/tests.}" >"$WORK/$label.log" 2>&1
	rc=$?
	diag "$label: exit $rc in $(($(date +%s) - start)) s"
	# "name (tests.mod.Class.name) ... RESULT", the description line of a
	# docstring between them, or the result on a later line after output.
	# (No process substitution: the guest has no /dev/fd.)
	awk '
		match($0, /^[a-zA-Z0-9_]+ \(tests\.[^)]*\)/) {
			split(substr($0, RSTART, RLENGTH), a, /[ ()]/)
			cur = a[3]; sub(/^tests\./, "", cur)
		}
		cur != "" && match($0, / \.\.\. (ok|ERROR|FAIL|skipped .*|expected failure|unexpected success)$/) {
			r = substr($0, RSTART + 5); print cur "\t" r; cur = ""
		}
		cur != "" && /^(ok|ERROR|FAIL|skipped .*)$/ { print cur "\t" $0; cur = "" }
	' "$WORK/$label.log" >"$WORK/$label.res"
	while IFS=$'\t' read -r name res; do
		if [ "$DRIVER" = vrdma ] && [ -n "${PYV_KNOWN[$name]:-}" ]; then
			case "$res" in
			ok) ktap_fail "$name # passes: take it off PYV_KNOWN" ;;
			ERROR|FAIL) ktap_skip "$name" "known failure ($res): ${PYV_KNOWN[$name]}" ;;
			*) ktap_fail "$name # $res (listed as a known failure)" ;;
			esac
			continue
		fi
		case "$res" in
		ok) ktap_ok "$name" ;;
		skipped*)
			reason=${res#skipped }
			if [ "$DRIVER" != vrdma ] || skip_known "$reason"; then
				ktap_skip "$name" "$reason"
			else
				ktap_fail "$name # unexplained skip: $reason"
			fi ;;
		*) ktap_fail "$name # $res" ;;
		esac
	done <"$WORK/$label.res"
	if [ "$rc" -ge 124 ]; then
		last=$(grep -E '^[a-zA-Z0-9_]+ \(tests\.' "$WORK/$label.log" | tail -n 1)
		ktap_fail "$label: timed out after $SECS s in ${last:-its start}"
	elif [ "$rc" -ne 0 ] && ! grep -qE '^FAILED|^OK' "$WORK/$label.log"; then
		ktap_fail "$label: exit $rc without a unittest summary"
		tail -n 5 "$WORK/$label.log" | sed 's/^/# /'
	fi
	if [ -n "${PYVERBS_DUMP:-}" ]; then
		sed 's/^/#  | /' "$WORK/$label.log"
	else
		# the first lines of every traceback
		grep -E -A12 '^(ERROR|FAIL): ' "$WORK/$label.log" | head -n 80 | sed 's/^/# /'
	fi
}

if [ -n "${PYVERBS_EACH:-}" ]; then
	# triage: one process per module (a hang costs one module)
	SECS=${PYVERBS_SECS:-120}
	for m in "${mods[@]}"; do
		pv_run "$m" "$m"
	done
else
	SECS=${PYVERBS_SECS:-240}
	pv_run suite "${mods[@]}"
fi
ktap_finished
