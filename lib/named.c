// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named.c - named pools: the files, their creation, attach, detach and
 * removal, and the process slots (named.h has the layout).
 *
 * Same-address mapping: the creator reserves one range for the memory file
 * and the bookkeeping file (at a hint derived from the name, far from where
 * the kernel places mappings, so that other processes very likely have it
 * free too), records it in the header, and every attacher maps the files
 * at exactly that range with MAP_FIXED_NOREPLACE. A process in which the
 * range is taken gets -EADDRINUSE, never a misread pointer.
 *
 * Both mappings are MADV_DONTFORK: a fork() child attaches by name itself.
 */
#include <fcntl.h>
#include <limits.h>
#include <numaif.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "named.h"
#include "res.h"

#define NAMED_DIR_DEFAULT	"/dev/shm"
#define NAMED_HINT_LO		0x200000000000ull	/* 32 TiB */
#define NAMED_HINT_STEP		(1ull << 40)		/* 1 TiB per hint slot */
#define NAMED_HINT_SLOTS	48
#define NAMED_HINT_TRIES	4
/* ThreadSanitizer maps application memory only in its own ranges: there
 * the kernel picks the range (attachers still map it at the same address) */
#ifdef __SANITIZE_THREAD__
static const bool named_hints;
#else
static const bool named_hints = true;
#endif
#define NAMED_META_MIN		(64ull << 20)
#define NAMED_META_PER_PAGE	512	/* bytes of heap per page, sparse */

/* the directory of the bookkeeping files (and of tmpfs memory files) */
static const char *named_dir(void)
{
	const char *d = secure_getenv("HUGEKV_NAMED_DIR");

	return d && d[0] ? d : NAMED_DIR_DEFAULT;
}

static int meta_path(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/hugekv.%s.meta", named_dir(), name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* writable hugetlbfs with pages of *pgsz (no pagesize=: the default 2M) */
static bool hugetlbfs_of(const char *type, const char *opts, void *pgsz)
{
	const char *ps = strstr(opts, "pagesize=");
	uint64_t size = HKV_PGSZ_2M;
	unsigned long long v = 0;
	char unit = 0;

	if (strcmp(type, "hugetlbfs") || !strstr(opts, "rw"))
		return false;
	if (ps) {
		sscanf(ps + 9, "%llu%c", &v, &unit);
		size = v << (unit == 'G' ? 30 : unit == 'M' ? 20 : unit == 'K' ? 10 : 0);
	}
	return size == *(uint64_t *)pgsz;
}

/* a hugetlbfs mount with pages of pgsz, from /proc/self/mounts */
static int find_hugetlbfs(uint64_t pgsz, char *out, size_t len)
{
	return os_find_mount(hugetlbfs_of, &pgsz, out, len);
}

/* the memory file's directory and page size for the options' backing:
 * hugetlbfs for 1G/2M (AUTO tries 2M), tmpfs for THP and 4K; a hugepage
 * size without a mount falls back to THP unless strict (-EOPNOTSUPP) */
static int mem_place(const struct hkv_pool_opts *o, char *dir, size_t len, int *backing,
		     uint64_t *pgsz)
{
	int b = o->backing == HKV_BACKING_AUTO ? HKV_BACKING_HUGE_2M : o->backing;

	if (b == HKV_BACKING_HUGE_1G || b == HKV_BACKING_HUGE_2M) {
		*pgsz = b == HKV_BACKING_HUGE_1G ? HKV_PGSZ_1G : HKV_PGSZ_2M;
		if (!find_hugetlbfs(*pgsz, dir, len)) {
			*backing = b;
			return 0;
		}
		if (o->flags & HKV_POOL_STRICT)
			return -EOPNOTSUPP;
		if (o->backing != HKV_BACKING_AUTO)
			hkv_log(HKV_LOG_WARN, "named pool %s: no hugetlbfs mount with %s pages; "
				"THP on tmpfs instead", o->name, hkv_backing_name(b));
		b = HKV_BACKING_THP;
	}
	snprintf(dir, len, "%s", named_dir());
	*backing = b;
	*pgsz = HKV_PGSZ_4K;
	return 0;
}

/* refuse what is not a regular file of this uid, or is group/world-writable */
static int check_file(int fd, uint64_t *size)
{
	struct stat st;
	int err = os->fstat(fd, &st);

	if (err)
		return err;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	if (size)
		*size = (uint64_t)st.st_size;
	return 0;
}

/* open a pool's file; a symlink (O_NOFOLLOW: ELOOP) is -EPERM */
static int open_checked(const char *path, int flags, uint64_t *size)
{
	int fd = os->open_file(path, flags, 0600), err;

	if (fd == -ELOOP)
		return -EPERM;
	if (fd < 0)
		return fd;
	err = check_file(fd, size);
	if (err) {
		os->close(fd);
		return err;
	}
	return fd;
}

/* a hint for the pool's range, from its name (FNV-1a) */
static uint64_t range_hint(const char *name, unsigned i)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return NAMED_HINT_LO + ((h + i) % NAMED_HINT_SLOTS) * NAMED_HINT_STEP;
}

