// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfer-attack - a served pool attacked the way a stranger on the network
 * would: a target process serves a real 2 MiB hugepage pool with
 * libhugekv-xfer (its pages hold a pattern only it knows, its key is set),
 * and this process attacks it with plain libucp, no hugekv code:
 *
 *   rma-nohello   connects to the listener, forges an rkey (its own
 *                 memory's, packed) and issues ucp_get_nbx / ucp_put_nbx
 *                 at the pool's address (told to it, as if guessed), at a
 *                 free page, and at wild addresses
 *   rma-hello     the same, with whatever the target's HELLO hands out
 *                 (its registration table and rkeys, if it sends them)
 *
 * A get that returns the target's bytes, a put that changes any byte of
 * the target's pool, or a target that dies is a failure; so is a target
 * whose pool does not check clean (hkv_check), with a pin left or a grant
 * left open. The target also serves a legitimate, keyed peer afterwards
 * (in xfer-test). UCX_TLS applies (the run script uses its default,
 * tcp, and shared memory).
 *
 * Across hosts: XFER_ATTACK_ADDR names the IPv4 address the target listens
 * on and the attacker connects to (default 127.0.0.1), and
 * XFER_ATTACK_TARGET_NETNS a network namespace (a name under /run/netns)
 * the target enters before it starts; the run script starts the attacker
 * in the other namespace of a veth pair.
 *
 * usage: xfer-attack [CASE...]   (default: all)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>		/* setns */
#include <sys/mount.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <ucp/api/ucp.h>

#include "hugekv.h"
#include "hugekv-xfer.h"

#include "../hkv_test_clock.h"

#define NPAGES		512
#define PB		65536ull
#define ALLOC		384
#define KEY		"xfer-attack: the target's key, 32 bytes"

static const char *addr = "127.0.0.1";	/* $XFER_ATTACK_ADDR */

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

static uint64_t secret_word(uint64_t page, uint64_t w)
{
	return 0x5ec7e75ec7e70000ull ^ (page << 20) ^ w;
}

/* ---- the target ----------------------------------------------------------- */

struct tgt {
	struct hkv_pool *pool;
	unsigned begins, ends, pinned;
};

static int tgt_access(void *ctx, struct hkv_xfer_peer *peer, unsigned event, unsigned op,
		      const struct hkv_extent *ext, unsigned n, int result)
{
	struct tgt *t = ctx;

	(void)peer, (void)op, (void)ext, (void)n, (void)result;
	if (event == HKV_XFER_ACCESS_BEGIN) {
		if (hkv_unit_pin(t->pool, 1))
			return -EIO;
		t->begins++, t->pinned++;
		return 0;
	}
	t->ends++, t->pinned--;
	hkv_unit_unpin(t->pool, 1);
	return 0;
}

struct hello_info {
	unsigned port;
	uint64_t base;
};

/* enter network namespace @ns as "ip netns exec" does: UCX finds the
 * network devices in /sys/class/net, which shows the namespace of the
 * sysfs mount, so a sysfs of the new namespace is mounted over /sys in a
 * mount namespace of our own */
static int enter_netns(const char *ns)
{
	char path[256];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) || unshare(CLONE_NEWNS) ||
	    mount("", "/", NULL, MS_SLAVE | MS_REC, NULL) || umount2("/sys", MNT_DETACH) ||
	    mount(ns, "/sys", "sysfs", 0, NULL))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		fprintf(stderr, "  target: enter netns %s: %s\n", ns, strerror(-err));
	return err;
}

