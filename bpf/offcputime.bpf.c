// SPDX-License-Identifier: MIT
/*
 * offcputime.bpf.c — off-CPU time with kernel and user stacks, cheap enough
 * to leave on.
 *
 * libbpf-tools' offcputime takes two stacks at every switch-out (~5 us each)
 * and throws most away when the block turns out short.  Here we time first:
 *
 *   switch-out (tp_btf/sched_switch, prev): filter by tgid/pid, user/kernel
 *     thread and state; store the start time in task storage.  Nothing else.
 *   switch-in (same tracepoint, next): the same pid filter, then delta =
 *     now - start; drop it unless min <= delta <= max.  Only now take the
 *     kernel stack of `next` (not running, its stack is saved:
 *     bpf_get_task_stack).
 *   The user stack (take_ustack(): a frame-pointer walk in BPF) can only
 *     be read in the task's own context.  The loader picks where
 *     (--ustack-at; the stacks are the same):
 *     switch  at switch-out, for the blocks that passed the filters there:
 *             no other program (the default below -m 100, where nearly
 *             every block passes);
 *     resume  the block is parked in the task's storage as pending and its
 *             user stack taken at tp_btf/rseq_update, on the task's way
 *             back to user mode (see has_rseq());
 *     exit    parked, and taken at tp_btf/sys_exit when the task returns
 *             from the syscall it blocked in: only blocks that begin
 *             inside a syscall that has not returned (can_defer()).
 *     Blocks that cannot be parked take their user stack at switch-out.
 *
 * --eager (`eager` below) is the classic method, both stacks at switch-out,
 * kept to compare the two on the same workload.  --wakeup also records the
 * waker's stacks at sched_waking for blocks already longer than min.
 * --no-idle drops, at switch-out, FUSE workers that block reading requests
 * from /dev/fuse (a read whose file's read_iter is fuse_dev_read): a FUSE
 * daemon blocks there once per request, and those blocks are not
 * contention, so they are neither timed nor unwound.
 * The iter/task program, run once at the end, adds sleeps still in progress.
 *
 * The wall-clock view (glass-profile --wall) sets two more:
 *   runq   a block's runnable part is recorded apart, flagged
 *          OFFCPU_F_RUNQ with state R: all of a block that began with a
 *          preemption (the task stayed runnable), and, of a sleep, the
 *          time from its wakeup (tp_btf/sched_wakeup) to its switch-in; a
 *          new thread's wait from its first wakeup (sched_wakeup_new) to
 *          its first run is one too.  The scheduler's run_delay
 *          (/proc/PID/task/TID/schedstat, second field) counts the same.
 *   oncpu  each thread's time on a CPU, switch-in to switch-out, summed
 *          in `runtime` by thread: the on-CPU half measured, not
 *          estimated from samples.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "offcputime.h"

#define PF_KTHREAD	0x00200000
#define MAX_ENTRIES	10240	/* resized by the loader */
#define OFFCPU_MAX_DEPTH_POW2	128
#define ENOSYS		38
#define TASK_DEAD	0x80

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* per-CPU scratch buffers, one per program that may nest on a CPU */
enum { SLOT_SWITCH, SLOT_WALK, SLOT_SYSEXIT, SLOT_WAKING, SLOT_ITER, NSLOTS };

const volatile __u32 targ_tgid = 0;
const volatile __u32 targ_pid = 0;
const volatile bool user_only = false;
const volatile bool kernel_only = false;
const volatile int targ_state = -1;	/* -1 any, else prev_state & 3 (0 R, 1 S, 2 D) */
const volatile __u64 min_ns = 1000;
const volatile __u64 max_ns = ~0ULL;
const volatile bool eager = false;
const volatile bool wakeup = false;
const volatile bool no_idle = false;
const volatile bool defer_ustack = true;	/* user stacks at sys_exit (else at switch-out) */
const volatile bool resume_ustack = false;	/* ... at the return to user mode (rseq_update) */
const volatile __u64 fuse_dev_read_addr = 0;	/* kallsyms fuse_dev_read */
const volatile __u64 user_min_addr = 4096;	/* vm.mmap_min_addr: nothing is mapped below */
const volatile bool runq = false;	/* runnable time apart (OFFCPU_F_RUNQ) */
const volatile bool oncpu = false;	/* on-CPU time per thread into `runtime` */

