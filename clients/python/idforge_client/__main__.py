"""``python3 -m idforge_client parse ID [--layout L] [--epoch MS] [--tick-ms MS]``:
the JSON of ``idforge parse --json``, decoded without a server."""

from __future__ import annotations

import argparse
import json
import sys

from .layout import parse


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m idforge_client",
                                 description="idforge client tools")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="decode a Snowflake ID into its time and fields (JSON)")
    p.add_argument("id", help="the ID, in decimal")
    p.add_argument("-l", "--layout", default="twitter",
                   help="preset (twitter, discord, instagram, sonyflake, baidu) or custom "
                        "spec 'time:41,datacenter:5,worker:5,sequence:12'")
    p.add_argument("--epoch", default=None, help="epoch as Unix ms (default: the layout's)")
    p.add_argument("--tick-ms", default=None, help="tick length in ms (default: the layout's)")
    args = ap.parse_args(argv)
    try:
        out = parse(args.id, args.layout, args.epoch, args.tick_ms)
    except ValueError as e:
        print(f"idforge_client: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
