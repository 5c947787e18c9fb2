#!/bin/bash
# Proves a new user's first hour, from the committed HEAD:
#  1. clones it into fresh paths (under /root and /tmp, which the VM's guest
#     covers with tmpfs, and one with a space), with no ../shared beside
#     them, and runs the README's two commands in each: every run must exit
#     0, and the totals must be the same everywhere; where the path has
#     a space, one benchmark (instr-per-msg.sh, briefly) must run too;
#  2. bootstraps a fresh Debian 12 (debootstrap) into a folder and, chrooted
#     there, installs with scripts/install-deps.sh, builds and runs the unit
#     and topology tests: the package list must be complete on its own.
#   scripts/newcomer-check.sh [clones|chroot|all]   (default all; as root)
# Writes its logs under $GDRFAB_NEWCOMER_LOGS (default /tmp/gdrfab-newcomer).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
logs=${GDRFAB_NEWCOMER_LOGS:-/tmp/gdrfab-newcomer}
rm -rf "$logs"
mkdir -p "$logs"
head=$(git -C "$top" rev-parse --short HEAD)
failures=0
say() { printf 'newcomer: %s\n' "$*"; }
bad() {
	say "FAIL: $*"
	failures=$((failures + 1))
}

clones() {
	local dirs=(/root/gdrfab-newcomer /tmp/gdrfab-newcomer-clone "/home/newcomer/gdrfab with space")
	local totals=() d name
	for d in "${dirs[@]}"; do
		name=$(basename "$d" | tr ' ' _)
		rm -rf "$d"
		mkdir -p "$(dirname "$d")"
		git clone -q "$top" "$d" || { bad "cannot clone into $d"; continue; }
		say "$d: ./scripts/demo.sh (log $logs/$name.demo.log)"
		if (cd "$d" && ./scripts/demo.sh) >"$logs/$name.demo.log" 2>&1 </dev/null; then
			grep -A8 'bytes |' "$logs/$name.demo.log" | sed 's/^/    /'
		else
			bad "$d: demo.sh exited non-zero"
			tail -n 15 "$logs/$name.demo.log"
		fi
		say "$d: ./scripts/test.sh (log $logs/$name.test.log)"
		if ! (cd "$d" && ./scripts/test.sh) >"$logs/$name.test.log" 2>&1 </dev/null; then
			bad "$d: test.sh exited non-zero"
			sed -n '/^==== totals/,$p' "$logs/$name.test.log"
		fi
		# One cheap benchmark where the path has a space: the callgrind
		# one, whose file names are built from the checkout's path.
		if [ "$d" != "${d// /}" ]; then
			say "$d: tests/bench/instr-per-msg.sh 8 (log $logs/$name.bench.log)"
			if (cd "$d" && GDRFAB_INSTR_ITERS=20 GDRFAB_INSTR_LONG=0 \
				GDRFAB_INSTR_BASELINE=0 GDRFAB_INSTR_IDLE=100 \
				tests/bench/instr-per-msg.sh 8) >"$logs/$name.bench.log" 2>&1 </dev/null &&
				grep -q '^gdrfab .* client ' "$logs/$name.bench.log"; then
				grep '^gdrfab ' "$logs/$name.bench.log" | sed 's/^/    /'
			else
				bad "$d: instr-per-msg.sh failed from a path with a space"
				tail -n 15 "$logs/$name.bench.log"
			fi
		fi
		totals+=("$(grep '^gdrfab: ' "$logs/$name.test.log" | tail -n 1)")
		say "$d: ${totals[-1]:-no totals line}"
		sed -n '/^skipped:/,/^[a-z]/p' "$logs/$name.test.log" | grep '^  ' | sed 's/^/    skipped /'
	done
	if [ "$(printf '%s\n' "${totals[@]}" | sort -u | wc -l)" != 1 ]; then
		bad "the clones' totals differ: ${totals[*]}"
	fi
	for d in "${dirs[@]}"; do rm -rf "$d"; done
	rm -rf /home/newcomer
}

chroot_check() {
	local root=/var/tmp/gdrfab-debootstrap
	command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
	# The Debian mirror this machine's apt already uses.
	local mirror
	mirror=$(sed -n 's|^URIs: *\(.*/debian\)/*$|\1|p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null)
	[ -n "$mirror" ] || { bad "no Debian mirror in this machine's apt sources"; return; }
	say "bootstrapping Debian 12 into $root from $mirror (log $logs/debootstrap.log)"
	umount -R "$root/proc" "$root/sys" "$root/dev" 2>/dev/null
	rm -rf "$root"
	if ! debootstrap --variant=minbase bookworm "$root" "$mirror" \
		>"$logs/debootstrap.log" 2>&1; then
		bad "debootstrap failed"
		tail -n 15 "$logs/debootstrap.log"
		return
	fi
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	# Only git added to what Debian bootstraps, as a new user would have.
	git clone -q "$top" "$root/root/gdrfab"
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	say "in the chroot: install-deps, build, unit and topology tests (log $logs/chroot.log)"
	if chroot "$root" /bin/bash -c '
		set -e
		cd /root/gdrfab
		scripts/install-deps.sh
		scripts/build.sh
		cd build
		make --no-print-directory check TESTS="tests/unit/gdrfab_unit tests/topo/check-topo.sh" || true
		../tests/totals.sh tests/unit/gdrfab_unit tests/topo/check-topo.sh' \
		>"$logs/chroot.log" 2>&1 </dev/null; then
		say "chroot: $(grep '^gdrfab: ' "$logs/chroot.log" | tail -n 1)"
	else
		bad "chroot: $(grep '^gdrfab: ' "$logs/chroot.log" | tail -n 1)"
		tail -n 30 "$logs/chroot.log"
	fi
	umount -R "$root/proc" "$root/sys" "$root/dev" 2>/dev/null
	rm -rf "$root"
}

say "checking HEAD $head"
case $what in
clones) clones ;;
chroot) chroot_check ;;
all) clones && chroot_check ;;
*) echo "usage: $0 [clones|chroot|all]" >&2; exit 2 ;;
esac
if [ $failures = 0 ]; then
	say "PASS: HEAD $head works for a newcomer ($what)"
else
	say "$failures failure(s) for HEAD $head ($what)"
fi
[ $failures = 0 ]
