// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * auth.c - who a peer is. Every endpoint holds a keyring (the operator's
 * file or environment; never the command line): lines "NAME SECRET", each
 * the key of the peer called NAME, or one line "SECRET", the key of every
 * peer. Both sides send a fresh random nonce and their name in HELLO; then
 * each proves that it holds the key of the connecting side's name with
 * AUTH: HMAC-SHA256(key, label || the other's nonce || its own nonce ||
 * client name || server name), where the label says which side proves (a
 * proof cannot be reflected) and the nonces make it fresh (it cannot be
 * replayed). The key itself never crosses the wire. The connecting side
 * proves first; the listener checks and only then proves itself (its AUTH
 * is also the admission), so a connect returns only once both proofs held,
 * an accept once the peer's did; until then every message but HELLO and
 * AUTH closes the connection. There is no channel binding: a party on the
 * path can relay the exchange, not forge it.
 *
 * With HKV_XFER_SAME_UID, a side without a key for the name may instead
 * claim "same uid" (AUTH result XF_AUTH_UID): the other side, with the flag
 * too, admits it if the TCP connection's other end, looked up in
 * /proc/net/tcp (the same network namespace, IPv4), belongs to its own
 * uid; the listener answers the same way. TCP carries no credentials
 * (SO_PEERCRED is for unix sockets), so this is the kernel's record of who
 * owns the peer's socket.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "internal.h"

#define XF_AUTH_UID	1		/* AUTH result: "same uid", no mac */

struct xf_wire_auth {
	struct xf_wire_hdr h;
	int32_t result;			/* 0, XF_AUTH_UID, or why no proof follows */
	uint32_t pad;
	unsigned char mac[XF_MAC];
};

static int key_add(struct hkv_xfer *x, const char *name, size_t nlen, const char *sec,
		   size_t slen)
{
	struct xf_key *k;

	if (x->nkeys == XF_MAX_KEYS || nlen >= XF_NAME || slen < XF_KEY_MIN || slen > XF_KEY_MAX)
		return -EINVAL;
	k = &x->keys[x->nkeys];
	k->key = malloc(slen);
	if (!k->key)
		return -ENOMEM;
	memcpy(k->key, sec, slen);
	k->len = slen;
	memcpy(k->name, name, nlen);
	k->name[nlen] = '\0';
	x->nkeys++;
	return 0;
}

/* "NAME SECRET" or "SECRET" per line; blank lines and # comments skipped */
static int keys_parse(struct hkv_xfer *x, const char *buf, size_t len, const char *what)
{
	const char *p = buf, *end = buf + len;
	unsigned line = 0;
	int err;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *sp;
		size_t n;

		eol = eol ? eol : end;
		n = (size_t)(eol - p);
		line++;
		while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n && *p != '#') {
			sp = memchr(p, ' ', n);
			err = sp ? key_add(x, p, (size_t)(sp - p), sp + 1, n - (size_t)(sp - p) - 1)
				 : key_add(x, "", 0, p, n);
			if (err) {
				xf_log(0, "%s, line %u: not \"NAME SECRET\" with a name under %u "
				       "bytes and a secret of %u to %u bytes", what, line, XF_NAME,
				       XF_KEY_MIN, XF_KEY_MAX);
				return err == -ENOMEM ? err : -EINVAL;
			}
		}
		p = eol + 1;
	}
	return 0;
}

/* the keyring file: ours, a regular file, no access for group or others */
static int keys_file(struct hkv_xfer *x, const char *path)
{
	char buf[64 << 10];
	struct stat st;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		xf_log(0, "key file %s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_mode & 077) {
		xf_log(0, "key file %s: must be a regular file of this user, mode 0600 or "
		       "0400", path);
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || (size_t)n == sizeof(buf)) {
		xf_log(0, "key file %s: unreadable or over %zu bytes", path, sizeof(buf) - 1);
		return n < 0 ? -EIO : -EINVAL;
	}
	err = keys_parse(x, buf, (size_t)n, path);
	OPENSSL_cleanse(buf, sizeof(buf));
	return err;
}

/**
 * xf_keys_load() - the endpoint's keyring and name
 * @x: the endpoint
 * @o: its options (key, key_file, name read where @o->sz covers them)
 *
 * In order: @key (the key of every peer), @key_file, $HUGEKV_XFER_KEY_FILE,
 * $HUGEKV_XFER_KEY (the whole value: the key of every peer). The name: @name, $HUGEKV_XFER_NAME, "hugekv".
 *
 * Return: 0, -ENOKEY (none given), -EINVAL, -EPERM (a file others may
 * read), -ENOMEM, or the open's -errno.
 */
