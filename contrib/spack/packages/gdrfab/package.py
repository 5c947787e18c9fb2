# SPDX-License-Identifier: BSD-2-Clause
"""Spack recipe for gdrfab, for a site repository:

    spack repo add contrib/spack
    # in a Spack environment, from this clone:
    spack develop --path $PWD gdrfab@=main
    spack add gdrfab        # gdrfab+cuda to build with cuda.h
    spack install

The project publishes no repository address yet, so `git` below is a
placeholder (the reserved .invalid domain): set the real one with
`package_attributes: {git: ...}` under `gdrfab` in packages.yaml, or build
a clone with `spack develop` as above.
"""

from spack.package import *


class Gdrfab(AutotoolsPackage):
    """A libfabric provider for GPU programs on InfiniBand and RoCE networks:
    reliable-datagram endpoints over one RC queue pair per peer, moving host
    or CUDA memory (GPUDirect RDMA or staged), with tools to measure it and
    to pick each GPU's nearest NIC."""

    homepage = "https://gdrfab.invalid/"
    git = "https://gdrfab.invalid/gdrfab.git"

    license("BSD-2-Clause")

    version("main", branch="main")

    variant(
        "cuda",
        default=False,
        description="Build with CUDA's cuda.h (libcuda is loaded at run time either way)",
    )

    depends_on("c", type="build")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("libfabric@1.17:")
    depends_on("rdma-core")
    depends_on("hwloc@2:")
    depends_on("cuda", when="+cuda")

    def autoreconf(self, spec, prefix):
        # The project's generator: it also makes m4/, which git does not keep.
        bash = which("bash")
        bash("./autogen.sh")

    def configure_args(self):
        if self.spec.satisfies("+cuda"):
            return [f"--with-cuda={self.spec['cuda'].prefix}"]
        return ["--without-cuda"]

    def setup_run_environment(self, env):
        # The provider lands in this prefix's lib/libfabric, not in
        # libfabric's own: libfabric finds it through FI_PROVIDER_PATH.
        env.append_path("FI_PROVIDER_PATH", self.prefix.lib.libfabric)
