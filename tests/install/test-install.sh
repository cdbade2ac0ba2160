#!/bin/bash
# Copyright 2026 The Confab authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `meson install` into a DESTDIR lays every file at its FHS path: the
# binaries, the systemd unit, the D-Bus policy and activation file, the
# sysusers.d file, the man pages, the .mo files, the sample config and the
# D-Bus reference. Then the files themselves: the unit points at the
# installed daemon and passes `systemd-analyze verify` and `security
# --offline` at 2.0 or lower, the activation file names the unit, the policy
# is well-formed, the sample config and confab.conf(5) document every key of
# src/core/confab-config.c, and the man pages render without warnings.
#
# Run by `meson test install` (tests/meson.build sets MESON_BUILD_ROOT and
# MESON_SOURCE_ROOT). Any failed check fails the test; when a check could not
# run for want of a tool, the test exits 77 (skip) after all the others
# passed, naming what it could not check.

set -u

build=${MESON_BUILD_ROOT:?run me through meson test}
source=${MESON_SOURCE_ROOT:?run me through meson test}

failures=0
skipped=()

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
ok() {
	echo "ok: $*"
}
skip() {
	echo "SKIP: $*" >&2
	skipped+=("$*")
}

for tool in meson python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool is not installed" >&2
		exit 77
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/confab-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
destdir=$tmp/root

# ---------- install ----------
if ! meson install -C "$build" --no-rebuild --destdir "$destdir" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	echo "FAIL: meson install" >&2
	exit 1
fi
ok "meson install --destdir"

# ---------- where things should be ----------
# the build's directory options, as absolute paths
prefix='' bindir='' sbindir='' libdir='' datadir='' mandir='' localedir='' sysconfdir=''
opt_unitdir='' opt_userunitdir='' opt_man='' opt_group=''
eval "$(meson introspect --buildoptions "$build" | python3 -c '
import json, sys, shlex
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
prefix = opts["prefix"]
def absolute(name):
    value = opts[name]
    return value if value.startswith("/") else prefix.rstrip("/") + "/" + value
for name in ("bindir", "sbindir", "libdir", "datadir", "mandir", "localedir", "sysconfdir"):
    print("%s=%s" % (name, shlex.quote(absolute(name))))
print("prefix=%s" % shlex.quote(prefix))
print("opt_unitdir=%s" % shlex.quote(opts.get("systemdunitdir", "")))
print("opt_userunitdir=%s" % shlex.quote(opts.get("systemduserunitdir", "")))
print("opt_man=%s" % ("true" if opts.get("man", True) else "false"))
print("opt_group=%s" % shlex.quote(opts.get("dbus_policy_group", "confab")))
')" || {
	echo "FAIL: reading the build options" >&2
	exit 1
}

# the installed files, relative to the DESTDIR
(cd "$destdir" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) >"$tmp/installed"
echo "installed files:"
sed 's/^/  /' "$tmp/installed"

expected=()
expect() {
	expected+=("$1")
	if [ -f "$destdir$1" ]; then
		ok "installed $1"
	else
		fail "$1 is not installed"
	fi
}

confabd=$sbindir/confabd
expect "$confabd"
[ -x "$destdir$confabd" ] || fail "$confabd is not executable"
# the PostgreSQL store, loaded only when configured: confabd itself
# does not need libpq
expect "$libdir/confab/confab-store-postgres.so"
if readelf -d "$destdir$confabd" 2>/dev/null | grep -q 'libpq'; then
	fail "confabd links libpq"
else
	ok "confabd does not link libpq"
fi
if [ -f "$source/src/cli/confabctl.c" ]; then
	expect "$bindir/confabctl"
	[ -x "$destdir$bindir/confabctl" ] || fail "$bindir/confabctl is not executable"
fi

# the unit: in the systemd system unit directory of this prefix
unit=$(grep -E '/lib/systemd/system/confabd\.service$' "$tmp/installed" | head -n1)
if [ -n "$opt_unitdir" ]; then
	unit=$opt_unitdir/confabd.service
fi
if [ -z "$unit" ]; then
	fail "confabd.service is not in a lib/systemd/system directory"
	unit=/nonexistent/confabd.service