/* reserve bytes aligned to align: at the name's hints first, then anywhere */
static int reserve_range(const char *name, uint64_t bytes, uint64_t align, char **out)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	char *p, *a;
	int err;

	for (unsigned i = 0; named_hints && i < NAMED_HINT_TRIES && bytes <= NAMED_HINT_STEP;
	     i++) {
		void *hint = (void *)(uintptr_t)range_hint(name, i);

		if (!os->mmap(hint, bytes, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0,
			      (void **)&p)) {
			if (p == hint) {
				*out = p;
				return 0;
			}
			os->munmap(p, bytes);	/* a kernel without NOREPLACE */
		}
	}
	err = os->mmap(NULL, bytes + align, PROT_NONE, flags, -1, 0, (void **)&p);
	if (err)
		return err;
	a = (char *)HKV_ROUND_UP((uintptr_t)p, align);
	if (a > p)
		os->munmap(p, (size_t)(a - p));
	os->munmap(a + bytes, (size_t)(p + align - a));
	*out = a;
	return 0;
}

/* map fd over [at, at + len) of a reservation (fixed) or of nothing
 * (fixed, no replace: -EADDRINUSE if anything is there) */
static int map_file(void *at, uint64_t len, int fd, bool reserved)
{
	int flags = MAP_SHARED | (reserved ? MAP_FIXED : MAP_FIXED_NOREPLACE);
	void *p;
	int err = os->mmap(at, len, PROT_READ | PROT_WRITE, flags, fd, 0, &p);

	if (err == -EEXIST)
		return -EADDRINUSE;
	if (err)
		return err;
	if (p != at) {			/* a kernel that ignored NOREPLACE */
		os->munmap(p, len);
		return -EADDRINUSE;
	}
	os->madvise(at, len, MADV_DONTFORK);
	return 0;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* take a free slot (the lock held); reaps dead ones when all are taken */
static int slot_take(struct named_hdr *h, unsigned *out)
{
	int pid = getpid();
	uint64_t start = os_proc_start(pid);

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++) {
			struct named_slot *s = &h->slot[i];

			if (s->pid)
				continue;
			s->start = start;
			HKV_STORE(&s->pid, pid);	/* last: the slot is taken */
			*out = i;
			return 0;
		}
		named_reap(h);
	}
	return -EUSERS;
}

/* the process-local handle's fields from the header */
static void handle_fill(struct hkv_pool *pool, struct named_hdr *h)
{
	struct hkv_pool_opts *o = &pool->opts;

	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->npages = h->npages;
	o->page_bytes = h->page_bytes;
	o->nlanes = h->nlanes;
	o->backing = h->backing;
	o->numa_node = h->numa_node;
	o->flags = h->flags;
	o->free_room_low = h->free_room_low;
	o->free_room_high = h->free_room_high;
	o->chunk_bytes = h->chunk_pages * h->page_bytes;
	o->evict_window = h->evict_window;
	o->name = h->name;
	pool->npages = h->npages;
	pool->page_bytes = h->page_bytes;
	pool->chunk_pages = h->chunk_pages;
	pool->nlanes = h->nlanes;
	pool->lanes = h->lanes;
	pool->res = h->res;
	pool->base = h->page_bytes ? (char *)(uintptr_t)h->mem_base : NULL;
	pool->lane_bias = false;
	pool->lane_defer = false;
}

