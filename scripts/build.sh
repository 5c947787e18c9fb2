#!/bin/bash
# Generates, configures and builds gdrfab in ./build (kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] || ../configure --quiet
make -j"$(nproc)" --no-print-directory
