#!/usr/bin/env bash
# Issue 19's convert target at papers100M's real size, in one run on a machine with the disk
# for it (the 4-GPU machines: 235 GiB disk, 512 GiB memory, 64 cores):
#   `graphdirect convert` of a papers100M-layout .npz runs at >= 0.5 of the disk's sequential
#   read bandwidth measured in the same run.
#
# Steps (each timed; the whole run was planned for ~300 s of wall time there):
#   1. checks: free disk for the archives and the output, memory for the convert (it holds the
#      edges as int64, the CSC and the feature table), the tools;
#   2. writes OGB's binary raw layout at the real size with bench/helpers/gen_ogb_npz (every
#      core): raw/data.npz (edge_index int64 2 x 1,615,685,872; node_feat float32
#      111,059,956 x 128; node_year; num_nodes_list, num_edges_list), raw/node-label.npz
#      (float64, NaN = unlabelled) and split/time/*.csv.gz. The members are STORED
#      (uncompressed, np.savez's layout; 84.5 GB), not deflated (np.savez_compressed): random
#      data does not compress, and inflating one zlib stream runs on one core;
#   3. the ceiling: the page cache dropped, one sequential O_DIRECT read (dd, 64 MiB requests)
#      of the first CEIL_GIB GiB of data.npz (default 48: its edges and a part of its
#      features), GB/s;
#   4. the page cache dropped again, `graphdirect convert` timed, with the info log's phase
#      times; the ratio (archive bytes / convert seconds) / ceiling against 0.5; the output's
#      node and edge counts checked; the output's bytes over the generator's write rate (the
#      write floor of the convert, which writes ~66 GB and flushes it before it returns);
#   5. removes the archives and the output (KEEP=1 keeps them).
#
# Usage (from the repository root, after a build, e.g. inside bench/run-device.sh's cmd:):
#   bash bench/convert-device.sh [WORKDIR]
# Environment: GD (default build-device/graphdirect), GEN (build-device/gen_ogb_npz), NODES,
# EDGES, DIM (default papers100M's), CEIL_GIB, KEEP. Output also goes to $OUT/convert.log and a
# one-line JSON $OUT/convert.json when OUT is set. Exit 0 when the run completed (PASS or
# MISS), 1 when it could not run or the output was wrong.
set -uo pipefail
work=${1:-$PWD/.convert-work}
gd=${GD:-build-device/graphdirect}
gen=${GEN:-build-device/gen_ogb_npz}
nodes=${NODES:-111059956}
edges=${EDGES:-1615685872}
dim=${DIM:-128}
ceil_gib=${CEIL_GIB:-48}
out=${OUT:-}
if [ -n "$out" ]; then
    mkdir -p "$out"
    exec > >(tee -a "$out/convert.log") 2>&1
fi
t_start=$(date +%s.%N)
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[$(elapsed) s] $*"; }
fail() { echo "convert-device: $*" >&2; exit 1; }

for tool in "$gd" "$gen"; do
    [ -x "$tool" ] || fail "$tool is missing: build first (cmake --build build-device --target graphdirect_cli gen_ogb_npz), or set GD / GEN"
done
mkdir -p "$work" || fail "cannot create $work"
src=$work/papers-bin
dst=$work/papers-out
cleanup() {
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$src" "$dst" "$dst".tmp.* "$dst".old.* "$work/convert.out" "$work/convert.err"; fi
}
trap cleanup EXIT
rm -rf "$src" "$dst"

# ---- 1. checks
npz_bytes=$(( 16 * edges + 4 * nodes * dim + 8 * nodes + 8 * nodes + 4096 ))
# indptr 8(N+1), indices 4E (int32 ids), features 4ND, labels 8N, splits (small).
out_bytes=$(( 8 * nodes + 4 * edges + 4 * nodes * dim + 8 * nodes + (64 << 20) ))
need_disk=$(( (npz_bytes + out_bytes) * 105 / 100 ))
free_disk=$(( $(df -P -B1 "$work" | awk 'NR == 2 { print $4 }') ))
# The convert holds the edges as int64 (16E), the CSC (8N + 4E + a scatter copy 4E) and the
# feature table (4ND) at once, plus the labels; 10 % over that.
need_mem=$(( (16 * edges + 8 * edges + 8 * nodes + 4 * nodes * dim + 16 * nodes) * 110 / 100 ))
avail_mem=$(( $(awk '/MemAvailable:/ { print $2 }' /proc/meminfo) * 1024 ))
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
say "machine: $(nproc) cores, $(gb "$avail_mem") memory available, $(gb "$free_disk") free in $work"
say "papers100M layout: $nodes nodes, $edges edges, $dim features: archives $(gb "$npz_bytes"), output $(gb "$out_bytes")"
[ "$free_disk" -ge "$need_disk" ] || fail "$work has $(gb "$free_disk") free; the archives and the output need $(gb "$need_disk"). Use a larger disk (the 4-GPU machines have 235 GiB) or scale down with NODES/EDGES/DIM."
[ "$avail_mem" -ge "$need_mem" ] || fail "$(gb "$avail_mem") of memory is available; the convert needs about $(gb "$need_mem"). Use a larger machine (the 4-GPU machines have 512 GiB) or scale down with NODES/EDGES/DIM."
can_drop=0
if [ -w /proc/sys/vm/drop_caches ]; then can_drop=1; fi
drop_cache() {
    sync
    if [ "$can_drop" = 1 ] && echo 3 2>/dev/null > /proc/sys/vm/drop_caches; then
        return
    fi
    # Not root (or refused): drop the pages of the files we read (nobody maps them).
    find "$src" -type f -exec dd of=/dev/null if={} iflag=nocache count=0 status=none \;
}
[ "$can_drop" = 1 ] || say "note: /proc/sys/vm/drop_caches is not writable; dropping per file (dd iflag=nocache)"

