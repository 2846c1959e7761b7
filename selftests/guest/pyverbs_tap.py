#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""
Run modules of Debian's python3-pyverbs test suite against one RDMA device
and report every test case as a TAP line.

    /usr/bin/python3 pyverbs_tap.py --dev kiwi0 test_device test_pd

The suite ships in /usr/share/doc/rdma-core/tests with most modules gzipped;
it is copied to a temporary directory and unpacked there.  Its own
run_tests.py selects the device with `--dev NAME` (args_parser.py); we set
the same configuration through that parser, but import only the requested
modules (run_tests.py would import all ~50 of them, slow under TCG).

Result mapping: success -> ok; skip -> ok # SKIP reason; failure, error
(also in setUpClass/setUpModule), unexpected success -> not ok.
Exit status 0 only if nothing failed and at least one test ran.

Software RDMA devices on a dummy or veth netdev have no parent device, so
the suite's way of finding a device's IP address (the netdev under
/sys/class/infiniband/DEV/device/net/) finds nothing and every rdma_cm test
would skip.  For such devices the netdev is taken from `rdma link` instead;
everything else about the tests is unchanged.
"""
import argparse
import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import types
import unittest

SUITE = '/usr/share/doc/rdma-core/tests'


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.failed = 0

    def _emit(self, ok, test, directive='', diag=None):
        self.n += 1
        name = test.id() if hasattr(test, 'id') else str(test)
        if name.startswith('tests.'):
            name = name[len('tests.'):]
        if diag:
            for line in diag.rstrip().splitlines():
                print('# ' + line)
        print('%s %d %s%s' % ('ok' if ok else 'not ok', self.n, name,
                              directive))
        sys.stdout.flush()
        if not ok:
            self.failed += 1

    def addSuccess(self, test):
        super().addSuccess(test)
        self._emit(True, test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._emit(False, test, diag=self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._emit(False, test, diag=self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        reason = ' '.join(str(reason).split())
        self._emit(True, test, ' # SKIP ' + reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._emit(True, test, ' # TODO expected failure')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._emit(False, test, diag='unexpected success')


def unpack_suite(src):
    tmp = tempfile.mkdtemp(prefix='kiwi-pyverbs-')
    dst = os.path.join(tmp, 'tests')
    shutil.copytree(src, dst)
    for fn in os.listdir(dst):
        if fn.endswith('.gz'):
            path = os.path.join(dst, fn)
            with gzip.open(path, 'rb') as fin, open(path[:-3], 'wb') as fout:
                shutil.copyfileobj(fin, fout)
            os.unlink(path)
    return tmp, dst


def link_netdev(dev):
    """The netdev under RDMA device DEV, from `rdma -j link show DEV/1`."""
    try:
        out = subprocess.check_output(['rdma', '-j', 'link', 'show',
                                       dev + '/1'])
        return json.loads(out.decode())[0].get('netdev')
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


def find_ip_via_rdma_link(base):
    """Let the suite find the IP of a parentless device's netdev."""
    orig = base.RDMATestCase._get_ip_mac

    def get_ip_mac(self, dev, port, idx):
        if os.path.exists('/sys/class/infiniband/%s/device/net/' % dev):
            return orig(self, dev, port, idx)
        netdev = link_netdev(dev)
        try:
            ip, mac = self.get_ip_mac_address(netdev)
        except (KeyError, IndexError, TypeError,
                subprocess.CalledProcessError):
            ip = mac = None
        self.args.append([dev, port, idx, ip, mac])

    base.RDMATestCase._get_ip_mac = get_ip_mac


def mark_skips(tests, skips):
    """Replace the tests named in SKIPS (id without 'tests.') by skips."""
    for t in tests:
        if isinstance(t, unittest.TestSuite):
            mark_skips(t, skips)
            continue
        name = t.id()[len('tests.'):] if t.id().startswith('tests.') \
            else t.id()
        reason = skips.get(name)
        if reason is not None:
            method = getattr(t, t._testMethodName)
            setattr(type(t), t._testMethodName,
                    unittest.skip(reason)(method))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dev', required=True)
    ap.add_argument('--suite', default=SUITE)
    ap.add_argument('--skip', action='append', default=[],
                    metavar='TEST=REASON',
                    help='report TEST (e.g. test_rdmacm.CMTestCase.test_x) '
                         'as skipped with REASON instead of running it')
    ap.add_argument('modules', nargs='+', help='e.g. test_device test_pd')
    args = ap.parse_args()

    print('TAP version 13')
    if not os.path.isdir(args.suite):
        print('# pyverbs test suite not found at %s (python3-pyverbs)'
              % args.suite)
        print('not ok 1 pyverbs.suite_present')
        print('1..1')
        return 1

    tmp, dst = unpack_suite(args.suite)
    try:
        # The suite's modules do "from args_parser import parser" and
        # "from tests.base import ...": make both resolvable without running
        # tests/__init__.py (which imports every module of the suite).
        sys.path.insert(0, dst)
        pkg = types.ModuleType('tests')
        pkg.__path__ = [dst]
        sys.modules['tests'] = pkg
        from args_parser import parser  # noqa: E402
        sys.argv = [sys.argv[0], '--dev', args.dev]
        parser.parse_args()
        find_ip_via_rdma_link(importlib.import_module('tests.base'))

        loader = unittest.TestLoader()
        suite = unittest.TestSuite()
        result = TapResult()
        skips = dict(s.split('=', 1) for s in args.skip)
        for name in args.modules:
            try:
                mod = importlib.import_module('tests.' + name)
                tests = loader.loadTestsFromModule(mod)
                mark_skips(tests, skips)
                suite.addTests(tests)
            except Exception:
                result._emit(False, types.SimpleNamespace(
                    id=lambda n=name: n + '.import'),
                    diag=traceback.format_exc())
        suite.run(result)
        print('1..%d' % result.n)
        print('# pyverbs: %d run, %d failed, %d skipped'
              % (result.n, result.failed, len(result.skipped)))
        # Nothing that ran is no pass: a suite whose every test skipped
        # (no netdev found, every verb EOPNOTSUPP) fails as a whole.
        if result.n and len(result.skipped) == result.n:
            print('# pyverbs: every test skipped, none ran')
            return 1
        return 0 if result.failed == 0 and result.n > 0 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