/* serve until the parent closes the pipe; exit 0 if the pool is untouched */
static void target_main(int wfd, int rfd)
{
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = NPAGES, .page_bytes = PB,
				    .backing = HKV_BACKING_HUGE_2M, .numa_node = -1,
				    .flags = HKV_POOL_STRICT };
	struct hkv_xfer_opts xo = { .sz = sizeof(xo), .timeout_ms = 2000 };
	struct hello_info hi;
	struct tgt t = { 0 };
	struct hkv_extent e;
	struct hkv_xfer *x;
	uint64_t p, w, bad = 0;
	const char *ns = getenv("XFER_ATTACK_TARGET_NETNS");
	char c, listen[64];
	int rc = 0;

	if (ns && *ns && enter_netns(ns))	/* the other end of the veth pair */
		_exit(14);
	if (hkv_pool_create(&po, &t.pool))
		_exit(77);
	if (hkv_alloc(t.pool, ALLOC, HKV_LANE_ANY, HKV_ALLOC_CONTIG, &e, 1) != 1 ||
	    hkv_unit_add(t.pool, 1, &e, 1))
		_exit(10);
	for (p = 0; p < NPAGES; p++)		/* free pages too: nothing may read them */
		for (w = 0; w < PB / 8; w++)
			((uint64_t *)hkv_page_ptr(t.pool, p))[w] = secret_word(p, w);
	setenv("HUGEKV_XFER_KEY", KEY, 1);
	if (hkv_xfer_create(t.pool, &xo, &x))
		_exit(11);
	hkv_xfer_set_access_fn(x, tgt_access, &t);
	snprintf(listen, sizeof(listen), "%s:0", addr);
	if (hkv_xfer_listen(x, listen, &hi.port))
		_exit(12);
	hi.base = (uint64_t)(uintptr_t)hkv_page_ptr(t.pool, 0);
	if (write(wfd, &hi, sizeof(hi)) != sizeof(hi))
		_exit(13);
	close(wfd);
	/* serve: progress until the parent says stop (closes its end) */
	for (;;) {
		struct timeval tv = { 0, 0 };
		fd_set fs;

		hkv_xfer_progress(x);
		FD_ZERO(&fs);
		FD_SET(rfd, &fs);
		if (select(rfd + 1, &fs, NULL, NULL, &tv) > 0 && read(rfd, &c, 1) <= 0)
			break;
	}
	hkv_xfer_destroy(x);
	for (p = 0; p < NPAGES; p++)
		for (w = 0; w < PB / 8; w++)
			if (((uint64_t *)hkv_page_ptr(t.pool, p))[w] != secret_word(p, w)) {
				if (!bad++)
					fprintf(stderr, "  target: page %llu word %llu overwritten\n",
						(unsigned long long)p, (unsigned long long)w);
				break;
			}
	if (bad)
		rc = 20;
	if (t.pinned || t.begins != t.ends) {
		fprintf(stderr, "  target: %u grants begun, %u ended\n", t.begins, t.ends);
		rc = 21;
	}
	if (hkv_unit_remove(t.pool, 1, HKV_UNIT_FREE) || hkv_check(t.pool) ||
	    hkv_available(t.pool) != NPAGES)
		rc = 22;
	hkv_pool_destroy(t.pool);
	_exit(rc);
}

/* ---- the attacker: plain libucp ------------------------------------------ */

struct atk {
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	ucp_mem_h memh;
	void *buf;
	size_t buflen;
	ucp_rkey_h forged, handed;
	uint64_t handed_addr;
	unsigned char hello[65536];
	size_t hello_len;
	bool ep_failed;
};

static ucs_status_t hello_cb(void *arg, const void *header, size_t hlen, void *data,
			     size_t length, const ucp_am_recv_param_t *param)
{
	struct atk *a = arg;

	(void)header, (void)hlen, (void)param;
	if (!a->hello_len && length <= sizeof(a->hello) &&
	    !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		memcpy(a->hello, data, length);
		a->hello_len = length;
	}
	return UCS_OK;
}

static void ep_err(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	struct atk *a = arg;

	(void)ep, (void)st;
	a->ep_failed = true;
}

