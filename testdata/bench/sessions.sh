#!/usr/bin/env bash
# `agentconv sessions --json` beside `ccusage session --json --offline` on a
# home directory of N copies of a corpus's Claude Code sessions and Codex
# rollouts (CORPUS, default ../shared/corpus/more/sessions), interleaved,
# RUNS times (default 3). It prints each run's CPU (user+sys), wall and peak
# RSS, and the best of each. CPU is the figure on a shared machine, where
# the wall time follows the load.
#
#   CCUSAGE=/path/to/ccusage testdata/bench/sessions.sh [N] [RUNS]
#
# CCUSAGE is ccusage 20.0.24's binary (npm install ccusage@20.0.24 puts
# it under node_modules/.bin). ccusage counts a message once across files,
# so on copies it lists fewer sessions than agentconv; the work of reading
# every file is the same. Needs GNU time (/usr/bin/time).
set -euo pipefail
n=${1:-25}
runs=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
corpus=${CORPUS:-$root/../shared/corpus/more/sessions}
cc=${CCUSAGE:?name ccusage 20.0.24 binary in CCUSAGE}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/agentconv" .

home=$work/home
mkdir -p "$home/.claude/projects" "$home/.codex/sessions/2025/09/24"
for i in $(seq 0 $((n - 1))); do
	d=$home/.claude/projects/-home-u-proj$i
	mkdir -p "$d"
	cp -r "$corpus"/claude-session/* "$d"/
	for f in "$corpus"/codex-rollout/*.jsonl; do
		cp "$f" "$home/.codex/sessions/2025/09/24/rollout-$i-$(basename "$f")"
	done
done
echo "home: $(du -sh "$home" | cut -f1), $(find "$home" -type f | wc -l) files"

declare -A best
for r in $(seq "$runs"); do
	for tool in agentconv ccusage; do
		if [ $tool = agentconv ]; then cmd=("$work/agentconv" sessions --json); else cmd=("$cc" session --json --offline); fi
		/usr/bin/time -f "%U %S %e %M" -o "$work/t" env HOME="$home" CLAUDE_CONFIG_DIR="$home/.claude" \
			CODEX_HOME="$home/.codex" "${cmd[@]}" >/dev/null 2>&1 || true
		read -r u s e m < <(tail -1 "$work/t")
		cpu=$(echo "$u + $s" | bc)
		echo "$tool run $r: cpu $cpu s, wall $e s, rss $m KB"
		if [ -z "${best[$tool]:-}" ] || (($(echo "$cpu < ${best[$tool]}" | bc))); then best[$tool]=$cpu; fi
	done
done
echo "best cpu: agentconv ${best[agentconv]} s, ccusage ${best[ccusage]} s"
