// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The built provider loads the way libibverbs loads it.
#include <dlfcn.h>

#include <gtest/gtest.h>

namespace {

struct DlClose {
	void operator()(void *h) const noexcept { dlclose(h); }
};

} // namespace

TEST(Load, DlopenResolvesEveryPrivateSymbol)
{
	// RTLD_NOW, as libibverbs uses: every IBVERBS_PRIVATE_34 import must
	// exist in the system libibverbs, and the registration constructor
	// runs (calling verbs_register_driver_34) without crashing.
	std::unique_ptr<void, DlClose> h(dlopen(KIWI_PROVIDER_PATH, RTLD_NOW));
	ASSERT_NE(h, nullptr) << dlerror();

	// Nothing is exported: internals are hidden.
	EXPECT_EQ(dlsym(h.get(), "_ZN4kiwi11kMatchTableE"), nullptr);
	EXPECT_EQ(dlsym(h.get(), "verbs_provider_kiwi"), nullptr);
}
