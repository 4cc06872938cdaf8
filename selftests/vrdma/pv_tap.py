# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# TAP test points for the pyverbs selftests (dp_uc.py, dp_close.py):
#   tap = Tap(); tap(ok, "what"); ...; sys.exit(tap.status())


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def __call__(self, ok, what):
        self.n += 1
        self.failed += not ok
        print(f"{'ok' if ok else 'not ok'} {self.n} {what}", flush=True)

    def status(self):
        return 1 if self.failed else 0
