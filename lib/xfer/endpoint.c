// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * endpoint.c - an endpoint's life: the keyring, the UCX context (active
 * messages only: no RMA, so UCX serves no one-sided access to anything of
 * this process) and worker, the pool's ranges; at the end, every
 * connection closed, every transfer ended, everything given back.
 */
#include <stddef.h>

#include "internal.h"

/* the first layout of struct hkv_xfer_opts: later fields are read only
 * where the caller's sz covers them */
#define XF_OPTS_V1	(offsetof(struct hkv_xfer_opts, max_grants) + sizeof(unsigned))


/* the caller's options, over the defaults, as far as its sz covers */
static int opts_copy(const struct hkv_xfer_opts *o, struct hkv_xfer_opts *c)
{
	memset(c, 0, sizeof(*c));
	c->sz = sizeof(*c);
	if (!o)
		return 0;
	if (o->sz < XF_OPTS_V1)
		return -EINVAL;
	memcpy(c, o, XF_MIN(o->sz, sizeof(*c)));
	c->sz = sizeof(*c);
	return 0;
}

static int opts_apply(struct hkv_xfer *x, const struct hkv_xfer_opts *o)
{
	if (o->timeout_ms < -1 ||
	    o->flags & ~(HKV_XFER_NO_WAIT_IDLE | HKV_XFER_RMA | HKV_XFER_SAME_UID |
			 HKV_XFER_SAME_HOST | HKV_XFER_NO_CMA) ||
	    o->grant_timeout_ms < 0 || (o->key && o->key_len < XF_KEY_MIN))
		return -EINVAL;
	if (o->flags & HKV_XFER_RMA) {
		xf_log(0, "HKV_XFER_RMA: one-sided access is not offered (UCX 1.13 does not "
		       "check rkeys on tcp and shared memory)");
		return -EOPNOTSUPP;
	}
	if (o->reg_chunk_bytes && o->reg_chunk_bytes < x->page_bytes)
		return -EINVAL;
	x->max_inflight = o->max_inflight ? o->max_inflight : XF_DEF_INFLIGHT;
	x->timeout_ms = o->timeout_ms ? o->timeout_ms : XF_DEF_TIMEOUT_MS;
	x->reg_chunk_bytes = o->reg_chunk_bytes / x->page_bytes * x->page_bytes;
	x->flags = o->flags;
	x->max_grants = o->max_grants ? o->max_grants : XF_DEF_GRANTS;
	x->grant_timeout_ms = o->grant_timeout_ms ? o->grant_timeout_ms :
			      x->timeout_ms > 0 ? x->timeout_ms : XF_DEF_TIMEOUT_MS;
	x->max_grant_mem = o->max_grant_mem ? o->max_grant_mem : XF_DEF_GRANT_MEM;
	x->max_grant_mem_all = o->max_grant_mem_all ? o->max_grant_mem_all : XF_DEF_GRANT_MEM_ALL;
	x->max_peers = o->max_peers ? o->max_peers : XF_DEF_PEERS;
	return 0;
}

/*
 * Same-host peers over shared memory. Every endpoint asks for peer error
 * handling, and UCX 1.13 gives such an endpoint only transports that
 * report a dead peer: posix and sysv do so only with MM_ERROR_HANDLING,
 * which is off by default, so without it a same-host peer is served over
 * tcp loopback. The library turns it on in its own context; a user's
 * UCX_MM_ERROR_HANDLING (or UCX_POSIX_ / UCX_SYSV_ERROR_HANDLING) wins.
 */
