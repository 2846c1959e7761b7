// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: registration with libibverbs, device matching, context
// creation and the device-level queries.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include <rdma/ib_user_ioctl_verbs.h>	// RDMA_DRIVER_UNKNOWN

#include "objects.h"

namespace kiwi {
namespace {

using CtxResp = DrvResp<ib_uverbs_get_context_resp, kiwi_uresp_alloc_ctx>;
static_assert(packed_resp<ib_uverbs_get_context_resp, kiwi_uresp_alloc_ctx>);

int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
		    ibv_device_attr_ex *attr, size_t attr_size) noexcept
{
	ib_uverbs_ex_query_device_resp resp{};
	size_t resp_size = sizeof(resp);

	if (int err = ibv_cmd_query_device_any(ctx, input, attr, attr_size,
					       &resp, &resp_size))
		return err;
	// The only attribute libibverbs leaves to the provider.
	format_fw_ver(resp.base.fw_ver, attr->orig_attr.fw_ver);
	return 0;
}

int query_port(ibv_context *ctx, uint8_t port_num,
	       ibv_port_attr *port_attr) noexcept
{
	struct ibv_query_port cmd {};

	return ibv_cmd_query_port(ctx, port_num, port_attr, &cmd, sizeof(cmd));
}

void free_context(ibv_context *ibctx) noexcept
{
	ContextPtr reclaim(Context::from(ibctx));
}

// Every slot kiwi leaves NULL falls back to libibverbs' defaults (an
// EOPNOTSUPP stub).  Built by a constexpr function so the table is
// constant-initialised while unset slots stay value-initialised.
constexpr verbs_context_ops make_context_ops()
{
	verbs_context_ops o{};

	o.alloc_mw = ops::alloc_mw;
	o.alloc_pd = ops::alloc_pd;
	o.bind_mw = ops::bind_mw;
	o.create_cq = ops::create_cq;
	o.create_cq_ex = ops::create_cq_ex;
	o.create_qp = ops::create_qp;
	o.create_qp_ex = ops::create_qp_ex;
	o.create_srq = ops::create_srq;
	o.dealloc_mw = ops::dealloc_mw;
	o.dealloc_pd = ops::dealloc_pd;
	o.dereg_mr = ops::dereg_mr;
	o.destroy_cq = ops::destroy_cq;
	o.destroy_qp = ops::destroy_qp;
	o.destroy_srq = ops::destroy_srq;
	o.free_context = free_context;
	o.modify_qp = ops::modify_qp;
	o.modify_srq = ops::modify_srq;
	o.poll_cq = ops::poll_cq;
	o.post_recv = ops::post_recv;
	o.post_send = ops::post_send;
	o.post_srq_recv = ops::post_srq_recv;
	o.query_device_ex = query_device_ex;
	o.query_port = query_port;
	o.query_qp = ops::query_qp;
	o.query_srq = ops::query_srq;
	o.reg_mr = ops::reg_mr;
	o.req_notify_cq = ops::req_notify_cq;
	o.resize_cq = ops::resize_cq;
	return o;
}
constinit const verbs_context_ops kContextOps = make_context_ops();

verbs_context *alloc_context(ibv_device *ibdev, int cmd_fd,
			     void * /*private_data*/) noexcept
{
	// libibverbs callocs sizeof(Context) and initialises the verbs_context
	// at offset 0 (the last-but-one argument is that offset, as a pointer).
	ContextPtr ctx(static_cast<Context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(Context),
		reinterpret_cast<verbs_context *>(offsetof(Context, vctx)),
		RDMA_DRIVER_UNKNOWN)));
	if (!ctx)
		return nullptr;	// errno set, cmd_fd closed by libibverbs

	struct ibv_get_context cmd {};
	CtxResp resp{};

	if (int err = ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd),
					  resp.core(), resp.size)) {
		errno = err;
		return nullptr;
	}
	const kiwi_uresp_alloc_ctx drv = resp.drv();
	if (int err = check_context_resp(drv)) {
		__verbs_log(&ctx->vctx, VERBS_LOG_ERR,
			    "kiwi: %s: kernel driver ABI %u, provider supports %u..%u\n",
			    ibdev->name, drv.abi_version, kMinAbi, kMaxAbi);
		errno = err;
		return nullptr;
	}
	ctx->dev_id = drv.dev_id;
	ctx->max_inline = drv.max_inline;
	verbs_set_ops(&ctx->vctx, &kContextOps);
	return &ctx.release()->vctx;
}

// Does the device's sysfs directory have kiwi's attribute?  libibverbs
// calls match_device for every device, after its name table.
bool has_kiwi_attr(const verbs_sysfs_dev &dev) noexcept
{
	char path[sizeof(dev.ibdev_path) + 64];

	if (snprintf(path, sizeof(path), "%.*s/%s",
		     static_cast<int>(strnlen(dev.ibdev_path,
					      sizeof(dev.ibdev_path))),
		     dev.ibdev_path, kKiwiSysfsAttr) >= static_cast<int>(sizeof(path)))
		return false;
	return access(path, F_OK) == 0;
}

bool match_device_cb(verbs_sysfs_dev *dev) noexcept
{
	return dev && match_device(*dev, has_kiwi_attr(*dev));
}

verbs_device *alloc_device(verbs_sysfs_dev * /*sysfs_dev*/) noexcept
{
	try {
		return &hand_over(std::make_unique<Device>())->vdev;
	} catch (...) {
		return nullptr;	// libibverbs reports the failure
	}
}

void uninit_device(verbs_device *vdev) noexcept
{
	take_back<Device>(vdev);
}

constinit const verbs_device_ops kDeviceOps = {
	.name = kProviderName,
	.match_min_abi_version = kMinAbi,
	.match_max_abi_version = kMaxAbi,
	.match_table = kMatchTable,
	.static_providers = nullptr,
	.match_device = match_device_cb,
	.alloc_context = alloc_context,
	.import_context = nullptr,
	.alloc_device = alloc_device,
	.uninit_device = uninit_device,
};

// The library's only entry point: runs at dlopen() time.  kDeviceOps is
// constant-initialised, so it is complete before any constructor runs.
__attribute__((constructor)) void register_provider()
{
	verbs_register_driver_34(&kDeviceOps);
}

} // namespace
} // namespace kiwi
