# shellcheck shell=bash
# Sourced by the scripts that build a third-party release from
# ../shared (tests/consumers/build-libfabric2.sh,
# tests/fabtests/build-fabtests.sh): one way to find, skip, unpack, build,
# log and mark it built.
#   tarball_paths DIR SHARED-PATH
# sets dest (DIR, made, absolute) and tarball (SHARED-PATH under
# $GDRFAB_SHARED, default ../shared beside the checkout).
#   build_tarball NAME WHY BUILT-FILE STEP...
# exits 0 at once when DEST/BUILT-FILE and DEST/.built exist; exits 77
# with "SKIP: NAME: no TARBALL (WHY)" without the tarball; else unpacks
# it in a scratch folder (its top folder: its name less .tar.gz) and runs
# STEP... there (a function of the caller's) with its output in
# DEST/build.log, whose end is shown on failure (exit 1); then marks
# DEST built.
tarball_paths() {
	local srcdir
	srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	dest=$(mkdir -p "$1" && cd "$1" && pwd)
	tarball=${GDRFAB_SHARED:-$srcdir/../shared}/$2
}

build_tarball() {
	local name=$1 why=$2 built=$3 work top rc=0
	shift 3
	[ -e "$dest/$built" ] && [ -r "$dest/.built" ] && exit 0
	if [ ! -r "$tarball" ]; then
		echo "SKIP: $name: no $tarball ($why)"
		exit 77
	fi
	work=$(mktemp -d /tmp/gdrfab-build.XXXXXX)
	echo "$(basename "$0" .sh): building $name into $dest (a few minutes, once)"
	top=$(basename "$tarball" .tar.gz)
	tar -xzf "$tarball" -C "$work"
	(cd "$work/$top" && "$@") >"$dest/build.log" 2>&1 || rc=$?
	rm -rf "$work"
	if [ $rc != 0 ]; then
		tail -n 30 "$dest/build.log"
		echo "$(basename "$0" .sh): the build failed (whole log: $dest/build.log)" >&2
		exit 1
	fi
	touch "$dest/.built"
}