struct waker {
	__u64 kstack, ustack;
	__u32 tgid, pid;
	char comm[OFFCPU_COMM_LEN];
};

struct pending {
	__u64 kstack;
	__u64 delta;
	__u32 state;
	__u32 flags;		/* OFFCPU_F_RUNQ */
	struct waker w;
};

struct task_info {
	__u64 start;		/* switch-out time, 0 when not tracked */
	__u64 kstack;		/* eager */
	__u64 ustack;		/* eager, or taken at switch-out outside a syscall */
	__u32 state;
	__u32 defer;		/* user stack deferred to syscall exit */
	__u64 woken;		/* runq: wakeup time of the current block, 0 none */
	__u64 run_start;	/* oncpu: switch-in time, 0 when not on a CPU */
	__u64 exec;		/* oncpu: se.sum_exec_runtime at the last switch */
	struct waker w;		/* --wakeup: who woke the current block */
	__u32 npending;
	struct pending pend[OFFCPU_PENDING];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_info);
} tasks SEC(".maps");

STACKTAB(stacks, MAX_ENTRIES);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
	__uint(max_entries, MAX_ENTRIES);
} counts SEC(".maps");

/* oncpu: thread id -> its time on a CPU in the window */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct offcpu_run);
	__uint(max_entries, MAX_ENTRIES);
} runtime SEC(".maps");

STACKTAB_SCRATCH(scratch, NSLOTS);

/* counters, seen, events: the tracers' shared maps. */
#define TRACEMAPS_COUNTERS	OC_NR
#define TRACEMAPS_SEEN		MAX_ENTRIES
#include "tracemaps.h"

/* Is t a traced thread (whatever its state)? */
static __always_inline bool allow_task(struct task_struct *t)
{
	__u32 pid = t->pid, tgid = t->tgid;
	bool kthread = t->flags & PF_KTHREAD;

	if (!pid)
		return false;	/* the idle task */
	if (targ_tgid && tgid != targ_tgid)
		return false;
	if (targ_pid && pid != targ_pid)
		return false;
	if (user_only && kthread)
		return false;
	if (kernel_only && !kthread)
		return false;
	return true;
}

static __always_inline bool allow(struct task_struct *t, unsigned int state,
				  bool preempt)
{
	if (!allow_task(t))
		return false;
	if (targ_state >= 0) {
		int s = preempt ? 0 : (int)(state & 3);

		if (s != targ_state)
			return false;
	}
	return true;
}

/* A stack goes into `stacks` under its hash; returns the hash, 0 if lost. */
static __always_inline __u64 stack_store(struct stack_ips *buf, __u64 bytes,
					 bool user)
{
	__u64 h;

	if (bytes / 8 >= OFFCPU_MAX_DEPTH)
		tracemaps_count(user ? OC_USTACK_TRUNC : OC_KSTACK_TRUNC);
	h = stacktab_put(&stacks, buf, bytes);
	if (!h && bytes >= 8)
		tracemaps_count(OC_STACKS_FULL);
	return h;
}

/* The running task's kernel or user stack, stored; its hash or 0. */
static __always_inline __u64 take_stack(void *ctx, __u32 slot, bool user)
{
	struct stack_ips *buf = bpf_map_lookup_elem(&scratch, &slot);
	long bytes;

	if (!buf)
		return 0;
	bytes = bpf_get_stack(ctx, buf->ips, sizeof(buf->ips),
			      user ? BPF_F_USER_STACK : 0);
	if (bytes <= 0) {
		tracemaps_count(user ? OC_USTACK_FAIL : OC_KSTACK_FAIL);
		return 0;
	}
	return stack_store(buf, bytes, user);
}

/*
 * The running task's user stack by its frame pointers, as the kernel's
 * perf unwinder walks it for bpf_get_stack(BPF_F_USER_STACK): the saved
 * user ip, then (next frame, return address) pairs read from bp on, until
 * a read fails (unmapped, not present, not a user address) or the depth
 * limit; a zero return address is stored and ends the stack for readers
 * as it does there.  The same stacks, cheaper: code built without frame
 * pointers (Debian's glibc, libfuse) leaves bp holding a small integer or
 * 0, and reading there is a page fault (~1.2 us here, fixed up because
 * page faults are disabled) that ends the stack after one frame.  Nothing
 * can be mapped below vm.mmap_min_addr, so a bp below it ends the stack
 * without the read: the result is the one the fault gives.  --eager keeps
 * the helper (the libbpf-tools method it stands for); offcpu.test compares
 * the two.  32-bit tasks (other code segment) use the helper.
 */
