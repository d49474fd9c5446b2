// fleet.js — the recorded fleet the dashboard tests load into glass-aggd:
// four hosts running fs_mark on glassfs, ten-second agent windows, in
// glass-agent's ingest format (POST /api/v1/ingest).  stor-03 is the
// outlier: locking=node (every B-tree search queues on the root lock) and
// a device whose discards are slow, so its off-CPU time is dominated by
// glock waits under btree_search and by trim stalls in the commit path.
//
// The stack shapes follow what glassfs's offcputime/wakeuptime/lockwait
// tools print (folded, root first); the numbers are fixed by a PRNG with a
// fixed seed, so every run ingests the same data — only the timestamps
// move, anchored to `now`, so the dashboards' default range (now-1h) sees it.
'use strict';

const HOSTS = [
	{host: 'stor-01', labels: {cluster: 'east', locking: 'groups:16', discard: 'async', device: 'nvme'}},
	{host: 'stor-02', labels: {cluster: 'east', locking: 'groups:16', discard: 'async', device: 'nvme'}},
	{host: 'stor-03', labels: {cluster: 'east', locking: 'node', discard: 'sync', device: 'ssd-slowtrim'}, outlier: true},
	{host: 'stor-04', labels: {cluster: 'east', locking: 'groups:16', discard: 'async', device: 'nvme'}},
];
const WINDOWS = 36;		// per host: six minutes of 10 s windows
const WINDOW_NS = 10e9;

const SYS = 'entry_SYSCALL_64_after_hwframe;do_syscall_64';
const FUTEX_WAIT = `syscall;${SYS};__x64_sys_futex;do_futex;futex_wait;futex_wait_queue;schedule;__schedule`;
const IO_WAIT = 'io_schedule;schedule;__schedule';
const WORKER = 'glassfs;start_thread;fuse_worker;fuse_session_process_buf';
const COMMITTER = 'glassfs;start_thread;txn_commit_thread;txn_commit';
const FSMARK = 'fs_mark;__libc_start_main;main';

// [stack, base ns per 10 s window on a normal host, multiplier on the outlier]
const OFFCPU = [
	[`glassfs;start_thread;fuse_worker;fuse_session_receive_buf;read;${SYS};ksys_read;vfs_read;fuse_dev_read;fuse_dev_do_read;request_wait_idle;schedule;__schedule`, 31e9, 0.55],
	[`${WORKER};fsops_create;txn_join;dir_insert;btree_insert;btree_search;glock_lock;glock_wait;${FUTEX_WAIT}`, 1.1e9, 14],
	[`${WORKER};fsops_create;txn_join;inode_insert;btree_insert;btree_search;glock_lock;glock_wait;${FUTEX_WAIT}`, 0.7e9, 12],
	[`${WORKER};fsops_lookup;dir_lookup;btree_lookup;btree_search;glock_lock_read;glock_wait;${FUTEX_WAIT}`, 0.45e9, 9],
	[`${WORKER};fsops_create;txn_join;dir_insert;btree_insert;btree_search;glock_lock_group;glock_wait;${FUTEX_WAIT}`, 0.9e9, 0.05],
	[`${WORKER};fsops_create;txn_join;txn_wait_commit;${FUTEX_WAIT}`, 0.6e9, 4],
	[`${WORKER};fsops_fsync;txn_commit_sync;txn_wait_commit;${FUTEX_WAIT}`, 0.8e9, 5],
	[`${COMMITTER};commit_write_nodes;dev_write;pwrite64;${SYS};ksys_pwrite64;vfs_write;blkdev_write_iter;__blkdev_direct_IO;${IO_WAIT}`, 0.9e9, 1.6],
	[`${COMMITTER};commit_write_super;dev_flush;fdatasync;${SYS};__x64_sys_fdatasync;blkdev_fsync;blkdev_issue_flush;submit_bio_wait;${IO_WAIT}`, 0.5e9, 1.4],
	[`${COMMITTER};discard_flush;dev_discard;fallocate;${SYS};__x64_sys_fallocate;vfs_fallocate;blkdev_fallocate;blkdev_issue_discard;submit_bio_wait;${IO_WAIT}`, 0.08e9, 70],
	[`glassfs;start_thread;txn_commit_thread;txn_sleep;clock_nanosleep;${SYS};__x64_sys_clock_nanosleep;hrtimer_nanosleep;do_nanosleep;schedule;__schedule`, 8.5e9, 0.7],
	[`${FSMARK};create_file;open64;${SYS};__x64_sys_openat;do_sys_openat2;path_openat;fuse_create_open;fuse_simple_request;request_wait_answer;schedule;__schedule`, 2.4e9, 3.2],
	[`${FSMARK};create_file;close;${SYS};__x64_sys_close;fput;fuse_flush;fuse_simple_request;request_wait_answer;schedule;__schedule`, 0.7e9, 2.2],
	[`${FSMARK};do_fsync;fsync;${SYS};__x64_sys_fsync;fuse_fsync;fuse_simple_request;request_wait_answer;schedule;__schedule`, 1.2e9, 4.5],
];

