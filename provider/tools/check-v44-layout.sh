#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Cross-check every layout assertion in provider/ibverbs_private.h against
# the real rdma-core v44.0 headers.
#
#   check-v44-layout.sh RDMA_CORE_GIT_DIR
#
# RDMA_CORE_GIT_DIR is any clone of github.com/linux-rdma/rdma-core that
# has the v44.0 tag.  The v44.0 headers are exported into a scratch
# directory (nothing is kept), the KIWI_ASSERT_* lines of our header are
# re-targeted at rdma-core's own structs, and the result is compiled as C.
# Success means each hand-written size/offset equals v44.0's.  For a
# failing line, the actual v44.0 value is printed.
set -eu
git_dir=${1:?usage: $0 RDMA_CORE_GIT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git -C "$git_dir" archive v44.0 libibverbs kernel-headers ccan util buildlib |
	tar -x -C "$tmp"
inc=$tmp/inc
mkdir -p "$inc/infiniband" "$inc/kernel-abi" "$inc/rdma"
cp "$tmp"/libibverbs/*.h "$inc/infiniband/"
cp "$tmp"/kernel-headers/rdma/*.h "$inc/rdma/"
cp "$tmp"/kernel-headers/rdma/ib_user_ioctl_verbs.h "$inc/infiniband/"
python3 "$tmp/buildlib/make_abi_structs.py" \
	"$tmp/kernel-headers/rdma/ib_user_verbs.h" \
	"$inc/kernel-abi/ib_user_verbs.h"
# Just enough of rdma-core's generated config.h for driver.h.
cat >"$inc/config.h" <<'CFG'
#define HAVE_STATEMENT_EXPR 1
#define HAVE_BUILTIN_TYPES_COMPATIBLE_P 1
#define HAVE_TYPEOF 1
#define IBVERBS_PABI_VERSION 34
CFG

# Our KIWI_DECLARE_CMD(name, kabi, size) lines become checks on
# rdma-core's DECLARE_CMD struct of the same name.
{
	echo '#include <stddef.h>'
	echo '#include <stdio.h>'
	echo '#include <infiniband/driver.h>'
	echo 'int main(void) { int bad = 0;'
	sed -n \
	 -e 's/^KIWI_ASSERT_SIZE(\([a-z_0-9]*\), *\([0-9]*\));.*/CHK(sizeof(struct \1), \2, "\1");/p' \
	 -e 's/^KIWI_ASSERT_OFFSET(\([a-z_0-9]*\), *\([a-z_0-9]*\), *\([0-9]*\));.*/CHK(offsetof(struct \1, \2), \3, "\1.\2");/p' \
	 -e 's/^KIWI_DECLARE_CMD(\([a-z_0-9]*\), *[a-z_0-9]*, *\([0-9]*\));.*/CHK(sizeof(struct \1), \2, "\1"); CHK(offsetof(struct \1, core_payload), 8, "\1.core_payload");/p' \
	 "$here/ibverbs_private.h"
	printf '%s\n' 'printf("%d mismatches\n", bad); return bad != 0; }'
} >"$tmp/check.c"
sed -i 's/^CHK/\tCHK/' "$tmp/check.c"
cc -std=gnu11 -w -D'CHK(v, want, what)=do { if ((size_t)(v) != (size_t)(want)) { printf("%s: v44.0 has %zu, header says %zu\n", what, (size_t)(v), (size_t)(want)); bad++; } } while (0)' \
	-I"$inc" -I"$tmp" -o "$tmp/check" "$tmp/check.c"
echo "checked $(grep -c CHK "$tmp/check.c") assertions from ibverbs_private.h against rdma-core v44.0"
"$tmp/check"

# Function prototypes: re-declare ours after rdma-core's; C rejects any
# redeclaration whose type differs.  (Our enum of log levels is dropped,
# driver.h defines the same enumerators.)
{
	echo '#include <infiniband/driver.h>'
	sed -n '/^\/\* -* functions -* \*\//,/^#ifdef __cplusplus/p' \
		"$here/ibverbs_private.h" | grep -v '^enum { VERBS_LOG' |
		grep -v '^#ifdef __cplusplus'
} >"$tmp/protos.c"
cc -std=gnu11 -Werror -fsyntax-only -I"$inc" -I"$tmp" "$tmp/protos.c"
echo "$(grep -c '^[a-z].*(' "$tmp/protos.c") function prototypes match rdma-core v44.0"

# Function-pointer member types of verbs_context_ops (all 76 slots) and
# verbs_device_ops: our struct, renamed, next to rdma-core's; every
# member must have a compatible type.
slot_check() { # STRUCT
	sed -n "/^struct $1 {/,/^};/p" "$here/ibverbs_private.h" |
		sed "s/^struct $1 {/struct kiwi_copy_$1 {/"
	echo "static struct $1 v44_$1; static struct kiwi_copy_$1 ours_$1;"
	sed -n "/^struct $1 {/,/^};/p" "$here/ibverbs_private.h" |
		grep -o '(\*[a-z_0-9]*)' | tr -d '(*)' |
		sed "s/.*/_Static_assert(__builtin_types_compatible_p(__typeof__(v44_$1.&), __typeof__(ours_$1.&)), \"$1.&\");/"
}
{
	echo '#include <infiniband/driver.h>'
	slot_check verbs_context_ops
	slot_check verbs_device_ops
} >"$tmp/slots.c"
cc -std=gnu11 -Werror -fsyntax-only -I"$inc" -I"$tmp" "$tmp/slots.c"
echo "$(grep -c _Static_assert "$tmp/slots.c") function-pointer member types match rdma-core v44.0"
