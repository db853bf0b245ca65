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

	if (len != sizeof(o) || !xf_wire_hdr_ok(buf, len, len, XF_AM_CMA_OFFER) || p->cma_in) {
		xf_peer_error(p, -EPROTO);
		return;
	}
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
 * Return: 0 (every byte moved), -ESRCH (the peer is gone: nothing was
 * copied), -EFAULT (a short copy: a buffer of the peer is not mapped or
 * not writable; what moved before it stays), or the syscall's -errno.
 */
int xf_cma_copy(struct hkv_xfer_peer *p, bool put, const struct iovec *local,
		const struct iovec *remote, unsigned n, uint64_t bytes)
{
	uint64_t done = 0;
	unsigned i, k;
	ssize_t r;

	for (i = 0; i < n; i += k) {
		uint64_t want = 0;

		k = XF_MIN(n - i, XF_CMA_MAX_RUNS);
		for (unsigned j = 0; j < k; j++)
			want += local[i + j].iov_len;
		/* the pid is the pinned process's only while it lives */
		if (!pidfd_alive(p->cma_pidfd))
			return -ESRCH;
		r = put ? process_vm_readv(p->cma_pid, &local[i], k, &remote[i], k, 0)
			: process_vm_writev(p->cma_pid, &local[i], k, &remote[i], k, 0);
		p->x->st.cma_calls++;
		p->st.cma_calls++;
		if (r < 0)
			return errno == EFAULT || errno == ENOMEM ? -EFAULT : -errno;
		done += (uint64_t)r;
		if ((uint64_t)r != want)
			return -EFAULT;
	}
	return done == bytes ? 0 : -EFAULT;
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