static int atk_open(struct atk *a, unsigned port)
{
	ucp_params_t up = { .field_mask = UCP_PARAM_FIELD_FEATURES,
			    .features = UCP_FEATURE_RMA | UCP_FEATURE_AM };
	ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				   .thread_mode = UCS_THREAD_MODE_SINGLE };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
		.err_handler = { .cb = ep_err, .arg = a },
	};
	ucp_am_handler_param_t hp = {
		.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
			      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
		.id = 0x4b31,		/* hugekv-xfer's HELLO */
		.flags = UCP_AM_FLAG_WHOLE_MSG,
		.cb = hello_cb,
		.arg = a,
	};
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
	};
	void *rk;
	size_t rklen;
	uint64_t t0;

	memset(a, 0, sizeof(*a));
	a->buflen = 4 * PB;
	a->buf = aligned_alloc(4096, a->buflen);
	mp.address = a->buf;
	mp.length = a->buflen;
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -1;
	ep.sockaddr.addr = (const struct sockaddr *)&sin;
	ep.sockaddr.addrlen = sizeof(sin);
	if (ucp_init(&up, NULL, &a->ctx) != UCS_OK ||
	    ucp_worker_create(a->ctx, &wp, &a->worker) != UCS_OK ||
	    ucp_worker_set_am_recv_handler(a->worker, &hp) != UCS_OK ||
	    ucp_ep_create(a->worker, &ep, &a->ep) != UCS_OK ||
	    ucp_mem_map(a->ctx, &mp, &a->memh) != UCS_OK)
		return -1;
	/* the forged key: our own memory's, packed; on tcp and shared memory
	 * UCX's key carries no secret, only which transports to use */
	if (ucp_rkey_pack(a->ctx, a->memh, &rk, &rklen) != UCS_OK ||
	    ucp_ep_rkey_unpack(a->ep, rk, &a->forged) != UCS_OK)
		return -1;
	ucp_rkey_buffer_release(rk);
	for (t0 = now_ms(); now_ms() - t0 < 300 && !a->ep_failed;)
		ucp_worker_progress(a->worker);
	return 0;
}

/* the table the old HELLO carried: first registration's address and rkey */
static void atk_take_hello(struct atk *a)
{
	const unsigned char *h = a->hello;
	uint32_t nregs, rklen;

	if (a->hello_len < 32)
		return;
	memcpy(&nregs, h + 8, 4);
	if (!nregs || nregs > 1024 || a->hello_len < 32 + nregs * 32ull)
		return;
	memcpy(&a->handed_addr, h + 32 + 16, 8);
	memcpy(&rklen, h + 32 + 24, 4);
	if (32 + nregs * 32ull + rklen > a->hello_len)
		return;
	if (ucp_ep_rkey_unpack(a->ep, h + 32 + nregs * 32, &a->handed) != UCS_OK)
		a->handed = NULL;
}

static void op_cb(void *req, ucs_status_t st, void *user)
{
	(void)req;
	*(ucs_status_t *)user = st;
}

/* one RMA operation; its status, or UCS_INPROGRESS if it never completes */
static ucs_status_t atk_rma(struct atk *a, bool put, void *buf, size_t len, uint64_t addr,
			    ucp_rkey_h rkey)
{
	ucs_status_t st = UCS_INPROGRESS;
	ucp_request_param_t rp = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
						   UCP_OP_ATTR_FIELD_USER_DATA,
				   .cb.send = op_cb, .user_data = &st };
	ucs_status_ptr_t r;
	uint64_t t0;

	r = put ? ucp_put_nbx(a->ep, buf, len, addr, rkey, &rp)
		: ucp_get_nbx(a->ep, buf, len, addr, rkey, &rp);
	if (!UCS_PTR_IS_PTR(r))
		return UCS_PTR_STATUS(r);
	if (put) {	/* remote completion */
		ucs_status_ptr_t f;
		ucs_status_t fst = UCS_INPROGRESS;
		ucp_request_param_t fp = rp;

		fp.user_data = &fst;
		f = ucp_ep_flush_nbx(a->ep, &fp);
		for (t0 = now_ms(); UCS_PTR_IS_PTR(f) && fst == UCS_INPROGRESS &&
		     now_ms() - t0 < 1000;)
			ucp_worker_progress(a->worker);
		if (UCS_PTR_IS_PTR(f) && fst == UCS_INPROGRESS)
			ucp_request_cancel(a->worker, f);
		else if (UCS_PTR_IS_PTR(f))
			ucp_request_free(f);
	}
	for (t0 = now_ms(); st == UCS_INPROGRESS && now_ms() - t0 < 1000;)
		ucp_worker_progress(a->worker);
	if (st == UCS_INPROGRESS)
		ucp_request_cancel(a->worker, r);
	else
		ucp_request_free(r);
	return st;
}

