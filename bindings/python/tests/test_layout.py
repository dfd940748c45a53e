"""The binding against the header: struct layouts, *_INIT values,
constants and the status table (contract E1: a class for every status).

The C side is bindings/python/layout.c, built by CMake from
include/sqllock.h alone; ctest gives its path in SQLLOCK_PY_LAYOUT. Run
by hand without it, the layout cases are skipped (a failure under CI).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import subprocess
from typing import Dict, Tuple

import pytest

import sqllock
from sqllock import _lib

from conftest import PKG, is_ci

HEADER = os.path.join(PKG, "..", "..", "include", "sqllock.h")


def _layout() -> Dict[Tuple[str, ...], int]:
    path = os.environ.get("SQLLOCK_PY_LAYOUT")
    if not path:
        if is_ci():
            pytest.fail("SQLLOCK_PY_LAYOUT is not set (ctest sets it)")
        pytest.skip("SQLLOCK_PY_LAYOUT is not set: run through ctest, or set "
                    "it to build/bindings/.../sqllock_py_layout")
    out = subprocess.run([path], check=True, capture_output=True,
                         text=True).stdout
    facts = {}
    for line in out.splitlines():
        *key, value = line.split()
        facts[tuple(key)] = int(value)
    return facts


def test_E1_struct_sizes_and_offsets_match_the_header() -> None:
    facts = _layout()
    structs = {s.C_NAME: s for s in _lib.STRUCTS}
    c_structs = {k[1] for k in facts if k[0] == "sizeof"} - {
        "sqllock_op", "sqllock_lock_mode"}
    assert c_structs == set(structs), "layout.c and _lib.STRUCTS differ"
    for cname, cls in structs.items():
        assert ctypes.sizeof(cls) == facts[("sizeof", cname)], cname
        c_fields = {k[2]: v for k, v in facts.items()
                    if k[0] == "offsetof" and k[1] == cname}
        py_fields = {f[0]: getattr(cls, f[0]).offset for f in cls._fields_}
        assert py_fields == c_fields, cname
    # The enums the cells and lock modes pass as int.
    assert facts[("sizeof", "sqllock_op")] == ctypes.sizeof(ctypes.c_int)
    assert facts[("sizeof", "sqllock_lock_mode")] == ctypes.sizeof(ctypes.c_int)


def test_E1_init_macros_match() -> None:
    facts = _layout()
    structs = {s.C_NAME: s for s in _lib.STRUCTS}
    inits = {k[1] for k in facts if k[0] == "init"}
    assert inits, "layout.c printed no *_INIT values"
    for cname in inits:
        value = structs[cname].init()
        for key, want in facts.items():
            if key[0] != "init" or key[1] != cname:
                continue
            got = getattr(value, key[2])
            if not isinstance(got, int):
                got = int(bool(got))      # a pointer: NULL or not
            assert got == want, "%s.%s" % (cname, key[2])


def test_E1_constants_match() -> None:
    facts = _layout()
    consts = {k[1]: v for k, v in facts.items() if k[0] == "const"}
    assert consts
    for cname, want in consts.items():
        short = cname[len("SQLLOCK_"):].rstrip("_")
        if short == "VERSION_MAJOR":
            assert _lib.ABI_MAJOR == want
            continue
        assert getattr(_lib, short) == want, cname


def test_E1_every_status_has_its_exception_class() -> None:
    facts = _layout()
    codes = {k[1]: v for k, v in facts.items() if k[0] == "status"}
    assert codes == {n: c for c, n in sqllock.errors.STATUS_NAMES.items()}
    classes = set()
    for cname, code in codes.items():
        if code == 0:
            continue
        cls = sqllock.exception_for(code)
        assert issubclass(cls, sqllock.Error) and cls is not sqllock.Error
        assert cls.status == code and cls.errname == cname
        classes.add(cls)
        e = cls("a message")
        assert str(e) == "a message" and e.status == code
    assert len(classes) == len(codes) - 1, "two statuses share a class"


def test_E1_the_library_names_every_status_the_binding_knows() -> None:
    # Without the layout program too: the loaded library's own table.
    lib = _lib.lib
    for code, cname in sqllock.errors.STATUS_NAMES.items():
        assert lib.sqllock_errname(code).decode() == cname
    for code in range(_lib.STATUS_END + 64):
        if lib.sqllock_errname(code) != b"SQLLOCK_UNKNOWN":
            assert code in sqllock.errors.STATUS_NAMES, code
    assert sqllock.Busy.retryable and sqllock.Locked.retryable
    assert not sqllock.Lost.retryable and not sqllock.InvalidArgument.retryable


def test_E1_generated_errors_module_is_up_to_date() -> None:
    path = os.path.join(PKG, "tools", "gen_errors.py")
    spec = importlib.util.spec_from_file_location("gen_errors", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(PKG, "sqllock", "errors.py"), encoding="utf-8") as f:
        assert f.read() == gen.generate(HEADER), \
            "errors.py is out of date: run bindings/python/tools/gen_errors.py"


def test_builtin_bases() -> None:
    assert issubclass(sqllock.ConnectionError, ConnectionError)
    assert issubclass(sqllock.Timeout, TimeoutError)
    assert issubclass(sqllock.InvalidArgument, ValueError)
    assert issubclass(sqllock.BadURL, ValueError)
