#!/usr/bin/env bash
# `make install` works: install into a scratch prefix, build examples/dataset_summary.c with
# pkg-config against the installed header and library, and run it on a generated dataset.
set -eu
trap 'echo "FAIL: install_check.sh line $LINENO: $BASH_COMMAND (exit $?)"' ERR
build=$1
src=$2
for tool in cc pkg-config; do
    command -v $tool >/dev/null || { echo "skip: $tool not found (scripts/install-deps.sh installs it)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/prefix" -name graphdirect.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: graphdirect.pc not installed"; exit 1; }
# The .pc file carries the configured prefix; point it at the scratch one.
sed -i "s|^prefix=.*|prefix=$tmp/prefix|" "$pc"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir graphdirect)
ls "$libdir"/libgraphdirect.so.0 >/dev/null
cc -std=c11 -Wall -Wextra -Werror "$src/examples/dataset_summary.c" \
    $(pkg-config --cflags --libs graphdirect) -o "$tmp/dataset_summary"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/prefix/bin/graphdirect" generate --preset tiny --out "$tmp/ds" >/dev/null 2>&1
out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/dataset_summary" "$tmp/ds")
echo "$out"
echo "$out" | grep -q "nodes" || { echo "FAIL: example output"; exit 1; }
# The Python package went in too, and finds the installed library by itself.
if command -v python3 >/dev/null; then
    rec=$(find "$tmp/prefix" -name _installed.py -path "*graphdirect*" | head -1)
    [ -n "$rec" ] || { echo "FAIL: the Python package was not installed"; exit 1; }
    site=$(dirname "$(dirname "$rec")")
    (cd "$tmp" && env -u GRAPHDIRECT_LIB PYTHONPATH="$site" python3 -c "
import graphdirect
assert graphdirect._lib.path.startswith('$tmp/prefix'), graphdirect._lib.path
print('installed Python package: graphdirect', graphdirect.version())")
    (cd "$tmp" && env -u GRAPHDIRECT_LIB PYTHONPATH="$site" python3 -m graphdirect info) | grep -q "^graphdirect " ||
        { echo "FAIL: python -m graphdirect from the installed package"; exit 1; }
fi
echo "install check: ok"
