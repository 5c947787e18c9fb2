# Reads runfabtests.sh's verbose (-vv) YAML, one file per provider and mode
# named PROVIDER.MODE.yaml, and prints a line per test:
#   provider TAB mode TAB result TAB seconds TAB test TAB reason
# and a line per run with its own summary:
#   total TAB provider TAB mode TAB pass TAB notrun TAB fail
# The reason is the first line of the client's, then the server's, output
# that names an error (else one that says why it did not run, else the last
# line); a test killed at the time limit (-v timeout) says so. Run with
# -v timeout=SECONDS.
function flush() {
	if (name == "")
		return
	why = creason != "" ? "client: " creason : sreason != "" ? "server: " sreason : ""
	if (why == "")
		why = cweak != "" ? "client: " cweak : sweak != "" ? "server: " sweak : ""
	if (why == "")
		why = clast != "" ? "client: " clast : slast != "" ? "server: " slast : "(no output)"
	# runfabtests' time includes the second it waits before the client.
	# Where it stopped says more than its first complaint.
	if (result ~ /^Fail/ && time + 1 >= timeout) {
		last = clast != "" ? "client: " clast : slast != "" ? "server: " slast : ""
		why = "timed out after " timeout " s" (last != "" ? ", last line " last : "")
	}
	print prov "\t" mode "\t" result "\t" time "\t" name "\t" why
	name = ""
}
# One line of a program's output, in the current block.
function out(line, err, weak) {
	if (line ~ /^[[:space:]]*$/)
		return
	err = line ~ /FAIL|[Ee]rror|ERROR|ret=-[0-9]|[Ff]ailed|[Tt]imed out|Assertion|Segmentation|Aborted|mismatch/
	weak = line ~ /skipped|not supported|No data|Function not implemented|ret=/
	if (block == "c") {
		clast = line
		if (err && creason == "")
			creason = line
		if (weak && cweak == "")
			cweak = line
	} else {
		slast = line
		if (err && sreason == "")
			sreason = line
		if (weak && sweak == "")
			sweak = line
	}
}
FNR == 1 {
	flush()
	f = FILENAME
	sub(/.*\//, "", f)
	sub(/\.yaml$/, "", f)
	mode = f
	sub(/.*\./, "", mode)
	prov = f
	sub(/\.[^.]*$/, "", prov)
	sub(/_/, ";", prov) # verbs_ofi_rxm: the ';' was not for a file name
}
# A program killed mid-line leaves the next record's start on that line.
block != "" && /.- name: / {
	i = index($0, "- name: ")
	out(substr($0, 5, i - 5))
	$0 = substr($0, i)
}
/^- name: / {
	flush()
	name = $0
	sub(/^- name: +/, "", name)
	sub(/ -p "[^"]*"/, "", name)
	result = time = creason = sreason = cweak = sweak = clast = slast = block = ""
	next
}
/^  result: / { result = $2; next }
/^  time: / { time = $2; next }
/^  server_stdout: / { block = "s"; next }
/^  client_stdout: / { block = "c"; next }
/^  [a-z_]+: / { block = ""; next }
/^    / && block != "" {
	out(substr($0, 5))
	next
}
/^# Total Pass/ { flush(); tp[prov "\t" mode] = $NF }
/^# Total Notrun/ { tn[prov "\t" mode] = $NF }
/^# Total Fail/ { tf[prov "\t" mode] = $NF }
END {
	flush()
	for (k in tp)
		print "total\t" k "\t" tp[k] "\t" tn[k] "\t" tf[k]
}
