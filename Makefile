# SPDX-License-Identifier: GPL-2.0
#
# kiwi -- front door.  See README.md.
#
#   make            build kmod/kiwi.ko, build/provider/libkiwi-rdmav34.so and
#                   the test-only kernel consumer selftests/kconsumer/*.ko
#   make deps       install the Debian packages the build and tests need
#   make demo       build, boot a test guest, bring up kiwi devices, show them
#   make check      run every test (last line: "N passed, N failed")
#   make siw        build Linux's siw out of tree (build/siw/siw.ko), the interop peer
#   make bench      kiwi vs siw, rxe and TCP in one guest boot (build/bench/results.md)
#   make soak       30 min of mixed traffic in a guest, memory sampled (build/soak/)
#   make fuzz       the wire parsers under libFuzzer, 60 s each (build/fuzz/)
#   make install    the module (through DKMS) and the provider on this machine
#   make uninstall  remove what make install installed
#   make deb        Debian packages kiwi-dkms and libkiwi-rdmav34 (build/deb/)
#   make fresh-check make deps, make, make demo in a new Debian 12 chroot (scripts/fresh-check)
#   make sanitizer-kernel  build (once) the KASAN/lockdep/UBSAN kernel of make check's sanitizer phase

# Newest installed Debian bookworm 6.1 amd64 headers, unless KDIR is given.
# The running kernel is irrelevant: modules are tested in a guest.
KDIR ?= $(lastword $(sort $(wildcard /usr/src/linux-headers-6.1.*-amd64)))
KVER ?= $(patsubst linux-headers-%,%,$(notdir $(KDIR)))
BUILD ?= $(CURDIR)/build
JOBS ?= $(shell nproc)

# Goals that need the Debian packages (scripts/install-deps).  `make GOAL`
# runs `make deps` and then GOAL in a second make, which looks for the
# kernel headers afresh: this one looked before deps could install them.
# A new such goal: add it here, and its rule in the KIWI_DEPS_DONE part.
WITH_DEPS := demo check bench soak fuzz install deb sanitizer-kernel

export BUILD
ifdef KIWI_DEPS_DONE
export KDIR KVER	# only now: a first make's values may predate make deps
endif

.PHONY: all kmod kconsumer provider siw deps demo check bench soak fuzz install deb uninstall clean help fresh-check sanitizer-kernel

all: kmod kconsumer provider

kmod kconsumer:
	@test -n "$(KDIR)" || { echo "kiwi: no linux-headers-6.1.*-amd64 found; run 'make deps' or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR)$(if $(filter kconsumer,$@),/selftests/kconsumer) W=1 modules

provider:
	cmake -S $(CURDIR) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

siw:
	$(CURDIR)/scripts/build-siw $(BUILD)/siw

deps:
	$(CURDIR)/scripts/install-deps

ifndef KIWI_DEPS_DONE
$(WITH_DEPS): deps
	+@$(MAKE) --no-print-directory KIWI_DEPS_DONE=1 $@
else
demo: all
	$(CURDIR)/scripts/demo

check: all siw
	$(CURDIR)/selftests/check

bench: all siw
	$(CURDIR)/scripts/bench

soak: all
	$(CURDIR)/scripts/soak

fuzz:
	$(CURDIR)/scripts/fuzz

install: all
	$(CURDIR)/scripts/install install

deb:
	$(CURDIR)/scripts/deb

sanitizer-kernel:
	$(CURDIR)/scripts/build-sanitizer-kernel
endif

uninstall:
	$(CURDIR)/scripts/install uninstall

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C $(KDIR) M=$(CURDIR)/selftests/kconsumer clean
	rm -rf $(BUILD)

fresh-check:
	$(CURDIR)/scripts/fresh-check

help:
	@sed -n '3,16p' Makefile
