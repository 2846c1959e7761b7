#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/demo-guest.sh -- the guest half of `make demo` (scripts/demo.sh).
# Runs as root inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- scripts/demo-guest.sh
#
#   scripts/demo-guest.sh          run every step, exit 1 if any did not pass
#   scripts/demo-guest.sh --list   print "ID<TAB>TITLE" per step and exit
#                               (scripts/demo.sh uses it on the host to number
#                               the steps; nothing is touched)
#
# Human-readable output on stdout, plus lines starting with "@kiwi-demo "
# that scripts/demo.sh turns into progress headers and the summary table:
#
#	@kiwi-demo begin ID TITLE
#	@kiwi-demo end ID PASS|FAIL|SKIP SECONDS NOTE
#	@kiwi-demo dev DEVICE|NETDEV|TRANSPORT|PORT-STATE|MTU
#	@kiwi-demo done
#
# Network layout (what later data-path demos build on):
#
#	netns kiwi-a: kv0 10.91.0.1/24  <-- veth -->  netns kiwi-b: kv1 10.91.0.2/24
#	RDMA device kiwi0 on kv0                      RDMA device kiwi1 on kv1
#
# RDMA devices are visible in every namespace (6.1 default: `rdma system`
# netns shared), so verbs programs can open kiwi0/kiwi1 from anywhere;
# `rdma link add` itself must run in the netdev's namespace.
#
# Adding a step: write a step_ID function (return 0 pass, `skip REASON` or
# `need STEP...` to not run, anything else fails) and add "ID|TITLE" to STEPS.
# The data-path steps (rping, ib_write_bw, siw interop) go in one place:
# DATA_PATH_STEPS below.
set -u
export LC_ALL=C

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PY=/usr/bin/python3
NS=(kiwi-a kiwi-b)
NETDEV=(kv0 kv1)
ADDR=(10.91.0.1/24 10.91.0.2/24)
DEV=(kiwi0 kiwi1)

# The data path: RDMA connections through the iw_cm between the two
# namespaces, with real rdma-core tools.
DATA_PATH_STEPS=(
	"rping|rping -V kiwi0 -> kiwi1: 100 verified ping-pongs of 4 KiB"
	"write_bw|ib_write_bw -R kiwi0 -> kiwi1: 64 KiB RDMA WRITEs"
)

STEPS=(
	"module|Load the kiwi kernel module (modprobe kiwi)"
	"params|Module parameters (resource limits, MPA settings)"
	"netdevs|Two netdevs: veth pair kv0/kv1 in namespaces kiwi-a/kiwi-b"
	"links|Create RDMA devices: rdma link add kiwi0/kiwi1 type kiwi"
	"rdma_link|List RDMA links (rdma link)"
	"ibv_devices|List verbs devices (ibv_devices)"
	"devinfo|Device and port attributes (ibv_devinfo -d kiwi0)"
	"provider|User-space provider libkiwi (ibv_devinfo -v, ABI version)"
	"verbs|Verbs smoke test (pyverbs): PD, MR, CQ, SRQ, RC QP"
	"${DATA_PATH_STEPS[@]}"
	"teardown|Remove the devices and unload the module"
)

if [ "${1:-}" = --list ]; then
	for s in "${STEPS[@]}"; do printf '%s\t%s\n' "${s%%|*}" "${s#*|}"; done
	exit 0