#define USER64_CS	0x33

struct uwalk {
	struct stack_ips *buf;
	__u64 bp;
	__u32 n;
};

static long uwalk_one(__u64 i, void *data)
{
	struct uwalk *w = data;
	__u64 frame[2], idx;

	if (w->bp < user_min_addr ||
	    bpf_probe_read_user(frame, sizeof(frame), (void *)w->bp))
		return 1;
	idx = (i + 1) & (OFFCPU_MAX_DEPTH_POW2 - 1);
	if (idx >= OFFCPU_MAX_DEPTH)
		return 1;
	w->buf->ips[idx] = frame[1];
	w->n = idx + 1;
	w->bp = frame[0];
	return 0;
}

static __always_inline __u64 take_ustack(void *ctx, __u32 slot)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *regs;
	struct uwalk w = { .n = 1 };

	if (!t->mm) {		/* exiting: the helper fails there too */
		tracemaps_count(OC_USTACK_FAIL);
		return 0;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs || regs->cs != USER64_CS)
		return take_stack(ctx, slot, true);
	w.buf = bpf_map_lookup_elem(&scratch, &slot);
	if (!w.buf)
		return 0;
	w.buf->ips[0] = regs->ip;
	w.bp = regs->bp;
	bpf_loop(OFFCPU_MAX_DEPTH - 1, uwalk_one, &w, 0);
	return stack_store(w.buf, w.n * 8, true);
}

/*
 * --no-idle: is t blocked reading FUSE requests (read/readv/splice on a
 * file whose read_iter is the kernel's fuse_dev_read)?  x86-64 numbers.
 */
static __always_inline bool idle_fuse_read(struct task_struct *t)
{
	struct pt_regs *regs;
	struct fdtable *fdt;
	struct file **fda, *f;
	const struct file_operations *fop;
	void *read_iter;
	unsigned int fd;
	long nr;

	if (!no_idle || !fuse_dev_read_addr)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return false;
	nr = regs->orig_ax;
	if (nr != 0 && nr != 19 && nr != 275)	/* read, readv, splice */
		return false;
	fd = regs->di;
	/* t is a BTF pointer: t->files->fdt->... are plain (fault-safe)
	 * loads, not helper calls — this runs at most switch-outs of a
	 * FUSE daemon.  Only the fd slot and the file need reads. */
	if (!t->files)
		return false;
	fdt = t->files->fdt;
	if (!fdt || fd >= fdt->max_fds)
		return false;
	fda = fdt->fd;
	if (!fda || bpf_probe_read_kernel(&f, sizeof(f), &fda[fd]) || !f)
		return false;
	f = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
	fop = f->f_op;
	if (!fop)
		return false;
	read_iter = fop->read_iter;
	return (__u64)read_iter == fuse_dev_read_addr;
}

/* Tell the loader to snapshot tgid's maps (a full ring drops it: the
 * loader still snapshots at print time, and logs mmaps anyway). */
