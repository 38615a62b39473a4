package otel

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// The attribute keys of the OpenTelemetry GenAI conventions, and the few of
// agentconv's own for what they have no name for.
const (
	keyOperation     = "gen_ai.operation.name"
	keyProvider      = "gen_ai.provider.name"
	keyAgentID       = "gen_ai.agent.id"
	keyAgentName     = "gen_ai.agent.name"
	keyConversation  = "gen_ai.conversation.id"
	keyModel         = "gen_ai.request.model"
	keyResponseModel = "gen_ai.response.model"
	keyResponseID    = "gen_ai.response.id"
	keyFinish        = "gen_ai.response.finish_reasons"
	keyInputTokens   = "gen_ai.usage.input_tokens"
	keyOutputTokens  = "gen_ai.usage.output_tokens"
	keyCacheRead     = "gen_ai.usage.cache_read.input_tokens"
	keyCacheCreation = "gen_ai.usage.cache_creation.input_tokens"
	keyReasoning     = "gen_ai.usage.reasoning.output_tokens"
	keyCost          = "gen_ai.usage.cost"
	keyToolName      = "gen_ai.tool.name"
	keyToolCallID    = "gen_ai.tool.call.id"
	keyToolType      = "gen_ai.tool.type"
	keyToolArgs      = "gen_ai.tool.call.arguments"
	keyToolResult    = "gen_ai.tool.call.result"
	keyInputMessages = "gen_ai.input.messages"
	keyOutputMsgs    = "gen_ai.output.messages"
	keySystem        = "gen_ai.system_instructions"
	keyErrorType     = "error.type"
	keyExitCode      = "process.exit.code"
	keyMCPMethod     = "mcp.method.name"
	// An agent's totals, its subagents' included for the run's own: under
	// agentconv.usage.* wherever the spans under it carry the counts, so
	// that a backend that sums gen_ai.usage.* over a trace counts each
	// token and each cent once.
	keyTotalPrefix = "agentconv.usage."
	// keyOldCost is the run's cost in the spans of agentconv before 2026-12,
	// still read.
	keyOldCost = "agentconv.usage.cost_usd"
	keyModels  = "agentconv.models"
	keyCut     = "agentconv.run.cut"
	// keyUsageFrom says where the run's token totals come from: the
	// source's own totals of the run ("source"), or the sum of the model
	// requests it gave ("requests"), which leaves out what it did not
	// print.
	keyUsageFrom = "agentconv.run.usage_from"
	keyTurn      = "agentconv.turn.number"
	keySummary   = "agentconv.tool.summary"
	keyRequestID = "agentconv.permission.request_id"
	keyAllowed   = "agentconv.permission.allowed"
	keyReason    = "agentconv.permission.reason"
	keySeverity  = "agentconv.notice.severity"
	keyText      = "agentconv.text"
	// keyMCPServer names the MCP server of a call, which the MCP
	// conventions have no attribute for.
	keyMCPServer = "agentconv.mcp.server.name"
	// keyAggregate marks a chat span that stands for model requests the
	// source does not list one by one: a run's (or a turn's) totals beyond
	// the requests it gave.
	keyAggregate = "agentconv.chat.aggregate"

	// The backends' own names for what they show: the session (Phoenix
	// reads OpenInference's session.id, Langfuse langfuse.session.id), the
	// kind of a span (OpenInference's span kind, Langfuse's observation
	// type), an agent's input and output as text, a request's usage as
	// Langfuse counts it (so that its total counts reasoning once), and a
	// request's cost as OpenInference names it.
	keySessionID     = "session.id"
	keyLangfuseSess  = "langfuse.session.id"
	keyOIKind        = "openinference.span.kind"
	keyLangfuseType  = "langfuse.observation.type"
	keyInputValue    = "input.value"
	keyOutputValue   = "output.value"
	keyInputMime     = "input.mime_type"
	keyOutputMime    = "output.mime_type"
	keyLangfuseUsage = "langfuse.observation.usage_details"
	keyOICost        = "llm.cost.total"
	keyOITotal       = "llm.token_count.total"

	opInvokeAgent = "invoke_agent"
	opExecuteTool = "execute_tool"
	opChat        = "chat"

	// mainAgentID is gen_ai.agent.id of a run's own agent, which the event
	// model leaves unnamed.
	mainAgentID = "main"
	scopeName   = "github.com/agentconv/agentconv/otel"
)

// The names of the span events.
const (
	evPermissionRequest = "permission_request"
	evPermissionAnswer  = "permission_answer"
	evNotice            = "notice"
	evCompaction        = "compaction"
	evModelChange       = "model_change"
)

// providerOf is the run's provider, else what a model's name says of it.
func (b *builder) providerOf(models ...string) string {
	if p := b.view.Info.Provider; p != "" {
		return p
	}
	for _, m := range models {
		if p := modelProvider(m); p != "" {
			return p
		}
	}
	return ""
}

// modelProvider names the provider of a model from its name's prefix, as
// OpenTelemetry names providers; "" when the name does not say.
func modelProvider(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // anthropic/claude-…, openrouter's spelling
	}
	switch {
	case strings.HasPrefix(m, "claude-"):
		return "anthropic"
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"),
		strings.HasPrefix(m, "codex-"):
		return "openai"
	case strings.HasPrefix(m, "gemini-"):
		return "gcp.gemini"
	}
	return ""
}

// sessionAttrs puts the run's session id on a span, as the GenAI
// conventions, Langfuse and OpenInference (Phoenix) name it, so that each
// backend shows the runs of a session together.
func (b *builder) sessionAttrs(kvs []attribute.KeyValue) []attribute.KeyValue {
	session := b.session()
	if session == "" {
		return kvs
	}
	kvs = setAttr(kvs, attribute.String(keyConversation, session))
	kvs = setAttr(kvs, attribute.String(keyLangfuseSess, session))
	return setAttr(kvs, attribute.String(keySessionID, session))
}

func dropAttr(kvs []attribute.KeyValue, key attribute.Key) []attribute.KeyValue {
	for i := range kvs {
		if kvs[i].Key == key {
			return append(kvs[:i], kvs[i+1:]...)
		}
	}
	return kvs
}

func setAttr(kvs []attribute.KeyValue, kv attribute.KeyValue) []attribute.KeyValue {
	for i := range kvs {
		if kvs[i].Key == kv.Key {
			kvs[i] = kv
			return kvs
		}
	}
	return append(kvs, kv)
}
