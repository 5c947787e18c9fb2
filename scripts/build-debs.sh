#!/bin/bash
# Builds gdrfab's Debian packages (libfabric-gdrfab, libfabric-gdrfab-dev,
# gdrfab-dkms) with dpkg-buildpackage from an export of the committed tree,
# never from the worktree's files: what is not committed is not packaged.
#   scripts/build-debs.sh [REF]      (default HEAD; results in build/debs)
# The packaging is contrib/debian (it becomes debian/ in the export). Needs
# dpkg-dev, debhelper and dh-dkms (scripts/install-deps.sh) and the build
# dependencies in contrib/debian/control, which dpkg-buildpackage checks.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:-HEAD}
out=$PWD/build/debs
git rev-parse --verify -q "$ref^{commit}" >/dev/null ||
	{ echo "build-debs: $ref is not a commit" >&2; exit 1; }
for tool in dpkg-buildpackage dh dh_dkms; do
	command -v "$tool" >/dev/null ||
		{ echo "build-debs: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

# The upstream version is configure.ac's; the changelog must name it, so
# that a version bump comes with a changelog entry.
version=$(git show "$ref:configure.ac" |
	sed -n 's/^AC_INIT(\[gdrfab\], *\[\([^]]*\)\].*/\1/p')
deb_version=$(git show "$ref:contrib/debian/changelog" |
	sed -n '1s/^gdrfab (\([^)]*\)).*/\1/p')
if [ "${deb_version%-*}" != "$version" ]; then
	echo "build-debs: contrib/debian/changelog is at $deb_version," \
		"configure.ac at $version: add a changelog entry" >&2
	exit 1
fi

rm -rf "$out"
mkdir -p "$out"
# The orig tarball: the committed tree but other projects' topology
# exports, which only the tests read (contrib/debian/copyright,
# Files-Excluded). gzip -n and git's commit time keep it reproducible.
git archive --format=tar --prefix="gdrfab-$version/" "$ref" -- . \
	':(exclude)tests/topo/fixtures/real' | gzip -n -9 >"$out/gdrfab_$version.orig.tar.gz"
tar -xzf "$out/gdrfab_$version.orig.tar.gz" -C "$out"
cp -a "$out/gdrfab-$version/contrib/debian" "$out/gdrfab-$version/debian"

echo "build-debs: building gdrfab $deb_version from $(git rev-parse --short "$ref")"
(cd "$out/gdrfab-$version" && dpkg-buildpackage --unsigned-source --unsigned-changes \
	--unsigned-buildinfo -j2)
rm -rf "$out/gdrfab-$version"
echo "build-debs: packages in build/debs:"
ls "$out"/*.deb
