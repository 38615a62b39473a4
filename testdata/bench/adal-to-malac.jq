# adal-stream → malac in jq, doing what `agentconv --to malac` does with an
# adal-stream input, so that the benchmark compares the same work:
#   jq -nc -f adal-to-malac.jq < in.ndjson
# Each run becomes agent "agent-N" with its own agent_started; seq counts
# across runs; `at` is the time the event was read; the answer and the
# outcome go into the closing turn_finished.
def env($s; $type): {agent: ("agent-" + ($s.run | tostring)), seq: $s.seq, at: (now | todate), type: $type};

foreach inputs as $e (
  {seq: 0, run: 0, open: false, answer: null, out: []};
  .out = []
  | if .open then . else
      .run += 1 | .open = true | .answer = null | .seq += 1
      | .out += [env(.; "agent_started") + {label: "main", parent: null, model: null, cwd: null}]
    end
  | if $e.type == "tool_call" then
      .seq += 1 | .out += [env(.; "tool_started") + {call_id: $e.id, tool: $e.name, summary: "", input: ($e.args // {})}]
    elif $e.type == "tool_result" then
      .seq += 1 | .out += [env(.; "tool_finished") + {call_id: $e.id, tool: $e.name, output: ($e.output // ""), is_error: ($e.status != "completed"), millis: null}]
    elif $e.type == "permission_denied" then
      .seq += 1 | .out += [env(.; "tool_started") + {call_id: $e.id, tool: $e.name, summary: "", input: ($e.args // {})}]
      | .seq += 1 | .out += [env(.; "permission_requested") + {request_id: ("perm-" + $e.id), call_id: $e.id, tool: $e.name, summary: "", input: ($e.args // {})}]
      | .seq += 1 | .out += [env(.; "permission_resolved") + {request_id: ("perm-" + $e.id), allowed: false}]
      | .seq += 1 | .out += [env(.; "tool_finished") + {call_id: $e.id, tool: $e.name, output: $e.reason, is_error: true, millis: null}]
    elif $e.type == "answer" then
      .answer = $e.content
    elif $e.type == "error" then
      .seq += 1 | .out += [env(.; "notice") + {level: "error", message: $e.message}]
    elif $e.type == "complete" then
      (if $e.model then .seq += 1 | .out += [env(.; "model_changed") + {model: $e.model}] else . end)
      | .seq += 1
      | .out += [env(.; "turn_finished") + {
          status: (if $e.exit_code == 0 then "completed" elif $e.exit_code == 2 then "cancelled" else "failed" end),
          text: (.answer // "")}]
      | .open = false
    else . end;
  .out[]
)
