// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: placement helpers for the data path -- the copies into and out
 * of registered memory (DDP placement from the socket's skbs, the
 * source of outbound payload, an Atomic Response's value) and the
 * execution of RFC 7306 atomics.  Apart from mem.c because this is the
 * per-byte data path, while mem.c creates, checks and ends regions.
 *
 * Every copy here names the generation its caller's check recorded
 * (kiwi_mem_check()) and re-checks it, and the bounds of the binding in
 * force, under mem->lock: a region changed since stops the copy at its
 * next piece (the rule: mem.c's top).
 */
#include <linux/highmem.h>
#include <linux/skbuff.h>

#include "mem.h"
#include "qp.h"

/* Does [addr, addr + len) lie inside what @mem addresses now? */
static bool kiwi_mem_spans(const struct kiwi_mem *mem, u64 addr, u64 len)
{
	return addr >= mem->iova && len <= mem->len &&
	       addr - mem->iova <= mem->len - len;
}

/*
 * Under mem->lock: the region whose pages back [*@addr, *@addr + @len)
 * of @mem as it is bound now, with *@addr translated into it, or NULL if
 * the range lies outside it.  The generation check alone would do, but
 * a copy must never trust an earlier check for its bounds: re-checking
 * the binding actually used costs two compares and closes the whole
 * class of stale-check defects (a window rebound, a counter wrapped).
 */
static struct kiwi_mem *kiwi_mem_target(struct kiwi_mem *mem, u64 *addr,
					u64 len)
{
	lockdep_assert_held(&mem->lock);
	if (!mem->valid || !kiwi_mem_spans(mem, *addr, len))
		return NULL;
	if (mem->mw_type) {
		/* A valid window has its region (kiwi_mw_set()). */
		if (!mem->parent)
			return NULL;
		*addr = *addr - mem->iova + mem->base;
		mem = mem->parent;
		if (!mem->valid || !kiwi_mem_spans(mem, *addr, len))
			return NULL;
	}
	return mem;
}

/*
 * Page backing @addr of a user region, or NULL past its page array
 * (which kiwi_mem_target()'s bounds already exclude).
 */
static struct page *kiwi_mem_page(struct kiwi_mem *mem, u64 addr)
{
	u64 i = (addr >> PAGE_SHIFT) - (mem->iova >> PAGE_SHIFT);

	return i < mem->npages ? mem->pages[i] : NULL;
}

/*
 * Copy @len bytes between @buf and @addr in @mem (into the region if
 * @in), extending *@crc over them in the same pass unless @crc is NULL.
 * Kernel DMA regions address kernel memory.  Under mem->lock, with the
 * generation checked; the bounds are checked again here, against the
 * binding in force.  Returns false, copying nothing, if they do not hold.
 */
static bool kiwi_mem_xfer(struct kiwi_mem *mem, u64 addr, u8 *buf, u32 len,
			  u32 *crc, bool in)
{
	struct page *pg = NULL;

	lockdep_assert_held_read(&mem->lock);
	mem = kiwi_mem_target(mem, &addr, len);
	if (!mem)
		return false;
	while (len) {
		u32 pg_off = offset_in_page(addr);
		u32 chunk = min_t(u32, len, PAGE_SIZE - pg_off);
		void *va;

		if (mem->pages) {
			pg = kiwi_mem_page(mem, addr);
			if (WARN_ON_ONCE(!pg))
				return false;
			va = kmap_local_page(pg) + pg_off;
		} else {
			va = (void *)(uintptr_t)addr;
		}
		if (in)
			kiwi_crc_copy_mem(va, buf, chunk, crc);
		else
			kiwi_crc_copy_mem(buf, va, chunk, crc);
		if (pg)
			kunmap_local(va);
		addr += chunk;
		buf += chunk;
		len -= chunk;
	}
	return true;
}

/*
 * Copy @len bytes at @off of @skb to @addr in @mem, extending *@crc over
 * the placed bytes unless @crc is NULL.  The caller checked the bounds of
 * both at generation @gen.  The skb is read a piece (linear part, page
 * fragment) at a time.  Returns false, placing nothing, if the STag was
 * invalidated or deregistered since.
 */
bool kiwi_mem_copy_from_skb(struct kiwi_mem *mem, u64 gen, u64 addr,
			    const struct sk_buff *skb, int off, u32 len,
			    u32 *crc)
{
	struct skb_seq_state st;
	const u8 *src;
	u32 done = 0, n;
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen;
	if (ok) {
		skb_prepare_seq_read((struct sk_buff *)skb, off, off + len,
				     &st);
		while (ok && done < len &&
		       (n = skb_seq_read(done, &src, &st))) {
			n = min(n, len - done);
			ok = kiwi_mem_xfer(mem, addr + done, (u8 *)src, n, crc,
					   true);
			done += n;
		}
		skb_abort_seq_read(&st);
	}
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * Copy @len bytes at @addr of @mem to @dst, as kiwi_mem_copy_from_skb()
 * the other way.  Returns false, copying nothing, if the STag changed
 * since generation @gen was checked.
 */
bool kiwi_mem_copy_out(struct kiwi_mem *mem, u64 gen, u64 addr, void *dst,
		       u32 len, u32 *crc)
{
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen && kiwi_mem_xfer(mem, addr, dst, len, crc, false);
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * Copy @len bytes from @src into @mem at @addr, as kiwi_mem_copy_out()
 * the other way (an Atomic Response's value into its local sink).
 */
bool kiwi_mem_copy_in(struct kiwi_mem *mem, u64 gen, u64 addr,
		      const void *src, u32 len)
{
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen &&
	     kiwi_mem_xfer(mem, addr, (u8 *)src, len, NULL, true);
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * RFC 7306 atomics are atomic with respect to each other anywhere in
 * kiwi (IBV_ATOMIC_HCA): every one runs under this lock, whatever
 * device, QP or region it targets.  Not with respect to the CPU's own
 * accesses to the memory, as with the RNICs that report HCA.  One
 * 8-byte read and write under a spinlock costs less than a TCP round
 * trip by orders of magnitude, so one lock does not limit throughput.
 */
static DEFINE_SPINLOCK(kiwi_atomic_lock);

/*
 * Execute atomic @ai, received by @qp, on the aligned 8 bytes at ai->to
 * of @mem and return the value found there in *@orig.  Everything the
 * header was checked for -- validity, PD, window binding, rights,
 * bounds -- is checked again here, under the lock that changes to the
 * STag take, together with the generation: what runs is exactly what
 * was allowed, now.  Aligned, the word never straddles a page: one
 * kernel mapping of one page holds it, whoever else has that page
 * mapped.  Returns false, changing nothing, if any check fails.
 */
bool kiwi_mem_atomic(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 gen,
		     const struct kiwi_atomic_info *ai, u64 *orig)
{
	struct kiwi_mem *pm = NULL;
	struct page *pg = NULL;
	u64 addr = ai->to;
	void *va = NULL;
	u64 *p;

	if (WARN_ON_ONCE(addr & (KIWI_ATOMIC_LEN - 1)))
		return false;
	read_lock_bh(&mem->lock);
	if (mem->gen == gen &&
	    !kiwi_mem_why(mem, qp->ibqp.pd, qp, addr, KIWI_ATOMIC_LEN,
			  IB_ACCESS_REMOTE_ATOMIC))
		pm = kiwi_mem_target(mem, &addr, KIWI_ATOMIC_LEN);
	/* A window may start anywhere in its region. */
	if (pm && (addr & (KIWI_ATOMIC_LEN - 1)))
		pm = NULL;
	if (pm && pm->pages) {
		pg = kiwi_mem_page(pm, addr);
		if (!pg)
			pm = NULL;
	}
	if (pm) {
		if (pg) {
			va = kmap_local_page(pg);
			p = va + offset_in_page(addr);
		} else {
			p = (u64 *)(uintptr_t)addr;
		}
		spin_lock(&kiwi_atomic_lock);
		*orig = READ_ONCE(*p);
		WRITE_ONCE(*p, kiwi_atomic_apply(ai, *orig));
		spin_unlock(&kiwi_atomic_lock);
		if (va)
			kunmap_local(va);
	}
	read_unlock_bh(&mem->lock);
	return pm;
}