static __always_inline void send_event(__u32 type, __u32 tgid)
{
	struct offcpu_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return;
	e->type = type;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void note_tgid(__u32 tgid)
{
	if (tracemaps_first_sight(tgid))
		send_event(OFFCPU_EV_NEW, tgid);
}

static __always_inline void record(struct task_struct *t, struct task_info *s,
				   const struct waker *w, __u64 kstack,
				   __u64 ustack, __u64 delta, __u32 state,
				   __u32 flags)
{
	struct offcpu_key key = {};
	struct offcpu_val *v, zero = {};

	key.tgid = t->tgid;
	key.pid = t->pid;
	bpf_probe_read_kernel_str(key.comm, sizeof(key.comm), t->comm);
	key.kstack = kstack ? kstack : s ? s->kstack : 0;
	key.ustack = ustack;
	key.state = state;
	key.flags = flags;
	if (t->flags & PF_KTHREAD)
		key.flags |= OFFCPU_F_KTHREAD;
	if (wakeup && w && w->pid) {
		key.w_kstack = w->kstack;
		key.w_ustack = w->ustack;
		key.w_tgid = w->tgid;
		key.w_pid = w->pid;
		__builtin_memcpy(key.w_comm, w->comm, sizeof(key.w_comm));
	}
	v = bpf_map_lookup_elem(&counts, &key);
	if (!v) {
		if (bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&counts, &key)) {
			tracemaps_count(OC_COUNTS_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&counts, &key);
		if (!v)
			return;
		if (!(key.flags & OFFCPU_F_KTHREAD))
			note_tgid(key.tgid);
		if (key.w_ustack)	/* the waker's user frames too */
			note_tgid(key.w_tgid);
	}
	__sync_fetch_and_add(&v->total_ns, delta);
	__sync_fetch_and_add(&v->count, 1);
	tracemaps_count(OC_BLOCKS);
}

/*
 * May the user stack wait for this syscall's sys_exit?  Only while the task
 * is inside a syscall that has not returned yet: the entry code stores
 * -ENOSYS in pt_regs->ax and the syscall's return value replaces it before
 * sys_exit, so orig_ax >= 0 with ax == -ENOSYS means "before sys_exit",
 * whether the task sleeps or was preempted.  A task switched out after its
 * syscall returned (preempted in exit_to_user_mode_loop, stopped by a
 * signal) or outside any syscall (page fault, user-mode preemption) gets
 * its user stack now.  (A syscall that itself returns -ENOSYS makes one
 * block take the next syscall's user stack: rare, and only that block.)
 */
static __always_inline bool can_defer(struct task_struct *t)
{
	struct pt_regs *regs;

	/* Direct loads: bpf_task_pt_regs() gives a BTF pointer. */
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	return regs && (long)regs->orig_ax >= 0 && (long)regs->ax == -ENOSYS;
}

/* One clock read per sched_switch, and none when neither side is traced. */
static __always_inline __u64 clock(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

/*
 * --ustack-at=resume: a task with an rseq area registered (glibc does it
 * for every thread since 2.35) is flagged at each switch-out (rseq_preempt)
 * and, on its way back to user mode, passes the rseq_update tracepoint in
 * its own context with its user registers as they were when it left user
 * mode — whether it blocked in a syscall, was preempted after the syscall
 * returned or in user mode, or took a page fault.  Its user stack can be
 * taken there for every kind of block, and that tracepoint fires about
 * once per context switch of the task, not at every syscall of the
 * machine.  Tasks without rseq take theirs at switch-out.  The task_struct
 * layout of that code (rseq pointer + rseq_event_mask, up to 6.18) is
 * checked at load: elsewhere this is false and the switch-out path is used.
 */
struct task_struct___rseq {
	struct rseq *rseq;
	unsigned long rseq_event_mask;
} __attribute__((preserve_access_index));

static __always_inline bool has_rseq(struct task_struct *t)
{
	struct task_struct___rseq *r = (void *)t;

	if (!bpf_core_field_exists(r->rseq_event_mask))
		return false;
	return BPF_CORE_READ(r, rseq) != NULL;
}

/* The pending blocks of a task get its user stack (or none: NOUSER). */
static __always_inline void flush_pending(struct task_struct *t,
					  struct task_info *s, __u64 ustack,
					  __u32 flags)
{
	__u32 n = s->npending;

	for (int i = 0; i < OFFCPU_PENDING; i++) {
		if (i >= n)
			break;
		record(t, NULL, &s->pend[i].w, s->pend[i].kstack, ustack,
		       s->pend[i].delta, s->pend[i].state,
		       flags | s->pend[i].flags);
	}
	s->npending = 0;
}

/* Park a block (or a block's part) until its user stack is taken. */
static __always_inline void park(struct task_info *s, __u64 kh, __u64 delta,
				 __u32 state, __u32 flags)
{
	__u32 n = s->npending;

	if (n >= OFFCPU_PENDING) {
		/* A syscall that blocks again and again (a FUSE worker's read
		 * of /dev/fuse): fold into the last block if the stack matches. */
		if (s->pend[OFFCPU_PENDING - 1].kstack == kh &&
		    s->pend[OFFCPU_PENDING - 1].flags == flags) {
			s->pend[OFFCPU_PENDING - 1].delta += delta;
			return;
		}
		tracemaps_count(OC_PENDING_OVERFLOW);
		return;
	}
	s->pend[n & (OFFCPU_PENDING - 1)].kstack = kh;
	s->pend[n & (OFFCPU_PENDING - 1)].delta = delta;
	s->pend[n & (OFFCPU_PENDING - 1)].state = state;
	s->pend[n & (OFFCPU_PENDING - 1)].flags = flags;
	if (wakeup && !flags)
		s->pend[n & (OFFCPU_PENDING - 1)].w = s->w;
	else
		s->pend[n & (OFFCPU_PENDING - 1)].w.pid = 0;
	s->npending = n + 1;
}

/* oncpu: add ns to t's time on a CPU.  One new entry per thread, at its
 * first switch-out in the window; its comm is refreshed every time (a
 * thread names itself after it starts). */
static __always_inline void run_add(struct task_struct *t, __u64 ns)
{
	struct offcpu_run *r, zero = {};
	__u32 pid = t->pid;

	r = bpf_map_lookup_elem(&runtime, &pid);
	if (!r) {
		zero.tgid = t->tgid;
		zero.flags = (t->flags & PF_KTHREAD) ? OFFCPU_F_KTHREAD : 0;
		if (bpf_map_update_elem(&runtime, &pid, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&runtime, &pid)) {
			tracemaps_count(OC_RUNTIME_FULL);
			return;
		}
		r = bpf_map_lookup_elem(&runtime, &pid);
		if (!r)
			return;
	}
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), t->comm);
	__sync_fetch_and_add(&r->ns, ns);
	__sync_fetch_and_add(&r->slices, 1);
}

