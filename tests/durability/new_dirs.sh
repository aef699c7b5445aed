#!/usr/bin/env bash
# Every directory idforge creates in its data directory is fsynced into its parent, so
# a crash of the machine cannot take it away with the files written into it (the
# served marks, the slot files, the fleet floor's records). Checked by tracing a real
# `idforge next --tag` on a data directory two levels deep that does not exist yet:
# after each mkdir of a directory, its parent is opened and fsynced.
# Usage: tests/durability/new_dirs.sh path/to/idforge
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$work/a/b"
"$bin" tag create t --data-dir "$data" >/dev/null
rm -rf "$work/a"
# The tag went with the directory, so the run ends "unknown tag" after creating it.
strace -f -qq -e trace=mkdir,mkdirat,openat,fsync -o "$work/trace" \
  "$bin" next --tag t --count 1 --data-dir "$data" >/dev/null 2>&1 || true
python3 - "$work/trace" "$work" <<'PY'
import re, sys
trace, work = sys.argv[1], sys.argv[2]
lines = open(trace).read().splitlines()
made = []     # directories created, in order
opened = {}   # fd -> path of a directory opened with O_DIRECTORY
synced = []   # paths fsynced
for line in lines:
    m = re.search(r'mkdir(?:at)?\((?:AT_FDCWD, )?"([^"]+)", [0-7]+\)\s+=\s+0', line)
    if m:
        made.append(m.group(1))
    m = re.search(r'openat\(AT_FDCWD, "([^"]+)", [^)]*O_DIRECTORY[^)]*\)\s+=\s+(\d+)', line)
    if m:
        opened[m.group(2)] = m.group(1)
    m = re.search(r'fsync\((\d+)\)\s+=\s+0', line)
    if m and m.group(1) in opened:
        synced.append(opened[m.group(1)])
mine = [d for d in made if d.startswith(work)]
if not mine:
    sys.exit("new_dirs: no directory was created under %s:\n%s" % (work, "\n".join(lines[-30:])))
missing = []
for d in mine:
    parent = d.rstrip("/").rsplit("/", 1)[0] or "/"
    if parent not in synced:
        missing.append("%s (parent %s never fsynced)" % (d, parent))
if missing:
    sys.exit("new_dirs: created without fsync of the parent:\n  " + "\n  ".join(missing))
print("new_dirs: %d directories created, each fsynced into its parent" % len(mine))
PY