const WAKEUP = [
	[`${WORKER};fsops_create;txn_end;btree_release_path;glock_unlock;glock_wake;syscall;${SYS};__x64_sys_futex;do_futex;futex_wake;wake_up_q;try_to_wake_up`, 1.6e9, 10],
	[`${WORKER};fsops_create;txn_end;txn_wake_waiters;glock_wake;syscall;${SYS};__x64_sys_futex;do_futex;futex_wake;wake_up_q;try_to_wake_up`, 0.8e9, 4],
	[`swapper;secondary_startup_64;cpu_startup_entry;do_idle;__irq_exit_rcu;handle_softirqs;blk_done_softirq;blk_mq_complete_request;bio_endio;submit_bio_wait_endio;complete;try_to_wake_up`, 1.2e9, 8],
	[`glassfs;start_thread;fuse_worker;fuse_reply_entry;writev;${SYS};do_writev;fuse_dev_write;fuse_request_end;wake_up;try_to_wake_up`, 3.5e9, 2.5],
];

// Waiters' stacks, with the lock class as the leaf pseudo-frame the
// agent appends to glass-lockstat's waiter stacks (lock:CLASS), and the
// B-tree level the lock sat at (-1: not a node lock): the root of the fs
// tree is level 2, its children level 1, leaves level 0.
const LOCKWAIT = [
	[`${WORKER};fsops_create;txn_join;dir_insert;btree_insert;btree_search;glock_lock;lock:root`, 'root', 0.9e9, 16, 2],
	[`${WORKER};fsops_create;txn_join;inode_insert;btree_insert;btree_search;glock_lock;lock:root`, 'root', 0.5e9, 14, 2],
	[`${WORKER};fsops_lookup;dir_lookup;btree_lookup;btree_search;glock_lock_read;lock:root`, 'root', 0.3e9, 10, 2],
	[`${WORKER};fsops_create;txn_join;dir_insert;btree_insert;btree_search;glock_lock;lock:node`, 'node', 0.6e9, 2.5, 1],
	[`${WORKER};fsops_create;txn_join;dir_insert;btree_insert;btree_search;glock_lock_group;lock:group`, 'group', 0.8e9, 0.02, 0],
	[`${COMMITTER};alloc_reserve;space_alloc_extent;glock_lock;lock:alloc`, 'alloc', 0.25e9, 1.5, -1],
	[`${WORKER};fsops_fsync;txn_commit_sync;glock_lock;lock:txn`, 'txn', 0.2e9, 3, -1],
	[`${COMMITTER};discard_flush;discard_queue_drain;glock_lock;lock:dev`, 'dev', 0.04e9, 40, -1],
];