/*
 * runq: the runnable part of a block of delta ns that ends at end: all of
 * it after a preemption (state R), the time since the wakeup after a sleep.
 */
static __always_inline __u64 runq_part(struct task_info *s, __u64 delta, __u64 end)
{
	if (!runq)
		return 0;
	if (s->state == 0)
		return delta;
	if (s->woken && s->woken >= s->start && s->woken <= end)
		return end - s->woken;
	return 0;
}

/*
 * A block of delta ns that ended at end, with kernel stack kh: recorded,
 * or parked until its user stack is taken, its runnable part apart.
 */
static __always_inline void end_block(struct task_struct *t, struct task_info *s,
				      __u64 kh, __u64 delta, __u64 end)
{
	__u64 rq = runq_part(s, delta, end);

	if (!s->defer) {
		if (delta > rq)
			record(t, s, &s->w, kh, s->ustack, delta - rq, s->state, 0);
		if (rq)
			record(t, s, NULL, kh, s->ustack, rq, 0, OFFCPU_F_RUNQ);
		return;
	}
	if (delta > rq)
		park(s, kh, delta - rq, s->state, 0);
	if (rq)
		park(s, kh, rq, 0, OFFCPU_F_RUNQ);
}

/*
 * oncpu: t leaves its CPU.  Its slice began at its switch-in, normally.
 * Under load the sched_switch tracepoint sometimes never names a thread
 * coming back on its CPU after a preemption (seen on 6.18 in a VM, by
 * this program and by bpftrace's tracepoint:sched:sched_switch alike:
 * schedstat counts the arrival, no event carries it; a few per 1,000
 * switches of a thread on a contended CPU, 5-60 ms of its time).  Its
 * block is then still open here and no slice began: the interval since
 * the block's start holds both.  The scheduler's CPU time of the thread
 * since its last switch (se.sum_exec_runtime, brought up to date before
 * the tracepoint) is the slice; the rest, the block, runnable or not as
 * it began.  Without this both were lost.
 */
