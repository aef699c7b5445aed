"""Decoding without a server: every vector of tests/data/snowflake_vectors.txt, and
the same keys and values as `idforge parse --json` (docs/clients.md)."""

import json
import os
import subprocess
import sys
import unittest

from _support import IDFORGE_BIN, PACKAGE_ROOT, VECTORS  # also puts the package on sys.path

from idforge_client import Client, parse
from idforge_client.layout import resolve_layout

PRESET_FIELDS = {
    "twitter": ["datacenter", "worker", "sequence"],
    "discord": ["worker", "process", "increment"],
    "instagram": ["shard", "sequence"],
    "sonyflake": ["sequence", "machine"],
    "baidu": ["worker", "sequence"],
}


def load_vectors():
    """(layout, epoch_ms, tick_ms or None, id, unix_ms, [field values]) per line."""
    out = []
    with open(VECTORS) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            layout, epoch, id_, unix_ms, *fields = line
            tick = None
            if "@" in layout:
                layout, tick = layout.split("@")
                tick = int(tick)
            out.append((layout, int(epoch), tick, id_, int(unix_ms), [int(v) for v in fields]))
    return out


def cli_args(layout, epoch, tick):
    args = ["--layout", layout]
    if epoch is not None:
        args += ["--epoch", str(epoch)]
    if tick is not None:
        args += ["--tick-ms", str(tick)]
    return args


def idforge_parse(id_, layout="twitter", epoch=None, tick=None):
    """(exit code, stdout) of the C++ `idforge parse --json`."""
    r = subprocess.run([IDFORGE_BIN, "parse", id_, "--json"] + cli_args(layout, epoch, tick),
                       capture_output=True, text=True, timeout=10)
    return r.returncode, r.stdout.strip()


def python_parse_cli(id_, layout="twitter", epoch=None, tick=None):
    r = subprocess.run([sys.executable, "-m", "idforge_client", "parse", id_]
                       + cli_args(layout, epoch, tick),
                       capture_output=True, text=True, timeout=10, cwd=PACKAGE_ROOT,
                       env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
    return r.returncode, r.stdout.strip()


class VectorsTest(unittest.TestCase):
    def test_every_vector_decodes_to_its_fields_and_as_idforge_parse(self):
        vectors = load_vectors()
        self.assertGreaterEqual(len(vectors), 10)
        for layout, epoch, tick, id_, unix_ms, fields in vectors:
            with self.subTest(layout=layout, id=id_):
                got = Client.parse(int(id_), layout, epoch_ms=epoch, tick_ms=tick)
                self.assertEqual(got, parse(id_, layout, epoch, tick))  # text or int ID
                self.assertEqual(got["id"], id_)
                self.assertEqual(got["unix_ms"], unix_ms)
                names = PRESET_FIELDS.get(layout) or [
                    f.name for f in resolve_layout(layout).fields if f.role != "time"]
                self.assertEqual([got[n] for n in names], fields)
                rc, out = idforge_parse(id_, layout, epoch, tick)
                self.assertEqual(rc, 0, out)
                # Same keys, same order, same values, same types.
                self.assertEqual(list(json.loads(out).items()), list(got.items()))
                self.assertEqual(json.dumps(got, separators=(",", ":")), out)

    def test_the_module_cli_prints_what_idforge_parse_prints(self):
        cases = [(id_, layout, epoch, tick) for layout, epoch, tick, id_, _, _ in load_vectors()]
        cases += [("910499571847892992", "twitter", None, None),
                  ("175928847299117063", "discord", None, None)]
        for id_, layout, epoch, tick in cases:
            with self.subTest(layout=layout, id=id_):
                self.assertEqual(python_parse_cli(id_, layout, epoch, tick),
                                 idforge_parse(id_, layout, epoch, tick))


class AgainstIdforgeParseTest(unittest.TestCase):
    """Cases beyond the vectors: custom specs, reserved names, limits, and errors."""

    GOOD = [
        ("0", "twitter", None, None),
        ("9223372036854775807", "twitter", None, None),
        ("18446744073709551615", "discord", None, None),
        ("18446744073709551615", "instagram", None, None),
        ("72057594037927935", "sonyflake", None, None),
        ("5", "Twitter", None, None),
        ("5", "twitter", 0, 2),
        ("123456789012345", "baidu", 1735689600000, None),
        ("12", "time:41,seq:12,worker:5", None, None),
        ("5", "time:41, id:5 ,sequence:12", None, None),  # a reserved name, spaces
        ("77", "time:30,layout:3,unix_ms:3,sequence:12", 0, 1000),
        ("9223372036854775807", "time:51,seq:12", None, None),  # past year 9999
        ("9223372036854775807", "time:51,seq:12", 0, None),
        ("4095", "sequence:12,time:20", None, 86400000),
        ("1", "time:1,sequence:1", None, None),
        ("3", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,sequence:1",
         None, None),
    ]
    BAD = [
        ("18446744073709551615", "twitter", None, None),  # 64 bits in a 63-bit layout
        ("18446744073709551616", "twitter", None, None),
        ("abc", "twitter", None, None),
        ("-1", "twitter", None, None),
        ("1", "nope", None, None),
        ("1", "time:41,worker:10", None, None),  # no sequence
        ("1", "worker:10,sequence:12", None, None),  # no time
        ("1", "time:41,time:5,sequence:12", None, None),
        ("1", "time:41,seq:5,sequence:12", None, None),
        ("1", "time:41,Worker:5,sequence:12", None, None),
        ("1", "time:41,worker:0,sequence:12", None, None),
        ("1", "time:64,sequence:1", None, None),
        ("1", "time:41,worker:12,sequence:12", None, None),  # 65 bits
        ("1", "time:41,,sequence:12", None, None),
        ("1", "time:41,worker,sequence:12", None, None),
        ("1", "time:41,worker:x,sequence:12", None, None),
        ("1", "time:63,sequence:1", None, 1000),  # runs past int64 ms
        ("1", "twitter", None, 0),
        ("1", "twitter", None, 86400001),
    ]

    def test_same_answer_as_idforge_parse(self):
        for id_, layout, epoch, tick in self.GOOD:
            with self.subTest(id=id_, layout=layout):
                rc, out = idforge_parse(id_, layout, epoch, tick)
                self.assertEqual(rc, 0, out)
                got = parse(id_, layout, epoch, tick)
                self.assertEqual(json.dumps(got, separators=(",", ":")), out)

    def test_both_refuse_the_same_inputs(self):
        for id_, layout, epoch, tick in self.BAD:
            with self.subTest(id=id_, layout=layout):
                rc, out = idforge_parse(id_, layout, epoch, tick)
                self.assertNotEqual(rc, 0, out)
                with self.assertRaises(ValueError):
                    parse(id_, layout, epoch, tick)

    def test_python_types(self):
        with self.assertRaises(ValueError):
            parse(-1)
        with self.assertRaises(ValueError):
            parse(1 << 64)
        with self.assertRaises(ValueError):
            parse(True)
        with self.assertRaises(ValueError):
            parse(1.5)
        with self.assertRaises(ValueError):
            parse(1, epoch_ms=-1)
        self.assertEqual(parse(910499571847892992)["worker"], 25)


if __name__ == "__main__":
    unittest.main()
