#!/usr/bin/env bash
# The performance benchmark: agentconv against jq 1.6 on the same
# conversion, adal-stream → malac, and against the floor (a program that only
# checks each line with goccy's json.Valid, testdata/bench/floor), on each
# profile of `agentconv generate`, all in one run. For each profile it
# prints MB/s, the ratios, peak RSS and CPU-seconds pinned to one core
# (taskset -c 0) and not pinned, each the median of 5 alternated runs; then
# agentconv's peak RSS for each writer as the input grows, the otlp-json span
# rate (not pinned and pinned), and the time to convert a 1 KB file.
#
#   testdata/bench/bench.sh [SIZE] [BIG] [PROFILES]
#   # defaults: 100MB 1GB "default dense big-outputs agents"
#
# Needs jq 1.6 (apt-get install jq), GNU time (/usr/bin/time) and taskset.
set -euo pipefail
size=${1:-100MB}
big=${2:-1GB}
profiles=${3:-default dense big-outputs agents}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

go build -o "$work/agentconv" .
go build -o "$work/floor" ./testdata/bench/floor
ac="$work/agentconv"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg); $(jq --version); $(go version | cut -d' ' -f3)"

# measure CMD...: runs CMD with stdout to /dev/null; prints wall seconds,
# CPU-seconds (user + system) and peak RSS (KB).
measure() {
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > /dev/null 2> "$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}
# median A B C …: the middle one of an odd count
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / 1e6 / (s > 0 ? s : 0.001) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 0.001) }'; }

summary=()
for profile in $profiles; do
  in="$work/$profile.ndjson"
  "$ac" generate --to adal-stream --profile "$profile" --size "$size" > "$in"
  bytes=$(stat -c %s "$in")
  longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$in")
  echo
  echo "== profile $profile: $size of generated adal-stream ($bytes bytes, $(wc -l < "$in") lines, longest line $longest bytes)"
  # both the same number of lines: the same work
  a_lines=$("$ac" --from adal-stream --to malac "$in" 2>/dev/null | wc -l)
  j_lines=$(jq -nc -f testdata/bench/adal-to-malac.jq "$in" | wc -l)
  declare -A s=() c=() k=()
  for i in 1 2 3 4 5; do
    # alternated, so that a noisy moment of the shared machine hits each
    while read -r name cmd; do
      read -r ws cs kb < <(measure $cmd "$in")
      s[$name]+="$ws " c[$name]+="$cs " k[$name]+="$kb "
    done <<LIST
ac1 taskset -c 0 $ac --from adal-stream --to malac
acN $ac --from adal-stream --to malac
jq taskset -c 0 jq -nc -f testdata/bench/adal-to-malac.jq
floor taskset -c 0 $work/floor
LIST
  done
  for name in ac1 acN jq floor; do
    # shellcheck disable=SC2086
    s[$name]=$(median ${s[$name]}) c[$name]=$(median ${c[$name]}) k[$name]=$(median ${k[$name]})
  done
  printf "  %-34s %6s s %8s MB/s  %5s CPU-s  peak RSS %6s MB\n" \
    "agentconv, one core" "${s[ac1]}" "$(rate "$bytes" "${s[ac1]}")" "${c[ac1]}" "$(mb "${k[ac1]}")" \
    "agentconv, not pinned" "${s[acN]}" "$(rate "$bytes" "${s[acN]}")" "${c[acN]}" "$(mb "${k[acN]}")" \
    "jq 1.6, one core" "${s[jq]}" "$(rate "$bytes" "${s[jq]}")" "${c[jq]}" "$(mb "${k[jq]}")" \
    "floor (json.Valid), one core" "${s[floor]}" "$(rate "$bytes" "${s[floor]}")" "${c[floor]}" "$(mb "${k[floor]}")"
  echo "  lines out: agentconv $a_lines, jq $j_lines"
  line="$profile: $(ratio "${s[jq]}" "${s[ac1]}")× jq on one core ($(ratio "${s[jq]}" "${s[acN]}")× not pinned); $(ratio "${s[ac1]}" "${s[floor]}")× the floor's time on one core; CPU-s not pinned / pinned $(ratio "${c[acN]}" "${c[ac1]}"); from CPU-s (steadier on a busy machine): $(ratio "${c[jq]}" "${c[ac1]}")× jq, $(ratio "${c[ac1]}" "${c[floor]}")× the floor"
  echo "  $line"
  summary+=("$line")
  unset s c k
