# SPDX-License-Identifier: GPL-2.0
#
# kiwi -- front door.  See README.md.
#
#   make            build kmod/kiwi.ko, build/provider/libkiwi-rdmav34.so and
#                   the test-only kernel consumer selftests/kconsumer/*.ko
#   make install    the module (through DKMS, for the running kernel) and the
#                   provider on this machine; installs the build set first
#   make uninstall  remove what make install installed
#   make deb        Debian packages kiwi-dkms and libkiwi-rdmav34 (build/deb/);
#                   installs the build and packaging sets first
#   make deps       install the test set (everything below needs it); also
#                   make deps-build (make, make install), deps-deb (make deb)
#   make demo       build, boot a test guest, bring up kiwi devices, show them
#   make check      run every test (last line: "N passed, N failed, N skipped")
#   make check-2host kiwi between two guests, 6.1 and 6.12 (and siw in one),
#                   over a virtual NIC (selftests/check-2host.sh; build/check-2host/)
#   make siw        build Linux's siw out of tree (build/siw/siw.ko), the interop peer
#   make bench      kiwi vs siw, rxe and TCP in one guest boot (build/bench/results.md)
#   make bench-2host make bench's standard cells between two guests over a virtual
#                   NIC, beside the same over veth (build/bench-2host/results.md)
#   make soak       30 min of mixed traffic in a guest, memory sampled (build/soak/)
#   make fuzz       the wire parsers under libFuzzer, 60 s each (build/fuzz/)
#   make fresh-check a build-only and a full machine, each in a new Debian 12
#                   chroot (scripts/fresh-check.sh)
#   make version    print the version this tree builds (scripts/version.sh)
#   make lint       checkpatch, shellcheck and the KIWI_* knob list (scripts/lint.sh;
#                   seconds, no guest; needs the test set's linux-source-6.1)
#   make fuzz-verbs the stateful verbs fuzzer in a guest, KIWI_FUZZ_MINUTES (3) (build/fuzz-verbs/)
#   make sanitizer-kernel  build (once) the KASAN/lockdep/UBSAN kernel of make check's sanitizer phase
#   make check-sanitizer   make check's sanitizer phase alone (KIWI_CHECK_SAN=1): that kernel
#                   built or found in /var/cache/kiwi, then abuse, errors, datapath, faults
#                   and fuzz-verbs each in a boot of it (build/selftests-logs/last/)

# Kernel headers, unless KDIR is given.  Goals that boot a test guest
# need the newest Debian 6.1 headers (the guest boots that kernel); a
# plain `make` takes the running kernel's when they are installed, else
# those 6.1 ones.
GUEST_GOALS := demo check check-2host check-sanitizer bench bench-2host soak fuzz-verbs
NEWEST_61 := $(lastword $(sort $(wildcard /usr/src/linux-headers-6.1.*-amd64)))
RUNNING_KDIR := $(wildcard /lib/modules/$(shell uname -r)/build)
ifneq ($(filter $(GUEST_GOALS),$(MAKECMDGOALS)),)
KDIR ?= $(NEWEST_61)
else
KDIR ?= $(if $(RUNNING_KDIR),$(RUNNING_KDIR),$(NEWEST_61))
endif
KVER ?= $(patsubst linux-headers-%,%,$(notdir $(KDIR)))
BUILD ?= $(CURDIR)/build
JOBS ?= $(shell nproc)

# Goals that need Debian packages (scripts/install-deps.sh): `make GOAL`
# installs GOAL's set and then runs GOAL in a second make, which looks for
# the kernel headers afresh: this one looked before they were installed.
# A new such goal: add it here, and its rule in the KIWI_DEPS_DONE part.
WITH_DEPS := demo check check-2host check-sanitizer bench bench-2host soak fuzz fuzz-verbs install deb sanitizer-kernel
deps_for = $(if $(filter install,$(1)),deps-build,$(if $(filter deb,$(1)),deps-deb,deps))

export BUILD
ifdef KIWI_DEPS_DONE
export KDIR KVER	# only now: a first make's values may predate make deps
endif

.PHONY: all kmod kconsumer provider siw deps deps-build deps-deb version lint demo check check-2host check-sanitizer bench bench-2host soak fuzz fuzz-verbs install deb uninstall clean help fresh-check sanitizer-kernel

all: kmod kconsumer provider

kmod kconsumer:
	@test -n "$(KDIR)" || { echo "kiwi: no kernel headers (linux-headers-$$(uname -r) or linux-headers-6.1.*-amd64); run 'make deps-build' or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR)$(if $(filter kconsumer,$@),/selftests/kconsumer) W=1 modules

provider:
	cmake -S $(CURDIR) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

siw:
	$(CURDIR)/scripts/build-siw.sh $(BUILD)/siw

deps:
	$(CURDIR)/scripts/install-deps.sh --set test

deps-build:
	$(CURDIR)/scripts/install-deps.sh --set build

deps-deb:
	$(CURDIR)/scripts/install-deps.sh --set deb

version:
	@$(CURDIR)/scripts/version.sh

lint:
	$(CURDIR)/scripts/lint.sh

ifndef KIWI_DEPS_DONE
.SECONDEXPANSION:
$(WITH_DEPS): $$(call deps_for,$$@)
	+@$(MAKE) --no-print-directory KIWI_DEPS_DONE=1 $@
else
demo: all
	$(CURDIR)/scripts/demo.sh

check: all siw
	$(CURDIR)/selftests/check.sh

check-2host: all siw
	$(CURDIR)/selftests/check-2host.sh

# Every phase but the sanitizer's left out (selftests/check.sh's names).
SAN_ONLY_SKIP := host,fuzz,suite,datapath,errors,abuse,faults,load,interop,ulp,nfs,apps,iser,mpi,k612,twohost,deb
check-sanitizer: all
	KIWI_CHECK_SAN=1 KIWI_CHECK_SKIP=$(SAN_ONLY_SKIP) $(CURDIR)/selftests/check.sh

bench: all siw
	$(CURDIR)/scripts/bench.sh

bench-2host: all siw
	$(CURDIR)/scripts/bench-2host.sh

soak: all
	$(CURDIR)/scripts/soak.sh

fuzz:
	$(CURDIR)/scripts/fuzz.sh

fuzz-verbs: all
	$(CURDIR)/selftests/fuzz-verbs/run-guest.sh

# DKMS builds the module for the running kernel: only the provider here.
install: provider
	$(CURDIR)/scripts/install.sh install

deb:
	$(CURDIR)/scripts/deb.sh

sanitizer-kernel:
	$(CURDIR)/scripts/build-sanitizer-kernel.sh
endif

uninstall:
	$(CURDIR)/scripts/install.sh uninstall

clean:
	$(if $(KDIR),$(MAKE) -C $(KDIR) M=$(CURDIR) clean)
	$(if $(KDIR),$(MAKE) -C $(KDIR) M=$(CURDIR)/selftests/kconsumer clean)
	rm -rf $(BUILD)

fresh-check:
	$(CURDIR)/scripts/fresh-check.sh

help:
	@sed -n '/^#   make /,/^$$/{/^$$/q;s/^# \{0,3\}//p}' Makefile