static __always_inline void run_end(struct task_struct *t, __u64 *now)
{
	struct task_info *s = bpf_task_storage_get(&tasks, t, 0, 0);
	__u64 exec = t->se.sum_exec_runtime, gap, ran;

	if (!s)
		return;
	if (s->run_start) {
		run_add(t, clock(now) - s->run_start);
	} else if (s->start && exec > s->exec) {
		gap = clock(now) > s->start ? *now - s->start : 0;
		ran = exec - s->exec < gap ? exec - s->exec : gap;
		tracemaps_count(OC_UNSEEN_SWITCH_IN);
		run_add(t, ran);
		if (gap - ran >= min_ns && gap - ran <= max_ns)
			end_block(t, s, 0, gap - ran, s->start + gap - ran);
		s->start = 0;
		s->woken = 0;
	}
	s->run_start = 0;
	s->exec = exec;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       unsigned int prev_state, bool preempt,
				       __u64 *now)
{
	struct task_info *s;
	bool kthread;

	if (oncpu && allow_task(prev))
		run_end(prev, now);
	/* A task's last switch-out (do_task_dead): it never comes back. */
	if (!preempt && (prev_state & TASK_DEAD))
		return;
	if (!allow(prev, prev_state, preempt))
		return;
	if (no_idle && !preempt && (prev_state & 3) && idle_fuse_read(prev)) {
		tracemaps_count(OC_IDLE_SKIPPED);
		return;
	}
	s = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		tracemaps_count(OC_STORAGE_FAIL);
		return;
	}
	kthread = prev->flags & PF_KTHREAD;
	s->exec = prev->se.sum_exec_runtime;
	s->start = clock(now);
	s->state = preempt ? 0 : prev_state & 3;
	s->kstack = 0;
	s->ustack = 0;
	s->defer = 0;
	s->woken = 0;
	s->w.pid = 0;
	if (eager)
		s->kstack = take_stack(ctx, SLOT_SWITCH, false);
	if (kthread)
		return;
	if (!eager && ((resume_ustack && has_rseq(prev)) ||
		       (defer_ustack && can_defer(prev)))) {
		s->defer = 1;
		return;
	}
	tracemaps_count(OC_EARLY_USTACK);
	s->ustack = eager ? take_stack(ctx, SLOT_SWITCH, true) :
			    take_ustack(ctx, SLOT_SWITCH);
}

static __always_inline void switch_in(struct task_struct *next, __u64 *now)
{
	struct task_info *s;
	struct stack_ips *buf;
	__u64 delta, kh = 0;
	__u32 slot = SLOT_SWITCH;
	long bytes;

	/* Only tasks that passed switch_out() have a start time: the same
	 * cheap filter first, the task storage only for those. */
	if ((targ_tgid && next->tgid != targ_tgid) ||
	    (targ_pid && next->pid != targ_pid) || !next->pid)
		return;
	if (oncpu && allow_task(next)) {
		s = bpf_task_storage_get(&tasks, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s) {
			tracemaps_count(OC_STORAGE_FAIL);
			return;
		}
		s->run_start = clock(now);
		s->exec = next->se.sum_exec_runtime;
	} else {
		s = bpf_task_storage_get(&tasks, next, 0, 0);
	}
	if (!s || !s->start)
		return;
	delta = clock(now) - s->start;
	if (delta < min_ns || delta > max_ns) {
		s->start = 0;
		s->woken = 0;
		return;
	}
	if (!eager) {
		buf = bpf_map_lookup_elem(&scratch, &slot);
		if (!buf)
			return;
		bytes = bpf_get_task_stack(next, buf->ips, sizeof(buf->ips), 0);
		if (bytes <= 0)
			tracemaps_count(OC_KSTACK_FAIL);
		else
			kh = stack_store(buf, bytes, false);
	}
	end_block(next, s, kh, delta, *now);
	s->start = 0;
	s->woken = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = 0;

	switch_out(ctx, prev, prev_state, preempt, &now);
	switch_in(next, &now);
	return 0;
}

/* The running task's parked blocks, if any, get its user stack now (it is
 * in its own context: sys_exit and rseq_update below). */
static __always_inline void flush_own_pending(void *ctx)
{
	struct task_struct *t;
	struct task_info *s;

	if (targ_tgid && (bpf_get_current_pid_tgid() >> 32) != targ_tgid)
		return;
	t = bpf_get_current_task_btf();
	s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (!s || !s->npending)
		return;
	flush_pending(t, s, take_ustack(ctx, SLOT_SYSEXIT), 0);
}

/* Deferred user stacks: the task is back from the syscall it blocked in. */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	flush_own_pending(ctx);
	return 0;
}

