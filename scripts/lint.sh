#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# scripts/lint.sh -- `make lint`: the tree's style and hygiene checks.
#
# - checkpatch: Linux's scripts/checkpatch.pl over kmod/*.[ch] (not the
#   generated *.mod.c), include/kiwi/*.h and selftests/kconsumer/*.c.  It
#   comes from Debian's linux-source-6.1 (scripts/install-deps.sh --set test
#   installs it): three files are taken out of
#   /usr/src/linux-source-6.1.tar.xz into build/checkpatch/ once, and
#   again when the tarball changes.
# - the shell script checker, over every shell script git knows of (found
#   by its #! line, not by its name), at severity warning, following
#   sourced files
# - knobs: every KIWI_* variable the scripts and the Makefile read is
#   named in selftests/README.md, README.md or Documentation/
# - layers: scripts/kmod-layers.py --check over the built kmod/*.o (make kmod
#   first; lint builds nothing): the kmod files that call each other both
#   ways are exactly those Documentation/kiwi.rst lists, and no kmod/*.c
#   is longer than 800 lines
#
# Usage: scripts/lint.sh [checkpatch|shellcheck|knobs|layers]...  (default:
# all four)
# Prints one line per finding, "<check>: <finding>", then
# "lint: checkpatch N findings, shellcheck N findings, knobs N findings,
# layers N findings"
# (a check not run counts "-"); exit 1 if anything was found or a check
# could not run (that is one finding, saying why).
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-$ROOT/build}
JOBS=$(nproc 2>/dev/null || echo 2)
LINUX_TAR=/usr/src/linux-source-6.1.tar.xz

# checkpatch types left out, each because the finding is wrong for this
# tree (selftests/README.md, "make lint", says the same):
CP_IGNORE=(
	# an out-of-tree module built for 6.1 and 6.12 must test the version
	LINUX_VERSION_CODE
	# every instance compares two constants (a version test, or a
	# BUILD_BUG_ON that our ABI bits equal the core's): no side to move
	CONSTANT_COMPARISON
)
# ... and for include/kiwi/ alone: its headers are shared with user space
# (the provider's fuzzers, selftests/wire, selftests/abuse), which has no
# __packed.
CP_IGNORE_UAPI=(PREFER_DEFINED_ATTRIBUTE_MACRO)

# Findings of shellcheck left out, as FILE:SCxxxx, for files this lint work
# may not edit (selftests/vm/ is the guest runner, changed only with a
# boot to test it); a finding in any other file is fixed there or gets a
# "# shellcheck disable=SCxxxx # reason" on its line.
SC_IGNORE=(
	# busybox's ash is what this init runs in; dash is the right model
	selftests/vm/initramfs-init.sh:SC2187
	# "for attempt in 1" is a one-pass loop, there for its break
	selftests/vm/run.sh:SC2034
	selftests/vm/run.sh:SC2043
)

found_cp=- found_sc=- found_kn=- found_ly=-
say() { printf '%s: %s\n' "$1" "$2"; }

# --------------------------------------------------------- checkpatch --
checkpatch_files() {
	local cp=$BUILD/checkpatch stamp=$BUILD/checkpatch/.from f
	if [ ! -f "$LINUX_TAR" ]; then
		say checkpatch "$LINUX_TAR missing: install linux-source-6.1 (scripts/install-deps.sh --set test)"
		return 1
	fi
	if [ -f "$stamp" ] && [ ! "$LINUX_TAR" -nt "$stamp" ] &&
	   [ -f "$cp/checkpatch.pl" ]; then
		return 0
	fi
	rm -rf "$cp" && mkdir -p "$cp" || return 1
	# Only these three: Linux's sources never enter the tree or build/.
	if ! tar -xJf "$LINUX_TAR" -C "$cp" --strip-components=2 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch; then
		say checkpatch "could not take checkpatch.pl out of $LINUX_TAR"
		rm -rf "$cp"
		return 1
	fi
	for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
		[ -f "$cp/$f" ] || { say checkpatch "$f not in $LINUX_TAR"; return 1; }
	done
	touch "$stamp"
}

