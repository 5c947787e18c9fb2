#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks contrib/spack/packages/gdrfab/package.py without Spack: a stand-in
for spack.package records what the recipe declares, and the check fails if
the recipe does not compile or import (a Spack name the stand-in lacks must
be added to it), is not an AutotoolsPackage, lacks a version, the cuda
variant or a dependency (libfabric, rdma-core, hwloc; cuda only with +cuda),
or configures CUDA the wrong way round."""
import importlib.util
import os
import sys
import types

sys.dont_write_bytecode = True  # nothing written beside the recipe

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPE = os.path.join(HERE, "..", "..", "contrib", "spack", "packages", "gdrfab", "package.py")

declared = {"version": [], "variant": [], "depends_on": [], "license": []}


def directive(kind):
    def record(*args, **kwargs):
        declared[kind].append((args, kwargs))

    return record


class AutotoolsPackage:
    pass


class Spec:
    """Just enough of a spec: satisfies() for variants, [dep].prefix."""

    def __init__(self, variants):
        self.variants = variants

    def satisfies(self, constraint):
        return constraint in self.variants

    def __getitem__(self, name):
        return types.SimpleNamespace(prefix="/opt/" + name)


def stand_in_modules():
    spack = types.ModuleType("spack")
    package = types.ModuleType("spack.package")
    names = {
        "AutotoolsPackage": AutotoolsPackage,
        "version": directive("version"),
        "variant": directive("variant"),
        "depends_on": directive("depends_on"),
        "license": directive("license"),
        "which": lambda name: (lambda *a, **k: None),
        "Executable": lambda path: (lambda *a, **k: None),
    }
    for name, value in names.items():
        setattr(package, name, value)
    package.__all__ = list(names)
    spack.package = package
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = package


def fail(why):
    print(f"FAIL: spack recipe: {why}")
    print("spack-recipe: 0 passed, 1 failed")
    sys.exit(1)


def main():
    stand_in_modules()
    spec = importlib.util.spec_from_file_location("gdrfab_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # a syntax error or a name Spack lacks
        fail(f"{RECIPE} does not import: {err!r}")
    cls = getattr(module, "Gdrfab", None)
    if cls is None or not issubclass(cls, AutotoolsPackage):
        fail("no class Gdrfab(AutotoolsPackage)")
    if not cls.__doc__ or not getattr(cls, "homepage", None):
        fail("Gdrfab needs a docstring and a homepage")
    if not declared["version"]:
        fail("no version()")
    if not any(args and args[0] == "cuda" for args, _ in declared["variant"]):
        fail("no cuda variant")
    deps = {}
    for args, kwargs in declared["depends_on"]:
        deps[args[0].split("@")[0]] = kwargs
    for name in ("libfabric", "rdma-core", "hwloc", "cuda"):
        if name not in deps:
            fail(f"no depends_on('{name}')")
    if deps["cuda"].get("when") != "+cuda":
        fail("cuda must be a dependency only when +cuda")
    repo_yaml = os.path.join(os.path.dirname(RECIPE), "..", "..", "repo.yaml")
    try:
        with open(repo_yaml) as f:
            if "namespace:" not in f.read():
                fail("contrib/spack/repo.yaml names no namespace")
    except OSError:
        fail("contrib/spack/repo.yaml is missing: spack repo add needs it")
    recipe = cls()
    recipe.spec = Spec(set())
    if recipe.configure_args() != ["--without-cuda"]:
        fail(f"~cuda configures {recipe.configure_args()}, not --without-cuda")
    recipe.spec = Spec({"+cuda"})
    if recipe.configure_args() != ["--with-cuda=/opt/cuda"]:
        fail(f"+cuda configures {recipe.configure_args()}")
    print(f"spack recipe: Gdrfab(AutotoolsPackage), {len(declared['version'])} version(s),"
          f" depends on {', '.join(sorted(deps))}")
    print("spack-recipe: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
