# Session 9, call 4 (H100): issue 19's bench startup --dir on papers (feature-dim 32: fits the disk), cold and warm, second open.
set -u
B=build-device/graphdirect
t0=$(date +%s)
df -h . | tail -1
timeout 250 $B generate --preset papers --feature-dim 32 --out .papers > $OUT/generate.log 2>&1; echo "generate rc $? at $(( $(date +%s) - t0 )) s"; tail -3 $OUT/generate.log
du -sh .papers
timeout 300 $B bench startup --dir .papers --gpu-mem-budget 16G --register-gib 0 --json $OUT/startup-dir.json > $OUT/startup-dir.log 2>&1; echo "startup rc $?"
grep -v "^ *generate" $OUT/startup-dir.log | tail -45
rm -rf .papers
echo "== end at $(( $(date +%s) - t0 )) s"
