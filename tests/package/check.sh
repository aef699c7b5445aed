#!/usr/bin/env bash
# Checks the Debian package (cmake/packaging.cmake, packaging/) as Debian and systemd see
# it, and installs it the way dpkg does:
#   1. builds it (`cmake --build BUILD_DIR --target deb`) unless given one, and checks
#      its files, conffiles and changelog version;
#   2. lintian: any error (E:) fails; warnings are listed;
#   3. installs it with dpkg into an empty root (dpkg --root, maintainer scripts run
#      with DPKG_ROOT) whose package database holds only this machine's packages that
#      the .deb depends on, so its Depends are checked against a real Debian system: the
#      postinst must create the system user idforge and must not enable the unit;
#   4. systemd-analyze verify on the installed unit (no warning allowed), and
#      systemd-analyze security --offline: the overall exposure must stay below
#      MAX_EXPOSURE, and is printed;
#   5. runs the installed binary with the installed configuration (only the ports and
#      the data directory overridden), fetches a Snowflake ID over HTTP, and stops it with
#      SIGTERM, expecting exit status 0;
#   6. purges the package from that root: the configuration goes, the state directory
#      and the user stay (packaging/postrm says why).
#
# Usage: tests/package/check.sh BUILD_DIR [DEB]   (ctest: package.deb; needs root or
#        fakeroot for dpkg, and lintian, systemd, curl: scripts/install-deps)
set -euo pipefail

build=${1:?usage: tests/package/check.sh BUILD_DIR [DEB]}
deb=${2:-}
MAX_EXPOSURE=${MAX_EXPOSURE:-1.5}

fail() { echo "package check: $*" >&2; exit 1; }
note() { echo "package check: $*"; }

for tool in dpkg dpkg-deb dpkg-query lintian systemd-analyze systemd-sysusers \
            deb-systemd-helper curl; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found: run scripts/install-deps"
done
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v fakeroot >/dev/null 2>&1 || fail "not root and no fakeroot: dpkg cannot install"
  as_root=(fakeroot)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-package.XXXXXX")
# shellcheck source=tests/support/serve.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/serve.sh"
cleanup() {
  serve_kill
  rm -rf "$work"
}
trap cleanup EXIT

# --- 1. the package and what it holds ------------------------------------------------
version=$("$build/idforge" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
if [ -z "$deb" ]; then
  cmake --build "$build" --target deb >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; fail "cmake --build $build --target deb failed"; }
  deb=$build/idforge_${version}_${arch}.deb
fi
[ -f "$deb" ] || fail "no package at $deb"
[ "$(basename "$deb")" = "idforge_${version}_${arch}.deb" ] ||
  fail "$deb is not named idforge_${version}_${arch}.deb"
[ "$(dpkg-deb -f "$deb" Package)" = idforge ] || fail "the package is not called idforge"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "the package's version is not $version"

dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | sed 's#^\./#/#' | sort >"$work/files"
cat >"$work/expected" <<EOF
/etc/idforge/idforge.toml
/lib/systemd/system/idforge.service
/usr/bin/idforge
/usr/lib/sysusers.d/idforge.conf
/usr/share/doc/idforge/changelog.gz
/usr/share/doc/idforge/copyright
/usr/share/man/man1/idforge-serve.1.gz
/usr/share/man/man1/idforge.1.gz
EOF
diff -u "$work/expected" "$work/files" >&2 || fail "the package's files differ from the list above"
dpkg-deb --info "$deb" conffiles | grep -qx /etc/idforge/idforge.toml ||
  fail "/etc/idforge/idforge.toml is not a conffile"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/idforge/changelog.gz | gzip -dc |
  head -1 | grep -q "^idforge ($version) " ||
  fail "packaging/changelog has no entry for $version at the top"

# --- 2. lintian ---------------------------------------------------------------------
# Run as root it says so on stderr; only tags count.
lintian --no-tag-display-limit "$deb" >"$work/lintian" 2>"$work/lintian.err" || true
if grep -q '^E: ' "$work/lintian"; then
  cat "$work/lintian" >&2
  fail "lintian reports errors"
fi
if grep -q '^W: ' "$work/lintian"; then
  note "lintian warnings:"
  grep '^W: ' "$work/lintian" | sed 's/^/  /'
else
  note "lintian: no errors, no warnings"
fi

