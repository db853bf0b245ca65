// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cma.c - the single-copy path between processes of one host: the target
 * moves a transfer's bytes itself, with the kernel's cross-memory attach
 * (process_vm_readv for a put, from the initiator's buffers into granted
 * pool pages; process_vm_writev for a get, from granted pages into the
 * initiator's buffers), one copy instead of two through UCX's shared
 * memory segments. The target's pool never leaves the target: the
 * initiator names its own buffers, the target checks its pages against the
 * grant as on the two-sided path.
 *
 * Who the initiator is, proved by the kernel, not by its word. Once a
 * connection is authenticated (key or uid, as before) the initiator offers
 * (CMA_OFFER) its pid and the address of a fresh random token in its
 * memory. The target:
 *   1. opens a pidfd for the pid (the process is pinned: a pid reused
 *      later is another pidfd);
 *   2. finds the initiator's end of this very connection in the kernel's
 *      TCP table (/proc/net/tcp: its socket inode, as auth.c finds its
 *      owner) and requires "socket:[inode]" among /proc/PID/fd: the pid
 *      holds the connection, whatever it claimed;
 *   3. requires the same time namespace (deadlines are compared across
 *      the two processes on CLOCK_MONOTONIC);
 *   4. probes process_vm_readv of the token once: the kernel allows the
 *      copy (ptrace access mode, Yama, the peer's dumpable setting; this
 *      library never changes them) and the memory is the offerer's;
 *   5. checks through the pidfd that the process still lives (after 2,
 *      so the fd table read was the pinned process's).
 * Any failure (EPERM, ENOSYS, ENOENT: another namespace or host, a lie)
 * answers CMA_ACK with the -errno and the peer stays on the two-sided
 * path; only an answer of 0 moves the initiator's transfers to CMA_REQ.
 * A peer offers once per connection: a second offer, after either answer,
 * closes the connection (-EPROTO).
 * Before each copy the target checks the pidfd again, so a peer that died
 * is never written through a reused pid (the kernel's pid and pidfd
 * cannot diverge while the process lives).
 *
 * HUGEKV_XFER_CMA=off (or HKV_XFER_NO_CMA) turns the path off on either
 * side; =fail makes the probe fail as if the kernel refused (tests);
 * HUGEKV_XFER_CMA_PID=N offers pid N instead of ours (tests: a liar).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

struct xf_wire_cma_offer {
	struct xf_wire_hdr h;
	int32_t pid;
	uint32_t pad;
	uint64_t token_addr;
	unsigned char token[XF_NONCE];
};

struct xf_wire_cma_ack {
	struct xf_wire_hdr h;
	int32_t result;			/* 0: the target copies; else -errno */
	uint32_t pad;
};

/**
 * xf_cma_init() - the endpoint's single-copy setting
 * @x: the endpoint (flags applied)
 */
void xf_cma_init(struct hkv_xfer *x)
{
	const char *e = getenv("HUGEKV_XFER_CMA"), *pid = getenv("HUGEKV_XFER_CMA_PID");

	x->cma_mode = XF_CMA_ON;
	if (x->flags & HKV_XFER_NO_CMA || (e && (!strcmp(e, "off") || !strcmp(e, "0") ||
						 !strcmp(e, "n"))))
		x->cma_mode = XF_CMA_OFF;
	else if (e && !strcmp(e, "fail"))
		x->cma_mode = XF_CMA_FAIL;
	x->cma_claim_pid = pid ? atoi(pid) : 0;
}

/**
 * xf_cma_offer() - offer the peer to copy for our transfers (on ready)
 * @p: the peer, authenticated
 */
void xf_cma_offer(struct hkv_xfer_peer *p)
{
	struct xf_wire_cma_offer o = { .pid = p->x->cma_claim_pid ? p->x->cma_claim_pid :
					       (int32_t)getpid() };

	if (p->x->cma_mode == XF_CMA_OFF || p->cma_offered)
		return;
	if (xf_nonce(p->cma_token, sizeof(p->cma_token)))
		return;
	xf_wire_hdr_set(&o.h, XF_AM_CMA_OFFER);
	o.token_addr = (uint64_t)(uintptr_t)p->cma_token;
	memcpy(o.token, p->cma_token, XF_NONCE);
	if (!xf_am_send(p, XF_AM_CMA_OFFER, &o, sizeof(o)))
		p->cma_offered = true;
}

/* is the process behind the pidfd still alive? */
static bool pidfd_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/* does process pid hold the socket of inode among its descriptors? */
static int holds_socket(int pid, unsigned long inode)
{
	char dir[64], path[384], link[64], want[64];
	struct dirent *d;
	int err = -ESRCH;
	ssize_t n;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while (err && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, want))
			err = 0;
	}
	closedir(dp);
	return err;
}

