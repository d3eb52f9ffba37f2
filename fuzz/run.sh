#!/usr/bin/env bash
# Run every fuzz target for N seconds, starting from its committed seed corpus (fuzz/corpus/NAME)
# and writing new inputs to a scratch copy, so the repository is not touched. Any crash, leak,
# sanitizer report or timeout fails the run; the reproducer is kept in the build folder.
set -u
build=$1
seconds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for bin in "$build"/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    work="$build/fuzz/work-$name"
    rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
    [ -d "$here/corpus/$name" ] && cp -r "$here/corpus/$name/." "$work/corpus/"
    if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | awk '{print $2}')
        [ -n "$runs" ] || runs=$(grep -Eo '#[0-9]+' "$work/log" | tail -1 | tr -d '#')
        echo "fuzz $name: ok (${seconds}s, ${runs:-?} runs)"
    else
        echo "fuzz $name: FAILED, see $work/log"; tail -30 "$work/log"; status=1
    fi
done
exit $status