fi
expect "$unit"

expect "$datadir/dbus-1/system.d/org.confab.Confab1.conf"
expect "$datadir/dbus-1/system-services/org.confab.Confab1.service"
expect "$datadir/dbus-1/interfaces/org.confab.Confab1.xml"
expect "$prefix/lib/sysusers.d/confab.conf"
expect "$prefix/lib/tmpfiles.d/confab.conf"
expect "$(dirname "$unit")/confabd.socket"
expect "$sysconfdir/confab/confab.conf"
expect "$datadir/doc/confab/dbus/confab-dbus-org.confab.Confab1.Admin.xml"
expect "$datadir/doc/confab/dbus/confab-dbus-org.confab.Confab1.Chat.xml"

if [ "$opt_man" = true ]; then
	expect "$mandir/man8/confabd.8"
	expect "$mandir/man1/confabctl.1"
	expect "$mandir/man5/confab.conf.5"
	# built with the same stylesheets as the man pages
	expect "$datadir/doc/confab/dbus/confab-dbus-reference.html"
fi

languages=$(sed -e 's/#.*//' "$source/po/LINGUAS" | tr -s ' \t' '\n' | grep -v '^$')
[ -n "$languages" ] || fail "po/LINGUAS names no language"
for lang in $languages; do
	expect "$localedir/$lang/LC_MESSAGES/confab.mo"
done

# the desktop: confabd --user as a systemd user unit, started by the
# session bus
user_unit=$(grep -E '/lib/systemd/user/confabd\.service$' "$tmp/installed" | head -n1)
if [ -n "$opt_userunitdir" ]; then
	user_unit=$opt_userunitdir/confabd.service
fi
if [ -z "$user_unit" ]; then
	fail "confabd.service is not in a lib/systemd/user directory"
	user_unit=/nonexistent/user/confabd.service
fi
expect "$user_unit"
expect "$datadir/dbus-1/services/org.confab.Confab1.service"
# GNOME Shell's search provider and the desktop entry it names
expect "$datadir/gnome-shell/search-providers/org.confab.Confab1.search-provider.ini"
expect "$datadir/applications/org.confab.Confab1.desktop"
expect "$datadir/icons/hicolor/scalable/apps/org.confab.Confab1.svg"
expect "$datadir/dbus-1/interfaces/org.gnome.Shell.SearchProvider2.xml"

