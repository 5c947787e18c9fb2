# shellcheck shell=bash
# Sourced by the benchmarks' scripts that run inside the VM, from the
# build directory: this build's provider, verbs;ofi_rxm able to run on
# rxe, wait_port (check-lib.sh), and bench_stats, the one statistics
# helper (awk -f "$bench_stats" -f SUMMARY.awk).
export FI_PROVIDER_PATH=$PWD/.libs
export FI_UNIVERSE_SIZE=64 # verbs;ofi_rxm sizes CQs beyond rxe's limit otherwise
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_stats=$bench_dir/lib/stats.awk
. "$bench_dir/../vm/runner/check-lib.sh"
