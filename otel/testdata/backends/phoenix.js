// Runs Phoenix's own GenAI-to-OpenInference conversion
// (@arizeai/openinference-genai) over OTLP/JSON lines on standard input,
// and prints for each line what Phoenix would take of each span: the
// converted attributes under the span's own OpenInference ones, which win
// (Phoenix's "OI-wins" precedence). Usage: node phoenix.js NODE_MODULES
"use strict";
const path = require("path");
const readline = require("readline");
const genai = require(path.join(process.argv[2], "@arizeai", "openinference-genai"));

function value(v) {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values || []).map(value);
  return undefined;
}

const keys = ["openinference.span.kind", "llm.token_count.prompt", "llm.token_count.completion",
  "llm.token_count.total", "llm.cost.total", "input.value", "output.value", "session.id", "llm.model_name"];

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const req = JSON.parse(line);
  const spans = [];
  for (const rs of req.resourceSpans || []) {
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) {
        const attrs = {};
        for (const kv of s.attributes || []) attrs[kv.key] = value(kv.value);
        const converted = genai.convertGenAISpanAttributesToOpenInferenceSpanAttributes(attrs) || {};
        const merged = Object.assign({}, converted, attrs);
        const out = { name: s.name };
        for (const k of keys) if (merged[k] !== undefined) out[k] = merged[k];
        spans.push(out);
      }
    }
  }
  process.stdout.write(JSON.stringify(spans) + "\n");
});