# nothing lands outside the prefix, the sysconfdir and the unit directories
while read -r file; do
	case "$file" in
	"$prefix"/* | "$sysconfdir"/* | "$(dirname "$unit")"/* | "$(dirname "$user_unit")"/*) ;;
	*) fail "$file is installed outside $prefix" ;;
	esac
done <"$tmp/installed"
for file in "${expected[@]}"; do echo "$file"; done | sort >"$tmp/expected"
comm -23 "$tmp/installed" "$tmp/expected" | sed 's/^/note: also installed: /'

# ---------- the unit and the activation file ----------
unit_file=$destdir$unit
if [ -f "$unit_file" ]; then
	exec_start=$(sed -n 's/^ExecStart=//p' "$unit_file")
	case "$exec_start" in
	"$confabd "*) ok "ExecStart runs $confabd" ;;
	*) fail "ExecStart is '$exec_start', not $confabd" ;;
	esac
	case "$exec_start" in
	*"--config $sysconfdir/confab/confab.conf"*) ok "ExecStart reads the installed config" ;;
	*) fail "ExecStart does not read $sysconfdir/confab/confab.conf" ;;
	esac
	grep -qx 'Type=notify' "$unit_file" || fail "the unit is not Type=notify"
	grep -qx 'StateDirectory=confab' "$unit_file" || fail "the unit has no StateDirectory=confab"
	user=$(sed -n 's/^User=//p' "$unit_file")
	[ -n "$user" ] || fail "the unit names no User="
	if [ -n "$user" ] && ! grep -Eq "^u +$user " "$destdir$prefix/lib/sysusers.d/confab.conf"; then
		fail "sysusers.d does not create the unit's user $user"
	fi
	grep -q "policy user=\"$user\"" "$destdir$datadir/dbus-1/system.d/org.confab.Confab1.conf" ||
		fail "the D-Bus policy does not let $user own the name"
	# the stop timeout covers the default shutdown grace (10 s) and the flush
	stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s\?$/\1/p' "$unit_file")
	if [ -z "$stop" ] || [ "$stop" -lt 15 ]; then
		fail "TimeoutStopSec='$stop' does not cover the 10 s shutdown grace"
	fi
fi

activation=$destdir$datadir/dbus-1/system-services/org.confab.Confab1.service
if [ -f "$activation" ]; then
	grep -qx 'Name=org.confab.Confab1' "$activation" || fail "activation file: wrong Name="
	service=$(sed -n 's/^SystemdService=//p' "$activation")
	[ "$service" = "$(basename "$unit")" ] ||
		fail "activation file: SystemdService=$service is not $(basename "$unit")"
	grep -qx "BusName=org.confab.Confab1" "$unit_file" || fail "the unit has no BusName="
fi

# ---------- the desktop: the user unit and the session activation file ----------
user_unit_file=$destdir$user_unit
if [ -f "$user_unit_file" ]; then
	exec_start=$(sed -n 's/^ExecStart=//p' "$user_unit_file")
	[ "$exec_start" = "$confabd --user" ] && ok "the user unit runs $confabd --user" ||
		fail "the user unit's ExecStart is '$exec_start', not $confabd --user"
	grep -qx 'Type=notify' "$user_unit_file" || fail "the user unit is not Type=notify"
	grep -qx 'BusName=org.confab.Confab1' "$user_unit_file" || fail "the user unit has no BusName="
	grep -qx 'WantedBy=default.target' "$user_unit_file" ||
		fail "the user unit is not wanted by default.target"
	grep -q '^User=' "$user_unit_file" && fail "the user unit names a User="
fi
session_activation=$destdir$datadir/dbus-1/services/org.confab.Confab1.service
if [ -f "$session_activation" ]; then
	grep -qx 'Name=org.confab.Confab1' "$session_activation" ||
		fail "session activation file: wrong Name="
	grep -qx 'SystemdService=confabd.service' "$session_activation" ||
		fail "session activation file: no SystemdService=confabd.service"
	grep -qx "Exec=$confabd --user" "$session_activation" &&
		ok "the session bus starts $confabd --user" ||
		fail "session activation file: Exec= is not $confabd --user"
fi

# ---------- the desktop: GNOME Shell's search provider ----------
ini=$destdir$datadir/gnome-shell/search-providers/org.confab.Confab1.search-provider.ini
desktop=$destdir$datadir/applications/org.confab.Confab1.desktop
if [ -f "$ini" ]; then
	python3 - "$ini" <<'EOF' && ok "the search provider names the bus, the object and the entry" ||
import configparser, sys
ini = configparser.ConfigParser(interpolation=None)
ini.optionxform = str
ini.read(sys.argv[1])
group = ini["Shell Search Provider"]
want = {"DesktopId": "org.confab.Confab1.desktop", "BusName": "org.confab.Confab1",
        "ObjectPath": "/org/confab/Confab1/SearchProvider", "Version": "2"}
bad = ["%s=%s, not %s" % (k, group.get(k), v) for k, v in want.items() if group.get(k) != v]
for b in bad:
    print("search provider:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
		fail "the search provider's .ini is wrong"
fi
if [ -f "$desktop" ]; then
	grep -qx 'NoDisplay=true' "$desktop" || fail "the desktop entry is not NoDisplay=true"
	grep -qx 'Icon=org.confab.Confab1' "$desktop" || fail "the desktop entry names another icon"
	if command -v desktop-file-validate >/dev/null; then
		desktop-file-validate "$desktop" && ok "desktop-file-validate" ||
			fail "desktop-file-validate $desktop"
	else
		skip "desktop-file-validate is not installed: the desktop entry was not validated"
	fi
fi

# ---------- the D-Bus policy ----------
policy=$destdir$datadir/dbus-1/system.d/org.confab.Confab1.conf
if command -v xmllint >/dev/null; then
	xmllint --noout "$policy" && ok "the D-Bus policy is well-formed" ||
		fail "the D-Bus policy is not well-formed XML"
	xmllint --noout "$destdir$datadir/doc/confab/dbus/"*.xml ||
		fail "the D-Bus reference is not well-formed XML"
else
	skip "xmllint is not installed: the policy's XML was not checked"
fi
grep -q "policy group=\"$opt_group\"" "$policy" || fail "the policy does not name the group $opt_group"
# the Admin interface is granted to root and the admin group only
python3 - "$policy" <<'EOF' || fail "the D-Bus policy grants too much"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
bad = []
for policy in root.findall("policy"):
    who = policy.attrib
    for allow in policy.findall("allow"):
        a = allow.attrib
        if a.get("own") and who.get("context") == "default":
            bad.append("anyone may own the name")
        if a.get("send_destination") == "org.confab.Confab1":
            iface = a.get("send_interface")
            if iface is None:
                bad.append("%s may call every interface" % who)
            if iface == "org.confab.Confab1.Admin" and "user" not in who and "group" not in who:
                bad.append("%s may call Admin" % who)
            if iface == "org.confab.Confab1.Admin" and who.get("user") not in (None, "root"):
                bad.append("%s may call Admin" % who)
            if iface == "org.freedesktop.DBus.Properties" and who.get("context") == "default":
                bad.append("anyone may read or set properties")
for b in bad:
    print("policy:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# ---------- the sample config and confab.conf(5) ----------
# every key of the table in src/core/confab-config.c, as "group key"
sed -n 's/^ *{"\([a-z_]*\)", "\([a-z_]*\)", KEY_.*/\1 \2/p' "$source/src/core/confab-config.c" >"$tmp/keys"
[ -s "$tmp/keys" ] || fail "no keys found in src/core/confab-config.c"
sample=$destdir$sysconfdir/confab/confab.conf
python3 - "$sample" "$tmp/keys" <<'EOF' || fail "the sample config does not document every key"
import configparser, re, sys
sample, keys = sys.argv[1], sys.argv[2]
# uncomment "#key = value" lines: the result must be a valid key file
text = re.sub(r"^#([a-z_]+ = )", r"\1", open(sample).read(), flags=re.M)
parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#",))
parser.read_string(text)
missing = []
for line in open(keys):
    group, key = line.split()
    if not parser.has_option(group, key):
        missing.append("[%s] %s" % (group, key))
