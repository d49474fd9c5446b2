/*
 * probes.d — the one list of glassfs USDT probes (provider "glassfs").
 *
 * `dtrace -h -s fs/base/probes.d` turns it into build/gen/probes.h with
 * semaphores: GLASSFS_NAME_ENABLED() is a single predictable load that is
 * false while nobody listens, so callers guard any expensive argument
 * (timestamps, lookups) with it.  See fs/base/probe.h.
 *
 * Units: *_ns are nanoseconds (CLOCK_MONOTONIC); offsets and lengths are
 * bytes; addresses are the lock's or node's address in the daemon.
 * Arguments are plain integers, never struct pointers.
 *
 * The README's probe table is generated from the comments below
 * (tools/probes-doc.sh); a test compares this list with `readelf -n`.
 * Each probe has a one-line comment "@ when it fires" above it.
 */
provider glassfs {
	/* @ a thread starts waiting for a lock it could not take at once */
	probe lock__wait__begin(uint64_t addr, int cls, uint64_t tree, int level, int group, int mode);
	/* @ a lock was acquired; wait_ns is 0 when it was free */
	probe lock__acquired(uint64_t addr, int cls, uint64_t tree, int level, int group, int mode, uint64_t wait_ns);
	/* @ a lock was released after being held hold_ns (0 for shared holds) */
	probe lock__released(uint64_t addr, int cls, uint64_t tree, int level, int group, int mode, uint64_t hold_ns);
	/* @ a lock that could not be taken at once was acquired after waiting wait_ns (fires only on contention: the cheap probe for wait statistics) */
	probe lock__contended(uint64_t addr, int cls, uint64_t tree, int level, int group, int mode, uint64_t wait_ns);

	/* @ an operation started a new transaction */
	probe txn__start(uint64_t transid);
	/* @ an operation joined the running transaction */
	probe txn__join(uint64_t transid);
	/* @ a commit begins; reason: 1 periodic, 2 sync, 3 unmount, 4 dirty threshold, 5 fsync, 6 other, 7 space (an operation found no space that a commit frees) */
	probe commit__start(uint64_t transid, int reason);
	/* @ a commit phase ended; phase: 1 wait writers, 2 run refs, 3 free space, 4 write nodes, 5 flush, 6 super, 7 discard, 8 unpin */
	probe commit__phase(uint64_t transid, int phase, uint64_t dur_ns);
	/* @ a commit ended */
	probe commit__end(uint64_t transid, uint64_t dur_ns, uint64_t nodes_written, uint64_t bytes_written);
	/* @ an operation blocked waiting for a commit to finish */
	probe commit__wait(uint64_t transid, uint64_t dur_ns);

	/* @ a freed extent was queued for discard */
	probe discard__queued(uint64_t devid, uint64_t offset, uint64_t len);
	/* @ a discard was sent to the device */
	probe discard__issued(uint64_t devid, uint64_t offset, uint64_t len);
	/* @ a discard completed */
	probe discard__done(uint64_t devid, uint64_t offset, uint64_t len, uint64_t dur_ns);
	/* @ an operation or commit stalled waiting on discards */
	probe discard__stall(uint64_t transid, uint64_t dur_ns);

	/* @ fsync/fdatasync entered */
	probe fsync__start(uint64_t ino, int datasync);
	/* @ fsync/fdatasync returned */
	probe fsync__end(uint64_t ino, int ret, uint64_t dur_ns);
	/* @ fsync=log: an fsync starts writing the inode to the fsync log of transaction transid */
	probe log__sync__start(uint64_t ino, uint64_t transid);
	/* @ fsync=log: done; ret 0 durable in the log, 1 not covered (full commit follows), <0 -errno; items and bytes of its record */
	probe log__sync__end(uint64_t ino, int ret, uint64_t items, uint64_t bytes, uint64_t dur_ns);
	/* @ mount replayed an fsync log left by a crash: inodes and items replayed, ret 0 or -errno */
	probe log__replay(uint64_t inodes, uint64_t items, int ret, uint64_t dur_ns);

	/* @ a FUSE request entered the engine (opcode: FUSE_* numbers) */
	probe fuse__op__start(int opcode, uint64_t ino);
	/* @ a FUSE request was answered; ret is 0 or -errno */
	probe fuse__op__end(int opcode, uint64_t ino, int ret, uint64_t dur_ns);

	/* @ a device I/O was submitted; op: 0 read, 1 write, 2 flush, 3 discard */
	probe dev__io__submit(uint64_t devid, int op, uint64_t offset, uint64_t len);
	/* @ a device I/O completed */
	probe dev__io__done(uint64_t devid, int op, uint64_t offset, uint64_t len, int ret, uint64_t dur_ns);
	/* @ the read-ahead thread asked the OS to read [offset, offset + len) of a device ahead of a sequential stream (posix_fadvise WILLNEED); queued_ns since the READ queued it */
	probe readahead__issued(uint64_t devid, uint64_t offset, uint64_t len, uint64_t queued_ns);

	/* @ a B-tree node was found in the node cache */
	probe cache__hit(uint64_t bytenr, int level);
	/* @ a B-tree node had to be read from a device */
	probe cache__miss(uint64_t bytenr, int level);

	/* @ scrub finished a batch of extents (and once at the end); byte counts so far; total: every copy, checked's unit */
	probe scrub__progress(uint64_t checked, uint64_t corrected, uint64_t uncorrectable, uint64_t total);
	/* @ scrub found a bad copy; meta: 1 node, 0 data; repaired: 1 rewritten from a good copy */
	probe scrub__error(uint64_t logical, uint64_t devid, uint64_t physical, int meta, int repaired);
	/* @ a raid5/6 write put rows [row, row + rows) of the chunk on its stripes (full stripes, parity computed from the bytes written); failed: mask of stripes that missed it */
	probe stripe__write(uint64_t logical, uint64_t row, uint64_t rows, int stripes, int failed);
	/* @ a raid5/6 read rebuilt columns of a row (a missing or failing device, a checksum mismatch); columns: mask of rebuilt columns (data 0..k-1, then P, Q) */
	probe stripe__rebuild(uint64_t row_logical, int columns);
	/* @ scrub rewrote one column of a raid5/6 row; parity: 1 for P or Q, 0 for a data sector */
	probe parity__repair(uint64_t chunk, uint64_t row, int column, int parity);

	/* @ a snapshot was made inside a commit: source and new tree ids, root level */
	probe subvol__snapshot(uint64_t src, uint64_t id, int level, uint64_t dur_ns);
	/* @ the cleaner dropped a batch of a deleted subvolume; done: 1 when nothing is left */
	probe subvol__drop(uint64_t id, uint64_t transid, int done, uint64_t dur_ns);
	/* @ balance or device removal moved one chunk to new stripes (ret 0) or gave up on it (ret -errno); types are BG_* type|profile bits */
	probe balance__chunk(uint64_t logical, uint64_t length, uint64_t from_type, uint64_t to_type, int ret, uint64_t dur_ns);
	/* @ balance finished a chunk; counts so far */
	probe balance__progress(uint64_t chunks_done, uint64_t chunks_total, uint64_t bytes_done);
};