// The window's lock detail as glass-agent ships it (glass-lockstat -s -j
// without histograms): classes by (class, level), the contended instances
// (addresses fixed per host), the waiters' stacks leaf first.
function lockDetail(hostIdx, waits, bad, jit) {
	const classes = new Map();
	const stacks = [];
	LOCKWAIT.forEach(([s, cls, , , level], i) => {
		const v = waits[i];
		const k = cls + '@' + level;
		const waitsN = Math.max(1, Math.round(v / (bad ? 2.5e6 : 0.9e6)));
		const c = classes.get(k) || {class: cls, level, mode: cls === 'root' && i === 2 ? 'read' : 'write',
			acquired: 0, contended: 0, wait_ns: 0, wait_max_ns: 0, hold_ns: 0, holds: 0, hold_max_ns: 0};
		c.acquired += waitsN * 6; c.contended += waitsN; c.wait_ns += v;
		c.wait_max_ns = Math.max(c.wait_max_ns, Math.round(v / waitsN * 4));
		c.hold_ns += Math.round(v / 5); c.holds += waitsN * 6; c.hold_max_ns = Math.max(c.hold_max_ns, jit(2e5));
		classes.set(k, c);
		const frames = s.split(';').slice(0, -1).reverse();
		stacks.push({class: cls, level, wait_ns: v, count: waitsN, frames});
	});
	const cl = [...classes.values()];
	const base = 0x7f3a00000000 + hostIdx * 0x1000000;
	const inst = [];
	for (const c of cl) {
		if (c.level < 0 && c.class !== 'alloc') continue;
		const parts = c.class === 'root' ? 1 : 3;	// the root is one lock; nodes many
		for (let p = 0; p < parts; p++) {
			const share = parts === 1 ? 1 : [0.6, 0.3, 0.1][p];
			inst.push({addr: '0x' + (base + (c.level + 2) * 0x10000 + p * 0x4000).toString(16), class: c.class,
				tree: c.class === 'alloc' ? 10 : 5, level: c.level, group: c.class === 'group' ? p : -1,
				acquired: Math.round(c.acquired * share), contended: Math.round(c.contended * share),
				wait_ns: Math.round(c.wait_ns * share), wait_max_ns: c.wait_max_ns});
		}
	}
	inst.sort((a, b) => b.wait_ns - a.wait_ns);
	return {classes: cl, instances: inst.slice(0, 10), stacks};
}

function mulberry32(a) {
	return function () {
		a |= 0; a = a + 0x6D2B79F5 | 0;
		let t = Math.imul(a ^ a >>> 15, 1 | a);
		t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
		return ((t ^ t >>> 14) >>> 0) / 4294967296;
	};
}

// All windows, oldest first per host, the last ending just before nowSec.
// Nanosecond timestamps (~1.8e18) exceed 2^53, so they are built as decimal
// strings from whole seconds and stay exact.
function windows(nowSec, seed = 20160823) {
	const rnd = mulberry32(seed);
	const jit = (x, f = 0.15) => Math.round(x * (1 + (rnd() * 2 - 1) * f));
	const out = [];
	const end = Math.floor(nowSec / 10) * 10 - 10;
	HOSTS.forEach((h, hi) => {
		for (let w = 0; w < WINDOWS; w++) {
			const startSec = end - (WINDOWS - w) * 10;
			// The outlier's trouble starts a minute in: the first windows
			// look like everyone else, which the time series show.
			const bad = h.outlier && w >= 6;
			const k = (mult) => (bad ? mult : 1);
			const folded = (list) => list.map(([s, base, mult]) => `${s} ${jit(base * k(mult))}`).join('\n') + '\n';
			const lw = {}, waits = [];
			const lockFolded = LOCKWAIT.map(([s, cls, base, mult]) => {
				const v = jit(base * k(mult));
				lw[cls] = (lw[cls] || 0) + v;
				waits.push(v);
				return `${s} ${v}`;
			}).join('\n') + '\n';
			out.push({
				window_id: `${h.host}-${startSec}`,
				host: h.host,
				start_ns: startSec + '000000000',
				end_ns: (startSec + 10) + '000000000',
				labels: {kernel: '6.18.0-glass', ...h.labels},
				profiles: [
					{type: 'offcpu', units: 'ns', folded: folded(OFFCPU)},
					{type: 'wakeup', units: 'ns', folded: folded(WAKEUP)},
					{type: 'lockwait', units: 'ns', folded: lockFolded},
				],
				summaries: {
					commit_p99_ns: jit(bad ? 46e6 : 4.2e6, 0.25),
					commit_count: Math.round(jit(bad ? 3 : 9, 0.2)),
					lock_wait_ns: lw,
					trim_stall_ns: jit(bad ? 820e6 : 1.5e6, 0.3),
				},
				locks: lockDetail(hi, waits, bad, jit),
			});
		}
	});
	return out;
}

// The JSON text of a window with start_ns/end_ns as bare integers (the
// agent's wire format; strings above keep them exact in JS).
function toWire(w) {
	return JSON.stringify(w).replace(/"(start_ns|end_ns)":"(\d+)"/g, '"$1":$2');
}

module.exports = {HOSTS, WINDOWS, WINDOW_NS, windows, toWire, mulberry32};

if (require.main === module) {
	const now = Number(process.argv[2]) || Math.floor(Date.now() / 1000);
	for (const w of windows(now)) process.stdout.write(toWire(w) + '\n');
}