for m in missing:
    print("sample config: no commented default for", m, file=sys.stderr)
sys.exit(1 if missing else 0)
EOF
if [ "$opt_man" = true ] && [ -f "$source/man/confab.conf.5.xml" ]; then
	while read -r group key; do
		grep -q "<title>\[$group\]</title>" "$source/man/confab.conf.5.xml" ||
			fail "confab.conf(5) has no [$group] section"
		grep -q "<varname>$key</varname>=" "$source/man/confab.conf.5.xml" ||
			fail "confab.conf(5) does not document $key"
	done <"$tmp/keys"
fi

# ---------- the man pages render ----------
if [ "$opt_man" = true ]; then
	if command -v groff >/dev/null; then
		for page in man8/confabd.8 man1/confabctl.1 man5/confab.conf.5; do
			warnings=$(groff -man -Tutf8 -ww -z "$destdir$mandir/$page" 2>&1)
			if [ -n "$warnings" ]; then
				fail "$page: groff warns: $warnings"
			else
				ok "$page renders"
			fi
		done
	else
		skip "groff is not installed: the man pages were not rendered"
	fi
fi

# ---------- the translations ----------
# po/POTFILES.in names every source file with translatable strings, and
# only files that exist
potfiles=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$source/po/POTFILES.in")
for file in $potfiles; do
	[ -f "$source/$file" ] || fail "po/POTFILES.in names $file, which does not exist"
done
for file in $(cd "$source" && grep -rl --include='*.c' -E '\b(N?_|C_|NC_|g_dngettext)\(' src); do
	echo "$potfiles" | grep -qx "$file" || fail "$file has translatable strings but is not in po/POTFILES.in"
