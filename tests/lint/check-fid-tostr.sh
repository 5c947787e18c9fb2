#!/bin/bash
# No fi_tostr(..., FI_TYPE_FID) inside the provider (issue 33): for
# FI_TYPE_FID libfabric calls the object's own tostr, writing into the
# buffer fi_tostr itself returns, so a log line built that way on one of
# gdrfab's objects, from its tostr or any path the tostr can reach,
# recursed until the stack ran out (only with logging on, when the line is
# formatted). The provider names its objects with gdrfab_fclass_name() or
# gdrfab_fid_tostr() (obj/gdrfab_fid_tostr.h). Any FI_TYPE_FID outside a
# comment in prov/ fails. Run first against a made-up tree with one hit
# and one comment (self-test), so that a pattern that stops matching
# fails too.
#   tests/lint/check-fid-tostr.sh [ROOT]   (default: this checkout)
# Prints "fid-tostr: N passed, M failed".
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

# hits ROOT: "path:line:text" for each FI_TYPE_FID in code (a line that is
# not a comment's, the name whole).
hits() {
	(cd "$1" && grep -rnE --include='*.[ch]' '(^|[^[:alnum:]_])FI_TYPE_FID([^[:alnum:]_]|$)' prov |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|/\*|//)')
}

passed=0 failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/prov/x"
cat >"$scratch/prov/x/a.c" <<'C'
/* fi_tostr(fid, FI_TYPE_FID) recursed: a comment is not a hit. */
static const char *f(struct fid *fid)
{
	return fi_tostr(&fid->fclass, FI_TYPE_FID);
}
C
if [ "$(hits "$scratch" | wc -l)" = 1 ] && hits "$scratch" | grep -q 'a.c:4:'; then
	passed=$((passed + 1))
else
	echo "FAIL: self-test: the made-up tree's one use was not found alone"
	failed=$((failed + 1))
fi

found=$(hits "$srcdir")
if [ -z "$found" ]; then
	passed=$((passed + 1))
else
	echo "FAIL: fi_tostr(..., FI_TYPE_FID) in the provider (use gdrfab_fclass_name or gdrfab_fid_tostr):"
	echo "$found"
	failed=$((failed + 1))
fi
echo "fid-tostr: $passed passed, $failed failed"
[ "$failed" = 0 ]