/* a one-region arena for hkv_regions() and hkv_stats() (mapped here) */
static struct hkv_arena *arena_view(const struct hkv_pool *pool, const struct named_hdr *h)
{
	struct hkv_arena *a;
	struct arena_seg *s;

	if (!h->page_bytes)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->pool_id = pool->id;
	a->base = (char *)(uintptr_t)h->mem_base;
	a->bytes = h->mem_len;
	a->kv_bytes = h->npages * h->page_bytes;
	a->opts = pool->opts;
	a->nseg = 1;
	s = &a->seg[0];
	s->base = a->base;
	s->bytes = a->bytes;
	s->npages = h->npages;
	s->node = s->verified_node = -1;
	s->backing = s->wanted = h->backing;
	s->pgsz = s->wanted_pgsz = h->hugepage_bytes;
	s->flags = h->backing == HKV_BACKING_THP ? HKV_REGION_THP : 0;
	return a;
}

static void layout_sizes(struct named_hdr *h)
{
	h->sz_hdr = sizeof(struct named_hdr);
	h->sz_lane = sizeof(struct lane);
	h->sz_res = sizeof(struct hkv_res);
	h->sz_unit = sizeof(struct res_unit);
	h->sz_lock = sizeof(h->lock);
	h->sz_heap = sizeof(struct shheap);
}

/* the mapped files, their descriptors and the handle's named part */
static void named_unmap(struct named *nm, struct named_hdr *h, uint64_t mem_len)
{
	if (h && mem_len)
		os->munmap((void *)(uintptr_t)h->mem_base, mem_len);
	if (h)
		os->munmap(h, h->meta_len);
	if (nm->mem_fd >= 0)
		os->close(nm->mem_fd);
	if (nm->meta_fd >= 0)
		os->close(nm->meta_fd);
	free(nm->arena);
	free(nm->bins_mapped);
	free(nm);
}

#define NODE_BITS	(8 * sizeof(unsigned long))
#define NODE_WORDS	(HKV_MAX_NODES / NODE_BITS + 1)

/* is @node one the pool may bind to: -1 (any), or a node with memory */
static int node_check(const char *name, int node)
{
	long long bytes;

	if (node < 0)
		return 0;
	bytes = os->numa_available() < 0 ? (node ? -ENOENT : 1) :
		node < HKV_MAX_NODES ? os->node_size(node) : -ENOENT;
	if (bytes > 0)
		return 0;
	hkv_log(HKV_LOG_ERR, "named pool %s: numa_node %d has no memory or does not exist",
		name, node);
	return -EINVAL;
}

/*
 * fallocate() the memory file with its pages on @node (-1: where the
 * kernel puts them). hugetlbfs and tmpfs allocate a fallocate()'s pages by
 * the calling thread's policy (a mapping's mbind() would not reach a
 * hugetlbfs fallocate), so the thread is bound to the node around it and
 * its own policy restored after.
 */
static int mem_fallocate(int fd, uint64_t len, int node)
{
	unsigned long mask[NODE_WORDS] = { 0 }, old[NODE_WORDS] = { 0 };
	int mode = MPOL_DEFAULT, err, err2;

	if (node < 0 || os->numa_available() < 0)
		return os->fallocate(fd, 0, len);
	err = os->get_mempolicy(&mode, old, NODE_WORDS * NODE_BITS);
	if (err)
		return err;
	mask[node / NODE_BITS] |= 1ul << (node % NODE_BITS);
	err = os->set_mempolicy(MPOL_BIND, mask, NODE_WORDS * NODE_BITS);
	if (err)
		return err;
	err = os->fallocate(fd, 0, len);
	err2 = os->set_mempolicy(mode, mode == MPOL_DEFAULT ? NULL : old,
				 mode == MPOL_DEFAULT ? 0 : NODE_WORDS * NODE_BITS);
	if (err2)
		hkv_log(HKV_LOG_WARN, "named pool: the thread's NUMA policy not restored: %s",
			strerror(-err2));
	return err;
}

struct named_create_ctx {
	char meta[PATH_MAX], mem[PATH_MAX];
	int backing;
	uint64_t pgsz, mem_len, meta_len;
	char *base;
	struct named *nm;
	struct shheap *old;		/* this thread's heap before the build */
};

