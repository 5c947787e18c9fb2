#!/bin/bash
# Inside the VM: runfabtests.sh's quick set, as libfabric's CI runs it
# (server 192.0.2.2 on rxe1, client 192.0.2.1 on rxe0, no ssh: both on this
# host), for gdrfab and for verbs;ofi_rxm, in the default mode (addresses
# from node/service) and with -b (out-of-band address exchange), the two
# providers alternating so that both see the same boot. Each run's output,
# runfabtests' YAML, goes to OUTDIR/PROVIDER.MODE.yaml.
#   check-fabtests.sh FABTESTS_DIR OUTDIR TIMEOUT [SET [MODES [PROVIDERS
#                     [GDRFAB_EXCLUDES [OOB_SET]]]]]
# GDRFAB_EXCLUDES: a runfabtests exclude file (-f) for gdrfab's runs only;
# OOB_SET (default SET): the test set of the -b runs.
set -u
ft=$1 outdir=$2 limit=$3 set=${4:-quick} modes=${5:-default oob}
provs=${6:-gdrfab verbs;ofi_rxm} excludes=${7:-} oob_set=${8:-${4:-quick}}
# python3 here may be a pyenv shim, which needs the HOME that vm-run does
# not pass in; runfabtests only asks python for two errno values.
export PATH=/usr/bin:$ft/bin:$PATH
# When a client fails, runfabtests kills its server with kill -9 of the
# shell that started "timeout T server": timeout and the server live on,
# spinning on the VM's two vCPUs until T runs out and slowing every test
# after. In libfabric's CI the server sits behind ssh, whose death ends
# it; here a timeout first in PATH does that: each of timeout and the
# program dies with its parent.
shim=$outdir/.bin
mkdir -p "$shim"
cat >"$shim/timeout" <<'SHIM'
#!/bin/bash
# runfabtests' only form: timeout DURATION COMMAND [ARG...]
exec setpriv --pdeathsig KILL /usr/bin/timeout "$1" setpriv --pdeathsig KILL "${@:2}"
SHIM
chmod +x "$shim/timeout"
export PATH=$shim:$PATH
# runfabtests makes its temporary files in the current directory, and
# looks for exclude lists under ./test_configs: the output directory has
# none, so both providers run the same tests, 87 in the quick set
# (ofi_rxm.exclude would hide from the baseline tests that gdrfab runs).
cd "$outdir" || exit 1
for mode in $modes; do
	for prov in $provs; do
		opts=(-vv -T "$limit" -p "$ft/bin")
		if [ "$mode" = oob ]; then
			opts+=(-b -t "$oob_set")
		else
			opts+=(-t "$set")
		fi
		[ "$prov" = gdrfab ] && [ -n "$excludes" ] && opts+=(-f "$excludes")
		# gdrfab runs with its warnings on, as users run it: a warning
		# must not change what a call does, and a failing test's output
		# (runfabtests' YAML keeps it) then says what gdrfab saw.
		envs=(FI_LOG_LEVEL=${FI_LOG_LEVEL:-warn} FI_LOG_PROV=${FI_LOG_PROV:-gdrfab})
		# rxm sizes its verbs CQs from the universe size; past rxe's
		# 32767 entries they cannot be created.
		[ "$prov" != gdrfab ] && envs=(FI_UNIVERSE_SIZE=64)
		out=$outdir/${prov//;/_}.$mode.yaml
		echo "fabtests: $prov, $mode mode ($(date -u +%T))"
		env "${envs[@]}" "$ft/bin/runfabtests.sh" "${opts[@]}" \
			-s 192.0.2.2 -c 192.0.2.1 "$prov" >"$out" 2>&1
		rc=$?
		# Its status is non-zero whenever a test failed: only a missing
		# summary means the run itself went wrong.
		grep '^# Total' "$out" || echo "fabtests: $prov, $mode mode: no summary (status $rc)"
	done
done
