#!/bin/bash
# gdrfab under a second, newer libfabric core: builds libfabric 2.6.0 from
# ../shared/consumers (skipped, named, when it is not there), builds
# gdrfab's examples against its headers (so they ask for API 2.6, as an
# application built there does), and checks inside the VM that the same
# libgdrfab-fi.so, built with the 1.17 headers, is found and moves data
# (tests/consumers/check-libfabric2.sh). Exit 77 when it cannot run here.
set -u
. "$(dirname "$0")/../vm/runner/vm-prelude.sh" "libfabric 2.6 runtime"
lf=$builddir/libfabric-2.6
"$srcdir/tests/consumers/build-libfabric2.sh" "$lf"
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
mkdir -p "$lf/examples"
for prog in gdrfab_pingpong gdrfab_bw; do
	cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$lf/include" -I"$srcdir/examples" \
		"$srcdir/examples/$prog.c" "$srcdir/examples/ex_common.c" "$srcdir/examples/ex_objs.c" "$srcdir/examples/ex_buf.c" \
		-o "$lf/examples/$prog" -L"$lf/lib" -Wl,-rpath,"$lf/lib" -lfabric -ldl || exit 1
done
exec "$srcdir/tests/vm/runner/vm-run" --timeout "${GDRFAB_VM_TIMEOUT:-900}" -- \
	"$srcdir/tests/consumers/check-libfabric2.sh" "$lf"