int xf_keys_load(struct hkv_xfer *x, const struct hkv_xfer_opts *o)
{
	const char *name = o && o->name ? o->name : getenv("HUGEKV_XFER_NAME");
	const char *file = o ? o->key_file : NULL, *env;
	int err;

	if (!name || !*name)
		name = "hugekv";
	if (strlen(name) >= XF_NAME || strchr(name, ' ') || strchr(name, '\n')) {
		xf_log(0, "endpoint name \"%s\": at most %u bytes, no blanks", name, XF_NAME - 1);
		return -EINVAL;
	}
	strcpy(x->name, name);
	if (o && o->key)
		err = key_add(x, "", 0, o->key, o->key_len);
	else if (file || (file = getenv("HUGEKV_XFER_KEY_FILE")))
		err = keys_file(x, file);
	else if ((env = getenv("HUGEKV_XFER_KEY")) && (err = key_add(x, "", 0, env, strlen(env))))
		xf_log(0, "HUGEKV_XFER_KEY: a secret of %u to %u bytes", XF_KEY_MIN, XF_KEY_MAX);
	else if (!env)
		err = -ENOKEY;
	if (!err && !x->nkeys)
		err = -ENOKEY;
	if (err == -ENOKEY && x->flags & HKV_XFER_SAME_UID)
		return 0;		/* peers of this uid only */
	if (err == -ENOKEY)
		xf_log(0, "no transfer key: peers must authenticate (set key or key_file, or "
		       "HUGEKV_XFER_KEY_FILE)");
	if (err)
		xf_keys_free(x);
	return err;
}

void xf_keys_free(struct hkv_xfer *x)
{
	unsigned i;

	for (i = 0; i < x->nkeys; i++) {
		OPENSSL_cleanse(x->keys[i].key, x->keys[i].len);
		free(x->keys[i].key);
	}
	x->nkeys = 0;
}