/* the files made and mapped over one reservation; header filled */
static int create_files(struct hkv_pool *pool, struct named *nm, struct named_create_ctx *c)
{
	const struct hkv_pool_opts *o = &pool->opts;
	char dir[PATH_MAX];
	struct named_hdr *h;
	int err;

	err = meta_path(o->name, c->meta, sizeof(c->meta));
	if (err)
		return err;
	c->meta_len = HKV_ROUND_UP(NAMED_META_MIN + NAMED_META_PER_PAGE * o->npages, HKV_PGSZ_2M);
	if (o->page_bytes) {
		err = node_check(o->name, o->numa_node);
		if (!err)
			err = mem_place(o, dir, sizeof(dir), &c->backing, &c->pgsz);
		if (err)
			return err;
		if ((size_t)snprintf(c->mem, sizeof(c->mem), "%s/hugekv.%s.mem", dir, o->name) >=
		    NAMED_PATH_MAX)
			return -ENAMETOOLONG;
		c->mem_len = HKV_ROUND_UP(o->npages * o->page_bytes, c->pgsz);
	} else {
		c->backing = HKV_BACKING_NONE;
	}
	nm->meta_fd = os->open_file(c->meta, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (nm->meta_fd < 0)
		return nm->meta_fd == -ELOOP ? -EEXIST : nm->meta_fd;
	err = os->ftruncate(nm->meta_fd, c->meta_len);
	if (err)
		return err;
	if (c->mem_len) {
		nm->mem_fd = os->open_file(c->mem, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (nm->mem_fd < 0)
			return nm->mem_fd == -ELOOP ? -EEXIST : nm->mem_fd;
		/* the pages now, not at a fault: never a SIGBUS later */
		err = mem_fallocate(nm->mem_fd, c->mem_len, o->numa_node);
		if (err)
			return err == -ENOSPC ? -ENOMEM : err;
	}
	err = reserve_range(o->name, c->mem_len + c->meta_len,
			    HKV_MAX(c->pgsz, HKV_PGSZ_2M), &c->base);
	if (err)
		return err;
	err = map_file(c->base + c->mem_len, c->meta_len, nm->meta_fd, true);
	if (!err && c->mem_len)
		err = map_file(c->base, c->mem_len, nm->mem_fd, true);
	if (err) {
		os->munmap(c->base, c->mem_len + c->meta_len);
		c->base = NULL;
		return err;
	}
	h = (struct named_hdr *)(c->base + c->mem_len);
	nm->hdr = h;
	nm->heap = &h->heap;
	memcpy(h->id.magic, NAMED_MAGIC, sizeof(h->id.magic));
	h->id.layout = NAMED_LAYOUT;
	h->id.meta_bytes = c->meta_len;
	if (c->mem_len)		/* checked shorter than NAMED_PATH_MAX */
		memcpy(h->id.mem_path, c->mem, strlen(c->mem) + 1);
	layout_sizes(h);
	h->uid = geteuid();
	snprintf(h->name, sizeof(h->name), "%s", o->name);
	h->npages = o->npages;
	h->page_bytes = o->page_bytes;
	h->chunk_pages = pool->chunk_pages;
	h->nlanes = o->nlanes;
	h->flags = o->flags;
	h->evict_window = o->evict_window;
	h->backing = c->backing;
	h->numa_node = o->numa_node;
	h->free_room_low = o->free_room_low;
	h->free_room_high = o->free_room_high;
	h->hugepage_bytes = c->pgsz;
	h->mem_base = (uint64_t)(uintptr_t)c->base;
	h->mem_len = c->mem_len;
	h->meta_base = (uint64_t)(uintptr_t)h;
	h->meta_len = c->meta_len;
	h->created_ns = realtime_ns();
	/* the locks are zero: free (the file is new) */
	shheap_init(&h->heap, (char *)h + HKV_ROUND_UP(sizeof(*h), 4096),
		    c->meta_len - HKV_ROUND_UP(sizeof(*h), 4096));
	if (c->mem_len && c->backing == HKV_BACKING_THP)
		os->madvise(c->base, c->mem_len, MADV_HUGEPAGE);
	if (c->mem_len && !(o->flags & HKV_POOL_NO_PREFAULT))
		os->madvise(c->base, c->mem_len, MADV_POPULATE_WRITE);	/* best effort */
	return 0;
}

static void create_undo(struct named *nm, struct named_create_ctx *c)
{
	if (c->base)
		os->munmap(c->base, c->mem_len + c->meta_len);
	if (nm->mem_fd >= 0) {
		os->close(nm->mem_fd);
		os->unlink(c->mem);
	}
	if (nm->meta_fd >= 0) {
		os->close(nm->meta_fd);
		os->unlink(c->meta);
	}
	free(nm);
}

/**
 * named_create() - hkv_pool_create() of a pool with a name, first step:
 * the files made and mapped, and this thread's bookkeeping sent to the
 * file's heap for the pool_build() that pool.c runs next
 * @pool: the handle, its options effective and sizes set
 * @out: receives what named_create_finish() takes
 *
 * Return: 0, or -EEXIST (a pool of that name exists), -EOPNOTSUPP (strict
 * hugepage backing without a hugetlbfs mount), -ENOMEM, -ENAMETOOLONG, or
 * a system call's -errno. Nothing is left on failure.
 */
int named_create(struct hkv_pool *pool, struct named_create_ctx **out)
{
	struct named_create_ctx *c = calloc(1, sizeof(*c));
	struct named *nm = calloc(1, sizeof(*nm));
	int err;

	if (!c || !nm) {
		free(c);
		free(nm);
		return -ENOMEM;
	}
	HKV_STORE(&named_recover_fn, named_recover);
	nm->meta_fd = nm->mem_fd = -1;
	err = create_files(pool, nm, c);
	if (err) {
		create_undo(nm, c);
		free(c);
		return err;
	}
	pool->base = c->mem_len ? c->base : NULL;
	pool->lane_bias = pool->lane_defer = false;
	c->nm = nm;
	c->old = meta_heap_swap(&nm->hdr->heap);
	*out = c;
	return 0;
}

/**
 * named_create_finish() - the second step, once pool_build() ran in the file
 * @pool: the handle
 * @c: named_create()'s
 * @err: what pool_build() returned
 *
 * Return: 0, the pool published (pool->named set); or @err or -ENOMEM with
 * the files removed.
 */
int named_create_finish(struct hkv_pool *pool, struct named_create_ctx *c, int err)
{
	struct named *nm = c->nm;
	struct named_hdr *h = nm->hdr;
	struct shheap *old;

	meta_heap_swap(c->old);
	if (err)
		goto undo;
	old = meta_heap_swap(&h->heap);
	h->owner = meta_calloc(pool->npages, 1);
	h->pins = meta_calloc((size_t)HKV_NAMED_SLOTS * NAMED_PINS, sizeof(*h->pins));
	meta_heap_swap(old);
	if (!h->owner || !h->pins) {
		err = -ENOMEM;
		goto undo;
	}
	for (unsigned i = 0; i < pool->nlanes && !err; i++) {
		pool->lanes[i].named = h;
		err = xi_set_owner(&pool->lanes[i].xi, h->owner);
	}
	if (err)
		goto undo;
	h->lanes = pool->lanes;
	h->res = pool->res;
	err = slot_take(h, &nm->slot);	/* cannot fail: all slots are free */
	if (err)
		goto undo;
	named_local_set(h, (uint8_t)(nm->slot + 1), pool->id);
	handle_fill(pool, h);
	nm->bins_mapped = calloc(h->nlanes, 1);
	nm->arena = arena_view(pool, h);
	pool->arena = nm->arena;
	pool->named = nm;
	pthread_mutex_init(&pool->slots_lock, NULL);
	__atomic_store_n(&h->id.ready, 1, __ATOMIC_RELEASE);	/* last */
	hkv_log(HKV_LOG_INFO, "named pool %s: created, %llu pages of %llu bytes (%s)",
		h->name, (unsigned long long)h->npages, (unsigned long long)h->page_bytes,
		hkv_backing_name(h->backing));
	free(c);
	return 0;

undo:
	/* the heap goes with the file: nothing in it to free */
	pool->lanes = NULL;
	pool->res = NULL;
	create_undo(nm, c);
	free(c);
	return err;
}

/* read and check the header of an opened bookkeeping file */
static int header_check(int fd, uint64_t size, struct named_hdr *out)
{
	struct named_hdr ref;
	ssize_t n = os->pread(fd, out, sizeof(*out), 0);

	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(out->id) || memcmp(out->id.magic, NAMED_MAGIC, 8))
		return -EPROTO;		/* not a named pool's file */
	if (out->id.layout != NAMED_LAYOUT) {
		hkv_log(HKV_LOG_ERR, "named pool: layout version %u, this library reads %u: "
			"refused (attach it with the hugekv that made it)",
			out->id.layout, NAMED_LAYOUT);
		return -EPROTO;
	}
	if (!__atomic_load_n(&out->id.ready, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	layout_sizes(&ref);
	if ((size_t)n < sizeof(*out) || out->sz_hdr != ref.sz_hdr || out->sz_lane != ref.sz_lane ||
	    out->sz_res != ref.sz_res || out->sz_unit != ref.sz_unit ||
	    out->sz_lock != ref.sz_lock || out->sz_heap != ref.sz_heap) {
		hkv_log(HKV_LOG_ERR, "named pool %.*s: structure sizes differ from this "
			"build's: refused", HKV_NAME_MAX, out->name);
		return -EPROTO;
	}
	if (out->id.meta_bytes != size || out->meta_len != size || out->uid != geteuid())
		return -EPROTO;
	return 0;
}

/**
 * named_attach() - hkv_pool_attach(): map a named pool's files, take a slot
 * @pool: the new handle, its id and fork generation set
 * @name: the pool's name (checked)
 *
 * Return: 0, or -errno with nothing left (hkv_pool_attach() lists them).
 */
int named_attach(struct hkv_pool *pool, const char *name)
{
	struct named_hdr hdr, *h;
	struct named *nm;
	char path[PATH_MAX];
	uint64_t size, mem_size;
	int err;

	err = meta_path(name, path, sizeof(path));
	if (err)
		return err;
	nm = calloc(1, sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	HKV_STORE(&named_recover_fn, named_recover);
	nm->meta_fd = nm->mem_fd = -1;
	nm->meta_fd = open_checked(path, O_RDWR, &size);
	if (nm->meta_fd < 0) {
		err = nm->meta_fd;
		goto free_named;
	}
	err = header_check(nm->meta_fd, size, &hdr);
	if (err)
		goto close_files;
	if (hdr.mem_len) {
		nm->mem_fd = open_checked(hdr.id.mem_path, O_RDWR, &mem_size);
		if (nm->mem_fd < 0) {
			err = nm->mem_fd;
			goto close_files;
		}
		if (mem_size < hdr.mem_len) {
			err = -EPROTO;
			goto close_files;
		}
	}
	err = map_file((void *)(uintptr_t)hdr.meta_base, hdr.meta_len, nm->meta_fd, false);
	if (err)
		goto close_files;
	h = (struct named_hdr *)(uintptr_t)hdr.meta_base;
	if (hdr.mem_len) {
		err = map_file((void *)(uintptr_t)hdr.mem_base, hdr.mem_len, nm->mem_fd, false);
		if (err) {
			os->munmap(h, hdr.meta_len);
			goto close_files;
		}
	}
	nm->hdr = h;
	nm->heap = &h->heap;
	named_lock_all(h);	/* a reap rebuilds every lane */
	named_reap(h);
	err = slot_take(h, &nm->slot);
	if (!err)
		named_local_set(h, (uint8_t)(nm->slot + 1), pool->id);
	named_unlock_all(h);
	if (err) {
		named_unmap(nm, h, hdr.mem_len);
		return err;
	}
	handle_fill(pool, h);
	nm->bins_mapped = calloc(h->nlanes, 1);
	nm->arena = arena_view(pool, h);
	pool->arena = nm->arena;
	pool->named = nm;
	pthread_mutex_init(&pool->slots_lock, NULL);
	return 0;

close_files:
	if (err == -EADDRINUSE)
		hkv_log(HKV_LOG_ERR, "named pool %s: its address range is in use in this "
			"process (attached already?)", name);
	if (nm->mem_fd >= 0)
		os->close(nm->mem_fd);
	os->close(nm->meta_fd);
free_named:
	free(nm);
	return err;
}

/**
 * named_detach() - hkv_pool_destroy() of a named pool: this process leaves
 * @pool: the pool (freed here)
 */
void named_detach(struct hkv_pool *pool)
{
	struct named *nm = pool->named;
	struct named_hdr *h = nm->hdr;

	if (pool_forked(pool)) {	/* nothing of it is mapped here */
		free(nm->arena);
		free(nm->bins_mapped);
		free(nm);
		free(pool);
		return;
	}
	named_lock_all(h);
	if (h->slot[nm->slot].pid == getpid())
		named_release_slot(h, nm->slot);
	named_local_set(h, 0, 0);
	named_unlock_all(h);
	compat_fini(pool);
	pthread_mutex_destroy(&pool->slots_lock);
	named_unmap(nm, h, h->mem_len);
	free(pool);
}

/* live processes in the file's slots (read from the file, no lock) */
static int attached_count(int fd)
{
	struct named_slot s[HKV_NAMED_SLOTS];
	ssize_t n = os->pread(fd, s, sizeof(s), offsetof(struct named_hdr, slot));
	int live = 0;

	if (n != (ssize_t)sizeof(s))
		return n < 0 ? (int)n : -EPROTO;
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		live += named_slot_alive(&s[i]);
	return live;
}

HKV_API int hkv_pool_unlink_flags(const char *name, unsigned flags)
{
	struct named_id id;
	char path[PATH_MAX];
	int fd, err = 0, live;
	ssize_t n;

	if (!named_name_ok(name) || (flags & ~HKV_UNLINK_FORCE))
		return -EINVAL;
	err = meta_path(name, path, sizeof(path));
	if (err)
		return err;
	fd = open_checked(path, O_RDONLY, NULL);
	if (fd < 0)
		return fd;
	n = os->pread(fd, &id, sizeof(id), 0);
	if (n == (ssize_t)sizeof(id) && !memcmp(id.magic, NAMED_MAGIC, 8)) {
		/* another layout's slots are not read: only forced */
		live = id.layout == NAMED_LAYOUT ? attached_count(fd) : -EPROTO;
		if (live && !(flags & HKV_UNLINK_FORCE))
			err = live < 0 ? live : -EBUSY;
		id.mem_path[NAMED_PATH_MAX - 1] = 0;
		if (!err && id.mem_path[0])
			os->unlink(id.mem_path);
	} else if (!(flags & HKV_UNLINK_FORCE)) {
		err = -EPROTO;		/* not a named pool's file */
	}
	os->close(fd);
	if (!err)
		err = os->unlink(path);
	return err;
}

HKV_API int hkv_pool_unlink(const char *name)
{
	return hkv_pool_unlink_flags(name, 0);
}

HKV_API int hkv_pool_info(const struct hkv_pool *pool, struct hkv_named_info *info)
{
	const struct named_hdr *h;
	struct hkv_named_info i;

	if (!pool || !info || info->sz < offsetof(struct hkv_named_info, created_ns) +
					  sizeof(info->created_ns))
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	if (!pool->named)
		return -EOPNOTSUPP;
	h = pool->named->hdr;
	memset(&i, 0, sizeof(i));
	i.sz = HKV_MIN(info->sz, sizeof(i));
	snprintf(i.name, sizeof(i.name), "%s", h->name);
	i.npages = h->npages;
	i.page_bytes = h->page_bytes;
	i.nlanes = h->nlanes;
	i.backing = h->backing;
	i.hugepage_bytes = h->page_bytes ? h->hugepage_bytes : 0;
	i.meta_bytes = h->meta_len;
	i.layout_version = h->id.layout;
	for (unsigned s = 0; s < HKV_NAMED_SLOTS; s++)
		if (named_slot_alive(&h->slot[s]))
			i.pids[i.nattached++] = HKV_LOAD(&h->slot[s].pid);
	i.recoveries = HKV_LOAD(&h->recoveries);
	i.reclaimed_pages = HKV_LOAD(&h->reclaimed_pages);
	i.dropped_pins = HKV_LOAD(&h->dropped_pins);
	i.dead_slots = HKV_LOAD(&h->dead_slots);
	i.created_ns = h->created_ns;
	memcpy(info, &i, i.sz);
	return 0;
}