fi
[ $# -eq 0 ] || { echo "usage: $0 [--list]" >&2; exit 2; }

# ------------------------------------------------------------- helpers --
# Indented command output; "$ cmd" first, so the user sees what ran.
show() {
	echo "    \$ $*"
	timeout -k 5 "${TMO:-60}" "$@" 2>&1 | sed -e 's/^/      /'
	return "${PIPESTATUS[0]}"
}
note() { echo "    $*"; }
# ns N CMD...: run CMD in namespace NS[N]
ns() { local i=$1; shift; ip netns exec "${NS[$i]}" "$@"; }

declare -A RESULT=()
SKIP_REASON=
skip() { SKIP_REASON=$*; note "not run: $*"; return 77; }
need() {	# need STEP...: skip (77) unless every STEP passed
	local s
	for s; do
		[ "${RESULT[$s]:-}" = PASS ] || { skip "needs step '$s', which did not pass"; return; }
	done
}

devinfo_field() {	# DEV FIELD -> value of "FIELD: value" (first match)
	ibv_devinfo -d "$1" 2>/dev/null | sed -n "s/^[[:space:]]*$2:[[:space:]]*//p" | head -n1
}

# --------------------------------------------------------------- steps --
step_module() {
	show modprobe kiwi || return 1
	echo "    \$ lsmod   (kiwi and the RDMA core modules it pulled in)"
	lsmod | grep -E '^(kiwi|ib_core|ib_uverbs|iw_cm) ' | sed -e 's/^/      /'
	[ -d /sys/module/kiwi ] || { note "/sys/module/kiwi missing"; return 1; }
	note "loaded: kiwi $(cat /sys/module/kiwi/version 2>/dev/null)"
	note "kernel: $(dmesg | grep -m1 'kiwi: software iWARP' | sed 's/^\[[^]]*\] //')"
}

step_params() {
	need module || return
	local p
	note "modinfo -F parm kiwi (see also /sys/module/kiwi/parameters):"
	modinfo -F parm kiwi | sed -e 's/^/      /'
	note "values in effect:"
	for p in /sys/module/kiwi/parameters/*; do
		printf '      %-12s %s\n' "${p##*/}" "$(cat "$p")"
	done
}

step_netdevs() {
	local i
	show ip netns add "${NS[0]}" || return 1
	show ip netns add "${NS[1]}" || return 1
	show ip link add "${NETDEV[0]}" type veth peer name "${NETDEV[1]}" || return 1
	# Moved before any RDMA device exists: a namespace move unregisters
	# the netdev in the old namespace, which would take its kiwi device.
	for i in 0 1; do
		show ip link set "${NETDEV[$i]}" netns "${NS[$i]}" || return 1
		show ip -n "${NS[$i]}" addr add "${ADDR[$i]}" dev "${NETDEV[$i]}" || return 1
		show ip -n "${NS[$i]}" link set lo up || return 1
		show ip -n "${NS[$i]}" link set "${NETDEV[$i]}" up || return 1
	done
	for i in 0 1; do
		show ip -n "${NS[$i]}" -br addr show dev "${NETDEV[$i]}"
	done
	# IP connectivity across the pair (busybox ping: iputils is optional).
	show ip netns exec "${NS[0]}" busybox ping -c 1 -W 5 "${ADDR[1]%/*}" || {
		note "no IP connectivity kv0 -> kv1"; return 1; }
}

step_links() {
	need module netdevs || return
	local i
	for i in 0 1; do
		show ip netns exec "${NS[$i]}" rdma link add "${DEV[$i]}" type kiwi netdev "${NETDEV[$i]}" || return 1
	done
	for i in 0 1; do
		[ -e "/sys/class/infiniband/${DEV[$i]}" ] || { note "/sys/class/infiniband/${DEV[$i]} missing"; return 1; }
	done
	note "kernel: $(dmesg | grep -E 'kiwi: kiwi[01] attached' | sed 's/^\[[^]]*\] //' | paste -sd ';' | sed 's/;/; /g')"
	note "/dev/infiniband: $(ls /dev/infiniband | paste -sd ' ')"
}

step_rdma_link() {
	need links || return
	local i out rc=0
	note "from the initial namespace (netdevs live elsewhere, so none shown):"
	show rdma link || return 1
	for i in 0 1; do
		note "from namespace ${NS[$i]}:"
		out=$(ns "$i" rdma link show "${DEV[$i]}/1" 2>&1)
		echo "    \$ ip netns exec ${NS[$i]} rdma link show ${DEV[$i]}/1"
		echo "      $out"
		[[ $out == *"state ACTIVE"*"netdev ${NETDEV[$i]}"* ]] || { note "expected state ACTIVE, netdev ${NETDEV[$i]}"; rc=1; }
	done
	return $rc
}

step_ibv_devices() {
	need links || return
	local out d
	out=$(timeout 60 ibv_devices 2>&1)
	echo "    \$ ibv_devices"
	printf '%s\n' "$out" | sed -e 's/^/      /'
	for d in "${DEV[@]}"; do
		grep -qw "$d" <<<"$out" || { note "$d not listed (is the provider built and bound?)"; return 1; }
	done
}