int xf_nonce(unsigned char *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

/* the key of the peer called name: its own line, else the shared one */
static const struct xf_key *key_for(const struct hkv_xfer *x, const char *name)
{
	const struct xf_key *any = NULL;
	unsigned i;

	for (i = 0; i < x->nkeys; i++) {
		if (!strcmp(x->keys[i].name, name))
			return &x->keys[i];
		if (!x->keys[i].name[0])
			any = &x->keys[i];
	}
	return any;
}

/* the proof of the side that is (or is not) the client */
static int proof(const struct xf_key *k, bool client, const struct hkv_xfer_peer *p,
		 bool ours, unsigned char *mac)
{
	const char *label = client ? "hugekv-xfer 2 client" : "hugekv-xfer 2 server";
	const char *cname = p->incoming ? p->name : p->x->name;
	const char *sname = p->incoming ? p->x->name : p->name;
	const unsigned char *mine = ours ? p->nonce : p->peer_nonce;
	const unsigned char *other = ours ? p->peer_nonce : p->nonce;
	unsigned char msg[32 + 2 * XF_NONCE + 2 * XF_NAME];
	unsigned int len = XF_MAC;
	size_t n = 0;

	memset(msg, 0, sizeof(msg));
	memcpy(msg, label, strlen(label));
	n = 32;
	memcpy(msg + n, other, XF_NONCE), n += XF_NONCE;
	memcpy(msg + n, mine, XF_NONCE), n += XF_NONCE;
	memcpy(msg + n, cname, strlen(cname)), n += XF_NAME;
	memcpy(msg + n, sname, strlen(sname)), n += XF_NAME;
	if (!HMAC(EVP_sha256(), k->key, (int)k->len, msg, n, mac, &len) || len != XF_MAC)
		return -EIO;
	return 0;
}

static const struct xf_key *peer_key(const struct hkv_xfer_peer *p)
{
	return key_for(p->x, p->incoming ? p->name : p->x->name);
}

/* "0100007F:1F90" of /proc/net/tcp as an IPv4 address and port */
static bool proc_addr(const char *s, uint32_t *addr, unsigned *port)
{
	return sscanf(s, "%8" SCNx32 ":%4x", addr, port) == 2;
}

/**
 * xf_peer_sock() - who owns the peer's end of p's TCP connection
 * @p: the peer
 * @uid: receives the socket's owner
 * @inode: receives the socket's inode (it is "socket:[inode]" in the
 *	/proc/PID/fd of every process that holds it)
 *
 * The kernel's table of this network namespace's TCP sockets
 * (/proc/net/tcp, IPv4): the peer's socket is the one whose local end is
 * our remote one and whose remote end is our local one.
 *
 * Return: 0, or -ENOENT (not found: another namespace or host, IPv6).
 */
int xf_peer_sock(const struct hkv_xfer_peer *p, unsigned long *uid, unsigned long *inode)
{
	ucp_ep_attr_t at = { .field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR |
					   UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR };
	const struct sockaddr_in *l = (const void *)&at.local_sockaddr;
	const struct sockaddr_in *r = (const void *)&at.remote_sockaddr;
	char line[512], la[32], ra[32];
	unsigned lport, rport;
	uint32_t laddr, raddr;
	int err = -ENOENT;
	FILE *f;

	if (!p->ep || ucp_ep_query(p->ep, &at) != UCS_OK || l->sin_family != AF_INET ||
	    r->sin_family != AF_INET)
		return -ENOENT;
	f = fopen("/proc/net/tcp", "re");
	if (!f)
		return -ENOENT;
	while (err && fgets(line, sizeof(line), f))
		/* the peer's socket: its local end is our remote one */
		if (sscanf(line, " %*u: %31s %31s %*x %*s %*s %*s %lu %*d %lu", la, ra, uid,
			   inode) == 4 &&
		    proc_addr(la, &laddr, &lport) && proc_addr(ra, &raddr, &rport) &&
		    laddr == r->sin_addr.s_addr && lport == ntohs(r->sin_port) &&
		    raddr == l->sin_addr.s_addr && rport == ntohs(l->sin_port))
			err = 0;
	fclose(f);
	return err;
}

/* the peer's claim "same uid", checked */
static int uid_check(struct hkv_xfer_peer *p)
{
	unsigned long uid, inode;

	if (!(p->x->flags & HKV_XFER_SAME_UID) || (!p->incoming && !p->by_uid))
		return -EACCES;
	if (xf_peer_sock(p, &uid, &inode) || uid != (unsigned long)geteuid()) {
		xf_log(1, "peer %llu: not a process of uid %u on this host: refused",
		       (unsigned long long)p->id, (unsigned)geteuid());
		return -EACCES;
	}
	p->by_uid = true;
	return 0;
}

/**
 * xf_auth_send() - prove our side (the peer's HELLO is in)
 * @p: the peer
 *
 * Return: 0, -EACCES (no key for this peer: it is told so), or the send's
 * error.
 */
int xf_auth_send(struct hkv_xfer_peer *p)
{
	const struct xf_key *k = peer_key(p);
	struct xf_wire_auth a = { 0 };
	int err = 0;

	xf_wire_hdr_set(&a.h, XF_AM_AUTH);
	if (p->by_uid || (!k && !p->incoming && p->x->flags & HKV_XFER_SAME_UID))
		a.result = XF_AUTH_UID, p->by_uid = true;	/* checked by the other side */
	else if (!k)
		a.result = err = -EACCES;
	else if ((err = proof(k, !p->incoming, p, true, a.mac)))
		a.result = err;
	if (xf_am_send(p, XF_AM_AUTH, &a, sizeof(a)) && !err)
		err = -ECONNRESET;
	OPENSSL_cleanse(&a, sizeof(a));
	if (err == -EACCES)
		xf_log(1, "peer %llu calls itself \"%s\": no key for it", (unsigned long long)p->id,
		       p->name);
	return err;
}

/* the listener refuses a peer whose proof failed: it is told, no proof */
void xf_auth_refuse(struct hkv_xfer_peer *p)
{
	struct xf_wire_auth a = { .result = -EACCES };

	xf_wire_hdr_set(&a.h, XF_AM_AUTH);
	xf_am_send(p, XF_AM_AUTH, &a, sizeof(a));
}

/**
 * xf_auth_check() - the peer's proof
 * @p: the peer (its HELLO is in)
 * @buf: the AUTH
 * @len: its length
 *
 * Return: 0 (p->authed set), -EACCES (a wrong proof, or the peer has no
 * key for us), -EPROTO (malformed).
 */
int xf_auth_check(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_key *k = peer_key(p);
	unsigned char mac[XF_MAC];
	struct xf_wire_auth a;

	if (len != sizeof(a) || !xf_wire_hdr_ok(buf, len, len, XF_AM_AUTH))
		return -EPROTO;
	memcpy(&a, buf, sizeof(a));
	if (a.result == XF_AUTH_UID) {
		if (uid_check(p))
			return -EACCES;
		p->authed = true;
		return 0;
	}
	if (a.result || p->by_uid)	/* a refusal, or no uid answer to ours */
		return -EACCES;
	if (!k || proof(k, p->incoming, p, false, mac) || CRYPTO_memcmp(mac, a.mac, XF_MAC))
		return -EACCES;
	p->authed = true;
	return 0;
}
