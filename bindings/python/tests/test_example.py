"""examples/python/inventory.py runs on every driver: with a lease, a
lease and its guard on the application's own connection, a row lock, a
row lock joined into the application's transaction, or optimistic
versions, 8 buyers sell exactly the stock (L1, G1, R1, G2, O1); without a
lock they usually oversell (printed, not asserted: it depends on
timing)."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import PKG, slowdown

EXAMPLE = os.path.join(PKG, "..", "..", "examples", "python", "inventory.py")


def test_L1_G1_R1_G2_O1_inventory_example(url: str) -> None:
    env = dict(os.environ, PYTHONPATH=PKG)
    run = subprocess.run([sys.executable, EXAMPLE, url], env=env,
                         capture_output=True, text=True,
                         timeout=120 * slowdown())
    print(run.stdout, run.stderr)
    assert run.returncode == 0
    lines = {l[:20].strip(): l.split() for l in run.stdout.splitlines()[1:]}
    locked = ("lease lock", "lease + guard", "row lock", "joined row lock",
              "optimistic version")
    assert set(lines) == {"no lock"} | set(locked)
    for mode in locked:
        assert lines[mode][-2:] == ["20", "0"], (mode, lines[mode])
    assert int(lines["no lock"][-2]) >= 20