step_devinfo() {
	need links || return
	local i t st mtu nd ndmtu rc=0
	show ibv_devinfo -d "${DEV[0]}" || rc=1
	for i in 0 1; do
		t=$(devinfo_field "${DEV[$i]}" transport)
		st=$(devinfo_field "${DEV[$i]}" state)
		mtu=$(devinfo_field "${DEV[$i]}" active_mtu)
		nd=$(ns "$i" rdma link show "${DEV[$i]}/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
		ndmtu=$(ns "$i" cat "/sys/class/net/${NETDEV[$i]}/mtu" 2>/dev/null)
		echo "@kiwi-demo dev ${DEV[$i]}|${nd:-?}|${t:-?}|${st:-?}|${mtu%% *} (netdev ${ndmtu:-?})"
		note "${DEV[$i]}: transport '$t', port state '$st', active_mtu '$mtu' (netdev ${nd:-?} mtu ${ndmtu:-?})"
		[ "$t" = "iWARP (1)" ] || { note "${DEV[$i]}: expected transport 'iWARP (1)'"; rc=1; }
		[ "$st" = "PORT_ACTIVE (4)" ] || { note "${DEV[$i]}: expected port state PORT_ACTIVE"; rc=1; }
	done
	return $rc
}

step_provider() {
	need links || return
	local lib drv out kabi uabi f
	drv=$(cat /etc/libibverbs.d/kiwi.driver 2>/dev/null)
	note "/etc/libibverbs.d/kiwi.driver: ${drv:-<missing>}"
	# LD_DEBUG shows which provider libibverbs really dlopen()ed.
	out=$(LD_DEBUG=libs timeout 60 ibv_devinfo -v -d "${DEV[0]}" 2>&1)
	lib=$(sed -n 's/.*calling init: \(.*libkiwi[^ ]*\.so\).*/\1/p' <<<"$out" | head -n1)
	if [ -z "$lib" ]; then
		note "libibverbs did not load libkiwi:"
		grep -v '^ *[0-9]*:' <<<"$out" | head -20 | sed -e 's/^/      /'
		return 1
	fi
	note "libibverbs loaded the provider: $lib"
	echo "    \$ ibv_devinfo -v -d ${DEV[0]}   (device attributes from query_device; excerpt)"
	grep -v '^ *[0-9]*:' <<<"$out" |
		grep -E '^[[:space:]]*(vendor_id|fw_ver|max_mr_size|max_qp|max_qp_wr|max_sge|max_cq|max_cqe|max_mr|max_pd|max_srq|max_srq_wr|max_qp_rd_atom|atomic_cap|max_msg_sz|gid\[ *0\]):' |
		sed -e 's/^[[:space:]]*/      /'
	grep -q 'vendor_id:.*0x6b6977' <<<"$out" || { note "vendor_id is not kiwi's 0x6b6977"; return 1; }
	kabi=
	for f in /sys/class/infiniband_verbs/uverbs*/ibdev; do
		[ "$(cat "$f" 2>/dev/null)" = "${DEV[0]}" ] && kabi=$(cat "${f%/ibdev}/abi_version")
	done
	uabi=$(sed -n 's/^#define KIWI_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$ROOT/include/uapi/rdma/kiwi-abi.h")
	note "uverbs ABI version: kernel ${kabi:-?}, provider (kiwi-abi.h) ${uabi:-?}"
	[ -n "$kabi" ] && [ "$kabi" = "$uabi" ] || { note "ABI version mismatch"; return 1; }
}

step_verbs() {
	need links || return
	[ -x "$PY" ] || { skip "$PY not installed (python3-pyverbs)"; return; }
	echo "    \$ $PY - ${DEV[0]}   (pyverbs: open, PD, MR, CQ, SRQ, RC QP -> INIT, destroy)"
	timeout -k 5 120 "$PY" - "${DEV[0]}" 2>&1 <<'EOF' | sed -e 's/^/      /'
import errno, sys
import pyverbs.enums as e
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
from pyverbs.cq import CQ
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.pyverbs_error import PyverbsRDMAError

name = sys.argv[1]
with Context(name=name) as ctx:
    a = ctx.query_device()
    print(f"opened {name}: vendor_id {a.vendor_id:#x}, max_qp {a.max_qp}, max_cqe {a.max_cqe}")
    pd = PD(ctx)
    print("PD  allocated")
    mr = MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
            e.IBV_ACCESS_REMOTE_READ)
    print(f"MR  registered: 64 KiB, lkey {mr.lkey:#x}, rkey {mr.rkey:#x}")
    cq = CQ(ctx, 100)
    print(f"CQ  created: asked 100 entries, got {cq.cqe}")
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=64, max_sge=1)))
    print("SRQ created: max_wr 64")
    cap = QPCap(max_send_wr=32, max_recv_wr=32, max_send_sge=2, max_recv_sge=2)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap), QPAttr())
    attr, init = qp.query(e.IBV_QP_STATE | e.IBV_QP_CAP)
    assert attr.qp_state == e.IBV_QPS_INIT, attr.qp_state
    print(f"QP  created: RC, qp_num {qp.qp_num}, state INIT, "
          f"send/recv depth {attr.cap.max_send_wr}/{attr.cap.max_recv_wr}")
    try:
        QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
        sys.exit("UD QP was created; kiwi supports RC only")
    except PyverbsRDMAError as ex:
        assert ex.error_code == errno.EOPNOTSUPP, ex
        print("UD QP refused with EOPNOTSUPP, as expected (iWARP: RC only)")
    for o in (qp, srq, cq, mr, pd):
        o.close()
    print("all objects destroyed")