/* the same time namespace (or a kernel without them) */
static int same_timens(int pid)
{
	char path[64], mine[64], theirs[64];
	ssize_t a, b;

	a = readlink("/proc/self/ns/time", mine, sizeof(mine) - 1);
	if (a < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/time", pid);
	b = readlink(path, theirs, sizeof(theirs) - 1);
	if (b < 0)
		return -errno;
	return a == b && !memcmp(mine, theirs, (size_t)a) ? 0 : -EXDEV;
}

/* the checks of an offer (above); 0 leaves p->cma_pidfd open */
static int offer_check(struct hkv_xfer_peer *p, const struct xf_wire_cma_offer *o,
		       const char **why)
{
	unsigned char token[XF_NONCE];
	struct iovec l = { token, sizeof(token) };
	struct iovec r = { (void *)(uintptr_t)o->token_addr, sizeof(token) };
	unsigned long uid, inode;
	int fd, err;

	*why = "single copy is off here";
	if (p->x->cma_mode == XF_CMA_OFF)
		return -EOPNOTSUPP;
	*why = "no such process";
	if (o->pid <= 0)
		return -ESRCH;
	fd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	if (fd < 0)
		return -errno;
	*why = "its connection is not in this network namespace";
	err = xf_peer_sock(p, &uid, &inode);
	if (!err) {
		*why = "the process does not hold this connection's socket";
		err = holds_socket(o->pid, inode);
	}
	if (!err) {
		*why = "another time namespace";
		err = same_timens(o->pid);
	}
	if (!err) {
		*why = "the kernel refused process_vm_readv";
		if (p->x->cma_mode == XF_CMA_FAIL)
			err = -EPERM;
		else if (process_vm_readv(o->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(token))
			err = errno ? -errno : -EFAULT;
		else if (memcmp(token, o->token, sizeof(token)))
			err = -EACCES, *why = "the token at the address offered differs";
	}
	if (!err && !pidfd_alive(fd))
		err = -ESRCH, *why = "the process exited";
	if (err) {
		close(fd);
		return err;
	}
	p->cma_pid = o->pid;
	p->cma_pidfd = fd;
	return 0;
}

/**
 * xf_on_cma_offer() - a peer offers its pid: prove it, probe, answer
 * @p: the peer (authenticated)
 * @buf: the CMA_OFFER
 * @len: its length
 */
void xf_on_cma_offer(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	struct xf_wire_cma_ack a = { 0 };
	struct xf_wire_cma_offer o;
	const char *why = "";
	int err;

	/* one offer per connection: each one costs a pidfd and reads of
	 * /proc (the TCP table, the claimed process's descriptors), which a
	 * peer refused once must not make this endpoint repeat at its rate */
	if (len != sizeof(o) || !xf_wire_hdr_ok(buf, len, len, XF_AM_CMA_OFFER) || p->cma_heard) {
		xf_peer_error(p, -EPROTO);
		return;
	}
	p->cma_heard = true;
	memcpy(&o, buf, sizeof(o));
	errno = 0;
	err = offer_check(p, &o, &why);
	if (err) {
		p->x->st.cma_refused++;
		p->st.cma_refused++;
		p->x->metrics_dirty = true;
		xf_log(err == -EOPNOTSUPP ? 3 : 2, "peer %llu (\"%s\") offers pid %d for single "
		       "copy: %s (%s): two-sided", (unsigned long long)p->id, p->name, o.pid, why,
		       strerror(-err));
	} else {
		p->cma_in = true;
		p->x->metrics_dirty = true;
		xf_log(3, "peer %llu (\"%s\"): single copy with pid %d", (unsigned long long)p->id,
		       p->name, o.pid);
	}
	xf_wire_hdr_set(&a.h, XF_AM_CMA_ACK);
	a.result = err;
	err = xf_am_send(p, XF_AM_CMA_ACK, &a, sizeof(a));
	if (err)
		xf_peer_error(p, err);
}

/**
 * xf_on_cma_ack() - the peer's answer to our offer
 * @p: the peer
 * @buf: the CMA_ACK
 * @len: its length
 */
void xf_on_cma_ack(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	struct xf_wire_cma_ack a;

	if (len != sizeof(a) || !xf_wire_hdr_ok(buf, len, len, XF_AM_CMA_ACK) ||
	    !p->cma_offered || p->cma_answered) {
		xf_peer_error(p, -EPROTO);
		return;
	}
	memcpy(&a, buf, sizeof(a));
	p->cma_answered = true;
	p->cma_out = a.result == 0;
	p->x->metrics_dirty = true;
}

/*
 * Copies of a request are split across helper threads. One core copies
 * about 15 GB/s out of memory here (process_vm_readv, the same as memcpy
 * within a few tens of percent), so a target that copies alone is slower
 * than the two-sided path, whose two copies run on two cores (the sender's
 * and the receiver's). A request of at least XF_CMA_SPLIT bytes is cut into
 * equal parts at page boundaries, one per helper and one for the caller,
 * which waits for all of them: the request is answered only once every
 * byte moved, as before. The helpers touch nothing but the iovecs handed
 * to them (checked against the grant by the caller) and the job's result;
 * they start with the first large request and end with the endpoint.
 */
#define XF_CMA_SPLIT		(4u << 20)
#define XF_CMA_THREADS_MAX	7

struct xf_cma_part {
	struct iovec *l, *r;
	unsigned n;
	uint64_t bytes, done;
	int err;			/* -errno of the first failing call */
	unsigned calls;
};

struct xf_cma_workers {
	pthread_mutex_t mu;
	pthread_cond_t go, idle;
	pthread_t th[XF_CMA_THREADS_MAX];
	unsigned nth, posted, taken, pending;
	bool stop;
	pid_t owner;			/* a forked child has no helpers */
	int pid;			/* the job: the peer and direction */
	bool put;
	struct xf_cma_part *parts;	/* parts[1..]: the helpers' */
};

/* copy one part: IOV_MAX iovecs a call; a short call ends it */
static void part_copy(int pid, bool put, struct xf_cma_part *pt)
{
	unsigned i, k;
	ssize_t r;

	for (i = 0; i < pt->n && !pt->err; i += k) {
		uint64_t want = 0;

		k = XF_MIN(pt->n - i, XF_CMA_MAX_RUNS);
		for (unsigned j = 0; j < k; j++)
			want += pt->l[i + j].iov_len;
		r = put ? process_vm_readv(pid, &pt->l[i], k, &pt->r[i], k, 0)
			: process_vm_writev(pid, &pt->l[i], k, &pt->r[i], k, 0);
		pt->calls++;
		if (r < 0)
			pt->err = errno == EFAULT || errno == ENOMEM ? -EFAULT : -errno;
		else if ((pt->done += (uint64_t)r, (uint64_t)r != want))
			pt->err = -EFAULT;
	}
}

static void *worker(void *arg)
{
	struct xf_cma_workers *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		unsigned idx;

		while (!w->stop && w->taken == w->posted)
			pthread_cond_wait(&w->go, &w->mu);
		if (w->stop)
			break;
		idx = ++w->taken;
		pthread_mutex_unlock(&w->mu);
		part_copy(w->pid, w->put, &w->parts[idx]);
		pthread_mutex_lock(&w->mu);
		if (!--w->pending)
			pthread_cond_signal(&w->idle);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* the helpers: HUGEKV_XFER_CMA_THREADS, else one per online CPU but this
 * one (at most XF_CMA_THREADS_MAX); NULL where none can be had */
static struct xf_cma_workers *workers(struct hkv_xfer *x)
{
	struct xf_cma_workers *w = x->cma_workers;
	const char *e;
	long want;

	if (w)
		return w->owner == getpid() ? w : NULL;
	if (x->cma_no_workers)
		return NULL;
	/* read once: the first large copy makes them or marks none */
	e = getenv("HUGEKV_XFER_CMA_THREADS");
	want = e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN) - 1;
	if (want <= 0) {
		x->cma_no_workers = true;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w || pthread_mutex_init(&w->mu, NULL)) {
		free(w);
		x->cma_no_workers = true;
		return NULL;
	}
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->idle, NULL);
	w->owner = getpid();
	while (w->nth < (unsigned)XF_MIN(want, XF_CMA_THREADS_MAX) &&
	       !pthread_create(&w->th[w->nth], NULL, worker, w))
		w->nth++;
	x->cma_workers = w;
	if (!w->nth) {
		xf_cma_workers_stop(x);
		x->cma_no_workers = true;
		return NULL;
	}
	return w;
}

/**
 * xf_cma_workers_stop() - end the copy helpers (endpoint destroyed)
 * @x: the endpoint
 */
void xf_cma_workers_stop(struct hkv_xfer *x)
{
	struct xf_cma_workers *w = x->cma_workers;

	if (!w)
		return;
	if (w->owner == getpid()) {	/* a forked child has none to join */
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_broadcast(&w->go);
		pthread_mutex_unlock(&w->mu);
		for (unsigned i = 0; i < w->nth; i++)
			pthread_join(w->th[i], NULL);
		pthread_cond_destroy(&w->go);
		pthread_cond_destroy(&w->idle);
		pthread_mutex_destroy(&w->mu);
	}
	free(w);
	x->cma_workers = NULL;
}

/* cut n iovec pairs of bytes total into k parts of about equal bytes, at
 * page boundaries: into lo/ro (room for n + k entries) and parts[0..k) */
static unsigned split(const struct iovec *l, const struct iovec *r, unsigned n, uint64_t bytes,
		      uint64_t page, unsigned k, struct iovec *lo, struct iovec *ro,
		      struct xf_cma_part *parts)
{
	uint64_t share = (bytes / k + page - 1) / page * page, room = share, off = 0;
	unsigned i = 0, m = 0, np = 0;

	parts[0] = (struct xf_cma_part){ .l = lo, .r = ro };
	while (i < n) {
		uint64_t len = XF_MIN(l[i].iov_len - off, room);

		lo[m] = (struct iovec){ (char *)l[i].iov_base + off, len };
		ro[m] = (struct iovec){ (char *)r[i].iov_base + off, len };
		m++;
		parts[np].n++;
		parts[np].bytes += len;
		off += len;
		room -= len;
		if (off == l[i].iov_len)
			i++, off = 0;
		if (!room && i < n && np + 1 < k) {
			np++;
			parts[np] = (struct xf_cma_part){ .l = lo + m, .r = ro + m };
			room = share;
		} else if (!room) {
			room = UINT64_MAX;	/* the last part takes the rest */
		}
	}
	return np + 1;
}

/**
 * xf_cma_copy() - copy between granted pool pages and the peer's buffers
 * @p: the peer (p->cma_in)
 * @put: true: from the peer into @local (process_vm_readv); false: from
 *	@local into the peer (process_vm_writev)
 * @local: this process's pages, already checked against the grant
 * @remote: the peer's buffers, as it named them
 * @n: iovecs of each (pairwise equal lengths)
 * @bytes: their total
 *
 * Large copies are split across the helper threads (above) and this one.
 *
 * Return: 0 (every byte moved), -ESRCH (the peer is gone: nothing was
 * copied), -EFAULT (a short copy: a buffer of the peer is not mapped or
 * not writable; what moved before it stays), -ENOMEM, or the syscall's
 * -errno.
 */
int xf_cma_copy(struct hkv_xfer_peer *p, bool put, const struct iovec *local,
		const struct iovec *remote, unsigned n, uint64_t bytes)
{
	struct hkv_xfer *x = p->x;
	struct xf_cma_part one = { .l = (struct iovec *)local, .r = (struct iovec *)remote,
				   .n = n, .bytes = bytes }, *parts = &one;
	struct xf_cma_workers *w = NULL;
	struct iovec *lo = NULL;
	unsigned k = 1, i, calls = 0;
	uint64_t done = 0;
	int err = 0;

	/* the pid is the pinned process's only while it lives */
	if (!pidfd_alive(p->cma_pidfd))
		return -ESRCH;
	if (bytes >= XF_CMA_SPLIT && (w = workers(x))) {
		k = XF_MIN(w->nth + 1, (unsigned)(bytes / (XF_CMA_SPLIT / 2)));
		parts = calloc(k, sizeof(*parts));
		lo = malloc(2 * (n + k) * sizeof(*lo));
		if (!parts || !lo) {
			free(parts);
			free(lo);
			return -ENOMEM;
		}
		k = split(local, remote, n, bytes, x->page_bytes, k, lo, lo + n + k, parts);
	}
	if (k > 1) {
		pthread_mutex_lock(&w->mu);
		w->pid = p->cma_pid;
		w->put = put;
		w->parts = parts;
		w->taken = 0;
		w->posted = k - 1;
		w->pending = k - 1;
		pthread_cond_broadcast(&w->go);
		pthread_mutex_unlock(&w->mu);
	}
	part_copy(p->cma_pid, put, &parts[0]);
	if (k > 1) {
		pthread_mutex_lock(&w->mu);
		while (w->pending)
			pthread_cond_wait(&w->idle, &w->mu);
		w->posted = w->taken = 0;
		pthread_mutex_unlock(&w->mu);
	}
	for (i = 0; i < k; i++) {
		done += parts[i].done;
		calls += parts[i].calls;
		if (parts[i].err && !err)
			err = parts[i].err;
	}
	x->st.cma_calls += calls;
	p->st.cma_calls += calls;
	if (parts != &one) {
		free(parts);
		free(lo);
	}
	return err ? err : done == bytes ? 0 : -EFAULT;
}

/**
 * xf_cma_close() - forget the peer's process (its connection ended)
 * @p: the peer
 */
void xf_cma_close(struct hkv_xfer_peer *p)
{
	if (p->cma_in)
		close(p->cma_pidfd);
	p->cma_in = false;
	p->cma_out = false;
}