# --- 3. dpkg into an empty root ---------------------------------------------------------
root=$work/root
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
: >"$admin/status"
# Each package the .deb depends on, as this machine has it installed, or the installed
# package that provides it (libspdlog1.10 provides libspdlog1.10-fmt9); the alternatives
# of a group too, so whichever one is installed satisfies it.
dpkg-deb -f "$deb" Depends | tr ',|' '\n' | sed 's/(.*//; s/[[:space:]]//g' | grep . |
  sort -u >"$work/depends"
dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' |
  awk '$1 == "ii" { for (i = 2; i <= NF; i++) { sub(/,$/, "", $i); if ($i !~ /[()]/) print $i, $2 } }' \
  >"$work/installed"  # NAME PACKAGE: each installed package under its own and provided names
awk 'NR == FNR { want[$1] = 1; next } want[$1] { print $2 }' "$work/depends" "$work/installed" |
  sort -u >"$work/satisfying"
while read -r pkg; do
  dpkg-query -W -f='Package: ${Package}\nStatus: install ok installed\nPriority: optional\nSection: misc\nMaintainer: ${Maintainer}\nArchitecture: ${Architecture}\nMulti-Arch: ${Multi-Arch}\nVersion: ${Version}\nProvides: ${Provides}\nDescription: ${binary:Summary}\n\n' \
    "$pkg" | sed '/^Multi-Arch: $/d; /^Provides: $/d' >>"$admin/status"
  : >"$admin/info/$(dpkg-query -W -f='${binary:Package}' "$pkg").list"
done <"$work/satisfying"

"${as_root[@]}" dpkg --root="$root" --force-script-chrootless --force-not-root -i "$deb" \
  >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i into an empty root failed"; }
[ "$(dpkg-query --admindir="$admin" -W -f='${Status}' idforge)" = "install ok installed" ] ||
  { cat "$work/dpkg.log" >&2; fail "idforge is not 'install ok installed' in the new root"; }
dpkg-query --admindir="$admin" -W -f='${Conffiles}\n' idforge | grep -q '/etc/idforge/idforge.toml' ||
  fail "dpkg did not register /etc/idforge/idforge.toml as a conffile"

# The postinst made the system user and group (sysusers.d).
user=$(grep '^idforge:' "$root/etc/passwd" || true)
[ -n "$user" ] || fail "postinst created no user idforge (in $root/etc/passwd)"
IFS=: read -r _ _ uid gid _ home shell <<<"$user"
[ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] || fail "idforge is not a system user: uid $uid"
grep -q "^idforge:x:$gid:" "$root/etc/group" || fail "no group idforge with gid $gid"
[ "$home" = /var/lib/idforge ] || fail "idforge's home is $home, not /var/lib/idforge"
[ "$shell" = /usr/sbin/nologin ] || fail "idforge's shell is $shell, not /usr/sbin/nologin"
# Installed, recorded for a purge, not enabled (packaging/postinst says why).
[ -f "$root/var/lib/systemd/deb-systemd-helper-enabled/idforge.service.dsh-also" ] ||
  fail "postinst did not record the unit with deb-systemd-helper"
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/idforge.service" ] ||
  fail "postinst enabled idforge.service"

# The configuration: accepted, data_dir the StateDirectory, everything else a default.
"$root/usr/bin/idforge" serve --config "$root/etc/idforge/idforge.toml" --print-config \
  >"$work/print-config" 2>&1 || { cat "$work/print-config" >&2; fail "--print-config refuses the installed idforge.toml"; }
grep -q '^data_dir = "/var/lib/idforge"' "$work/print-config" ||
  fail "the installed idforge.toml does not set data_dir = \"/var/lib/idforge\""
from_file=$(grep -c '# file ' "$work/print-config" || true)
[ "$from_file" = 1 ] ||
  { cat "$work/print-config" >&2; fail "the installed idforge.toml sets $from_file settings, not just data_dir"; }

# --- 4. the unit ------------------------------------------------------------------------
unit=$root/lib/systemd/system/idforge.service
for line in 'Type=notify' 'NotifyAccess=main' 'User=idforge' 'Group=idforge' \
            'StateDirectory=idforge' 'ConfigurationDirectory=idforge' 'KillSignal=SIGTERM' \
            'Restart=on-failure' 'ExecStart=/usr/bin/idforge serve --config /etc/idforge/idforge.toml'; do
  grep -qx "$line" "$unit" || fail "idforge.service has no line '$line'"
