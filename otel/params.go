package otel

import (
	"strconv"

	"github.com/agentconv/agentconv/formats"
)

// The writers' settings, which the command line offers as --otlp-* flags.
// Each falls back to its OTEL_* variable.
var (
	spanParams = []formats.Param{
		{Key: ParamServiceName, Flag: "otlp-service-name", Category: category,
			Usage: "service.name of the spans (default: OTEL_SERVICE_NAME, else the agent's name)"},
		{Key: ParamContent, Flag: "otlp-content", Kind: formats.ParamBool, Category: category,
			Usage: "record the content on the spans: tool call arguments and results, prompts and answers, and each model request's messages (sensitive and large: off by default)"},
		{Key: ParamContentLimit, Flag: "otlp-content-limit", Kind: formats.ParamInt, Category: category,
			Default: strconv.Itoa(DefaultContentLimit),
			Usage:   "with --otlp-content, keep at most `BYTES` of each argument list, result and text"},
		{Key: ParamAttrLimit, Flag: "otlp-attribute-limit", Kind: formats.ParamInt, Category: category,
			Usage: "cut every attribute value to at most `BYTES`, message JSON kept valid (default: OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, else no limit)"},
	}
	deliveryParams = []formats.Param{
		{Key: ParamEndpoint, Flag: "otlp-endpoint", Category: category,
			Usage: "send to `URL` (default: OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4317, or :4318 for http)"},
		{Key: ParamProtocol, Flag: "otlp-protocol", Category: category,
			Usage: "`PROTOCOL`: grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)"},
		{Key: ParamHeaders, Flag: "otlp-header", Kind: formats.ParamList, Category: category,
			Usage: "send the header `KEY=VALUE` too (repeatable; adds to OTEL_EXPORTER_OTLP_HEADERS)"},
		{Key: ParamInsecure, Flag: "otlp-insecure", Kind: formats.ParamBool, Category: category,
			Usage: "no TLS for an endpoint without a scheme (loopback endpoints never use it)"},
		{Key: ParamTimeout, Flag: "otlp-timeout", Kind: formats.ParamDuration, Category: category,
			Usage: "give up delivering after `DURATION`, retries included (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)"},
		{Key: ParamSpool, Flag: "otlp-spool", Category: category,
			Usage: "write spans that cannot be delivered to `FILE` (default: a new agentconv-undelivered-*.otlp.jsonl in $XDG_STATE_HOME/agentconv, else ~/.local/state/agentconv)"},
	}
	otlpParams = append(append([]formats.Param(nil), deliveryParams...), spanParams...)
)

const category = "OpenTelemetry"

// What the spans carry of the model: everything but the todo lists,
// working directories and subagents' reports; the prompts and the model's
// text and reasoning only with --otlp-content (lostPrompts, lostText,
// lostThinking), and the text only where the source marks the model's
// requests (lostOutside).
const carries = formats.AllFeatures &^ (formats.ToolOutputValues | formats.TodoLists | formats.WorkingDirs | formats.SubagentReports | formats.RawEvents)

// The losses of the span encoding itself.
var (
	lostAnswers     = formats.NewQuirk("answers")
	lostPrompts     = formats.NewQuirk("user prompts (without --otlp-content)")
	lostContent     = formats.NewQuirk("tool arguments and results (without --otlp-content)")
	lostContentPast = formats.NewQuirk("tool arguments, results and messages past --otlp-content-limit")
	// The model's text and reasoning go on the chat spans, with
	// --otlp-content: they are lost without it, and where the source
	// marks no model request to put them on.
	lostText         = formats.NewQuirk("assistant text (without --otlp-content)")
	lostThinking     = formats.NewQuirk("thinking text (without --otlp-content)")
	lostOutside      = formats.NewQuirk("assistant text and thinking outside a model request")
	lostMessagesPast = formats.NewQuirk("message parts of a model request past the first 128")
	lostSystem       = formats.NewQuirk("system instructions (without --otlp-content)")
	lostAttrPast     = formats.NewQuirk("attribute values past the attribute length limit")
	lostCutToFit     = formats.NewQuirk("tool arguments and results (or other long strings) of a span over the 4 MiB OTLP request limit, cut to fit")
)

var quirks = []formats.Quirk{lostAnswers, lostPrompts, lostContent, lostContentPast, lostText, lostThinking, lostOutside, lostMessagesPast,
	lostSystem, lostAttrPast, lostCutToFit}
