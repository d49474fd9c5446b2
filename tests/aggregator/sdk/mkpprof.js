// mkpprof.js KIND > FILE — hostile and typed pprof written by a real
// third-party encoder (pprof-format, the one @datadog/pprof uses), for
// tests/aggregator/hostile.test.  KIND:
//   deep N      one sample N frames deep (cpu/nanoseconds)
//   badutf8     a function name that is not UTF-8 (bytes patched after encoding)
//   heap        alloc_space/bytes only: a memory profile
//   time        wall/nanoseconds, two stacks
//   bomb N      a time profile padded to N MiB of zeros in a comment string, gzip'ed
'use strict';
const { Profile, ValueType, Sample, Location, Line, Function: Fn, StringTable } = require('pprof-format');
const zlib = require('zlib');

function build(type, unit, stacks, comment) {
  const st = new StringTable();
  const functions = [], locations = [], samples = [];
  const fid = new Map();
  const loc = (name) => {
    if (!fid.has(name)) {
      const id = functions.length + 1;
      functions.push(new Fn({ id, name: st.dedup(name), systemName: st.dedup(name) }));
      locations.push(new Location({ id, line: [new Line({ functionId: id })] }));
      fid.set(name, id);
    }
    return fid.get(name);
  };
  for (const [frames, v] of stacks)	// frames leaf first, as pprof wants
    samples.push(new Sample({ locationId: frames.map(loc), value: [v] }));
  const p = new Profile({
    sampleType: [new ValueType({ type: st.dedup(type), unit: st.dedup(unit) })],
    sample: samples, location: locations, function: functions, stringTable: st,
    comment: comment ? [st.dedup(comment)] : [],
    durationNanos: 10e9, periodType: new ValueType({ type: st.dedup(type), unit: st.dedup(unit) }), period: 1,
  });
  return Buffer.from(p.encode());
}

const [kind, arg] = process.argv.slice(2);
let out;
switch (kind) {
case 'deep': {
  const n = +arg, f = [];
  for (let i = 0; i < n; i++) f.push('f' + i);
  out = build('cpu', 'nanoseconds', [[f, 1000]]);
  break;
}
case 'badutf8': {
  out = build('cpu', 'nanoseconds', [[['BADUTF8X', 'main'], 5]]);
  const i = out.indexOf('BADUTF8X');
  out[i + 3] = 0xff; out[i + 4] = 0xfe;	// same length: the protobuf stays well-formed
  break;
}
case 'heap':
  out = build('alloc_space', 'bytes', [[['alloc', 'main'], 4096]]);
  break;
case 'time':
  out = build('wall', 'nanoseconds', [[['work', 'main'], 7000000000], [['idle', 'main'], 300]]);
  break;
case 'bomb':
  out = zlib.gzipSync(build('cpu', 'nanoseconds', [[['a', 'main'], 1]], '\0'.repeat(+arg << 20)), { level: 9 });
  break;
default:
  process.stderr.write('mkpprof.js: unknown kind ' + kind + '\n');
  process.exit(2);
}
process.stdout.write(out);
