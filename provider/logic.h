// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: the device-independent decisions -- which devices are
// ours, which ABI we speak, and which user arguments are rejected before
// a system call.  Everything here is pure (no kernel, no libibverbs calls)
// so provider/tests can exercise it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include <infiniband/verbs.h>
#include <rdma/kiwi-abi.h>

#include "ibverbs_private.h"

namespace kiwi {

// ---------------------------------------------------------------- matching

// Provider name, as in /etc/libibverbs.d/kiwi.driver ("driver kiwi").
inline constexpr const char *kProviderName = "kiwi";

// kiwi registers with RDMA_DRIVER_UNKNOWN, so libibverbs cannot match by
// driver id.  It then tries match_name(): the pseudo modalias
// "rdma_device:N<ibdev name>" is fnmatch()ed against each MODALIAS table
// entry.  This pattern accepts exactly the names starting with the prefix.
inline constexpr const char *kNameModalias =
	"rdma_device:N" KIWI_DEV_NAME_PREFIX "*";

// Sentinel-terminated table for verbs_device_ops.match_table.  An object
// (not a function) so that the device ops referring to it are constant-
// initialised, i.e. ready before the registration constructor runs.
extern const verbs_match_ent kMatchTable[2];

// True for ibdev names kiwi owns: KIWI_DEV_NAME_PREFIX followed by at least
// one character ("kiwi0", "kiwi_a"); a bare "kiwi" is too ambiguous.
bool is_kiwi_ibdev_name(std::string_view name) noexcept;

// The file the kiwi kernel module puts in each of its devices' sysfs
// directory (<ibdev_path>/kiwi_abi_version): a device that has it is
// kiwi's, whatever its name ("eth0_kiwi" as much as "kiwi0").
inline constexpr const char *kKiwiSysfsAttr = "kiwi_abi_version";

// verbs_device_ops.match_device.  libibverbs calls it after its table
// lookup; we insist on both a table hit and the name rule, so a device
// found via some other modalias path can never be claimed by accident.
// @has_kiwi_attr: the device's sysfs directory has kKiwiSysfsAttr.
// Without it (a kernel module older than the attribute), the name decides.
bool match_device(const verbs_sysfs_dev &dev, bool has_kiwi_attr) noexcept;
inline bool match_device(const verbs_sysfs_dev &dev) noexcept
{
	return match_device(dev, false);
}

// ------------------------------------------------------------------- ABI

// Per-device uverbs ABI versions we accept (sysfs abi_version).
inline constexpr uint32_t kMinAbi = KIWI_ABI_VERSION;
inline constexpr uint32_t kMaxAbi = KIWI_ABI_VERSION;

constexpr bool abi_supported(uint32_t v) noexcept
{
	return v >= kMinAbi && v <= kMaxAbi;
}

// Validates the driver part of the get_context response.  A kernel that
// sent no driver data leaves the zeroed buffer, i.e. abi_version 0.
// Returns 0 or an errno value.
int check_context_resp(const kiwi_uresp_alloc_ctx &resp) noexcept;

// Firmware version string for ibv_device_attr.fw_ver: "major.minor.sub"
// from bits 47..32, 31..16 and 15..0, always NUL-terminated in `out`.
void format_fw_ver(uint64_t raw, std::span<char> out) noexcept;

// --------------------------------------------------------------- helpers

// Response buffer for a command with driver data: the kernel writes the
// core uverbs response, then kiwi's driver response right after it.  The
// core structs end in a flexible array member, so C++ cannot declare
// { Core core; Drv drv; }; we keep raw bytes and copy the driver part out.
template <class Core, class Drv> class DrvResp {
public:
	// Where libibverbs' ibv_cmd_* helpers expect the response.
	Core *core() noexcept { return reinterpret_cast<Core *>(buf_); }
	Drv drv() const noexcept
	{
		Drv d;
		std::memcpy(&d, buf_ + sizeof(Core), sizeof(d));
		return d;
	}
	// resp_size for the ibv_cmd_* helper: core and driver parts.
	static constexpr std::size_t size = sizeof(Core) + sizeof(Drv);

private:
	alignas(8) unsigned char buf_[size] = {};
};

// rdma-core's DECLARE_DRV_CMD rule: the driver struct must start at its
// natural alignment right after the core struct, so that a C declaration
// { core; drv; } on either side of the ABI has the same layout as ours.
template <class Core, class Drv>
constexpr bool packed_resp = sizeof(Core) % alignof(Drv) == 0;

// ------------------------------------------------------------ validation
// Each returns 0 or the errno value the verb should fail with.

// ibv_create_cq(): the kernel also clamps, but a non-positive depth or an
// unknown completion vector is cheap to reject here.
int validate_create_cq(int cqe, int comp_vector,
		       int num_comp_vectors) noexcept;
int validate_resize_cq(int cqe) noexcept;

// ibv_create_qp(): only RC exists on an iWARP RNIC (EOPNOTSUPP otherwise).
int validate_create_qp(const ibv_qp_init_attr *attr,
		       uint32_t max_inline) noexcept;

int validate_create_srq(const ibv_srq_init_attr *attr) noexcept;

// Limits a posted chain is checked against (from the create response).
struct QueueLimits {
	uint32_t depth;		// WQEs the queue can hold
	uint32_t max_sge;
	uint32_t max_inline;	// 0 for receive queues
	bool imm = false;	// send queue: WRs with immediate data allowed
	bool atomic = false;	// send queue: RFC 7306 atomic WRs allowed
	bool mw = false;	// send queue: LOCAL_INV and BIND_MW allowed
};

// Every SGE list of a WR as a span; the caller has checked num_sge.
inline std::span<const ibv_sge> sges(const ibv_sge *list, int num) noexcept
{
	return {list, static_cast<std::size_t>(num)};
}

// Checks one WR's SGE list against the limits: count in range, non-NULL
// list when non-empty, and for inline sends, the total byte count.
int validate_sge_list(const ibv_sge *list, int num_sge, uint32_t max_sge,
		      bool inline_data, uint32_t max_inline) noexcept;

// Walk a whole chain before anything is posted so a bad WR fails the call
// without side effects.  On error *bad is the first WR of the chain, as
// nothing has been posted.  A chain longer than the queue cannot succeed
// and would make libibverbs build an unbounded command on the stack.
int validate_send_chain(ibv_send_wr *wr, const QueueLimits &lim,
			ibv_send_wr **bad) noexcept;
// The opcode rules of one send WR: SEND, SEND_WITH_INV, RDMA_WRITE and
// RDMA_READ (one SGE, not inline); with @imm also RDMA_WRITE_WITH_IMM and
// SEND_WITH_IMM without payload (RFC 7306 has no SEND with immediate
// data and a payload); with @atomic also ATOMIC_FETCH_AND_ADD and
// ATOMIC_CMP_AND_SWP (one 8-byte SGE, not inline); with @mw also
// LOCAL_INV and BIND_MW of a type 2 window (type 1 windows are bound by
// ibv_bind_mw() only), neither inline; EOPNOTSUPP or EINVAL otherwise.
int validate_send_op(const ibv_send_wr &wr, bool imm = false,
		     bool atomic = false, bool mw = false) noexcept;
// A window binding (ibv_bind_mw(), IBV_WR_BIND_MW) in the form the
// kernel takes: length 0 only unbinds a type 1 window, and the region
// must be there otherwise.
int validate_bind(const ibv_mw *mw, const ibv_mw_bind_info &bi) noexcept;
int validate_recv_chain(ibv_recv_wr *wr, const QueueLimits &lim,
			ibv_recv_wr **bad) noexcept;

} // namespace kiwi