done

echo
echo "summary (medians of 5):"
printf '  %s\n' "${summary[@]}"

echo
echo "peak RSS of agentconv as the input grows ($size → $big), per profile and writer:"
for profile in $profiles; do
  in="$work/$profile.ndjson"
  "$ac" generate --to adal-stream --profile "$profile" --size "$big" > "$work/big.ndjson"
  bigbytes=$(stat -c %s "$work/big.ndjson")
  for to in malac cli-agents adal-stream adal-json otlp-json; do
    read -r _ _ s_kb < <(measure "$ac" --from adal-stream --to "$to" "$in")
    read -r b_s _ b_kb < <(measure "$ac" --from adal-stream --to "$to" "$work/big.ndjson")
    printf "  %-12s → %-12s %6s MB at %s, %6s MB at %s (%s MB/s)\n" "$profile" "$to" "$(mb "$s_kb")" "$size" "$(mb "$b_kb")" "$big" "$(rate "$bigbytes" "$b_s")"
  done
  rm -f "$work/big.ndjson"
done

echo
# Spans per second want a stream dense in events: the dense profile, at
# SIZE. Not pinned, otlp-json reads such a file ahead of its writer on the
# second core; pinned, it runs on one: both, alternated, with their CPU.
spin="$work/dense.ndjson"
[ -f "$spin" ] || "$ac" generate --to adal-stream --profile dense --size "$size" > "$spin"
spans=$("$ac" --from adal-stream --to otlp-json "$spin" 2>/dev/null | grep -o '"spanId"' | wc -l)
declare -A s=() c=()
for i in 1 2 3 4 5; do
  while read -r name cmd; do
    read -r ws cs _ < <(measure $cmd "$spin")
    s[$name]+="$ws " c[$name]+="$cs "
  done <<LIST
acN $ac --from adal-stream --to otlp-json
ac1 taskset -c 0 $ac --from adal-stream --to otlp-json
LIST
done
for name in acN ac1; do
  # shellcheck disable=SC2086
  s[$name]=$(median ${s[$name]}) c[$name]=$(median ${c[$name]})
done
awk -v n="$spans" -v s="${s[acN]}" -v c="${c[acN]}" -v s1="${s[ac1]}" -v c1="${c[ac1]}" -v size="$size" 'BEGIN {
  printf "--to otlp-json: %d spans from %s of the dense profile (medians of 5):\n", n, size
  printf "  not pinned: %.2f s = %.0f spans/s, %.2f CPU-s\n", s, n / (s > 0 ? s : 0.001), c
  printf "  one core:   %.2f s = %.0f spans/s, %.2f CPU-s\n", s1, n / (s1 > 0 ? s1 : 0.001), c1
  printf "  CPU-s not pinned / one core %.2f\n", c / (c1 > 0 ? c1 : 0.001)
}'
unset s c

# A directory of 10,000 small session files against one file of the same
# bytes, to otlp-json (testdata/bench/many.sh): Codex rollouts and ATIF
# trajectories.
echo
echo "== a directory of 10,000 small session files (many.sh)"
SRC=testdata/codex/letta-tool-calls-rollout.jsonl NAME='rollout-2026-03-30T05-38-34-%05d.jsonl' \
  bash testdata/bench/many.sh 10000
SRC=testdata/atif/rfc-0001-example.json bash testdata/bench/many.sh 10000

head -c 1000 testdata/adal/seed-stream.ndjson > "$work/small.ndjson"
best=999
for i in 1 2 3 4 5 6 7 8 9 10; do
  read -r ws _ _ < <(measure "$ac" --to adal-json "$work/small.ndjson")
  best=$(awk -v a="$best" -v b="$ws" 'BEGIN { print (b < a ? b : a) }')
done
echo "start-up: converting a 1 KB file takes $(awk -v s="$best" 'BEGIN { printf "%.0f", s * 1000 }') ms (best of 10; /usr/bin/time has 10 ms resolution)"
