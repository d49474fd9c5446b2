#!/usr/bin/env python3
# pprof2folded.py FILE [TYPE]: a gzip'ed (or plain) profile.proto decoded
# with nothing but the wire format (no protobuf module needed), printed as
# folded stacks "root;...;leaf VALUE" of sample type TYPE (default: the
# profile's default_sample_type).  For tests of tools/lib/pprof.c.
import gzip, sys

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i

def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, wt = k >> 3, k & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little"); i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little"); i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v

def ints(wt, v):	# a repeated integer field, packed or not
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i); out.append(x)
    return out

raw = open(sys.argv[1], "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
strs, types, samples, funcs, locs, default = [], [], [], {}, {}, 0
for f, wt, v in fields(raw):
    if f == 6: strs.append(v.decode())
    elif f == 1: types.append(dict((g, x) for g, _, x in fields(v)))
    elif f == 2:
        loc, val = [], []
        for g, w, x in fields(v):
            if g == 1: loc += ints(w, x)
            elif g == 2: val += ints(w, x)
        samples.append((loc, val))
    elif f == 5:
        d = dict((g, x) for g, _, x in fields(v)); funcs[d.get(1, 0)] = d.get(2, 0)
    elif f == 4:
        lid, fids = 0, []
        for g, w, x in fields(v):
            if g == 1: lid = x
            elif g == 4: fids.append(dict((h, y) for h, _, y in fields(x)).get(1, 0))
        locs[lid] = fids
    elif f == 14: default = v
want = sys.argv[2] if len(sys.argv) > 2 else strs[default]
col = [strs[t.get(1, 0)] for t in types].index(want)
for loc, val in samples:
    names = [strs[funcs[fid]] for l in loc for fid in locs[l]]
    print(";".join(reversed(names)), val[col])