# ---- 2. the archives
say "writing the archives with $gen ($(nproc) threads)"
t0=$(date +%s.%N)
"$gen" "$src" --nodes "$nodes" --edges "$edges" --dim "$dim" || fail "the generator failed"
t1=$(date +%s.%N)
data=$src/raw/data.npz
data_bytes=$(stat -c %s "$data")
label_bytes=$(stat -c %s "$src/raw/node-label.npz")
in_bytes=$(( data_bytes + label_bytes ))
gen_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
write_gbs=$(awk -v n="$in_bytes" -v s="$gen_s" 'BEGIN { printf "%.3f", n / s / 1e9 }')
say "wrote $(gb "$in_bytes") of archives in ${gen_s%.*} s, flushed: $write_gbs GB/s (the generator is write-bound: the disk's write rate, roughly)"

# ---- 3. the ceiling: sequential read from a cold cache
drop_cache
ceil_count=$(( ceil_gib * 16 ))              # 64 MiB blocks
max_count=$(( data_bytes / (64 << 20) ))
[ "$ceil_count" -le "$max_count" ] || ceil_count=$max_count
[ "$ceil_count" -ge 1 ] || ceil_count=1
say "ceiling: dd of $(( ceil_count * 64 )) MiB of data.npz, O_DIRECT, 64 MiB requests, cold cache"
dd_out=$(dd if="$data" of=/dev/null bs=64M count="$ceil_count" iflag=direct 2>&1 | tail -1)
echo "  $dd_out"
read_gbs=$(echo "$dd_out" | awk '{ for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1) } } { printf "%.3f", $1 / s / 1e9 }')
say "sequential read: $read_gbs GB/s"

# ---- 4. the convert from a cold cache
drop_cache
say "graphdirect convert $src --out $dst (cold cache, GD_LOG_LEVEL=info)"
t0=$(date +%s.%N)
GD_LOG_LEVEL=info "$gd" convert "$src" --out "$dst" > "$work/convert.out" 2> "$work/convert.err"
rc=$?
t1=$(date +%s.%N)
conv_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
grep -v '%' "$work/convert.err" | grep -E 'convert|csc|built|read|linked|validat' | sed 's/^/  /' | tail -20
cat "$work/convert.out"
[ "$rc" = 0 ] || { tail -20 "$work/convert.err"; fail "convert failed (exit $rc)"; }
gd_convert_s=$(grep -o "edges in [0-9.]* s" "$work/convert.err" | tail -1 | awk '{ print $3 }')
out_written=$(du -sb "$dst" | awk '{ print $1 }')
conv_gbs=$(awk -v n="$in_bytes" -v s="$conv_s" 'BEGIN { printf "%.3f", n / s / 1e9 }')
ratio=$(awk -v c="$conv_gbs" -v r="$read_gbs" 'BEGIN { printf "%.3f", c / r }')
verdict=$(awk -v x="$ratio" 'BEGIN { print (x >= 0.5) ? "PASS" : "MISS" }')
write_floor=$(awk -v n="$out_written" -v w="$write_gbs" 'BEGIN { printf "%.1f", n / w / 1e9 }')
read_floor=$(awk -v n="$in_bytes" -v r="$read_gbs" 'BEGIN { printf "%.1f", n / r / 1e9 }')
say "phases: gd_convert (read, build, write and flush the output) ${gd_convert_s:-?} s of the command's ${conv_s%.*} s"
say "convert: $(gb "$in_bytes") of archives in $conv_s s = $conv_gbs GB/s; wrote $(gb "$out_written")"
say "floors in this run: reading the archives at $read_gbs GB/s: $read_floor s; writing the output at $write_gbs GB/s: $write_floor s"
echo "  $verdict  convert GB/s / sequential read GB/s (>= 0.5)   $ratio"

# The output's counts against what was written (duplicate edges removed: at most edges).
meta_nodes=$(grep -o '"num_nodes":[[:space:]]*[0-9]*' "$dst/meta.json" | grep -o '[0-9]*$')
meta_edges=$(grep -o '"num_edges":[[:space:]]*[0-9]*' "$dst/meta.json" | grep -o '[0-9]*$')
ok=1
if [ "$meta_nodes" != "$nodes" ] || [ -z "$meta_edges" ] || [ "$meta_edges" -gt "$edges" ] || [ "$meta_edges" -lt $(( edges * 99 / 100 )) ]; then
    echo "  FAIL  the output has $meta_nodes nodes and $meta_edges edges (wrote $nodes and $edges)"
    ok=0
else
    echo "  ok    output: $meta_nodes nodes, $meta_edges edges (duplicates removed)"
fi
if [ -n "$out" ]; then
    printf '{"benchmark": "convert_device", "nodes": %s, "edges": %s, "dim": %s, "npz_bytes": %s, "stored": true, "generate_seconds": %s, "write_gbs": %s, "ceiling_bytes": %s, "sequential_read_gbs": %s, "convert_seconds": %s, "gd_convert_seconds": %s, "convert_gbs": %s, "ratio": %s, "verdict": "%s", "output_bytes": %s, "csc_edges": %s, "cores": %s}\n' \
        "$nodes" "$edges" "$dim" "$in_bytes" "$gen_s" "$write_gbs" "$(( ceil_count * (64 << 20) ))" \
        "$read_gbs" "$conv_s" "${gd_convert_s:-null}" "$conv_gbs" "$ratio" "$verdict" "$out_written" \
        "${meta_edges:-null}" "$(nproc)" > "$out/convert.json"
fi
say "done; removing $src and $dst"
[ "$ok" = 1 ]
