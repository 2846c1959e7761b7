#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/mpi.sh -- Open MPI (Debian's openmpi-bin 4.1) over
# kiwi, run inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/mpi.sh
#
# Two ranks, one in namespace kwa (kiwi0 on kv0, 10.91.0.1) and one in
# kwb (kiwi1 on kv1, 10.91.0.2), each namespace with a UTS namespace of
# its own so that its host name is its namespace's name.  mpirun runs in
# kwa and starts its daemons through a plm_rsh_agent that is `ip netns
# exec` instead of ssh (the agent made below); Open MPI's own TCP
# out-of-band channel runs between them over the veth pair, the MPI
# traffic does not: TCP, shared memory (vader, sm) and every BTL but the
# one under test are excluded, and kiwi's device counters must move.
# The program, mpi_check.c (compiled here with mpicc), checks every
# result: a ring, ping-pong 1 B..4 MiB, allreduce, an 8 MiB broadcast.
#
# Transport: pml cm with the ofi MTL over libfabric's "verbs;ofi_rxm"
# (FI_PROVIDER set too, so libfabric loads no other provider), no BTL
# but self.  Open MPI's own openib BTL cannot be used: Debian builds it
# without the rdmacm connection method (ompi_info: btl_openib_cpc_include
# "valid values: udcm"; mpirun: "Invalid name: rdmacm"), and udcm needs
# UD QPs, which iWARP does not have.  KIWI_MPI_VARIANTS=openib runs it
# anyway, to see that.
#
# TAP 13, plan line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
SRC=$GUEST_DIR/mpi_check.c
VARIANTS=${KIWI_MPI_VARIANTS:-ofi}
KTEXT=

setup() {
	need_tools mpirun mpicc orted || return 1
	modprobe kiwi && KTEXT=$(kiwi_text) && kiwi_pair_up || return 1
	mpicc -O2 -o "$TMPD/mpi_check" "$SRC" || return 1
	# Host names for mpirun's host file and the daemons' callback.
	printf '10.91.0.1 kwa\n10.91.0.2 kwb\n' >>/etc/hosts
	# The "remote shell": mpirun calls it as AGENT HOST COMMAND...,
	# COMMAND being shell text (variable settings, then orted).
	cat >"$TMPD/nsrsh" <<-'EOF'
	#!/bin/sh
	h=$1
	shift
	exec ip netns exec "$h" unshare --uts sh -c "hostname $h && $*"
	EOF
	# Each rank's device: the one of its own namespace.
	cat >"$TMPD/rankenv" <<-'EOF'
	#!/bin/sh
	case $(hostname) in
	kwa) d=kiwi0 n=kv0 ;;
	kwb) d=kiwi1 n=kv1 ;;
	*) echo "rankenv: unknown host $(hostname)" >&2; exit 1 ;;
	esac
	export OMPI_MCA_btl_openib_if_include=$d FI_VERBS_DEVICE_NAME=$d FI_VERBS_IFACE=$n
	exec "$@"
	EOF
	chmod +x "$TMPD/nsrsh" "$TMPD/rankenv"
	printf 'kwa slots=1\nkwb slots=1\n' >"$TMPD/hosts"
}

# kiwi_bytes DEV: the device's transmitted + received payload counters,
# summed (rdma statistic), to show the MPI traffic went through it.
kiwi_bytes() {
	rdma statistic show link "$1/1" 2>/dev/null |
		grep -oE '(tx|rx)_[a-z_]*bytes [0-9]+' | awk '{ s += $2 } END { print s + 0 }'
}

run_variant() {
	local v=$1 mca=() a0 b0 a1 b1 rc=0
	case $v in
	openib)
		# shellcheck disable=SC2054 # openib,self is one value
		mca=(--mca pml ob1 --mca btl openib,self
		     --mca btl_openib_cpc_include rdmacm
		     --mca btl_openib_allow_ib 1) ;;
	ofi)
		mca=(--mca pml cm --mca mtl ofi --mca btl self
		     --mca mtl_ofi_provider_include "verbs;ofi_rxm"
		     -x FI_PROVIDER="verbs;ofi_rxm") ;;
	esac
	a0=$(kiwi_bytes kiwi0) b0=$(kiwi_bytes kiwi1)
	A unshare --uts sh -c 'hostname kwa && exec "$@"' - \
		timeout 180 mpirun --allow-run-as-root -np 2 \
		--hostfile "$TMPD/hosts" --map-by node \
		--mca plm_rsh_agent "$TMPD/nsrsh" \
		--mca oob_tcp_if_include 10.91.0.0/24 \
		--mca btl_tcp_if_include 10.91.0.0/24 \
		"${mca[@]}" ${KIWI_MPI_ARGS:-} "$TMPD/rankenv" "$TMPD/mpi_check" \
		>"$TMPD/mpi.$v" 2>&1 || rc=$?
	a1=$(kiwi_bytes kiwi0) b1=$(kiwi_bytes kiwi1)
	if [ $rc -eq 0 ] && grep -q '^PASS: 0 failed' "$TMPD/mpi.$v" &&
	   grep -q 'rank 0 of 2 on kwa' "$TMPD/mpi.$v" &&
	   grep -q 'rank 1 of 2 on kwb' "$TMPD/mpi.$v" &&
	   [ $((a1 - a0)) -gt 30000000 ] && [ $((b1 - b0)) -gt 30000000 ]; then
		ok "mpi $v: 2 ranks (kwa, kwb), ring, ping-pong 1 B..4 MiB, allreduce, bcast checked; kiwi0 $(((a1 - a0) >> 20)) MiB, kiwi1 $(((b1 - b0) >> 20)) MiB"
	else
		notok "mpi $v: 2 ranks over kiwi, results checked (exit $rc, kiwi0 +$((a1 - a0)) B, kiwi1 +$((b1 - b0)) B)"
		tail -n "${KIWI_MPI_LOG:-40}" "$TMPD/mpi.$v" | diag
		nvme_klog 15
	fi
	# Nothing of the run may stay behind.
	pkill -x orted
	for _ in $(seq 1 20); do
		pgrep -x mpi_check >/dev/null || pgrep -x orted >/dev/null || break
		sleep 0.5
	done
}

teardown() {
	pkill -9 -x mpi_check
	pkill -9 -x orted
	ip netns del kwa && ip netns del kwb &&
	for _ in $(seq 1 20); do
		rdma link 2>/dev/null | grep -q kiwi || break
		sleep 0.5
	done
	rdma link del kiwi0 2>/dev/null
	rdma link del kiwi1 2>/dev/null
	modprobe -r kiwi
}

START=$SECONDS
tap_setup "kiwi0/kiwi1 in namespaces kwa/kwb, mpi_check built" \
	"kiwi0/kiwi1 in namespaces kwa/kwb, mpi_check built with mpicc"
for v in $VARIANTS; do
	run_variant $v
done
if teardown >"$TMPD/td" 2>&1; then
	ok "teardown: namespaces gone, kiwi unloaded"
else
	notok "teardown: namespaces gone, kiwi unloaded"
	{ cat "$TMPD/td"; rdma link; lsmod | grep kiwi; } 2>&1 | diag
fi
if kiwi_leak_check "$KTEXT" "$TMPD/leak"; then
	ok "after rmmod kiwi nothing kiwi allocated is left"
else
	notok "after rmmod kiwi nothing kiwi allocated is left"
fi
echo "# mpi.sh: $((SECONDS - START)) s"
tap_end
