#!/bin/bash
# Copyright 2026 The Confab authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Session-bus activation of confabd --user: a private dbus-daemon whose
# service directory holds the session activation file this build installs
# (its Exec= pointed at the built confabd), with XDG directories in a
# temporary directory. The first method call to org.confab.Confab1 starts
# the daemon, which answers it, keeps its state in $XDG_DATA_HOME/confab and
# reads $XDG_CONFIG_HOME/confab/confab.conf; confabctl then finds it there
# without --session. (Under systemd the bus hands the start to the user unit
# named by SystemdService=; a bus without systemd activation runs Exec=.)
#
# Run by `meson test activation`. Exits 77 when dbus-daemon or gdbus is
# missing.

set -u

build=${MESON_BUILD_ROOT:?run me through meson test}
confabd=${CONFABD:?run me through meson test}
service_in=$build/data/org.confab.Confab1.session.service

for tool in dbus-daemon gdbus; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool is not installed (apt-get install dbus-daemon libglib2.0-bin)" >&2
		exit 77
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/confab-activation-test.XXXXXX")
bus_pid=
cleanup() {
	local pid
	# the activated daemon: asked to stop, as logout would
	pid=$(gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
		--method org.freedesktop.DBus.GetConnectionUnixProcessID org.confab.Confab1 2>/dev/null |
		sed -n 's/^(uint32 \([0-9]*\),)$/\1/p')
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -f "$tmp/bus.log" ] && sed 's/^/  bus: /' "$tmp/bus.log" >&2
	exit 1
}
ok() {
	echo "ok: $*"
}

[ -f "$service_in" ] || fail "the build has no session activation file ($service_in)"
grep -qx 'SystemdService=confabd.service' "$service_in" || fail "no SystemdService= in $service_in"
mkdir -p "$tmp/services" "$tmp/data" "$tmp/config/confab" "$tmp/runtime"
chmod 700 "$tmp/runtime"
sed "s|^Exec=.*|Exec=$confabd --user|" "$service_in" >"$tmp/services/org.confab.Confab1.service"
printf '[daemon]\nlisten = 127.0.0.1:0\n' >"$tmp/config/confab/confab.conf"
cat >"$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$tmp/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$tmp/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF

# the bus, and so the daemon it starts, with the XDG directories of the test
XDG_DATA_HOME=$tmp/data XDG_CONFIG_HOME=$tmp/config XDG_RUNTIME_DIR=$tmp/runtime \
	dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile >"$tmp/bus.log" 2>&1 &
bus_pid=$!
export DBUS_SESSION_BUS_ADDRESS=unix:path=$tmp/bus
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/no-system-bus
deadline=$((SECONDS + 20))
until [ -S "$tmp/bus" ]; do
	[ "$SECONDS" -lt "$deadline" ] && kill -0 "$bus_pid" 2>/dev/null || fail "dbus-daemon did not start"
	sleep 0.05
done

gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
	--method org.freedesktop.DBus.ListActivatableNames | grep -q "'org.confab.Confab1'" ||
	fail "the bus cannot start org.confab.Confab1"
gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
	--method org.freedesktop.DBus.NameHasOwner org.confab.Confab1 | grep -q false ||
	fail "org.confab.Confab1 runs before anyone called it"

# the first call starts it, and is answered
out=$(timeout 60 gdbus call --session --timeout 50 --dest org.confab.Confab1 \
	--object-path /org/confab/Confab1/SearchProvider \
	--method org.gnome.Shell.SearchProvider2.GetInitialResultSet "['hello']" 2>&1)
case "$out" in
"(@as [],)" | "([],)") ok "the first call started confabd --user and it answered" ;;
*) fail "GetInitialResultSet through activation: $out" ;;
esac
[ -f "$tmp/data/confab/confab.db" ] && ok "its state is in \$XDG_DATA_HOME/confab" ||
	fail "no database in $tmp/data/confab"
address=$(gdbus call --session --dest org.confab.Confab1 --object-path /org/confab/Confab1 \
	--method org.freedesktop.DBus.Properties.Get org.confab.Confab1.Admin ListenAddress 2>&1)
case "$address" in
*"http://127.0.0.1:8080"*) fail "it did not read \$XDG_CONFIG_HOME/confab/confab.conf: $address" ;;
*"http://127.0.0.1:"*) ok "it read \$XDG_CONFIG_HOME/confab/confab.conf and listens on $address" ;;
*) fail "ListenAddress: $address" ;;
esac

# confabctl, without --session, finds the user's daemon (no system service)
if [ -n "${CONFABCTL:-}" ] && [ -x "$CONFABCTL" ]; then
	CONFABCTL_BUS= "$CONFABCTL" agent create --name echo --provider echo >"$tmp/agent" 2>&1 ||
		fail "confabctl agent create: $(cat "$tmp/agent")"
	CONFABCTL_BUS= "$CONFABCTL" agent list | grep -q "$(cat "$tmp/agent")" &&
		ok "confabctl without --session talks to it" || fail "confabctl agent list"
fi
echo "all activation checks passed"