# checkpatch over FILES with the ignore list IGNORE (comma-separated): its
# findings, one a line, as "path:line: TYPE: message".
checkpatch_run() {
	local ignore=$1
	shift
	printf '%s\0' "$@" |
	xargs -0 -r -n $((($# + JOBS - 1) / JOBS)) -P "$JOBS" perl "$BUILD/checkpatch/checkpatch.pl" \
		--no-tree --terse --show-types --ignore "$ignore" --file |
	grep -E '^[^ ]+:[0-9]+: (WARNING|ERROR|CHECK):' | sort -t: -k1,1 -k2,2n
}

checkpatch() {
	local out kfiles=() f
	found_cp=0
	if ! checkpatch_files; then
		found_cp=1
		return
	fi
	for f in kmod/*.[ch] selftests/kconsumer/*.c; do
		case "$f" in *.mod.c) ;; *) [ -f "$f" ] && kfiles+=("$f") ;; esac
	done
	out=$(checkpatch_run "$(IFS=,; echo "${CP_IGNORE[*]}")" "${kfiles[@]}"
	      checkpatch_run "$(IFS=,; echo "${CP_IGNORE[*]},${CP_IGNORE_UAPI[*]}")" \
		include/kiwi/*.h)
	if [ -n "$out" ]; then
		sed 's/^/checkpatch: /' <<<"$out"
		found_cp=$(wc -l <<<"$out")
	fi
}

# --------------------------------------------------------- shellcheck --
# Shell scripts among the files git knows of: a #! line naming sh, bash
# or dash (also "busybox sh").
shell_scripts() {
	local f line
	git ls-files | while IFS= read -r f; do
		[ -f "$f" ] || continue
		IFS= read -r line <"$f" 2>/dev/null || continue
		[[ $line =~ ^\#!.*[/\ ](ba|da)?sh([[:space:]]|$) ]] && printf '%s\n' "$f"
	done
}

shellcheck_() {
	local out files ig
	found_sc=0
	if ! command -v shellcheck >/dev/null; then
		say shellcheck "shellcheck not installed (scripts/install-deps.sh --set test)"
		found_sc=1
		return
	fi
	mapfile -t files < <(shell_scripts)
	out=$(printf '%s\n' "${files[@]}" |
	      xargs -r -d '\n' -n 4 -P "$JOBS" shellcheck -S warning -x -f gcc |
	      sort -t: -k1,1 -k2,2n -k3,3n)
	for ig in "${SC_IGNORE[@]}"; do
		out=$(grep -vE "^${ig%%:*}:[0-9]+:[0-9]+: .*\[${ig#*:}\]$" <<<"$out")
	done
	if [ -n "$out" ]; then
		sed 's/^/shellcheck: /' <<<"$out"
		found_sc=$(wc -l <<<"$out")
	fi
}

# -------------------------------------------------------------- knobs --
# KIWI_* variables the scripts and the Makefile read: expanded as
# $KIWI_X or ${KIWI_X...} in a shell script (with #! line, or *.sh that
# others source), named in a Makefile.  Each must be documented.
knobs() {
	local files names n missing=()
	found_kn=0
	mapfile -t files < <({ shell_scripts; git ls-files '*.sh'; } | sort -u)
	names=$({ grep -ohE '\$\{?KIWI_[A-Z0-9_]*[A-Z0-9]' "${files[@]}" |
		  sed -E 's/^\$\{?//'
		  grep -ohE '\bKIWI_[A-Z0-9_]*[A-Z0-9]\b' Makefile; } | sort -u)
	for n in $names; do
		grep -rqw -e "$n" selftests/README.md README.md Documentation ||
			missing+=("$n")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		for n in "${missing[@]}"; do
			say knobs "$n is read by $(grep -lE "\\\$\\{?$n\\b|\\b$n\\b" \
				"${files[@]}" Makefile | tr '\n' ' ')but not in selftests/README.md (KIWI_* knobs)"
		done
		found_kn=${#missing[@]}
	fi
}

# ------------------------------------------------------------- layers --
# Which kmod files call each other both ways, from the objects' symbol
# tables, against kiwi.rst's list; file lengths (scripts/kmod-layers.py).
layers() {
	local out
	found_ly=0
	if ! ls kmod/*.o >/dev/null 2>&1; then
		say layers "kmod/*.o not built (make kmod)"
		found_ly=1
		return
	fi
	out=$("$ROOT/scripts/kmod-layers.py" --check | grep '^layers: ')
	if [ -n "$out" ]; then
		printf '%s\n' "$out"
		found_ly=$(wc -l <<<"$out")
	fi
}

[ $# -gt 0 ] || set -- checkpatch shellcheck knobs layers
for c in "$@"; do
	case "$c" in
	checkpatch) checkpatch ;;
	shellcheck) shellcheck_ ;;
	knobs) knobs ;;
	layers) layers ;;
	*) echo "usage: scripts/lint.sh [checkpatch|shellcheck|knobs|layers]..." >&2; exit 2 ;;
	esac
done
echo "lint: checkpatch $found_cp findings, shellcheck $found_sc findings, knobs $found_kn findings, layers $found_ly findings"
for n in "$found_cp" "$found_sc" "$found_kn" "$found_ly"; do
	[ "$n" = - ] || [ "$n" -eq 0 ] || exit 1
done
exit 0