done
if command -v xgettext >/dev/null && command -v msgcmp >/dev/null; then
	# every message of the current sources is translated in every language
	# shellcheck disable=SC2086 # one argument per file
	(cd "$source" && xgettext --from-code=UTF-8 --keyword=_ --keyword=N_ --keyword=C_:1c,2 \
		--keyword=NC_:1c,2 --keyword=g_dngettext:2,3 -o "$tmp/confab.pot" $potfiles) 2>/dev/null
	for lang in $languages; do
		if msgcmp "$source/po/$lang.po" "$tmp/confab.pot" >"$tmp/msgcmp.log" 2>&1; then
			ok "po/$lang.po translates every message"
		else
			n=$(grep -c 'this message is used but not defined' "$tmp/msgcmp.log")
			echo "note: po/$lang.po lacks $n message(s) of the sources; run" \
				"meson compile confab-update-po and translate them"
		fi
	done
fi
if command -v msgunfmt >/dev/null; then
	for lang in $languages; do
		mo=$destdir$localedir/$lang/LC_MESSAGES/confab.mo
		[ -f "$mo" ] || continue
		n=$(msgunfmt "$mo" | grep -c '^msgid ')
		[ "$n" -gt 1 ] && ok "$lang: $((n - 1)) translated messages" ||
			fail "$lang: the catalogue is empty"
	done
else
	skip "msgunfmt is not installed: the .mo files were not read"
fi

# ---------- the D-Bus policy, enforced by a real bus ----------
# A private bus of type "system" with the usual default deny, plus the
# installed policy with its principals mapped onto the one user that runs
# this test: as "root" (or the admin group) it may call Admin and read its
# properties; as an ordinary user only Chat and Introspectable reach the
# daemon and the bus itself refuses Admin and Properties. Both times it owns
# the name as the service user.
bus_pid=
daemon_pid=
stop_bus() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	[ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
	daemon_pid=
	bus_pid=
}
trap 'stop_bus; rm -rf "$tmp"' EXIT

# policy_case NAME ROOT_STANDIN: starts a bus and confabd; echoes nothing
policy_case() {
	local name=$1 root_standin=$2 me
	me=$(id -un)
	local dir=$tmp/bus-$name
	mkdir -p "$dir"
	sed -e "s|user=\"root\"|user=\"$root_standin\"|" \
		-e "s|user=\"$user\"|user=\"$me\"|" \
		-e "s|group=\"$opt_group\"|group=\"confab-test-no-such-group\"|" \
		"$policy" >"$dir/policy.conf"
	cat >"$dir/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$dir/socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <include>$dir/policy.conf</include>
</busconfig>
EOF
	dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile >"$dir/bus.log" 2>&1 &
	bus_pid=$!
	export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$dir/socket
	# wait, with a deadline, until the bus listens
	local deadline=$((SECONDS + 20))
	until [ -S "$dir/socket" ]; do
		if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$bus_pid" 2>/dev/null; then
			cat "$dir/bus.log" >&2
			fail "policy/$name: dbus-daemon did not start with the installed policy"
			return 1
		fi
		sleep 0.05
	done
	: >"$dir/empty.conf"
	"$CONFABD" --bus system --listen 127.0.0.1:0 --state-dir "$dir/state" \
		--config "$dir/empty.conf" >"$dir/confabd.log" 2>&1 &
	daemon_pid=$!
	# wait, with a deadline, until confabd owns its name
	deadline=$((SECONDS + 20))
	until gdbus call --system --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
		--method org.freedesktop.DBus.NameHasOwner org.confab.Confab1 2>/dev/null | grep -q true; do
		if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
			cat "$dir/bus.log" "$dir/confabd.log" >&2
			fail "policy/$name: confabd did not own org.confab.Confab1 under the installed policy"
			return 1
		fi
		sleep 0.1
	done
}

# call_confab METHOD ARGS...: prints the reply or the error
call_confab() {
	local method=$1
	shift
	gdbus call --system --dest org.confab.Confab1 --object-path /org/confab/Confab1 \
		--method "$method" "$@" 2>&1
}

if ! command -v dbus-daemon >/dev/null || ! command -v gdbus >/dev/null; then
	skip "dbus-daemon or gdbus is not installed: the policy was not enforced by a bus"
