// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: queue rings and their mapping into user space.
 *
 * Every SQ, RQ, SRQ and user CQ is a struct kiwi_ring: the control block of
 * include/uapi/rdma/kiwi-abi.h followed by fixed-stride slots.  Rings of
 * user objects are vmalloc() memory charged to the creator's memory
 * cgroup (a ring can be megabytes, and a process may make thousands),
 * mapped by the provider through an rdma_user_mmap_entry; the entry owns
 * the memory, so a mapping that outlives the object (or a resized CQ's
 * old ring) never points at freed pages.  Rings of kernel objects are
 * plain kvzalloc() memory with the same layout, so both share one code
 * path.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "ring.h"
#include "verbs.h"

struct kiwi_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

static struct kiwi_mmap_entry *to_kentry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct kiwi_mmap_entry, rdma);
}

static size_t kiwi_ring_bytes(u32 size, u32 stride)
{
	return KIWI_RING_CTL_SIZE + (size_t)size * stride;
}

static int kiwi_ring_init_user(struct kiwi_ring *r, struct ib_udata *udata,
			       size_t len)
{
	struct kiwi_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct kiwi_ucontext, ibuc);
	struct kiwi_mmap_entry *e;
	int rv;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	len = PAGE_ALIGN(len);
	/*
	 * Not vmalloc_user(): it cannot charge the memory cgroup.  A ring
	 * past the cgroup's limit fails with ENOMEM rather than waking the
	 * OOM killer: the creator asked for more than it may have.
	 */
	e->buf = __vmalloc(len, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
			   __GFP_NORETRY | __GFP_NOWARN);
	if (!e->buf) {
		kfree(e);
		return -ENOMEM;
	}
	rv = rdma_user_mmap_entry_insert(&uctx->ibuc, &e->rdma, len);
	if (rv) {
		vfree(e->buf);
		kfree(e);
		return rv;
	}
	r->buf = e->buf;
	r->mentry = &e->rdma;
	return 0;
}

/*
 * Allocate a zeroed ring of @size slots (a power of two) of @stride
 * bytes, mappable by the owner of @udata if there is one.
 */
int kiwi_ring_init(struct kiwi_ring *r, struct ib_udata *udata, u32 size,
		   u32 stride)
{
	size_t len = kiwi_ring_bytes(size, stride);
	int rv = 0;

	memset(r, 0, sizeof(*r));
	if (udata)
		rv = kiwi_ring_init_user(r, udata, len);
	else
		r->buf = kvzalloc(len, GFP_KERNEL);
	if (rv)
		return rv;
	if (!r->buf)
		return -ENOMEM;
	r->ctl = r->buf;
	kiwi_q_init(&r->q, size);
	r->stride = stride;
	return 0;
}

/*
 * Release a ring.  A user ring's memory is freed by kiwi_mmap_free()
 * once the process has unmapped it as well.
 */
void kiwi_ring_destroy(struct kiwi_ring *r)
{
	if (r->mentry)
		rdma_user_mmap_entry_remove(r->mentry);
	else
		kvfree(r->buf);
	memset(r, 0, sizeof(*r));
}

u64 kiwi_ring_mmap_offset(const struct kiwi_ring *r)
{
	return r->mentry ? rdma_user_mmap_get_offset(r->mentry) : 0;
}

u64 kiwi_ring_mmap_len(const struct kiwi_ring *r)
{
	return r->mentry ? r->mentry->npages << PAGE_SHIFT : 0;
}

/*
 * Insert the pages of @buf into @vma, whose length is the ring's
 * (rdma_user_mmap_entry_get() matched it): remap_vmalloc_range() would,
 * but it wants vmalloc_user() memory.  Each inserted page is referenced
 * by the mapping, so it outlives the ring if the mapping does.
 */
static int kiwi_ring_map(struct vm_area_struct *vma, void *buf)
{
	unsigned long off;
	int rv;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	for (off = 0; off < vma->vm_end - vma->vm_start; off += PAGE_SIZE) {
		rv = vm_insert_page(vma, vma->vm_start + off,
				    vmalloc_to_page(buf + off));
		if (rv)
			return rv;
	}
	return 0;
}

/* ib_device_ops.mmap: map a ring the process was told about. */
int kiwi_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e;
	int rv;

	/* A private mapping would never show the kernel's updates. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	e = rdma_user_mmap_entry_get(uctx, vma);
	if (!e)
		return -EINVAL;
	rv = kiwi_ring_map(vma, to_kentry(e)->buf);
	rdma_user_mmap_entry_put(e);
	return rv;
}

/* ib_device_ops.mmap_free: the last user of a ring is gone. */
void kiwi_mmap_free(struct rdma_user_mmap_entry *e)
{
	struct kiwi_mmap_entry *ke = to_kentry(e);

	vfree(ke->buf);
	kfree(ke);
}
