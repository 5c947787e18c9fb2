#!/bin/bash
# The whole test suite from a fresh machine: installs what is missing,
# builds, checks the style, runs every suite (unit tests here, integration
# and kernel-module tests inside the soft-RoCE VM, the GPU tests where a GPU
# is), checks that the release tarball builds and tests (make distcheck,
# without the VM), then adds it all up in one honest line:
#   gdrfab: N passed, M failed, K skipped
# Exits non-zero if anything failed or did not run.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh || exit 1
cd build

# A step that is not a test program (style, distcheck, the sanitizers)
# counts as one test: its output goes to NAME.out, and a log and an
# automake-style result let the totals count it like any suite (what it ran
# inside is not counted again). Exit 77 is a skip, its reason the step's
# "SKIP: what: why" lines.
step() { # name, command...
	local name=$1 rc start=$SECONDS
	shift
	mkdir -p checks
	"$@" >"checks/$name.out" 2>&1
	rc=$?
	echo "time: checks/$name: $((SECONDS - start)) s" >>checks/times.txt
	if [ $rc = 0 ]; then
		echo "$name: 1 passed, 0 failed" >"checks/$name.log"
		echo ":test-result: PASS" >"checks/$name.trs"
	elif [ $rc = 77 ]; then
		grep '^SKIP: ' "checks/$name.out" >"checks/$name.log"
		echo ":test-result: SKIP" >"checks/$name.trs"
	else
		tail -n 30 "checks/$name.out"
		printf '%s\n' "$name: its output is in build/checks/$name.out" \
			"$name: 0 passed, 1 failed" >"checks/$name.log"
		echo ":test-result: FAIL" >"checks/$name.trs"
	fi
	case $rc in 0) rc=PASS ;; 77) rc=SKIP ;; *) rc=FAIL ;; esac
	echo "$rc: $name (build/checks/$name.out)"
}
rm -rf checks
setup_s=$SECONDS
step style make --no-print-directory format-check
# The VM suite runs once, against the build with the sanitizers (the
# plain build still carries every consumer and fabtests run below).
check_start=$(date +%s)
GDRFAB_VM_TESTS_SANITIZED=1 make --no-print-directory check
# The tarball, holding every tracked file (tests/dist/check-dist.sh), built
# and unit-tested from a read-only copy of the sources;
# the VM suites ran above, so they skip there. libtool cannot install into
# a path with a space, so distcheck runs from the tarball unpacked in a
# scratch directory.
# The tarball's own make check runs the tests that read its data files
# (hwloc exports, stats tables, the packaging recipes): check-dist.sh has
# shown it holds every tracked file, and the unit tests and the layer
# check ran above from the same sources (running them again cost CI
# 100 s).
distcheck_tests="tests/lint/check-fid-tostr.sh tests/packaging/check-spack.py \
tests/packaging/check-rpm-spec.sh tests/stats/check-gdrfab-stat.sh tests/topo/check-topo.sh"
distcheck() {
	local scratch rc=0
	scratch=$(mktemp -d /tmp/gdrfab-distcheck.XXXXXX)
	make --no-print-directory dist-gzip &&
		../tests/dist/check-dist.sh gdrfab-*.tar.gz &&
		tar -xzf gdrfab-*.tar.gz -C "$scratch" &&
		(cd "$scratch"/gdrfab-* && ./configure --quiet &&
			GDRFAB_SKIP_VM=1 make --no-print-directory distcheck \
				TESTS="$distcheck_tests") || rc=1
	rm -rf "$scratch" gdrfab-*.tar.gz
	return $rc
}
step distcheck distcheck
# The Debian packages, built from the committed tree (scripts/build-debs.sh),
# lintian-clean, installed into a clean debootstrapped Debian 12 chroot
# (fi_info -l lists gdrfab there without FI_PROVIDER_PATH; the dkms tree
# builds) and purged without a trace; about 1.5 minutes once its chroot is
# cached in build/packaging, a named skip without the mirror.
step packaging ../tests/packaging/check-debs.sh
# The unit tests again, built with ASan and UBSan in build/asan (the VM
# suite ran with them in make check), with libfabric's logging at debug:
# make check ran them with logging off, and the logged run takes every
# path that one takes, so the sanitized run with logging off is left out
# (80 s).
step asan-unit env GDRFAB_SAN_UNIT_PLAIN=0 ../tests/sanitize/run-sanitized.sh unit
# libfabric's fabtests 1.17 against gdrfab in the VM, runfabtests' quick
# set once: its short set (pingpongs and bandwidths of every operation)
# with addresses from node and service (about 4.5 minutes under TCG), and
# its unit and functional tests with -b, addresses exchanged out of band
# as MPI does (about 3 minutes). Each test runs in one mode: the two
# differ only in how the pair finds each other, which every test of
# either set goes through (running the whole quick set in both cost CI
# 3 minutes more; tests/fabtests/run-fabtests.sh alone still does). Any
# gdrfab failure fails the step, except the
# fabtests defects tests/fabtests/gdrfab-known-fail.txt names with their
# reasons; a named skip without ../shared/fabtests. The tests gdrfab
# cannot run by design (tests/fabtests/gdrfab-notrun.txt: MSG and DGRAM
# endpoints, shared contexts, ...) are left out. The baseline,
# verbs;ofi_rxm, and those tests run from tests/fabtests/run-fabtests.sh
# alone.
step fabtests env GDRFAB_FABTESTS_PROVIDERS=gdrfab GDRFAB_FABTESTS_SKIP_NOTRUN=1 \
	GDRFAB_FABTESTS_MODES="default oob" GDRFAB_FABTESTS_SET=short \
	GDRFAB_FABTESTS_OOB_SET=unit,functional \
	GDRFAB_FABTESTS_STRICT=1 \
	../tests/fabtests/run-fabtests.sh

suites=$(make --no-print-directory -s print-tests)
# Failures first: whoever reads only the start and the end of this output
# (a CI summary cuts the middle) still sees what failed and its last words.
for suite in $suites; do
	grep -qE '^:test-result: (FAIL|ERROR)' "$suite.trs" 2>/dev/null || continue
	echo "==== FAILED $suite: its FAIL lines and what came before them"
	sed -e 's/\x1b\[[0-9;]*m//g' "$suite.log" >"$suite.clean"
	grep -B 20 -E '^(FAIL|\[FAIL\])' "$suite.clean" | tail -n 80 ||
		tail -n 30 "$suite.clean" # no FAIL line: it crashed or timed out
	rm -f "$suite.clean"
done
for suite in $suites; do
	echo "==== $suite.log"
	sed -e 's/\x1b\[[0-9;]*m//g' "$suite.log" 2>/dev/null
done
# Where CI's minutes went, next to the totals (the end of the output is
# what a CI summary keeps): each suite from the end of the one before it
# (make check runs them in this order), each step as timed above.
echo "==== times"
echo "time: install and build: $setup_s s"
prev=$check_start
for suite in $suites; do
	[ -e "$suite.trs" ] || continue
	end=$(stat -c %Y "$suite.trs")
	echo "time: $suite: $((end - prev)) s"
	prev=$end
done
cat checks/times.txt
echo "time: in all: $SECONDS s"
echo "==== totals"
# shellcheck disable=SC2086
../tests/totals.sh $suites checks/style checks/distcheck checks/packaging checks/asan-unit checks/fabtests