elif [ -z "${CONFABD:-}" ] || [ ! -x "$CONFABD" ]; then
	skip "CONFABD is not set: the policy was not enforced by a bus"
elif [ -z "${user:-}" ]; then
	skip "the unit names no user: the policy was not enforced by a bus"
else
	denied='org.freedesktop.DBus.Error.AccessDenied'
	# as root: Admin is open
	if policy_case admin "$(id -un)"; then
		out=$(call_confab org.confab.Confab1.Admin.ListAgents)
		case "$out" in
		*"$denied"*) fail "policy/admin: root may not call Admin: $out" ;;
		"(@aa{sv} [],)" | "([],)" | "(["*) ok "policy: root calls Admin" ;;
		*) fail "policy/admin: ListAgents: $out" ;;
		esac
		if [ -n "${CONFABCTL:-}" ] && [ -x "$CONFABCTL" ]; then
			"$CONFABCTL" --system agent list >/dev/null 2>&1 &&
				ok "policy: root runs confabctl agent list" ||
				fail "policy/admin: confabctl agent list exits $?"
		fi
		out=$(call_confab org.freedesktop.DBus.Properties.GetAll org.confab.Confab1.Admin)
		case "$out" in
		*"'Version'"*) ok "policy: root reads the Admin properties" ;;
		*) fail "policy/admin: Properties.GetAll: $out" ;;
		esac
	fi
	stop_bus
	# as anyone else: the bus refuses Admin, lets Chat and reading through
	if policy_case user confab-test-no-such-user; then
		out=$(call_confab org.confab.Confab1.Admin.ListAgents)
		case "$out" in
		*"$denied"*) ok "policy: an ordinary user may not call Admin" ;;
		*) fail "policy/user: Admin.ListAgents was not refused by the bus: $out" ;;
		esac
		if [ -n "${CONFABCTL:-}" ] && [ -x "$CONFABCTL" ]; then
			"$CONFABCTL" --system agent list >/dev/null 2>"$tmp/ctl.err"
			rc=$?
			[ "$rc" = 1 ] && ok "policy: confabctl as an ordinary user exits 1" ||
				fail "policy/user: confabctl agent list exits $rc: $(cat "$tmp/ctl.err")"
		fi
		out=$(call_confab org.confab.Confab1.Chat.Send agt_nonexistent '' 'hello')
		case "$out" in
		*"$denied"*) fail "policy/user: Chat.Send refused: $out" ;;
		*org.confab.Confab1.Error.*) ok "policy: an ordinary user reaches Chat.Send" ;;
		*) fail "policy/user: Chat.Send with an unknown agent: $out" ;;
		esac
		out=$(gdbus introspect --system --dest org.confab.Confab1 --object-path /org/confab/Confab1 2>&1)
		case "$out" in
		*"interface org.confab.Confab1.Chat"*) ok "policy: an ordinary user introspects" ;;
		*) fail "policy/user: Introspect: $out" ;;
		esac
		out=$(call_confab org.freedesktop.DBus.Properties.GetAll org.confab.Confab1.Admin)
		case "$out" in
		*"$denied"*) ok "policy: an ordinary user may not read the Admin properties" ;;
		*) fail "policy/user: Properties.GetAll was not refused by the bus: $out" ;;
		esac
		out=$(call_confab org.freedesktop.DBus.Properties.Get org.confab.Confab1.Admin ListenAddress)
		case "$out" in
		*"$denied"*) ok "policy: an ordinary user may not read ListenAddress" ;;
		*) fail "policy/user: Properties.Get was not refused by the bus: $out" ;;
		esac
		out=$(call_confab org.freedesktop.DBus.Properties.Set org.confab.Confab1.Admin Version '<"x">')
		case "$out" in
		*"$denied"*) ok "policy: an ordinary user may not set properties" ;;
		*) fail "policy/user: Properties.Set was not refused by the bus: $out" ;;
		esac
	fi
	stop_bus
	unset DBUS_SYSTEM_BUS_ADDRESS
fi

