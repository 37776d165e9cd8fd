#!/usr/bin/env bash
# make apt: install the Debian packages of a list file that are not installed yet, and say which.
#   tools/apt_install.sh [--dry-run] LIST_FILE
# LIST_FILE has one package a line; '#' starts a comment. --dry-run only prints the missing ones.
# A package counts as installed when dpkg reports it 'ii' (dpkg-query exits 1 for an unknown
# package, so each is asked on its own and a non-zero answer means "missing", never an abort).
set -euo pipefail
dry_run=0
if [ "${1:-}" = "--dry-run" ]; then dry_run=1; shift; fi
list="${1:?usage: apt_install.sh [--dry-run] LIST_FILE}"
[ -r "$list" ] || { echo "apt: error: cannot read package list '$list'" >&2; exit 2; }

missing=()
while read -r pkg; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)"
  [ "${status:0:2}" = "ii" ] || missing+=("$pkg")
done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')

if [ "${#missing[@]}" -eq 0 ]; then
  echo "apt: all packages of $(basename "$list") are installed"
  exit 0
fi
echo "apt: missing ${#missing[@]}: ${missing[*]}"
[ "$dry_run" -eq 0 ] || exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "apt: installed ${missing[*]}"
