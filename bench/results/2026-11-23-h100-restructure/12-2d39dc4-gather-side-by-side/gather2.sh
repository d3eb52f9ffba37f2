#!/usr/bin/env bash
# bench gather side by side, alternating base 64d05dc and the new tree, twice each (after perf.sh
# has built both on this machine); the 512 B rows and the targets.
set -u
out=${OUT:-$PWD/device-out}
deps=$PWD/.deps/root
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-perf/graphdirect ] && [ -x /tmp/base/b/graphdirect ] || bash scratch/perf.sh "$1" >/dev/null 2>&1
for r in 1 2; do
    for v in base new; do
        bin=$([ $v = base ] && echo /tmp/base/b/graphdirect || echo build-perf/graphdirect)
        c=$([ $v = base ] && echo 64d05dc || echo "$1")
        echo "== gather, $v ($c), round $r"
        $bin bench gather --commit "$c" --json "$out/gather-$v-$r.json" > "$out/g-$v-$r.log" 2>&1
        grep -E "^ +(512|2048|4096) +(8Ki|64Ki|1Mi|768Ki\*) \||PASS  zerocopy 512|ceiling: pinned" "$out/g-$v-$r.log"
    done
done
