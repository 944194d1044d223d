#!/usr/bin/env bash
# Rebuild examples/data/fortunes.txt from the Debian fortune-mod data packages.
# Usage: examples/data/make_corpus.sh [OUTPUT]   (needs apt-get, dpkg, GNU sed/tr/expand)
set -euo pipefail

out="$(realpath -m "${1:-$(dirname "$0")/fortunes.txt}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
apt-get download fortunes-min fortunes >/dev/null
for deb in ./*.deb; do dpkg -x "$deb" root; done
dir=root/usr/share/games/fortunes

# A fixed, non-offensive selection (~420 KB); the *.dat/*.u8 index files are never read.
files="fortunes literature riddles wisdom humorists science food pets love kids"
for f in $files; do
  cat "$dir/$f"
  echo "%"
done |
  LC_ALL=C sed -e 's/.\x08//g' -e 's/^%$//' |  # drop overstrike pairs and '%' separators
  LC_ALL=C tr -d '\000-\010\013-\037\177-\377' |  # ASCII only: keep tab, newline, printable
  expand -t 8 |  # tabs -> spaces
  LC_ALL=C sed -e 's/[[:space:]]*$//' |  # strip trailing whitespace
  cat -s >"$out"  # squeeze repeated blank lines

echo "wrote $out: $(wc -c <"$out") bytes"