/* --ustack-at=resume: the task is on its way back to user mode. */
SEC("tp_btf/rseq_update")
int BPF_PROG(rseq_update, struct task_struct *t)
{
	flush_own_pending(ctx);
	return 0;
}

/* runq: the current block of p turns runnable (its sleep ends here). */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	struct task_info *s;

	if (!runq || (targ_tgid && p->tgid != targ_tgid) || (targ_pid && p->pid != targ_pid))
		return 0;
	s = bpf_task_storage_get(&tasks, p, 0, 0);
	if (s && s->start && !s->woken)
		s->woken = bpf_ktime_get_ns();
	return 0;
}

/* runq: a new thread waits for its first run: a runnable block with no
 * user stack (the thread has not run a user instruction yet). */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	struct task_info *s;

	if (!runq || !allow_task(p))
		return 0;
	s = bpf_task_storage_get(&tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		tracemaps_count(OC_STORAGE_FAIL);
		return 0;
	}
	s->start = s->woken = bpf_ktime_get_ns();
	s->exec = p->se.sum_exec_runtime;
	s->state = 0;
	s->kstack = 0;
	s->ustack = 0;
	s->defer = 0;
	s->w.pid = 0;
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	struct task_struct *cur;
	struct task_info *s;

	if (!wakeup)
		return 0;
	s = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!s || !s->start)
		return 0;
	if (bpf_ktime_get_ns() - s->start < min_ns)
		return 0;
	cur = bpf_get_current_task_btf();
	s->w.pid = cur->pid;
	s->w.tgid = cur->tgid;
	bpf_probe_read_kernel_str(s->w.comm, sizeof(s->w.comm), cur->comm);
	s->w.kstack = take_stack(ctx, SLOT_WAKING, false);
	s->w.ustack = (cur->flags & PF_KTHREAD) ? 0 :
		take_ustack(ctx, SLOT_WAKING);
	return 0;
}

/*
 * A process often blocks before its exec (a shell's child between fork and
 * execve): first seen then, its snapshot holds the parent's image and the
 * stacks it takes after the exec would resolve against it.  Tell the loader
 * to read the maps again.  Stacks from before the exec resolve against the
 * new image too (the stack key has no exec generation): they are few.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (bpf_map_lookup_elem(&seen, &tgid))
		send_event(OFFCPU_EV_EXEC, tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *t, bool group_dead)
{
	struct task_info *s;
	__u32 tgid = t->tgid;

	s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (s && s->npending) {
		tracemaps_count(OC_PENDING_EXIT);
		flush_pending(t, s, 0, OFFCPU_F_NOUSER);
	}
	if (group_dead && bpf_map_lookup_elem(&seen, &tgid))
		send_event(OFFCPU_EV_EXIT, tgid);
	return 0;
}

/*
 * The user stack of a task that is not running, walked by frame pointers
 * from its saved user registers (what perf's user unwinder does for the
 * running task).  Sleepable: reads the task's memory.  0 when unreadable.
 */
struct walk {
	struct task_struct *t;
	struct stack_ips *buf;
	__u64 bp;
	__u64 n;
};

static long walk_one(__u64 i, void *data)
{
	struct walk *w = data;
	__u64 frame[2], idx;

	if (!w->bp || bpf_copy_from_user_task(frame, sizeof(frame),
					      (void *)w->bp, w->t, 0))
		return 1;
	/* Index from the loop counter, not from w->n: an exact counter would
	 * make the verifier walk every iteration as a distinct state. */
	idx = (i + 1) & (OFFCPU_MAX_DEPTH_POW2 - 1);
	if (!frame[1] || idx >= OFFCPU_MAX_DEPTH)
		return 1;
	w->buf->ips[idx] = frame[1];
	w->n = idx + 1;
	if (frame[0] <= w->bp)
		return 1;
	w->bp = frame[0];
	return 0;
}

static __always_inline __u64 user_stack_walk(struct task_struct *t)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct walk w = { .t = t, .n = 1 };
	__u32 slot = SLOT_WALK;

	if (!regs || (t->flags & PF_KTHREAD))
		return 0;
	w.buf = bpf_map_lookup_elem(&scratch, &slot);
	if (!w.buf)
		return 0;
	w.buf->ips[0] = BPF_CORE_READ(regs, ip);
	w.bp = BPF_CORE_READ(regs, bp);
	/* bpf_loop: verified once, not once per frame. */
	bpf_loop(OFFCPU_MAX_DEPTH - 1, walk_one, &w, 0);
	return stack_store(w.buf, w.n * 8, true);
}

