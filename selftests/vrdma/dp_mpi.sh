#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Open MPI (Debian's openmpi-bin 4.1) over vrdma with --mca pml ucx,
# docs/mpi.md: two ranks, one per host (namespaces $H1 and $H2, vrdma1
# and vrdma2). mpirun runs in $H1 and starts the orted of $H2 through a
# plm_rsh_agent that "ssh"es by `ip netns exec`. vrdma_mpi_test verifies
# every byte of a ping-pong from 1 B to 4 MB, of MPI_Allreduce,
# MPI_Alltoall and MPI_Bcast; its checks are test points. UCX_TLS keeps
# UCX on the verbs transports (no TCP, no shared memory), and vrdma's
# rx_bytes on both devices must have grown by at least the verified
# payload: the data crossed vrdma, not a socket.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd mpirun ompi_info ucx_info rdma
require_vrdma
require_provider
MPI_TEST=${MPI_TEST:-$VRDMA_REPO/build/userspace/tools/vrdma_mpi_test}
[ -x "$MPI_TEST" ] || skip_all "$MPI_TEST not built (make userspace with libopenmpi-dev)"
ompi_info --parsable 2>/dev/null | grep -q '^mca:pml:ucx:' ||
	skip_all "this Open MPI has no pml ucx"

# Sizes and counts sized for a TCG guest (about a minute); docs/mpi.md
# has the larger runs behind the figures.
MPI_ARGS=${VRDMA_MPI_ARGS:---max 4194304 --iters 20 --budget 2097152 --verify-iters 2}
arg_of() { echo "$MPI_ARGS" | grep -oE -- "$1 [0-9]+" | tail -n 1 | awk '{print $2}'; }
VERIFY_ITERS=$(arg_of --verify-iters)
MAX=$(arg_of --max)

DP_OUT=$(mktemp)
AGENT=$(mktemp)
defer rm -f "$DP_OUT" "$AGENT"

dp_setup || { ktap_fail "two hosts with vrdma1 and vrdma2"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2; $(mpirun --version 2>&1 | head -n 1); $(ucx_info -v | head -n 1)"

# The rsh agent: called as "AGENT HOST COMMAND...", like ssh, it runs the
# command line through a shell in the namespace that owns HOST.
cat >"$AGENT" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in
$H1_IP) ns=$H1 ;;
$H2_IP) ns=$H2 ;;
*) echo "mpi agent: no namespace for \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
chmod 0755 "$AGENT"

rx_before1=$(dp_counter vrdma1 rx_bytes)
rx_before2=$(dp_counter vrdma2 rx_bytes)

# One app context per host: each rank gets its own device and GID index.
# btl self only (pml ucx carries everything; no openib/tcp BTL probing).
# --bind-to none: each orted binds its rank to core 0 of its "node", and
# here both nodes are one guest: two busy-polling ranks on one vCPU made
# every round trip take two scheduler ticks (8 ms).
# shellcheck disable=SC2086
ip netns exec "$H1" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	timeout -k 5 240 mpirun --allow-run-as-root \
	--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include 10.231.0.0/24 \
	--mca pml ucx --mca btl self --mca osc ucx --bind-to none \
	-x UCX_TLS=self,rc_v,ud_v \
	-np 1 --host "$H1_IP" env UCX_NET_DEVICES=vrdma1:1 UCX_IB_GID_INDEX="$G1" \
		"$MPI_TEST" --expect-hosts 2 $MPI_ARGS : \
	-np 1 --host "$H2_IP" env UCX_NET_DEVICES=vrdma2:1 UCX_IB_GID_INDEX="$G2" \
		"$MPI_TEST" --expect-hosts 2 $MPI_ARGS >"$DP_OUT" 2>&1
rc=$?
tap_import "MPI" <"$DP_OUT"
[ $rc -eq 0 ] && ktap_ok "mpirun: both ranks exited 0" ||
	ktap_fail "mpirun exited $rc"

# Each device received at least the verified ping-pong payload (sizes 1 B
# to MAX, VERIFY_ITERS times each way).
want=$(( (2 * ${MAX:-4194304} - 1) * ${VERIFY_ITERS:-5} ))
d1=$(( $(dp_counter vrdma1 rx_bytes) - rx_before1 ))
d2=$(( $(dp_counter vrdma2 rx_bytes) - rx_before2 ))
if [ "$d1" -ge "$want" ] && [ "$d2" -ge "$want" ]; then
	ktap_ok "the data crossed vrdma: rx_bytes vrdma1 +$d1, vrdma2 +$d2 (>= $want)"
else
	ktap_fail "rx_bytes vrdma1 +$d1, vrdma2 +$d2, want >= $want each"
fi

ktap_finished
