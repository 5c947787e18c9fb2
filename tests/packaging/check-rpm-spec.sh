#!/bin/bash
# The RPM spec (contrib/rpm/gdrfab.spec) follows configure.ac's version, and
# parses where rpmspec is installed (it is not in scripts/install-deps.sh:
# no RPM distribution runs the CI, so only the spec's syntax is checked).
set -euo pipefail
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
spec=$srcdir/contrib/rpm/gdrfab.spec
version=$(sed -n 's/^AC_INIT(\[gdrfab\], *\[\([^]]*\)\].*/\1/p' "$srcdir/configure.ac")
spec_version=$(sed -n 's/^Version: *//p' "$spec")
if [ "$spec_version" != "$version" ]; then
	echo "FAIL: rpm spec: Version $spec_version, configure.ac $version"
	echo "rpm-spec: 0 passed, 1 failed"
	exit 1
fi
if ! command -v rpmspec >/dev/null; then
	echo "rpm-spec: 1 passed, 0 failed"
	echo "SKIP: rpm-spec-parse: rpmspec is not installed (apt-get install rpm)"
	exit 0
fi
if ! rpmspec -P "$spec" >/dev/null; then
	echo "FAIL: rpm spec: rpmspec cannot parse $spec"
	echo "rpm-spec: 1 passed, 1 failed"
	exit 1
fi
echo "rpm-spec: 2 passed, 0 failed"
