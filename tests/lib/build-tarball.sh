# shellcheck shell=bash
# Sourced by the scripts that build a third-party release from
# ../shared (tests/consumers/build-libfabric2.sh,
# tests/fabtests/build-fabtests.sh): one way to find, skip, unpack, build,
# log and mark it built.
#   build_tarball NAME TARBALL DEST WHY STEP...
# NAME is what the lines say ("fabtests 1.17.0"), TARBALL the release
# (its top folder is its name without .tar.gz), DEST where it installs,
# WHY the SKIP line's reason when TARBALL is absent (exit 77). Returns at
# once when DEST/.built exists; else unpacks TARBALL in a scratch folder
# and runs STEP... there (a function of the caller's), its output in
# DEST/build.log, whose end is shown on failure (exit 1); then marks
# DEST built.
build_tarball() {
	local name=$1 tarball=$2 dest=$3 why=$4 work top rc=0
	shift 4
	[ -r "$dest/.built" ] && return 0
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
