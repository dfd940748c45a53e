"""Python values to the C library's: durations, texts, keys and cells."""
from __future__ import annotations

import ctypes
import datetime
import math
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lib, errors
from ._lib import lib

# A duration: seconds (int or float), a timedelta, or a text that
# sqllock_parse_duration() reads ("500ms", "30s", "1m30s").
Duration = Union[int, float, datetime.timedelta, str]


def invalid(message: str) -> errors.InvalidArgument:
    """Bad input found before the library sees it (a NUL byte, NaN)."""
    return errors.InvalidArgument(message)


def duration_ms(value: Optional[Duration], what: str,
                default: int = 0) -> int:
    """`value` in whole milliseconds; None gives `default`. Refuses what
    is not a duration with InvalidArgument (a negative number is passed
    on, for the library to refuse with its own message)."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise TypeError("%s: a duration is seconds (int or float), a "
                        "timedelta or a text such as '30s', not a bool" % what)
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, str):
        ms = ctypes.c_int64()
        why = ctypes.c_char_p()
        rc = lib.sqllock_parse_duration_why(value.encode("utf-8", "replace"),
                                            ctypes.byref(ms), ctypes.byref(why))
        if rc != _lib.OK:
            raise invalid("%s %r is not a duration: %s" % (
                what, value, (why.value or b"").decode()))
        return ms.value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise invalid("%s must be a finite number of seconds, not %r"
                          % (what, value))
        ms = round(value * 1000)
        if not -2**63 <= ms < 2**63:
            raise invalid("%s %r is out of range" % (what, value))
        return int(ms)
    raise TypeError("%s: a duration is seconds (int or float), a timedelta "
                    "or a text such as '30s', not %s" % (what,
                                                         type(value).__name__))


def wait_ms(wait: Optional[Duration]) -> int:
    """A lease wait: None is forever, 0 one try."""
    if wait is None:
        return _lib.WAIT_FOREVER
    return duration_ms(wait, "wait")


def text(value: Optional[str], what: str) -> Optional[bytes]:
    """A C string: None stays NULL (for the library to refuse or
    default); a str is UTF-8 without NUL bytes, which C would cut."""
    if value is None:
        return None
    if isinstance(value, bytes):
        raw = value
    elif isinstance(value, str):
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise invalid("%s is not valid UTF-8: %s" % (what, e)) from None
    else:
        raise TypeError("%s must be a str, not %s" % (what,
                                                      type(value).__name__))
    if b"\0" in raw:
        raise invalid("%s contains a NUL byte" % what)
    return raw


def value_bytes(value: Union[bytes, bytearray, memoryview, str],
                what: str = "value") -> bytes:
    """A record value: bytes as they are, a str as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes or str, not %s" % (
        what, type(value).__name__))


class Op:
    """An assignment or a condition on one column of an application
    table (sqllock_op): ``sqllock.add(1)``, ``sqllock.ge(1)``, ... A plain
    value in ``set=`` means assignment, in ``where=`` equality."""

    __slots__ = ("op", "value")

    def __init__(self, op: int, value: Union[int, str]) -> None:
        self.op = op
        self.value = value

    def __repr__(self) -> str:
        names = ["set", "add", "sub", "eq", "ne", "lt", "le", "gt", "ge"]
        return "sqllock.%s(%r)" % (names[self.op], self.value)


def set_to(v: Union[int, str]) -> Op:
    """``column = v``"""
    return Op(_lib.OP_SET, v)


def add(n: int) -> Op:
    """``column = column + n``"""
    return Op(_lib.OP_ADD, n)


def sub(n: int) -> Op:
    """``column = column - n``"""
    return Op(_lib.OP_SUB, n)


def eq(v: Union[int, str]) -> Op:
    """``column = v``"""
    return Op(_lib.OP_EQ, v)


def ne(v: Union[int, str]) -> Op:
    """``column <> v``"""
    return Op(_lib.OP_NE, v)


def lt(v: Union[int, str]) -> Op:
    """``column < v``"""
    return Op(_lib.OP_LT, v)


def le(v: Union[int, str]) -> Op:
    """``column <= v``"""
    return Op(_lib.OP_LE, v)


def gt(v: Union[int, str]) -> Op:
    """``column > v``"""
    return Op(_lib.OP_GT, v)


def ge(v: Union[int, str]) -> Op:
    """``column >= v``"""
    return Op(_lib.OP_GE, v)


def cell(value: Any, what: str, column: Optional[str] = None,
         op: int = _lib.OP_SET) -> _lib.Cell:
    """One sqllock_cell: an int is a number, a str a text."""
    c = _lib.Cell()
    c.column = text(column, "column") if column is not None else None
    c.op = op
    if isinstance(value, bool) or value is None:
        raise TypeError("%s must be an int or a str, not %r" % (what, value))
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise invalid("%s %d does not fit in 64 bits" % (what, value))
        c.number = value
    elif isinstance(value, str):
        c.text = text(value, what)
    else:
        raise TypeError("%s must be an int or a str, not %s" % (
            what, type(value).__name__))
    return c


def cells(items: Sequence[Any], what: str) -> Tuple[Any, int]:
    """A C array of cells for `items` (keys or statement arguments)."""
    arr = (_lib.Cell * max(len(items), 1))()
    for i, v in enumerate(items):
        arr[i] = cell(v, what)
    return arr, len(items)


def column_cells(mapping: Optional[Mapping[str, Any]], assign: bool,
                 what: str) -> Tuple[Any, int]:
    """Cells for ``set=`` (assign) or ``where=`` mappings."""
    items = list((mapping or {}).items())
    arr = (_lib.Cell * max(len(items), 1))()
    for i, (col, v) in enumerate(items):
        if isinstance(v, Op):
            if assign != (v.op in (_lib.OP_SET, _lib.OP_ADD, _lib.OP_SUB)):
                raise invalid("%s: %r is not %s" % (
                    what, v, "an assignment" if assign else "a condition"))
            arr[i] = cell(v.value, "%s[%r]" % (what, col), col, v.op)
        else:
            arr[i] = cell(v, "%s[%r]" % (what, col), col,
                          _lib.OP_SET if assign else _lib.OP_EQ)
    return arr, len(items)


def names_array(names: Sequence[str], what: str) -> Tuple[Any, List[bytes]]:
    """A C array of lock names (the bytes kept alive by the caller)."""
    raw = [text(n, what) for n in names]
    arr = (ctypes.c_char_p * max(len(raw), 1))(*raw)
    return arr, raw
