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
			Usage: "record tool call arguments and results on the spans (sensitive and large: off by default)"},
		{Key: ParamContentLimit, Flag: "otlp-content-limit", Kind: formats.ParamInt, Category: category,
			Default: strconv.Itoa(DefaultContentLimit),
			Usage:   "with --otlp-content, keep at most `BYTES` of each argument list and result"},
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
			Usage: "write spans that cannot be delivered to `FILE` (default: a new agentconv-undelivered-*.otlp.jsonl here)"},
	}
	otlpParams = append(append([]formats.Param(nil), deliveryParams...), spanParams...)
)

const category = "OpenTelemetry"

// What the spans carry of the model: everything but the text of the
// conversation, the todo lists and working directories; the prompts only
// with --otlp-content (lostPrompts).
const carries = formats.AllFeatures &^ (formats.AssistantText | formats.SubagentText | formats.Thinking |
	formats.TodoLists | formats.WorkingDirs | formats.SubagentReports | formats.RawEvents)

// The losses of the span encoding itself.
const (
	lostAnswers     = "answers"
	lostPrompts     = "user prompts (without --otlp-content)"
	lostContent     = "tool arguments and results (without --otlp-content)"
	lostContentPast = "tool arguments and results past --otlp-content-limit"
)

var quirks = []string{lostAnswers, lostPrompts, lostContent, lostContentPast}
