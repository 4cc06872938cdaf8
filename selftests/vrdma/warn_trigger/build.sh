#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the test-only WARN module out of tree: build.sh OUTDIR [KDIR].
# Sources are copied to OUTDIR so the checkout stays clean.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1
kdir=${2:-$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)}
mkdir -p "$out"
cp "$here/Kbuild" "$here/vrdma_warn_trigger.c" "$out/"
make -s -C "$kdir" M="$(cd "$out" && pwd)" modules
test -f "$out/vrdma_warn_trigger.ko"
