# gen-folded.awk — a synthetic folded profile for the flame-graph benchmark.
#   awk -v n=200000 -v depth=20 -v seed=1 -f gen-folded.awk > out.folded
# N distinct stacks of DEPTH-4..DEPTH+4 frames walking a call graph of 4000
# functions (8 callees each, the deepest 4 frames in the kernel, "_[k]"),
# so prefixes are shared the way real profiles share them.
BEGIN {
	if (!n) n = 200000
	if (!depth) depth = 20
	srand(seed ? seed : 1)
	nf = 4000
	nw = split("search insert commit lock alloc write read flush", w, " ")
	for (i = 0; i < nf; i++)
		name[i] = sprintf("%s_%s_%d", (i % 3 ? "glass" : "btree"), w[1 + i % nw], i)
	got = 0
	while (got < n) {
		d = depth - 4 + int(rand() * 9)
		f = int(rand() * 4)
		s = "main;" name[f]
		for (k = 2; k < d; k++) {
			f = (f * 31 + 7 + int(rand() * 8)) % nf
			if (k >= d - 4)
				s = s ";" name[f] "_[k]"
			else
				s = s ";" name[f]
		}
		if (s in seen)
			continue
		seen[s] = 1
		print s " " (1 + int(rand() * 1000))
		got++
	}
}
