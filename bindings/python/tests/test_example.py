"""examples/python/inventory.py runs on every driver: with a lease, a row
lock or optimistic versions, 8 buyers sell exactly the stock (L1, R1,
O1); without a lock they usually oversell (printed, not asserted: it
depends on timing)."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import PKG, slowdown

EXAMPLE = os.path.join(PKG, "..", "..", "examples", "python", "inventory.py")


def test_L1_R1_O1_inventory_example(url: str) -> None:
    env = dict(os.environ, PYTHONPATH=PKG)
    run = subprocess.run([sys.executable, EXAMPLE, url], env=env,
                         capture_output=True, text=True,
                         timeout=120 * slowdown())
    print(run.stdout, run.stderr)
    assert run.returncode == 0
    lines = {l[:20].strip(): l.split() for l in run.stdout.splitlines()[1:]}
    assert set(lines) == {"no lock", "lease lock", "row lock",
                          "optimistic version"}
    for mode in ("lease lock", "row lock", "optimistic version"):
        assert lines[mode][-2:] == ["20", "0"], (mode, lines[mode])
    assert int(lines["no lock"][-2]) >= 20
