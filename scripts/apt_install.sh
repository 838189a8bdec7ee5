#!/usr/bin/env bash
# Install a Debian package when the program a make target needs is missing, as root or through sudo.
#
#   scripts/apt_install.sh PROGRAM PACKAGES LOG fail|warn WHO   (PACKAGES: one or several, space-separated)
#
# PROGRAM present: nothing to do. Missing: `apt-get install -y PACKAGE` (an `apt-get update` first when the package is
# not known yet), its log in LOG. When it cannot be installed (not root and no sudo, no apt-get, the install failed),
# one line says why and how; with `fail` the script then exits 1, with `warn` 0 (the tests that need it skip, and say
# so). WHO names the target in those lines.
set -u
program=$1 package=$2 log=$3 mode=$4 who=$5
[ -x "$program" ] && exit 0
give_up() { echo "$who: $1"; [ "$mode" = warn ] && exit 0; exit 1; }
if [ "$(id -u)" = 0 ]; then sudo=; elif command -v sudo > /dev/null; then sudo=sudo; else
	give_up "needs $program and cannot install it (not root, no sudo): apt-get install -y $package"
fi
command -v apt-get > /dev/null || give_up "needs $program and this system has no apt-get: install $package"
echo "$program is missing: ${sudo:+sudo }apt-get install -y $package (log: $log)"
mkdir -p "$(dirname "$log")"
export DEBIAN_FRONTEND=noninteractive
{ $sudo apt-get install -y $package || { $sudo apt-get update && $sudo apt-get install -y $package; }; } \
	> "$log" 2>&1 < /dev/null && [ -x "$program" ] \
	|| give_up "could not install $package with ${sudo:+sudo }apt-get install -y $package: see $log"
