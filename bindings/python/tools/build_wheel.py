#!/usr/bin/env python3
"""Writes the sqllock wheel: the Python package and the libsqllock it
binds, in one file that ``pip install FILE.whl`` takes into any CPython
>= 3.9 on Linux -- offline, with no setuptools or wheel module (issue 29
item 3). It uses the standard library alone, so any python3 >= 3.9 runs
it; ``cmake --build build --target python-wheel`` does:

    build_wheel.py --lib build/libsqllock.so.0.1.0 --out build/dist

The wheel holds sqllock/*.py, py.typed, sqllock/_libs/libsqllock.so.0
and sqllock/_libs/DEPENDS: the libraries of the system that this
libsqllock needs (its ELF DT_NEEDED entries, read here), each with the
Debian package that brings it -- sqllock/_lib.py checks them at import
and names the missing ones. The binding is pure Python (ctypes), so the
tag is py3-none-<platform>: one wheel for every CPython >= 3.9, for the
machine's architecture (the library is a binary of it). Not manylinux:
the library links the system's libpq, libmariadb and libsqlite3.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import struct
import sys
import sysconfig
import zipfile
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)                 # bindings/python

# The sonames a libsqllock may need, and their Debian 12 packages.
PACKAGES = {
    "libpq.so.5": "libpq5",
    "libmariadb.so.3": "libmariadb3",
    "libmysqlclient.so.21": "libmysqlclient21",
    "libsqlite3.so.0": "libsqlite3-0",
}
# Needed by every program: not worth a check.
BASE = ("libc.so.6", "ld-linux", "libpthread.so.0", "libm.so.6",
        "libdl.so.2", "librt.so.1")


def needed(path: str) -> List[str]:
    """The DT_NEEDED sonames of the ELF shared object at `path` (64-bit
    little-endian, as on x86_64 and aarch64 Linux)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("%s: not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        off = shoff + i * shentsize
        (name, typ, flags, addr, offset, size, link, info, align,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", data, off)
        sections.append((typ, offset, size, link, entsize))
    out = []
    for typ, offset, size, link, entsize in sections:
        if typ != 6:                        # SHT_DYNAMIC
            continue
        strtab = sections[link][1]
        for j in range(0, size, 16):
            tag, val = struct.unpack_from("<qQ", data, offset + j)
            if tag == 0:
                break
            if tag == 1:                    # DT_NEEDED
                end = data.index(b"\0", strtab + val)
                out.append(data[strtab + val:end].decode())
    return out


def version_of() -> str:
    """The package's version, from pyproject.toml."""
    with open(os.path.join(PKG_ROOT, "pyproject.toml")) as f:
        m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise SystemExit("pyproject.toml: no version")
    return m.group(1)


def platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(data).digest()).rstrip(b"=").decode()


def metadata(version: str) -> str:
    with open(os.path.join(PKG_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\n"
            "Name: sqllock\n"
            "Version: %s\n"
            "Summary: Distributed locks on the SQL database you already run "
            "(a binding of libsqllock)\n"
            "Requires-Python: >=3.9\n"
            "Classifier: Programming Language :: Python :: 3\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Topic :: Database\n"
            "Description-Content-Type: text/markdown\n"
            "\n%s" % (version, readme))


def build(lib: str, out_dir: str) -> str:
    version = version_of()
    tag = "py3-none-" + platform_tag()
    dist = "sqllock-%s" % version
    info = dist + ".dist-info"
    files: List[Tuple[str, bytes, int]] = []
    src = os.path.join(PKG_ROOT, "sqllock")
    for name in sorted(os.listdir(src)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(src, name), "rb") as f:
                files.append(("sqllock/" + name, f.read(), 0o644))
    with open(lib, "rb") as f:
        files.append(("sqllock/_libs/libsqllock.so.0", f.read(), 0o755))
    deps: Dict[str, str] = {}
    for so in needed(lib):
        if so.startswith(BASE):
            continue
        deps[so] = PACKAGES.get(so, "?")
    files.append(("sqllock/_libs/DEPENDS",
                  "".join("%s %s\n" % kv for kv in sorted(deps.items()))
                  .encode(), 0o644))
    files.append((info + "/METADATA", metadata(version).encode("utf-8"),
                  0o644))
    files.append((info + "/WHEEL", (
        "Wheel-Version: 1.0\n"
        "Generator: sqllock build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        "Tag: %s\n" % tag).encode(), 0o644))
    files.append((info + "/top_level.txt", b"sqllock\n", 0o644))
    record = "".join("%s,%s,%d\n" % (n, digest(d), len(d))
                     for n, d, _ in files) + info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode(), 0o644))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "%s-%s.whl" % (dist, tag))
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            zi = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True,
                    help="the built libsqllock.so to put in the wheel")
    ap.add_argument("--out", required=True, help="the directory to write to")
    args = ap.parse_args()
    if sys.version_info < (3, 9):
        raise SystemExit("build_wheel.py needs Python 3.9 or later")
    print(build(os.path.realpath(args.lib), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
