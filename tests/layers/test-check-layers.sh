#!/bin/bash
# The layer check must fail where the layers are broken: on a copy of the
# provider's sources with one upward include added (util/ including the
# object layer's header, which also closes a cycle) and with one include
# across the middle tier outside its edges (topo/ including hmem/), against
# this build's objects; and, on a small tree compiled here, callbacks and
# tables of function pointers that go up. Also: the real tree passes, and
# --counts prints the edges. Prints "layers-selftest: N passed, M failed"; 77 when the check
# itself skips (objects not built, no nm).
set -u
srcdir=${GDRFAB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${GDRFAB_BUILDDIR:-$PWD}
check=$srcdir/tests/layers/check-layers.sh
pass=0 fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/gdrfab-layers-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

ok() {
	echo "PASS: layers-selftest: $1"
	pass=$((pass + 1))
}
ko() {
	echo "FAIL: layers-selftest: $1"
	sed 's/^/    /' "$work/out"
	fail=$((fail + 1))
}

GDRFAB_SRCDIR=$srcdir GDRFAB_BUILDDIR=$builddir "$check" >"$work/out" 2>&1
rc=$?
if [ $rc = 77 ]; then
	cat "$work/out"
	exit 77
fi
if [ $rc = 0 ]; then ok "the tree as it is passes"; else ko "the tree as it is fails"; fi

# A copy of what the check reads: the sources and the allow-list.
mkdir -p "$work/src/prov/gdrfab" "$work/src/tests/layers"
cp -r "$srcdir/prov/gdrfab/src" "$work/src/prov/gdrfab/"
cp "$srcdir/tests/layers/allowed-upward.txt" "$work/src/tests/layers/"
run_broken() { # file to append an include to, header
	rm -rf "$work/broken"
	cp -r "$work/src" "$work/broken"
	echo "#include \"$2\"" >>"$work/broken/prov/gdrfab/src/$1"
	GDRFAB_SRCDIR=$work/broken GDRFAB_BUILDDIR=$builddir "$check" >"$work/out" 2>&1
}

run_broken util/gdrfab_ratelimit.c gdrfab_objs.h
if [ $? = 1 ] &&
	grep -q '^  include util/gdrfab_ratelimit.c -> obj/gdrfab_objs.h' "$work/out" &&
	grep -q 'the folders form a cycle' "$work/out"; then
	ok "an upward include fails, named, with the cycle it closes"
else
	ko "an upward include from util/ to obj/ was not caught"
fi

run_broken topo/gdrfab_topo.c gdrfab_hmem.h
if [ $? = 1 ] && grep -q '^  include topo/gdrfab_topo.c -> hmem/gdrfab_hmem.h' "$work/out"; then
	ok "an include across the middle tier outside its edges fails, named"
else
	ko "an include from topo/ to hmem/ was not caught"
fi

# An allowed edge that no longer exists is named for deletion.
rm -rf "$work/broken"
cp -r "$work/src" "$work/broken"
echo "util/gdrfab_ratelimit.c no_such_symbol" >>"$work/broken/tests/layers/allowed-upward.txt"
GDRFAB_SRCDIR=$work/broken GDRFAB_BUILDDIR=$builddir "$check" >"$work/out" 2>&1
if grep -q '^  util/gdrfab_ratelimit.c no_such_symbol' "$work/out"; then
	ok "a stale allowed edge is named"
else
	ko "a stale allowed edge was not named"
fi

# Function pointers, on a tree of its own built here: mem/ keeps a
# struct of callbacks, obj/ fills it with its own function and hands it
# down (a callback that skips the protocol tier), proto/ is handed one by
# obj/ (one step: allowed), and util/ names an obj/ function in a table.
fake=$work/fake
mkdir -p "$fake/prov/gdrfab/src/obj" "$fake/prov/gdrfab/src/mem" \
	"$fake/prov/gdrfab/src/proto" "$fake/prov/gdrfab/src/util"
cat >"$fake/prov/gdrfab/src/mem/fake_cache.c" <<'EOF_C'
struct fake_backend { int (*reg)(void *); };
static struct fake_backend fake_be;
void fake_cache_init(const struct fake_backend *b) { fake_be = *b; }
int fake_cache_get(void *p) { return fake_be.reg(p); }
EOF_C
cat >"$fake/prov/gdrfab/src/proto/fake_proto.c" <<'EOF_C'
static int (*fake_report)(int);
void fake_proto_init(int (*report)(int)) { fake_report = report; }
int fake_proto_done(int n) { return fake_report(n); }
EOF_C
cat >"$fake/prov/gdrfab/src/obj/fake_domain.c" <<'EOF_C'
struct fake_backend { int (*reg)(void *); };
void fake_cache_init(const struct fake_backend *b);
void fake_proto_init(int (*report)(int));
static int fake_reg(void *p) { return p != 0; }
static int fake_report(int n) { return n + 1; }
int fake_obj_named(void) { return 3; }
void fake_domain_init(void)
{
	struct fake_backend b = { .reg = fake_reg };
	fake_cache_init(&b);
	fake_proto_init(fake_report);
}
EOF_C
cat >"$fake/prov/gdrfab/src/util/fake_util.c" <<'EOF_C'
int fake_obj_named(void);
int (*const fake_table[])(void) = { fake_obj_named };
EOF_C
built=1
for c in "$fake"/prov/gdrfab/src/*/*.c; do
	${CC:-cc} -O2 -fPIC -c "$c" -o "${c%.c}.o" 2>"$work/out" || built=0
done
if [ $built = 0 ]; then
	ko "the function-pointer tree did not compile"
else
	GDRFAB_SRCDIR=$fake GDRFAB_BUILDDIR=$fake "$check" >"$work/out" 2>&1
	rc=$?
	if [ $rc = 1 ] &&
		grep -q '^  callback mem/fake_cache.c -> obj/fake_domain.c (fake_reg)' "$work/out"; then
		ok "a callback handed past a tier (mem calling obj's) fails, named"
	else
		ko "mem calling obj's function through a pointer was not caught"
	fi
	if [ $rc = 1 ] && ! grep -q 'proto/fake_proto.c -> obj' "$work/out"; then
		ok "a callback one step up (proto calling obj's) passes"
	else
		ko "a callback from proto to obj was refused"
	fi
	if [ $rc = 1 ] &&
		grep -q '^  pointer util/fake_util.c -> obj/fake_domain.c (fake_obj_named)' "$work/out"; then
		ok "a table naming a higher layer's function fails, named"
	else
		ko "util's table naming obj's function was not caught"
	fi
fi

GDRFAB_SRCDIR=$srcdir GDRFAB_BUILDDIR=$builddir "$check" --counts >"$work/out" 2>&1
if grep -q '^proto -> util *call' "$work/out" && grep -q '^obj -> proto *include' "$work/out"; then
	ok "--counts prints folder edges"
else
	ko "--counts printed no proto -> util calls or obj -> proto includes"
fi

echo "layers-selftest: $pass passed, $fail failed"
[ "$fail" = 0 ]
