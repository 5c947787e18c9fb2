# shellcheck shell=bash
# Sourced by every benchmark's host script (tests/bench/*.sh) with what it
# measures as $1, after `set -euo pipefail`: sets here (tests/bench) and
# top (the checkout), whatever their paths (spaces included), and gives
#   bench_need CMD WHY       exit 77 with a SKIP line when CMD is missing
#   bench_build full|missing install-deps and build (full), or build only
#                            when the examples are not built (missing)
#   bench_vm SECONDS [--check-dmesg] -- CMD...
#                            boots the soft-RoCE VM (skipping, exit 77,
#                            where none can run) and runs CMD there from
#                            the build directory; never returns
bench_what=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
top=$(cd "$here/../.." && pwd)

bench_need() {
	command -v "$1" >/dev/null && return 0
	echo "SKIP: $bench_what: $1 is not installed ($2)"
	exit 77
}

bench_build() {
	case $1 in
	full)
		"$top/scripts/install-deps.sh"
		"$top/scripts/build.sh"
		;;
	missing)
		[ -x "$top/build/examples/gdrfab_pingpong" ] || "$top/scripts/build.sh"
		;;
	esac
}

bench_vm() {
	local secs=$1
	shift
	local -a opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	GDRFAB_BUILDDIR=$top/build GDRFAB_SRCDIR=$top
	export GDRFAB_BUILDDIR GDRFAB_SRCDIR
	# Skips without a VM; enters the build directory.
	. "$top/tests/vm/runner/vm-prelude.sh" "$bench_what"
	exec "$top/tests/vm/runner/vm-run" "${opts[@]}" --timeout "$secs" -- "$@"
}