EOF
	return "${PIPESTATUS[0]}"
}

# wait_listen PORT: until a listener on PORT exists in namespace 1.
wait_listen() {
	local i
	for i in $(seq 1 40); do
		ns 1 ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.5
	done
	return 1
}

step_rping() {
	need links || return
	local srv=${ADDR[1]%/*} rc
	echo "    \$ ip netns exec ${NS[1]} rping -s -a $srv -V -C 100 -S 4096 &"
	ns 1 timeout 300 rping -s -a "$srv" -V -C 100 -S 4096 >/tmp/demo-rping-srv 2>&1 &
	local spid=$!
	wait_listen 7174
	TMO=300 show ip netns exec "${NS[0]}" rping -c -a "$srv" -V -C 100 -S 4096
	rc=$?
	[ $rc -eq 0 ] || kill $spid 2>/dev/null
	wait $spid || rc=1
	[ $rc -eq 0 ] && note "100 iterations, every payload verified (-V)"
	return $rc
}

step_write_bw() {
	need links || return
	local srv=${ADDR[1]%/*} rc
	echo "    \$ ip netns exec ${NS[1]} ib_write_bw -R -d ${DEV[1]} -s 65536 -n 500 &"
	ns 1 timeout 300 ib_write_bw -R -d "${DEV[1]}" -F -s 65536 -n 500 >/tmp/demo-wbw-srv 2>&1 &
	local spid=$!
	wait_listen 18515
	TMO=300 show ip netns exec "${NS[0]}" ib_write_bw -R -d "${DEV[0]}" -F -s 65536 -n 500 "$srv"
	rc=$?
	[ $rc -eq 0 ] || kill $spid 2>/dev/null
	wait $spid || rc=1
	note "(bandwidth under QEMU TCG emulation: compare, don't read as absolute)"
	return $rc
}

step_teardown() {
	need module || return
	local d rc=0
	for d in "${DEV[1]}" "${DEV[0]}"; do
		[ -e "/sys/class/infiniband/$d" ] || continue
		show rdma link delete "$d" || rc=1
	done
	show modprobe -r kiwi || rc=1
	[ ! -d /sys/module/kiwi ] || { note "kiwi still loaded"; rc=1; }
	[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] || { note "RDMA devices left: $(ls /sys/class/infiniband)"; rc=1; }
	[ $rc -ne 0 ] || note "devices removed, module unloaded"
	return $rc
}

# ---------------------------------------------------------------- main --
fail=0
for s in "${STEPS[@]}"; do
	id=${s%%|*} title=${s#*|}
	echo "@kiwi-demo begin $id $title"
	t0=$EPOCHREALTIME
	SKIP_REASON=
	"step_$id" 2>&1
	rc=$?
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	note=
	case $rc in
	0)  st=PASS ;;
	77) st=SKIP note=$SKIP_REASON ;;
	*)  st=FAIL fail=1 note="exit status $rc" ;;
	esac
	RESULT[$id]=$st
	echo "@kiwi-demo end $id $st $secs $note"
done
echo "@kiwi-demo done"
exit $fail