# ---------- systemd-analyze ----------
if command -v systemd-analyze >/dev/null && [ -f "$unit_file" ]; then
	# verify the unit as installed, its ExecStart pointing into the DESTDIR
	mkdir -p "$tmp/units"
	sed "s|^ExecStart=$confabd|ExecStart=$destdir$confabd|" "$unit_file" >"$tmp/units/confabd.service"
	cp "$(dirname "$unit_file")/confabd.socket" "$tmp/units/"
	if systemd-analyze verify --man=no --generators=no "$tmp/units/confabd.service" \
		"$tmp/units/confabd.socket" \
		>"$tmp/verify.log" 2>&1; then
		ok "systemd-analyze verify"
	else
		# a container without systemd as PID 1 cannot load some dependencies;
		# only complaints about the unit itself count
		if grep -v -e 'dbus\.socket' -e 'dbus\.service' -e 'Failed to ' -e 'System has not been booted' \
			"$tmp/verify.log" | grep -q 'confabd\.s\(ervice\|ocket\)'; then
			cat "$tmp/verify.log" >&2
			fail "systemd-analyze verify"
		else
			sed 's/^/  verify: /' "$tmp/verify.log"
			ok "systemd-analyze verify (environment notes only)"
		fi
	fi
	# the sysusers.d file creates the unit's user (in a scratch root)
	if command -v systemd-sysusers >/dev/null; then
		mkdir -p "$tmp/sysroot/etc"
		if systemd-sysusers --root="$tmp/sysroot" "$destdir$prefix/lib/sysusers.d/confab.conf" \
			>"$tmp/sysusers.log" 2>&1 &&
			grep -q "^$user:" "$tmp/sysroot/etc/passwd" &&
			grep -q "^$opt_group:" "$tmp/sysroot/etc/group"; then
			ok "systemd-sysusers creates the user $user and the group $opt_group"
			# then tmpfiles.d makes the state directory, the service user's alone
			if systemd-tmpfiles --create --root="$tmp/sysroot" \
				"$destdir$prefix/lib/tmpfiles.d/confab.conf" >"$tmp/tmpfiles.log" 2>&1 &&
				[ "$(stat -c '%a %u' "$tmp/sysroot/var/lib/confab" 2>/dev/null)" = "700 $(
					sed -n "s/^$user:[^:]*:\([0-9]*\):.*/\1/p" "$tmp/sysroot/etc/passwd"
				)" ]; then
				ok "systemd-tmpfiles makes /var/lib/confab, mode 0700, owned by $user"
			else
				cat "$tmp/tmpfiles.log" >&2
				ls -ld "$tmp/sysroot/var/lib/confab" >&2
				fail "systemd-tmpfiles does not make /var/lib/confab for $user"
			fi
		else
			cat "$tmp/sysusers.log" >&2
			fail "systemd-sysusers does not create $user and $opt_group"
		fi
	else
		skip "systemd-sysusers is not installed: the sysusers.d file was not applied"
	fi
	if systemd-analyze security --offline=yes "$unit_file" >"$tmp/security.log" 2>&1; then
		level=$(sed -n 's/.*Overall exposure level for confabd\.service: \([0-9.]*\).*/\1/p' "$tmp/security.log")
		if [ -z "$level" ]; then
			cat "$tmp/security.log" >&2
			fail "systemd-analyze security printed no exposure level"
		elif python3 -c "import sys; sys.exit(0 if float('$level') <= 2.0 else 1)"; then
			ok "systemd-analyze security: exposure $level (at most 2.0)"
		else
			grep '✗' "$tmp/security.log" >&2
			fail "systemd-analyze security: exposure $level is above 2.0"
		fi
	elif grep -q -e 'unrecognized option' -e 'Unknown command' "$tmp/security.log"; then
		skip "this systemd-analyze has no security --offline"
	else
		cat "$tmp/security.log" >&2
		fail "systemd-analyze security --offline"
	fi
else
	skip "systemd-analyze is not installed: the unit was not verified"
fi

# ---------- result ----------
if [ "$failures" -gt 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
if [ "${#skipped[@]}" -gt 0 ]; then
	echo "every check that could run passed; not checked:" >&2
	printf '  %s\n' "${skipped[@]}" >&2
	exit 77
fi
echo "all install checks passed"
