#!/usr/bin/env bash
# The shared library exports the public gd_* API and nothing else (no gd__ internals, no
# symbols of the libraries it links), and carries its soname.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' \
      | grep -v '^gd_[a-z0-9]' || true)
if [ -n "$bad" ]; then echo "unexpected exported symbols:"; echo "$bad"; exit 1; fi
# Benchmark instrumentation (the link ceiling's read plan, the timed step of bench step) is
# built beside the library, not into it: not even as a local symbol.
if nm "$lib" 2>/dev/null | grep -qi 'read_plan\|gd_instrument_'; then
  echo "benchmark instrumentation (src/instrument/) is inside the library"; exit 1
fi
nm -D --defined-only "$lib" | grep -q ' gd_version@' || { echo "gd_version not exported"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*libgraphdirect.so.0' || { echo "no soname"; exit 1; }
echo "exports ok: $(nm -D --defined-only "$lib" | grep -c ' gd_') gd_ symbols"
