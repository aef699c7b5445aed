"""Decoding Snowflake IDs without a server: the same rules and output as
``idforge parse --json`` (src/core/layout.cc, src/cli/decoded_output.cc)."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

_ID_BITS = 64
_MAX_FIELD_BITS = 63
_MAX_FIELDS = 16
_MAX_TICK_MS = 86_400_000  # the CLI's bound of --tick-ms
_MAX_U64 = (1 << 64) - 1
_MAX_I64 = (1 << 63) - 1
_TWITTER_EPOCH_MS = 1288834974657
_SPEC_EXAMPLE = "time:41,datacenter:5,worker:5,sequence:12"
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
# format_iso8601_utc prints years 0..9999; later times are printed as the number.
_MAX_ISO_MS = 253402300800000 - 1
# A custom field named like one of the fixed keys gets a prefix (decoded_output.cc).
_RESERVED_KEYS = ("id", "layout", "unix_ms", "time")

TIME, NODE, SEQUENCE = "time", "node", "sequence"


class Field(NamedTuple):
    name: str
    bits: int
    role: str


class Layout(NamedTuple):
    name: str
    epoch_ms: int
    tick_ms: int
    fields: Tuple[Field, ...]
    shifts: Tuple[int, ...]
    total_bits: int


def _role(name: str) -> str:
    if name == "time":
        return TIME
    if name in ("sequence", "seq", "increment"):
        return SEQUENCE
    return NODE


def _fields(*items: Tuple[str, int]) -> List[Field]:
    return [Field(n, b, _role(n)) for n, b in items]


# docs/snowflake.md, "Layouts".
_PRESETS: Dict[str, Tuple[int, int, List[Field]]] = {
    "twitter": (_TWITTER_EPOCH_MS, 1,
                _fields(("time", 41), ("datacenter", 5), ("worker", 5), ("sequence", 12))),
    "discord": (1420070400000, 1,
                _fields(("time", 42), ("worker", 5), ("process", 5), ("increment", 12))),
    "instagram": (1314220021721, 1, _fields(("time", 41), ("shard", 13), ("sequence", 10))),
    "sonyflake": (1409529600000, 10, _fields(("time", 39), ("sequence", 8), ("machine", 16))),
    "baidu": (1463673600000, 1000, _fields(("time", 28), ("worker", 22), ("sequence", 13))),
}

PRESETS = tuple(_PRESETS)


def _layout_error(name: str, what: str) -> ValueError:
    return ValueError(f"layout {name or '(unnamed)'}: {what}")


def _field_error(field: str, what: str) -> ValueError:
    return ValueError(f"layout field '{field}': {what}")


def _create(name: str, epoch_ms: int, tick_ms: int, fields: List[Field]) -> Layout:
    """Layout::create: the same checks, in the same order."""
    if not fields or len(fields) > _MAX_FIELDS:
        raise _layout_error(name, f"has {len(fields)} fields; a layout has 1..{_MAX_FIELDS} "
                                  "(one time, one sequence, any node fields)")
    total = 0
    time_index = sequence_index = -1
    for i, f in enumerate(fields):
        if not _FIELD_NAME.match(f.name):
            raise ValueError(f'layout field "{f.name}": a name is a lower-case letter then '
                             "letters, digits or '_'")
        if any(g.name == f.name for g in fields[:i]):
            raise _field_error(f.name, "the name is used twice")
        if not 1 <= f.bits <= _MAX_FIELD_BITS:
            raise _field_error(f.name, f"width {f.bits} is not in 1..{_MAX_FIELD_BITS}")
        total += f.bits
        if total > _ID_BITS:
            raise _field_error(f.name, f"the widths up to this field sum to {total} bits, "
                                       "more than the 64 of an ID")
        if f.role in (TIME, SEQUENCE):
            other = time_index if f.role == TIME else sequence_index
            if other >= 0:
                raise _field_error(f.name, f"a layout has one {f.role} field and "
                                           f"'{fields[other].name}' is already it")
            if f.role == TIME:
                time_index = i
            else:
                sequence_index = i
    if time_index < 0:
        raise _layout_error(name, "has no time field (a custom spec names it 'time')")
    if sequence_index < 0:
        raise _layout_error(name, "has no sequence field (a custom spec names it 'sequence', "
                                  "'seq' or 'increment')")
    if tick_ms < 1:
        raise _layout_error(name, f"tick_ms {tick_ms} is not >= 1")
    if epoch_ms < 0:
        raise _layout_error(name, f"epoch_ms {epoch_ms} is before 1970")
    time = fields[time_index]
    max_tick = (1 << time.bits) - 1
    if max_tick > (_MAX_I64 - epoch_ms) // tick_ms:
        raise _field_error(time.name, f"{time.bits} bits of {tick_ms} ms ticks from epoch "
                                      f"{epoch_ms} run past the largest int64 Unix ms")
    shifts = [0] * len(fields)
    shift = 0
    for i in range(len(fields) - 1, -1, -1):
        shifts[i] = shift
        shift += fields[i].bits
    return Layout(name, epoch_ms, tick_ms, tuple(fields), tuple(shifts), total)


def _parse_spec(spec: str) -> List[Field]:
    fields = []
    for raw in spec.split(","):
        item = raw.strip(" \t")
        if not item:
            raise ValueError(f'layout spec "{spec}" has an empty item; expected name:bits,... '
                             f"like {_SPEC_EXAMPLE}")
        if item.count(":") != 1:
            raise ValueError(f'layout spec item "{item}" is not name:bits (e.g. worker:5)')
        name, bits_text = (part.strip(" \t") for part in item.split(":"))
        if not bits_text or len(bits_text) > 3 or not all("0" <= c <= "9" for c in bits_text):
            raise ValueError(f'layout spec item "{item}": width "{bits_text}" is not a number '
                             "of bits")
        fields.append(Field(name, int(bits_text), _role(name)))
    return fields


def _int_option(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    if isinstance(value, str):
        if not value or not all("0" <= c <= "9" for c in value):
            raise ValueError(f"{what} must be a whole number, got {value!r}")
        value = int(value)
    return value


def resolve_layout(layout: str = "twitter", epoch_ms: Optional[int] = None,
                   tick_ms: Optional[int] = None) -> Layout:
    """A preset name (any case) or a custom spec, with an optional epoch and tick.

    Raises ValueError naming what is wrong, as ``idforge parse`` does.
    """
    if not isinstance(layout, str):
        raise ValueError(f"layout must be a preset name or a spec, got {layout!r}")
    epoch = -1
    if epoch_ms is not None:
        epoch = _int_option(epoch_ms, "epoch_ms")
        if epoch < 0:
            raise ValueError("epoch_ms must not be before 1970-01-01")
    tick = -1
    if tick_ms is not None:
        tick = _int_option(tick_ms, "tick_ms")
        if not 1 <= tick <= _MAX_TICK_MS:
            raise ValueError(f"tick_ms must be from 1 to {_MAX_TICK_MS}, got {tick}")
    spec = layout.strip(" \t") or "twitter"
    if ":" not in spec:
        preset = _PRESETS.get(spec.lower())
        if preset is None:
            raise ValueError(f"unknown layout '{spec}' (presets: {', '.join(PRESETS)})")
        p_epoch, p_tick, fields = preset
        return _create(spec.lower(), epoch if epoch >= 0 else p_epoch,
                       tick if tick > 0 else p_tick, fields)
    try:
        return _create("custom", epoch if epoch >= 0 else _TWITTER_EPOCH_MS,
                       tick if tick > 0 else 1, _parse_spec(spec))
    except ValueError as e:
        raise ValueError(f"invalid layout '{spec}': {e}") from None


def _parse_id(value: Union[int, str]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"ID must be an int or a decimal string, got {value!r}")
    if isinstance(value, str):
        if not value:
            raise ValueError("ID is empty")
        if not all("0" <= c <= "9" for c in value):
            raise ValueError(f"ID must be a non-negative whole number, got '{value}'")
        value = int(value)
    if value < 0:
        raise ValueError(f"ID must be a non-negative whole number, got {value}")
    if value > _MAX_U64:
        raise ValueError(f"ID '{value}' is too large (the largest is {_MAX_U64})")
    return value


def format_time(unix_ms: int) -> str:
    """ISO-8601 UTC with milliseconds, as format_iso8601_utc (years 0..9999)."""
    if not 0 <= unix_ms <= _MAX_ISO_MS:
        return str(unix_ms)
    t = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=unix_ms)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:" \
           f"{t.second:02d}.{t.microsecond // 1000:03d}Z"


def parse(id: Union[int, str], layout: str = "twitter", epoch_ms: Optional[int] = None,
          tick_ms: Optional[int] = None) -> dict:
    """Decode a Snowflake ID: the keys and values of ``idforge parse --json``.

    ``{"id": "910499571847892992", "layout": "twitter", "unix_ms": 1505914988849,
    "time": "2017-09-20T13:43:08.849Z", "datacenter": 17, "worker": 25, "sequence": 0}``
    ``id`` is text (as in the server's JSON), the fields are ints. A bad ID or layout
    raises ValueError.
    """
    value = _parse_id(id)
    lay = resolve_layout(layout, epoch_ms, tick_ms)
    if lay.total_bits < _ID_BITS and value >> lay.total_bits:
        raise ValueError(f"ID {value} does not fit layout '{lay.name}', whose IDs have "
                         f"{lay.total_bits} bits (largest {(1 << lay.total_bits) - 1})")
    out = {"id": str(value), "layout": lay.name}
    rest = {}
    unix_ms = 0
    for f, shift in zip(lay.fields, lay.shifts):
        v = (value >> shift) & ((1 << f.bits) - 1)
        if f.role == TIME:
            unix_ms = lay.epoch_ms + v * lay.tick_ms
        else:
            rest["field_" + f.name if f.name in _RESERVED_KEYS else f.name] = v
    out["unix_ms"] = unix_ms
    out["time"] = format_time(unix_ms)
    out.update(rest)
    return out