static void atk_close(struct atk *a)
{
	ucp_request_param_t rp = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				   .flags = UCP_EP_CLOSE_FLAG_FORCE };
	ucs_status_ptr_t r;
	uint64_t t0;

	if (a->handed)
		ucp_rkey_destroy(a->handed);
	if (a->forged)
		ucp_rkey_destroy(a->forged);
	r = a->ep ? ucp_ep_close_nbx(a->ep, &rp) : NULL;
	for (t0 = now_ms(); UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS &&
	     now_ms() - t0 < 2000;)
		ucp_worker_progress(a->worker);
	if (UCS_PTR_IS_PTR(r))
		ucp_request_free(r);
	if (a->memh)
		ucp_mem_unmap(a->ctx, a->memh);
	if (a->worker)
		ucp_worker_destroy(a->worker);
	if (a->ctx)
		ucp_cleanup(a->ctx);
	free(a->buf);
}

/* the target's bytes in our buffer: a leak */
static bool leaked(const void *buf, size_t len)
{
	const uint64_t *v = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if ((v[i] & 0xffffffff00000000ull) == (0x5ec7e75ec7e70000ull & 0xffffffff00000000ull))
			return true;
	return false;
}

static void attack(bool hello)
{
	static const uint64_t wild[] = { 0x1000, 0xdead0000, 1ull << 46 };
	struct hello_info hi;
	int up[2], down[2], st;
	struct atk a;
	ucp_rkey_h rkey;
	ucs_status_t s;
	unsigned i;
	pid_t pid;

	if (pipe(up) || pipe(down))
		exit(1);
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		target_main(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], &hi, sizeof(hi)) != sizeof(hi)) {
		CHECK(0, "the target did not start");
		goto reap;
	}
	if (atk_open(&a, hi.port)) {
		CHECK(0, "the attacker's UCX did not start");
		goto out;
	}
	rkey = a.forged;
	if (hello) {
		atk_take_hello(&a);
		if (a.handed) {
			rkey = a.handed;
			hi.base = a.handed_addr;
		}
	}
	/* read an allocated page, a free page */
	for (i = 0; i < 2; i++) {
		uint64_t page = i ? ALLOC + 10 : 3;

		memset(a.buf, 0, PB);
		s = atk_rma(&a, false, a.buf, PB, hi.base + page * PB, rkey);
		CHECK(!(s == UCS_OK && leaked(a.buf, PB)),
		      "a get of page %llu returned the target's bytes", (unsigned long long)page);
	}
	/* overwrite a page; the target checks every byte at its end */
	memset(a.buf, 0xa5, PB);
	atk_rma(&a, true, a.buf, PB, hi.base + 5 * PB, rkey);
	/* wild addresses: the target must not fault */
	for (i = 0; i < sizeof(wild) / sizeof(wild[0]); i++)
		atk_rma(&a, false, a.buf, PB, wild[i], rkey);
	atk_rma(&a, true, a.buf, 64, wild[0], rkey);
out:
	atk_close(&a);
	CHECK(kill(pid, 0) == 0, "the target died during the attack");
reap:
	close(down[1]);
	close(up[0]);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target exit %d (signal %d)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void case_rma_nohello(void)
{
	attack(false);
}

static void case_rma_hello(void)
{
	attack(true);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "rma-nohello", case_rma_nohello },
	{ "rma-hello", case_rma_hello },
};

int main(int argc, char **argv)
{
	unsigned i, pass = 0, fail = 0;
	int j;

	signal(SIGPIPE, SIG_IGN);
	setenv("HUGEKV_LOG", "error", 0);
	setenv("UCX_LOG_LEVEL", "fatal", 0);	/* the attack's refusals are expected */
	if (getenv("XFER_ATTACK_ADDR") && *getenv("XFER_ATTACK_ADDR"))
		addr = getenv("XFER_ATTACK_ADDR");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = failures;
		bool want = argc < 2;

		for (j = 1; j < argc; j++)
			want |= !strcmp(argv[j], cases[i].name);
		if (!want)
			continue;
		cases[i].fn();
		if (failures == before)
			pass++, fprintf(stderr, "  ok   %s\n", cases[i].name);
		else
			fail++, fprintf(stderr, "  FAIL %s\n", cases[i].name);
	}
	printf("xfer-attack: %u passed, %u failed\n", pass, fail);
	return fail ? 1 : 0;
}
