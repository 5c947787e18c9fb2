# Reads one object file as objdump prints it, three parts, each after a
# marker line: "@syms" (objdump -t), "@relocs" (objdump -r) and "@code"
# (objdump -dr). Prints, FILE being -v file (the source, relative to src/):
#   def FILE SYM            a function FILE defines (global or static)
#   calls FILE FN CALLEE    function FN calls CALLEE directly
#   ref FILE FN TARGET      function FN takes TARGET's address (a function,
#                           or a table of them: check-layers.sh tells which)
#   holds FILE TABLE TARGET data TABLE is initialised with TARGET's address
#   indirect FILE           FILE calls through a pointer (not a switch's
#                           `jmp *%reg` into its jump table)
# A static symbol is named "FILE:SYM". A call or jump's relocation is a
# call; every other relocation, and a rip-relative `lea` of a function of
# this file (it needs no relocation), takes an address. x86-64 objects
# (relocation names, call and lea): elsewhere no pointer edge is seen.
function hex(h,   i, n) { # POSIX awk has no strtonum
	n = 0
	for (i = 1; i <= length(h); i++)
		n = n * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
	return n
}
function fn_at(sec, off,   k) { # the function or object at sec+off
	for (k in start)
		if (secof[k] == sec && off >= start[k] && off < start[k] + size[k])
			return k
	return ""
}
function target(s,   sec, off) { # a relocation's symbol, resolved
	sub(/-0x0*4$/, "", s)
	if (match(s, /\+0x[0-9a-f]+$/)) {
		off = hex(substr(s, RSTART + 3)); sec = substr(s, 1, RSTART - 1)
	} else if (s ~ /^\./) {
		off = 0; sec = s
	} else
		return s
	return fn_at(sec, off)
}
function name(s) { return (s in local) ? file ":" s : s }
/^@syms/ { part = "syms"; next }
/^@relocs/ { part = "relocs"; next }
/^@code/ { part = "code"; next }
part == "syms" && NF >= 5 && $0 ~ / [FO] / {
	# addr flags... section size name
	s = $NF; sz = $(NF - 1); sec = $(NF - 2)
	start[s] = hex($1); size[s] = hex(sz); secof[s] = sec
	if ($0 ~ /^[0-9a-f]+ l/) local[s] = 1
	if ($0 ~ / F /) { fnsym[s] = 1; print "def", file, name(s) }
	next
}
part == "relocs" && /^RELOCATION RECORDS FOR/ {
	sec = $4; gsub(/[\[\]:]/, "", sec)
	keep = sec !~ /^\.(text|debug|eh_frame|note|comment)/
	next
}
part == "relocs" && keep && $1 ~ /^[0-9a-f]+$/ && NF == 3 {
	t = target($3); tbl = fn_at(sec, hex($1))
	if (t != "") print "holds", file, (tbl == "" ? file ":" sec : name(tbl)), name(t)
	next
}
part == "code" && /^[0-9a-f]+ <[^>]+>:$/ {
	cur = $2; gsub(/[<>:]/, "", cur)
	next
}
part == "code" && cur != "" && /R_X86_64_/ {
	t = target($NF)
	if (t == "") next
	if ($(NF - 1) ~ /PLT32/ && prev ~ /(call|jmp) /) print "calls", file, name(cur), name(t)
	else print "ref", file, name(cur), name(t)
	next
}
part == "code" && cur != "" {
	prev = $0
	if (($0 ~ /\tcall +\*/ || $0 ~ /\tjmp +\*[^%]/) && !indirect++) print "indirect", file
	# A rip-relative lea of a function in this section needs no relocation.
	if ($0 ~ /\tlea / && match($0, /# [0-9a-f]+ <[^>+]+>$/)) {
		t = substr($0, RSTART, RLENGTH); sub(/^# [0-9a-f]+ </, "", t); sub(/>$/, "", t)
		if (fnsym[t]) print "ref", file, name(cur), name(t)
	}
}
