#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# check-elf.sh LIB: symbol hygiene of the built provider.
set -eu
lib=$1
syms=$(objdump -T "$lib")
fail=0

# Defined, exported symbols (anything but *UND*): the version script
# should leave none -- libibverbs only needs the constructor.
exported=$(printf '%s\n' "$syms" | awk '$0 ~ /DF|DO/ && $0 !~ /\*UND\*/' || true)
if [ -n "$exported" ]; then
	echo "FAIL: exported symbols:"; printf '%s\n' "$exported"; fail=1
fi

# Private provider ABI: every ibv_cmd_*, verbs_* and _verbs_* import must
# be bound to IBVERBS_PRIVATE_34.
priv=$(printf '%s\n' "$syms" | awk '/\*UND\*/ && ($NF ~ /^(ibv_cmd_|verbs_|_verbs_|__verbs_)/)')
[ -n "$priv" ] || { echo "FAIL: no private imports found"; fail=1; }
bad=$(printf '%s\n' "$priv" | grep -v 'IBVERBS_PRIVATE_34' || true)
if [ -n "$bad" ]; then
	echo "FAIL: private imports not bound to IBVERBS_PRIVATE_34:"
	printf '%s\n' "$bad"; fail=1
fi
printf '%s\n' "$priv" | grep -q 'verbs_register_driver_34' ||
	{ echo "FAIL: no verbs_register_driver_34 import"; fail=1; }

[ $fail -eq 0 ] && echo "OK: $(printf '%s\n' "$priv" | wc -l) private imports, nothing exported"
exit $fail