/*
 * Run once at the end (the loader reads the iterator): tasks still off-CPU
 * are recorded with the time so far, their kernel stack and their user
 * stack walked from the saved registers, flagged INPROGRESS; blocks still
 * waiting for their syscall to return get their user stack the same way.
 */
SEC("iter.s/task")
int inprogress(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct task_info *s;
	struct stack_ips *buf;
	__u64 now, delta, rq, kh = 0, uh = 0;
	__u32 slot = SLOT_ITER, flags = OFFCPU_F_INPROGRESS;
	long bytes;

	if (!t)
		return 0;
	s = bpf_task_storage_get(&tasks, t, 0, 0);
	if (!s)
		return 0;
	if (s->npending) {
		uh = user_stack_walk(t);
		for (int i = 0; i < OFFCPU_PENDING; i++) {
			if (i >= s->npending)
				break;
			record(t, NULL, &s->pend[i].w, s->pend[i].kstack,
			       uh, s->pend[i].delta, s->pend[i].state,
			       (uh ? 0 : OFFCPU_F_NOUSER) | s->pend[i].flags);
		}
		s->npending = 0;
	}
	now = bpf_ktime_get_ns();
	/* oncpu: a thread on a CPU as the window closes */
	if (oncpu && s->run_start) {
		run_add(t, now > s->run_start ? now - s->run_start : 0);
		s->run_start = 0;
	}
	if (!s->start)
		return 0;
	delta = now > s->start ? now - s->start : 0;
	if (delta < min_ns || delta > max_ns)
		return 0;
	rq = runq_part(s, delta, now);
	s->start = 0;
	if (!s->kstack) {
		buf = bpf_map_lookup_elem(&scratch, &slot);
		if (!buf)
			return 0;
		bytes = bpf_get_task_stack(t, buf->ips, sizeof(buf->ips), 0);
		if (bytes > 0)
			kh = stack_store(buf, bytes, false);
	}
	if (s->defer) {
		uh = user_stack_walk(t);
		if (!uh)
			flags |= OFFCPU_F_NOUSER;
	}
	if (!s->defer)
		uh = s->ustack;
	if (delta > rq)
		record(t, s, &s->w, kh, uh, delta - rq, s->state, flags);
	if (rq)
		record(t, s, NULL, kh, uh, rq, 0, flags | OFFCPU_F_RUNQ);
	tracemaps_count(OC_INPROGRESS);
	return 0;
}

/*
 * Run once at the start: tasks already off-CPU get a start time of now, so
 * a sleep that began before the tool and outlasts it is not missed.  Their
 * user stack is deferred to the syscall exit, or, when user stacks are
 * taken at switch-out, walked now from the saved registers (the task is
 * asleep: its user stack cannot change before it runs).  With runq, tasks
 * runnable on a runqueue (state R, not on a CPU) start a runnable block
 * the same way; with oncpu, tasks on a CPU start their on-CPU time.  A task
 * that switched since the programs attached has its times already.
 */
SEC("iter.s/task")
int seed(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct task_info *s;
	unsigned int state;

	if (!t)
		return 0;
	if (t->on_cpu || t == bpf_get_current_task_btf()) {
		if (!oncpu || !allow_task(t))
			return 0;
		s = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s && !s->run_start && !s->start)
			s->run_start = bpf_ktime_get_ns();
		return 0;
	}
	state = t->__state;
	if ((!state && !runq) || !allow(t, state, false) || idle_fuse_read(t))
		return 0;
	s = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s || s->start)
		return 0;
	s->start = bpf_ktime_get_ns();
	s->exec = t->se.sum_exec_runtime;
	s->state = state & 3;
	s->woken = 0;
	s->kstack = 0;
	s->ustack = 0;
	s->w.pid = 0;
	s->defer = 0;
	if (t->flags & PF_KTHREAD)
		return 0;
	if (!eager && (defer_ustack || (resume_ustack && has_rseq(t))))
		s->defer = 1;
	else
		s->ustack = user_stack_walk(t);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