/* does UCX_TLS (a list, or "^" and the ones left out) name a transport of @tls? */
static bool tls_names(const char *list, const char *const *tls)
{
	const char *p = list;
	size_t n;

	while (*p) {
		n = strcspn(p, ",");
		for (unsigned i = 0; tls[i]; i++)
			if (n == strlen(tls[i]) && !strncmp(p, tls[i], n))
				return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* UCX_TLS takes a transport of @any, unless it leaves out one of @all
 * (else UCX warns that a setting of them applied to no transport) */
static bool tls_takes(const char *const *any, const char *const *all)
{
	const char *tls = getenv("UCX_TLS");

	if (!tls || !*tls)
		return true;
	if (*tls == '^')
		return !tls_names(tls + 1, all);
	return tls_names(tls, any);
}

static bool tls_has_mm(void)
{
	static const char *const mm[] = { "all", "sm", "shm", "mm", "posix", "sysv", NULL };
	static const char *const mm_all[] = { "all", "sm", "shm", "mm", NULL };

	return tls_takes(mm, mm_all);
}

/* does the environment set one of @names (NULL-terminated)? */
static bool user_sets(const char *const *names)
{
	for (unsigned i = 0; names[i]; i++)
		if (getenv(names[i]))
			return true;
	return false;
}

/*
 * The shared-memory segment: every message and every rendezvous fragment
 * on posix or sysv is copied through one receive segment of the peer's, so
 * its size sets the bytes per FIFO element and per atomic claim of the
 * FIFO's head: 8 KiB by default, 64 KiB less a cache line here (UCX 1.13
 * keeps an element's length in 16 bits: 64 KiB itself wraps to 0 and
 * aborts the receiver), fewer receive segments per chunk so the memory
 * stays near UCX's default (128 x 64 KiB against 512 x 8 KiB). The sender
 * packs up to its own size into the receiver's segment, so both sides must
 * agree: every endpoint of this wire version sets the same, and a user's
 * UCX_*_SEG_SIZE must be the same on both sides.
 */
#define XF_MM_SEG_SIZE		"65472"
#define XF_MM_RX_BUFS_GROW	"128"

static void ucx_config_modify(ucp_config_t *cfg, const char *name, const char *value)
{
	ucs_status_t st = ucp_config_modify(cfg, name, value);

	if (st != UCS_OK)	/* a UCX without it: its default */
		xf_log(2, "UCX: %s: %s", name, ucs_status_string(st));
}

static void ucx_config_shm(ucp_config_t *cfg)
{
	static const char *const errh[] = {
		"UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING", NULL,
	};
	static const char *const seg[] = {
		"UCX_MM_SEG_SIZE", "UCX_POSIX_SEG_SIZE", "UCX_SYSV_SEG_SIZE", NULL,
	};
	static const char *const grow[] = {
		"UCX_MM_RX_BUFS_GROW", "UCX_POSIX_RX_BUFS_GROW", "UCX_SYSV_RX_BUFS_GROW", NULL,
	};

	if (!tls_has_mm())
		return;
	if (!user_sets(errh))	/* a UCX without it: tcp loopback, as before */
		ucx_config_modify(cfg, "MM_ERROR_HANDLING", "y");
	if (user_sets(seg))
		return;
	ucx_config_modify(cfg, "MM_SEG_SIZE", XF_MM_SEG_SIZE);
	if (!user_sets(grow))
		ucx_config_modify(cfg, "MM_RX_BUFS_GROW", XF_MM_RX_BUFS_GROW);
}

/*
 * Same-host peers' rendezvous. UCX 1.13 picks the rendezvous lanes among
 * the transports that can put or get zero-copy: on a same-host connection
 * with MM error handling that is tcp loopback (tcp's PUT), not sysv or
 * posix, so large messages cross the kernel's loopback at a third of what
 * shared memory moves. Without tcp's PUT UCX sends them as fragments on
 * the active-message lanes, i.e. over shared memory; a peer on another
 * host then loses tcp's zero-copy PUT, hence only on request. The user's
 * UCX_TCP_PUT_ENABLE wins.
 */
static void ucx_config_same_host(ucp_config_t *cfg)
{
	static const char *const tcp[] = { "all", "tcp", NULL };
	ucs_status_t st;

	if (getenv("UCX_TCP_PUT_ENABLE") || !tls_takes(tcp, tcp))
		return;
	/* UCX matches the value against each transport's own field names,
	 * without the "TCP_" of the environment (unlike MM_ in a sub-table):
	 * "TCP_PUT_ENABLE" would be accepted here and applied to nothing */
	st = ucp_config_modify(cfg, "PUT_ENABLE", "n");
	if (st != UCS_OK)	/* a UCX without it: rendezvous as UCX picks */
		xf_log(2, "UCX: TCP_PUT_ENABLE: %s", ucs_status_string(st));
}

static int ucx_init(struct hkv_xfer *x)
{
	ucp_params_t up = {
		.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
		.features = UCP_FEATURE_AM,	/* never UCP_FEATURE_RMA: see datapath.c */
		.name = "hugekv-xfer",
	};
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_config_t *cfg;
	ucs_status_t st;

	st = ucp_config_read(NULL, NULL, &cfg);
	if (st != UCS_OK)
		goto fail;
	ucx_config_shm(cfg);
	if (x->flags & HKV_XFER_SAME_HOST)
		ucx_config_same_host(cfg);
	st = ucp_init(&up, cfg, &x->ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK)
		goto fail;
	st = ucp_worker_create(x->ctx, &wp, &x->worker);
	if (st != UCS_OK) {
		ucp_cleanup(x->ctx);
		goto fail;
	}
	return 0;
fail:
	xf_log(0, "UCX initialization failed: %s", ucs_status_string(st));
	return st == UCS_ERR_NO_MEMORY ? -ENOMEM : -EIO;
}

HKV_API int hkv_xfer_create(struct hkv_pool *pool, const struct hkv_xfer_opts *opts,
			    struct hkv_xfer **out)
{
	struct hkv_stats ps = { .sz = sizeof(ps) };
	struct hkv_xfer_opts o;
	struct hkv_xfer *x;
	uint64_t gen;
	int err;

	if (!pool || !out)
		return -EINVAL;
	err = hkv_stats(pool, &ps);
	if (err == -ECHILD)
		return err;		/* the parent's pool */
	if (err || opts_copy(opts, &o))
		return -EINVAL;
	if (!ps.page_bytes)
		return -EINVAL;		/* index-only: no bytes to move */
	if (xf_fork_generation(&gen))
		xf_log(1, "pthread_atfork failed: a fork() child will not "
		       "know that its endpoints are not its own");
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fork_gen = gen;
	x->pool = pool;
	x->pool_id = hkv_pool_id(pool);
	x->page_bytes = ps.page_bytes;
	x->npages = ps.npages;
	err = opts_apply(x, &o);
	if (err)
		goto free_x;
	xf_cma_init(x);
	err = xf_keys_load(x, &o);
	if (err)
		goto free_x;
	err = ucx_init(x);
	if (err)
		goto free_keys;
	err = xf_am_init(x);
	if (!err)
		err = xf_datapath_init(x);
	if (err)
		goto ucx_fini;
	err = xf_reg_create(x);
	if (err)
		goto ucx_fini;
	*out = x;
	return 0;

ucx_fini:
	ucp_worker_destroy(x->worker);
	ucp_cleanup(x->ctx);
free_keys:
	xf_keys_free(x);
free_x:
	free(x);
	return err;
}

/* progress until every transfer ended and every send and close finished */
static void drain(struct hkv_xfer *x)
{
	uint64_t deadline = xf_deadline(XF_MAX(x->timeout_ms, 1000));
	struct hkv_xfer_peer *p;
	bool busy;

	do {
		xf_progress_once(x);
		busy = x->pending_sends > 0;
		for (p = x->peers; p; p = p->next)
			busy |= p->ntx || p->close_req;
	} while (busy && xf_coarse_ns() < deadline);
	if (busy)
		xf_log(1, "endpoint destroyed with UCX requests still outstanding");
}

HKV_API void hkv_xfer_destroy(struct hkv_xfer *x)
{
	struct hkv_xfer_peer *p, *next;
	struct xf_conn_req *c;
	struct xf_tx *tx;

	if (!x)
		return;
	if (xf_forked(x)) {
		/* a fork() child's copy: UCX's sockets, shared memory and the
		 * copy helpers are the parent's; only the keys are wiped */
		xf_keys_free(x);
		return;
	}
	xf_metrics_publish(x, true);	/* the last figures stay with the pool */
	if (x->listener)
		ucp_listener_destroy(x->listener);
	x->listener = NULL;
	while ((c = x->conn_reqs)) {
		x->conn_reqs = c->next;
		free(c);
	}
	for (p = x->peers; p; p = p->next) {
		p->closing = true;
		xf_peer_fail(p, -ECANCELED);
		xf_peer_ep_close(p);	/* a refused peer's, still open */
	}
	drain(x);
	while ((tx = x->txs)) {
		x->txs = tx->next;
		xf_tx_free(tx);
	}
	for (p = x->peers; p; p = next) {
		next = p->next;
		free(p);
	}
	xf_inbox_free(x);
	xf_cma_workers_stop(x);
	xf_reg_destroy(x);
	xf_keys_free(x);
	ucp_worker_destroy(x->worker);
	ucp_cleanup(x->ctx);
	free(x);
}

HKV_API void hkv_xfer_set_access_fn(struct hkv_xfer *x, hkv_xfer_access_fn fn, void *ctx)
{
	if (!x)
		return;
	x->access = fn;
	x->access_ctx = ctx;
}

HKV_API unsigned hkv_xfer_nregs(const struct hkv_xfer *x)
{
	return x ? x->nregs : 0;
}