done
grep -q '^WatchdogSec=[1-9]' "$unit" || fail "idforge.service has no WatchdogSec="
# systemd must wait out the drain: TimeoutStopSec above shutdown_grace_ms (default 5 s).
stop_s=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s\{0,1\}$/\1/p' "$unit")
[ -n "$stop_s" ] && [ "$stop_s" -gt 5 ] || fail "TimeoutStopSec= (${stop_s:-none}) is not above the 5 s grace"

# verify needs the targets every service is ordered against (sysinit.target, ...): this
# machine's systemd's own, as on any installed system. Any output is a problem (verify
# exits 0 on settings it ignores); the man pages it checks are the installed ones.
for target in /lib/systemd/system/*.target; do
  [ -e "$root/lib/systemd/system/$(basename "$target")" ] ||
    cp "$target" "$root/lib/systemd/system/"
done
# ExecReload's /bin/kill comes from procps, a dependency: on an installed system it is
# there, so the empty root gets this machine's.
mkdir -p "$root/bin"
[ -e "$root/bin/kill" ] || cp /bin/kill "$root/bin/kill"
MANPATH=$root/usr/share/man systemd-analyze verify --root="$root" \
  /lib/systemd/system/idforge.service >"$work/verify" 2>&1 ||
  { cat "$work/verify" >&2; fail "systemd-analyze verify failed"; }
[ ! -s "$work/verify" ] || { cat "$work/verify" >&2; fail "systemd-analyze verify complains"; }

systemd-analyze security --offline=true --root="$root" /lib/systemd/system/idforge.service \
  >"$work/security" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for idforge\.service: \([0-9.]*\).*/\1/p' "$work/security")
[ -n "$exposure" ] || { cat "$work/security" >&2; fail "systemd-analyze security rated nothing"; }
awk -v e="$exposure" -v max="$MAX_EXPOSURE" 'BEGIN { exit !(e < max) }' ||
  { cat "$work/security" >&2; fail "exposure $exposure is not below $MAX_EXPOSURE"; }
note "systemd-analyze security: overall exposure $exposure (must stay below $MAX_EXPOSURE)"

# --- 5. the installed binary with the installed configuration -------------------------
IDFORGE_HTTP=127.0.0.1:0 IDFORGE_RESP=127.0.0.1:0 IDFORGE_DATA_DIR=$work/data \
  serve_start "$work/server" "$root/usr/bin/idforge" serve \
  --config "$root/etc/idforge/idforge.toml" || fail "the installed idforge serve did not start"
url=$(serve_http_url "$work/server")
answer=$(curl -fsS --max-time 10 "${url}v1/snowflake") || fail "GET ${url}v1/snowflake failed"
echo "$answer" | grep -q '^{"kind":"snowflake","ids":\["[0-9][0-9]*"\]}$' ||
  fail "GET ${url}v1/snowflake answered $answer"
[ -d "$work/data" ] || fail "the server did not use IDFORGE_DATA_DIR ($work/data)"
status=0
serve_stop || status=$?
[ "$status" = 0 ] || { cat "$work/server.err" >&2; fail "SIGTERM: exit status $status, not 0"; }
note "installed binary and configuration: served $answer, exit 0 on SIGTERM"

# --- 6. purge -----------------------------------------------------------------------------
mkdir -p "$root/var/lib/idforge"
echo state >"$root/var/lib/idforge/segments.db"
"${as_root[@]}" dpkg --root="$root" --force-script-chrootless --force-not-root --purge idforge \
  >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg --purge failed"; }
[ ! -e "$root/usr/bin/idforge" ] || fail "the purge left /usr/bin/idforge"
[ ! -e "$root/etc/idforge/idforge.toml" ] || fail "the purge left /etc/idforge/idforge.toml"
[ ! -e "$root/var/lib/systemd/deb-systemd-helper-enabled/idforge.service.dsh-also" ] ||
  fail "the purge left deb-systemd-helper's record of the unit"
[ -f "$root/var/lib/idforge/segments.db" ] || fail "the purge deleted /var/lib/idforge"
grep -q '^idforge:' "$root/etc/passwd" || fail "the purge removed the user idforge"
note "ok: $deb"
