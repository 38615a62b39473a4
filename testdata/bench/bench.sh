#!/usr/bin/env bash
# The performance benchmark: agentconv against jq on the same conversion,
# adal-stream → malac, on a generated input, in one run. It prints each
# one's throughput and peak RSS, and their ratio; then agentconv's peak RSS
# for stream → stream and stream → final-object as the input grows, the
# otlp-json span rate, and the time to convert a 1 KB file.
#
#   testdata/bench/bench.sh [SIZE] [BIG]      # defaults: 100MB 1GB
#
# Needs jq (apt-get install jq) and GNU time (/usr/bin/time).
set -euo pipefail
size=${1:-100MB}
big=${2:-1GB}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

go build -o "$work/agentconv" .
ac="$work/agentconv"
"$ac" generate --to adal-stream --size "$size" > "$work/in.ndjson"
bytes=$(stat -c %s "$work/in.ndjson")
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$work/in.ndjson")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(jq --version); $(go version | cut -d' ' -f3)"
echo "input: $size of generated adal-stream ($bytes bytes, $(wc -l < "$work/in.ndjson") lines, longest line $longest bytes)"

# measure LABEL CMD...: runs CMD with stdout to /dev/null, prints seconds and peak RSS (KB).
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  cat "$work/time"
}
mbps() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.1f", b / 1e6 / (s > 0 ? s : 0.001) }'; }

read -r a_s a_kb < <(measure taskset -c 0 "$ac" --from adal-stream --to malac "$work/in.ndjson")
read -r j_s j_kb < <(measure taskset -c 0 jq -nc -f testdata/bench/adal-to-malac.jq "$work/in.ndjson")
# both the same number of lines: the same work
a_lines=$("$ac" --from adal-stream --to malac "$work/in.ndjson" 2>/dev/null | wc -l)
j_lines=$(jq -nc -f testdata/bench/adal-to-malac.jq "$work/in.ndjson" | wc -l)
echo
echo "adal-stream → malac, one core (taskset -c 0):"
printf "  agentconv  %6.2f s  %8s MB/s  peak RSS %6.1f MB  (%s lines out)\n" "$a_s" "$(mbps "$a_s")" "$(awk -v k="$a_kb" 'BEGIN{print k/1024}')" "$a_lines"
printf "  jq         %6.2f s  %8s MB/s  peak RSS %6.1f MB  (%s lines out)\n" "$j_s" "$(mbps "$j_s")" "$(awk -v k="$j_kb" 'BEGIN{print k/1024}')" "$j_lines"
awk -v a="$a_s" -v j="$j_s" 'BEGIN { printf "  ratio: agentconv is %.1f× faster than jq\n", j / (a > 0 ? a : 0.001) }'

echo
echo "peak RSS of agentconv as the input grows ($size → $big):"
"$ac" generate --to adal-stream --size "$big" > "$work/big.ndjson"
for to in malac cli-agents adal-stream adal-json; do
  read -r _ s_kb < <(measure "$ac" --from adal-stream --to "$to" "$work/in.ndjson")
  read -r b_s b_kb < <(measure "$ac" --from adal-stream --to "$to" "$work/big.ndjson")
  printf "  → %-12s %6.1f MB at %s, %6.1f MB at %s (%.0f MB/s)\n" "$to" "$(awk -v k="$s_kb" 'BEGIN{print k/1024}')" "$size" \
    "$(awk -v k="$b_kb" 'BEGIN{print k/1024}')" "$big" "$(awk -v b="$(stat -c %s "$work/big.ndjson")" -v s="$b_s" 'BEGIN{print b/1e6/(s>0?s:0.001)}')"
done
rm -f "$work/big.ndjson"

echo
# Spans per second want a stream dense in events: small tool outputs.
"$ac" generate --to adal-stream --size 20MB --max-output 100 > "$work/dense.ndjson"
spans=$("$ac" --from adal-stream --to otlp-json "$work/dense.ndjson" 2>/dev/null | grep -o '"spanId"' | wc -l)
best=999
for i in 1 2 3; do
  read -r s _ < <(measure "$ac" --from adal-stream --to otlp-json "$work/dense.ndjson")
  best=$(awk -v a="$best" -v b="$s" 'BEGIN { print (b < a ? b : a) }')
done
awk -v n="$spans" -v s="$best" 'BEGIN { printf "--to otlp-json: %d spans in %.2f s = %.0f spans/s (20MB with outputs of at most 100 bytes; best of 3)\n", n, s, n / (s > 0 ? s : 0.001) }'

head -c 1000 testdata/adal/seed-stream.ndjson > "$work/small.ndjson"
best=999
for i in 1 2 3 4 5 6 7 8 9 10; do
  read -r s _ < <(measure "$ac" --to adal-json "$work/small.ndjson")
  best=$(awk -v a="$best" -v b="$s" 'BEGIN { print (b < a ? b : a) }')
done
echo "start-up: converting a 1 KB file takes $(awk -v s="$best" 'BEGIN { printf "%.0f", s * 1000 }') ms (best of 10; /usr/bin/time has 10 ms resolution)"
