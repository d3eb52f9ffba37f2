#!/usr/bin/env bash
# one fuzz target for 600 s, like fuzz/run.sh
bin=$1; name=$(basename $bin); here=/work/main/fuzz
work=/work/fuzzlog/work-$name; rm -rf $work; mkdir -p $work/corpus $work/artifacts
cp -r $here/corpus/$name/. $work/corpus/
start=$(date -u +%FT%TZ)
if nice "$bin" -max_total_time=600 -timeout=10 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix=$work/artifacts/ $work/corpus > $work/log 2>&1; then r=ok; else r=FAILED; fi
runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' $work/log | awk '{print $2}')
[ -n "$runs" ] || runs=$(grep -Eo 'Done [0-9]+ runs' $work/log | awk '{print $2}')
echo "fuzz $name: $r (600 s from $start, ${runs:-?} runs, corpus $(ls $work/corpus | wc -l) inputs)" >> /work/fuzzlog/summary.txt
